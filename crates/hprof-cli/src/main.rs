//! `hprof-rs`: front-end tool for the hprof-rs agent and HPROF files.
//! See docs/hprof-rs-tool.md.

use clap::{Parser, Subcommand};
use hprof_cli as cli;
use std::io::Write;

#[derive(Parser)]
#[command(
    name = "hprof-rs",
    version = env!("HPROF_RS_BUILD"),
    about = "Front-end for the hprof-rs agent and HPROF files"
)]
struct Args {
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
    #[arg(long = "send", value_name = "CMD")]
    send: Vec<String>,
    /// After the script, read commands from standard input.
    #[arg(long)]
    interactive: bool,
}

#[derive(Subcommand)]
enum Cmd {
    /// Wait for an agent started with net=HOST:PORT, record its stream,
    /// summarise each record and send it commands.
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
    Connect {
        /// HOST:PORT the agent listens on.
        addr: String,
        /// File whose first line is the agent's token (token=/tokenfile=).
        #[arg(long, value_name = "FILE")]
        token_file: Option<String>,
        #[command(flatten)]
        session: FrontEnd,
        /// Seconds to wait for the connection.
        #[arg(long, value_name = "SECS", default_value_t = 10.0)]
        timeout: f64,
    },
    /// Print the commands `listen` can send.
    Commands,
    /// Load the agent into a running JVM through HotSpot's attach
    /// mechanism (no jcmd needed) and print the JVM's answer.
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
        #[arg(long, value_name = "SECS", default_value_t = 10.0)]
        timeout: f64,
        /// Seconds to wait for the JVM's answer (it comes after Agent_OnAttach).
        #[arg(long, value_name = "SECS", default_value_t = 120.0)]
        reply_timeout: f64,
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
        #[arg(long = "send", value_name = "CMD", requires = "listen")]
        send: Vec<String>,
        /// With --listen: after the script, read commands from standard input.
        #[arg(long, requires = "listen")]
        interactive: bool,
    },
    /// List the JVMs on this machine: PID, Java version, whether our agent
    /// is loaded, whether they accept attach, main class and arguments.
    Jvms,
    /// Print a binary HPROF file (ours or HotSpot's, plain or .gz) as text.
    Print { file: String },
    /// CPU samples of a text or binary report as collapsed stacks or an SVG flame graph.
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
    Histo {
        file: String,
        /// Size objects for a VM without compressed oops.
        #[arg(long)]
        uncompressed_oops: bool,
        /// Which heap dump of the file, from 1 (default: the last).
        #[arg(long, value_name = "N")]
        dump: Option<usize>,
    },
    /// The heap analyser: what holds the memory of a heap dump (ours or
    /// HotSpot's, plain or .gz): retained sizes, dominator tree, paths
    /// from GC roots, allocation sites. The index is saved beside the dump
    /// and reused. See docs/heap-analyser.md.
    Heap {
        file: String,
        /// Which heap dump of the file (from 1).
        #[arg(long, value_name = "N", default_value_t = 1, global = true)]
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
    Ui {
        /// Address of the page (default: loopback, a free port).
        #[arg(long, default_value = "127.0.0.1:0")]
        bind: String,
        /// Address agents connect to (default: loopback, a free port).
        #[arg(long, default_value = "127.0.0.1:0")]
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
    /// as a gzipped pprof profile (for `go tool pprof`).
    Export {
        file: String,
        #[arg(long, value_name = "OUT")]
        pprof: String,
    },
}

fn main() {
    hprof_core::build_info::set(env!("HPROF_RS_BUILD"));
    let args = Args::parse();
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
        } => attach(
            pid,
            options,
            agent,
            (timeout, reply_timeout),
            protocol,
            listen.then(|| (out.unwrap_or_default(), send, interactive)),
        ),
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
        } => cli::attach::seconds(timeout, "--timeout").and_then(|timeout| {
            cli::listen::connect(cli::listen::ConnectArgs {
                addr,
                token_file,
                out,
                send,
                interactive,
                timeout,
            })
        }),
        Cmd::Jvms => cli::attach::run_jvms().and_then(|t| write_stdout(&t)),
        Cmd::Print { file } => {
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
            cli::print::run(&file, &mut out)
        }
        Cmd::Flame {
            file,
            svg,
            collapsed: _,
            all,
        } => cli::flame::collapse_file(&file, all).and_then(|f| {
            for note in f.notes() {
                eprintln!("hprof-rs flame: {note}");
            }
            match svg {
                Some(path) => std::fs::write(
                    &path,
                    cli::flame::svg(&f, &format!("{} of {file}", f.measure.title())),
                )
                .map_err(|e| format!("cannot write {path}: {e}")),
                None => {
                    let stdout = std::io::stdout();
                    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
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
        } => cli::histo::run(&file, uncompressed_oops, dump).and_then(|(t, note)| {
            if let Some(n) = note {
                eprintln!("hprof-rs histo: {n}");
            }
            write_stdout(&t)
        }),
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
        Cmd::Export { file, pprof } => hprof_analysis::pprof::export(&file, &pprof).map(|m| {
            eprintln!("{m}");
        }),
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
        eprintln!("hprof-rs: {e}");
        std::process::exit(1);
    }
}

type ListenParts = (String, Vec<String>, bool);

fn attach(
    pid: u32,
    options: Option<String>,
    agent: Option<String>,
    (timeout, reply_timeout): (f64, f64),
    protocol: cli::attach::ProtocolChoice,
    listen: Option<ListenParts>,
) -> Result<(), String> {
    let reply_timeout = cli::attach::seconds(reply_timeout, "--reply-timeout")?;
    cli::attach::run(cli::attach::AttachArgs {
        pid,
        options,
        agent,
        timeout: cli::attach::seconds(timeout, "--timeout")?,
        reply_timeout,
        protocol,
        listen: listen.map(|(out, send, interactive)| cli::attach::ListenSession {
            out,
            send,
            interactive,
            connect_within: reply_timeout,
        }),
    })
}

fn write_stdout(s: &str) -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    match out.write_all(s.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(format!("cannot write the output: {e}"))
        }
        _ => Ok(()),
    }
}
