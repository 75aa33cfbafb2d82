//! `hprof-rs attach` and `hprof-rs jvms` against real JVMs (docs/attach.md):
//! the listing names each fixture JVM with its command, Java version and
//! whether our agent is in it; attach reaches the JVM through HotSpot's
//! attach socket and prints its answer exactly; the JVM's own errors (a
//! library it cannot load, one that is no agent) come back as it wrote
//! them; dead processes, processes that are no JVM, JVMs that refuse
//! attach and processes of another user get one clear line, quickly and
//! without harm to the process; a JVM in pid and mount namespaces of its
//! own (a container) is reached through /proc. The real agent starts,
//! refuses a second load and stops on `stop` (its profiles are tested in
//! crates/hprof-e2e/tests/attach_agent.rs); a stand-in agent (crates/hprof-e2e/tests/fixtures/
//! attach_stub_agent.c) shows `--listen` recording what an attached agent
//! sends, byte for byte.
//!
//! The fixture is HoldObjects: it idles without using the CPU until its
//! standard input closes, then prints how many objects it held and ends.
//! Every target is killed when its test ends, whether it passed or not.

use crate::common;

use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::OnceLock;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const TOOL: &str = env!("HPROF_RS_TOOL");

/// The tool under test: `HPROF_TOOL` runs these tests against another
/// build (e.g. an older one, to see a test fail before its fix).
fn tool_path() -> String {
    std::env::var("HPROF_TOOL").unwrap_or_else(|_| TOOL.to_string())
}
/// Longest any run of the tool may take; a hang fails the test.
const TOOL_LIMIT: Duration = Duration::from_secs(60);
/// The agent's warning about exact allocation tracking.
const EXACT_SITES_COST: &str = "heap=sites without heapsample= tracks every allocation exactly: \
     code that allocates runs 5 to 50 times slower (55 times on Rhino), and each report forces a \
     full garbage collection; heapsample=524288 estimates the same sites at about the cost of no \
     agent";
/// What HoldObjects prints when its standard input closes.
const HELD: &str = "ready\n3790\n";

/// A HoldObjects JVM started for one test.
struct Target {
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    pid: u32,
    dir: PathBuf,
    out: Option<JoinHandle<String>>,
    err: Option<JoinHandle<String>>,
}

impl Target {
    /// Starts `java <jvm_args> HoldObjects` in a scratch directory and
    /// waits (at most a minute) for its "ready".
    fn start(name: &str, jvm_args: &[&str]) -> Target {
        let mut cmd = Command::new(common::java());
        cmd.args(jvm_args)
            .arg("-cp")
            .arg(common::fixture_classes())
            .arg("HoldObjects");
        Target::spawn(name, cmd)
    }

    /// `start` in a pid namespace of its own with a /tmp of its own, as in a
    /// container: the JVM is pid 1 there, and its /tmp is reachable only as
    /// /proc/PID/root/tmp. `self.pid` is its pid here.
    fn start_contained(name: &str) -> Target {
        let mut cmd = Command::new("unshare");
        cmd.args([
            "--pid",
            "--fork",
            "--kill-child",
            "--mount-proc",
            "sh",
            "-c",
        ])
        .arg("mount -t tmpfs tmpfs /tmp && exec \"$0\" \"$@\"")
        .arg(common::java())
        .arg("-cp")
        .arg(common::fixture_classes())
        .arg("HoldObjects");
        let mut t = Target::spawn(name, cmd);
        // The JVM is unshare's only child.
        let unshare = t.pid;
        let children =
            std::fs::read_to_string(format!("/proc/{unshare}/task/{unshare}/children")).unwrap();
        t.pid = children.trim().parse().unwrap();
        t
    }

    /// `start` as user `uid` (through setpriv), in a directory of that
    /// user's.
    fn start_as(name: &str, uid: u32) -> Target {
        let dir = common::scratch(name);
        std::os::unix::fs::chown(&dir, Some(uid), Some(uid)).unwrap();
        let mut cmd = Command::new("/usr/bin/setpriv");
        cmd.arg(format!("--reuid={uid}"))
            .arg(format!("--regid={uid}"))
            .arg("--clear-groups")
            .arg(common::java())
            .arg("-cp")
            .arg(common::fixture_classes())
            .arg("HoldObjects");
        Target::spawn_in(name, dir, cmd)
    }

    fn spawn(name: &str, cmd: Command) -> Target {
        Target::spawn_in(name, common::scratch(name), cmd)
    }

    fn spawn_in(name: &str, dir: PathBuf, mut cmd: Command) -> Target {
        let mut child = cmd
            .current_dir(&dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start java");
        let pid = child.id();
        let (ready_tx, ready_rx) = mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        let out = std::thread::spawn(move || {
            let mut all = String::new();
            let mut r = BufReader::new(stdout);
            let mut line = String::new();
            while r.read_line(&mut line).unwrap_or(0) > 0 {
                if line == "ready\n" {
                    let _ = ready_tx.send(());
                }
                all.push_str(&line);
                line.clear();
            }
            all
        });
        let mut stderr = child.stderr.take().unwrap();
        let err = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            s
        });
        let stdin = child.stdin.take();
        let mut t = Target {
            child: Some(child),
            stdin,
            pid,
            dir,
            out: Some(out),
            err: Some(err),
        };
        if ready_rx.recv_timeout(Duration::from_secs(60)).is_err() {
            let (st, out, err) = t.finish();
            panic!("{name}: the JVM did not get ready ({st}):\n{out}\n{err}");
        }
        t
    }

    fn pid(&self) -> String {
        self.pid.to_string()
    }

    fn alive(&mut self) -> bool {
        let child = self.child.as_mut().unwrap();
        child.try_wait().unwrap().is_none()
    }

    /// Closes the JVM's standard input, so it ends by itself; returns its
    /// exit status, stdout and stderr. Kills it after 30 s.
    fn finish(&mut self) -> (ExitStatus, String, String) {
        drop(self.stdin.take());
        let mut child = self.child.take().unwrap();
        let start = Instant::now();
        let status = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break st;
            }
            if start.elapsed() > Duration::from_secs(30) {
                break common::kill_and_reap(&mut child).unwrap();
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let out = self.out.take().unwrap().join().unwrap_or_default();
        let err = self.err.take().unwrap().join().unwrap_or_default();
        (status, out, err)
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            common::kill_and_reap(&mut c);
        }
    }
}

/// Runs the tool with a time limit.
fn tool(args: &[&str]) -> common::BoundedRun {
    tool_in(Command::new(tool_path()), args)
}

fn tool_in(mut cmd: Command, args: &[&str]) -> common::BoundedRun {
    cmd.args(args);
    let r = common::run_command_bounded(cmd, TOOL_LIMIT);
    assert!(
        !r.timed_out,
        "hprof-rs {args:?} did not end within {TOOL_LIMIT:?}:\n{}",
        common::stderr(&r.output)
    );
    r
}

