//! The `hprof-rs` tool's file subcommands: `histo` against `jmap -histo` on
//! the same HotSpot heap state, `flame` against hand-computed stacks of
//! hand-made text and binary files, errors naming the offset of a corrupt
//! record.

use crate::common;

use hprof_core::format::{self as fmt, BinaryFormat, BinaryOptions, ProfileFormat, Stamp};
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

fn tool(args: &[&str]) -> std::process::Output {
    Command::new(env!("HPROF_RS_TOOL"))
        .args(args)
        .output()
        .unwrap()
}

fn jdk_tool(name: &str) -> std::path::PathBuf {
    common::jdk_home().join("bin").join(name)
}

/// class name (Java style) -> instances, from `jmap -histo` or our histo.
fn parse_histo(text: &str, java_names: bool) -> HashMap<String, u64> {
    let mut m = HashMap::new();
    for l in text.lines() {
        let c: Vec<&str> = l.split_whitespace().collect();
        if c.len() >= 4 && c[0].ends_with(':') {
            let name = if java_names {
                c[3].to_string()
            } else {
                hprof_core::reader::java_class_name(c[3])
            };
            *m.entry(name).or_insert(0) += c[1].parse::<u64>().unwrap();
        }
    }
    m
}

#[test]
fn histo_of_a_jcmd_heap_dump_matches_jmap_histo() {
    let dir = common::scratch("tool_histo");
    let mut child = Command::new(common::java())
        .args(["-Xmx256m", "-XX:+UseSerialGC", "-cp"])
        .arg(common::fixture_classes())
        .arg("HoldObjects")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready");
    let pid = child.id().to_string();
    let dump = dir.join("heap.hprof");
    let st = Command::new(jdk_tool("jcmd"))
        .args([&pid, "GC.heap_dump"])
        .arg(&dump)
        .output()
        .unwrap();
    assert!(
        st.status.success() && dump.exists(),
        "{}",
        common::stdout(&st)
    );
    let jmap = Command::new(jdk_tool("jmap"))
        .args(["-histo:live", &pid])
        .output()
        .unwrap();
    assert!(jmap.status.success(), "{}", common::stderr(&jmap));
    drop(child.stdin.take());
    child.wait().unwrap();

    let ours = tool(&["histo", dump.to_str().unwrap()]);
    assert!(ours.status.success(), "{}", common::stderr(&ours));
    let text = common::stdout(&ours);
    assert!(
        text.starts_with(" num     #instances         #bytes  class name\n"),
        "{text}"
    );
    let ours = parse_histo(&text, true);
    let theirs = parse_histo(&common::stdout(&jmap), false);
    for (class, n) in [
        ("HoldObjects$HeldA", 3000),
        ("HoldObjects$HeldB", 700),
        ("HoldObjects$HeldA[]", 50),
    ] {
        assert_eq!(ours.get(class), Some(&n), "{class} in our histogram");
        assert_eq!(theirs.get(class), Some(&n), "{class} in jmap -histo");
    }
    // The heap is idle between the two commands; only the attach machinery
    // may allocate a little. Every class jmap reports is in ours, and the
    // counts agree for nearly all of them.
    let same = theirs
        .iter()
        .filter(|(k, v)| ours.get(*k) == Some(v))
        .count();
    let missing: Vec<&String> = theirs
        .keys()
        .filter(|k| !ours.contains_key(*k) && *k != "java.lang.Class")
        .collect();
    eprintln!("{same} of {} classes have identical counts", theirs.len());
    assert!(
        missing.len() <= 3,
        "classes missing from our histogram: {missing:?}"
    );
    assert!(
        same * 100 >= theirs.len() * 95,
        "only {same} of {} classes agree",
        theirs.len()
    );
    // Our total line adds up the rows.
    let total: u64 = ours.values().sum();
    assert!(text
        .lines()
        .last()
        .unwrap()
        .starts_with(&format!("Total {total:14} ")));
}

/// Hand-computed from crates/hprof-e2e/tests/fixtures/flame-small.txt: traces 300001 (8) and
/// 300003 (4) have the same methods, main -> mid -> leaf.
const EXPECTED_COLLAPSED: &str = "\
app.Main.main;app.Main.mid 2
app.Main.main;app.Main.mid;app.Main.leaf 12
app.Other.run 6
";

