//! `net=host:port` end to end: real JVMs stream to a test-side server that
//! sends every command and checks the records that come back, to peers
//! that vanish or send garbage, and to `hprof-rs listen`.

use crate::common;

use hprof_core::protocol::{Command, Control, ThreadRef};
use hprof_core::reader::{HprofReader, Record, RecordBody};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command as Proc, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn spawn_java(dir: &std::path::Path, opts: &str, main: &str, args: &[&str]) -> Child {
    Proc::new(common::java())
        .current_dir(dir)
        .arg(format!(
            "-agentpath:{}={opts}",
            common::agent_path().display()
        ))
        .arg("-cp")
        .arg(common::fixture_classes())
        .arg(main)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start java")
}

fn finish(child: Child) -> (i32, String, String) {
    let out = child.wait_with_output().expect("wait for java");
    (
        out.status.code().unwrap_or(-1),
        common::stdout(&out),
        common::stderr(&out),
    )
}

/// A front-end in the test: accepts the agent, collects what it sends.
struct Server {
    stream: TcpStream,
    bytes: Arc<Mutex<Vec<u8>>>,
    closed: Arc<Mutex<bool>>,
}

impl Server {
    fn listen() -> (TcpListener, u16) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        (l, port)
    }

    fn accept(l: &TcpListener) -> Server {
        l.set_nonblocking(true).unwrap();
        let start = Instant::now();
        let stream = loop {
            match l.accept() {
                Ok((s, _)) => break s,
                Err(_) if start.elapsed() < Duration::from_secs(30) => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                Err(e) => panic!("agent did not connect: {e}"),
            }
        };
        stream.set_nonblocking(false).unwrap();
        let bytes = Arc::new(Mutex::new(Vec::new()));
        let closed = Arc::new(Mutex::new(false));
        let (b, c, mut r) = (bytes.clone(), closed.clone(), stream.try_clone().unwrap());
        std::thread::spawn(move || {
            let mut buf = [0u8; 65536];
            loop {
                match r.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => b.lock().unwrap().extend_from_slice(&buf[..n]),
                }
            }
            *c.lock().unwrap() = true;
        });
        Server {
            stream,
            bytes,
            closed,
        }
    }

    fn send(&mut self, c: Command) {
        self.stream.write_all(&c.encode(7)).unwrap();
    }

    /// Complete records received so far.
    fn records(&self) -> Vec<Record> {
        let bytes = self.bytes.lock().unwrap().clone();
        let Ok(mut r) = HprofReader::new(std::io::Cursor::new(bytes)) else {
            return Vec::new();
        };
        let mut v = Vec::new();
        while let Ok(Some(rec)) = r.next_record() {
            v.push(rec);
        }
        v
    }

    fn count(&self, pred: impl Fn(&RecordBody) -> bool) -> usize {
        self.records().iter().filter(|r| pred(&r.body)).count()
    }

    /// Wait until `pred` holds for the records received (or fail).
    fn wait_for(&self, what: &str, pred: impl Fn(&[Record]) -> bool) -> Vec<Record> {
        let start = Instant::now();
        loop {
            let recs = self.records();
            if pred(&recs) {
                return recs;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "timed out waiting for {what}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn wait_closed(&self) {
        let start = Instant::now();
        while !*self.closed.lock().unwrap() {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "agent never closed the stream"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn cpu_sections(recs: &[Record]) -> Vec<hprof_core::reader::CpuSamples> {
    recs.iter()
        .filter_map(|r| match &r.body {
            RecordBody::CpuSamples(c) => Some(c.clone()),
            _ => None,
        })
        .collect()
}

fn traces(recs: &[Record]) -> std::collections::HashMap<u32, hprof_core::reader::Trace> {
    recs.iter()
        .filter_map(|r| match &r.body {
            RecordBody::Trace(t) => Some((t.serial, t.clone())),
            _ => None,
        })
        .collect()
}

fn cpu(cutoff: f32) -> Command {
    Command::CpuSamples { ignored: 0, cutoff }
}

#[test]
fn refused_or_unresolvable_connections_stop_the_jvm_with_a_clear_error() {
    let dir = common::scratch("net_refused");
    let (l, port) = Server::listen();
    drop(l); // nobody listens there now
    for (host, port) in [
        ("127.0.0.1".to_string(), port),
        ("no-such-host.invalid".to_string(), 8000),
    ] {
        let out = common::run_with_agent(
            &dir,
            &format!("cpu=samples,net={host}:{port}"),
            "Hello",
            &[],
        );
        let err = common::stderr(&out);
        assert_eq!(out.status.code(), Some(1), "exit status; stderr: {err}");
        assert!(
            err.contains(&format!("HPROF ERROR: can't connect to {host}:{port} [")),
            "{err}"
        );
        assert!(
            !common::stdout(&out).contains("hello"),
            "the program must not run"
        );
    }
    // Port range is checked by the option parser (the original truncated to 16 bits).
    let out = common::run_with_agent(&dir, "net=127.0.0.1:70000", "Hello", &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        common::stderr(&out).contains("invalid port number"),
        "{}",
        common::stderr(&out)
    );
}

#[test]
fn every_command_gets_its_reply_and_exit_ends_the_vm() {
    let dir = common::scratch("net_commands");
    let (l, port) = Server::listen();
    let child = spawn_java(
        &dir,
        &format!("cpu=samples,interval=10,format=b,net=127.0.0.1:{port},verbose=y"),
        "CpuSplit",
        &["20"],
    );
    let started = Instant::now();
    let mut s = Server::accept(&l);
    s.wait_for("header and CONTROL SETTINGS", |r| {
        r.iter()
            .any(|r| matches!(r.body, RecordBody::ControlSettings(_)))
    });
    std::thread::sleep(Duration::from_millis(700));

    // CPU SAMPLES with cutoff 0: every sampled trace, preceded by its TRACE.
    s.send(cpu(0.0));
    let recs = s.wait_for("CPU SAMPLES", |r| cpu_sections(r).len() == 1);
    let c = &cpu_sections(&recs)[0];
    let sum: u32 = c.entries.iter().map(|e| e.count).sum();
    assert!(
        c.total > 10 && sum == c.total,
        "cutoff 0 lists every trace with hits: {c:?}"
    );
    let t = traces(&recs);
    assert!(
        c.entries.iter().all(|e| t.contains_key(&e.trace_serial)),
        "rows' traces come first"
    );
    assert!(
        !t.contains_key(&300_000),
        "the system trace is not written yet"
    );

    // DUMP TRACES writes every trace not written yet (the system trace too).
    s.send(Command::DumpTraces);
    let recs = s.wait_for("system TRACE", |r| traces(r).contains_key(&300_000));
    assert!(traces(&recs)[&300_000].frame_ids.is_empty());

    // Depth 1 + clear: new samples land on one-frame traces only, and the
    // total covers only the time since the clear.
    s.send(Command::Control(Control::SetMaxDepth(1)));
    s.send(Command::Control(Control::ClearCpuSamples));
    std::thread::sleep(Duration::from_millis(500));
    s.send(cpu(0.0));
    let recs = s.wait_for("second CPU SAMPLES", |r| cpu_sections(r).len() == 2);
    let c = &cpu_sections(&recs)[1];
    let t = traces(&recs);
    assert!(
        c.total > 5 && c.entries.iter().map(|e| e.count).sum::<u32>() == c.total,
        "{c:?}"
    );
    for e in &c.entries {
        assert_eq!(
            t[&e.trace_serial].frame_ids.len(),
            1,
            "depth 1 for trace {}",
            e.trace_serial
        );
    }

    // Sampling off for all threads: nothing is sampled after a clear.
    s.send(Command::Control(Control::Sampling {
        on: false,
        thread: ThreadRef::from_id(0),
    }));
    s.send(Command::Control(Control::ClearCpuSamples));
    std::thread::sleep(Duration::from_millis(400));
    s.send(cpu(0.0));
    let recs = s.wait_for("third CPU SAMPLES", |r| cpu_sections(r).len() == 3);
    let c = &cpu_sections(&recs)[2];
    assert_eq!((c.total, c.entries.len()), (0, 0), "paused sampler: {c:?}");

    // Unknown thread IDs are refused; sampling on for all threads resumes.
    s.send(Command::Control(Control::Sampling {
        on: true,
        thread: ThreadRef::from_id(0x1234_5678),
    }));
    s.send(Command::Control(Control::Sampling {
        on: true,
        thread: ThreadRef::from_id(0),
    }));
    std::thread::sleep(Duration::from_millis(400));
    s.send(cpu(0.0));
    let recs = s.wait_for("fourth CPU SAMPLES", |r| cpu_sections(r).len() == 4);
    assert!(cpu_sections(&recs)[3].total > 5, "sampling resumed");

    // Commands of profiles that are off, FORCE GC and an unknown CONTROL
    // sub-command write nothing; the next command still works.
    let before = s.records().len();
    for c in [
        Command::ForceGc,
        Command::HeapSummary,
        Command::AllocSites {
            flags: 0x6,
            cutoff: 0.0,
        },
        Command::DumpHeap,
        Command::Control(Control::AllocTracking(true)),
        Command::Control(Control::AllocTracking(false)),
        Command::Control(Control::ClearAllocSites),
        Command::Control(Control::Unknown(42)),
    ] {
        s.send(c);
    }
    s.send(cpu(0.5));
    let recs = s.wait_for("fifth CPU SAMPLES", |r| cpu_sections(r).len() == 5);
    let new: Vec<&Record> = recs[before..].iter().collect();
    assert!(
        new.iter().all(|r| matches!(
            r.body,
            RecordBody::CpuSamples(_)
                | RecordBody::Trace(_)
                | RecordBody::Frame(_)
                | RecordBody::Utf8 { .. }
                | RecordBody::LoadClass(_)
        )),
        "only the CPU SAMPLES reply (and its traces): {:?}",
        new.iter().map(|r| r.name()).collect::<Vec<_>>()
    );

    // EXIT: System.exit(0) from the listener; the final dump still arrives.
    s.send(Command::Exit);
    s.wait_closed();
    let (code, out, err) = finish(child);
    assert_eq!(code, 0, "{err}");
    assert!(
        !out.contains("rounds="),
        "the program was stopped by EXIT: {out}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "EXIT ended the 20 s program early"
    );
    assert!(
        err.contains("HPROF: received exit event, exiting ..."),
        "{err}"
    );
    for msg in [
        "HEAP SUMMARY command ignored",
        "ALLOC SITES command ignored",
        "DUMP HEAP command ignored",
        "CONTROL allocation tracking on command ignored",
        "CONTROL clear allocation sites command ignored",
        "ignored unknown CONTROL sub-command 42",
        "no application thread has object ID 0x12345678",
    ] {
        assert!(err.contains(msg), "stderr lacks {msg:?}: {err}");
    }
    assert_eq!(
        cpu_sections(&s.records()).len(),
        6,
        "final dump at VM death"
    );
}

#[test]
fn a_peer_that_disconnects_mid_stream_does_not_stop_the_jvm() {
    let dir = common::scratch("net_disconnect");
    let (l, port) = Server::listen();
    let child = spawn_java(
        &dir,
        &format!("cpu=samples,format=b,net=127.0.0.1:{port}"),
        "CpuSplit",
        &["2"],
    );
    let s = Server::accept(&l);
    s.wait_for("some records", |r| r.len() > 3);
    s.stream.shutdown(std::net::Shutdown::Both).unwrap();
    drop(s);
    let (code, out, err) = finish(child);
    assert_eq!(code, 0, "JVM must finish normally: {err}");
    assert!(out.contains("rounds="), "program ran to its end: {out}");
}

#[test]
fn garbage_commands_are_rejected_without_effect() {
    let dir = common::scratch("net_garbage");
    let (l, port) = Server::listen();
    let child = spawn_java(
        &dir,
        &format!("cpu=samples,format=b,net=127.0.0.1:{port},errorexit=y"),
        "CpuSplit",
        &["2"],
    );
    let mut s = Server::accept(&l);
    s.wait_for("header", |r| !r.is_empty());
    s.send(Command::DumpTraces);
    s.stream
        .write_all(b"GARBAGE\x00\x01\x02 not a command")
        .unwrap();
    let (code, out, err) = finish(child);
    assert_eq!(code, 0, "even with errorexit=y: {err}");
    assert!(out.contains("rounds="), "program ran to its end: {out}");
    assert!(
        err.contains("failed to recognize cmd 71 at offset 9"),
        "{err}"
    );
    s.wait_closed();
    let recs = s.records();
    assert!(
        traces(&recs).contains_key(&300_000),
        "the command before the garbage was obeyed"
    );
    assert_eq!(
        cpu_sections(&recs).len(),
        1,
        "output continued to the exit dump"
    );
    assert!(s.count(|b| matches!(b, RecordBody::EndThread { .. })) >= 1);
}

#[test]
fn half_closed_peer_is_end_of_commands_and_text_output_keeps_flowing() {
    let dir = common::scratch("net_halfclose");
    let (l, port) = Server::listen();
    let child = spawn_java(
        &dir,
        &format!("cpu=samples,net=127.0.0.1:{port},verbose=y"),
        "CpuSplit",
        &["2"],
    );
    let mut s = Server::accept(&l);
    std::thread::sleep(Duration::from_millis(500));
    s.send(cpu(0.0));
    s.stream.shutdown(std::net::Shutdown::Write).unwrap();
    let (code, _out, err) = finish(child);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("front-end closed the command stream"), "{err}");
    s.wait_closed();
    let text = String::from_utf8(s.bytes.lock().unwrap().clone()).unwrap();
    let rep = common::ascii::parse(&text);
    assert_eq!(rep.cpu.len(), 2, "command reply and exit dump");
    assert!(rep.cpu.iter().all(|c| c.title == "CPU SAMPLES"));
}

#[test]
fn hprof_rs_listen_records_summarises_and_sends_a_script() {
    let dir = common::scratch("net_listen_tool");
    let rec = dir.join("rec.hprof");
    let listen = common::start_listen(
        &rec,
        &[
            "--send",
            "sleep 700",
            "--send",
            "cpu 0",
            "--send",
            "traces",
            "--send",
            "exit",
        ],
    );
    let first = &listen.first;
    assert!(first.starts_with("listening on 127.0.0.1:"), "{first}");
    let child = spawn_java(
        &dir,
        &format!("cpu=samples,format=b,net=127.0.0.1:{}", listen.port),
        "CpuSplit",
        &["20"],
    );
    let (code, out, jerr) = finish(child);
    assert_eq!(code, 0, "{jerr}");
    assert!(!out.contains("rounds="), "stopped by the EXIT command");
    let lout = listen.child.wait_with_output().unwrap();
    assert!(lout.status.success());
    let summary = common::stdout(&lout);
    assert!(
        summary.starts_with("binary: JAVA PROFILE 1.0.2 (identifier size 4)\n"),
        "{summary}"
    );
    assert_eq!(
        summary.matches("  CPU SAMPLES  total=").count(),
        2,
        "command reply + exit dump: {summary}"
    );
    assert!(summary.contains("  CONTROL SETTINGS  flags=0x2 depth=4\n"));
    let last = summary.lines().last().unwrap();
    let bytes = std::fs::metadata(&rec).unwrap().len();
    let records = hprof_core::reader::read_all(&rec).unwrap().records.len();
    assert_eq!(
        last,
        format!(
            "stream ended: {bytes} bytes, {records} records, recorded in {}",
            rec.display()
        )
    );
    // One summary line per record (plus the header and the final line).
    assert_eq!(summary.lines().count(), records + 2);

    // The recording feeds the other subcommands.
    let flame = Proc::new(env!("HPROF_RS_TOOL"))
        .arg("flame")
        .arg(&rec)
        .output()
        .unwrap();
    let stacks = common::stdout(&flame);
    assert!(
        stacks
            .lines()
            .any(|l| l.starts_with("CpuSplit.main;CpuSplit.work60 ")),
        "{stacks}"
    );
    let print = Proc::new(env!("HPROF_RS_TOOL"))
        .arg("print")
        .arg(&rec)
        .output()
        .unwrap();
    let text = common::stdout(&print);
    assert_eq!(
        text.matches("CPU SAMPLES BEGIN (total = ").count(),
        2,
        "{text}"
    );
    assert!(text.contains("TRACE 300000:\n\t<empty>\n"));
}

/// DUMP HEAP over the socket, by the VM's dumper (heap=dump's default)
/// and by the walk: the dump arrives whole (every sub-record parses, every
/// instance's class has its CLASS DUMP and LOAD CLASS, the fixture's
/// objects are all there), and the agent says which dumper made it.
#[test]
fn dump_heap_command_streams_a_heap_dump() {
    for (extra, vm) in [("", true), (",dumper=jvmti", false)] {
        let dir = common::scratch("net_heap");
        let (l, port) = Server::listen();
        let marker = dir.join("marker");
        let mut child = spawn_java(
            &dir,
            &format!("heap=dump,format=b,doe=n,logflags=1,net=127.0.0.1:{port}{extra}"),
            "HeapGraph",
            &[marker.to_str().unwrap(), "60"],
        );
        let mut s = Server::accept(&l);
        s.wait_for("header", |r| {
            r.iter()
                .any(|r| matches!(r.body, RecordBody::ControlSettings(_)))
        });
        // The graph is complete once the fixture says "ready" (asking
        // before that dumped part of it now and then).
        let mut ready = [0u8; 6];
        child
            .stdout
            .as_mut()
            .unwrap()
            .read_exact(&mut ready)
            .unwrap();
        assert_eq!(&ready, b"ready\n");
        s.send(Command::DumpHeap);
        s.wait_for("HEAP DUMP END", |r| {
            r.iter().any(|r| matches!(r.body, RecordBody::HeapDumpEnd))
        });
        std::fs::write(&marker, b"").unwrap();
        let (code, _, err) = finish(child);
        assert_eq!(code, 0, "{err}");
        s.wait_closed();
        let bytes = s.bytes.lock().unwrap().clone();
        let p = hprof_core::reader::collect(HprofReader::new(&bytes[..]).unwrap())
            .unwrap_or_else(|e| panic!("{extra}: the stream parses whole: {e}"));
        // doe=n: the command's dump is the only one.
        assert_eq!(p.heap_dumps.len(), 1, "{extra}");
        let d = &p.heap_dumps[0];
        assert!(d.ended && d.segmented, "{extra}");
        for i in &d.instances {
            assert!(
                d.class_dump(i.class_id).is_some(),
                "{extra}: CLASS DUMP 0x{:x}",
                i.class_id
            );
            assert!(
                p.class_name(i.class_id).is_some(),
                "{extra}: LOAD CLASS 0x{:x}",
                i.class_id
            );
        }
        let named = |n: &str| {
            d.instances
                .iter()
                .filter(|i| p.class_name(i.class_id) == Some(n))
                .count()
        };
        assert_eq!(named("HeapGraph$Node"), 1000, "{extra}");
        assert_eq!(named("HeapGraph$Leaf"), 777, "{extra}");
        // The first VM dump keeps the VM's addresses (its heap records
        // went to the socket as the VM wrote them, by sendfile), in 8-byte
        // IDs; the walk's objects are the agent's handles, in 4-byte IDs
        // (the original's default, kept with dumper=jvmti).
        assert_eq!(p.header.id_size, if vm { 8 } else { 4 }, "{extra}");
        for i in &d.instances {
            let id = i.object_id;
            assert!(
                id & hprof_core::vocab::id_space::OURS == 0,
                "{extra}: 0x{id:x}"
            );
            assert!(vm || id < 1 << 32, "{extra}: 0x{id:x}");
        }
        if vm {
            assert!(
                err.contains("heap records copied as they are"),
                "{extra}: {err}"
            );
        }
        // logflags=1 logs the phases of a dump by the VM's dumper.
        assert_eq!(
            err.contains("heap dump phases (VM dumper)"),
            vm,
            "{extra}: {err}"
        );
    }
}

/// heap=sites over the socket: HEAP SUMMARY and ALLOC SITES answer with the
/// live counters (after a forced GC for flag 0x4), CONTROL "clear sites"
/// zeroes them and an incremental request lists only sites changed since.
#[test]
fn alloc_sites_commands_report_clear_and_list_changes() {
    let dir = common::scratch("net_sites");
    let marker = dir.join("go");
    let (l, port) = Server::listen();
    let mut child = spawn_java(
        &dir,
        &format!("heap=sites,format=b,doe=n,net=127.0.0.1:{port}"),
        "AllocSites",
        &[marker.to_str().unwrap()],
    );
    let mut s = Server::accept(&l);
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "phase1");

    let kept = |recs: &[Record], site: &hprof_core::reader::AllocSite| {
        recs.iter().any(
            |r| matches!(&r.body, RecordBody::LoadClass(c) if c.class_serial == site.class_serial),
        ) && site.instances_allocated == 1000
            && site.bytes_allocated == 24_000
    };
    s.send(Command::HeapSummary);
    let recs = s.wait_for("HEAP SUMMARY", |r| {
        r.iter()
            .any(|r| matches!(r.body, RecordBody::HeapSummary(_)))
    });
    let Some(RecordBody::HeapSummary(h)) = recs
        .iter()
        .map(|r| &r.body)
        .find(|b| matches!(b, RecordBody::HeapSummary(_)))
    else {
        unreachable!()
    };
    assert!(
        h.total_instances_allocated >= 23_593,
        "every fixture allocation counted: {h:?}"
    );

    // 0x8 ("estimated from samples") from the peer must not label this
    // exact run.
    s.send(Command::AllocSites {
        flags: 0x4 | 0x8,
        cutoff: 0.0,
    });
    let recs = s.wait_for("ALLOC SITES", |r| {
        r.iter()
            .any(|r| matches!(r.body, RecordBody::AllocSites(_)))
    });
    let sites: Vec<_> = recs
        .iter()
        .filter_map(|r| {
            if let RecordBody::AllocSites(a) = &r.body {
                Some(a.clone())
            } else {
                None
            }
        })
        .collect();
    assert_eq!(
        sites[0].flags, 0x4,
        "the request's flags are echoed, but not its 0x8: the run is exact"
    );
    let k: Vec<_> = sites[0].sites.iter().filter(|x| kept(&recs, x)).collect();
    assert_eq!(k.len(), 1, "the Kept site (1000 x 24 bytes)");
    assert_eq!((k[0].live_instances, k[0].live_bytes), (1000, 24_000));

    s.send(Command::Control(Control::ClearAllocSites));
    s.send(Command::AllocSites {
        flags: 0x1,
        cutoff: 0.0,
    });
    let recs = s.wait_for("second ALLOC SITES", |r| {
        r.iter()
            .filter(|r| matches!(r.body, RecordBody::AllocSites(_)))
            .count()
            == 2
    });
    let second = recs
        .iter()
        .filter_map(|r| {
            if let RecordBody::AllocSites(a) = &r.body {
                Some(a)
            } else {
                None
            }
        })
        .nth(1)
        .unwrap();
    assert_eq!(second.flags, 0x1);
    assert!(
        second.total_instances_allocated < 20_000,
        "cleared: {second:?}"
    );
    assert!(
        !second
            .sites
            .iter()
            .any(|x| x.class_serial == k[0].class_serial && x.trace_serial == k[0].trace_serial),
        "unchanged site not listed"
    );

    std::fs::write(&marker, b"").unwrap();
    let (code, _, err) = finish(child);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("ALLOC SITES command ignored"), "{err}");
}

/// Commands the front-end sent that VM death leaves unexecuted are named on
/// stderr instead of vanishing: 200 FORCE GC commands take far longer than
/// the program needs to exit once its marker appears.
#[test]
fn commands_left_at_vm_death_are_reported() {
    let dir = common::scratch("net_unexecuted");
    let marker = dir.join("stop");
    let (l, port) = Server::listen();
    let child = spawn_java(
        &dir,
        &format!("cpu=samples,format=b,net=127.0.0.1:{port}"),
        "WaitForSignal",
        &[marker.to_str().unwrap(), "60"],
    );
    let mut s = Server::accept(&l);
    s.wait_for("the header", |r| !r.is_empty());
    for _ in 0..200 {
        s.send(Command::ForceGc);
    }
    std::fs::write(&marker, b"").unwrap();
    let (code, out, err) = finish(child);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("done"), "{out}");
    assert!(
        err.contains("the VM is exiting:") && err.contains("not executed"),
        "no word about the commands left:\n{err}"
    );
}

