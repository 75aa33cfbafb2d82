//! `hprof-rs sites FILE`: where the program allocates, from the last
//! allocation-site report of a text (`SITES`) or binary (`ALLOC SITES`)
//! file: sites ordered by allocated bytes, so a class that is allocated in
//! bulk and kept by nothing (`Double` in a numeric program) comes first.
//! The report itself keeps the original's order (live bytes), which hides
//! such sites and, in sampled mode, lets a single sampled object that
//! happens to be live lead; the output says which order it uses and marks
//! estimated values (`~`, `heapsample=`). See docs/hprof-rs-tool.md.

use super::CliResult;
use crate::format::SITES_ESTIMATED;
use crate::reader::{java_class_name, HprofReader, RecordBody, Retained};
use crate::transcode::symbols::Symbols;
use hprof_analysis::text::{Event, TextReader};
use std::collections::HashMap;
use std::io::{BufRead, Read};

/// One site: class, where it was allocated (the top frame), counters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    pub class: String,
    pub trace: u32,
    /// `pkg.Class.method(File.java:12)`, or `<no frames>`.
    pub at: String,
    pub alloc_bytes: u64,
    pub alloc_objs: u64,
    pub live_bytes: u64,
    pub live_objs: u64,
}

/// The last allocation-site report of a file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Counts are estimates from heap sampling (`heapsample=`).
    pub estimated: bool,
    pub sites: Vec<Site>,
}

/// Which counter orders the rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    Allocated,
    Live,
}

impl std::str::FromStr for Order {
    type Err = String;
    fn from_str(s: &str) -> Result<Order, String> {
        match s {
            "alloc" => Ok(Order::Allocated),
            "live" => Ok(Order::Live),
            _ => Err(format!("'{s}': the order is alloc or live")),
        }
    }
}

pub fn read_file(path: &str) -> CliResult<Report> {
    let (form, input) = hprof_analysis::input::open(path)?;
    let report = if form == hprof_analysis::input::Form::Text {
        from_text(std::io::BufReader::with_capacity(1 << 16, input))?
    } else {
        from_binary(input)?
    };
    report.ok_or_else(|| {
        format!("no allocation sites in {path} (run the agent with heap=sites, or heap=sites,heapsample=524288)")
    })
}

/// The last ALLOC SITES record of a binary file, with class names and top
/// frames resolved.
pub fn from_binary(r: impl Read) -> CliResult<Option<Report>> {
    let mut reader = HprofReader::new(r).map_err(|e| e.to_string())?;
    let mut syms = Symbols::default();
    let mut last = None;
    while let Some(rec) = reader.next_record().map_err(|e| e.to_string())? {
        if syms.learn(&rec.body) {
            continue;
        }
        if let RecordBody::AllocSites(s) = rec.body {
            last = Some(s);
        }
    }
    let Some(s) = last else { return Ok(None) };
    let sites = s
        .sites
        .iter()
        .map(|x| {
            let class =
                match crate::vocab::BasicType::from_code(x.array_type).and_then(|t| t.keyword()) {
                    Some(prim) if syms.class_name(x.class_serial).is_none() => format!("{prim}[]"),
                    _ => syms
                        .class_name(x.class_serial)
                        .map(java_class_name)
                        .unwrap_or_else(|| format!("<class {}>", x.class_serial)),
                };
            let at = syms
                .traces
                .get(&x.trace_serial)
                .and_then(|t| t.frame_ids.first())
                .map(|&f| {
                    let line = syms.frames.get(&f).map_or(-1, |f| f.line);
                    let file = syms
                        .frames
                        .get(&f)
                        .and_then(|f| syms.string(f.source_file_id))
                        .unwrap_or("Unknown Source");
                    let line = if line > 0 {
                        line.to_string()
                    } else {
                        "Unknown line".into()
                    };
                    format!("{}({file}:{line})", syms.frame_label(f))
                })
                .unwrap_or_else(|| "<no frames>".into());
            Site {
                class,
                trace: x.trace_serial,
                at,
                alloc_bytes: u64::from(x.bytes_allocated),
                alloc_objs: u64::from(x.instances_allocated),
                live_bytes: u64::from(x.live_bytes),
                live_objs: u64::from(x.live_instances),
            }
        })
        .collect();
    Ok(Some(Report {
        estimated: s.flags & SITES_ESTIMATED != 0,
        sites,
    }))
}

/// The last SITES section of a text report, each site with the top frame
/// of its TRACE, read line by line ([`hprof_analysis::text`]); what is
/// kept of the traces' top frames and the rows is bounded
/// ([`crate::reader::Retained`]).
pub fn from_text(r: impl BufRead) -> CliResult<Option<Report>> {
    let mut kept = Retained::default();
    let mut tops: HashMap<u32, String> = HashMap::new();
    // The TRACE being read: its serial and top frame.
    let mut trace: Option<(u32, Option<String>)> = None;
    let mut open: Option<Report> = None;
    let mut last: Option<Report> = None;
    let mut lines = TextReader::new(r);
    while let Some(line) = lines.next().map_err(|e| e.to_string())? {
        let bad = |e: String| format!("line {}: {e}", line.number);
        match line.event {
            Event::TraceBegin { serial, .. } => trace = Some((serial, None)),
            Event::Frame(f) => {
                if let Some((_, top @ None)) = trace.as_mut() {
                    kept.keep(f.len() as u64).map_err(bad)?;
                    *top = Some(f.to_string());
                }
            }
            Event::TraceEnd => {
                if let Some((serial, top)) = trace.take() {
                    kept.keep(16).map_err(bad)?;
                    tops.insert(serial, top.unwrap_or_else(|| "<no frames>".into()));
                }
            }
            Event::SitesBegin { estimated } => {
                open = Some(Report {
                    estimated,
                    sites: Vec::new(),
                })
            }
            Event::SiteRow(row) => {
                if let Some(r) = open.as_mut() {
                    kept.keep(row.class.len() as u64 + 48).map_err(bad)?;
                    r.sites.push(Site {
                        class: row.class.to_string(),
                        trace: row.trace,
                        at: String::new(), // from its TRACE, below
                        alloc_bytes: row.alloc_bytes,
                        alloc_objs: row.alloc_objs,
                        live_bytes: row.live_bytes,
                        live_objs: row.live_objs,
                    });
                }
            }
            Event::SitesEnd => last = open.take(),
            _ => {}
        }
    }
    for site in last.iter_mut().flat_map(|r| r.sites.iter_mut()) {
        site.at = tops
            .get(&site.trace)
            .cloned()
            .unwrap_or_else(|| format!("<TRACE {} not in the file>", site.trace));
    }
    Ok(last)
}

