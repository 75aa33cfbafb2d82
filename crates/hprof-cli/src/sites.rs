//! `hprof-rs sites FILE`: where the program allocates, from the last
//! allocation-site report of a text (`SITES`) or binary (`ALLOC SITES`)
//! file: sites ordered by allocated bytes, so a class that is allocated in
//! bulk and kept by nothing (`Double` in a numeric program) comes first.
//! The report itself keeps the original's order (live bytes), which hides
//! such sites and, in sampled mode, lets a single sampled object that
//! happens to be live lead; the output says which order it uses and marks
//! estimated values (`~`, `heapsample=`). See docs/hprof-rs-tool.md.

use super::CliResult;
use hprof_analysis::session::{feed, Session};

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
    let session = feed::read_input(path, form, input).map_err(|e| format!("{path}: {e}"))?;
    report(&session).ok_or_else(|| {
        format!("no allocation sites in {path} (run the agent with heap=sites, or heap=sites,heapsample=524288)")
    })
}

/// The last allocation-site report of a session (read from a binary or a
/// text file), each site with its class and its trace's top frame as the
/// text report prints it.
pub fn report(s: &Session) -> Option<Report> {
    let set = s.site_set(false)?;
    let sites = set
        .rows
        .iter()
        .map(|x| Site {
            class: s.site_class(x.class_serial, x.array_type),
            trace: x.trace,
            at: match s.trace_frames(x.trace) {
                None => format!("<TRACE {} not in the file>", x.trace),
                Some([]) => "<no frames>".into(),
                Some([top, ..]) => s.frame_as_reported(*top),
            },
            alloc_bytes: x.bytes,
            alloc_objs: x.objects,
            live_bytes: x.live_bytes,
            live_objs: x.live_objects,
        })
        .collect();
    Some(Report {
        estimated: set.estimated,
        sites,
    })
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
    use hprof_analysis::input::Form;

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

    fn from_text(text: &str) -> CliResult<Option<Report>> {
        feed::read_input("t", Form::Text, text.as_bytes()).map(|s| report(&s))
    }

    #[test]
    fn text_sites_are_listed_by_allocated_bytes_and_marked_estimated() {
        let r = from_text(TEXT).unwrap().unwrap();
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
        assert_eq!(from_text("JAVA PROFILE 1.0.1, created x\n").unwrap(), None);
        assert!(from_text("SITES BEGIN (ordered by live bytes) x\n").is_err());
    }
}
