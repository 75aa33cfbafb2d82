//! `hprof-rs ui` under attack (issue 27, items 14, 16, 20 and 24): each of
//! its ports as a peer without the token, an impostor that races a
//! Launch's and an Attach's agent to their ports (run as a second local
//! user, as the attack needs: a user who can see the machine's sockets
//! and nothing of ours), floods of idle or short connections, hostile
//! streams against the UI's bounds, the source view raced out of its
//! directory, and the addresses it binds.
//!
//! The second user is `nobody` (uid 65534) through `setpriv`, which needs
//! root: without it those attacks run as this user (they do not depend on
//! the user, only the realism does) or, for the impostor, the test says
//! SKIPPED. The second user's process is a copy of this test binary
//! running [`attacker_process`].

use crate::common;

use crate::ui_support;

use serde_json::Value;
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use ui_support::{request, start_ui_with, HprofWriter, UiProc};

const MINUTE: Duration = Duration::from_secs(60);
/// Set in the second user's process: the attack to run and its arguments,
/// separated by spaces.
const ATTACK: &str = "HPROF_RS_UI_ATTACK";

// ---------------------------------------------------------------- the attacker

/// A stream an impostor sends: a thread named `impostor` and CPU samples
/// all in `Impostor.fake`.
fn impostor_stream() -> Vec<u8> {
    let mut w = HprofWriter::new();
    w.utf8(1, "Impostor");
    w.utf8(2, "fake");
    w.utf8(3, "Impostor.java");
    w.utf8(4, "impostor");
    w.load_class(1, 100, 1);
    w.frame(1, 2, 3, 1, 7);
    w.trace(1, 0, &[1]);
    let mut start = Vec::new();
    for v in [1u32, 0x5000, 1, 4, 4, 0] {
        start.extend_from_slice(&v.to_be_bytes());
    }
    w.record(0x0A, &start);
    w.cpu_samples(&[(1000, 1)]);
    w.out
}

/// Listening TCP ports on 127.0.0.1, from /proc/net/tcp (readable by every
/// user: what a local attacker polls).
fn loopback_listeners() -> BTreeSet<u16> {
    let text = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (addr, port) = f.get(1)?.split_once(':')?;
            (addr == "0100007F" && f.get(3) == Some(&"0A"))
                .then(|| u16::from_str_radix(port, 16).ok())
                .flatten()
        })
        .collect()
}

/// What the port answered the impostor: `refused <why>` or `accepted`
/// (it kept reading the stream and sent nothing back, or commands).
fn try_port(port: u16, send: &[u8]) -> String {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return "no connection".into();
    };
    let _ = s.write_all(send);
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < until {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(_) => break,
        }
        if got.contains(&b'\n') {
            break;
        }
    }
    let text = String::from_utf8_lossy(&got);
    match text.strip_prefix("HPROF-RS REFUSED: ") {
        Some(why) => format!("refused {}", why.trim_end()),
        None => format!("accepted ({} bytes back)", got.len()),
    }
}

