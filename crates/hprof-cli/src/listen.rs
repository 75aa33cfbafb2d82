//! `hprof-rs listen`: the front-end of `net=host:port`. Waits for one
//! agent, records everything it sends to a file, prints a one-line summary
//! of each record as it arrives, and sends commands: a script (`--send`,
//! with the extra step `sleep MS`) and then, with `--interactive`, commands
//! typed at a prompt (syntax: `protocol::COMMAND_SYNTAX`).
//!
//! `hprof-rs connect`: the same front-end for an agent started with
//! `listen=` (docs/socket-protocol.md, "The agent listens"): it connects,
//! sends the token line first when given one, and then does what `listen`
//! does with the connection.

use super::CliResult;
use crate::protocol::{Command, COMMAND_SYNTAX};
use crate::reader::{HeapSubRecord, HprofReader, ReadOptions, RecordBody};
use hprof_analysis::text::{Event, TextReader};
use std::fs::File;
use std::io::{self, BufRead, BufWriter, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

pub struct ListenArgs {
    pub host: String,
    pub port: u16,
    pub out: String,
    pub send: Vec<String>,
    pub interactive: bool,
}

/// One step of a command script.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    Send(Command),
    Sleep(Duration),
}

pub fn parse_step(s: &str) -> Result<Step, String> {
    let t = s.trim();
    if let Some(ms) = t.strip_prefix("sleep") {
        let ms: u64 = ms
            .trim()
            .parse()
            .map_err(|_| format!("'{t}': sleep needs milliseconds"))?;
        return Ok(Step::Sleep(Duration::from_millis(ms)));
    }
    t.parse().map(Step::Send)
}

/// Everything read from the agent is also appended to the recording.
struct Tee {
    inner: TcpStream,
    file: BufWriter<File>,
    bytes: u64,
}

impl Read for Tee {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = match self.inner.read(buf) {
            Ok(n) => n,
            // A peer that vanished ends the stream like a close.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted
                ) =>
            {
                0
            }
            Err(e) => return Err(e),
        };
        self.file.write_all(&buf[..n])?;
        // The recording grows as the stream arrives (it can be followed
        // with tail -f, and a session cut short keeps what came).
        self.file.flush()?;
        self.bytes += n as u64;
        Ok(n)
    }
}

pub fn run(args: ListenArgs) -> CliResult<()> {
    check_script(&args.send)?;
    let listener = bind(&args.host, args.port)?;
    serve(listener, &args, None)
}

/// Refuses a bad `--send` before anything is opened.
pub fn check_script(send: &[String]) -> CliResult<()> {
    send.iter().try_for_each(|s| parse_step(s).map(|_| ()))
}

