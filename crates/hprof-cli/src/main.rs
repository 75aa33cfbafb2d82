//! `hprof-rs`: front-end tool for the hprof-rs agent and HPROF files.
//! See docs/hprof-rs-tool.md.

use clap::{CommandFactory, Parser, Subcommand};
use hprof_cli as cli;
use std::io::Write;
use std::time::Duration;

#[derive(Parser)]
#[command(
    name = "hprof-rs",
    version = env!("HPROF_RS_BUILD"),
    about = "Front-end for the hprof-rs agent and HPROF files",
    after_help = "\
Examples:
  hprof-rs jvms
  hprof-rs profile -d 30s -o cpu.html 4242
  hprof-rs attach 4242
  java -agentpath:$(hprof-rs agent-path)=cpu=samples -jar app.jar
  hprof-rs flame java.hprof.txt --svg cpu.svg
  hprof-rs heap heap.hprof suspects

A FILE argument may be `-` for standard input, and an output file `-` for
standard output (not for `print` and `heap`, which read their file twice).
Progress shows on standard error for long reads (a bar on a terminal, a line
every 5 % otherwise); `--quiet` turns it off.

Exit status: 0 done, 1 failed (a file, a JVM, the network), 2 usage error."
)]
struct Args {
    /// No progress on standard error (long reads, index builds).
    #[arg(long, short, global = true)]
    quiet: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

/// What a front-end session (`listen`, `connect`) does with the stream.
#[derive(clap::Args)]
struct FrontEnd {
    /// File that receives the stream exactly as sent.
    #[arg(long)]
    out: String,
    /// Command to send, in order (repeatable); `sleep MS` pauses.
    /// Run `hprof-rs commands` for the list.
    #[arg(long = "send", value_name = "CMD", value_parser = send_step)]
    send: Vec<String>,
    /// After the script, read commands from standard input.
    #[arg(long)]
    interactive: bool,
}

#[derive(Subcommand)]
enum Cmd {
    /// Wait for an agent started with net=HOST:PORT, record its stream,
    /// summarise each record and send it commands.
    #[command(after_help = "\
Example:
  hprof-rs listen --port 9000 --out run.hprof --send \"sleep 5000\" --send \"cpu 0.01\" --send exit &
  java -agentpath:$(hprof-rs agent-path)=cpu=samples,format=b,net=127.0.0.1:9000 -jar app.jar")]
    Listen {
        #[arg(long, default_value = "127.0.0.1")]
        host: String,
        /// Port to listen on (0: any free port; the chosen one is printed).
        #[arg(long)]
        port: u16,
        #[command(flatten)]
        session: FrontEnd,
    },
    /// Connect to an agent started with listen=[HOST:]PORT, record its
    /// stream (from its first byte), summarise each record and send it
    /// commands, like `listen`.
    #[command(after_help = "\
Example:
  java -agentpath:$(hprof-rs agent-path)=heap=sites,listen=9000 -jar app.jar &
  hprof-rs connect 127.0.0.1:9000 --out run.txt --send \"sites 0 0\" --interactive")]
    Connect {
        /// HOST:PORT the agent listens on.
        #[arg(value_parser = host_port)]
        addr: String,
        /// File whose first line is the agent's token (token=/tokenfile=).
        #[arg(long, value_name = "FILE")]
        token_file: Option<String>,
        #[command(flatten)]
        session: FrontEnd,
        /// Seconds to wait for the connection.
        #[arg(long, value_name = "SECS", default_value = "10", value_parser = seconds)]
        timeout: Duration,
    },
    /// Take the stream of an agent (started with net=HOST:PORT, or with
    /// listen=PORT and reached with --connect; binary format) and send,
    /// every interval, the CPU samples (and allocations) of that interval
    /// to a Pyroscope-compatible server (docs/push.md). The agent's own
    /// push= needs no tool; this is for a stream.
    #[command(after_help = "\
An HPROF stream does not say the agent's sampling interval: give it with
--sampling-interval to have CPU profiles typed cpu/nanoseconds (else they
are samples/count). Profiles the server does not take wait in a bounded
queue (oldest dropped first) and are retried; the agent is never held.

