//! The agent's option string: `-agentlib:hprof=OPTS` / `-Xrunhprof:OPTS`.
//!
//! Start-up sequence expected from the agent:
//!
//! 1. if [`is_help_request`] on the raw command-line string, print
//!    [`help_text`] to stdout and exit 0;
//! 2. [`combine_with_env`] with the value of [`ENV_VAR`];
//! 3. [`parse`] the combined string; on error print
//!    `HPROF ERROR: <error>` plus a location suffix to stderr and exit 1
//!    (see [`OptionError`] for the `errorexit` case).
//!
//! Parsing only validates and records; which profiles are implemented, and
//! how, is decided by the agent.

mod cnum;
mod error;
mod help;
mod naming;
pub mod push;
mod tokenizer;
mod values;

#[cfg(test)]
mod tests;

pub use error::OptionError;
pub use help::help_text;
pub use naming::{unique_file_name, DEFAULT_BINARY_FILE, DEFAULT_TEXT_FILE, HEAP_TEMP_SUFFIX};

use tokenizer::Tokenizer;
use values::Bound;

/// Environment variable whose value is appended to the option string.
pub const ENV_VAR: &str = "_JAVA_HPROF_OPTIONS";

/// Default maximum number of frames per trace (`depth`).
pub const DEFAULT_DEPTH: u32 = 4;
/// Default sampling interval in milliseconds (`interval`).
pub const DEFAULT_INTERVAL_MS: u32 = 10;
/// Default report cutoff ratio (`cutoff`).
pub const DEFAULT_CUTOFF: f64 = 0.0001;
/// What the `hprof-rs` tool profiles with when no options are given
/// (`hprof-rs attach PID`, the UI's forms): CPU samples and sampled
/// allocation sites, both about the cost of no agent. The agent's own
/// default (no profile named) is the original's `heap=all`, which tracks
/// every allocation exactly and walks the heap at each dump.
pub const TOOL_DEFAULT_OPTIONS: &str = "cpu=samples,heap=sites,heapsample=524288";
/// Trace depth used for timing traces with `cpu=old`.
pub const OLD_FORMAT_DEPTH: u32 = 2;

/// `logflags` bit: verbose internal logging to stderr.
pub const LOG_MISC: u32 = 0x1;
/// `logflags` bit: print the internal tables at VM init and after VM death.
pub const LOG_DUMP_TABLES: u32 = 0x2;
/// `logflags` bit: verify a finished binary heap dump and render it to
/// [`CHECK_FILE_NAME`].
pub const LOG_CHECK_BINARY: u32 = 0x4;
/// File written by the [`LOG_CHECK_BINARY`] verification (current directory).
pub const CHECK_FILE_NAME: &str = "java.hprof.check.txt";
/// `debugflags` bit: report references of unprepared classes in heap dumps.
pub const DEBUG_UNPREPARED_REFS: u32 = 0x1;

/// CONTROL SETTINGS flag: heap dump or allocation sites enabled.
pub const CONTROL_ALLOC_TRACES: u32 = 0x1;
/// CONTROL SETTINGS flag: CPU sampling enabled.
pub const CONTROL_CPU_SAMPLING: u32 = 0x2;

/// Output format (`format=a|b`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Format {
    /// Text output (`format=a`).
    #[default]
    Ascii,
    /// Binary HPROF stream (`format=b`).
    Binary,
}

/// Which dumper writes `heap=dump` heap dumps (`dumper=vm|jvmti`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum HeapDumper {
    /// The VM's own dumper where the JVM has one (HotSpot) and the dump
    /// needs nothing only the walk gives (allocation traces of objects with
    /// `heap=all`); the JVMTI walk otherwise.
    #[default]
    Vm,
    /// Always the agent's JVMTI heap walk.
    Jvmti,
}