/// The tool's exit status (0 only when the agent started or stopped) and
/// the JVM's answer `return code: RC`, exactly.
fn assert_answered(r: &common::BoundedRun, rc: i32) {
    let status = if rc == 0 { 0 } else { 1 };
    assert_eq!(
        r.output.status.code(),
        Some(status),
        "{}",
        common::stderr(&r.output)
    );
    assert_eq!(common::stdout(&r.output), format!("0\nreturn code: {rc}\n"));
}

fn lines(s: &str) -> Vec<String> {
    s.lines().map(String::from).collect()
}

/// The attach protocol the tool picks: 2 from JDK 24 on.
fn protocol() -> u32 {
    if common::java_major() >= 24 {
        2
    } else {
        1
    }
}

/// The agent library the tool loads by default: the one built next to it.
fn default_agent() -> String {
    Path::new(TOOL)
        .parent()
        .unwrap()
        .join("libhprof_rs.so")
        .display()
        .to_string()
}

/// What JDK 21 and later print on the target's stderr for each library
/// loaded by attach (nothing before JDK 21).
fn dynamic_load_warning(lib: &str) -> String {
    if common::java_major() < 21 {
        return String::new();
    }
    format!(
        "WARNING: A JVM TI agent has been loaded dynamically ({lib})\n\
         WARNING: If a serviceability tool is in use, please run with -XX:+EnableDynamicAgentLoading to hide this warning\n\
         WARNING: Dynamic loading of agents will be disallowed by default in a future release\n"
    )
}

/// The stand-in agent, compiled once per test process.
fn stub_agent() -> &'static str {
    static LIB: OnceLock<String> = OnceLock::new();
    LIB.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("attach-stub-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let lib = dir.join("libattach_stub.so");
        let src = PathBuf::from(env!("HPROF_REPO"))
            .join("crates/hprof-e2e/tests/fixtures/attach_stub_agent.c");
        let st = Command::new("cc")
            .args(["-shared", "-fPIC", "-O1", "-o"])
            .arg(&lib)
            .arg(&src)
            .status()
            .expect("run cc");
        assert!(st.success(), "cc failed on {}", src.display());
        lib.display().to_string()
    })
}

#[test]
fn jvms_lists_each_fixture_with_its_command_version_and_agent() {
    let plain = Target::start("jvms_plain", &[]);
    let no_perfdata = Target::start("jvms_no_perfdata", &["-XX:-UsePerfData"]);
    let agent = format!("-agentpath:{}=heap=sites", common::agent_path().display());
    let with_agent = Target::start("jvms_agent", &[&agent]);
    let disabled = Target::start("jvms_disabled", &["-XX:+DisableAttachMechanism"]);

    let r = tool(&["jvms"]);
    assert!(r.output.status.success(), "{}", common::stderr(&r.output));
    let out = common::stdout(&r.output);
    let rows: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows[0], ["PID", "JAVA", "AGENT", "ATTACH", "COMMAND"]);
    let row = |t: &Target| {
        let pid = t.pid();
        rows.iter()
            .find(|r| r[0] == pid)
            .unwrap_or_else(|| panic!("no row for {pid}:\n{out}"))
            .clone()
    };
    let v = common::java_version();
    let with_agent_dir = with_agent.dir.clone();
    let (p1, p2, p3, p4) = (
        plain.pid(),
        no_perfdata.pid(),
        with_agent.pid(),
        disabled.pid(),
    );
    assert_eq!(row(&plain), [&p1, v, "-", "yes", "HoldObjects"]);
    // Without perfdata: the command from /proc, the version from the
    // JDK's release file, attach unknown.
    assert_eq!(row(&no_perfdata), [&p2, v, "-", "?", "HoldObjects"]);
    assert_eq!(row(&with_agent), [&p3, v, "loaded", "yes", "HoldObjects"]);
    assert_eq!(row(&disabled), [&p4, v, "-", "disabled", "HoldObjects"]);

    for (mut t, agent) in [
        (plain, false),
        (no_perfdata, false),
        (with_agent, true),
        (disabled, false),
    ] {
        let (st, out, err) = t.finish();
        assert!(st.success(), "{st}: {err}");
        assert_eq!(out, HELD);
        if agent {
            // The agent reports progress on stderr; never an error.
            assert!(
                !err.contains("HPROF ERROR") && !err.contains("panicked at"),
                "{err}"
            );
        } else {
            assert_eq!(err, "");
        }
    }
    // The agent loaded at start-up wrote its report at exit.
    let report = std::fs::read_to_string(with_agent_dir.join("java.hprof.txt")).unwrap();
    assert!(report.contains("\nSITES BEGIN"), "{report}");
}