/// Opens the port agents connect to and says which it is (port 0 picks a
/// free one).
pub fn bind(host: &str, port: u16) -> CliResult<TcpListener> {
    let listener = TcpListener::bind((host, port))
        .map_err(|e| format!("cannot listen on {host}:{port}: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    eprintln!("listening on {local}");
    Ok(listener)
}

/// Waits for one agent on `listener` (at most `accept_within`, when
/// given), then records its stream to `args.out`, summarises it and sends
/// it the commands of `args` until the stream ends.
pub fn serve(
    listener: TcpListener,
    args: &ListenArgs,
    accept_within: Option<Duration>,
) -> CliResult<()> {
    let script: Vec<Step> = args
        .send
        .iter()
        .map(|s| parse_step(s))
        .collect::<Result<_, _>>()?;
    let (stream, peer) = match accept_within {
        None => listener
            .accept()
            .map_err(|e| format!("accept failed: {e}"))?,
        Some(limit) => accept_before(&listener, limit)?,
    };
    eprintln!("agent connected from {peer}");
    record(stream, Vec::new(), args, script)
}

/// `hprof-rs connect`.
pub struct ConnectArgs {
    /// `HOST:PORT` of an agent started with `listen=`.
    pub addr: String,
    /// File whose first line is the agent's token.
    pub token_file: Option<String>,
    pub out: String,
    pub send: Vec<String>,
    pub interactive: bool,
    /// Longest wait for the connection.
    pub timeout: Duration,
}

/// What an agent that refuses a connection sends before it closes it.
const REFUSED: &[u8] = b"HPROF-RS REFUSED: ";

pub fn connect(args: ConnectArgs) -> CliResult<()> {
    check_script(&args.send)?;
    let script: Vec<Step> = args
        .send
        .iter()
        .map(|s| parse_step(s))
        .collect::<Result<_, _>>()?;
    let token = match &args.token_file {
        Some(path) => Some(read_token_file(path)?),
        None => None,
    };
    let (stream, first) = dial(&args.addr, token, args.timeout)?;
    eprintln!("connected to {}", args.addr);
    let listen_args = ListenArgs {
        host: String::new(),
        port: 0,
        out: args.out,
        send: args.send,
        interactive: args.interactive,
    };
    record(stream, first, &listen_args, script)
}

/// Connects to an agent started with `listen=` at `addr` (retrying while
/// the port refuses, until `within` has passed: its JVM may be starting)
/// and sends `token`'s line first. Returns the stream and its first bytes,
/// once they show it is a stream and not the agent's refusal (one line,
/// docs/socket-protocol.md), which becomes the error.
pub fn dial(
    addr: &str,
    token: Option<Vec<u8>>,
    within: Duration,
) -> CliResult<(TcpStream, Vec<u8>)> {
    use std::net::ToSocketAddrs;
    let addrs: Vec<_> = addr
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {addr}: {e}"))?
        .collect();
    let start = std::time::Instant::now();
    let mut stream = None;
    while stream.is_none() {
        let mut last = format!("{addr} has no address");
        for a in &addrs {
            let left = within
                .saturating_sub(start.elapsed())
                .max(Duration::from_millis(1));
            match TcpStream::connect_timeout(a, left) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = format!("cannot connect to {addr}: {e}"),
            }
        }
        if stream.is_none() {
            if start.elapsed() >= within {
                return Err(last);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let mut stream = stream.ok_or("unreachable")?;
    if let Some(mut line) = token {
        line.push(b'\n');
        stream
            .write_all(&line)
            .map_err(|e| format!("cannot send the token: {e}"))?;
    }
    // A stream starts with "JAVA PROFILE", a refusal with REFUSED.
    let mut head = vec![0u8; 19];
    let mut got = 0;
    while got < head.len() {
        match stream.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("reading from the agent: {e}")),
        }
    }
    head.truncate(got);
    let refused = head.starts_with(REFUSED) || (got > 0 && REFUSED.starts_with(&head));
    if refused {
        let _ = stream.read_to_end(&mut head);
        let text = String::from_utf8_lossy(&head);
        let text = text.trim_end();
        return Err(format!(
            "the agent refused the connection: {}",
            text.strip_prefix("HPROF-RS REFUSED: ").unwrap_or(text)
        ));
    }
    Ok((stream, head))
}

/// The secret in the first line of the token file `path` (as the agent's
/// `tokenfile=` reads it).
pub fn read_token_file(path: &str) -> CliResult<Vec<u8>> {
    let text =
        std::fs::read(path).map_err(|e| format!("cannot read the token file {path}: {e}"))?;
    let line = text.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.is_empty() {
        return Err(format!("the token file {path} has an empty first line"));
    }
    Ok(line.to_vec())
}

/// Record and summarise the agent's stream on `stream` until it ends,
/// sending it `script` (and, with `--interactive`, typed commands).
fn record(
    stream: TcpStream,
    first: Vec<u8>,
    args: &ListenArgs,
    script: Vec<Step>,
) -> CliResult<()> {
    let file = File::create(&args.out).map_err(|e| format!("cannot create {}: {e}", args.out))?;
    let sender = stream.try_clone().map_err(|e| e.to_string())?;
    let interactive = args.interactive;
    std::thread::spawn(move || send_commands(sender, script, interactive));

    let mut tee = Tee {
        inner: stream,
        file: BufWriter::new(file),
        bytes: first.len() as u64,
    };
    tee.file
        .write_all(&first)
        .map_err(|e| format!("cannot write {}: {e}", args.out))?;
    // Text starts with "JAVA PROFILE 1.0.1, created", binary with "JAVA
    // PROFILE 1.0.1" or "1.0.2" and a NUL: the 19th byte tells them apart.
    let mut head = [0u8; 19];
    let mut got = first.len().min(head.len());
    head[..got].copy_from_slice(&first[..got]);
    let past_head = first[got..].to_vec();
    while got < head.len() {
        match tee.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) => return Err(format!("reading from the agent: {e}")),
        }
    }
    let mut start = head[..got].to_vec();
    start.extend_from_slice(&past_head);
    let start = io::Cursor::new(start);
    let outcome = if head[..got] == *crate::reader::TEXT_REPORT_START {
        summarize_text(start.chain(&mut tee))
    } else if got == 0 {
        Ok(0)
    } else {
        summarize_binary(start.chain(&mut tee))
    };
    let records = match outcome {
        Ok(n) => n,
        Err(e) => {
            eprintln!(
                "hprof-rs listen: {}; recording the rest of the stream unparsed",
                crate::terminal::safe(&e)
            );
            let _ = io::copy(&mut tee, &mut io::sink());
            0
        }
    };
    tee.file
        .flush()
        .map_err(|e| format!("cannot write {}: {e}", args.out))?;
    println!(
        "stream ended: {} bytes, {records} records, recorded in {}",
        tee.bytes, args.out
    );
    Ok(())
}