/// How `cpu=samples` takes its samples (`cpusampler=`, docs/cpu-samples.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CpuSampler {
    /// Per-thread CPU-time timers; the stack is walked where the thread
    /// runs (AsyncGetCallTrace in the timer's signal handler).
    #[default]
    Async,
    /// Per-thread CPU-time timers choose the threads; their stacks are
    /// taken at the next safepoint (JVMTI).
    Safepoint,
    /// The original's rule: every `interval` ms, every RUNNABLE thread,
    /// stacks at a safepoint, whether it used CPU or not.
    Runnable,
    /// Wall-clock samples: every Java thread is signalled after each
    /// `interval` of real time, running, blocked, waiting or asleep, and its
    /// stack walked where it is (not CPU time: docs/cpu-samples.md,
    /// "Wall-clock samples").
    Wall,
}

/// The clock `cpu=times|old` charges methods with (`clock=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TimingClock {
    /// The thread's CPU time: blocked, waiting, parked and sleeping time
    /// is not charged.
    #[default]
    Cpu,
    /// Wall-clock time (the original's rule on Linux).
    Wall,
}

/// Destination of `net=HOST:PORT`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NetAddr {
    /// Everything before the first `:`, verbatim (never empty).
    pub host: String,
    /// 1..=65535.
    pub port: u16,
}

/// Where `listen=[HOST:]PORT` waits for front-ends (docs/socket-protocol.md,
/// "The agent listens").
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ListenAddr {
    /// The address to bind: `127.0.0.1` unless a host was given (IPv6
    /// addresses in brackets, which are removed here).
    pub host: String,
    /// 1..=65535.
    pub port: u16,
}

impl ListenAddr {
    /// True when the address is one only this machine reaches (the agent
    /// warns about any other, docs/socket-protocol.md).
    pub fn is_loopback(&self) -> bool {
        match self.host.parse::<std::net::IpAddr>() {
            Ok(ip) => ip.is_loopback(),
            Err(_) => self.host == "localhost",
        }
    }
}

/// The shared secret a front-end must send first (`token=` or
/// `tokenfile=`).
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum TokenSource {
    /// `token=SECRET`, as given.
    Inline(String),
    /// `tokenfile=PATH`: the secret is the file's first line, read by the
    /// agent when it starts.
    File(String),
}

/// Never prints the secret itself (option dumps, logs).
impl std::fmt::Debug for TokenSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TokenSource::Inline(_) => f.write_str("Inline(<hidden>)"),
            TokenSource::File(p) => write!(f, "File({p:?})"),
        }
    }
}

