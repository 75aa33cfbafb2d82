//! SIGKILL while a heap dump is being written: no agent code runs, but what
//! reached the file must read as a valid prefix — whole records up to a
//! cut inside the last one, which the reader names as truncated, never as
//! corrupt (docs/options.md, "When the JVM ends abnormally").

use crate::common;

use hprof_core::reader::{ErrorKind, HprofReader};
use std::io::BufRead;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn a_heap_dump_cut_by_sigkill_is_a_valid_prefix() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("kill_dump");
    let marker = dir.join("never");
    let out = dir.join("dump.hprof");
    let agent = format!(
        "-agentpath:{}=heap=dump,format=b,file={}",
        common::agent_path().display(),
        out.display()
    );
    let mut child = Command::new(common::java())
        .current_dir(&dir)
        .arg(&agent)
        .arg("-cp")
        .arg(common::fixture_classes())
        .args(["HeapBench", "256"])
        .arg(&marker)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready");
    // Ask for a dump, then kill the JVM once the dump has started to land.
    assert!(Command::new("kill")
        .args(["-QUIT", &child.id().to_string()])
        .status()
        .unwrap()
        .success());
    let start = Instant::now();
    let size = |p: &std::path::Path| std::fs::metadata(p).map_or(0, |m| m.len());
    let before = size(&out);
    while size(&out) < before + (8 << 20) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the dump never grew"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    common::kill_and_reap(&mut child).unwrap();

    let bytes = std::fs::read(&out).unwrap();
    let mut r = HprofReader::new(std::io::Cursor::new(&bytes)).expect("header");
    let mut records = 0;
    let end = loop {
        match r.next_record() {
            Ok(Some(_)) => records += 1,
            Ok(None) => break None,
            Err(e) => break Some(e),
        }
    };
    assert!(records > 3, "{records} records before the cut");
    match end {
        // The kill may land between records.
        None => {}
        Some(e) => assert!(
            matches!(e.kind, ErrorKind::Truncated { .. }),
            "the prefix must end in a truncated record, not: {e}"
        ),
    }
}
