//! A panic inside a dump must release the dump lock: the next data dump
//! request and the exit dump still happen (docs/design.md, "One dump at a
//! time"). The panic is injected with `HPROF_RS_TEST_FAULT=dump-panic`.

use crate::common;

use common::ascii;
use std::io::BufRead;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn kill_quit(pid: u32) {
    let st = Command::new("kill")
        .arg("-QUIT")
        .arg(pid.to_string())
        .status()
        .expect("kill");
    assert!(st.success());
}

#[test]
fn a_panicking_dump_releases_the_lock_for_later_dumps_and_the_exit_dump() {
    let dir = common::scratch("dump_guard");
    let marker = dir.join("stop");
    let agent = format!(
        "-agentpath:{}=cpu=samples,interval=5,file=out.txt",
        common::agent_path().display()
    );
    let mut child = Command::new(common::java())
        .current_dir(&dir)
        .env("HPROF_RS_TEST_FAULT", "dump-panic")
        .arg(&agent)
        .arg("-cp")
        .arg(common::fixture_classes())
        .arg("WaitForSignal")
        .arg(&marker)
        .arg("60")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start java");
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready");
    let stderr = child.stderr.take().unwrap();
    let err_reader = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap());

    // First request: the injected panic. Second: must run normally.
    kill_quit(child.id());
    std::thread::sleep(Duration::from_millis(700));
    kill_quit(child.id());
    std::thread::sleep(Duration::from_millis(700));
    std::fs::write(&marker, b"").unwrap();

    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > deadline {
            common::kill_and_reap(&mut child);
            panic!("the JVM did not exit within 60 s after the injected panic");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let err = err_reader.join().unwrap();
    assert!(status.success(), "exit {status:?}\n{err}");
    assert_eq!(
        err.matches("HPROF ERROR: internal error").count(),
        1,
        "one caught panic, reported once:\n{err}"
    );
    assert!(err.contains("fault injected"), "{err}");
    let rep = ascii::parse(&std::fs::read_to_string(dir.join("out.txt")).unwrap());
    assert_eq!(
        rep.cpu.len(),
        2,
        "the second SIGQUIT and the exit each wrote CPU SAMPLES"
    );
    assert!(rep.cpu[1]
        .rows
        .iter()
        .any(|r| r.method == "WaitForSignal.busy"));
}