/// Parsed and validated options.
///
/// After [`parse`], the default-profile rule has been applied: if no
/// profile was requested at all, `heap_dump` and `heap_sites` are both on.
/// `cpu_times` and `cpu_old` are never both set (the last `cpu=times|old`
/// wins), while `cpu_samples` is independent of them.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// `heap=dump|all`: heap dump.
    pub heap_dump: bool,
    /// `heap=sites|all`: allocation sites.
    pub heap_sites: bool,
    /// `cpu=samples|y`: CPU sampling.
    pub cpu_samples: bool,
    /// `cpu=times`: method timing reported as CPU TIME (ms).
    pub cpu_times: bool,
    /// `cpu=old`: method timing reported in the old prof format.
    pub cpu_old: bool,
    /// `monitor=y`.
    pub monitor: bool,
    /// `format=a|b`.
    pub format: Format,
    /// `file=NAME` exactly as given (`None`: default name or `net`).
    pub file: Option<String>,
    /// `net=HOST:PORT`.
    pub net: Option<NetAddr>,
    /// `listen=[HOST:]PORT`: the agent waits for front-ends (instead of
    /// connecting to one with `net=`).
    pub listen: Option<ListenAddr>,
    /// `token=` / `tokenfile=`: the secret a `listen=` front-end must send,
    /// or that the agent sends first on its `net=` connection.
    pub token: Option<TokenSource>,
    /// `depth`: maximum frames per trace.
    pub depth: u32,
    /// `interval`: sampling interval in milliseconds (> 0).
    pub interval_ms: u32,
    /// `cpusampler`: how cpu=samples samples.
    pub cpu_sampler: CpuSampler,
    /// `clock`: what cpu=times|old measures.
    pub timing_clock: TimingClock,
    /// `cutoff`: report cutoff ratio (>= 0, may be infinite or NaN).
    pub cutoff: f64,
    /// `lineno`: show line numbers in traces.
    pub lineno: bool,
    /// `thread`: distinguish traces per thread.
    pub thread: bool,
    /// `doe`: dump on exit.
    pub doe: bool,
    /// `msa`: Solaris micro-state accounting (no effect elsewhere).
    pub msa: bool,
    /// `force`: overwrite the output file (`false`: derive a unique name).
    pub force: bool,
    /// `verbose`: progress messages about dumps on stderr.
    pub verbose: bool,
    /// `gc_okay`: obsolete, validated and ignored.
    pub gc_okay: bool,
    /// `primfields`: include primitive field values in heap dumps.
    pub primfields: bool,
    /// `primarrays`: include primitive array contents in heap dumps.
    pub primarrays: bool,
    /// `coredump`: abort instead of `exit(9)` on fatal errors.
    pub coredump: bool,
    /// `errorexit`: treat every error as fatal.
    pub errorexit: bool,
    /// `pause`: pause at start-up for a debugger.
    pub pause: bool,
    /// `debug`: extra checking; fatal errors dump core.
    pub debug: bool,
    /// `logflags` mask (see the `LOG_*` constants).
    pub logflags: u32,
    /// `debugflags` mask (see [`DEBUG_UNPREPARED_REFS`]).
    pub debugflags: u32,
    /// `X` mask: experiment bits, accepted and ignored.
    pub x_mask: u32,
    /// `heapsample`: 0 = track every allocation; otherwise mean sampling
    /// interval in bytes (at most `i32::MAX`).
    pub heap_sample_bytes: u64,
    /// `gcbeforedump`: force a full GC before each report.
    pub gc_before_dump: bool,
    /// `idsize`: identifier size of binary output, 4 or 8. Without the
    /// option: 8 when heap dumps come from the VM's dumper (whose
    /// identifiers are 8-byte addresses), else 4.
    pub id_size: u8,
    /// `dumper`: which dumper writes heap dumps.
    pub dumper: HeapDumper,
    /// `arraylen`: object arrays carry their true length.
    /// `sitesorder=alloc`: SITES of dumps ordered by allocated bytes, and
    /// rows kept when they allocate or retain enough (docs/alloc_sites.md).
    pub sites_by_alloc: bool,
    pub true_array_len: bool,
    /// `rootzero`: write the pseudo thread root with object ID 0.
    pub pseudo_root: bool,
    /// `push=URL`: send each interval's profile to a Pyroscope-compatible
    /// server (docs/push.md).
    pub push: Option<push::PushTarget>,
    /// `pushinterval=SECONDS`.
    pub push_interval_s: u32,
    /// `pushapp=NAME` (None: the main class's simple name, or `java`).
    pub push_app: Option<String>,
    /// `pushlabels=KEY:VALUE+...`.
    pub push_labels: Vec<(String, String)>,
    /// The combined option string, as echoed in error messages.
    pub raw: String,
}

/// True if the command-line option string (before adding [`ENV_VAR`]) is
/// exactly `help`.
pub fn is_help_request(cmdline: &str) -> bool {
    cmdline == "help"
}

/// Appends the value of [`ENV_VAR`] to the command-line option string,
/// separated by one `,` when both are non-empty.
pub fn combine_with_env(cmdline: &str, env: Option<&str>) -> String {
    match env {
        Some(extra) if !extra.is_empty() && !cmdline.is_empty() => format!("{cmdline},{extra}"),
        Some(extra) if !extra.is_empty() => extra.to_string(),
        _ => cmdline.to_string(),
    }
}

/// Options the original had and this agent refuses, with why.
const REMOVED_OPTIONS: [(&str, &str); 2] = [
    (
        "exitpause",
        "The exitpause option was removed, use -XX:OnError='cmd %%p'",
    ),
    (
        "precrash",
        "The precrash option was removed, use -XX:OnError='precrash -p %%p'",
    ),
];

fn unknown_option(name: &str) -> String {
    format!("Unknown option: {name}")
}