Examples:
  hprof-rs push --port 9000 --url http://pyroscope:4040 --interval 10s --app shop --sampling-interval 10 &
  (it prints the agent options to use, with the secret the agent must prove:)
  java -agentpath:$(hprof-rs agent-path)=cpu=samples,heap=sites,format=b,net=127.0.0.1:9000,tokenfile=FILE -jar app.jar

  java -agentpath:$(hprof-rs agent-path)=cpu=samples,format=b,listen=9000,tokenfile=$HOME/.hprof.token -jar app.jar &
  hprof-rs push --connect 127.0.0.1:9000 --token-file ~/.hprof.token --url http://pyroscope:4040 --app shop")]
    Push {
        #[arg(long, default_value = "127.0.0.1", conflicts_with = "connect")]
        host: String,
        /// Port to listen on for an agent with net= (0: any free port; printed).
        #[arg(long, required_unless_present = "connect", conflicts_with = "connect")]
        port: Option<u16>,
        /// HOST:PORT of an agent started with listen= (instead of --port).
        #[arg(long, value_name = "HOST:PORT", value_parser = host_port)]
        connect: Option<String>,
        /// With --connect: seconds to wait for the agent to take the connection.
        #[arg(long, value_name = "SECS", default_value = "10", value_parser = seconds, requires = "connect")]
        timeout: Duration,
        /// The server's base URL (http:// only); profiles go to URL/ingest.
        #[arg(long)]
        url: String,
        /// Length of each pushed interval (e.g. 10s, 1m; 1s..1h).
        #[arg(long, default_value = "10s", value_parser = duration)]
        interval: Duration,
        /// Application name on the server.
        #[arg(long, default_value = "java")]
        app: String,
        /// Labels, KEY:VALUE joined by '+' (e.g. env:prod+region:eu).
        #[arg(long)]
        labels: Option<String>,
        /// The agent's interval= in ms (the stream does not carry it).
        #[arg(long, value_name = "MS")]
        sampling_interval: Option<u32>,
        /// File whose first line is the agent's secret (its tokenfile=).
        /// With --port: the secret the agent must send first (default: a
        /// new one in a private directory, printed with the agent options
        /// to use); with --connect: the token sent to the agent.
        #[arg(long, value_name = "FILE")]
        token_file: Option<String>,
    },
    /// Print the commands `listen` can send.
    Commands,
    /// Load the agent into a running JVM through HotSpot's attach
    /// mechanism (no jcmd needed) and print the JVM's answer.
    #[command(after_help = "\
Examples:
  hprof-rs jvms                                  the PIDs of the JVMs
  hprof-rs attach 4242                           CPU samples and allocation sites
  hprof-rs attach 4242 cpu=samples,file=cpu.txt
  hprof-rs attach 4242 stop                      write the report; the JVM runs on
  hprof-rs attach 4242 --listen --out run.hprof --send \"cpu 0.01\"")]
    Attach {
        /// Process id of the JVM.
        pid: u32,
        /// Agent options, as after `-agentpath:LIB=` (e.g. cpu=samples,file=out.txt),
        /// or `stop` to end the profile that runs with its final report.
        /// Default: cpu=samples,heap=sites,heapsample=524288.
        #[arg(value_name = "AGENT_OPTIONS")]
        options: Option<String>,
        /// The agent library (default: libhprof_rs.so next to this tool).
        #[arg(long, value_name = "PATH")]
        agent: Option<String>,
        /// Seconds to wait for the JVM's attach listener to start.
        #[arg(long, value_name = "SECS", default_value = "10", value_parser = seconds)]
        timeout: Duration,
        /// Seconds to wait for the JVM's answer (it comes after Agent_OnAttach).
        #[arg(long, value_name = "SECS", default_value = "120", value_parser = seconds)]
        reply_timeout: Duration,
        /// Attach protocol: auto (ask the JVM), 1 (every JDK) or 2 (JDK 24+).
        #[arg(long, value_name = "auto|1|2", default_value = "auto")]
        protocol: hprof_cli::attach::ProtocolChoice,
        /// Record the agent's stream like `listen` (adds net=127.0.0.1:PORT).
        #[arg(long, requires = "out")]
        listen: bool,
        /// With --listen: file that receives the stream exactly as sent.
        #[arg(long, value_name = "FILE", requires = "listen")]
        out: Option<String>,
        /// With --listen: command to send, in order (repeatable).
        #[arg(long = "send", value_name = "CMD", requires = "listen", value_parser = send_step)]
        send: Vec<String>,
        /// With --listen: after the script, read commands from standard input.
        #[arg(long, requires = "listen")]
        interactive: bool,
    },
    /// Profile a running JVM (PID) or a program started here (`-- java …`)
    /// for a while and write a flame graph, collapsed stacks, a pprof
    /// profile or the agent's report; the format is the extension of -o.
    /// The JVM runs on afterwards, without the agent's profile.
    #[command(after_help = "\