/// The report as a table of the `top` first sites in `order`, with a
/// line that says the order and whether values are estimates.
pub fn render(r: &Report, order: Order, top: usize) -> String {
    let mut sites: Vec<&Site> = r.sites.iter().collect();
    // Stable: ties keep the report's order.
    match order {
        Order::Allocated => sites.sort_by_key(|s| std::cmp::Reverse(s.alloc_bytes)),
        Order::Live => sites.sort_by_key(|s| std::cmp::Reverse(s.live_bytes)),
    }
    let total_alloc: u64 = r.sites.iter().map(|s| s.alloc_bytes).sum();
    let mut out = format!(
        "{} sites, ordered by {} (the report lists them by live bytes){}\n",
        r.sites.len(),
        match order {
            Order::Allocated => "allocated bytes",
            Order::Live => "live bytes",
        },
        if r.estimated {
            "; ~: estimated from heap samples (heapsample=), rough where few objects were sampled"
        } else {
            ""
        }
    );
    out.push_str(
        " rank  alloc %  allocated bytes      objects   live bytes      objects  trace  class  allocated at\n",
    );
    let mark = if r.estimated { "~" } else { " " };
    let pct = |part: u64, whole: u64| {
        if whole == 0 {
            0.0
        } else {
            100.0 * part as f64 / whole as f64
        }
    };
    for (i, s) in sites.iter().take(top).enumerate() {
        out.push_str(&format!(
            "{:5} {:7.2}% {mark}{:15} {mark}{:11} {mark}{:11} {mark}{:11} {:6}  {}  {}\n",
            i + 1,
            pct(s.alloc_bytes, total_alloc),
            s.alloc_bytes,
            s.alloc_objs,
            s.live_bytes,
            s.live_objs,
            s.trace,
            s.class,
            s.at
        ));
    }
    if sites.len() > top {
        out.push_str(&format!(
            "({} more sites; --top N shows more)\n",
            sites.len() - top
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "JAVA PROFILE 1.0.1, created Fri Nov 27 06:23:27 2026\n\n\
        TRACE   A stack trace (legend)\n--------\n\n\
        TRACE 300001:\n\tApp.keep(App.java:12)\n\tApp.main(App.java:5)\n\
        TRACE 300002:\n\tjava.lang.Double.valueOf(Double.java:519)\n\
        TRACE 300000:\n\t<empty>\n\
        SITES BEGIN (ordered by live bytes, estimated from samples) Fri Nov 27 06:23:27 2026\n\
        \x20         percent          live          alloc'ed  stack class\n\
        \x20rank   self  accum     bytes objs     bytes  objs trace name\n\
        \x20   1 60.00% 60.00%       600    6       600     6 300001 App$Kept\n\
        \x20   2 40.00% 100.00%      400    1       400     1 300000 java.lang.String\n\
        \x20   3  0.00% 100.00%        0    0   4800000 300000 300002 java.lang.Double\n\
        SITES END\n";

    #[test]
    fn text_sites_are_listed_by_allocated_bytes_and_marked_estimated() {
        let r = from_text(TEXT.as_bytes()).unwrap().unwrap();
        assert!(r.estimated);
        assert_eq!(r.sites.len(), 3);
        assert_eq!(r.sites[0].at, "App.keep(App.java:12)");
        assert_eq!(r.sites[1].at, "<no frames>");
        let t = render(&r, Order::Allocated, 2);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[0],
            "3 sites, ordered by allocated bytes (the report lists them by live bytes); ~: \
             estimated from heap samples (heapsample=), rough where few objects were sampled"
        );
        assert!(
            lines[2].contains("java.lang.Double  java.lang.Double.valueOf(Double.java:519)"),
            "{t}"
        );
        assert!(lines[2].contains("~        4800000"), "{t}");
        assert!(lines[3].contains("App$Kept"), "{t}");
        assert_eq!(lines[4], "(1 more sites; --top N shows more)");
        let live = render(&r, Order::Live, 1);
        assert!(live.lines().nth(2).unwrap().contains("App$Kept"), "{live}");
    }

    #[test]
    fn a_file_without_sites_has_none() {
        assert_eq!(
            from_text("JAVA PROFILE 1.0.1, created x\n".as_bytes()).unwrap(),
            None
        );
        assert!(from_text("SITES BEGIN (ordered by live bytes) x\n".as_bytes()).is_err());
    }
}