/// The second user's process. Without [`ATTACK`] in the environment (an
/// ordinary test run) it does nothing.
#[test]
fn attacker_process() {
    let Ok(spec) = std::env::var(ATTACK) else {
        return;
    };
    let args: Vec<&str> = spec.split(' ').collect();
    match args[0] {
        // agent ADDR: an agent stream without a token, then a wrong one,
        // then silence.
        "agent" => {
            let port: u16 = args[1].rsplit(':').next().unwrap().parse().unwrap();
            println!("ATTACK: no token: {}", try_port(port, &impostor_stream()));
            let mut wrong = b"0123456789abcdef0123456789abcdef\n".to_vec();
            wrong.extend_from_slice(&impostor_stream());
            println!("ATTACK: wrong token: {}", try_port(port, &wrong));
            println!("ATTACK: silent: {}", try_port(port, b""));
        }
        // impostor SECONDS PORTS KNOWN_PORTS...: poll the listening
        // sockets and send the impostor's stream, after a guessed token
        // line (as an agent with a token would), to every new one, first,
        // until PORTS were tried or SECONDS passed.
        "impostor" => {
            let secs: u64 = args[1].parse().unwrap();
            let ports: usize = args[2].parse().unwrap();
            let mut known: BTreeSet<u16> = args[3..].iter().map(|p| p.parse().unwrap()).collect();
            known.extend(loopback_listeners());
            println!("ATTACK: polling");
            let until = Instant::now() + Duration::from_secs(secs);
            let mut tried = 0;
            while Instant::now() < until && tried < ports {
                for port in loopback_listeners() {
                    if known.insert(port) {
                        let mut guessed = b"0123456789abcdef0123456789abcdef\n".to_vec();
                        guessed.extend_from_slice(&impostor_stream());
                        println!("ATTACK: port {port}: {}", try_port(port, &guessed));
                        tried += 1;
                    }
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            println!("ATTACK: done");
        }
        other => panic!("unknown attack {other}"),
    }
}

/// The second user's process, killed (and its copy removed) when dropped.
struct Attacker {
    child: Child,
    out: BufReader<std::process::ChildStdout>,
    copy: Option<PathBuf>,
    as_nobody: bool,
}

impl Attacker {
    /// Starts [`attacker_process`] with `attack`, as user nobody when this
    /// runs as root with setpriv, else (`as_other` false) as this user;
    /// `None` when `as_other` is required and impossible.
    fn start(attack: &str, as_other: bool) -> Option<Attacker> {
        let root = hprof_cli::attach::procfs::status(std::process::id())
            .map(|s| s.euid == 0)
            .unwrap_or(false);
        let setpriv = Path::new("/usr/bin/setpriv");
        let other = root && setpriv.exists();
        if as_other && !other {
            return None;
        }
        let exe = std::env::current_exe().unwrap();
        let mut copy = None;
        let mut cmd = if other {
            // A copy where nobody can run it: the build directory may be
            // private to us.
            let dir = std::env::temp_dir().join(format!(
                "hprof-rs-attacker-{}-{}",
                std::process::id(),
                attack.split(' ').next().unwrap()
            ));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir(&dir).unwrap();
            let bin = dir.join("attacker");
            std::fs::copy(&exe, &bin).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
            std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
            let mut c = Command::new(setpriv);
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(&bin)
                .current_dir(&dir);
            copy = Some(dir);
            c
        } else {
            Command::new(&exe)
        };
        cmd.args([
            "--exact",
            "ui_security::attacker_process",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ATTACK, attack)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
        let mut child = cmd.spawn().expect("start the attacker");
        let out = BufReader::new(child.stdout.take().unwrap());
        Some(Attacker {
            child,
            out,
            copy,
            as_nobody: other,
        })
    }

    /// Its next line of findings (`ATTACK: ` lines; the test harness's
    /// own lines are skipped), `None` at its end.
    fn line(&mut self) -> Option<String> {
        let mut l = String::new();
        loop {
            l.clear();
            if self.out.read_line(&mut l).ok()? == 0 {
                return None;
            }
            if let Some(at) = l.find("ATTACK: ") {
                return Some(l[at + 8..].trim_end().to_string());
            }
        }
    }

    /// The rest of its findings, once it ended well.
    fn finish(mut self) -> Vec<String> {
        let mut v = Vec::new();
        while let Some(l) = self.line() {
            v.push(l);
        }
        assert!(self.child.wait().unwrap().success(), "the attacker failed");
        v
    }
}

impl Drop for Attacker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(d) = &self.copy {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// One test of this file at a time: the impostor takes the first new
/// listening port, which must be the one its test opens.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE.lock().unwrap_or_else(|p| p.into_inner())
}

fn sessions(ui: &UiProc) -> Vec<Value> {
    ui.get_json("/api/sessions", "")["sessions"]
        .as_array()
        .unwrap()
        .clone()
}

fn agent_arg() -> String {
    format!("--agent={}", common::agent_path().display())
}

// ------------------------------------------------------------------ item 14

/// The agents port takes only agents that send the printed token first:
/// a stream without it, with a wrong one, or nothing at all gets a
/// `HPROF-RS REFUSED` line and no session; a JVM started with the printed
/// options (its `tokenfile=`) is a session.
#[test]
fn the_agents_port_takes_only_agents_with_the_token() {
    let _one = one_at_a_time();
    let _only_jvm = common::exclusive();
    let ui = start_ui_with(&[], &[]);
    assert!(
        ui.agent_opts.contains(",tokenfile="),
        "the printed options carry the token file: {}",
        ui.agent_opts
    );
    let file = ui.agent_option("tokenfile").unwrap();
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(&file).unwrap();
    assert_eq!(meta.mode() & 0o777, 0o600, "{file}");
    let dir = std::fs::metadata(Path::new(&file).parent().unwrap()).unwrap();
    assert_eq!(dir.mode() & 0o777, 0o700);

    let a = Attacker::start(&format!("agent {}", ui.agents_addr()), false).unwrap();
    let who = if a.as_nobody { "nobody" } else { "this user" };
    let lines = a.finish();
    eprintln!("attacker (as {who}): {lines:?}");
    assert_eq!(
        lines,
        [
            "no token: refused no token: start the agent with the options hprof-rs ui printed (tokenfile=)",
            "wrong token: refused wrong token",
            "silent: accepted (0 bytes back)",
        ],
        "the silent one is cut after 5 s, past the attacker's patience"
    );
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        sessions(&ui),
        Vec::<Value>::new(),
        "no session for any of them"
    );

    // The printed options work.
    run_cpu_split_with_the_printed_options(&ui, "ui_sec_token");
    let v = ui.wait_for("the JVM's session", MINUTE, |v| {
        v["sessions"][0]["state"] == "ended" && v["sessions"][0]["cpuSections"] == 1
    });
    let id = v["sessions"][0]["id"].as_u64().unwrap();
    let cpu = ui.get_json(&format!("/api/session/{id}/cpu"), "limit=1");
    assert_eq!(cpu["rows"][0]["method"], "CpuSplit.work60", "{cpu}");
}

/// A memory-capped UI (1 GiB of address space) given hostile streams by
/// an agent with the token: 2000 threads named by one 1 MiB string (a
/// 13 KB gzip), and one 1.5 GiB record (a 1.5 MB gzip). Names are cut,
/// the record is refused by its length, the UI stays small and answers.
#[test]
fn hostile_streams_stay_within_the_bounds() {
    let _one = one_at_a_time();
    let ui = ui_support::start_ui_limited(1 << 30);
    // 2000 threads, one 1 MiB name.
    let mut w = HprofWriter::new();
    w.utf8(1, &"n".repeat(1 << 20));
    w.utf8(2, "main");
    for t in 0..2000u32 {
        let mut b = Vec::new();
        for v in [t + 1, 0x5000_0000 + t, 0, 1, 2, 0] {
            b.extend_from_slice(&v.to_be_bytes());
        }
        w.record(0x0A, &b);
    }
    let names = gzip(&w.out);
    assert!(names.len() < 16 << 10, "{} bytes", names.len());
    ui.agent_connection().write_all(&names).unwrap();
    let v = ui.wait_for("the names stream to end", MINUTE, |v| {
        v["sessions"][0]["state"] != "live" && !v["sessions"][0]["state"].is_null()
    });
    let id = v["sessions"][0]["id"].as_u64().unwrap();
    assert_eq!(v["sessions"][0]["state"], "ended", "{v}");
    let threads = ui.get_json(&format!("/api/session/{id}/threads"), "");
    let list = threads["threads"].as_array().unwrap();
    assert_eq!(list.len(), 2000);
    let name = list[0]["name"].as_str().unwrap();
    assert!(
        name.len() <= 4100 && name.starts_with("nnnn") && name.ends_with('…'),
        "a name is cut at 4 KiB: {} bytes",
        name.len()
    );

    // One UTF8 record of 1.5 GiB.
    let mut big = HprofWriter::new().out;
    let len: u32 = 3 << 29;
    big.push(0x01);
    big.extend_from_slice(&0u32.to_be_bytes());
    big.extend_from_slice(&len.to_be_bytes());
    big.extend_from_slice(&7u32.to_be_bytes());
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&big).unwrap();
    let zeros = vec![b'a'; 1 << 20];
    for _ in 0..(len as usize - 4) >> 20 {
        gz.write_all(&zeros).unwrap();
    }
    gz.write_all(&vec![b'a'; (len as usize - 4) & ((1 << 20) - 1)])
        .unwrap();
    let huge = gz.finish().unwrap();
    assert!(huge.len() < 2 << 20, "{} bytes", huge.len());
    ui.agent_connection().write_all(&huge).unwrap();
    let v = ui.wait_for("the huge record's session to end", MINUTE, |v| {
        v["sessions"][1]["state"] == "ended" || v["sessions"][1]["state"] == "error"
    });
    eprintln!("{}", v["sessions"][1]);
    assert_eq!(v["sessions"][1]["state"], "ended", "{v}");
    let (st, _) = request(
        ui.port,
        "GET",
        &format!("/api/sessions?token={}", ui.token),
        &[],
        "",
    );
    assert_eq!(st, 200, "the UI answers");
    let peak = peak_rss_mib(ui.pid());
    eprintln!("UI peak RSS: {peak} MiB");
    assert!(peak < 200, "peak RSS {peak} MiB");
}

fn gzip(b: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(b).unwrap();
    gz.finish().unwrap()
}

/// VmHWM of a process, in MiB.
fn peak_rss_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    kb / 1024
}