Examples:
  hprof-rs profile 4242                                 30 s of CPU samples, profile-4242-cpu.html
  hprof-rs profile -d 10s -o cpu.collapsed 4242
  hprof-rs profile -e alloc -d 1m -o alloc.html 4242
  hprof-rs profile -e lock -o locks.svg 4242
  hprof-rs profile -o cpu.pprof -- java -jar app.jar    until the program ends

Events: cpu (CPU samples), alloc (sampled allocation sites, by bytes),
lock (time blocked entering monitors), wall (wall-clock samples of every
thread, running or not: where latency goes; every 20 ms by default).
Outputs: .html (the interactive flame graph, self-contained), .svg,
.collapsed, .pprof (gzipped), .jfr (JDK Flight Recorder), .txt or .hprof
(the agent's report).")]
    Profile {
        /// Process id of the JVM (or give a command line after --).
        #[arg(value_name = "PID", required_unless_present = "command")]
        pid: Option<u32>,
        /// How long: 30s, 2m, 500ms or seconds (default: 30 s for a PID,
        /// until the program ends for a command).
        #[arg(short, long, value_name = "DURATION", value_parser = duration)]
        duration: Option<Duration>,
        /// What to profile.
        #[arg(short, long, value_enum, default_value = "cpu")]
        event: cli::profile::Event,
        /// The output; its extension picks the format.
        #[arg(short, long, value_name = "FILE")]
        out: Option<String>,
        /// -e cpu: milliseconds of a thread's CPU time between two of its
        /// samples (the agent's default: 10); -e wall: milliseconds of real
        /// time (default 20).
        #[arg(short, long, value_name = "MS", value_parser = clap::value_parser!(u32).range(1..=10_000))]
        interval: Option<u32>,
        /// -e alloc: mean bytes a thread allocates between two sampled
        /// allocations: 524288, 512k, 1m (default 512k; smaller is more
        /// precise and costs more).
        #[arg(long, value_name = "BYTES", value_parser = alloc_bytes, allow_hyphen_values = true)]
        alloc_interval: Option<u64>,
        /// The agent library (default: libhprof_rs.so next to this tool).
        #[arg(long, value_name = "PATH")]
        agent: Option<String>,
        /// No progress lines (errors only).
        #[arg(short, long)]
        quiet: bool,
        /// The program to start with the agent: java and its arguments.
        #[arg(last = true, value_name = "JAVA_COMMAND", conflicts_with = "pid")]
        command: Vec<String>,
    },
    /// List the JVMs on this machine: PID, Java version, whether our agent
    /// is loaded, whether they accept attach, main class and arguments.
    Jvms,
    /// Print a binary HPROF file (ours or HotSpot's, plain or .gz) as text.
    #[command(after_help = "\
Example:
  hprof-rs print java.hprof | less")]
    Print { file: String },
    /// CPU samples of a text or binary report as collapsed stacks or an SVG flame graph.
    #[command(after_help = "\
Examples:
  hprof-rs flame java.hprof.txt --svg cpu.svg
  hprof-rs flame java.hprof > cpu.collapsed")]
    Flame {
        file: String,
        /// Write an SVG flame graph to OUT.
        #[arg(long, value_name = "OUT", conflicts_with = "collapsed")]
        svg: Option<String>,
        /// Print collapsed stacks (the default).
        #[arg(long)]
        collapsed: bool,
        /// Sum every CPU section instead of using the last one.
        #[arg(long)]
        all: bool,
    },
    /// Where a report's program allocates: the sites of its last allocation
    /// report (text or binary), ordered by allocated bytes.
    #[command(after_help = "\
Example:
  hprof-rs sites java.hprof.txt --top 10")]
    Sites {
        file: String,
        /// alloc (allocated bytes, the default) or live (live bytes, the
        /// report's own order).
        #[arg(long, value_name = "alloc|live", default_value = "alloc")]
        order: hprof_cli::sites::Order,
        /// How many sites to show.
        #[arg(long, value_name = "N", default_value_t = 20)]
        top: usize,
    },
    /// Class histogram of a heap dump in a file (ours or HotSpot's, plain
    /// or .gz): the last one, or the one --dump names.
    #[command(after_help = "\
Examples:
  hprof-rs histo heap.hprof.gz
  jcmd 4242 GC.heap_dump /tmp/heap.hprof && hprof-rs histo /tmp/heap.hprof")]
    Histo {
        file: String,
        /// Size objects for a VM without compressed oops.
        #[arg(long)]
        uncompressed_oops: bool,
        /// Which heap dump of the file, from 1 (default: the last).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        dump: Option<u32>,
    },
    /// The heap analyser: what holds the memory of a heap dump (ours or
    /// HotSpot's, plain or .gz): retained sizes, dominator tree, paths
    /// from GC roots, allocation sites. The index is saved beside the dump
    /// and reused. See docs/heap-analyser.md.
    #[command(after_help = "\
Examples:
  hprof-rs heap heap.hprof suspects
  hprof-rs heap heap.hprof dominators --top 10
  hprof-rs heap heap.hprof path 0x7f3a01c0
  hprof-rs heap heap.hprof classes --sort retained --top 20 --json")]
    Heap {
        file: String,
        /// Which heap dump of the file (from 1).
        #[arg(long, value_name = "N", default_value_t = 1, global = true,
              value_parser = clap::value_parser!(u32).range(1..))]
        dump: u32,
        /// One JSON document on stdout instead of text.
        #[arg(long, global = true)]
        json: bool,
        /// Build the index in memory only: nothing saved or reused.
        #[arg(long, global = true)]
        no_cache: bool,
        #[command(subcommand)]
        query: cli::heap::Query,
    },
    /// Local web front-end: sessions from agents (net=), launched programs
    /// and files; live CPU, memory, monitors, heap, threads and console
    /// views; commands; downloads and exports. See docs/ui.md.
    #[command(after_help = "\
