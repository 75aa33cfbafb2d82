//! The tool's one flame graph: a self-contained, interactive SVG document
//! (root at the bottom, width ∝ weight; hover for counts, click to zoom
//! into a frame, search by regular expression with the share matched),
//! drawn from a [`StackTree`] in two loops over its nodes: time and memory
//! linear in the nodes drawn, whatever the depth. `hprof-rs flame --svg`
//! writes it, the page's download is it, and the page shows it (docs/
//! hprof-rs-tool.md, "Flame graphs"). Zoom and search are the script
//! [`SCRIPT`] inside the document, so it works offline and alone.
//! Frames narrower than [`MIN_WIDTH`] are left out (they would not show,
//! nor be reached by zooming), and levels past [`MAX_LEVELS`] are not drawn
//! (a note says so).

use super::tree::StackTree;
use std::fmt::Write;

const WIDTH: f64 = 1200.0;
const ROW: f64 = 16.0;
const PAD: f64 = 10.0;
/// Narrowest frame drawn, in pixels.
pub const MIN_WIDTH: f64 = 0.1;
/// Deepest level drawn (the SVG is 16 px per level).
pub const MAX_LEVELS: usize = 4096;
/// The document's script: zoom and search (`interactive.js`). A server
/// that shows the document under a Content-Security-Policy allows this
/// script by its hash.
pub const SCRIPT: &str = include_str!("interactive.js");

/// The graph of counter `key` of `tree` (finished), titled `title`, with
/// `notes` under the title; `unit` names the counter (`samples`, `us`).
pub fn draw<const N: usize>(
    tree: &StackTree<N>,
    key: usize,
    title: &str,
    notes: &[String],
    unit: &str,
) -> String {
    let key = key.min(N.saturating_sub(1));
    let total = tree.root().total[key].max(1) as f64;
    let wide = |n: u32| tree.nodes[n as usize].total[key] as f64 / total * WIDTH >= MIN_WIDTH;
    // First the levels to draw (the height), then the frames.
    let mut levels = 0;
    let mut deeper = false;
    let mut stack = vec![(0u32, 0usize)];
    while let Some((n, level)) = stack.pop() {
        levels = levels.max(level);
        for &c in tree.children(n) {
            if !wide(c) {
                continue;
            }
            if level + 1 > MAX_LEVELS {
                deeper = true;
                break;
            }
            stack.push((c, level + 1));
        }
    }
    let mut notes = notes.to_vec();
    if deeper {
        notes.push(format!(
            "stacks deeper than {MAX_LEVELS} frames are drawn to that depth"
        ));
    }
    // Title, notes, the frames, then a line for details and the share
    // a search matched.
    let height = (levels + 1 + notes.len()) as f64 * ROW + 3.0 * PAD + 2.0 * ROW;
    let bottom = height - PAD - 2.0 * ROW;
    let mut out = String::new();
    let _ = write!(
        out,
        "<?xml version=\"1.0\" standalone=\"no\"?>\n<svg version=\"1.1\" width=\"{w}\" height=\"{height}\" viewBox=\"0 0 {w} {height}\" xmlns=\"http://www.w3.org/2000/svg\" \
font-family=\"monospace\" font-size=\"11\" data-width=\"{WIDTH}\" data-pad=\"{PAD}\" data-row=\"{ROW}\" data-bottom=\"{bottom}\">\n\
<rect fill=\"#f8f8f0\" x=\"0\" y=\"0\" width=\"{w}\" height=\"{height}\"/>\n\
<text x=\"{cx}\" y=\"{ty}\" text-anchor=\"middle\" font-size=\"14\">{t}</text>\n\
<text id=\"reset\" fill=\"#0645ad\" cursor=\"pointer\" x=\"{PAD}\" y=\"{ty}\" display=\"none\">Reset zoom</text>\n\
<text id=\"searchbtn\" fill=\"#0645ad\" cursor=\"pointer\" x=\"{right}\" y=\"{ty}\" text-anchor=\"end\">Search</text>\n\
<text id=\"details\" x=\"{PAD}\" y=\"{ly}\"> </text>\n\
<text id=\"matched\" x=\"{right}\" y=\"{ly}\" text-anchor=\"end\"> </text>\n<g cursor=\"pointer\">\n",
        w = WIDTH + 2.0 * PAD,
        cx = WIDTH / 2.0 + PAD,
        ty = PAD + ROW * 0.75,
        right = WIDTH + PAD,
        ly = height - PAD,
        t = escape(title),
    );
    for (i, note) in notes.iter().enumerate() {
        let _ = writeln!(
            out,
            "<text x=\"{cx}\" y=\"{y}\" text-anchor=\"middle\" class=\"note\">{n}</text>",
            cx = WIDTH / 2.0 + PAD,
            y = PAD + ROW * (1.75 + i as f64),
            n = escape(note),
        );
    }
    let mut stack = vec![(0u32, 0.0f64, 0usize)];
    while let Some((n, x, level)) = stack.pop() {
        let node = &tree.nodes[n as usize];
        let value = node.total[key];
        let name = tree.name(n);
        let w = value as f64 / total * WIDTH;
        let y = bottom - level as f64 * ROW;
        let label = format!(
            "{name} ({value} {unit}, {:.2}%)",
            value as f64 * 100.0 / total
        );
        let _ = write!(
            out,
            "<g class=\"f\" data-n=\"{}\"><title>{}</title><rect x=\"{:.2}\" y=\"{y:.1}\" width=\"{:.2}\" height=\"{:.1}\" fill=\"{}\"/>",
            escape(name),
            escape(&label),
            x + PAD,
            w.max(MIN_WIDTH),
            ROW - 1.0,
            color(name)
        );
        let chars = ((w - 6.0) / 7.0).floor() as usize;
        if chars >= 3 {
            let shown: String = if name.chars().count() <= chars {
                name.to_string()
            } else {
                name.chars().take(chars - 2).collect::<String>() + ".."
            };
            let _ = write!(
                out,
                "<text x=\"{:.2}\" y=\"{:.1}\">{}</text>",
                x + PAD + 3.0,
                y + ROW - 4.5,
                escape(&shown)
            );
        }
        out.push_str("</g>\n");
        if level >= MAX_LEVELS {
            continue;
        }
        let mut cx = x;
        for &c in tree.children(n) {
            if wide(c) {
                stack.push((c, cx, level + 1));
            }
            cx += tree.nodes[c as usize].total[key] as f64 / total * WIDTH;
        }
    }
    // The script is the element's whole text: a page that allows it by
    // hash hashes exactly `SCRIPT`.
    out.push_str("</g>\n<script type=\"text/ecmascript\"><![CDATA[");
    out.push_str(SCRIPT);
    out.push_str("]]></script>\n</svg>\n");
    out
}

