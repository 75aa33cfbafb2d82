//! Byte-exact tests of the text format against docs/output-formats.md §1.

use super::*;

/// Tue Mar  4 10:15:02 2008 UTC, two seconds after the skeleton's header.
const T_HEADER: i64 = 1_204_625_702_000;
const T_DUMP: i64 = 1_204_625_704_000;
const DUMP_DATE: &str = "Tue Mar  4 10:15:04 2008\n";

fn at(unix_millis: i64) -> Stamp {
    Stamp {
        micros_since_load: 0,
        unix_millis,
        utc_offset_secs: 0,
    }
}

fn fmt() -> AsciiFormat {
    AsciiFormat::new(AsciiOptions::default())
}

fn text(out: &[u8]) -> &str {
    std::str::from_utf8(out).unwrap()
}

/// Run `f` on a fresh format and return what it wrote.
fn run(f: impl FnOnce(&mut AsciiFormat, &mut Vec<u8>)) -> String {
    let mut out = Vec::new();
    f(&mut fmt(), &mut out);
    String::from_utf8(out).unwrap()
}

fn frame(
    id: u64,
    class: &'static str,
    method: &'static str,
    file: Option<&'static str>,
    line: i32,
) -> FrameInfo<'static> {
    FrameInfo {
        frame_id: id,
        class_sig: class,
        class_serial: 100000,
        method_name: method,
        method_sig: "()V",
        source_file: file,
        line,
    }
}