Examples:
  hprof-rs ui
  hprof-rs ui java.hprof heap.hprof --source src/main/java")]
    Ui {
        /// Address of the page (default: loopback, a free port).
        #[arg(long, default_value = "127.0.0.1:0", value_parser = host_port)]
        bind: String,
        /// Address agents connect to (default: loopback, a free port).
        #[arg(long, default_value = "127.0.0.1:0", value_parser = host_port)]
        agents: String,
        /// The agent library Launch starts programs with (default: the
        /// libhprof_rs.so next to this program).
        #[arg(long, value_name = "PATH")]
        agent: Option<String>,
        /// A directory of Java sources for the source view (repeatable).
        #[arg(long = "source", value_name = "DIR")]
        sources: Vec<String>,
        /// HPROF files (binary or text, ours or HotSpot's, plain or .gz) to open.
        files: Vec<String>,
    },
    /// Write the CPU samples and allocation sites of a binary HPROF file
    /// as a gzipped pprof profile (for `go tool pprof`), or the CPU
    /// samples, allocation sites and monitor contention of a binary file or
    /// a text report as a JDK Flight Recorder file (for `jfr`, JDK Mission
    /// Control, IDEs).
    #[command(after_help = "\
Examples:
  hprof-rs export java.hprof --pprof cpu.pb.gz && go tool pprof -top cpu.pb.gz
  hprof-rs export java.hprof --jfr cpu.jfr && jfr print --events jdk.ExecutionSample cpu.jfr
  hprof-rs export java.hprof.txt --jfr locks.jfr && jfr summary locks.jfr   (monitor=y)")]
    #[command(group(clap::ArgGroup::new("to").required(true).multiple(true).args(["pprof", "jfr"])))]
    Export {
        file: String,
        #[arg(long, value_name = "OUT")]
        pprof: Option<String>,
        #[arg(long, value_name = "OUT")]
        jfr: Option<String>,
    },
    /// Print the absolute path of the agent library that goes with this
    /// tool (beside it, or in ../lib/ of a release).
    #[command(after_help = "\
