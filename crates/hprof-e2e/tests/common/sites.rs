//! SITES sections of the HPROF text format, for checking heap=sites output.
#![allow(dead_code)]

/// One SITES row (text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub live_bytes: u64,
    pub live_objs: u64,
    pub alloc_bytes: u64,
    pub alloc_objs: u64,
}

#[derive(Debug, Clone)]
pub struct Row {
    pub rank: u32,
    pub self_pct: f64,
    pub accum_pct: f64,
    pub counts: Counts,
    pub trace: u32,
    pub class: String,
}

#[derive(Debug)]
pub struct Sites {
    pub begin: String,
    pub rows: Vec<Row>,
}

/// Every SITES section of a text report, in order.
pub fn parse_sites(body: &str) -> Vec<Sites> {
    let mut out = Vec::new();
    let mut lines = body.lines();
    while let Some(l) = lines.next() {
        if !l.starts_with("SITES BEGIN (ordered by ") {
            continue;
        }
        assert_eq!(
            lines.next(),
            Some("          percent          live          alloc'ed  stack class")
        );
        assert_eq!(
            lines.next(),
            Some(" rank   self  accum     bytes objs     bytes  objs trace name")
        );
        let mut rows = Vec::new();
        for r in lines.by_ref() {
            if r == "SITES END" {
                break;
            }
            let c: Vec<&str> = r.split_whitespace().collect();
            assert_eq!(c.len(), 9, "SITES row: {r:?}");
            let n = |i: usize| c[i].parse::<u64>().unwrap_or_else(|_| panic!("{r:?}"));
            rows.push(Row {
                rank: c[0].parse().unwrap(),
                self_pct: c[1].trim_end_matches('%').parse().unwrap(),
                accum_pct: c[2].trim_end_matches('%').parse().unwrap(),
                counts: Counts {
                    live_bytes: n(3),
                    live_objs: n(4),
                    alloc_bytes: n(5),
                    alloc_objs: n(6),
                },
                trace: c[7].parse().unwrap(),
                class: c[8].to_string(),
            });
        }
        out.push(Sites {
            begin: l.to_string(),
            rows,
        });
    }
    out
}
