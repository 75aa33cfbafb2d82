//! `hprof-rs profile PID | -- java …`: one command from a running JVM (or
//! a command line) to a flame graph, collapsed stacks, a pprof profile or
//! the agent's own report (docs/hprof-rs-tool.md, "profile").
//!
//! For a PID the agent is loaded through HotSpot's attach mechanism with a
//! cheap option set for the event, streaming (`net=`) to a loopback port
//! this command listens on; the agent proves the secret of this run first
//! (`token=`, in the options only the attach socket sees: docs/
//! socket-protocol.md, "A token"), so the stream is that JVM's. After the
//! duration the option string `stop` ends the profile: the agent sends its
//! final report, closes the stream and gives its JVMTI environment back;
//! the program runs on and can be profiled again. For `-- java …` the
//! program starts with `-agentpath:` and the secret in a private file
//! (`tokenfile=`: a command line is visible to every local user); the
//! profile ends when the program does, or at the end of the duration.
//!
//! The stream is recorded to a file beside the output, then turned into
//! the output by the tool's own readers (`hprof_analysis::flame`,
//! `hprof_analysis::pprof`), and removed.

use crate::attach::{self as tool, ProtocolChoice};
use crate::CliResult;
use hprof_analysis::flame;
use std::fs::File;
use std::io::{BufReader, IsTerminal, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, OnceLock};
use std::time::{Duration, Instant};

/// What is profiled (`-e`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Event {
    /// CPU time: samples of the threads that use CPU (cpu=samples).
    Cpu,
    /// Allocations: sampled allocation sites (heap=sites,heapsample=).
    Alloc,
    /// Monitor contention: time blocked entering monitors (monitor=y).
    Lock,
    /// Wall-clock samples of every thread, whatever its state: running,
    /// blocked, waiting, asleep or in native code (cpusampler=wall).
    Wall,
}

/// The output, by the extension of `-o`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// The interactive flame graph in a self-contained HTML page.
    Html,
    /// The same flame graph as an SVG document.
    Svg,
    /// `root;…;leaf weight` lines.
    Collapsed,
    /// A gzipped pprof profile.
    Pprof,
    /// The agent's text report (`format=a`).
    Txt,
    /// The agent's binary report (`format=b`).
    Hprof,
    /// A JDK Flight Recorder file (docs/jfr.md).
    Jfr,
}

/// The extensions `-o` takes.
pub const EXTENSIONS: &str = ".html, .svg, .collapsed, .pprof (or .pb.gz), .jfr, .txt or .hprof";

/// Why an output cannot be written.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// An extension the command does not know: a usage error.
    Usage(String),
    /// A format the command names but cannot write yet.
    NotYet(String),
}

/// The output format of `path`, from its extension.
pub fn format_of(path: &str) -> Result<Format, Refused> {
    let lower = path.to_ascii_lowercase();
    let ext = Path::new(&lower)
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("");
    Ok(match ext {
        "html" | "htm" => Format::Html,
        "svg" => Format::Svg,
        "collapsed" | "folded" => Format::Collapsed,
        "pprof" => Format::Pprof,
        "gz" if lower.ends_with(".pb.gz") => Format::Pprof,
        "txt" => Format::Txt,
        "hprof" => Format::Hprof,
        "jfr" => Format::Jfr,
        _ => {
            return Err(Refused::Usage(format!(
                "{path}: the output format is taken from the extension: {EXTENSIONS}"
            )))
        }
    })
}