Example:
  java -agentpath:$(hprof-rs agent-path)=cpu=samples,file=cpu.txt -jar app.jar")]
    AgentPath,
    /// Print a shell completion script.
    #[command(after_help = "\
Examples:
  hprof-rs completions bash > ~/.local/share/bash-completion/completions/hprof-rs
  hprof-rs completions zsh > ~/.zfunc/_hprof-rs
  hprof-rs completions fish > ~/.config/fish/completions/hprof-rs.fish")]
    Completions {
        /// The shell: bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
}

/// `--timeout`-like arguments: seconds, positive and finite.
fn seconds(s: &str) -> Result<Duration, String> {
    s.parse::<f64>()
        .ok()
        .and_then(|v| cli::attach::seconds(v, "").ok())
        .ok_or_else(|| "a positive number of seconds is needed, e.g. 10 or 0.5".to_string())
}

/// `-d`: a duration with its unit, or seconds.
fn duration(s: &str) -> Result<Duration, String> {
    cli::profile::parse_duration(s)
}

/// `--alloc-interval`: bytes with an optional binary unit.
fn alloc_bytes(s: &str) -> Result<u64, String> {
    cli::profile::parse_bytes(s)
}

/// A `--send` command, checked before anything starts.
fn send_step(s: &str) -> Result<String, String> {
    cli::listen::parse_step(s)
        .map(|_| s.to_string())
        .map_err(|e| format!("{e}; `hprof-rs commands` lists the commands"))
}

/// HOST:PORT, PORT a number (0: any free port where one is opened).
fn host_port(s: &str) -> Result<String, String> {
    match s.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => Ok(s.to_string()),
        _ => Err("HOST:PORT is needed, e.g. 127.0.0.1:9000".to_string()),
    }
}

/// A usage error found after parsing (arguments that do not go together):
/// printed as clap prints its own, with the subcommand's usage, exit status 2.
fn usage_error(subcommand: &str, message: &str) -> ! {
    let mut cmd = Args::command();
    cmd.build();
    let sub = cmd
        .find_subcommand_mut(subcommand)
        .expect("the subcommand exists");
    sub.error(clap::error::ErrorKind::ArgumentConflict, message)
        .exit()
}

