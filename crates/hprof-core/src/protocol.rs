//! The command protocol of `net=host:port` (front-end → agent), as plain
//! data: decoding for the agent's listener thread, encoding and a small text
//! syntax for the `hprof-rs listen` front-end. No JVM here.
//!
//! Framing (docs/socket-protocol.md, "Commands"): `u1 tag, u4 serial, u4 length, body`,
//! big-endian. The serial and the length are read and ignored, as in the
//! original, so the body must hold exactly the fields of its tag. Bodies:
//!
//! | tag | command | body |
//! |---|---|---|
//! | 0x01 | FORCE GC | – |
//! | 0x02 | DUMP HEAP | – |
//! | 0x03 | ALLOC SITES | `u2` flags, `u4` cutoff (IEEE single) |
//! | 0x04 | HEAP SUMMARY | – |
//! | 0x05 | EXIT THE VM | – |
//! | 0x06 | DUMP TRACES | – |
//! | 0x07 | CPU SAMPLES | `u2` (ignored), `u4` cutoff (IEEE single) |
//! | 0x08 | CONTROL | `u2` sub-command, then its body |
//! | 0xFF | EOF | nothing (serial and length are not read) |
//!
//! CONTROL sub-commands: 1/2 allocation tracking on/off, 3/4 CPU sampling
//! on/off for a thread object ID (`u4`, 0 = all threads), 5 clear CPU
//! samples, 6 clear allocation sites, 7 set max stack depth (`u2`); other
//! sub-commands carry no body.
//!
//! Deviations from the original, all in the direction of robustness:
//! * a peer that closes or half-closes the connection (a 0-byte read) is an
//!   end of commands, not a read to retry forever;
//! * a command cut short by the end of the stream has no effect;
//! * an unknown tag is rejected (see [`CommandError::UnknownTag`]) instead of
//!   terminating the JVM;
//! * the thread ID of CONTROL 3/4 is kept as its 4 raw bytes: the agent
//!   reads it big-endian as the protocol says and falls back to the
//!   original's native (little-endian) order when only that matches a known
//!   thread ([`ThreadRef`]).

use std::fmt;
use std::io::{self, Read};

pub mod load_outcome;

pub mod tag {
    pub const FORCE_GC: u8 = 0x01;
    pub const DUMP_HEAP: u8 = 0x02;
    pub const ALLOC_SITES: u8 = 0x03;
    pub const HEAP_SUMMARY: u8 = 0x04;
    pub const EXIT: u8 = 0x05;
    pub const DUMP_TRACES: u8 = 0x06;
    pub const CPU_SAMPLES: u8 = 0x07;
    pub const CONTROL: u8 = 0x08;
    pub const EOF: u8 = 0xFF;
}

pub mod control {
    pub const ALLOC_TRACKING_ON: u16 = 0x0001;
    pub const ALLOC_TRACKING_OFF: u16 = 0x0002;
    pub const SAMPLING_ON: u16 = 0x0003;
    pub const SAMPLING_OFF: u16 = 0x0004;
    pub const CLEAR_CPU_SAMPLES: u16 = 0x0005;
    pub const CLEAR_ALLOC_SITES: u16 = 0x0006;
    pub const SET_MAX_DEPTH: u16 = 0x0007;
}

/// ALLOC SITES flag bits.
pub mod sites_flag {
    /// Only sites changed since the previous site report.
    pub const INCREMENTAL: u16 = 0x1;
    /// Sort by allocated instead of live bytes.
    pub const SORT_BY_ALLOC: u16 = 0x2;
    /// Force a GC first.
    pub const FORCE_GC: u16 = 0x4;
}

/// A thread object ID as sent: 4 raw bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadRef(pub [u8; 4]);