/// `-d`: `30s`, `2m`, `500ms`, `1h` or plain seconds (`30`, `0.5`),
/// more than zero and at most a day.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let bad = || format!("{s:?} is not a duration: give e.g. 30s, 2m, 500ms or 30 (seconds)");
    let (num, unit) = match t.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => t.split_at(i),
        None => (t, "s"),
    };
    let scale = match unit {
        "ms" => 0.001,
        "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        _ => return Err(bad()),
    };
    let v: f64 = num.trim().parse().map_err(|_| bad())?;
    let secs = v * scale;
    if !secs.is_finite() || secs <= 0.0 {
        return Err(bad());
    }
    if secs > 86_400.0 {
        return Err(format!("{s:?}: at most a day (24h)"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// The largest `heapsample=` the JVM takes (a jint).
pub const MAX_ALLOC_INTERVAL: u64 = i32::MAX as u64;
/// The agent's sampling interval of `-e alloc` by default: the JVM's own
/// default, about the cost of no agent (docs/alloc_sites.md).
pub const ALLOC_INTERVAL: u64 = 512 * 1024;

/// `--alloc-interval`: bytes, with an optional unit `k`, `m` or `g` (powers
/// of 1024, as the JVM's sizes; `kb`/`kib` and the like mean the same):
/// `524288`, `512k`, `1m`; from 1 byte to 2 GiB - 1.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let bad = || format!("{s:?} is not a size: give bytes, e.g. 524288, 512k or 1m");
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    let (num, unit) = t.split_at(digits);
    let scale: u64 = match unit.trim_start().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return Err(bad()),
    };
    if num.is_empty() {
        return Err(bad());
    }
    let too_big = || format!("{s:?}: at most {MAX_ALLOC_INTERVAL} bytes (the JVM's limit)");
    // All digits: a number too long for 64 bits is only too big.
    let v: u64 = num.parse().map_err(|_| too_big())?;
    match v.checked_mul(scale) {
        _ if v == 0 => Err(format!("{s:?}: at least 1 byte")),
        Some(b) if b <= MAX_ALLOC_INTERVAL => Ok(b),
        _ => Err(too_big()),
    }
}

/// Whom to profile.
pub enum Target {
    Pid(u32),
    /// `java …`: started here with the agent.
    Command(Vec<String>),
}

pub struct ProfileArgs {
    pub target: Target,
    /// None: until the program ends (a command), 30 s (a PID).
    pub duration: Option<Duration>,
    pub event: Event,
    pub out: String,
    /// `cpu`: ms of CPU time between two samples of a thread.
    pub interval_ms: Option<u32>,
    /// `alloc`: mean bytes between two sampled allocations of a thread.
    pub alloc_bytes: Option<u64>,
    /// The agent library (default: the one beside this tool).
    pub agent: Option<String>,
    pub quiet: bool,
}

/// How long `profile PID` runs without `-d`.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(30);
/// Stack depth of the profiles (the agent's default, 4, cuts the roots off
/// the graph).
const DEPTH: u32 = 64;
/// How long a JVM has to start its attach listener, and to answer.
const WAITS: (Duration, Duration) = (Duration::from_secs(10), Duration::from_secs(120));
/// How long the agent has to send its final report after the stop or the
/// program's end.
const REPORT_WITHIN: Duration = Duration::from_secs(120);

/// The agent options of a profile (without where the stream goes), and
/// whether its stream is text.
pub fn agent_options(
    event: Event,
    format: Format,
    interval_ms: Option<u32>,
    alloc_bytes: Option<u64>,
) -> CliResult<(String, bool)> {
    let mut o = match event {
        Event::Cpu => format!("cpu=samples,depth={DEPTH}"),
        // Sampled: about the cost of no agent (docs/alloc_sites.md).
        Event::Alloc => format!(
            "heap=sites,heapsample={},depth={DEPTH}",
            alloc_bytes.unwrap_or(ALLOC_INTERVAL)
        ),
        Event::Lock => format!("monitor=y,depth={DEPTH}"),
        Event::Wall => format!("cpu=samples,cpusampler=wall,depth={DEPTH}"),
    };
    match (interval_ms, event) {
        (Some(ms), _) => o += &format!(",interval={ms}"),
        // Every thread is signalled each period, idle or not: a longer
        // default than CPU samples' 10 ms keeps that cheap with many threads.
        (None, Event::Wall) => o += &format!(",interval={WALL_INTERVAL_MS}"),
        (None, _) => {}
    }
    // monitor=y writes text only (docs/monitors.md).
    let text = event == Event::Lock || format == Format::Txt;
    if !text {
        o += ",format=b";
    }
    Ok((o, text))
}

/// Milliseconds between two wall-clock samples of a thread, by default.
pub const WALL_INTERVAL_MS: u32 = 20;

/// Combinations that cannot be written, found before anything starts
/// (usage errors).
pub fn check(
    event: Event,
    format: Format,
    interval_ms: Option<u32>,
    alloc_bytes: Option<u64>,
) -> Result<(), String> {
    match (event, format) {
        (Event::Lock, Format::Hprof) => Err(
            "-e lock writes text only (monitor=y has no binary form): use .txt, .html, .svg, .collapsed or .jfr".into(),
        ),
        (Event::Lock, Format::Pprof) => Err(
            "-e lock has no pprof output yet: use .html, .svg, .collapsed, .jfr or .txt".into(),
        ),
        // jdk.ExecutionSample says the thread ran; a wall-clock sample
        // does not know.
        (Event::Wall, Format::Jfr) => Err(
            "-e wall has no JFR output (its samples are not CPU samples, which jdk.ExecutionSample means): use .html, .svg, .collapsed, .pprof, .txt or .hprof".into(),
        ),
        (e, _) if interval_ms.is_some() && !matches!(e, Event::Cpu | Event::Wall) => Err(
            "--interval is for -e cpu and -e wall (ms between two samples of a thread)".into(),
        ),
        (e, _) if alloc_bytes.is_some() && e != Event::Alloc => Err(
            "--alloc-interval is for -e alloc (bytes between two sampled allocations)".into(),
        ),
        _ => Ok(()),
    }
}

/// Where the stream is written while it comes, beside the output (so the
/// conversion needs no copy across file systems, and a failed run leaves
/// nothing elsewhere).
fn stream_path(out: &Path) -> PathBuf {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    out.with_file_name(format!(".{name}.{}.stream", std::process::id()))
}

/// Progress lines: a countdown on a terminal, plain lines otherwise,
/// nothing with `--quiet` (errors are the caller's).
struct Progress {
    quiet: bool,
    tty: bool,
}

impl Progress {
    fn say(&self, line: &str) {
        if !self.quiet {
            if self.tty {
                eprint!("\r\x1b[K");
            }
            eprintln!("hprof-rs profile: {line}");
        }
    }
    fn tick(&self, what: &str, left: Duration) {
        if !self.quiet && self.tty {
            eprint!(
                "\r\x1b[Khprof-rs profile: {what}: {} s left",
                left.as_secs_f64().ceil() as u64
            );
            let _ = std::io::stderr().flush();
        }
    }
    fn clear(&self) {
        if !self.quiet && self.tty {
            eprint!("\r\x1b[K");
        }
    }
}

/// Records the agent's stream, once it proved the secret, to a file;
/// connections that do not prove it are turned away and waited past.
/// How often `-e alloc` takes the allocations counted so far: one site
/// would have to allocate 4 GiB within it to fill a record's counter (two
/// threads of the Churn fixture allocate 3.6 GB/s at one site here).
const TAKE_SITES_EVERY: Duration = Duration::from_millis(250);

struct Recorder {
    ended: Arc<AtomicBool>,
    done: mpsc::Receiver<CliResult<u64>>,
    /// The way back to the agent, once it connected: requests.
    back: Arc<OnceLock<TcpStream>>,
    serial: u32,
}

impl Recorder {
    fn start(
        listener: TcpListener,
        secret: String,
        path: PathBuf,
        within: Duration,
    ) -> CliResult<Recorder> {
        let file =
            File::create(&path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        let ended = Arc::new(AtomicBool::new(false));
        let (tx, done) = mpsc::channel();
        let flag = ended.clone();
        let back = Arc::new(OnceLock::new());
        let way_back = back.clone();
        std::thread::Builder::new()
            .name("profile-recorder".into())
            .spawn(move || {
                let r = accept_proven(&listener, secret.as_bytes(), within, "hprof-rs profile")
                    .and_then(|(stream, first)| {
                        if let Ok(w) = stream.try_clone() {
                            // A request is a few bytes; an agent that
                            // reads none for a second is ending.
                            let _ = w.set_write_timeout(Some(Duration::from_secs(1)));
                            let _ = way_back.set(w);
                        }
                        copy_stream(stream, &first, file)
                    });
                flag.store(true, Ordering::Release);
                let _ = tx.send(r);
            })
            .map_err(|e| e.to_string())?;
        Ok(Recorder {
            ended,
            done,
            back,
            serial: 0,
        })
    }

    /// Ask the agent for the allocations counted since the last such
    /// request (ALLOC SITES with `SITES_TAKEN`): summed by the tool in 64
    /// bits, they never fill a record's 32-bit counters over a long
    /// profile. Best effort: a write that fails means the stream ends.
    fn take_sites(&mut self) {
        let Some(mut w) = self.back.get() else { return };
        // Incremental: only the sites that allocated since the last take.
        let req = crate::protocol::Command::AllocSites {
            flags: hprof_core::format::SITES_TAKEN | hprof_core::format::SITES_INCREMENTAL,
            cutoff: 0.0,
        }
        .encode(self.serial);
        self.serial = self.serial.wrapping_add(1);
        let _ = w.write_all(&req);
    }

    fn ended(&self) -> bool {
        self.ended.load(Ordering::Acquire)
    }

    /// The stream's length once it ended, waiting at most `within`.
    fn finish(self, within: Duration) -> CliResult<u64> {
        match self.done.recv_timeout(within) {
            Ok(r) => r,
            Err(_) => Err(format!(
                "the agent did not finish its report within {} s",
                within.as_secs()
            )),
        }
    }
}

/// The first connection on `listener` that proves `secret` (its first
/// line), within `within`: the stream and what was read past the secret.
/// Others are turned away and said on stderr as `who`'s.
pub(crate) fn accept_proven(
    listener: &TcpListener,
    secret: &[u8],
    within: Duration,
    who: &str,
) -> CliResult<(TcpStream, Vec<u8>)> {
    listener
        .set_nonblocking(true)
        .map_err(|e| format!("accept failed: {e}"))?;
    let start = Instant::now();
    loop {
        match listener.accept() {
            Ok((stream, peer)) => {
                let _ = stream.set_nonblocking(false);
                match hprof_ui::gate::prove(stream, secret) {
                    Ok(p) => return Ok((p.stream, p.leftover)),
                    Err(r) => eprintln!("{who}: refused a connection from {peer}: {}", r.why()),
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if start.elapsed() >= within {
                    return Err(format!(
                        "the agent did not connect within {} s",
                        within.as_secs()
                    ));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("accept failed: {e}")),
        }
    }
}

fn copy_stream(mut stream: TcpStream, first: &[u8], file: File) -> CliResult<u64> {
    let mut w = std::io::BufWriter::with_capacity(1 << 16, file);
    w.write_all(first)
        .map_err(|e| format!("cannot record the stream: {e}"))?;
    let mut n = first.len() as u64;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(k) => {
                w.write_all(&buf[..k])
                    .map_err(|e| format!("cannot record the stream: {e}"))?;
                n += k as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            // A peer that vanished ends the stream like a close.
            Err(_) => break,
        }
    }
    w.flush()
        .map_err(|e| format!("cannot record the stream: {e}"))?;
    Ok(n)
}

/// Removes the recorded stream (and a launch's secret directory) however
/// the command ends.
struct Scratch {
    stream: PathBuf,
    secrets: Option<hprof_ui::secrets::Secrets>,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.stream);
        if let Some(s) = &self.secrets {
            s.remove();
        }
    }
}

/// The library the JVM loads: absolute.
fn agent_lib(given: Option<&str>) -> CliResult<String> {
    let p = match given {
        Some(p) => std::path::absolute(p).map_err(|e| format!("cannot resolve {p}: {e}"))?,
        None => tool::bundled::bundled_agent()
            .map_err(|e| format!("{e}; name the agent library with --agent PATH"))?,
    };
    p.into_os_string()
        .into_string()
        .map_err(|p| format!("the agent path {p:?} is not UTF-8"))
}

/// Set by the first SIGINT, SIGTERM or SIGHUP: the profile ends early and
/// is written as at the end of the duration (a second one ends the tool).
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Waits (at most `within`) for a JVM that is still starting to finish
/// its initialisation: its SIGQUIT handler (and so its attach listener)
/// comes up before the VM is live, and an agent attached then cannot get
/// its JVMTI environment. Read from the JVM's perfdata
/// (`sun.rt.vmInitDoneTime`); a JVM whose perfdata cannot be read is not
/// waited for.
fn wait_for_vm_init(pid: u32, within: Duration) {
    use std::os::unix::fs::MetadataExt;
    let Ok(owner) = std::fs::metadata(format!("/proc/{pid}")).map(|m| m.uid()) else {
        return;
    };
    let tmp = PathBuf::from(format!("/proc/{pid}/root/tmp"));
    let start = Instant::now();
    while start.elapsed() < within {
        let done = tool::perfdata::for_process(&tmp, pid, owner)
            .map(|p| p.long("sun.rt.vmInitDoneTime").unwrap_or(1) > 0);
        if done != Some(false) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub fn run(a: ProfileArgs) -> CliResult<()> {
    // Ctrl-C must not leave the profile running in the JVM (a later
    // profile would be refused until a stop): the first signal ends the
    // wait, and the profile is stopped and written as usual.
    hprof_core::os::on_termination(|_| !INTERRUPTED.swap(true, Ordering::AcqRel))?;
    let format = match format_of(&a.out) {
        Ok(f) => f,
        Err(Refused::Usage(e) | Refused::NotYet(e)) => return Err(e),
    };
    let (options, text) = agent_options(a.event, format, a.interval_ms, a.alloc_bytes)?;
    let out = std::path::absolute(&a.out).map_err(|e| format!("cannot resolve {}: {e}", a.out))?;
    // The output's directory must take files before anything starts.
    let mut scratch = Scratch {
        stream: stream_path(&out),
        secrets: None,
    };
    let lib = agent_lib(a.agent.as_deref())?;
    let listener = TcpListener::bind(("127.0.0.1", 0))
        .map_err(|e| format!("cannot open a loopback port for the agent: {e}"))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let progress = Progress {
        quiet: a.quiet,
        tty: std::io::stderr().is_terminal(),
    };
    let what = match a.event {
        Event::Cpu => "CPU samples",
        Event::Alloc => "allocation sites",
        Event::Lock => "monitor contention",
        Event::Wall => "wall-clock samples",
    };

    let began;
    let mut recorder;
    let mut child: Option<Child> = None;
    let pid;
    match &a.target {
        Target::Pid(p) => {
            pid = *p;
            wait_for_vm_init(pid, WAITS.0);
            let secret = hprof_ui::secrets::new_secret()?;
            let full = format!("{options},net=127.0.0.1:{port},token={secret}");
            recorder = Recorder::start(listener, secret.clone(), scratch.stream.clone(), WAITS.1)?;
            let hide = |s: &str| s.replace(&secret, "***");
            let loaded = tool::load(pid, &lib, &full, WAITS, ProtocolChoice::Auto, &mut |s| {
                progress.say(&hide(&s))
            })
            .map_err(|e| hide(&e))?;
            tool::meaning(&loaded, &full).map_err(|e| {
                let e = hide(&e);
                if e.contains("already profiling") {
                    format!("{e} (e.g. hprof-rs attach {pid} stop)")
                } else {
                    e
                }
            })?;
            began = Instant::now();
            progress.say(&format!(
                "profiling JVM {pid} ({what}) for {} s",
                a.duration.unwrap_or(DEFAULT_DURATION).as_secs_f64()
            ));
        }
        Target::Command(argv) => {
            let secrets = hprof_ui::secrets::Secrets::create()?;
            let (secret, file) = secrets.launch_file()?;
            scratch.secrets = Some(secrets);
            let full = format!(
                "{options},net=127.0.0.1:{port},tokenfile={}",
                file.display()
            );
            recorder = Recorder::start(listener, secret, scratch.stream.clone(), WAITS.1)?;
            let c = Command::new(&argv[0])
                .arg(format!("-agentpath:{lib}={full}"))
                .args(&argv[1..])
                .spawn()
                .map_err(|e| format!("cannot start {}: {e}", argv[0]))?;
            pid = c.id();
            child = Some(c);
            began = Instant::now();
            progress.say(&match a.duration {
                Some(d) => format!(
                    "profiling {} (pid {pid}, {what}) until it ends or for {} s",
                    argv[0],
                    d.as_secs_f64()
                ),
                None => format!("profiling {} (pid {pid}, {what}) until it ends", argv[0]),
            });
        }
    }

    // The duration, or until the stream ends (the program ended).
    let limit = match (&a.target, a.duration) {
        (_, Some(d)) => Some(d),
        (Target::Pid(_), None) => Some(DEFAULT_DURATION),
        (Target::Command(_), None) => None,
    };
    let mut program_status = None;
    // The tool's readers sum the takes (hprof_analysis::allocated); the
    // agent's own reports (.txt, .hprof) keep the format's meaning:
    // counts from the start.
    let takes_sites = a.event == Event::Alloc && !matches!(format, Format::Txt | Format::Hprof);
    let mut last_take = Instant::now();
    loop {
        if let Some(c) = child.as_mut() {
            if let Ok(Some(st)) = c.try_wait() {
                program_status = Some(st);
                break;
            }
        }
        if recorder.ended() {
            break;
        }
        if INTERRUPTED.load(Ordering::Acquire) {
            progress.say("interrupted: ending the profile now (again to quit at once)");
            break;
        }
        let elapsed = began.elapsed();
        match limit {
            Some(l) if elapsed >= l => break,
            Some(l) => progress.tick(&format!("profiling {pid}"), l - elapsed),
            None => {}
        }
        if takes_sites && last_take.elapsed() >= TAKE_SITES_EVERY {
            recorder.take_sites();
            last_take = Instant::now();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    progress.clear();
    let ended_at = Instant::now();

    if !recorder.ended() && program_status.is_none() {
        // The duration is over and the JVM runs: stop the profile there,
        // a take first so the final report holds only the time the stop
        // takes.
        if takes_sites {
            recorder.take_sites();
        }
        let loaded = tool::load(pid, &lib, "stop", WAITS, ProtocolChoice::Auto, &mut |s| {
            progress.say(&s)
        })?;
        tool::meaning(&loaded, "stop")?;
    } else if program_status.is_none() && child.is_none() {
        progress.say(&format!(
            "the agent's stream ended before the duration: JVM {pid} has ended?"
        ));
    }
    let bytes = recorder.finish(REPORT_WITHIN)?;
    if bytes == 0 {
        return Err(format!("the agent in JVM {pid} sent nothing"));
    }
    let summary = write_output(&scratch.stream, &out, format, a.event, text)?;
    progress.say(&format!(
        "wrote {} ({summary}) {:.2} s after the profile ended",
        out.display(),
        ended_at.elapsed().as_secs_f64()
    ));
    drop(scratch);
    if let Some(mut c) = child {
        let st = match program_status {
            Some(st) => st,
            None => {
                progress.say(&format!(
                    "the program (pid {pid}) runs on; waiting for it to end"
                ));
                c.wait()
                    .map_err(|e| format!("waiting for pid {pid}: {e}"))?
            }
        };
        if !st.success() {
            progress.say(&format!("the program ended with {st}"));
        }
    } else {
        progress.say(&format!("JVM {pid} runs on, without the profile"));
    }
    Ok(())
}

/// Turn the recorded stream into the output; a few words on what it holds.
fn write_output(
    stream: &Path,
    out: &Path,
    format: Format,
    event: Event,
    text: bool,
) -> CliResult<String> {
    let shown = out.display().to_string();
    let write =
        |bytes: &[u8]| std::fs::write(out, bytes).map_err(|e| format!("cannot write {shown}: {e}"));
    if matches!(format, Format::Txt | Format::Hprof) {
        std::fs::copy(stream, out).map_err(|e| format!("cannot write {shown}: {e}"))?;
        return Ok(format!(
            "the agent's {} report",
            if text { "text" } else { "binary" }
        ));
    }
    let open = || {
        File::open(stream)
            .map(|f| BufReader::with_capacity(1 << 16, f))
            .map_err(|e| format!("cannot read the recorded stream: {e}"))
    };
    if matches!(format, Format::Pprof | Format::Jfr) {
        let form = if text {
            hprof_analysis::input::Form::Text
        } else {
            hprof_analysis::input::Form::Binary
        };
        let mut session = hprof_analysis::session::feed::read_input(&shown, form, open()?)?;
        hprof_analysis::session::feed::date_by_file(&mut session, stream);
        if let Some(note) = session.allocated.note() {
            eprintln!("hprof-rs profile: {note}");
        }
        if format == Format::Jfr {
            write(&hprof_analysis::jfr::encode(&session)?)?;
            return Ok("a JFR recording".into());
        }
        let raw = hprof_analysis::pprof::encode(&session)?;
        write(&hprof_analysis::pprof::gzip(&raw)?)?;
        return Ok("gzipped pprof".into());
    }
    let f = match event {
        Event::Cpu | Event::Wall if text => flame::collapse_text(open()?, false)?,
        Event::Cpu | Event::Wall => flame::collapse_binary(open()?, false)?,
        Event::Alloc => flame::sites::collapse_sites_binary(open()?)?,
        Event::Lock => flame::monitors::collapse_monitors_text(open()?)?,
    };
    for note in f.notes() {
        eprintln!("hprof-rs profile: {note}");
    }
    let total = f.tree.root().total[0];
    let title = match event {
        Event::Wall => "Wall-clock samples",
        _ => f.measure.title(),
    };
    match format {
        Format::Html => write(flame::html(&f, title).as_bytes())?,
        Format::Svg => write(flame::svg(&f, title).as_bytes())?,
        _ => {
            let mut text = Vec::new();
            f.write_collapsed(&mut text)
                .map_err(|e| format!("cannot write {shown}: {e}"))?;
            write(&text)?
        }
    }
    Ok(format!("{total} {}", f.measure.unit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_units_or_seconds() {
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("30").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("0.5").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("1h").unwrap(), Duration::from_secs(3600));
        for bad in [
            "", "0", "-3s", "3x", "s", "inf", "NaN", "1e400", "25h", "3 s s",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_format_is_the_extension() {
        assert_eq!(format_of("x.html").unwrap(), Format::Html);
        assert_eq!(format_of("X.HTML").unwrap(), Format::Html);
        assert_eq!(format_of("a/b.svg").unwrap(), Format::Svg);
        assert_eq!(format_of("x.collapsed").unwrap(), Format::Collapsed);
        assert_eq!(format_of("x.pprof").unwrap(), Format::Pprof);
        assert_eq!(format_of("x.pb.gz").unwrap(), Format::Pprof);
        assert_eq!(format_of("x.txt").unwrap(), Format::Txt);
        assert_eq!(format_of("x.hprof").unwrap(), Format::Hprof);
        assert_eq!(format_of("x.jfr").unwrap(), Format::Jfr);
        for bad in ["x.png", "x", "x.gz", "x.html.bak"] {
            assert!(
                matches!(format_of(bad), Err(Refused::Usage(e)) if e.contains("extension")),
                "{bad}"
            );
        }
    }

    #[test]
    fn allocation_intervals_take_bytes_with_binary_units_up_to_the_jvms_limit() {
        assert_eq!(parse_bytes("524288"), Ok(524_288));
        assert_eq!(parse_bytes("512k"), Ok(524_288));
        assert_eq!(parse_bytes(" 64K "), Ok(65_536));
        assert_eq!(parse_bytes("1m"), Ok(1 << 20));
        assert_eq!(parse_bytes("1"), Ok(1));
        assert_eq!(parse_bytes("2147483647"), Ok(MAX_ALLOC_INTERVAL));
        assert_eq!(parse_bytes("64KB"), Ok(65_536));
        assert_eq!(parse_bytes("64 KiB"), Ok(65_536));
        assert_eq!(parse_bytes("1MiB"), Ok(1 << 20));
        assert_eq!(parse_bytes("1gb"), Ok(1 << 30));
        assert_eq!(parse_bytes("100b"), Ok(100));
        // Too long for 64 bits is too big, not "not a size".
        let e = parse_bytes("99999999999999999999").unwrap_err();
        assert!(e.contains("at most 2147483647"), "{e}");
        assert!(parse_bytes("-1").unwrap_err().contains("not a size"));
        assert!(parse_bytes("0").unwrap_err().contains("at least 1 byte"));
        for bad in [
            "+5",
            "5 5",
            "0x10",
            "1e6",
            "kk",
            "1kbb",
            "0",
            "0k",
            "2g",
            "2147483648",
            "",
            "k",
            "-1",
            "1.5m",
            "1t",
            "99999999999999999999",
            "18014398509481984k",
        ] {
            assert!(parse_bytes(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn each_event_has_a_cheap_option_set_the_agent_accepts() {
        for (e, f) in [
            (Event::Cpu, Format::Html),
            (Event::Cpu, Format::Txt),
            (Event::Alloc, Format::Pprof),
            (Event::Lock, Format::Collapsed),
        ] {
            let (o, text) = agent_options(e, f, None, None).unwrap();
            let parsed = hprof_core::options::parse(&o).unwrap();
            assert_eq!(text, e == Event::Lock || f == Format::Txt, "{o}");
            if e == Event::Alloc {
                assert!(parsed.heap_sample_bytes > 0, "sampled: {o}");
            }
        }
        let (o, _) = agent_options(Event::Wall, Format::Html, None, None).unwrap();
        let parsed = hprof_core::options::parse(&o).unwrap();
        assert_eq!(parsed.cpu_sampler, hprof_core::options::CpuSampler::Wall);
        assert_eq!(parsed.interval_ms, WALL_INTERVAL_MS);
        assert!(check(Event::Wall, Format::Jfr, None, None).is_err());
        assert!(check(Event::Wall, Format::Pprof, Some(5), None).is_ok());
        assert!(check(Event::Lock, Format::Hprof, None, None).is_err());
        assert!(check(Event::Lock, Format::Pprof, None, None).is_err());
        assert!(check(Event::Alloc, Format::Html, Some(1), None).is_err());
        assert!(check(Event::Cpu, Format::Html, Some(1), None).is_ok());
        assert!(check(Event::Alloc, Format::Html, None, Some(65536)).is_ok());
        assert!(check(Event::Cpu, Format::Html, None, Some(65536)).is_err());
        let (o, _) = agent_options(Event::Alloc, Format::Jfr, None, Some(65536)).unwrap();
        assert_eq!(
            hprof_core::options::parse(&o).unwrap().heap_sample_bytes,
            65536
        );
    }
}
