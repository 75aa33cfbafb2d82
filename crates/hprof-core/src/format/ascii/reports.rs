//! Text dump sections: SITES, CPU SAMPLES / CPU TIME, old prof block,
//! MONITOR DUMP, MONITOR TIME.

use super::printer::{pf, Pct, Printer};
use crate::format::ctime::ctime_of;
use crate::format::lost::LostSamples;
use crate::format::model::{
    CpuReport, CpuTitle, MethodRef, MonitorDump, MonitorTimeReport, OldProfReport, SitesReport,
    Stamp,
};
use crate::format::names::render_class_name;
use crate::format::selection::{select_cpu, select_monitor_time, select_old_prof, select_sites};

pub fn sites(p: &mut Printer, out: &mut Vec<u8>, at: &Stamp, r: &SitesReport<'_>) {
    let order = match (r.sorted_by_alloc(), r.estimated()) {
        (true, false) => "allocated bytes",
        (false, false) => "live bytes",
        (true, true) => "allocated bytes, estimated from samples",
        (false, true) => "live bytes, estimated from samples",
    };
    let since = if r.since_attach() {
        ", counted from the attach"
    } else {
        ""
    };
    let taken = if r.taken() {
        ", allocations since the previous report"
    } else {
        ""
    };
    pf!(
        p,
        out,
        "SITES BEGIN (ordered by {}{}{}) {}",
        order,
        since,
        taken,
        ctime_of(at)
    );
    pf!(
        p,
        out,
        "          percent          live          alloc'ed  stack class\n"
    );
    pf!(
        p,
        out,
        " rank   self  accum     bytes objs     bytes  objs trace name\n"
    );
    for s in select_sites(r) {
        let row = s.row;
        pf!(
            p,
            out,
            "{:5} {}% {}% {:9} {:4} {:9} {:5} {:5} {}\n",
            s.rank,
            Pct(s.ratio),
            Pct(s.accum),
            row.live_bytes,
            row.live_instances,
            row.alloc_bytes,
            row.alloc_instances,
            row.trace_serial,
            render_class_name(row.class_sig)
        );
    }
    pf!(p, out, "SITES END\n");
}

pub fn cpu(p: &mut Printer, out: &mut Vec<u8>, at: &Stamp, r: &CpuReport<'_>) {
    let title = match r.title {
        CpuTitle::Samples => "CPU SAMPLES",
        CpuTitle::Times => "CPU TIME (ms)",
    };
    pf!(
        p,
        out,
        "{} BEGIN (total = {}) {}",
        title,
        r.total,
        ctime_of(at)
    );
    let rows = select_cpu(r);
    if !rows.is_empty() {
        pf!(p, out, "rank   self  accum   count trace method\n");
    }
    for s in rows {
        pf!(
            p,
            out,
            "{:4} {}% {}% {:7} {:5}",
            s.rank,
            Pct(s.ratio),
            Pct(s.accum),
            s.row.hits,
            s.row.trace_serial
        );
        match &s.row.top_frame {
            Some(m) => pf!(
                p,
                out,
                " {}.{}\n",
                render_class_name(m.class_sig),
                m.method_name
            ),
            None => pf!(p, out, " <empty trace>\n"),
        }
    }
    pf!(p, out, "{} END\n", title);
}

pub fn cpu_lost(p: &mut Printer, out: &mut Vec<u8>, lost: &LostSamples) {
    pf!(p, out, "{}\n", lost.line());
}

pub fn cpu_old(p: &mut Printer, out: &mut Vec<u8>, r: &OldProfReport<'_>) {
    fn method(p: &mut Printer, out: &mut Vec<u8>, m: Option<&MethodRef<'_>>, unknown: &str) {
        match m {
            Some(m) => pf!(
                p,
                out,
                "{}.{}{} ",
                render_class_name(m.class_sig),
                m.method_name,
                m.method_sig
            ),
            None => pf!(p, out, "{} ", unknown),
        }
    }
    pf!(p, out, "count callee caller time\n");
    for s in select_old_prof(r) {
        pf!(p, out, "{} ", s.row.hits);
        method(p, out, s.row.callee.as_ref(), "<unknown callee>");
        method(p, out, s.row.caller.as_ref(), "<unknown caller>");
        pf!(p, out, "{}\n", s.row.total_ms);
    }
}

pub fn monitor_dump(p: &mut Printer, out: &mut Vec<u8>, d: &MonitorDump<'_>) {
    fn thread_list(p: &mut Printer, out: &mut Vec<u8>, label: &str, serials: &[u32]) {
        pf!(p, out, "\t{}:", label);
        for (i, serial) in serials.iter().enumerate() {
            if i + 1 < serials.len() {
                pf!(p, out, " thread {},", serial);
            } else {
                pf!(p, out, " thread {}", serial);
            }
        }
        pf!(p, out, "\n");
    }
    pf!(p, out, "MONITOR DUMP BEGIN\n");
    for t in &d.threads {
        pf!(
            p,
            out,
            "    THREAD {}, trace {}, status: {}\n",
            t.thread_serial,
            t.trace_serial,
            t.status
        );
    }
    for m in &d.monitors {
        pf!(p, out, "    MONITOR {}\n", m.class_sig);
        pf!(
            p,
            out,
            "\towner: thread {}, entry count: {}\n",
            m.owner_serial,
            m.entry_count
        );
        thread_list(p, out, "waiting to enter", &m.waiting_to_enter);
        thread_list(p, out, "waiting to be notified", &m.waiting_to_be_notified);
    }
    pf!(p, out, "MONITOR DUMP END\n");
}

/// MONITOR TIME. By default the total is shown in ms and the section is
/// written whenever it is non-zero; `legacy_units` reproduces the original's
/// division of the total by 1,000,000 (shown and tested for > 0).
pub fn monitor_time(
    p: &mut Printer,
    out: &mut Vec<u8>,
    at: &Stamp,
    r: &MonitorTimeReport<'_>,
    legacy_units: bool,
) {
    let total_ms = r.total_ns.saturating_add(500_000) / 1_000_000;
    let shown_total = if legacy_units {
        total_ms / 1_000_000
    } else {
        total_ms
    };
    if shown_total == 0 {
        return;
    }
    pf!(
        p,
        out,
        "MONITOR TIME BEGIN (total = {} ms) {}",
        shown_total,
        ctime_of(at)
    );
    pf!(p, out, "rank   self  accum   count trace monitor\n");
    for s in select_monitor_time(r) {
        pf!(
            p,
            out,
            "{:4} {}% {}% {:7} {:5} {} (Java)\n",
            s.rank,
            Pct(s.ratio),
            Pct(s.accum),
            s.row.count,
            s.row.trace_serial,
            render_class_name(s.row.class_sig)
        );
    }
    pf!(p, out, "MONITOR TIME END\n");
}