/// `Some(NAME)` when the option string is exactly the name of an option
/// (every option takes a value), with no `=VALUE`: what the agent receives
/// from `jcmd PID JVMTI.agent_load LIB NAME=VALUE,...` when the option
/// string is not quoted, since jcmd's argument parser cuts it at its first
/// `=` (docs/attach.md). Anything else is `None`, so other mistakes keep
/// their own message.
pub fn cut_by_jcmd(cmdline: &str) -> Option<&str> {
    if cmdline.is_empty() || cmdline.contains(['=', ',']) {
        return None;
    }
    // The parser itself says whether it knows the name: a known option
    // fails on its missing value, an unknown or removed one as such.
    let mut probe = Options::unprofiled("");
    match probe.apply(cmdline, &mut Tokenizer::new("")) {
        Err(e) if e == unknown_option(cmdline) => None,
        _ if REMOVED_OPTIONS.iter().any(|(n, _)| *n == cmdline) => None,
        _ => Some(cmdline),
    }
}

/// The refusal for a [`cut_by_jcmd`] option string: what happened and the
/// quoted command, for the JVM `pid` and the agent library `library`.
pub fn cut_by_jcmd_message(name: &str, pid: u32, library: &str) -> String {
    format!(
        "the option string is just \"{name}\", without a value: jcmd cuts an unquoted option \
         string at its first '=' and passes only what comes before it; give jcmd the whole \
         string in double quotes, quoted again for the shell: \
         jcmd {pid} JVMTI.agent_load {library} '\"{name}=...\"' (or: hprof-rs attach {pid} {name}=...)"
    )
}

/// Parses the combined option string. Stops at the first error.
pub fn parse(combined: &str) -> Result<Options, OptionError> {
    let mut opts = Options::unprofiled(combined);
    let mut tokens = Tokenizer::new(combined);
    let mut outcome = Ok(());
    while outcome.is_ok() && !tokens.at_end() {
        outcome = match tokens.name() {
            Some(name) => opts.apply(name, &mut tokens),
            None => Err("general syntax error parsing options".to_string()),
        };
    }
    if let Err(description) = outcome.and_then(|()| opts.check_conflicts()) {
        return Err(OptionError {
            description,
            options: redact_token(combined),
            errorexit: opts.errorexit,
            dump_core: opts.dumps_core(),
        });
    }
    opts.apply_default_profile();
    opts.choose_id_size();
    Ok(opts)
}

/// `combined` with the value of every `token=` replaced by `***`: option
/// errors echo the whole string on the JVM's standard error, and the
/// secret must not end up there (nor in a log that collects it).
pub fn redact_token(combined: &str) -> String {
    let mut out = String::with_capacity(combined.len());
    let mut rest = combined;
    // Options are `name=value` separated by commas; a name may follow a
    // comma or start the string.
    loop {
        let at_token = rest.starts_with("token=");
        if at_token && !rest["token=".len()..].starts_with(',') && rest.len() > "token=".len() {
            out.push_str("token=***");
            rest = &rest["token=".len()..];
            match rest.find(',') {
                Some(i) => rest = &rest[i..],
                None => return out,
            }
        }
        match rest.find(',') {
            Some(i) => {
                out.push_str(&rest[..=i]);
                rest = &rest[i + 1..];
            }
            None => {
                out.push_str(rest);
                return out;
            }
        }
    }
}

/// True if the option string of a load is exactly `stop`: the request to
/// stop the profiling that runs (docs/attach.md, "The agent in a running JVM").
pub fn is_stop_request(cmdline: &str) -> bool {
    cmdline == "stop"
}

/// Which timing report `cpu=` selects.
#[derive(Debug, Clone, Copy)]
enum Cpu {
    Samples,
    Times,
    Old,
}

impl Options {
    /// All defaults, no profile selected yet, remembering `raw`.
    fn unprofiled(raw: &str) -> Options {
        Options {
            heap_dump: false,
            heap_sites: false,
            cpu_samples: false,
            cpu_times: false,
            cpu_old: false,
            monitor: false,
            format: Format::Ascii,
            file: None,
            net: None,
            listen: None,
            token: None,
            depth: DEFAULT_DEPTH,
            interval_ms: DEFAULT_INTERVAL_MS,
            cpu_sampler: CpuSampler::Async,
            timing_clock: TimingClock::Cpu,
            cutoff: DEFAULT_CUTOFF,
            lineno: true,
            thread: false,
            doe: true,
            msa: false,
            force: true,
            verbose: true,
            gc_okay: true,
            primfields: true,
            primarrays: true,
            coredump: false,
            errorexit: false,
            pause: false,
            debug: false,
            logflags: 0,
            debugflags: 0,
            x_mask: 0,
            heap_sample_bytes: 0,
            gc_before_dump: true,
            id_size: 0,
            dumper: HeapDumper::Vm,
            true_array_len: false,
            sites_by_alloc: false,
            pseudo_root: true,
            push: None,
            push_interval_s: push::DEFAULT_PUSH_INTERVAL_S,
            push_app: None,
            push_labels: Vec::new(),
            raw: raw.to_string(),
        }
    }