fn trace(serial: u32, frames: Vec<FrameInfo<'static>>) -> TraceInfo<'static> {
    TraceInfo {
        serial,
        thread_serial: None,
        phase: JvmPhase::Live,
        frames,
    }
}

#[test]
fn header_then_prelude_then_separator() {
    let s = run(|f, out| f.header(out, at(T_HEADER)));
    let want = format!(
        "JAVA PROFILE 1.0.1, created Tue Mar  4 10:15:02 2008\n\n{}\n--------\n\n",
        prelude()
    );
    assert_eq!(s, want);
    // The prelude ends with a newline, so an empty line precedes the dashes.
    assert!(s.contains(".\n\n--------\n\n"));
}

#[test]
fn header_date_uses_callers_utc_offset() {
    let s = run(|f, out| {
        f.header(
            out,
            Stamp {
                micros_since_load: 0,
                unix_millis: 0,
                utc_offset_secs: 9 * 3600,
            },
        )
    });
    assert!(s.starts_with("JAVA PROFILE 1.0.1, created Thu Jan  1 09:00:00 1970\n\n"));
}

/// A whole text report (header, threads, traces and every section of
/// docs/output-formats.md §1), minus the prelude.
/// Two invented numbers of the skeleton are not reachable and are adjusted:
/// the object array with `nelems=2` also lists its element `[1]` (nelems is
/// highest non-null index + 1), and the SITES total is chosen so the
/// skeleton's three percentages are consistent (612430 live bytes).
#[test]
fn skeleton_of_section_13() {
    let mut f = fmt();
    let mut out = Vec::new();
    let o = &mut out;
    f.header(o, at(T_HEADER));
    let header_len = o.len();

    let now = at(T_HEADER + 1000);
    let t = |obj, id, name| ThreadStart {
        thread_serial: id,
        obj_id: obj,
        trace_serial: 300000,
        name: Some(name),
        group: Some("main"),
        parent_group: Some("system"),
    };
    f.thread_start(o, now, &t(0x50000150, 200002, "Thread-0"));
    f.thread_end(o, now, 200002);
    f.thread_end(o, now, 200001);
    f.thread_start(o, now, &t(0x500001c4, 200003, "DestroyJavaVM"));

    let dump = at(T_DUMP);
    let traces = vec![
        trace(300000, vec![]),
        trace(
            300417,
            vec![
                frame(0x70000001, "LHello;", "make", Some("Hello.java"), 12),
                frame(0x70000002, "LHello;", "main", Some("Hello.java"), 5),
            ],
        ),
    ];
    f.traces(o, dump, &traces);
    f.heap_dump_begin(
        o,
        dump,
        &HeapTotals {
            live_bytes: 612408,
            live_instances: 5231,
            ..Default::default()
        },
    );
    f.heap_root(
        o,
        &Root::ThreadObject {
            obj_id: 0,
            thread_serial: 200000,
            trace_serial: 300000,
        },
    );
    f.heap_root(
        o,
        &Root::JniGlobal {
            obj_id: 0x50000a21,
            global_ref_id: 1,
            trace_serial: 300000,
        },
    );
    f.heap_root(
        o,
        &Root::StickyClass {
            obj_id: 0x50000007,
            class_sig: "Ljava/lang/String;",
        },
    );
    f.heap_root(
        o,
        &Root::ThreadObject {
            obj_id: 0x500001c4,
            thread_serial: 200003,
            trace_serial: 300000,
        },
    );
    f.heap_root(
        o,
        &Root::ThreadBlock {
            obj_id: 0x500001c4,
            thread_serial: 200003,
        },
    );
    f.heap_root(
        o,
        &Root::JavaFrame {
            obj_id: 0x50001f3e,
            thread_serial: 200003,
            frame_depth: 0,
        },
    );
    let object_fields = [NamedValue {
        name: "lock",
        value: Value::Object(0),
    }];
    let thread_fields = [
        NamedValue {
            name: "priority",
            value: Value::Int(5),
        },
        NamedValue {
            name: "name",
            value: Value::Object(0x50001f40),
        },
        NamedValue {
            name: "group",
            value: Value::Object(0x5000003a),
        },
        NamedValue {
            name: "contextClassLoader",
            value: Value::Object(0x50000a02),
        },
        NamedValue {
            name: "target",
            value: Value::Object(0),
        },
    ];
    let groups: [&[NamedValue]; 2] = [&thread_fields, &object_fields];
    f.heap_instance(
        o,
        &InstanceDump {
            obj_id: 0x500001c4,
            size: 104,
            trace_serial: 300000,
            class_id: 0x50000031,
            class_sig: "Ljava/lang/Thread;",
            values: InstanceValues::Fields(&groups),
        },
    );
    f.heap_obj_array(
        o,
        &ObjArrayDump {
            obj_id: 0x50001f3e,
            size: 24,
            trace_serial: 300417,
            array_class_id: 0x50000c10,
            array_class_sig: "[Ljava/lang/String;",
            elements: &[0x50001f40, 0x50001f42, 0, 0],
        },
    );
    let chars = [72u16, 101, 108, 108, 111, 33];
    f.heap_prim_array(
        o,
        &PrimArrayDump {
            obj_id: 0x50001f40,
            size: 32,
            trace_serial: 300000,
            elements: PrimElements::Char(&chars),
        },
    );
    let none: &[NamedValue] = &[];
    let class = |id, sig, sup, statics| ClassDump {
        class_id: id,
        class_sig: sig,
        trace_serial: 300000,
        super_id: sup,
        loader_id: 0,
        signers_id: 0,
        protection_domain_id: 0,
        instance_size: 0,
        constant_pool: &[],
        statics,
        instance_fields: &[],
    };
    f.heap_class(o, &class(0x50000001, "Ljava/lang/Object;", 0, none));
    let statics = [
        NamedValue {
            name: "threadSeqNumber",
            value: Value::Object(0x50000a33),
        },
        NamedValue {
            name: "MIN_PRIORITY",
            value: Value::Int(1),
        },
        NamedValue {
            name: "nullStatic",
            value: Value::Object(0),
        },
    ];
    f.heap_class(
        o,
        &class(0x50000031, "Ljava/lang/Thread;", 0x50000001, &statics),
    );
    f.heap_dump_end(o, dump);

    let site = |sig, serial, bytes, objs| SiteRow {
        class_sig: sig,
        class_serial: 100001,
        trace_serial: serial,
        live_bytes: bytes,
        live_instances: objs,
        alloc_bytes: bytes,
        alloc_instances: objs,
    };
    f.traces(o, dump, &traces); // already written: nothing
    f.sites(
        o,
        dump,
        &SitesReport {
            flags: 0,
            cutoff: 0.0001,
            totals: HeapTotals {
                live_bytes: 612430,
                live_instances: 5231,
                ..Default::default()
            },
            rows: vec![
                site("[C", 300000, 54072, 1),
                site("Ljava/lang/String;", 300417, 270240, 11260),
            ],
        },
    );

    let want = "\
THREAD START (obj=50000150, id = 200002, name=\"Thread-0\", group=\"main\")
THREAD END (id = 200002)
THREAD END (id = 200001)
THREAD START (obj=500001c4, id = 200003, name=\"DestroyJavaVM\", group=\"main\")
TRACE 300000:
\t<empty>
TRACE 300417:
\tHello.make(Hello.java:12)
\tHello.main(Hello.java:5)
HEAP DUMP BEGIN (5231 objects, 612408 bytes) Tue Mar  4 10:15:04 2008
ROOT 0 (kind=<thread>, id=200000, trace=300000)
ROOT 50000a21 (kind=<JNI global ref>, id=1, trace=300000)
ROOT 50000007 (kind=<system class>, name=java.lang.String)
ROOT 500001c4 (kind=<thread>, id=200003, trace=300000)
ROOT 500001c4 (kind=<thread block>, thread=200003)
ROOT 50001f3e (kind=<Java stack>, thread=200003, frame=0)
OBJ 500001c4 (sz=104, trace=300000, class=java.lang.Thread@50000031)
\tname\t\t50001f40
\tgroup\t\t5000003a
\tcontextClassLoader\t50000a02
ARR 50001f3e (sz=24, trace=300417, nelems=2, elem type=java.lang.String[]@50000c10)
\t[0]\t\t50001f40
\t[1]\t\t50001f42
ARR 50001f40 (sz=12, trace=300000, nelems=6, elem type=char[])
CLS 50000001 (name=java.lang.Object, trace=300000)
CLS 50000031 (name=java.lang.Thread, trace=300000)
\tsuper\t\t50000001
\tstatic threadSeqNumber\t50000a33
HEAP DUMP END
SITES BEGIN (ordered by live bytes) Tue Mar  4 10:15:04 2008
          percent          live          alloc'ed  stack class
 rank   self  accum     bytes objs     bytes  objs trace name
    1 44.13% 44.13%    270240 11260    270240 11260 300417 java.lang.String
    2  8.83% 52.95%     54072    1     54072     1 300000 char[]
SITES END
";
    assert_eq!(text(&out[header_len..]), want);
}

#[test]
fn trace_header_variants_and_frame_lines() {
    let mut t = trace(
        300001,
        vec![
            frame(1, "Ljava/lang/Object;", "wait", None, LINE_NATIVE),
            frame(2, "[I", "clone", Some("X.java"), LINE_COMPILED),
            frame(3, "LFoo;", "bar", Some("Foo.java"), LINE_UNKNOWN),
            frame(4, "LFoo;", "", Some("Foo.java"), 0),
            frame(5, "Xyz", "baz", Some("Foo.java"), 70000),
        ],
    );
    t.thread_serial = Some(200001);
    t.phase = JvmPhase::Start;
    let s = run(|f, out| f.traces(out, at(0), &[t]));
    assert_eq!(
        s,
        "TRACE 300001: (thread=200001) (from start phase of JVM)\n\
         \tjava.lang.Object.wait(<Unknown Source>:Native method)\n\
         \tint[].clone(X.java:Compiled method)\n\
         \tFoo.bar(Foo.java:Unknown line)\n\
         \tFoo.<Unknown Method>(Foo.java:0)\n\
         \tUnknown_class.baz(Foo.java:70000)\n"
    );
}

#[test]
fn all_phase_labels() {
    for (phase, word) in [
        (JvmPhase::OnLoad, "onload"),
        (JvmPhase::Primordial, "primordial"),
        (JvmPhase::Start, "start"),
        (JvmPhase::Dead, "dead"),
        (JvmPhase::Unknown, "unknown"),
    ] {
        let t = TraceInfo {
            serial: 7,
            thread_serial: None,
            phase,
            frames: vec![],
        };
        let s = run(|f, out| f.traces(out, at(0), &[t]));
        assert_eq!(
            s,
            format!("TRACE 7: (from {word} phase of JVM)\n\t<empty>\n")
        );
    }
}

#[test]
fn traces_are_written_once() {
    let mut f = fmt();
    let mut out = Vec::new();
    let a = trace(300000, vec![]);
    let b = trace(300005, vec![frame(1, "LA;", "m", Some("A.java"), 3)]);
    assert!(!f.trace_written(300000));
    f.traces(&mut out, at(0), std::slice::from_ref(&a));
    assert!(f.trace_written(300000));
    f.traces(&mut out, at(0), &[a.clone(), b.clone(), b]);
    assert_eq!(
        text(&out),
        "TRACE 300000:\n\t<empty>\nTRACE 300005:\n\tA.m(A.java:3)\n"
    );
}

#[test]
fn thread_lines_with_missing_names() {
    let s = run(|f, out| {
        f.thread_start(
            out,
            at(0),
            &ThreadStart {
                thread_serial: 200009,
                obj_id: 0x5000abcd,
                ..Default::default()
            },
        );
        f.thread_end(out, at(0), 200009);
    });
    assert_eq!(s, "THREAD START (obj=5000abcd, id = 200009, name=\"\", group=\"\")\nTHREAD END (id = 200009)\n");
}

#[test]
fn overlong_line_is_truncated_and_loses_its_newline() {
    let long = format!("L{};", "a".repeat(1100));
    let class: &'static str = Box::leak(long.into_boxed_str());
    let t = trace(
        9,
        vec![
            frame(1, class, "m", Some("A.java"), 1),
            frame(2, "LB;", "n", Some("B.java"), 2),
        ],
    );
    let s = run(|f, out| f.traces(out, at(0), &[t]));
    let first = &s["TRACE 9:\n".len()..];
    assert_eq!(&first[..1023], format!("\t{}", "a".repeat(1022)));
    // The next write continues on the same line.
    assert_eq!(&first[1023..], "\tB.n(B.java:2)\n");
}

fn site(sig: &'static str, trace: u32, live: u32, alloc: u32) -> SiteRow<'static> {
    SiteRow {
        class_sig: sig,
        class_serial: 100000,
        trace_serial: trace,
        live_bytes: live,
        live_instances: 1,
        alloc_bytes: alloc,
        alloc_instances: 2,
    }
}

#[test]
fn sites_headers_without_rows() {
    let s = run(|f, out| {
        f.sites(
            out,
            at(T_DUMP),
            &SitesReport {
                cutoff: 0.0001,
                ..Default::default()
            },
        )
    });
    assert_eq!(
        s,
        format!(
            "SITES BEGIN (ordered by live bytes) {DUMP_DATE}\
             \x20         percent          live          alloc'ed  stack class\n\
             \x20rank   self  accum     bytes objs     bytes  objs trace name\n\
             SITES END\n"
        )
    );
}

#[test]
fn sites_by_allocation_keep_rows_that_allocate_or_retain_enough() {
    let r = SitesReport {
        flags: SITES_SORT_BY_ALLOC,
        cutoff: 0.01,
        totals: HeapTotals {
            live_bytes: 1000,
            ..Default::default()
        },
        rows: vec![
            site("[I", 1, 900, 1000),
            site("LA;", 2, 5, 5000),
            site("LB;", 3, 95, 100),
        ],
    };
    let s = run(|f, out| f.sites(out, at(T_DUMP), &r));
    let body: Vec<&str> = s.lines().collect();
    assert_eq!(
        body[0],
        "SITES BEGIN (ordered by allocated bytes) Tue Mar  4 10:15:04 2008"
    );
    // A holds 0.5% of the live bytes but made 82% of the allocated bytes:
    // it is kept (the original stopped the list right there), as are the
    // int arrays and B, which each reach 1% one way or the other.
    let classes: Vec<&str> = body[3..6]
        .iter()
        .map(|l| l.split_whitespace().last().unwrap())
        .collect();
    assert_eq!(classes, ["A", "int[]", "B"]);
    assert_eq!(body[6], "SITES END");
}

#[test]
fn estimated_sites_say_so_in_the_begin_line() {
    let r = SitesReport {
        flags: SITES_ESTIMATED,
        cutoff: 0.0,
        totals: HeapTotals {
            live_bytes: 100,
            ..Default::default()
        },
        rows: vec![site("LA;", 300001, 100, 100)],
    };
    let s = run(|f, out| f.sites(out, at(T_DUMP), &r));
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(
        lines[0],
        "SITES BEGIN (ordered by live bytes, estimated from samples) Tue Mar  4 10:15:04 2008"
    );
    assert_eq!(
        lines[3],
        "    1 100.00% 100.00%       100    1       100     2 300001 A"
    );
}

#[test]
fn sites_with_zero_live_total_print_nan() {
    let r = SitesReport {
        cutoff: 0.5,
        rows: vec![site("LA;", 300000, 0, 100), site("[[J", 300001, 0, 50)],
        ..Default::default()
    };
    let s = run(|f, out| f.sites(out, at(T_DUMP), &r));
    let rows: Vec<&str> = s.lines().skip(3).collect();
    assert_eq!(
        rows,
        [
            "    1   nan%   nan%         0    1       100     2 300000 A",
            "    2   nan%   nan%         0    1        50     2 300001 long[][]",
            "SITES END",
        ]
    );
}

fn cpu_row(
    trace: u32,
    hits: u32,
    cost: u64,
    top: Option<(&'static str, &'static str)>,
) -> CpuRow<'static> {
    CpuRow {
        trace_serial: trace,
        hits,
        cost,
        top_frame: top.map(|(c, m)| MethodRef {
            class_sig: c,
            method_name: m,
            method_sig: "()V",
        }),
    }
}

#[test]
fn cpu_samples_rows_and_empty_trace() {
    let r = CpuReport {
        title: CpuTitle::Samples,
        cutoff: 0.0001,
        total: 10,
        rows: vec![
            cpu_row(300101, 3, 3, None),
            cpu_row(300100, 7, 7, Some(("LHello;", "main"))),
            cpu_row(300102, 0, 0, Some(("LHello;", "idle"))),
        ],
    };
    let s = run(|f, out| f.cpu(out, at(T_DUMP), &r));
    assert_eq!(
        s,
        format!(
            "CPU SAMPLES BEGIN (total = 10) {DUMP_DATE}\
             rank   self  accum   count trace method\n\
             \x20  1 70.00% 70.00%       7 300100 Hello.main\n\
             \x20  2 30.00% 100.00%       3 300101 <empty trace>\n\
             CPU SAMPLES END\n"
        )
    );
}

#[test]
fn samples_not_counted_are_a_line_after_the_section() {
    let lost = LostSamples {
        counted: 10,
        reasons: vec![
            ("deoptimizing".into(), 2),
            ("unknown frame in Java".into(), 1),
        ],
    };
    let s = run(|f, out| f.cpu_lost(out, at(T_DUMP), &lost));
    assert_eq!(
        s,
        "CPU SAMPLES LOST 3 of 13 (23.08%): deoptimizing 2, unknown frame in Java 1\n"
    );
}

#[test]
fn cpu_section_without_rows_has_no_column_header() {
    let r = CpuReport {
        title: CpuTitle::Times,
        cutoff: 0.0001,
        total: 5,
        rows: vec![cpu_row(1, 4, 0, None)],
    };
    let s = run(|f, out| f.cpu(out, at(T_DUMP), &r));
    assert_eq!(
        s,
        format!("CPU TIME (ms) BEGIN (total = 5) {DUMP_DATE}CPU TIME (ms) END\n")
    );
}

#[test]
fn old_prof_format() {
    let m = |c, n, s| {
        Some(MethodRef {
            class_sig: c,
            method_name: n,
            method_sig: s,
        })
    };
    let r = OldProfReport {
        rows: vec![
            OldProfRow {
                hits: 1,
                total_ms: 0,
                callee: None,
                caller: None,
            },
            OldProfRow {
                hits: 0,
                total_ms: 9,
                callee: None,
                caller: None,
            },
            OldProfRow {
                hits: 5,
                total_ms: 12,
                callee: m("Ljava/lang/String;", "charAt", "(I)C"),
                caller: m("LHello;", "main", "([Ljava/lang/String;)V"),
            },
            OldProfRow {
                hits: 2,
                total_ms: 3,
                callee: m("LHello;", "main", "([Ljava/lang/String;)V"),
                caller: None,
            },
        ],
    };
    let s = run(|f, out| f.cpu_old(out, at(T_DUMP), &r));
    assert_eq!(
        s,
        "count callee caller time\n\
         5 java.lang.String.charAt(I)C Hello.main([Ljava/lang/String;)V 12\n\
         2 Hello.main([Ljava/lang/String;)V <unknown caller> 3\n\
         1 <unknown callee> <unknown caller> 0\n"
    );
}

#[test]
fn monitor_dump_lines() {
    let d = MonitorDump {
        threads: vec![
            MonitorThread {
                thread_serial: 200001,
                trace_serial: 300000,
                status: ThreadStatus::from_jvmti_state(0x5),
            },
            MonitorThread {
                thread_serial: 200002,
                trace_serial: 300005,
                status: ThreadStatus::from_jvmti_state(
                    0x1 | 0x80 | 0x100 | 0x10_0000 | 0x20_0000 | 0x40_0000,
                ),
            },
        ],
        monitors: vec![
            MonitorInfo {
                class_sig: "Ljava/lang/Object;",
                owner_serial: 200001,
                entry_count: 1,
                waiting_to_enter: vec![200002, 200003],
                waiting_to_be_notified: vec![],
            },
            MonitorInfo {
                class_sig: "[I",
                owner_serial: 200002,
                entry_count: 2,
                waiting_to_enter: vec![],
                waiting_to_be_notified: vec![200004],
            },
        ],
    };
    let s = run(|f, out| f.monitor_dump(out, at(T_DUMP), &d));
    assert_eq!(
        s,
        "MONITOR DUMP BEGIN\n\
         \x20   THREAD 200001, trace 300000, status: R\n\
         \x20   THREAD 200002, trace 300005, status: S|intr|native|CW\n\
         \x20   MONITOR Ljava/lang/Object;\n\
         \towner: thread 200001, entry count: 1\n\
         \twaiting to enter: thread 200002, thread 200003\n\
         \twaiting to be notified:\n\
         \x20   MONITOR [I\n\
         \towner: thread 200002, entry count: 2\n\
         \twaiting to enter:\n\
         \twaiting to be notified: thread 200004\n\
         MONITOR DUMP END\n"
    );
}

#[test]
fn thread_status_from_jvmti_bits() {
    let code = |s| ThreadStatus::from_jvmti_state(s).to_string();
    assert_eq!(code(0), "NS");
    assert_eq!(code(0x2), "ZO");
    assert_eq!(code(0x1), "UN");
    assert_eq!(code(0x5), "R");
    assert_eq!(code(0x1 | 0x40 | 0x80 | 0x20), "SL");
    assert_eq!(code(0x401), "MW");
    assert_eq!(code(0x1 | 0x80 | 0x10 | 0x100), "CW");
    assert_eq!(code(0x1 | 0x4 | 0x40_0000), "native|R");
}

fn monitor_report(total_ms: u64) -> MonitorTimeReport<'static> {
    MonitorTimeReport {
        cutoff: 0.0001,
        total_ns: total_ms * 1_000_000,
        rows: vec![
            MonitorTimeRow {
                trace_serial: 300011,
                class_sig: "[I",
                count: 1,
                time_ns: total_ms / 4 * 1_000_000,
            },
            MonitorTimeRow {
                trace_serial: 300010,
                class_sig: "Ljava/lang/Object;",
                count: 3,
                time_ns: total_ms / 4 * 3 * 1_000_000,
            },
        ],
    }
}

#[test]
fn monitor_time_real_total_in_ms() {
    let s = run(|f, out| f.monitor_time(out, at(T_DUMP), &monitor_report(40)));
    assert_eq!(
        s,
        format!(
            "MONITOR TIME BEGIN (total = 40 ms) {DUMP_DATE}\
             rank   self  accum   count trace monitor\n\
             \x20  1 75.00% 75.00%       3 300010 java.lang.Object (Java)\n\
             \x20  2 25.00% 100.00%       1 300011 int[] (Java)\n\
             MONITOR TIME END\n"
        )
    );
    assert_eq!(
        run(|f, out| f.monitor_time(out, at(T_DUMP), &monitor_report(0))),
        ""
    );
}

#[test]
fn monitor_time_legacy_units() {
    let mut f = AsciiFormat::new(AsciiOptions {
        monitor_time_legacy_units: true,
    });
    let mut out = Vec::new();
    f.monitor_time(&mut out, at(T_DUMP), &monitor_report(999_999));
    assert!(out.is_empty(), "quotient 0: no section");
    f.monitor_time(&mut out, at(T_DUMP), &monitor_report(4_000_000));
    let s = text(&out);
    assert!(s.starts_with("MONITOR TIME BEGIN (total = 4 ms) "), "{s}");
    assert!(s.contains("   1 75.00% 75.00%       3 300010 java.lang.Object (Java)\n"));
}

#[test]
fn wait_lines_show_raw_signatures() {
    let s = run(|f, out| {
        f.monitor_wait(
            out,
            at(0),
            &MonitorWait {
                class_sig: "Ljava/lang/Object;",
                timeout_ms: 0,
                thread_serial: 200001,
            },
        );
        f.monitor_waited(
            out,
            at(0),
            &MonitorWaited {
                class_sig: "Ljava/lang/ref/ReferenceQueue$Lock;",
                time_waited_ms: 15,
                thread_serial: 200002,
            },
        );
    });
    assert_eq!(
        s,
        "WAIT: MONITOR Ljava/lang/Object;, timeout=0, thread 200001\n\
         WAITED: MONITOR Ljava/lang/ref/ReferenceQueue$Lock;, time_waited=15, thread 200002\n"
    );
}

#[test]
fn every_root_kind() {
    let roots = [
        Root::Unknown { obj_id: 0x50000001 },
        Root::JniGlobal {
            obj_id: 0x50000002,
            global_ref_id: 0x1a,
            trace_serial: 300003,
        },
        Root::JniLocal {
            obj_id: 0x50000003,
            thread_serial: 200001,
            frame_depth: 2,
        },
        Root::JavaFrame {
            obj_id: 0x50000004,
            thread_serial: 200001,
            frame_depth: -1,
        },
        Root::NativeStack {
            obj_id: 0x50000005,
            thread_serial: 200002,
        },
        Root::StickyClass {
            obj_id: 0x50000006,
            class_sig: "[Ljava/lang/Object;",
        },
        Root::ThreadBlock {
            obj_id: 0x50000007,
            thread_serial: 200003,
        },
        Root::MonitorUsed { obj_id: 0x50000008 },
        Root::ThreadObject {
            obj_id: 0x50000009,
            thread_serial: 200003,
            trace_serial: 300009,
        },
    ];
    let s = run(|f, out| roots.iter().for_each(|r| f.heap_root(out, r)));
    assert_eq!(
        s,
        "ROOT 50000001 (kind=<unknown>)\n\
         ROOT 50000002 (kind=<JNI global ref>, id=1a, trace=300003)\n\
         ROOT 50000003 (kind=<JNI local ref>, thread=200001, frame=2)\n\
         ROOT 50000004 (kind=<Java stack>, thread=200001, frame=-1)\n\
         ROOT 50000005 (kind=<native stack>, thread=200002)\n\
         ROOT 50000006 (kind=<system class>, name=java.lang.Object[])\n\
         ROOT 50000007 (kind=<thread block>, thread=200003)\n\
         ROOT 50000008 (kind=<busy monitor>)\n\
         ROOT 50000009 (kind=<thread>, id=200003, trace=300009)\n"
    );
}

#[test]
fn instance_field_order_and_tabs() {
    // Own class first in the input; text shows the superclass side first.
    let own = [
        NamedValue {
            name: "value",
            value: Value::Object(0x50000002),
        },
        NamedValue {
            name: "eightchr",
            value: Value::Object(0x50000003),
        },
        NamedValue {
            name: "sevench",
            value: Value::Object(0x50000004),
        },
        NamedValue {
            name: "hash",
            value: Value::Int(7),
        },
    ];
    let sup = [
        NamedValue {
            name: "parentField",
            value: Value::Object(0x50000010),
        },
        NamedValue {
            name: "nullRef",
            value: Value::Object(0),
        },
    ];
    let groups: [&[NamedValue]; 2] = [&own, &sup];
    let o = InstanceDump {
        obj_id: 0x50000001,
        size: 24,
        trace_serial: 300001,
        class_id: 0,
        class_sig: "Lp/Q;",
        values: InstanceValues::Fields(&groups),
    };
    let want = "OBJ 50000001 (sz=24, trace=300001, class=p.Q@0)\n\
                \tparentField\t50000010\n\
                \tvalue\t\t50000002\n\
                \teightchr\t50000003\n\
                \tsevench\t\t50000004\n";
    assert_eq!(run(|f, out| f.heap_instance(out, &o)), want);

    // The pre-encoded variant prints its reference list as given.
    let refs = [
        ("parentField", 0x50000010),
        ("nullRef", 0),
        ("value", 0x50000002),
    ];
    let enc = InstanceDump {
        values: InstanceValues::Encoded {
            bytes: &[1, 2, 3],
            ref_fields: &refs,
        },
        ..o
    };
    assert_eq!(
        run(|f, out| f.heap_instance(out, &enc)),
        "OBJ 50000001 (sz=24, trace=300001, class=p.Q@0)\n\tparentField\t50000010\n\tvalue\t\t50000002\n"
    );
}

#[test]
fn arrays() {
    let all_null = ObjArrayDump {
        obj_id: 0x50000020,
        size: 32,
        trace_serial: 300000,
        array_class_id: 0x50000c11,
        array_class_sig: "[[I",
        elements: &[0, 0, 0],
    };
    let holes = ObjArrayDump {
        elements: &[0, 0x50000021, 0, 0x50000022, 0],
        ..all_null
    };
    let ints = [1i32, 2, 3];
    let prim = PrimArrayDump {
        obj_id: 0x50000030,
        size: 28,
        trace_serial: 300001,
        elements: PrimElements::Int(&ints),
    };
    let omitted = PrimArrayDump {
        elements: PrimElements::Omitted(BasicType::Double),
        ..prim
    };
    let be = PrimArrayDump {
        elements: PrimElements::BigEndian(BasicType::Short, &[0, 1, 0, 2]),
        ..prim
    };
    let bools = PrimArrayDump {
        elements: PrimElements::Boolean(&[1, 0]),
        ..prim
    };
    let s = run(|f, out| {
        f.heap_obj_array(out, &all_null);
        f.heap_obj_array(out, &holes);
        f.heap_prim_array(out, &prim);
        f.heap_prim_array(out, &omitted);
        f.heap_prim_array(out, &be);
        f.heap_prim_array(out, &bools);
    });
    assert_eq!(
        s,
        "ARR 50000020 (sz=32, trace=300000, nelems=0, elem type=int[][]@50000c11)\n\
         ARR 50000020 (sz=32, trace=300000, nelems=4, elem type=int[][]@50000c11)\n\
         \t[1]\t\t50000021\n\
         \t[3]\t\t50000022\n\
         ARR 50000030 (sz=12, trace=300001, nelems=3, elem type=int[])\n\
         ARR 50000030 (sz=28, trace=300001, nelems=0, elem type=double[])\n\
         ARR 50000030 (sz=4, trace=300001, nelems=2, elem type=short[])\n\
         ARR 50000030 (sz=2, trace=300001, nelems=2, elem type=boolean[])\n"
    );
}

#[test]
fn class_lines() {
    let cp = [
        ConstantPoolEntry {
            index: 3,
            obj_id: 0x50000a01,
        },
        ConstantPoolEntry {
            index: 9,
            obj_id: 0x50000a02,
        },
    ];
    let statics = [
        NamedValue {
            name: "x",
            value: Value::Object(0x50000b01),
        },
        NamedValue {
            name: "COUNT",
            value: Value::Long(5),
        },
        NamedValue {
            name: "nothing",
            value: Value::Object(0),
        },
        NamedValue {
            name: "aVeryLongStaticName",
            value: Value::Object(0x50000b02),
        },
    ];
    let fields = [FieldDecl {
        name: "f",
        ty: BasicType::Int,
    }];
    let c = ClassDump {
        class_id: 0x50000100,
        class_sig: "Lcom/acme/Widget$Part;",
        trace_serial: 300042,
        super_id: 0x50000001,
        loader_id: 0x50000200,
        signers_id: 0x50000300,
        protection_domain_id: 0x50000400,
        instance_size: 4,
        constant_pool: &cp,
        statics: &statics,
        instance_fields: &fields,
    };
    assert_eq!(
        run(|f, out| f.heap_class(out, &c)),
        "CLS 50000100 (name=com.acme.Widget$Part, trace=300042)\n\
         \tsuper\t\t50000001\n\
         \tloader\t\t50000200\n\
         \tsigners\t\t50000300\n\
         \tdomain\t\t50000400\n\
         \tstatic x\t50000b01\n\
         \tstatic aVeryLongStaticName\t50000b02\n\
         \tconstant pool entry 9\t50000a02\n\
         \tconstant pool entry 3\t50000a01\n"
    );
}

#[test]
fn binary_only_records_write_nothing() {
    let s = run(|f, out| {
        f.control_settings(
            out,
            at(0),
            &ControlSettings {
                heap_or_sites: true,
                cpu_sampling: true,
                depth: 4,
            },
        );
        f.load_class(
            out,
            at(0),
            &LoadClass {
                class_serial: 1,
                class_obj_id: 2,
                trace_serial: 3,
                class_sig: "LA;",
            },
        );
        f.unload_class(out, at(0), 1);
        f.heap_summary(out, at(0), &HeapTotals::default());
    });
    assert_eq!(s, "");
    assert_eq!(fmt().kind(), crate::format::FormatKind::Ascii);
}