fn main() {
    hprof_core::build_info::set(env!("HPROF_RS_BUILD"));
    let args = Args::parse();
    hprof_analysis::progress::set_quiet(args.quiet);
    let r = match args.cmd {
        Cmd::Listen {
            host,
            port,
            session:
                FrontEnd {
                    out,
                    send,
                    interactive,
                },
        } => cli::listen::run(cli::listen::ListenArgs {
            host,
            port,
            out,
            send,
            interactive,
        }),
        Cmd::Push {
            host,
            port,
            connect,
            timeout,
            url,
            interval,
            app,
            labels,
            sampling_interval,
            token_file,
        } => cli::push::run(cli::push::PushArgs {
            source: match connect {
                Some(addr) => cli::push::Source::Connect {
                    addr,
                    within: timeout,
                },
                None => cli::push::Source::Listen {
                    host,
                    port: port.unwrap_or_default(),
                },
            },
            url,
            interval,
            app,
            labels,
            sampling_ms: sampling_interval,
            token_file,
        }),
        Cmd::Commands => {
            println!(
                "{}\n  sleep MS                   (listen scripts) pause before the next command",
                hprof_core::protocol::COMMAND_SYNTAX
            );
            Ok(())
        }
        Cmd::Attach {
            pid,
            options,
            agent,
            timeout,
            reply_timeout,
            protocol,
            listen,
            out,
            send,
            interactive,
        } => {
            if let (true, Some(o)) = (listen, &options) {
                if let Err(e) = cli::attach::refuse_net(o) {
                    usage_error("attach", &e);
                }
            }
            cli::attach::run(cli::attach::AttachArgs {
                pid,
                options,
                agent,
                timeout,
                reply_timeout,
                protocol,
                listen: listen.then(|| cli::attach::ListenSession {
                    out: out.unwrap_or_default(),
                    send,
                    interactive,
                    connect_within: reply_timeout,
                }),
            })
        }
        Cmd::Connect {
            addr,
            token_file,
            session:
                FrontEnd {
                    out,
                    send,
                    interactive,
                },
            timeout,
        } => cli::listen::connect(cli::listen::ConnectArgs {
            addr,
            token_file,
            out,
            send,
            interactive,
            timeout,
        }),
        Cmd::Profile {
            pid,
            duration,
            event,
            out,
            interval,
            alloc_interval,
            agent,
            quiet,
            command,
        } => {
            use cli::profile::{self as p, Refused};
            let out = out.unwrap_or_else(|| {
                let e = format!("{event:?}").to_ascii_lowercase();
                match pid {
                    Some(pid) => format!("profile-{pid}-{e}.html"),
                    None => format!("profile-{e}.html"),
                }
            });
            let target = match (pid, command.is_empty()) {
                (Some(pid), true) => p::Target::Pid(pid),
                (None, false) => {
                    let java = std::path::Path::new(&command[0])
                        .file_name()
                        .and_then(|n| n.to_str());
                    if java != Some("java") {
                        usage_error(
                            "profile",
                            &format!(
                                "the command after -- must start with java (or a path to java), not {:?}",
                                command[0]
                            ),
                        );
                    }
                    if let Some(a) = command.iter().find(|a| {
                        (a.starts_with("-agentpath:") && a.contains("hprof"))
                            || a.starts_with("-agentlib:hprof")
                            || a.starts_with("-Xrunhprof")
                    }) {
                        usage_error(
                            "profile",
                            &format!(
                                "profile adds the agent itself: remove {a:?} from the command"
                            ),
                        );
                    }
                    p::Target::Command(command)
                }
                _ => usage_error("profile", "give a PID or a command line after --, not both"),
            };
            match p::format_of(&out) {
                Err(Refused::Usage(e)) => usage_error("profile", &e),
                Ok(format) => {
                    if let Err(e) = p::check(event, format, interval, alloc_interval) {
                        usage_error("profile", &e);
                    }
                }
                _ => {}
            }
            p::run(p::ProfileArgs {
                target,
                duration,
                event,
                out,
                interval_ms: interval,
                alloc_bytes: alloc_interval,
                agent,
                quiet,
            })
        }
        Cmd::Jvms => cli::attach::run_jvms().and_then(|t| write_stdout(&t)),
        Cmd::Print { file } => cli::print::run(&file, &mut cli::terminal::stdout()),
        Cmd::Flame {
            file,
            svg,
            collapsed: _,
            all,
        } => cli::flame::collapse_file(&file, all).and_then(|f| {
            for note in f.notes() {
                eprintln!("hprof-rs flame: {}", cli::terminal::safe(&note));
            }
            match svg {
                Some(path) => hprof_analysis::output::write(
                    &path,
                    cli::flame::svg(&f, &format!("{} of {file}", f.measure.title())).as_bytes(),
                ),
                None => {
                    let mut out = cli::terminal::stdout();
                    match f.write_collapsed(&mut out).and_then(|_| out.flush()) {
                        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                            Err(format!("cannot write the output: {e}"))
                        }
                        _ => Ok(()),
                    }
                }
            }
        }),
        Cmd::Sites { file, order, top } => cli::sites::read_file(&file)
            .and_then(|r| write_stdout(&cli::sites::render(&r, order, top))),
        Cmd::Histo {
            file,
            uncompressed_oops,
            dump,
        } => cli::histo::run(&file, uncompressed_oops, dump.map(|d| d as usize)).and_then(
            |(t, note)| {
                if let Some(n) = note {
                    eprintln!("hprof-rs histo: {}", cli::terminal::safe(&n));
                }
                write_stdout(&t)
            },
        ),
        Cmd::Heap {
            file,
            dump,
            json,
            no_cache,
            query,
        } => cli::heap::run(cli::heap::HeapArgs {
            file,
            dump,
            json,
            no_cache,
            query,
        })
        .and_then(|t| write_stdout(&t)),
        Cmd::Export { file, pprof, jfr } => (|| {
            if let Some(out) = pprof {
                eprintln!("{}", hprof_analysis::pprof::export(&file, &out)?);
            }
            if let Some(out) = jfr {
                eprintln!("{}", hprof_analysis::jfr::export(&file, &out)?);
            }
            Ok(())
        })(),
        Cmd::AgentPath => cli::attach::bundled::bundled_agent()
            .and_then(cli::attach::bundled::for_agentpath)
            .map_err(|e| {
                format!(
                    "{e}; keep the tool and the library together (bin/hprof-rs with \
                     lib/libhprof_rs.so, as in the release, or side by side, as cargo builds them)"
                )
            })
            .and_then(|p| write_stdout(&format!("{}\n", p.display()))),
        Cmd::Completions { shell } => {
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut Args::command(), "hprof-rs", &mut out);
            let mut script = String::from_utf8_lossy(&out).into_owned();
            if shell == clap_complete::Shell::Bash {
                // clap_complete's bash script spells the state of a
                // subcommand of a hyphenated program two ways (its loop:
                // hprof__rs__subcmd__attach, its case arms:
                // hprof__subcmd__rs__subcmd__attach), so nothing past the
                // subcommand would complete (clap-rs/clap#6421, open):
                // use the loop's spelling in the arms.
                script = script.replace("hprof__subcmd__rs", "hprof__rs");
            }
            write_stdout(&script)
        }
        Cmd::Ui {
            bind,
            agents,
            agent,
            sources,
            files,
        } => hprof_ui::run(hprof_ui::UiArgs {
            bind,
            agents,
            files,
            agent,
            sources,
        }),
    };
    if let Err(e) = r {
        eprintln!("hprof-rs: {}", cli::terminal::safe(&e));
        std::process::exit(1);
    }
}