/// The socket's CPU SAMPLES command follows the same rule as the exit
/// dump: only CPU is charged, so threads blocked in native socket calls,
/// parked, waiting or sleeping get nothing, and with thread=y the worker's
/// traces carry the worker's thread.
#[test]
fn cpu_samples_command_charges_only_cpu_per_thread() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("net_oncpu");
    let (l, port) = Server::listen();
    let child = spawn_java(
        &dir,
        &format!("cpu=samples,interval=1,thread=y,format=b,net=127.0.0.1:{port}"),
        "OnCpuAmongBlocked",
        &["3"],
    );
    let mut s = Server::accept(&l);
    s.wait_for("CONTROL SETTINGS", |r| {
        r.iter()
            .any(|r| matches!(r.body, RecordBody::ControlSettings(_)))
    });
    std::thread::sleep(Duration::from_millis(2000));
    s.send(cpu(0.0));
    let recs = s.wait_for("CPU SAMPLES", |r| cpu_sections(r).len() == 1);
    let (code, _, err) = finish(child);
    assert_eq!(code, 0, "{err}");
    let c = &cpu_sections(&recs)[0];
    let names: std::collections::HashMap<u64, String> = recs
        .iter()
        .filter_map(|r| match &r.body {
            RecordBody::Utf8 { id, text } => Some((*id, text.clone())),
            _ => None,
        })
        .collect();
    let method_of_frame: std::collections::HashMap<u64, String> = recs
        .iter()
        .filter_map(|r| match &r.body {
            RecordBody::Frame(f) => Some((f.id, names[&f.method_name_id].clone())),
            _ => None,
        })
        .collect();
    let thread_names: std::collections::HashMap<u32, &str> = recs
        .iter()
        .filter_map(|r| match &r.body {
            RecordBody::StartThread(t) => Some((t.thread_serial, names[&t.name_id].as_str())),
            _ => None,
        })
        .collect();
    let worker = thread_names
        .iter()
        .find_map(|(&serial, &name)| (name == "worker").then_some(serial))
        .expect("worker's THREAD START");
    let t = traces(&recs);
    let (mut in_work, mut in_idle) = (0u64, 0u64);
    for e in &c.entries {
        let tr = &t[&e.trace_serial];
        let top = &method_of_frame[&tr.frame_ids[0]];
        if top.starts_with("work") {
            assert_eq!(tr.thread_serial, worker, "work traces are the worker's");
            in_work += u64::from(e.count);
        }
        let name = thread_names.get(&tr.thread_serial).copied().unwrap_or("");
        if ["accept-", "read-", "park-", "wait-", "sleep-"]
            .iter()
            .any(|p| name.starts_with(p))
        {
            in_idle += u64::from(e.count);
        }
    }
    eprintln!(
        "CPU SAMPLES command: {in_work} of {} in the worker's methods, {in_idle} in blocked threads",
        c.total
    );
    assert!(c.total >= 300, "{c:?}");
    // The rest is the main thread setting up the sockets and threads, real
    // CPU whose share grows with a slow start (JDK 11 on a loaded machine:
    // 5.3 % of 2003): the worker leads, the blocked threads get nothing.
    assert!(
        in_work as f64 >= 0.5 * f64::from(c.total),
        "{in_work} of {}",
        c.total
    );
    assert!(
        (in_idle as f64) < 0.01 * f64::from(c.total),
        "{in_idle} of {} in blocked, parked, waiting or sleeping threads",
        c.total
    );
}