#[test]
fn flame_of_a_hand_made_text_report() {
    let path = format!(
        "{}/crates/hprof-e2e/tests/fixtures/flame-small.txt",
        env!("HPROF_REPO")
    );
    let out = tool(&["flame", &path, "--collapsed"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert_eq!(common::stdout(&out), EXPECTED_COLLAPSED);
}

#[test]
fn flame_of_a_hand_made_binary_report_and_its_svg() {
    let dir = common::scratch("tool_flame");
    let mut f = BinaryFormat::new(BinaryOptions::default());
    let mut b = Vec::new();
    let at = Stamp::default();
    f.header(&mut b, at);
    for (serial, sig) in [(100001, "Lapp/Main;"), (100002, "Lapp/Other;")] {
        f.load_class(
            &mut b,
            at,
            &fmt::LoadClass {
                class_serial: serial,
                class_obj_id: u64::from(serial),
                trace_serial: 300000,
                class_sig: sig,
            },
        );
    }
    let frame =
        |id: u64, class_serial: u32, class_sig: &'static str, m: &'static str, line: i32| {
            fmt::FrameInfo {
                frame_id: id,
                class_sig,
                class_serial,
                method_name: m,
                method_sig: "()V",
                source_file: Some("Main.java"),
                line,
            }
        };
    let (leaf3, leaf4) = (
        frame(1, 100001, "Lapp/Main;", "leaf", 3),
        frame(2, 100001, "Lapp/Main;", "leaf", 4),
    );
    let (mid9, mid11) = (
        frame(3, 100001, "Lapp/Main;", "mid", 9),
        frame(4, 100001, "Lapp/Main;", "mid", 11),
    );
    let (main20, main21) = (
        frame(5, 100001, "Lapp/Main;", "main", 20),
        frame(6, 100001, "Lapp/Main;", "main", 21),
    );
    let run = frame(7, 100002, "Lapp/Other;", "run", 5);
    let trace = |serial, frames: Vec<fmt::FrameInfo<'static>>| fmt::TraceInfo {
        serial,
        thread_serial: None,
        phase: Default::default(),
        frames,
    };
    f.traces(
        &mut b,
        at,
        &[
            trace(300001, vec![leaf3, mid9, main20]),
            trace(300002, vec![mid11, main20]),
            trace(300003, vec![leaf4, mid9, main21]),
            trace(300004, vec![run]),
        ],
    );
    let row = |trace_serial, hits| fmt::CpuRow {
        trace_serial,
        hits,
        cost: u64::from(hits),
        top_frame: None,
    };
    f.cpu(
        &mut b,
        at,
        &fmt::CpuReport {
            title: fmt::CpuTitle::Samples,
            cutoff: 0.0,
            total: 20,
            rows: vec![
                row(300001, 8),
                row(300004, 6),
                row(300003, 4),
                row(300002, 2),
            ],
        },
    );
    let path = dir.join("small.hprof");
    std::fs::write(&path, &b).unwrap();
    let p = path.to_str().unwrap();

    let out = tool(&["flame", p]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert_eq!(common::stdout(&out), EXPECTED_COLLAPSED);

    let svg = dir.join("small.svg");
    let out = tool(&["flame", p, "--svg", svg.to_str().unwrap()]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(s.starts_with("<?xml") && s.trim_end().ends_with("</svg>"));
    for title in [
        "all (20 samples, 100.00%)",
        "app.Main.main (14 samples, 70.00%)",
        "app.Main.mid (14 samples, 70.00%)",
        "app.Main.leaf (12 samples, 60.00%)",
        "app.Other.run (6 samples, 30.00%)",
    ] {
        assert!(
            s.contains(&format!("<title>{title}</title>")),
            "{title} in {s}"
        );
    }
    assert_eq!(
        s.matches("<title>").count(),
        5,
        "one box per distinct frame path"
    );

    // The same file as text: format=a layout of its TRACE and CPU records.
    let out = tool(&["print", p]);
    let text = common::stdout(&out);
    assert!(text.contains("TRACE 300001:\n\tapp.Main.leaf(Main.java:3)\n\tapp.Main.mid(Main.java:9)\n\tapp.Main.main(Main.java:20)\n"), "{text}");
    assert!(
        text.contains("   2 30.00% 70.00%       6 300004 app.Other.run\n"),
        "{text}"
    );

    // A corrupt copy: errors name the record and its offset.
    let mut bad = b.clone();
    let cpu_at = bad.len() - (9 + 8 + 4 * 8);
    bad[cpu_at + 5..cpu_at + 9].copy_from_slice(&1000u32.to_be_bytes());
    let bad_path = dir.join("bad.hprof");
    std::fs::write(&bad_path, &bad).unwrap();
    let out = tool(&["flame", bad_path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = common::stderr(&out);
    assert!(
        err.contains(&format!("CPU SAMPLES record at offset {cpu_at}")),
        "{err}"
    );
}