// ------------------------------------------------------------------ item 16

/// Another local user polls the machine's listening sockets and connects
/// first to every new one with a stream of its own. The port of a Launch
/// and the port of an Attach take only the agent that sends the session's
/// secret: the impostor is refused, the session is the program's, and the
/// page's commands reach the program.
#[test]
fn an_impostor_cannot_take_a_launch_or_attach_port() {
    let _one = one_at_a_time();
    let _only_jvm = common::exclusive();
    let ui = start_ui_with(&[&agent_arg()], &[]);
    let agents_port: u16 = ui
        .agents_addr()
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let spawn = |secs: u32| {
        let attack = format!("impostor {secs} 1 {} {agents_port}", ui.port);
        let mut a = Attacker::start(&attack, true)?;
        assert_eq!(a.line().as_deref(), Some("polling"));
        Some(a)
    };
    let Some(imp) = spawn(60) else {
        eprintln!("SKIPPED: the impostor runs as another user: needs root and setpriv");
        return;
    };

    // Launch. The program is a `java` that waits a second before it
    // starts the JVM: the impostor finds the port first every time, on a
    // loaded machine too (an agent connects some milliseconds after the
    // JVM starts, which a polling impostor may or may not beat).
    let dir = common::scratch("ui_sec_launch");
    let slow_java = dir.join("java");
    std::fs::write(
        &slow_java,
        format!(
            "#!/bin/sh\nsleep 1\nexec '{}' \"$@\"\n",
            common::java().display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &slow_java,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let body = serde_json::json!({
        "command": format!("{} -cp {} CpuSplit 2", slow_java.display(), common::fixture_classes().display()),
        "options": "cpu=samples,interval=2",
        "cwd": dir.to_str().unwrap(),
    });
    let r = ui.post("/api/launch", "", body.to_string().as_bytes());
    assert_eq!(r.status, 200, "{}", r.text());
    let id = r.json()["session"].as_u64().unwrap();
    let console = ui.wait_console(id, "agent connected", MINUTE);
    assert!(
        console.contains("refused a connection from"),
        "the impostor came first and was refused:\n{console}"
    );
    let (st, answer) = ui.command(id, "cpu 0");
    assert_eq!(st, 200, "{answer}");
    ui.wait_for("the program's end", MINUTE, |v| {
        v["sessions"][0]["state"] == "ended"
    });
    let cpu = ui.get_json(&format!("/api/session/{id}/cpu"), "limit=100");
    let methods: Vec<&str> = cpu["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["method"].as_str().unwrap())
        .collect();
    assert_eq!(methods.first(), Some(&"CpuSplit.work60"), "{cpu}");
    assert!(
        !methods.iter().any(|m| m.contains("Impostor")),
        "{methods:?}"
    );
    let s = ui.session(id);
    assert_eq!(
        s["cpuSections"], 2,
        "the command's answer and the exit's: {s}"
    );
    let lines = finish_impostor(imp);
    assert!(
        lines.iter().any(|l| l.ends_with("refused wrong token")),
        "{lines:?}"
    );
    assert!(!lines.iter().any(|l| l.contains("accepted")), "{lines:?}");

    // Attach.
    let imp = spawn(60).unwrap();
    let mut java = Command::new(common::java())
        .current_dir(&dir)
        .arg("-cp")
        .arg(common::fixture_classes())
        .arg("AttachTarget")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = java.stdin.take().unwrap();
    let mut lines = BufReader::new(java.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "ready");
    let pid = java.id();
    // The JVM is stopped until the impostor has tried the port: it reaches
    // the port first every time (an attached agent connects some
    // milliseconds after the attach, which a polling impostor may or may
    // not beat on a loaded machine).
    // SAFETY: kill() with the pid of our own running child.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGSTOP) };
    let body = serde_json::json!({"pid": pid.to_string(), "options": "cpu=samples,interval=2"});
    let r = ui.post("/api/attach", "", body.to_string().as_bytes());
    assert_eq!(r.status, 200, "{}", r.text());
    let id = r.json()["session"].as_u64().unwrap();
    ui.wait_console(id, "refused a connection from", MINUTE);
    // SAFETY: as above.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGCONT) };
    let console = ui.wait_console(id, "agent connected", MINUTE);
    assert!(
        console.contains("this session's secret"),
        "the program's agent is the session's:\n{console}"
    );
    writeln!(stdin, "spin 1500").unwrap();
    stdin.flush().unwrap();
    assert_eq!(lines.next().unwrap().unwrap(), "spun");
    let (st, answer) = ui.command(id, "cpu 0");
    assert_eq!(st, 200, "{answer}");
    let v = ui.wait_for("the CPU section", MINUTE, |v| {
        v["sessions"][1]["cpuSections"] == 1
    });
    assert_eq!(v["sessions"][1]["state"], "live");
    let cpu = ui.get_json(&format!("/api/session/{id}/cpu"), "limit=100");
    assert_eq!(cpu["rows"][0]["method"], "AttachTarget.work60", "{cpu}");
    writeln!(stdin, "exit").unwrap();
    let _ = java.wait();
    let lines = finish_impostor(imp);
    assert!(
        lines.iter().any(|l| l.ends_with("refused wrong token")),
        "{lines:?}"
    );
    assert!(!lines.iter().any(|l| l.contains("accepted")), "{lines:?}");
}

fn finish_impostor(imp: Attacker) -> Vec<String> {
    let lines: Vec<String> = imp
        .finish()
        .into_iter()
        .filter(|l| l.starts_with("port "))
        .collect();
    eprintln!("impostor: {lines:?}");
    lines
}

// ------------------------------------------------------------------ item 20

/// Connections held open without a request (the page's port) or without
/// a token (the agents port), and connect/close floods, take nothing the
/// user needs: the page's requests are all answered, an upload still
/// makes a session, and a JVM started with the printed options is a
/// session with its samples.
#[test]
fn peers_without_the_token_cannot_exhaust_the_ui() {
    let _one = one_at_a_time();
    let _only_jvm = common::exclusive();
    let ui = start_ui_with(&[], &[]);
    // 100 idle page connections, some with half a head.
    let mut held = Vec::new();
    for i in 0..100 {
        let mut s = TcpStream::connect(("127.0.0.1", ui.port)).unwrap();
        if i % 2 == 0 {
            s.write_all(b"GET /api/sessions HTTP/1.1\r\n").unwrap();
        }
        held.push(s);
    }
    let start = Instant::now();
    let mut ok = 0;
    for _ in 0..44 {
        let (st, _) = request(
            ui.port,
            "GET",
            &format!("/api/sessions?token={}", ui.token),
            &[],
            "",
        );
        ok += usize::from(st == 200);
    }
    eprintln!(
        "44 requests past 100 held connections: {ok} answered in {:?}",
        start.elapsed()
    );
    assert_eq!(ok, 44);

    // 300 connect/close on the agents port, and 80 idle connections held.
    let agents = ui.agents_addr();
    for _ in 0..300 {
        drop(TcpStream::connect(&agents).unwrap());
    }
    for _ in 0..80 {
        held.push(TcpStream::connect(&agents).unwrap());
    }
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        sessions(&ui),
        Vec::<Value>::new(),
        "no session for any of them"
    );
    let up = ui.post(
        "/api/upload",
        "name=x.hprof",
        &ui_support::big_profile(10, 1, 5),
    );
    assert_eq!(up.status, 200, "{}", up.text());

    run_cpu_split_with_the_printed_options(&ui, "ui_sec_flood");
    let v = ui.wait_for("the JVM's session", MINUTE, |v| {
        v["sessions"][1]["state"] == "ended" && v["sessions"][1]["cpuSections"] == 1
    });
    assert_eq!(v["sessions"][1]["kind"], "listen", "{v}");
    drop(held);
}

// ------------------------------------------------------------------ item 24

/// The machine's own names as a Host header: its IP address and host name
/// are answered when the page is bound to all addresses; other names are
/// still refused (DNS rebinding). Binding the agents to all addresses
/// says so.
#[test]
fn binding_all_addresses_answers_the_machine_s_names_and_warns() {
    let _one = one_at_a_time();
    let mut child = Command::new(env!("HPROF_RS_TOOL"))
        .args(["ui", "--bind", "0.0.0.0:0", "--agents", "0.0.0.0:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut url = String::new();
    out.read_line(&mut url).unwrap();
    let mut opts = String::new();
    out.read_line(&mut opts).unwrap();
    // SAFETY: our own child, not waited for yet.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let _ = child.wait();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    eprintln!("{url}{opts}{err}");
    assert!(
        err.contains("warning: the page is reachable from other hosts"),
        "{err}"
    );
    assert!(err.contains("warning: the agents port"), "{err}");

    let mut child = Command::new(env!("HPROF_RS_TOOL"))
        .args(["ui", "--bind", "0.0.0.0:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut url = String::new();
    out.read_line(&mut url).unwrap();
    let rest = url.trim().split("http://").nth(1).unwrap();
    let (host, token) = rest.split_once("/?token=").unwrap();
    let port: u16 = host.rsplit(':').next().unwrap().parse().unwrap();
    let target = format!("/api/sessions?token={token}");
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string();
    let mut names = vec![format!("{hostname}:{port}"), format!("127.0.0.1:{port}")];
    if let Some(ip) = own_address() {
        names.push(format!("{ip}:{port}"));
    }
    for name in &names {
        let (st, body) = request(port, "GET", &target, &[("Host", name)], "");
        assert_eq!(st, 200, "Host: {name}: {body}");
    }
    for name in [
        format!("evil.example:{port}"),
        format!("{hostname}.evil.example:{port}"),
    ] {
        let (st, _) = request(port, "GET", &target, &[("Host", &name)], "");
        assert_eq!(st, 403, "Host: {name}");
    }
    // SAFETY: our own child, not waited for yet.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let _ = child.wait();
}

/// This machine's address on its default route, if it has one (a UDP
/// socket "connected" to a public address sends nothing).
fn own_address() -> Option<std::net::IpAddr> {
    let s = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    s.connect("192.0.2.1:9").ok()?;
    let ip = s.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

/// The source view cannot be raced out of its directory: while requests
/// run, a thread swaps a package directory for a symbolic link to a
/// directory outside; no answer ever holds the outside file. Files that
/// are not sources are not served at all.
#[test]
fn the_source_view_cannot_be_raced_out_of_its_directory() {
    let _one = one_at_a_time();
    let base = common::scratch("ui_sec_source");
    let root = base.join("root");
    let outside = base.join("outside/pkg");
    std::fs::create_dir_all(root.join("pkg")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(root.join("pkg/Src.java"), "package pkg; // inside\n").unwrap();
    std::fs::write(outside.join("Src.java"), "SECRET outside\n").unwrap();
    std::fs::write(root.join("pkg/notes.txt"), "not a source\n").unwrap();
    std::fs::write(root.join("pkg/id_rsa"), "not a source\n").unwrap();
    let ui = start_ui_with(&["--source", root.to_str().unwrap()], &[]);
    let q = "class=pkg.Src&file=Src.java";
    assert_eq!(ui.get("/api/source", q).status, 200);
    for file in ["notes.txt", "id_rsa", "Src.class"] {
        let a = ui.get("/api/source", &format!("class=pkg.Src&file={file}"));
        assert_eq!(a.status, 400, "{file}: {}", a.text());
    }

    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (stop, root, outside) = (stop.clone(), root.clone(), outside.clone());
        std::thread::spawn(move || {
            let (dir, aside) = (root.join("pkg"), root.join("pkg.real"));
            let mut swaps = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                std::fs::rename(&dir, &aside).unwrap();
                std::os::unix::fs::symlink(&outside, &dir).unwrap();
                std::fs::remove_file(&dir).unwrap();
                std::fs::rename(&aside, &dir).unwrap();
                swaps += 1;
            }
            swaps
        })
    };
    let leaks = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let served = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let until = Instant::now() + Duration::from_secs(20);
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (leaks, served, port, token) =
                (leaks.clone(), served.clone(), ui.port, ui.token.clone());
            std::thread::spawn(move || {
                let mut n = 0u64;
                while Instant::now() < until {
                    let (st, body) = request(
                        port,
                        "GET",
                        &format!("/api/source?token={token}&class=pkg.Src&file=Src.java"),
                        &[],
                        "",
                    );
                    if st == 200 && body.contains("SECRET") {
                        leaks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    if st == 200 {
                        served.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    n += 1;
                }
                n
            })
        })
        .collect();
    let requests: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    let leaks = leaks.load(std::sync::atomic::Ordering::Relaxed);
    eprintln!(
        "{requests} requests ({} served) during {swaps} swaps: {leaks} leaked the outside file",
        served.load(std::sync::atomic::Ordering::Relaxed)
    );
    assert!(requests > 1000, "{requests}");
    assert_eq!(leaks, 0);
}

/// Launch refuses every way of loading hprof itself, `-Xrunhprof` too.
#[test]
fn launch_refuses_another_hprof_agent() {
    let _one = one_at_a_time();
    let ui = start_ui_with(&[&agent_arg()], &[]);
    for arg in [
        "-Xrunhprof_rs:cpu=samples",
        "-Xrunhprof:cpu=samples",
        "-agentlib:hprof_rs=cpu=samples",
        "-agentpath:/x/libhprof_rs.so=cpu=samples",
    ] {
        let body = serde_json::json!({"command": format!("java {arg} -version"), "options": "cpu=samples"});
        let r = ui.post("/api/launch", "", body.to_string().as_bytes());
        assert_eq!(r.status, 400, "{arg}: {}", r.text());
        assert!(
            r.text().contains("the UI adds the agent itself"),
            "{arg}: {}",
            r.text()
        );
    }
    assert_eq!(sessions(&ui), Vec::<Value>::new());
}

/// A JVM started with the agent options the UI printed (its token file
/// included) runs CpuSplit for a second in scratch directory `name` and
/// ends cleanly.
fn run_cpu_split_with_the_printed_options(ui: &UiProc, name: &str) {
    let dir = common::scratch(name);
    let out = Command::new(common::java())
        .current_dir(&dir)
        .arg(format!(
            "-agentpath:{}=cpu=samples,interval=2,{}",
            common::agent_path().display(),
            ui.agent_opts
        ))
        .arg("-cp")
        .arg(common::fixture_classes())
        .args(["CpuSplit", "1"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
}