/// The real agent through the tool: it starts (the tool names the report
/// file and says what exact tracking costs), a second load is refused with
/// the agent's reason, `stop` writes the report (named again), a second
/// `stop` is refused with its reason, and an option error comes back with
/// the agent's message: its token hidden, its escape sequences escaped.
/// Before the agent told the tool, every refusal read "the agent's own
/// message, if any, is in the JVM's output".
#[test]
fn attach_starts_the_agent_refuses_a_second_load_and_stops_it() {
    let mut t = Target::start("attach_real_agent", &[]);
    let pid = t.pid();
    let lib = default_agent();
    let loading = |opts: &str| {
        format!(
            "hprof-rs attach: loading {lib} into JVM {pid} (attach protocol {}, options {opts:?})",
            protocol()
        )
    };
    let report = t.dir.join("sites.txt").display().to_string();

    let r = tool(&["attach", &pid, "heap=sites,file=sites.txt"]);
    assert_answered(&r, 0);
    assert_eq!(
        lines(&common::stderr(&r.output)),
        [
            format!("hprof-rs attach: started the attach listener of JVM {pid}"),
            loading("heap=sites,file=sites.txt"),
            format!("hprof-rs attach: the agent started in JVM {pid}"),
            format!("hprof-rs attach: the report goes to {report}"),
            format!("hprof-rs attach: warning: {EXACT_SITES_COST}"),
            format!(
                "hprof-rs attach: the report is written when profiling stops (hprof-rs attach \
                 {pid} stop) or when the JVM exits"
            ),
        ]
    );
    assert!(r.elapsed < Duration::from_secs(20), "{:?}", r.elapsed);
    // The trigger file is gone, so a later SIGQUIT prints a thread dump.
    assert!(!t.dir.join(format!(".attach_pid{pid}")).exists());
    assert!(t.alive());

    // A second load while the first profile runs: the agent's refusal
    // (the listener runs now: the socket is used as it is).
    let r = tool(&["attach", &pid, "cpu=samples"]);
    assert_answered(&r, -1);
    let err = lines(&common::stderr(&r.output));
    assert_eq!(err.len(), 2, "{err:?}");
    assert_eq!(err[0], loading("cpu=samples"));
    let refusal = format!(
        "hprof-rs: the agent did not start in JVM {pid}: hprof-rs is already profiling this JVM \
         (attached "
    );
    assert!(err[1].starts_with(&refusal), "{err:?}");
    assert!(
        err[1].ends_with(
            " s ago, options \"heap=sites,file=sites.txt\"); load it with the option string stop \
             to end that profile first"
        ),
        "{err:?}"
    );

    // stop: the final report, and the program goes on.
    let r = tool(&["attach", &pid, "stop"]);
    assert_answered(&r, 0);
    assert_eq!(
        lines(&common::stderr(&r.output)),
        [
            loading("stop"),
            format!("hprof-rs attach: profiling stopped in JVM {pid}"),
            format!("hprof-rs attach: the report went to {report}"),
        ]
    );
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(
        text.contains("\nSITES BEGIN (ordered by live bytes, counted from the attach) "),
        "{text}"
    );
    assert!(t.alive());
    // Nothing left to stop.
    let r = tool(&["attach", &pid, "stop"]);
    assert_answered(&r, -1);
    assert_eq!(
        lines(&common::stderr(&r.output))[1],
        format!(
            "hprof-rs: the agent did not stop profiling in JVM {pid}: stop: hprof-rs is not \
             profiling this JVM"
        )
    );
    // An option error: the agent's message, with the token hidden and the
    // escape sequence it repeats escaped.
    let bad = "cpu=samples,token=s3cret,depth=\x1b[2J";
    let r = tool(&["attach", &pid, bad]);
    assert_answered(&r, -1);
    let err = common::stderr(&r.output);
    assert!(!err.contains("s3cret") && !err.contains('\x1b'), "{err:?}");
    assert_eq!(
        lines(&err),
        [
            loading("cpu=samples,token=***,depth=\x1b[2J"),
            format!(
                "hprof-rs: the agent did not start in JVM {pid}: hprof option error: depth option \
                 value must be decimal and >= 0 (cpu=samples,token=***,depth=\\x1b[2J)"
            ),
        ]
    );

    let (st, out, err) = t.finish();
    assert!(st.success(), "{st}: {err}");
    assert_eq!(out, HELD);
    // The JDK's warning once (the library stays loaded from the first
    // session on, so later loads do not load it again), then the agent's
    // lines.
    let expected_err = format!(
        "{}Allocation tracking on (*\n\
         HPROF: profiling started in this running JVM (options \"heap=sites,file=sites.txt\")\n\
         HPROF WARNING: {EXACT_SITES_COST}\n\
         HPROF ERROR: hprof-rs is already profiling this JVM (attached *\n\
         Dumping allocation sites ... *\n\
         HPROF: profiling stopped; the report went to sites.txt\n\
         HPROF ERROR: stop: hprof-rs is not profiling this JVM *\n\
         HPROF ERROR: hprof option error: depth option value must be decimal and >= 0 *\n",
        dynamic_load_warning(&lib)
    );
    let got: Vec<&str> = err.lines().collect();
    let want: Vec<&str> = expected_err.lines().collect();
    assert_eq!(got.len(), want.len(), "{err}");
    for (g, w) in got.iter().zip(&want) {
        match w.strip_suffix('*') {
            Some(prefix) => assert!(g.starts_with(prefix), "{g:?} vs {w:?}\n{err}"),
            None => assert_eq!(g, w, "{err}"),
        }
    }
}

/// `hprof-rs attach PID` with no options: CPU samples and sampled sites
/// (not the agent's own default, heap=all, which tracks every allocation
/// exactly and dumps the heap), said so, with the report named.
#[test]
fn attach_without_options_profiles_cheaply_and_names_the_report() {
    let mut t = Target::start("attach_default", &[]);
    let pid = t.pid();
    let report = t.dir.join("java.hprof.txt").display().to_string();
    let r = tool(&["attach", &pid]);
    assert_answered(&r, 0);
    assert_eq!(
        lines(&common::stderr(&r.output)),
        [
            format!("hprof-rs attach: started the attach listener of JVM {pid}"),
            format!(
                "hprof-rs attach: loading {} into JVM {pid} (attach protocol {}, options \
                 \"cpu=samples,heap=sites,heapsample=524288\")",
                default_agent(),
                protocol()
            ),
            "hprof-rs attach: no options were given: the tool's default is CPU samples and \
             sampled allocation sites, about the cost of no agent"
                .to_string(),
            format!("hprof-rs attach: the agent started in JVM {pid}"),
            format!("hprof-rs attach: the report goes to {report}"),
            format!(
                "hprof-rs attach: the report is written when profiling stops (hprof-rs attach \
                 {pid} stop) or when the JVM exits"
            ),
        ]
    );
    let r = tool(&["attach", &pid, "stop"]);
    assert_answered(&r, 0);
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(
        text.contains(
            "\nSITES BEGIN (ordered by live bytes, estimated from samples, counted from the attach) "
        ),
        "{text}"
    );
    assert!(text.contains("\nCPU SAMPLES BEGIN "), "{text}");
    assert!(!text.contains("\nHEAP DUMP BEGIN"), "{text}");
    let (st, out, err) = t.finish();
    assert!(st.success(), "{st}: {err}");
    assert_eq!(out, HELD);
    assert!(!err.contains("WARNING: heap"), "{err}");
}

#[test]
fn attach_prints_the_jvms_error_for_a_library_it_cannot_use() {
    let mut t = Target::start("attach_bad_library", &[]);
    let pid = t.pid();

    // A path that does not exist (with an escape sequence in its name,
    // which the JVM's answer repeats: shown escaped).
    let missing = t.dir.join("no-such-\x1b[2J-agent.so").display().to_string();
    let r = tool(&["attach", &pid, "--agent", &missing, "x=1"]);
    assert_eq!(r.output.status.code(), Some(1));
    let shown = missing.replace('\x1b', "\\x1b");
    let message = format!(
        "{shown} was not loaded.\n{shown}: cannot open shared object file: No such file or directory\n"
    );
    // JDK 21 and later report it after status 0, older ones after -1.
    let status = if common::java_major() >= 21 { 0 } else { -1 };
    assert_eq!(common::stdout(&r.output), format!("{status}\n{message}"));
    assert_eq!(
        common::stderr(&r.output),
        format!(
            "hprof-rs attach: note: {missing} does not exist here; the JVM looks for it in its own file system\n\
             hprof-rs attach: started the attach listener of JVM {pid}\n\
             hprof-rs attach: loading {missing} into JVM {pid} (attach protocol {}, options \"x=1\")\n\
             hprof-rs: JVM {pid} did not load the agent: {message}",
            protocol()
        )
    );

    // A library that is no agent: the JDK's own zip library.
    let zip = common::jdk_home()
        .join("lib/libzip.so")
        .display()
        .to_string();
    let r = tool(&["attach", &pid, "--agent", &zip]);
    assert_eq!(r.output.status.code(), Some(1));
    let message = format!("Agent_OnAttach is not available in {zip}\n");
    assert_eq!(common::stdout(&r.output), format!("{status}\n{message}"));
    assert_eq!(
        lines(&common::stderr(&r.output)).last().unwrap(),
        &format!(
            "hprof-rs: JVM {pid} did not load the agent: {}",
            message.trim_end()
        )
    );

    assert!(t.alive());
    let (st, out, err) = t.finish();
    assert!(st.success(), "{st}: {err}");
    assert_eq!(out, HELD);
    assert_eq!(err, dynamic_load_warning(&zip));
}