    /// The field behind a `y|n` option.
    fn flag_mut(&mut self, name: &str) -> Option<&mut bool> {
        Some(match name {
            "monitor" => &mut self.monitor,
            "lineno" => &mut self.lineno,
            "thread" => &mut self.thread,
            "doe" => &mut self.doe,
            "msa" => &mut self.msa,
            "force" => &mut self.force,
            "verbose" => &mut self.verbose,
            "gc_okay" => &mut self.gc_okay,
            "primfields" => &mut self.primfields,
            "primarrays" => &mut self.primarrays,
            "coredump" => &mut self.coredump,
            "errorexit" => &mut self.errorexit,
            "pause" => &mut self.pause,
            "debug" => &mut self.debug,
            "gcbeforedump" => &mut self.gc_before_dump,
            "arraylen" => &mut self.true_array_len,
            "rootzero" => &mut self.pseudo_root,
            _ => return None,
        })
    }

    /// The field behind a bit-mask option.
    fn mask_mut(&mut self, name: &str) -> Option<&mut u32> {
        Some(match name {
            "logflags" => &mut self.logflags,
            "debugflags" => &mut self.debugflags,
            "X" => &mut self.x_mask,
            _ => return None,
        })
    }

    /// Applies one option whose name has been read; reads its value from
    /// `tokens`. Returns the error description on failure.
    fn apply(&mut self, name: &str, tokens: &mut Tokenizer<'_>) -> Result<(), String> {
        if let Some(flag) = self.flag_mut(name) {
            *flag = values::yes_no(name, tokens.value())?;
            return Ok(());
        }
        if let Some(mask) = self.mask_mut(name) {
            *mask = values::mask(name, tokens.value())?;
            return Ok(());
        }
        match name {
            "heap" => {
                let choices = [
                    ("dump", (true, false)),
                    ("sites", (false, true)),
                    ("all", (true, true)),
                ];
                let (dump, sites) = values::one_of(name, tokens.value(), &choices)?;
                self.heap_dump |= dump;
                self.heap_sites |= sites;
            }
            "cpu" => {
                let choices = [
                    ("y", Cpu::Samples),
                    ("samples", Cpu::Samples),
                    ("times", Cpu::Times),
                    ("old", Cpu::Old),
                ];
                match values::one_of(name, tokens.value(), &choices)? {
                    Cpu::Samples => self.cpu_samples = true,
                    Cpu::Times => (self.cpu_times, self.cpu_old) = (true, false),
                    Cpu::Old => (self.cpu_times, self.cpu_old) = (false, true),
                }
            }
            "format" => {
                self.format = values::one_of(
                    name,
                    tokens.value(),
                    &[("a", Format::Ascii), ("b", Format::Binary)],
                )?;
            }
            "file" | "net" if self.file.is_some() || self.net.is_some() => {
                return Err("file or net options should only appear once".to_string());
            }
            "file" => {
                let file = tokens.value().ok_or("syntax error parsing file=filename")?;
                self.file = Some(file.to_string());
            }
            "net" => self.net = Some(values::net(tokens.value())?),
            "listen" if self.listen.is_some() => {
                return Err("listen option should only appear once".to_string());
            }
            "listen" => self.listen = Some(values::listen(tokens.value())?),
            "token" | "tokenfile" if self.token.is_some() => {
                return Err("token or tokenfile options should only appear once".to_string());
            }
            "token" => {
                let t = tokens.value().ok_or("syntax error parsing token=SECRET")?;
                self.token = Some(TokenSource::Inline(t.to_string()));
            }
            "tokenfile" => {
                let f = tokens
                    .value()
                    .ok_or("syntax error parsing tokenfile=filename")?;
                self.token = Some(TokenSource::File(f.to_string()));
            }
            "depth" => self.depth = values::decimal(name, tokens.value(), Bound::NonNegative)?,
            "interval" => {
                self.interval_ms = values::decimal(name, tokens.value(), Bound::Positive)?
            }
            "cutoff" => self.cutoff = values::real(name, tokens.value())?,
            "cpusampler" => {
                self.cpu_sampler = values::one_of(
                    name,
                    tokens.value(),
                    &[
                        ("async", CpuSampler::Async),
                        ("safepoint", CpuSampler::Safepoint),
                        ("runnable", CpuSampler::Runnable),
                        ("wall", CpuSampler::Wall),
                    ],
                )?
            }
            "clock" => {
                self.timing_clock = values::one_of(
                    name,
                    tokens.value(),
                    &[("cpu", TimingClock::Cpu), ("wall", TimingClock::Wall)],
                )?
            }
            "heapsample" => {
                self.heap_sample_bytes =
                    values::decimal(name, tokens.value(), Bound::NonNegative)?.into();
            }
            "idsize" => self.id_size = values::one_of(name, tokens.value(), &[("4", 4), ("8", 8)])?,
            "dumper" => {
                self.dumper = values::one_of(
                    name,
                    tokens.value(),
                    &[("vm", HeapDumper::Vm), ("jvmti", HeapDumper::Jvmti)],
                )?
            }
            "push" if self.push.is_some() => {
                return Err("push option should only appear once".to_string());
            }
            "push" => self.push = Some(push::target(tokens.value())?),
            "pushinterval" => self.push_interval_s = push::interval(tokens.value())?,
            "pushapp" => self.push_app = Some(push::app(tokens.value())?),
            "pushlabels" => self.push_labels = push::labels(tokens.value())?,
            "sitesorder" => {
                self.sites_by_alloc =
                    values::one_of(name, tokens.value(), &[("live", false), ("alloc", true)])?
            }
            _ => {
                return Err(match REMOVED_OPTIONS.iter().find(|(n, _)| *n == name) {
                    Some((_, why)) => why.to_string(),
                    None => unknown_option(name),
                })
            }
        }
        Ok(())
    }