impl ThreadRef {
    pub fn from_id(id: u32) -> Self {
        ThreadRef(id.to_be_bytes())
    }
    /// The ID as the protocol documents it (big-endian).
    pub fn big_endian(self) -> u32 {
        u32::from_be_bytes(self.0)
    }
    /// The ID as the original agent read it on x86 (native order).
    pub fn little_endian(self) -> u32 {
        u32::from_le_bytes(self.0)
    }
    /// 0 means "all threads" in either order.
    pub fn is_all(self) -> bool {
        self.0 == [0; 4]
    }
    /// The known ID this reference names: big-endian first, then the
    /// original's native order; `None` if neither is known.
    pub fn resolve(self, known: impl Fn(u32) -> bool) -> Option<u32> {
        [self.big_endian(), self.little_endian()]
            .into_iter()
            .find(|&id| known(id))
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Control {
    AllocTracking(bool),
    Sampling {
        on: bool,
        thread: ThreadRef,
    },
    ClearCpuSamples,
    ClearAllocSites,
    SetMaxDepth(u16),
    /// An undefined sub-command (no body); ignored by the agent.
    Unknown(u16),
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Command {
    ForceGc,
    DumpHeap,
    AllocSites {
        flags: u16,
        cutoff: f32,
    },
    HeapSummary,
    Exit,
    DumpTraces,
    /// `ignored` is the u2 field the agent does not use.
    CpuSamples {
        ignored: u16,
        cutoff: f32,
    },
    Control(Control),
    Eof,
}

/// Why no command could be read.
#[derive(Debug)]
pub enum CommandError {
    /// The peer closed (or half-closed) the connection, or the socket was
    /// shut down, before a new command began.
    Closed,
    /// The stream ended inside a command; the partial command has no effect.
    Truncated { tag: u8, offset: u64 },
    /// A tag the protocol does not define. The framing cannot be trusted
    /// from here on (lengths are not reliable), so the reader stops.
    UnknownTag { tag: u8, offset: u64 },
    /// A read error other than the connection ending.
    Io(io::Error),
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommandError::Closed => write!(f, "connection closed"),
            CommandError::Truncated { tag, offset } => {
                write!(
                    f,
                    "command {} at offset {offset} cut short by the end of the stream",
                    command_name(*tag)
                )
            }
            CommandError::UnknownTag { tag, offset } => {
                write!(f, "failed to recognize cmd {tag} at offset {offset}")
            }
            CommandError::Io(e) => write!(f, "read error: {e}"),
        }
    }
}

/// Protocol name of a command tag.
pub fn command_name(t: u8) -> &'static str {
    match t {
        tag::FORCE_GC => "FORCE GC",
        tag::DUMP_HEAP => "DUMP HEAP",
        tag::ALLOC_SITES => "ALLOC SITES",
        tag::HEAP_SUMMARY => "HEAP SUMMARY",
        tag::EXIT => "EXIT THE VM",
        tag::DUMP_TRACES => "DUMP TRACES",
        tag::CPU_SAMPLES => "CPU SAMPLES",
        tag::CONTROL => "CONTROL",
        tag::EOF => "EOF",
        _ => "unknown",
    }
}

/// Reads commands one at a time from a byte stream, counting offsets.
pub struct CommandReader<R> {
    r: R,
    offset: u64,
}

impl<R: Read> CommandReader<R> {
    pub fn new(r: R) -> Self {
        CommandReader { r, offset: 0 }
    }

    /// The stream commands are read from.
    pub fn get_ref(&self) -> &R {
        &self.r
    }

