//! format=b with cpu=samples: the binary stream parses with the crate's
//! reader and with an independent parser (the `jvm-hprof` crate), and says
//! what the text report says.

use crate::common;

use hprof_core::reader::{read_all, Parsed};
use std::collections::HashMap;

fn run_binary(
    name: &str,
    jvm_args: &[&str],
    opts: &str,
    main: &str,
    args: &[&str],
) -> (Parsed, Vec<u8>) {
    let dir = common::scratch(name);
    let agent = format!(
        "-agentpath:{}={opts},format=b,file=out.hprof",
        common::agent_path().display()
    );
    let mut all: Vec<&str> = jvm_args.to_vec();
    all.push(&agent);
    let out = common::run_java(&dir, &all, main, args);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let path = dir.join("out.hprof");
    let parsed = read_all(&path).unwrap_or_else(|e| panic!("our reader rejects the file: {e}"));
    (parsed, std::fs::read(&path).unwrap())
}

#[test]
fn cpu_samples_stream_is_complete_and_consistent() {
    let (p, bytes) = run_binary(
        "bin_cpu",
        &[],
        "cpu=samples,interval=2,depth=5",
        "CpuSplit",
        &["3"],
    );
    assert_eq!(p.header.id_size, 4, "4-byte IDs as the original");
    // CONTROL SETTINGS right after the header: cpu sampling bit, depth 5.
    assert_eq!(p.records[0].tag, 0x0E);
    assert_eq!(p.control_settings.len(), 1);
    assert_eq!(
        (p.control_settings[0].flags, p.control_settings[0].depth),
        (0x2, 5)
    );

    // Class table: Java-style names, serials from 100000, object IDs 0x5xxxxxxx.
    let cpusplit = p.class_by_name("CpuSplit").expect("LOAD CLASS CpuSplit");
    assert!(cpusplit.serial >= 100_000);
    assert_eq!(cpusplit.class_id >> 28, 0x5);
    assert!(p.class_by_name("java.lang.String").is_some());
    assert!(
        p.classes
            .iter()
            .all(|c| !c.name.as_deref().unwrap_or("").contains('/')),
        "no internal names"
    );

    // One CPU SAMPLES record; every entry's trace and frames are defined
    // before it, and the split is right.
    assert_eq!(p.cpu_samples.len(), 1);
    let cpu = &p.cpu_samples[0];
    let frames: HashMap<u64, _> = p.frames.iter().map(|f| (f.id, f)).collect();
    let traces: HashMap<u32, _> = p.traces.iter().map(|t| (t.serial, t)).collect();
    let mut by_method: HashMap<String, u32> = HashMap::new();
    for e in &cpu.entries {
        let t = traces
            .get(&e.trace_serial)
            .expect("TRACE before CPU SAMPLES");
        assert!(t.frame_ids.len() <= 5);
        let top = frames[&t.frame_ids[0]];
        assert_eq!(top.id >> 28, 0x7, "frame IDs are 0x7xxxxxxx");
        let name = p.string(top.method_name_id).unwrap().to_string();
        *by_method.entry(name).or_default() += e.count;
    }
    let (a, b, c) = (
        by_method["work60"] as f64,
        by_method["work30"] as f64,
        by_method["work10"] as f64,
    );
    let n = a + b + c;
    assert!(
        (a / n - 0.6).abs() < 0.06 && (b / n - 0.3).abs() < 0.06,
        "{by_method:?}"
    );
    assert!(cpu.total >= cpu.entries.iter().map(|e| e.count).sum::<u32>());
    // The work methods' frames point at CpuSplit's class serial and a source line.
    let f60 = p
        .frames
        .iter()
        .find(|f| p.string(f.method_name_id) == Some("work60"))
        .unwrap();
    assert_eq!(f60.class_serial, cpusplit.serial);
    assert_eq!(p.string(f60.source_file_id), Some("CpuSplit.java"));
    assert!(f60.line > 0);
    assert_eq!(p.string(f60.signature_id), Some("(J)J"));

    // Independent parser: every record parses; its UTF8 / LOAD CLASS /
    // FRAME / TRACE views agree with ours.
    let theirs = jvm_hprof::parse_hprof(&bytes).expect("jvm-hprof parses the header");
    let (mut utf8, mut classes, mut nframes, mut ntraces) = (0, 0, 0, 0);
    for rec in theirs.records_iter() {
        let rec = rec.expect("jvm-hprof parses every record");
        if let Some(u) = rec.as_utf_8() {
            let u = u.unwrap();
            assert_eq!(p.string(u.name_id().id()), Some(u.text_as_str().unwrap()));
            utf8 += 1;
        } else if let Some(lc) = rec.as_load_class() {
            let lc = lc.unwrap();
            assert!(p.classes.iter().any(
                |c| c.serial == lc.class_serial().num() && c.class_id == lc.class_obj_id().id()
            ));
            classes += 1;
        } else if let Some(f) = rec.as_stack_frame() {
            let f = f.unwrap();
            assert_eq!(frames[&f.id().id()].class_serial, f.class_serial().num());
            nframes += 1;
        } else if let Some(t) = rec.as_stack_trace() {
            let t = t.unwrap();
            let ours = traces[&t.stack_trace_serial().num()];
            let ids: Vec<u64> = t.frame_ids().map(|i| i.unwrap().id()).collect();
            assert_eq!(ids, ours.frame_ids);
            ntraces += 1;
        }
    }
    assert_eq!(utf8, p.strings.len());
    assert_eq!(classes, p.classes.len());
    assert_eq!(nframes, p.frames.len());
    assert_eq!(ntraces, p.traces.len());
}

#[test]
fn header_version_follows_max_heap_and_threads_are_announced() {
    // Max heap below 2,000,000,000 bytes: 1.0.1; at or above: 1.0.2.
    let (small, _) = run_binary(
        "bin_small",
        &["-Xmx512m"],
        "cpu=samples",
        "NamedThreads",
        &["100"],
    );
    assert_eq!(small.header.version, "1.0.1");
    let (big, _) = run_binary("bin_big", &["-Xmx3g"], "cpu=samples", "Hello", &[]);
    assert_eq!(big.header.version, "1.0.2");

    let workers: Vec<_> = small
        .thread_starts
        .iter()
        .filter(|t| {
            small
                .string(t.name_id)
                .is_some_and(|n| n.starts_with("worker-"))
        })
        .collect();
    assert_eq!(workers.len(), 3);
    for w in workers {
        assert_eq!(small.string(w.group_name_id), Some("workers"));
        assert_eq!(small.string(w.parent_group_name_id), Some("main"));
        assert!(small.thread_ends.contains(&w.thread_serial));
        assert_eq!(w.thread_id >> 28, 0x5);
    }
}

#[test]
fn eight_byte_ids_on_request() {
    let (p, bytes) = run_binary("bin_id8", &[], "cpu=samples,idsize=8", "CpuSplit", &["0.5"]);
    assert_eq!(p.header.id_size, 8);
    assert!(!p.cpu_samples.is_empty());
    let theirs = jvm_hprof::parse_hprof(&bytes).unwrap();
    assert!(theirs.records_iter().all(|r| r.is_ok()));
}