#[test]
fn attach_succeeds_and_listen_records_what_the_attached_agent_sends() {
    let mut t = Target::start("attach_stub", &[]);
    let pid = t.pid();
    let stub = stub_agent();

    // The stub returns 3 from Agent_OnAttach without net=.
    let r = tool(&["attach", &pid, "--agent", stub, "a=1"]);
    assert_eq!(r.output.status.code(), Some(1));
    assert_eq!(common::stdout(&r.output), "0\nreturn code: 3\n");
    assert_eq!(
        lines(&common::stderr(&r.output)).last().unwrap(),
        &format!(
            "hprof-rs: the agent did not start in JVM {pid}: Agent_OnAttach returned 3 (the agent's \
             own message, if any, is in the JVM's output)"
        )
    );

    // With --listen the stub connects to the tool, which records its
    // stream, summarises it like `hprof-rs listen`, and ends with it.
    let rec = t.dir.join("rec.txt");
    let rec_s = rec.display().to_string();
    let r = tool(&[
        "attach", &pid, "--agent", stub, "a=1", "--listen", "--out", &rec_s,
    ]);
    let err = common::stderr(&r.output);
    assert!(r.output.status.success(), "{err}");
    let port = err
        .lines()
        .find_map(|l| l.strip_prefix("listening on 127.0.0.1:"))
        .unwrap_or_else(|| panic!("{err}"))
        .to_string();
    let options = format!("a=1,net=127.0.0.1:{port}");
    let stream = format!(
        "JAVA PROFILE 1.0.1, created by the attach test stub\n\n--------\n\nSTUB AGENT options={options}\n"
    );
    assert_eq!(std::fs::read_to_string(&rec).unwrap(), stream);
    // The JVM's answer and the recording's summary come from two threads;
    // their lines may interleave.
    let mut out = lines(&common::stdout(&r.output));
    out.sort();
    let mut expected = vec![
        "0".to_string(),
        "return code: 0".to_string(),
        "text: JAVA PROFILE 1.0.1, created by the attach test stub".to_string(),
        format!("text: STUB AGENT options={options}"),
        format!(
            "stream ended: {} bytes, 2 records, recorded in {rec_s}",
            stream.len()
        ),
    ];
    expected.sort();
    assert_eq!(out, expected);
    let mut err_lines: Vec<String> = lines(&err)
        .into_iter()
        .map(
            |l| match l.strip_prefix("agent connected from 127.0.0.1:") {
                Some(_) => "agent connected from 127.0.0.1:*".to_string(),
                None => l,
            },
        )
        .collect();
    err_lines.sort();
    let mut expected = vec![
        format!("listening on 127.0.0.1:{port}"),
        format!(
            "hprof-rs attach: loading {stub} into JVM {pid} (attach protocol {}, options \"{options}\")",
            protocol()
        ),
        "agent connected from 127.0.0.1:*".to_string(),
        format!("hprof-rs attach: the agent started in JVM {pid}"),
    ];
    expected.sort();
    assert_eq!(err_lines, expected);

    assert!(t.alive());
    let (st, out, err) = t.finish();
    assert!(st.success(), "{st}: {err}");
    assert_eq!(out, HELD);
    assert_eq!(err, dynamic_load_warning(stub).repeat(2));
}

#[test]
fn protocol_version_2_carries_long_options_from_jdk_24_on() {
    let mut t = Target::start("attach_protocols", &[]);
    let pid = t.pid();
    // A path the agent can open: ././.../long1.txt, options of 1100 bytes.
    let long = format!("cpu=samples,file={}long1.txt", "./".repeat(537));
    assert_eq!(long.len(), 1100);
    let r = tool(&["attach", &pid, &long]);
    let err = lines(&common::stderr(&r.output));
    if common::java_major() >= 24 {
        assert_eq!(r.output.status.code(), Some(0), "{err:?}");
        assert_eq!(common::stdout(&r.output), "0\nreturn code: 0\n");
        assert!(err[1].ends_with("... (1100 bytes))"), "{err:?}");
        assert!(
            err[1].contains("(attach protocol 2, options \"cpu=samples,file=././"),
            "{err:?}"
        );
    } else {
        assert_eq!(r.output.status.code(), Some(1));
        // Protocol 1 cannot carry it: refused before anything is sent.
        assert_eq!(common::stdout(&r.output), "");
        assert_eq!(
            err.last().unwrap(),
            "hprof-rs: an argument of 1100 bytes is longer than the 1024 that attach protocol 1 \
             (JDK 23 and older) takes"
        );
    }

    // Protocol 1 works everywhere: it stops the profile the long options
    // started (JDK 24 on), or finds nothing to stop.
    let r = tool(&["attach", &pid, "--protocol", "1", "stop"]);
    let rc = if common::java_major() >= 24 { 0 } else { -1 };
    assert_eq!(common::stdout(&r.output), format!("0\nreturn code: {rc}\n"));
    assert!(common::stderr(&r.output).contains("(attach protocol 1, options \"stop\")"));
    if common::java_major() >= 24 {
        let report = std::fs::read_to_string(t.dir.join("long1.txt")).unwrap();
        assert!(report.contains("\nCPU SAMPLES END\n"), "{report}");
    }

    // Protocol 2 before JDK 24: the JVM answers status 101.
    let r = tool(&["attach", &pid, "--protocol", "2", "stop"]);
    assert_eq!(r.output.status.code(), Some(1));
    if common::java_major() >= 24 {
        assert_eq!(common::stdout(&r.output), "0\nreturn code: -1\n");
    } else {
        assert_eq!(common::stdout(&r.output), "101\n");
        assert_eq!(
            lines(&common::stderr(&r.output)).last().unwrap(),
            &format!(
                "hprof-rs: JVM {pid} did not load the agent: the JVM does not speak this attach \
                 protocol version (status 101)"
            )
        );
    }
    assert!(t.alive());
    let (st, out, _) = t.finish();
    assert!(st.success());
    assert_eq!(out, HELD);
}