/// Writes a command's text, made safe for a terminal (names in it come
/// from files and other processes: `cli::terminal`).
fn write_stdout(s: &str) -> Result<(), String> {
    let mut out = cli::terminal::stdout();
    match out.write_all(s.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(format!("cannot write the output: {e}"))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shell line's words, with "..." quoting; None past `|`, `>`, `&`.
    fn words(line: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut w = String::new();
        let mut quoted = false;
        for c in line.chars() {
            match c {
                '"' => quoted = !quoted,
                ' ' if !quoted => {
                    if !w.is_empty() {
                        out.push(std::mem::take(&mut w));
                    }
                }
                _ => w.push(c),
            }
        }
        if !w.is_empty() {
            out.push(w);
        }
        out
    }

    /// Every `hprof-rs ...` line of every example parses as the command
    /// it shows (what follows `|`, `>`, `&&` or two spaces is not ours).
    #[test]
    fn the_examples_in_help_are_valid_commands() {
        let root = Args::command();
        let mut seen = 0;
        let subs = std::iter::once(&root).chain(root.get_subcommands());
        for cmd in subs {
            let text = cmd
                .get_after_help()
                .map(|h| h.to_string())
                .unwrap_or_default();
            for line in text.lines().map(str::trim) {
                let Some(rest) = line.strip_prefix("hprof-rs ") else {
                    continue;
                };
                let end = [" |", " >", " &", "  "]
                    .iter()
                    .filter_map(|s| rest.find(s))
                    .min()
                    .unwrap_or(rest.len());
                let mut argv = vec!["hprof-rs".to_string()];
                argv.extend(words(&rest[..end]));
                if let Err(e) = Args::try_parse_from(&argv) {
                    panic!("{line}: {e}");
                }
                seen += 1;
            }
        }
        assert!(seen >= 20, "{seen} examples");
    }
}
