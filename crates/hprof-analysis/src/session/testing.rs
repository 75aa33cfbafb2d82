//! Small sessions built from records, for the views' tests here and the
//! UI's JSON tests (feature `testing`).

use super::{Kind, Session};
use crate::reader::{
    AllocSite, AllocSites, CpuSample, CpuSamples, Frame, LoadClass, RecordBody, Trace,
};

pub fn utf8(s: &mut Session, id: u64, t: &str) {
    s.apply(0, "UTF8", RecordBody::Utf8 { id, text: t.into() })
        .unwrap();
}

/// Two classes, three frames, two traces:
/// trace 1 = Main.main <- Main.hot (thread 7);
/// trace 2 = Main.main <- java.io.X.read (thread 8)
pub fn sample_session() -> Session {
    let mut s = Session::new(1, Kind::File, "t".into());
    utf8(&mut s, 1, "Main");
    utf8(&mut s, 2, "java.io.X");
    utf8(&mut s, 3, "main");
    utf8(&mut s, 4, "hot");
    utf8(&mut s, 5, "read");
    utf8(&mut s, 6, "Main.java");
    for (serial, name) in [(1, 1), (2, 2)] {
        s.apply(
            0,
            "LOAD CLASS",
            RecordBody::LoadClass(LoadClass {
                class_serial: serial,
                class_id: 100 + u64::from(serial),
                trace_serial: 0,
                name_id: name,
            }),
        )
        .unwrap();
    }
    for (id, m, c, line) in [(10, 3, 1, 5), (11, 4, 1, 9), (12, 5, 2, -3)] {
        s.apply(
            0,
            "FRAME",
            RecordBody::Frame(Frame {
                id,
                method_name_id: m,
                signature_id: 0,
                source_file_id: 6,
                class_serial: c,
                line,
            }),
        )
        .unwrap();
    }
    for (serial, thread, frames) in [(1, 7, vec![11, 10]), (2, 8, vec![12, 10])] {
        s.apply(
            0,
            "TRACE",
            RecordBody::Trace(Trace {
                serial,
                thread_serial: thread,
                frame_ids: frames,
            }),
        )
        .unwrap();
    }
    s
}

pub fn cpu(s: &mut Session, rows: &[(u32, u32)]) {
    s.apply(
        1000,
        "CPU SAMPLES",
        RecordBody::CpuSamples(CpuSamples {
            total: rows.iter().map(|r| r.0).sum(),
            entries: rows
                .iter()
                .map(|&(count, trace_serial)| CpuSample {
                    count,
                    trace_serial,
                })
                .collect(),
        }),
    )
    .unwrap();
}

/// A text report with every section the views read.
pub const TEXT_REPORT: &str = "JAVA PROFILE 1.0.1, created Mon Nov 24 10:00:00 2025

Header text, legend...
THREAD START
TRACE           A stack trace: its serial number, then one line per frame,
HEAP DUMP       The objects known to the agent, between HEAP DUMP BEGIN and
--------

THREAD START (obj=50000150, id = 200002, name=\"worker, \"one\"\", group=\"main\")
TRACE 300001: (thread=200002)
\tContention.blockOnHot(Contention.java:47)
\tContention.lambda$main$0(Contention.java:80)
TRACE 300002:
\tjava.lang.Object.wait(Object.java:Native method)
TRACE 300003:
\t<empty>
WAIT: MONITOR LContention$WaitBox;, timeout=300, thread 200002
WAITED: MONITOR LContention$WaitBox;, time_waited=301, thread 200002
THREAD END (id = 200002)
MONITOR DUMP BEGIN
    THREAD 200002, trace 300001, status: MW
    THREAD 200001, trace 300002, status: CW
    MONITOR LContention$HotLock;
\towner: thread 200001, entry count: 1
\twaiting to enter: thread 200002
\twaiting to be notified:
MONITOR DUMP END
MONITOR TIME BEGIN (total = 40 ms) Mon Nov 24 10:00:01 2025
rank   self  accum   count trace monitor
   1 75.00% 75.00%      12 300001 Contention$HotLock (Java)
   2 25.00% 100.00%       1 300002 java.lang.Object (Java)
MONITOR TIME END
CPU SAMPLES BEGIN (total = 10) Mon Nov 24 10:00:01 2025
rank   self  accum   count trace method
   1 90.00% 90.00%       9 300001 Contention.blockOnHot
   2 10.00% 100.00%       1 300002 java.lang.Object.wait
CPU SAMPLES END
SITES BEGIN (ordered by live bytes) Mon Nov 24 10:00:01 2025
          percent          live          alloc'ed  stack class
 rank   self  accum     bytes objs     bytes  objs trace name
    1 80.00% 80.00%     16000 1000     16000  1000 300001 AllocSites$Kept
    2 20.00% 100.00%      4000  250      8000   500 300002 int[]
SITES END
HEAP DUMP BEGIN (12 objects, 345 bytes) Mon Nov 24 10:00:01 2025
ROOT 50000150 (kind=<thread>, id=200002, trace=300001)
HEAP DUMP END
";

/// A session fed the lines of a text report, and how that ended.
pub fn from_text(text: &str) -> (Session, Result<(), String>) {
    let mut s = Session::new(1, Kind::Listen, "x".into());
    let mut f = super::text::TextFeed::new();
    let mut r = crate::text::TextReader::new(text.as_bytes());
    let res = (|| {
        while let Some(line) = r.next().map_err(super::text::error)? {
            f.take(&mut s, line)?;
        }
        Ok(())
    })();
    (s, res)
}

/// An allocation site of class `class_serial` at trace `trace_serial`,
/// half of it live.
pub fn site(class_serial: u32, trace_serial: u32, bytes: u32, objects: u32) -> AllocSite {
    AllocSite {
        array_type: 0,
        class_serial,
        trace_serial,
        live_bytes: bytes / 2,
        live_instances: objects / 2,
        bytes_allocated: bytes,
        instances_allocated: objects,
    }
}

/// An ALLOC SITES report of `sites` (totals 1, 2, 3, 4).
pub fn report(s: &mut Session, flags: u16, sites: Vec<AllocSite>) {
    s.apply(
        0,
        "ALLOC SITES",
        RecordBody::AllocSites(AllocSites {
            flags,
            cutoff_raw: 0,
            total_live_bytes: 1,
            total_live_instances: 2,
            total_bytes_allocated: 3,
            total_instances_allocated: 4,
            sites,
        }),
    )
    .unwrap();
}