#[test]
fn attach_to_a_dead_process_or_one_that_is_no_jvm_fails_at_once() {
    let mut gone = Command::new("true").spawn().unwrap();
    gone.wait().unwrap();
    let pid = gone.id().to_string();
    let r = tool(&["attach", &pid]);
    assert_eq!(r.output.status.code(), Some(1));
    assert_eq!(common::stdout(&r.output), "");
    assert_eq!(
        common::stderr(&r.output),
        format!("hprof-rs: no process with PID {pid}\n")
    );
    assert!(r.elapsed < Duration::from_secs(5), "{:?}", r.elapsed);

    // SIGQUIT would kill a process without a handler: none is sent.
    let mut sleeper = Command::new("sleep").arg("60").spawn().unwrap();
    let pid = sleeper.id().to_string();
    // Until it has become `sleep`, the child is a copy of this test.
    let start = Instant::now();
    while hprof_cli::attach::procfs::status(sleeper.id())
        .unwrap()
        .name
        != "sleep"
    {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "sleep did not start"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let r = tool(&["attach", &pid, "cpu=samples"]);
    assert_eq!(r.output.status.code(), Some(1));
    assert_eq!(common::stdout(&r.output), "");
    assert_eq!(
        common::stderr(&r.output),
        format!("hprof-rs: process {pid} (sleep) is not a Java virtual machine: it has no libjvm.so loaded\n")
    );
    assert!(r.elapsed < Duration::from_secs(5), "{:?}", r.elapsed);
    let alive = sleeper.try_wait().unwrap().is_none();
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    assert!(alive, "the process ended");

    // --listen chooses net= itself.
    let r = tool(&[
        "attach",
        &pid,
        "net=127.0.0.1:1",
        "--listen",
        "--out",
        "unused",
    ]);
    // A usage error: exit status 2, nothing sent.
    assert_eq!(r.output.status.code(), Some(2));
    assert!(
        common::stderr(&r.output).starts_with(
            "error: --listen sets the agent's net= option itself; leave net= out of the options\n"
        ),
        "{}",
        common::stderr(&r.output)
    );
}

#[test]
fn attach_to_a_jvm_that_refuses_attach_fails_clearly_and_in_bounded_time() {
    // Its perfdata says attach is disabled: no signal is sent at all, so
    // the JVM prints no thread dump.
    let mut t = Target::start("attach_disabled", &["-XX:+DisableAttachMechanism"]);
    let pid = t.pid();
    let r = tool(&["attach", &pid]);
    assert_eq!(r.output.status.code(), Some(1));
    assert_eq!(
        common::stderr(&r.output),
        format!("hprof-rs: JVM {pid} does not accept attach: it was started with -XX:+DisableAttachMechanism\n")
    );
    assert!(r.elapsed < Duration::from_secs(5), "{:?}", r.elapsed);
    assert!(t.alive());
    let (st, out, err) = t.finish();
    assert!(st.success(), "{err}");
    assert_eq!(out, HELD);

    // Without perfdata the tool cannot know: it signals, and gives up when
    // no socket appears in time. The JVM took both SIGQUITs (the first and
    // the one at half time) as thread dump requests.
    let mut t = Target::start(
        "attach_disabled_no_perfdata",
        &["-XX:+DisableAttachMechanism", "-XX:-UsePerfData"],
    );
    let pid = t.pid();
    let r = tool(&["attach", &pid, "--timeout", "2"]);
    assert_eq!(r.output.status.code(), Some(1));
    assert_eq!(
        common::stderr(&r.output),
        format!(
            "hprof-rs: JVM {pid} did not open its attach socket /proc/{pid}/root/tmp/.java_pid{pid} \
             within 2.0 s of SIGQUIT (attach disabled with -XX:+DisableAttachMechanism, a JVM that is \
             not responding, or not a HotSpot JVM)\n"
        )
    );
    assert!(
        r.elapsed >= Duration::from_secs(2) && r.elapsed < Duration::from_secs(10),
        "{:?}",
        r.elapsed
    );
    assert!(!t.dir.join(format!(".attach_pid{pid}")).exists());
    assert!(t.alive());
    let (st, out, err) = t.finish();
    assert!(st.success(), "{err}");
    assert!(
        out.starts_with("ready\n") && out.ends_with("\n3790\n"),
        "{out}"
    );
    assert_eq!(out.matches("Full thread dump").count(), 2, "{out}");
}

#[test]
fn attach_refuses_a_jvm_of_another_user() {
    if hprof_cli::attach::procfs::status(std::process::id())
        .unwrap()
        .euid
        != 0
        || !Path::new("/usr/bin/setpriv").exists()
    {
        eprintln!("SKIPPED: needs root and setpriv to run the tool as another user");
        return;
    }
    let mut t = Target::start("attach_other_user", &[]);
    let pid = t.pid();
    let mut cmd = Command::new("/usr/bin/setpriv");
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(tool_path());
    let r = tool_in(cmd, &["attach", &pid]);
    assert_eq!(r.output.status.code(), Some(1));
    assert_eq!(
        common::stderr(&r.output),
        format!(
            "hprof-rs: process {pid} (java) runs as uid 0, and you are uid 65534: a JVM accepts \
             attach only from its own effective user (or root)\n"
        )
    );
    assert!(t.alive());
    let (st, out, _) = t.finish();
    assert!(st.success());
    assert_eq!(out, HELD);
}

#[test]
fn attach_reaches_a_jvm_in_its_own_pid_namespace_and_tmp() {
    let root = hprof_cli::attach::procfs::status(std::process::id())
        .unwrap()
        .euid
        == 0;
    let hidden = [common::fixture_classes(), common::jdk_home().as_path()]
        .iter()
        .any(|p| p.starts_with("/tmp"));
    if !root || hidden || Command::new("unshare").arg("--version").output().is_err() {
        eprintln!("SKIPPED: needs root, unshare, and the JDK and classes outside /tmp");
        return;
    }
    let mut t = Target::start_contained("attach_contained");
    let pid = t.pid();
    let status = hprof_cli::attach::procfs::status(t.pid).unwrap();
    assert_eq!(status.ns_pid, 1, "{status:?}");

    let r = tool(&["jvms"]);
    let out = common::stdout(&r.output);
    let row: Vec<&str> = out
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|r| r[0] == pid)
        .unwrap_or_else(|| panic!("no row for {pid}:\n{out}"));
    assert_eq!(
        row,
        [
            pid.as_str(),
            common::java_version(),
            "-",
            "yes",
            "HoldObjects"
        ]
    );

    let r = tool(&["attach", &pid, "cpu=samples"]);
    assert_answered(&r, 0);
    assert_eq!(
        lines(&common::stderr(&r.output)),
        [
            format!("hprof-rs attach: started the attach listener of JVM {pid}"),
            format!(
                "hprof-rs attach: loading {} into JVM {pid} (attach protocol {}, options \"cpu=samples\")",
                default_agent(),
                protocol()
            ),
            format!("hprof-rs attach: the agent started in JVM {pid}"),
            format!(
                "hprof-rs attach: the report goes to {}",
                t.dir.join("java.hprof.txt").display()
            ),
            format!(
                "hprof-rs attach: the report is written when profiling stops (hprof-rs attach \
                 {pid} stop) or when the JVM exits"
            ),
        ]
    );
    // The socket is the contained JVM's: named for its pid 1, in its /tmp.
    use std::os::unix::fs::FileTypeExt;
    let socket = std::fs::symlink_metadata(format!("/proc/{pid}/root/tmp/.java_pid1")).unwrap();
    assert!(socket.file_type().is_socket());

    let (st, out, err) = t.finish();
    assert!(st.success(), "{st}: {err}");
    assert_eq!(out, HELD);
    assert!(!err.contains("HPROF ERROR"), "{err}");
    // The report of the attached agent, written at the exit.
    let report = std::fs::read_to_string(t.dir.join("java.hprof.txt")).unwrap();
    assert!(report.contains("\nCPU SAMPLES END\n"), "{report}");
}