/// `accept` with a time limit: polls a non-blocking listener, so a caller
/// whose agent never comes is not left waiting forever.
fn accept_before(
    listener: &TcpListener,
    limit: Duration,
) -> CliResult<(TcpStream, std::net::SocketAddr)> {
    listener
        .set_nonblocking(true)
        .map_err(|e| format!("accept failed: {e}"))?;
    let start = std::time::Instant::now();
    loop {
        match listener.accept() {
            Ok((stream, peer)) => {
                stream
                    .set_nonblocking(false)
                    .map_err(|e| format!("accept failed: {e}"))?;
                return Ok((stream, peer));
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if start.elapsed() >= limit {
                    return Err(format!(
                        "no agent connected within {:.1} s",
                        limit.as_secs_f64()
                    ));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("accept failed: {e}")),
        }
    }
}

fn send_commands(mut s: TcpStream, script: Vec<Step>, interactive: bool) {
    let mut serial = 1u32;
    let mut send = |cmd: Command| -> bool {
        match s.write_all(&cmd.encode(serial)) {
            Ok(()) => {
                eprintln!("sent: {cmd}");
                serial += 1;
                true
            }
            Err(e) => {
                eprintln!("cannot send {cmd}: {e}");
                false
            }
        }
    };
    for step in script {
        match step {
            Step::Sleep(d) => std::thread::sleep(d),
            Step::Send(c) => {
                if !send(c) {
                    return;
                }
            }
        }
    }
    if !interactive {
        return;
    }
    eprintln!("type a command (help for the list, quit to stop sending)");
    for line in io::stdin().lock().lines() {
        let Ok(line) = line else { return };
        match line.trim() {
            "" => continue,
            "help" => eprintln!("{COMMAND_SYNTAX}\n  sleep MS                   pause the script"),
            "quit" => return,
            t => match parse_step(t) {
                Ok(Step::Send(c)) => {
                    if !send(c) {
                        return;
                    }
                }
                Ok(Step::Sleep(d)) => std::thread::sleep(d),
                Err(e) => eprintln!("{e}"),
            },
        }
    }
}

/// One line per record-like line of a text stream (read by
/// [`hprof_analysis::text`]): its first line, then every line after the
/// explanatory header that starts with a capital, but a table's heading.
fn summarize_text(r: impl Read) -> Result<u64, String> {
    let mut n = 0;
    // The stream is anyone's: its names are escaped for the terminal.
    let mut out = crate::terminal::Escaping::new(io::stdout().lock());
    let mut lines = TextReader::new(io::BufReader::new(r));
    while let Some(line) = lines.next().map_err(|e| e.to_string())? {
        let shown = match line.event {
            Event::Header | Event::TraceEnd => false,
            _ if line.number == 1 => true,
            _ => {
                line.text.starts_with(|c: char| c.is_ascii_uppercase())
                    && !line.text.starts_with("rank")
            }
        };
        if shown {
            let _ = writeln!(out, "text: {}", line.text);
            let _ = out.flush();
            n += 1;
        }
    }
    Ok(n)
}

fn summarize_binary(r: impl Read) -> Result<u64, String> {
    let mut reader =
        HprofReader::with_options(r, ReadOptions::skip_bodies()).map_err(|e| e.to_string())?;
    // The stream is anyone's: its names are escaped for the terminal.
    let mut out = crate::terminal::Escaping::new(io::stdout().lock());
    let h = reader.header().clone();
    let _ = writeln!(out, "binary: {} (identifier size {})", h.label, h.id_size);
    let mut syms = crate::transcode::symbols::Symbols::default();
    let mut n = 0u64;
    while let Some(rec) = reader.next_record().map_err(|e| e.to_string())? {
        n += 1;
        let name = rec.name();
        let detail = match &rec.body {
            RecordBody::HeapDumpStart { .. } => {
                let (mut roots, mut classes, mut objects) = (0u64, 0u64, 0u64);
                while let Some(sub) = reader.next_heap_sub_record().map_err(|e| e.to_string())? {
                    match sub {
                        HeapSubRecord::Root(_) => roots += 1,
                        HeapSubRecord::ClassDump(_) => classes += 1,
                        _ => objects += 1,
                    }
                }
                format!(
                    "{} bytes: {roots} roots, {classes} classes, {objects} objects and arrays",
                    rec.length
                )
            }
            body => {
                let d = describe(body, &syms);
                syms.learn(body);
                d
            }
        };
        let _ = writeln!(
            out,
            "{:>10.3} ms  {name}{}{detail}",
            f64::from(rec.time) / 1000.0,
            if detail.is_empty() { "" } else { "  " }
        );
        let _ = out.flush();
    }
    Ok(n)
}

fn describe(body: &RecordBody, syms: &crate::transcode::symbols::Symbols) -> String {
    match body {
        RecordBody::Utf8 { id, text } => format!("id=0x{id:x} {text:?}"),
        RecordBody::LoadClass(c) => format!(
            "serial={} id=0x{:x} name={}",
            c.class_serial,
            c.class_id,
            syms.string(c.name_id).unwrap_or("?")
        ),
        RecordBody::UnloadClass { class_serial } => format!("serial={class_serial}"),
        RecordBody::Frame(f) => format!(
            "id=0x{:x} {}",
            f.id,
            syms.string(f.method_name_id).unwrap_or("?")
        ),
        RecordBody::Trace(t) => format!("serial={} frames={}", t.serial, t.frame_ids.len()),
        RecordBody::AllocSites(s) => format!(
            "flags=0x{:x} sites={} live_bytes={}",
            s.flags,
            s.sites.len(),
            s.total_live_bytes
        ),
        RecordBody::HeapSummary(s) => format!(
            "live_bytes={} live_instances={}",
            s.total_live_bytes, s.total_live_instances
        ),
        RecordBody::StartThread(t) => format!(
            "serial={} obj=0x{:x} name={:?}",
            t.thread_serial,
            t.thread_id,
            syms.string(t.name_id).unwrap_or("?")
        ),
        RecordBody::EndThread { thread_serial } => format!("serial={thread_serial}"),
        RecordBody::CpuSamples(c) => format!("total={} traces={}", c.total, c.entries.len()),
        RecordBody::ControlSettings(c) => format!("flags=0x{:x} depth={}", c.flags, c.depth),
        _ => String::new(),
    }
}