/// With `token=` (or `tokenfile=`) the agent proves itself to the
/// front-end it connects to: the secret and a newline come before the
/// header, and nothing else changes. A front-end that refuses it with a
/// `HPROF-RS REFUSED:` line gets that reason on the program's stderr, and
/// the program runs to its end.
#[test]
fn net_with_a_token_sends_it_first_and_a_refusal_is_said() {
    let dir = common::scratch("net_token");
    std::fs::write(dir.join("agent.token"), "f00d\n").unwrap();
    for opts in ["token=f00d", "tokenfile=agent.token"] {
        let (l, port) = Server::listen();
        let child = spawn_java(
            &dir,
            &format!("cpu=samples,format=b,{opts},net=127.0.0.1:{port}"),
            "CpuSplit",
            &["1"],
        );
        let s = Server::accept(&l);
        let (code, out, err) = finish(child);
        assert_eq!(code, 0, "{opts}: {err}");
        assert!(out.contains("rounds="), "{out}");
        s.wait_closed();
        let bytes = s.bytes.lock().unwrap().clone();
        assert!(bytes.starts_with(b"f00d\nJAVA PROFILE 1.0."), "{opts}");
        let mut r = HprofReader::new(std::io::Cursor::new(bytes[5..].to_vec())).unwrap();
        let mut cpu = 0;
        while let Some(rec) = r.next_record().unwrap() {
            cpu += usize::from(matches!(rec.body, RecordBody::CpuSamples(_)));
        }
        assert_eq!(cpu, 1, "{opts}: the whole stream after the token");
    }

    let (l, port) = Server::listen();
    let child = spawn_java(
        &dir,
        &format!("cpu=samples,format=b,token=wrong,net=127.0.0.1:{port}"),
        "CpuSplit",
        &["1"],
    );
    let mut s = Server::accept(&l);
    s.stream
        .write_all(b"HPROF-RS REFUSED: wrong token\n")
        .unwrap();
    s.stream.shutdown(std::net::Shutdown::Both).unwrap();
    let (code, out, err) = finish(child);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("rounds="), "{out}");
    assert!(
        err.contains("HPROF ERROR: the front-end refused this agent: wrong token"),
        "{err}"
    );
    assert!(!err.contains("failed to recognize cmd"), "{err}");

    // A token file that cannot be read refuses the start, before connecting.
    let (l, port) = Server::listen();
    let child = spawn_java(
        &dir,
        &format!("cpu=samples,tokenfile=missing.token,net=127.0.0.1:{port}"),
        "CpuSplit",
        &["1"],
    );
    let (code, _out, err) = finish(child);
    assert_ne!(code, 0);
    assert!(
        err.contains("cannot read the token file missing.token"),
        "{err}"
    );
    l.set_nonblocking(true).unwrap();
    assert!(l.accept().is_err(), "no connection was made");
}