/// An idle program (HoldObjects allocates nothing while it waits) under
/// exact sites and cpu=samples, attached by the tool: what the attach
/// allocates (the thread dump cpu=samples reads, the outcome the agent
/// publishes, the tool reading it) and what tools ask the JVM's attach
/// listener meanwhile (`jcmd VM.system_properties`, `jcmd Thread.print`)
/// is not the program's: the report has no site at all. Those used to be
/// counted (thousands of objects at JDK frames of the attach listener).
#[test]
fn attached_sites_count_nothing_the_agent_or_tools_allocate() {
    let mut t = Target::start("attach_nothing_of_ours", &[]);
    let pid = t.pid();
    let r = tool(&[
        "attach",
        &pid,
        "heap=sites,cpu=samples,cutoff=0,file=sites.txt",
    ]);
    assert_answered(&r, 0);
    for command in ["VM.system_properties", "Thread.print"] {
        let mut jcmd = Command::new(common::jdk_home().join("bin/jcmd"));
        jcmd.arg(&pid).arg(command);
        let out = common::run_command_bounded(jcmd, TOOL_LIMIT);
        assert!(
            out.output.status.success(),
            "jcmd {command}: {}",
            common::stderr(&out.output)
        );
    }
    let r = tool(&["attach", &pid, "stop"]);
    assert_answered(&r, 0);
    let report = std::fs::read_to_string(t.dir.join("sites.txt")).unwrap();
    let sites = common::sites::parse_sites(&report);
    assert_eq!(sites.len(), 1, "{report}");
    assert!(sites[0].rows.is_empty(), "{:?}", sites[0].rows);
    let (st, out, err) = t.finish();
    assert!(st.success(), "{st}: {err}");
    assert_eq!(out, HELD);
}

/// Another local user for the attacks below: root runs the tool, the JVM
/// or the impostor runs as this uid (through setpriv; the user needs no
/// account). None, with a line saying so, when that cannot be arranged.
fn other_user() -> Option<u32> {
    let root = hprof_cli::attach::procfs::status(std::process::id())
        .unwrap()
        .euid
        == 0;
    if !root || !Path::new("/usr/bin/setpriv").exists() {
        eprintln!("SKIPPED: needs root and setpriv to act as a second local user");
        return None;
    }
    Some(65534)
}

/// The impostor (crates/hprof-e2e/tests/fixtures/fake_attach_listener.c), compiled once.
fn fake_listener() -> &'static str {
    static BIN: OnceLock<String> = OnceLock::new();
    BIN.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("fake-listener-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bin = dir.join("fake_attach_listener");
        let src = PathBuf::from(env!("HPROF_REPO"))
            .join("crates/hprof-e2e/tests/fixtures/fake_attach_listener.c");
        let st = Command::new("cc")
            .args(["-O1", "-o"])
            .arg(&bin)
            .arg(&src)
            .status()
            .expect("run cc");
        assert!(st.success(), "cc failed on {}", src.display());
        bin.display().to_string()
    })
}

/// An impostor listening at `socket` (as `uid` when given), recording
/// what it is sent in `record`; killed when dropped.
struct Impostor(Child);

impl Impostor {
    fn start(socket: &Path, record: &Path, uid: Option<u32>) -> Impostor {
        let mut cmd = match uid {
            Some(uid) => {
                let mut c = Command::new("/usr/bin/setpriv");
                c.arg(format!("--reuid={uid}"))
                    .arg(format!("--regid={uid}"))
                    .arg("--clear-groups")
                    .arg(fake_listener());
                c
            }
            None => Command::new(fake_listener()),
        };
        let mut child = cmd
            .arg(socket)
            .arg(record)
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the impostor");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line, "ready\n", "the impostor did not start");
        Impostor(child)
    }
}

impl Drop for Impostor {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The JVM's socket as the tool names it: in the JVM's /tmp, seen through
/// /proc/PID/root when the tool may look there.
fn shown_socket(pid: u32) -> PathBuf {
    hprof_cli::attach::procfs::target_tmp(pid).join(format!(".java_pid{pid}"))
}

/// What the impostor was sent (nothing when it never was).
fn recorded(record: &Path) -> String {
    String::from_utf8_lossy(&std::fs::read(record).unwrap_or_default()).into_owned()
}

/// A JVM's owner plants `.attach_pid<PID>` in its working directory as a
/// link to a file root never meant to create; root attaches. The link is
/// not followed (nothing is created where it points, the link stays), the
/// trigger goes to /tmp instead, the attach works and /tmp is left clean.
/// Root used to open the name with O_CREAT and follow the link.
#[test]
fn root_attach_creates_nothing_through_a_link_the_jvms_owner_planted() {
    let Some(uid) = other_user() else { return };
    let mut t = Target::start_as("attach_planted_link", uid);
    let pid = t.pid();
    let vault = common::scratch("attach_planted_link_vault");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&vault, std::fs::Permissions::from_mode(0o700)).unwrap();
    let victim = vault.join("created-by-root");
    let link = t.dir.join(format!(".attach_pid{pid}"));
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    std::os::unix::fs::lchown(&link, Some(uid), Some(uid)).unwrap();

    let r = tool(&["attach", &pid, "cpu=samples,file=cpu.txt"]);
    assert!(
        !victim.exists(),
        "root created {} through the planted link",
        victim.display()
    );
    assert_eq!(
        std::fs::read_link(&link).unwrap(),
        victim,
        "the link was changed"
    );
    assert!(!Path::new(&format!("/tmp/.attach_pid{pid}")).exists());
    assert_eq!(
        r.output.status.code(),
        Some(0),
        "{}",
        common::stderr(&r.output)
    );
    assert!(
        common::stderr(&r.output).contains(&format!(
            "hprof-rs attach: started the attach listener of JVM {pid}\n"
        )),
        "{}",
        common::stderr(&r.output)
    );
    let (st, out, err) = t.finish();
    assert!(st.success(), "{st}: {err}");
    assert_eq!(out, HELD);
    let report = std::fs::read_to_string(t.dir.join("cpu.txt")).unwrap();
    assert!(report.contains("\nCPU SAMPLES END\n"), "{report}");
}