    /// Combinations rejected after the whole string has been read.
    fn check_conflicts(&self) -> Result<(), String> {
        if self.net.is_some() && self.listen.is_some() {
            Err("net and listen options cannot be combined".to_string())
        } else if self.token.is_some() && self.listen.is_none() && self.net.is_none() {
            Err("token and tokenfile need the listen or net option".to_string())
        } else if self.listen.is_some()
            && self
                .file
                .as_deref()
                .is_some_and(|f| f.to_ascii_lowercase().ends_with(".gz"))
        {
            // What a new front-end is sent first is read back from the
            // file: a compressed one cannot be.
            Err("listen cannot record to a compressed (.gz) file".to_string())
        } else if self.push.is_none()
            && (self.push_app.is_some()
                || !self.push_labels.is_empty()
                || self.push_interval_s != push::DEFAULT_PUSH_INTERVAL_S)
        {
            Err("pushinterval, pushapp and pushlabels need the push option".to_string())
        } else if self.push.is_some()
            && (self.cpu_timing() || self.monitor)
            && !self.cpu_samples
            && !self.heap_sites
        {
            Err("push sends cpu=samples and heap=sites profiles: give one of them".to_string())
        } else if self.format == Format::Binary && self.cpu_timing() {
            Err("cpu=times|old is not supported with format=b".to_string())
        } else if self.format == Format::Binary && self.monitor {
            Err("monitor=y is not supported with format=b".to_string())
        } else if self.cpu_sampler == CpuSampler::Wall
            && self.cpu_timing()
            && self.timing_clock == TimingClock::Cpu
        {
            // One timer per thread drives both: on the wall clock it cannot
            // also be cpu=times' CPU clock.
            Err("cpusampler=wall cannot be combined with cpu=times|old on clock=cpu (use clock=wall, or a separate run)".to_string())
        } else {
            Ok(())
        }
    }