    /// The stream, to read what follows the commands (an agent drains a
    /// front-end's connection after its EOF command).
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.r
    }

    /// Bytes consumed so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Fill `buf`; `Ok(false)` if the stream ended before its first byte,
    /// `Err(UnexpectedEof)` if it ended inside.
    fn fill(&mut self, buf: &mut [u8]) -> io::Result<bool> {
        let mut got = 0;
        while got < buf.len() {
            match self.r.read(&mut buf[got..]) {
                Ok(0) if got == 0 => return Ok(false),
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => {
                    got += n;
                    self.offset += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// The next command. `Eof` is returned for an explicit EOF tag; a closed
    /// connection is `Err(Closed)`.
    pub fn next_command(&mut self) -> Result<Command, CommandError> {
        let start = self.offset;
        let mut t = [0u8; 1];
        match self.fill(&mut t) {
            Ok(true) => {}
            Ok(false) => return Err(CommandError::Closed),
            Err(e) if is_disconnect(&e) => return Err(CommandError::Closed),
            Err(e) => return Err(CommandError::Io(e)),
        }
        let t = t[0];
        if t == tag::EOF {
            return Ok(Command::Eof);
        }
        if !(tag::FORCE_GC..=tag::CONTROL).contains(&t) {
            return Err(CommandError::UnknownTag {
                tag: t,
                offset: start,
            });
        }
        self.body(t).map_err(|e| {
            if e.kind() == io::ErrorKind::UnexpectedEof || is_disconnect(&e) {
                CommandError::Truncated {
                    tag: t,
                    offset: start,
                }
            } else {
                CommandError::Io(e)
            }
        })
    }

    fn u2(&mut self) -> io::Result<u16> {
        let mut b = [0u8; 2];
        self.need(&mut b)?;
        Ok(u16::from_be_bytes(b))
    }

    fn u4(&mut self) -> io::Result<[u8; 4]> {
        let mut b = [0u8; 4];
        self.need(&mut b)?;
        Ok(b)
    }

    fn need(&mut self, buf: &mut [u8]) -> io::Result<()> {
        if self.fill(buf)? {
            Ok(())
        } else {
            Err(io::ErrorKind::UnexpectedEof.into())
        }
    }

    fn body(&mut self, t: u8) -> io::Result<Command> {
        let _serial = self.u4()?;
        let _length = self.u4()?;
        let f32_of = |b: [u8; 4]| f32::from_bits(u32::from_be_bytes(b));
        Ok(match t {
            tag::FORCE_GC => Command::ForceGc,
            tag::DUMP_HEAP => Command::DumpHeap,
            tag::ALLOC_SITES => {
                let flags = self.u2()?;
                Command::AllocSites {
                    flags,
                    cutoff: f32_of(self.u4()?),
                }
            }
            tag::HEAP_SUMMARY => Command::HeapSummary,
            tag::EXIT => Command::Exit,
            tag::DUMP_TRACES => Command::DumpTraces,
            tag::CPU_SAMPLES => {
                let ignored = self.u2()?;
                Command::CpuSamples {
                    ignored,
                    cutoff: f32_of(self.u4()?),
                }
            }
            tag::CONTROL => Command::Control(match self.u2()? {
                control::ALLOC_TRACKING_ON => Control::AllocTracking(true),
                control::ALLOC_TRACKING_OFF => Control::AllocTracking(false),
                s @ (control::SAMPLING_ON | control::SAMPLING_OFF) => Control::Sampling {
                    on: s == control::SAMPLING_ON,
                    thread: ThreadRef(self.u4()?),
                },
                control::CLEAR_CPU_SAMPLES => Control::ClearCpuSamples,
                control::CLEAR_ALLOC_SITES => Control::ClearAllocSites,
                control::SET_MAX_DEPTH => Control::SetMaxDepth(self.u2()?),
                other => Control::Unknown(other),
            }),
            _ => unreachable!("tag range checked by the caller"),
        })
    }
}

/// Errors that mean the peer or the socket is gone.
fn is_disconnect(e: &io::Error) -> bool {
    use io::ErrorKind::*;
    matches!(
        e.kind(),
        ConnectionReset | ConnectionAborted | BrokenPipe | NotConnected
    )
}

impl Command {
    pub fn tag(&self) -> u8 {
        match self {
            Command::ForceGc => tag::FORCE_GC,
            Command::DumpHeap => tag::DUMP_HEAP,
            Command::AllocSites { .. } => tag::ALLOC_SITES,
            Command::HeapSummary => tag::HEAP_SUMMARY,
            Command::Exit => tag::EXIT,
            Command::DumpTraces => tag::DUMP_TRACES,
            Command::CpuSamples { .. } => tag::CPU_SAMPLES,
            Command::Control(_) => tag::CONTROL,
            Command::Eof => tag::EOF,
        }
    }

    /// The wire bytes, with `serial` and the true body length (the agent
    /// ignores both). EOF is the bare tag byte.
    pub fn encode(&self, serial: u32) -> Vec<u8> {
        let mut body = Vec::new();
        match *self {
            Command::AllocSites { flags, cutoff } => {
                body.extend_from_slice(&flags.to_be_bytes());
                body.extend_from_slice(&cutoff.to_bits().to_be_bytes());
            }
            Command::CpuSamples { ignored, cutoff } => {
                body.extend_from_slice(&ignored.to_be_bytes());
                body.extend_from_slice(&cutoff.to_bits().to_be_bytes());
            }
            Command::Control(c) => {
                let (sub, extra): (u16, Vec<u8>) = match c {
                    Control::AllocTracking(true) => (control::ALLOC_TRACKING_ON, vec![]),
                    Control::AllocTracking(false) => (control::ALLOC_TRACKING_OFF, vec![]),
                    Control::Sampling { on, thread } => (
                        if on {
                            control::SAMPLING_ON
                        } else {
                            control::SAMPLING_OFF
                        },
                        thread.0.to_vec(),
                    ),
                    Control::ClearCpuSamples => (control::CLEAR_CPU_SAMPLES, vec![]),
                    Control::ClearAllocSites => (control::CLEAR_ALLOC_SITES, vec![]),
                    Control::SetMaxDepth(d) => (control::SET_MAX_DEPTH, d.to_be_bytes().to_vec()),
                    Control::Unknown(s) => (s, vec![]),
                };
                body.extend_from_slice(&sub.to_be_bytes());
                body.extend_from_slice(&extra);
            }
            _ => {}
        }
        let mut out = vec![self.tag()];
        if *self == Command::Eof {
            return out;
        }
        out.extend_from_slice(&serial.to_be_bytes());
        out.extend_from_slice(&(body.len() as u32).to_be_bytes());
        out.extend_from_slice(&body);
        out
    }
}

/// The text syntax of `hprof-rs listen --send` and its prompt.
pub const COMMAND_SYNTAX: &str = "\
commands:
  gc                         FORCE GC
  heap-dump                  DUMP HEAP
  sites [FLAGS [CUTOFF]]     ALLOC SITES (flags: 0x1 changed only, 0x2 by allocated, 0x4 gc first; default 0 0.0001)
  heap-summary               HEAP SUMMARY
  exit                       EXIT THE VM
  traces                     DUMP TRACES
  cpu [CUTOFF]               CPU SAMPLES (default cutoff 0.0001)
  alloc-on | alloc-off       CONTROL allocation tracking on/off
  sampling-on [THREAD_ID]    CONTROL cpu sampling on (thread object ID in hex, default 0 = all)
  sampling-off [THREAD_ID]   CONTROL cpu sampling off
  clear-cpu                  CONTROL clear CPU samples
  clear-sites                CONTROL clear allocation sites
  depth N                    CONTROL set max stack depth
  eof                        EOF (ends the agent's command listener)";

impl std::str::FromStr for Command {
    type Err = String;

    /// Parse one command of [`COMMAND_SYNTAX`].
    fn from_str(s: &str) -> Result<Self, String> {
        let mut words = s.split_whitespace();
        let name = words.next().ok_or("empty command")?;
        let args: Vec<&str> = words.collect();
        let arity = |max: usize| -> Result<(), String> {
            if args.len() > max {
                Err(format!("too many arguments for '{name}'"))
            } else {
                Ok(())
            }
        };
        let num = |i: usize, default: u32| -> Result<u32, String> {
            match args.get(i) {
                None => Ok(default),
                Some(a) => parse_int(a).ok_or_else(|| format!("'{a}' is not a number")),
            }
        };
        let ratio = |i: usize| -> Result<f32, String> {
            match args.get(i) {
                None => Ok(0.0001),
                Some(a) => a
                    .parse::<f32>()
                    .map_err(|_| format!("'{a}' is not a cutoff ratio")),
            }
        };
        let u16_of = |v: u32| u16::try_from(v).map_err(|_| format!("{v} does not fit in 16 bits"));
        let cmd = match name {
            "gc" => Command::ForceGc,
            "heap-dump" | "dump" => Command::DumpHeap,
            "sites" => {
                arity(2)?;
                Command::AllocSites {
                    flags: u16_of(num(0, 0)?)?,
                    cutoff: ratio(1)?,
                }
            }
            "heap-summary" | "summary" => Command::HeapSummary,
            "exit" => Command::Exit,
            "traces" => Command::DumpTraces,
            "cpu" => {
                arity(1)?;
                Command::CpuSamples {
                    ignored: 0,
                    cutoff: ratio(0)?,
                }
            }
            "alloc-on" => Command::Control(Control::AllocTracking(true)),
            "alloc-off" => Command::Control(Control::AllocTracking(false)),
            "sampling-on" | "sampling-off" => {
                arity(1)?;
                let id = match args.first() {
                    None => 0,
                    Some(a) => u32::from_str_radix(a.trim_start_matches("0x"), 16)
                        .map_err(|_| format!("'{a}' is not a hex thread object ID"))?,
                };
                Command::Control(Control::Sampling {
                    on: name == "sampling-on",
                    thread: ThreadRef::from_id(id),
                })
            }
            "clear-cpu" => Command::Control(Control::ClearCpuSamples),
            "clear-sites" => Command::Control(Control::ClearAllocSites),
            "depth" => {
                arity(1)?;
                let d = args.first().ok_or("depth needs a number")?;
                Command::Control(Control::SetMaxDepth(u16_of(
                    parse_int(d).ok_or(format!("'{d}' is not a number"))?,
                )?))
            }
            "eof" => Command::Eof,
            other => return Err(format!("unknown command '{other}'")),
        };
        if !matches!(
            name,
            "sites" | "cpu" | "sampling-on" | "sampling-off" | "depth"
        ) {
            arity(0)?;
        }
        Ok(cmd)
    }
}

fn parse_int(s: &str) -> Option<u32> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Command::AllocSites { flags, cutoff } => {
                write!(f, "ALLOC SITES flags=0x{flags:x} cutoff={cutoff}")
            }
            Command::CpuSamples { cutoff, .. } => write!(f, "CPU SAMPLES cutoff={cutoff}"),
            Command::Control(c) => match c {
                Control::AllocTracking(on) => write!(
                    f,
                    "CONTROL allocation tracking {}",
                    if *on { "on" } else { "off" }
                ),
                Control::Sampling { on, thread } => write!(
                    f,
                    "CONTROL cpu sampling {} thread=0x{:x}",
                    if *on { "on" } else { "off" },
                    thread.big_endian()
                ),
                Control::ClearCpuSamples => write!(f, "CONTROL clear cpu samples"),
                Control::ClearAllocSites => write!(f, "CONTROL clear allocation sites"),
                Control::SetMaxDepth(d) => write!(f, "CONTROL set max depth {d}"),
                Control::Unknown(s) => write!(f, "CONTROL unknown sub-command {s}"),
            },
            other => write!(f, "{}", command_name(other.tag())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(bytes: &[u8]) -> (Vec<Command>, CommandError) {
        let mut r = CommandReader::new(bytes);
        let mut v = Vec::new();
        loop {
            match r.next_command() {
                Ok(c) => v.push(c),
                Err(e) => return (v, e),
            }
        }
    }

    #[test]
    fn every_command_decodes_from_hand_written_bytes() {
        #[rustfmt::skip]
        let bytes: Vec<u8> = [
            &[0x01, 0,0,0,1, 0,0,0,0][..],                       // FORCE GC
            &[0x02, 0,0,0,2, 0,0,0,0],                           // DUMP HEAP
            &[0x03, 0,0,0,3, 0,0,0,6, 0x00,0x06, 0x3C,0x23,0xD7,0x0A], // SITES 6, 0.01f
            &[0x04, 0,0,0,4, 0,0,0,0],                           // HEAP SUMMARY
            &[0x06, 0,0,0,6, 0,0,0,0],                           // DUMP TRACES
            &[0x07, 0,0,0,7, 0,0,0,6, 0xAB,0xCD, 0x3F,0x00,0x00,0x00], // CPU 0.5
            &[0x08, 0,0,0,8, 0,0,0,2, 0,1],                      // tracking on
            &[0x08, 0,0,0,8, 0,0,0,2, 0,2],                      // tracking off
            &[0x08, 0,0,0,8, 0,0,0,6, 0,3, 0x50,0,0,0x12],       // sampling on
            &[0x08, 0,0,0,8, 0,0,0,6, 0,4, 0,0,0,0],             // sampling off all
            &[0x08, 0,0,0,8, 0,0,0,2, 0,5],
            &[0x08, 0,0,0,8, 0,0,0,2, 0,6],
            &[0x08, 0,0,0,8, 0,0,0,4, 0,7, 0,3],                 // depth 3
            &[0x08, 0,0,0,8, 0,0,0,2, 0,9],                      // unknown sub, no body
            &[0x05, 0,0,0,5, 0,0,0,0],                           // EXIT
            &[0xFF],                                             // EOF: nothing after the tag
        ].concat();
        let (cmds, end) = read_all(&bytes);
        assert!(matches!(end, CommandError::Closed), "{end}");
        assert_eq!(
            cmds,
            vec![
                Command::ForceGc,
                Command::DumpHeap,
                Command::AllocSites {
                    flags: 6,
                    cutoff: 0.01
                },
                Command::HeapSummary,
                Command::DumpTraces,
                Command::CpuSamples {
                    ignored: 0xABCD,
                    cutoff: 0.5
                },
                Command::Control(Control::AllocTracking(true)),
                Command::Control(Control::AllocTracking(false)),
                Command::Control(Control::Sampling {
                    on: true,
                    thread: ThreadRef([0x50, 0, 0, 0x12])
                }),
                Command::Control(Control::Sampling {
                    on: false,
                    thread: ThreadRef([0; 4])
                }),
                Command::Control(Control::ClearCpuSamples),
                Command::Control(Control::ClearAllocSites),
                Command::Control(Control::SetMaxDepth(3)),
                Command::Control(Control::Unknown(9)),
                Command::Exit,
                Command::Eof,
            ]
        );
    }

    #[test]
    fn encode_round_trips_and_uses_true_lengths() {
        let all = [
            Command::ForceGc,
            Command::DumpHeap,
            Command::AllocSites {
                flags: 3,
                cutoff: 0.25,
            },
            Command::HeapSummary,
            Command::Exit,
            Command::DumpTraces,
            Command::CpuSamples {
                ignored: 0,
                cutoff: 0.0001,
            },
            Command::Control(Control::AllocTracking(true)),
            Command::Control(Control::Sampling {
                on: false,
                thread: ThreadRef::from_id(0x5000_0007),
            }),
            Command::Control(Control::SetMaxDepth(12)),
            Command::Control(Control::ClearAllocSites),
            Command::Eof,
        ];
        let mut bytes = Vec::new();
        for (i, c) in all.iter().enumerate() {
            let b = c.encode(i as u32);
            if *c != Command::Eof {
                let len = u32::from_be_bytes(b[5..9].try_into().unwrap()) as usize;
                assert_eq!(len, b.len() - 9, "{c}");
                assert_eq!(u32::from_be_bytes(b[1..5].try_into().unwrap()), i as u32);
            }
            bytes.extend(b);
        }
        let (cmds, _) = read_all(&bytes);
        assert_eq!(cmds, all);
    }

    #[test]
    fn zero_byte_read_is_a_close_not_a_spin() {
        let mut r = CommandReader::new(&[][..]);
        assert!(matches!(r.next_command(), Err(CommandError::Closed)));
        // Asking again after the close stays closed (no busy loop upstream).
        assert!(matches!(r.next_command(), Err(CommandError::Closed)));
    }

    #[test]
    fn truncated_commands_are_reported_with_their_offset() {
        let bytes = [
            0x01, 0, 0, 0, 0, 0, 0, 0, 0, /* cut inside SITES: */ 0x03, 0, 0, 0, 1, 0, 0, 0,
            6, 0, 1, 0x3C,
        ];
        let (cmds, end) = read_all(&bytes);
        assert_eq!(cmds, vec![Command::ForceGc]);
        match end {
            CommandError::Truncated { tag, offset } => {
                assert_eq!((tag, offset), (tag::ALLOC_SITES, 9))
            }
            other => panic!("{other}"),
        }
        // Cut inside the header of a CONTROL depth command.
        let (cmds, end) = read_all(&[0x08, 0, 0, 0, 0, 0, 0, 0, 4, 0, 7, 0]);
        assert!(cmds.is_empty());
        assert!(matches!(
            end,
            CommandError::Truncated {
                tag: tag::CONTROL,
                offset: 0
            }
        ));
    }

    #[test]
    fn unknown_tags_stop_the_reader() {
        for t in [0x00u8, 0x09, 0x41, 0xFE] {
            let (cmds, end) = read_all(&[0x06, 0, 0, 0, 0, 0, 0, 0, 0, t, 1, 2, 3]);
            assert_eq!(cmds, vec![Command::DumpTraces]);
            match end {
                CommandError::UnknownTag { tag, offset } => assert_eq!((tag, offset), (t, 9)),
                other => panic!("{other}"),
            }
        }
        assert_eq!(
            CommandError::UnknownTag { tag: 71, offset: 0 }.to_string(),
            "failed to recognize cmd 71 at offset 0"
        );
    }

    #[test]
    fn thread_refs_prefer_big_endian_and_fall_back_to_native_order() {
        let known = |id: u32| id == 0x5000_0012 || id == 0x1200_0050;
        let be = ThreadRef([0x50, 0, 0, 0x12]);
        assert_eq!(be.big_endian(), 0x5000_0012);
        assert_eq!(
            be.resolve(known),
            Some(0x5000_0012),
            "both match: the documented order wins"
        );
        let le = ThreadRef(0x5000_0012u32.to_le_bytes());
        assert_eq!(
            le.resolve(|id| id == 0x5000_0012),
            Some(0x5000_0012),
            "original's native order"
        );
        assert_eq!(ThreadRef::from_id(0x5000_0099).resolve(known), None);
        assert!(ThreadRef([0; 4]).is_all());
    }

    #[test]
    fn text_syntax() {
        let p = |s: &str| s.parse::<Command>();
        assert_eq!(p("gc"), Ok(Command::ForceGc));
        assert_eq!(
            p("sites"),
            Ok(Command::AllocSites {
                flags: 0,
                cutoff: 0.0001
            })
        );
        assert_eq!(
            p("sites 0x6 0.05"),
            Ok(Command::AllocSites {
                flags: 6,
                cutoff: 0.05
            })
        );
        assert_eq!(
            p("cpu 0"),
            Ok(Command::CpuSamples {
                ignored: 0,
                cutoff: 0.0
            })
        );
        assert_eq!(
            p("sampling-off 50000012"),
            Ok(Command::Control(Control::Sampling {
                on: false,
                thread: ThreadRef::from_id(0x5000_0012)
            }))
        );
        assert_eq!(
            p("sampling-on"),
            Ok(Command::Control(Control::Sampling {
                on: true,
                thread: ThreadRef([0; 4])
            }))
        );
        assert_eq!(p("depth 4"), Ok(Command::Control(Control::SetMaxDepth(4))));
        assert_eq!(p("  eof "), Ok(Command::Eof));
        assert_eq!(
            p("depth 70000"),
            Err("70000 does not fit in 16 bits".into())
        );
        assert_eq!(p("gc now"), Err("too many arguments for 'gc'".into()));
        assert_eq!(p("frobnicate"), Err("unknown command 'frobnicate'".into()));
        assert_eq!(p("cpu x"), Err("'x' is not a cutoff ratio".into()));
        assert_eq!(p(""), Err("empty command".into()));
    }
}