/// What the tool says of a socket of uid `owner` at the name of JVM
/// `pid`, which runs as uid `jvm_uid`.
fn another_users_socket_refused(pid: u32, owner: u32, jvm_uid: u32) -> String {
    format!(
        "hprof-rs: refusing the attach socket {}: it belongs to uid {owner}, and JVM {pid} runs as \
         uid {jvm_uid} (another user's socket at the JVM's name; nothing was sent to it)\n",
        shown_socket(pid).display()
    )
}

/// `attach PID cpu=samples,file=cpu.txt`, which must succeed by starting
/// the JVM's attach listener (its first line says so); its stderr.
fn attach_starting_the_listener(pid: &str) -> String {
    let r = tool(&["attach", pid, "cpu=samples,file=cpu.txt"]);
    let err = common::stderr(&r.output);
    assert_eq!(r.output.status.code(), Some(0), "{err}");
    assert!(
        err.starts_with(&format!(
            "hprof-rs attach: started the attach listener of JVM {pid}\n"
        )),
        "{err}"
    );
    err
}

/// The attached JVM ends as asked, with its `cpu=samples,file=cpu.txt`
/// report whole; it removed its own socket at `socket` as it exited.
fn ends_with_its_report_and_socket_gone(t: &mut Target, socket: &Path) {
    let (st, out, err) = t.finish();
    assert!(st.success(), "{st}: {err}");
    assert_eq!(out, HELD);
    assert!(!socket.exists());
    let report = std::fs::read_to_string(t.dir.join("cpu.txt")).unwrap();
    assert!(report.contains("\nCPU SAMPLES END\n"), "{report}");
}

/// A socket nobody listens on, closed to others like HotSpot's, at
/// `path`: what a JVM killed outright leaves behind.
fn plant_left_socket(path: &Path, uid: Option<u32>) {
    use std::os::unix::fs::PermissionsExt;
    drop(std::os::unix::net::UnixListener::bind(path).unwrap());
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
    if let Some(uid) = uid {
        std::os::unix::fs::lchown(path, Some(uid), Some(uid)).unwrap();
    }
}

/// A JVM killed outright leaves its socket behind, and the kernel gives
/// its pid to a new JVM (pids wrap at 32768 on many machines). The new
/// JVM's listener is started all the same and its socket takes the old
/// one's place (HotSpot's own client gives up here: it connects to the
/// old socket and is refused).
#[test]
fn a_socket_left_at_the_jvms_name_by_a_killed_jvm_is_replaced() {
    let mut t = Target::start("attach_left_socket", &[]);
    let pid = t.pid();
    let socket = PathBuf::from(format!("/tmp/.java_pid{pid}"));
    plant_left_socket(&socket, None);
    let left = std::fs::symlink_metadata(&socket).unwrap().ino();

    let err = attach_starting_the_listener(&pid);
    assert!(!err.contains("removed"), "{err}");
    assert_ne!(std::fs::symlink_metadata(&socket).unwrap().ino(), left);
    ends_with_its_report_and_socket_gone(&mut t, &socket);
}

/// Root attaching to another user's JVM whose socket name holds a socket
/// nobody listens on: a third user's is refused and left as it is; root's
/// own (left by a killed JVM of root's, which the JVM could not replace in
/// the sticky /tmp) is removed, said so, and the attach goes on.
#[test]
fn root_removes_only_its_own_socket_left_at_another_users_jvms_name() {
    let Some(uid) = other_user() else { return };
    let mut t = Target::start_as("attach_left_socket_root", uid);
    let pid = t.pid();
    let socket = PathBuf::from(format!("/tmp/.java_pid{pid}"));
    let third = uid - 1;
    plant_left_socket(&socket, Some(third));
    let r = tool(&["attach", &pid, "cpu=samples,file=cpu.txt"]);
    assert_eq!(
        common::stderr(&r.output),
        another_users_socket_refused(t.pid, third, uid)
    );
    assert_eq!(r.output.status.code(), Some(1));
    assert_eq!(std::fs::symlink_metadata(&socket).unwrap().uid(), third);

    std::fs::remove_file(&socket).unwrap();
    plant_left_socket(&socket, None);
    let r = tool(&["attach", &pid, "cpu=samples,file=cpu.txt"]);
    let err = common::stderr(&r.output);
    assert_eq!(r.output.status.code(), Some(0), "{err}");
    assert!(
        err.starts_with(&format!(
            "hprof-rs attach: removed {}, a socket of uid 0 that nothing listened on (left by an \
             exited process)\nhprof-rs attach: started the attach listener of JVM {pid}\n",
            shown_socket(t.pid).display()
        )),
        "{err}"
    );
    assert_eq!(std::fs::symlink_metadata(&socket).unwrap().uid(), uid);
    ends_with_its_report_and_socket_gone(&mut t, &socket);
}

/// Another user binds the JVM's attach socket name before the JVM does;
/// root attaches with a token in its options. Nothing is sent to the
/// impostor (it used to get the whole option string, and its answer's
/// escape sequences reached root's terminal). A JVM of a second user
/// could not replace the impostor's socket in the sticky /tmp: the tool
/// says whose it is and the JVM is untouched. A root JVM can: its
/// listener is started, its socket takes the name, and the attach goes on.
#[test]
fn root_attach_sends_nothing_to_another_users_socket() {
    let Some(uid) = other_user() else { return };
    let third = uid - 1;
    let mut t = Target::start_as("attach_impostor_other_user", uid);
    let pid = t.pid();
    let socket = PathBuf::from(format!("/tmp/.java_pid{pid}"));
    let records = common::scratch("attach_impostor_records");
    std::os::unix::fs::chown(&records, Some(third), Some(third)).unwrap();
    let record = records.join("sent");
    let impostor = Impostor::start(&socket, &record, Some(third));
    let r = tool(&["attach", &pid, "cpu=samples,listen=9,token=s3cret"]);
    drop(impostor);
    let _ = std::fs::remove_file(&socket);
    assert_eq!(recorded(&record), "", "the impostor was sent this");
    assert_eq!(common::stdout(&r.output), "");
    assert_eq!(
        common::stderr(&r.output),
        another_users_socket_refused(t.pid, third, uid)
    );
    assert_eq!(r.output.status.code(), Some(1));
    assert!(t.alive());
    let (st, out, err) = t.finish();
    assert!(st.success(), "{st}: {err}");
    assert_eq!(out, HELD);
    assert_eq!(err, "");

    let mut t = Target::start("attach_impostor_root_jvm", &[]);
    let pid = t.pid();
    let socket = PathBuf::from(format!("/tmp/.java_pid{pid}"));
    std::os::unix::fs::chown(&records, Some(uid), Some(uid)).unwrap();
    let _ = std::fs::remove_file(&record);
    let impostor = Impostor::start(&socket, &record, Some(uid));
    attach_starting_the_listener(&pid);
    assert_eq!(std::fs::symlink_metadata(&socket).unwrap().uid(), 0);
    drop(impostor);
    assert_eq!(recorded(&record), "", "the impostor was sent this");
    ends_with_its_report_and_socket_gone(&mut t, &socket);
}