/// Text for XML: markup characters as entities, and what XML 1.0 does not
/// allow (control characters, which a name from a hostile file may hold)
/// as U+FFFD.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\u{fffe}' | '\u{ffff}' => out.push('\u{fffd}'),
            c if c.is_control() && !matches!(c, '\t' | '\n' | '\r') => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// Warm colours, stable per name.
fn color(name: &str) -> String {
    let h = name.bytes().fold(2166136261u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(16777619)
    });
    let r = 205 + (h % 50);
    let g = 80 + ((h >> 8) % 150);
    let b = 40 + ((h >> 16) % 50);
    format!("rgb({r},{g},{b})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_escaped_for_xml_and_controls_replaced() {
        assert_eq!(
            escape("a<b>&\"c\x1b[2J\u{9b}\u{7f}\td\u{ffff}é"),
            "a&lt;b&gt;&amp;&quot;c\u{fffd}[2J\u{fffd}\u{fffd}\td\u{fffd}é"
        );
    }

    /// A million frames deep: drawn in linear time to [`MAX_LEVELS`], with
    /// a note; a second stack beside it, narrower than a pixel's tenth, is
    /// left out.
    #[test]
    fn a_million_frame_stack_is_drawn_to_the_levels_it_can_show() {
        let mut t: StackTree<1> = StackTree::new();
        let f = t.intern("Deep.recurse");
        let m = t.intern("Deep.main");
        let mut path = vec![m];
        path.extend(std::iter::repeat_n(f, 999_999));
        t.add(&path, [100_000]);
        let thin = t.intern("Thin.run");
        t.add(&[thin], [1]);
        t.finish(0);
        let start = std::time::Instant::now();
        let s = draw(&t, 0, "deep", &[], "samples");
        assert!(start.elapsed().as_secs() < 10, "{:?}", start.elapsed());
        assert_eq!(s.matches("<g class=\"f\"").count(), 1 + MAX_LEVELS);
        assert!(s.contains("stacks deeper than 4096 frames are drawn to that depth"));
        assert!(!s.contains("Thin.run"));
        assert!(s.ends_with("</svg>\n"));
    }
}