    /// `idsize` when not given: 8 when heap dumps may come from the VM's
    /// dumper (binary output, `heap=dump` without allocation sites,
    /// `dumper=vm`), since its identifiers are 8-byte addresses; else the
    /// original's 4.
    fn choose_id_size(&mut self) {
        if self.id_size == 0 {
            self.id_size = if self.vm_dumper_wanted() && self.format == Format::Binary {
                8
            } else {
                4
            };
        }
    }

    /// Heap dumps should come from the VM's dumper where it has one: the
    /// walk is not asked for, and objects need no allocation traces (which
    /// only the walk gives, with `heap=all`).
    pub fn vm_dumper_wanted(&self) -> bool {
        self.heap_dump && !self.heap_sites && self.dumper == HeapDumper::Vm
    }

    /// `heap=all` when no profile at all was requested.
    fn apply_default_profile(&mut self) {
        if !(self.cpu_samples || self.cpu_timing() || self.monitor || self.object_watching()) {
            self.heap_dump = true;
            self.heap_sites = true;
        }
    }

    /// Method timing of either flavour (`cpu=times` or `cpu=old`).
    pub fn cpu_timing(&self) -> bool {
        self.cpu_times || self.cpu_old
    }

    /// True when method entry/exit timing needs byte-code injection
    /// (`cpu=times|old`). The original agent also injected code for object
    /// watching; whether allocation tracking does so is the agent's choice
    /// (combine with [`Self::object_watching`]).
    pub fn needs_injection(&self) -> bool {
        self.cpu_timing()
    }

    /// True when the output goes to a file the user named or the default
    /// one, false with `net=` and with `listen=` without `file=` (the
    /// stream is then only recorded in a private temporary file).
    pub fn writes_user_file(&self) -> bool {
        self.net.is_none() && (self.listen.is_none() || self.file.is_some())
    }

    /// Heap dump or allocation sites: objects must be tracked.
    pub fn object_watching(&self) -> bool {
        self.heap_dump || self.heap_sites
    }

    /// Flags of the binary CONTROL SETTINGS record.
    pub fn control_flags(&self) -> u32 {
        let mut flags = 0;
        if self.object_watching() {
            flags |= CONTROL_ALLOC_TRACES;
        }
        if self.cpu_samples {
            flags |= CONTROL_CPU_SAMPLING;
        }
        flags
    }

    /// Depth of method-timing traces: [`OLD_FORMAT_DEPTH`] with `cpu=old`,
    /// otherwise `depth`.
    pub fn timing_depth(&self) -> u32 {
        if self.cpu_old {
            OLD_FORMAT_DEPTH
        } else {
            self.depth
        }
    }

    /// Whether the fatal-error path aborts (core dump) instead of exiting 9.
    pub fn dumps_core(&self) -> bool {
        self.coredump || self.debug
    }

    /// Allocation sites are sampled (`heapsample` > 0) rather than exact.
    pub fn sampled_allocations(&self) -> bool {
        self.heap_sample_bytes > 0
    }

    /// What these options cost the program that it should be told when
    /// profiling starts (docs/alloc_sites.md, "Cost"): one sentence each.
    pub fn cost_warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if self.heap_sites && !self.sampled_allocations() {
            let which = if self.heap_dump {
                "heap=all (also the default when no profile is named)"
            } else {
                "heap=sites without heapsample="
            };
            w.push(format!(
                "{which} tracks every allocation exactly: code that allocates runs 5 to 50 times \
                 slower (55 times on Rhino), and each report forces a full garbage collection; \
                 heapsample=524288 estimates the same sites at about the cost of no agent"
            ));
        }
        w
    }

    /// `logflags` bit 0x4 with a binary heap dump: verify the output at exit
    /// and render it to [`CHECK_FILE_NAME`].
    pub fn check_binary_output(&self) -> bool {
        self.logflags & LOG_CHECK_BINARY != 0 && self.format == Format::Binary && self.heap_dump
    }
}

impl Default for Options {
    /// The options of an empty option string (`heap=all`, text output).
    fn default() -> Self {
        let mut opts = Options::unprofiled("");
        opts.apply_default_profile();
        opts.choose_id_size();
        opts
    }
}