/// What the JVM's owner can put at the JVM's socket name to make root's
/// tool connect elsewhere or wait for ever: a link to a socket of root's
/// (not followed, not connected to), a root socket mounted over the name
/// in the JVM's own mount namespace (refused as mounted, not connected
/// to), a listener of theirs whose queue is full (the connection waits
/// `--timeout` at most).
#[test]
fn root_attach_connects_to_no_socket_the_jvms_owner_points_the_name_at() {
    let Some(uid) = other_user() else { return };
    let vault = common::scratch("attach_aim_vault");
    let victim = vault.join("victim.sock");
    let victim_l = std::os::unix::net::UnixListener::bind(&victim).unwrap();
    victim_l.set_nonblocking(true).unwrap();
    let untouched = |what: &str| {
        assert!(
            victim_l.accept().is_err(),
            "{what}: root connected to the socket the name was aimed at"
        )
    };

    // A link.
    let mut t = Target::start_as("attach_aim_link", uid);
    let pid = t.pid();
    let socket = PathBuf::from(format!("/tmp/.java_pid{pid}"));
    std::os::unix::fs::symlink(&victim, &socket).unwrap();
    std::os::unix::fs::lchown(&socket, Some(uid), Some(uid)).unwrap();
    let r = tool(&["attach", &pid, "cpu=samples,file=cpu.txt"]);
    assert_eq!(
        common::stderr(&r.output),
        format!(
            "hprof-rs: {} is not a socket; refusing to use it\n",
            shown_socket(t.pid).display()
        )
    );
    untouched("a link");
    std::fs::remove_file(&socket).unwrap();
    let (st, _, err) = t.finish();
    assert!(st.success(), "{st}: {err}");

    // A listener of the JVM's owner with a full queue.
    let mut t = Target::start_as("attach_aim_full_queue", uid);
    let pid = t.pid();
    let socket = PathBuf::from(format!("/tmp/.java_pid{pid}"));
    let mut full = Command::new("/usr/bin/setpriv")
        .arg(format!("--reuid={uid}"))
        .arg(format!("--regid={uid}"))
        .arg("--clear-groups")
        .args(["/usr/bin/python3", "-c"])
        .arg(
            "import socket,sys,time\n\
             import os; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o600); s.listen(0)\n\
             held=[]\n\
             for i in range(8):\n\
             \x20c=socket.socket(socket.AF_UNIX); c.setblocking(False)\n\
             \x20try: c.connect(sys.argv[1])\n\
             \x20except OSError: break\n\
             \x20held.append(c)\n\
             print('full', flush=True); time.sleep(120)",
        )
        .arg(&socket)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(full.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "full\n");
    let start = Instant::now();
    let r = tool(&[
        "attach",
        "--timeout",
        "2",
        "--reply-timeout",
        "2",
        &pid,
        "cpu=samples,file=cpu.txt",
    ]);
    let took = start.elapsed();
    let _ = full.kill();
    let _ = full.wait();
    let _ = std::fs::remove_file(&socket);
    let err = common::stderr(&r.output);
    assert_eq!(r.output.status.code(), Some(1), "{err}");
    assert!(took < Duration::from_secs(15), "{took:?}: {err}");
    assert!(err.contains("took no connection within"), "{err}");
    let (st, _, err) = t.finish();
    assert!(st.success(), "{st}: {err}");

    // A root socket mounted over the name, in the JVM's mount namespace.
    let dir = common::scratch("attach_aim_mount");
    std::os::unix::fs::chown(&dir, Some(uid), Some(uid)).unwrap();
    let mut cmd = Command::new("unshare");
    cmd.args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg(
            "touch /tmp/.java_pid$$ && mount --bind \"$0\" /tmp/.java_pid$$ && exec \
             /usr/bin/setpriv --reuid=\"$1\" --regid=\"$1\" --clear-groups \"$2\" -cp \"$3\" HoldObjects",
        )
        .arg(&victim)
        .arg(uid.to_string())
        .arg(common::java())
        .arg(common::fixture_classes());
    let mut t = Target::spawn_in("attach_aim_mount", dir, cmd);
    let pid = t.pid();
    let r = tool(&["attach", &pid, "cpu=samples,file=cpu.txt"]);
    assert_eq!(
        common::stderr(&r.output),
        format!(
            "hprof-rs: refusing the attach socket {}: something is mounted over it, so it is not \
             a socket the JVM made (nothing was sent to it)\n",
            shown_socket(t.pid).display()
        )
    );
    untouched("a mount");
    let (st, _, err) = t.finish();
    assert!(st.success(), "{st}: {err}");
    let _ = std::fs::remove_file(format!("/tmp/.java_pid{pid}"));
}

/// A process of the JVM's own user listens at the JVM's socket name (so
/// the file's owner is right): the tool checks who listens once
/// connected, and sends nothing to a process that is not the JVM. Runs as
/// any user.
#[test]
fn attach_sends_nothing_to_a_socket_the_jvm_does_not_listen_on() {
    let mut t = Target::start("attach_impostor_same_user", &[]);
    let pid = t.pid();
    let socket = PathBuf::from(format!("/tmp/.java_pid{pid}"));
    let record = common::scratch("attach_impostor_same_user_records").join("sent");
    let impostor = Impostor::start(&socket, &record, None);
    let impostor_pid = impostor.0.id();

    let r = tool(&["attach", &pid, "cpu=samples,listen=9,token=s3cret"]);
    drop(impostor);
    let _ = std::fs::remove_file(&socket);
    assert_eq!(recorded(&record), "", "the impostor was sent this");
    assert_eq!(common::stdout(&r.output), "");
    let me = hprof_cli::attach::procfs::status(std::process::id())
        .unwrap()
        .euid;
    assert_eq!(
        common::stderr(&r.output),
        format!(
            "hprof-rs: refusing the attach socket {}: the process listening on it is pid \
             {impostor_pid} (uid {me}), not JVM {pid} (uid {me}); nothing was sent to it\n",
            shown_socket(t.pid).display()
        )
    );
    assert_eq!(r.output.status.code(), Some(1));
    let (st, out, err) = t.finish();
    assert!(st.success(), "{st}: {err}");
    assert_eq!(out, HELD);
    assert_eq!(err, "");
}
