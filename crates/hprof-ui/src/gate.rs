//! Who gets in: connections that have not yet shown they belong here
//! (a page request before its head is read, an agent before it has sent
//! its token) are held apart from the served ones, few at a time and
//! briefly, so peers without the token cannot take the slots, sessions or
//! threads the user's page and agents need (docs/ui.md, "Safety").
//!
//! * [`Waiting`]: the connections being checked on one port, at most a
//!   fixed number; one more turns the oldest away (a peer that connects
//!   and stays silent cannot keep out one that speaks at once).
//! * [`prove`]: an agent's first line must be the port's secret (the wire
//!   form of the agent's `token=`/`tokenfile=` with `net=`,
//!   docs/socket-protocol.md), within [`PROVE_WITHIN`]; otherwise it gets
//!   `HPROF-RS REFUSED: <why>` and is closed.

use super::lock;
use super::secrets::same;
use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long an agent has to send its token after connecting (it sends it
/// at once).
pub const PROVE_WITHIN: Duration = Duration::from_secs(5);
/// Longest token line read.
pub const MAX_TOKEN_LINE: usize = 4096;
/// Refusals said on the UI's standard error in one run; later ones are
/// counted silently.
const REFUSALS_SAID: usize = 10;

/// Connections being checked on one port.
pub struct Waiting {
    max: usize,
    next: AtomicU64,
    open: Mutex<VecDeque<(u64, TcpStream)>>,
    /// Turned away because newer ones came.
    pub evicted: AtomicU64,
}

/// One connection in [`Waiting`]; leaves it when dropped.
pub struct Ticket {
    waiting: Arc<Waiting>,
    id: u64,
}

impl Waiting {
    pub fn new(max: usize) -> Arc<Waiting> {
        Arc::new(Waiting {
            max: max.max(1),
            next: AtomicU64::new(0),
            open: Mutex::new(VecDeque::new()),
            evicted: AtomicU64::new(0),
        })
    }

    /// Take a place for `stream`, turning the oldest connection away when
    /// all are taken (its reads fail at once: it is shut down).
    pub fn enter(self: &Arc<Self>, stream: &TcpStream) -> Ticket {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let mut open = lock(&self.open);
        while open.len() >= self.max {
            if let Some((_, oldest)) = open.pop_front() {
                let _ = oldest.shutdown(Shutdown::Both);
                self.evicted.fetch_add(1, Ordering::Relaxed);
            }
        }
        if let Ok(s) = stream.try_clone() {
            open.push_back((id, s));
        }
        Ticket {
            waiting: self.clone(),
            id,
        }
    }

    /// Connections being checked now.
    pub fn len(&self) -> usize {
        lock(&self.open).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        lock(&self.waiting.open).retain(|(id, _)| *id != self.id);
    }
}

/// An agent that sent the right secret: its connection and the bytes that
/// came after the token line (the start of its stream).
pub struct Proven {
    pub stream: TcpStream,
    pub leftover: Vec<u8>,
}

/// Why a connection was refused (also its `HPROF-RS REFUSED:` line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    WrongToken,
    /// Its first bytes were an HPROF stream: an agent started without the
    /// token option.
    NoToken,
    Silent,
    TooLong,
    Closed,
    /// Proven, but as many agents as the UI serves are connected.
    Busy,
}

impl Refusal {
    pub fn why(&self) -> &'static str {
        match self {
            Refusal::WrongToken => "wrong token",
            Refusal::NoToken => {
                "no token: start the agent with the options hprof-rs ui printed (tokenfile=)"
            }
            Refusal::Silent => "sent no token within 5 s",
            Refusal::TooLong => "no token line (too long)",
            Refusal::Closed => "closed before sending the token",
            Refusal::Busy => "too many agents are connected",
        }
    }
}

/// Read the first line of `stream` within [`PROVE_WITHIN`] and compare it
/// with `secret`. On a refusal the peer gets the reason (when it is still
/// there) and the connection is closed.
pub fn prove(stream: TcpStream, secret: &[u8]) -> Result<Proven, Refusal> {
    let start = Instant::now();
    let mut got = Vec::with_capacity(128);
    let mut chunk = [0u8; 512];
    let outcome = loop {
        if let Some(nl) = got.iter().position(|&b| b == b'\n') {
            let line = &got[..nl];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            break if same(line, secret) {
                Ok(got[nl + 1..].to_vec())
            } else if got.starts_with(b"JAVA PROFILE") {
                Err(Refusal::NoToken)
            } else {
                Err(Refusal::WrongToken)
            };
        }
        if got.starts_with(b"JAVA PROFILE") && got.len() > secret.len() + 1 {
            break Err(Refusal::NoToken);
        }
        if got.len() > MAX_TOKEN_LINE {
            break Err(Refusal::TooLong);
        }
        let left = PROVE_WITHIN.saturating_sub(start.elapsed());
        if left.is_zero() {
            break Err(Refusal::Silent);
        }
        let _ = stream.set_read_timeout(Some(left));
        match (&stream).read(&mut chunk) {
            Ok(0) => break Err(Refusal::Closed),
            Ok(n) => got.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                break Err(Refusal::Silent)
            }
            Err(_) => break Err(Refusal::Closed),
        }
    };
    match outcome {
        Ok(leftover) => {
            let _ = stream.set_read_timeout(None);
            Ok(Proven { stream, leftover })
        }
        Err(r) => {
            refuse(&stream, &r);
            Err(r)
        }
    }
}

/// Say why, then close. What the agent already sent is read and dropped
/// for a moment first: closing a socket with unread bytes resets the
/// connection, which can lose the line before the agent reads it.
pub fn refuse(stream: &TcpStream, r: &Refusal) {
    let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
    let _ = (&*stream).write_all(format!("HPROF-RS REFUSED: {}\n", r.why()).as_bytes());
    let _ = stream.shutdown(Shutdown::Write);
    if matches!(r, Refusal::Closed) {
        return;
    }
    let until = Instant::now() + Duration::from_millis(500);
    let mut sink = [0u8; 8192];
    let mut read = 0usize;
    while read < (1 << 20) {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            break;
        }
        match (&*stream).read(&mut sink) {
            Ok(0) | Err(_) => break,
            Ok(n) => read += n,
        }
    }
}

/// One line on the UI's standard error per refusal, the first
/// [`REFUSALS_SAID`] of the run.
pub fn say_refused(port: &str, peer: &str, r: &Refusal) {
    static SAID: AtomicUsize = AtomicUsize::new(0);
    let n = SAID.fetch_add(1, Ordering::Relaxed);
    if n < REFUSALS_SAID {
        eprintln!(
            "hprof-rs ui: refused a connection from {peer} on the {port}: {}",
            r.why()
        );
    } else if n == REFUSALS_SAID {
        eprintln!("hprof-rs ui: (further refused connections are not shown)");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        (c, s)
    }

    #[test]
    fn the_secret_line_lets_the_stream_through() {
        let (mut c, s) = pair();
        c.write_all(b"s3cret\nJAVA PROFILE 1.0.2\0rest").unwrap();
        let p = prove(s, b"s3cret").unwrap();
        assert_eq!(p.leftover, b"JAVA PROFILE 1.0.2\0rest");
        let (mut c, s) = pair();
        c.write_all(b"s3cret\r\n").unwrap();
        assert!(prove(s, b"s3cret").unwrap().leftover.is_empty());
    }

    #[test]
    fn every_other_first_line_is_refused_with_its_reason() {
        for (sent, why) in [
            (&b"s3creT\n"[..], Refusal::WrongToken),
            (b"s3cret2\n", Refusal::WrongToken),
            (b"\n", Refusal::WrongToken),
            (b"JAVA PROFILE 1.0.2\0\0\0\0\x08", Refusal::NoToken),
        ] {
            let (mut c, s) = pair();
            c.write_all(sent).unwrap();
            assert_eq!(prove(s, b"s3cret").err(), Some(why.clone()));
            let mut answer = String::new();
            c.read_to_string(&mut answer).unwrap();
            assert_eq!(answer, format!("HPROF-RS REFUSED: {}\n", why.why()));
        }
        let (mut c, s) = pair();
        c.write_all(&[b'x'; MAX_TOKEN_LINE + 10]).unwrap();
        assert_eq!(prove(s, b"s3cret").err(), Some(Refusal::TooLong));
        let (c, s) = pair();
        drop(c);
        assert_eq!(prove(s, b"s3cret").err(), Some(Refusal::Closed));
    }

    #[test]
    fn a_full_waiting_room_turns_the_oldest_away() {
        let w = Waiting::new(2);
        let (_c1, s1) = pair();
        let (_c2, s2) = pair();
        let (_c3, s3) = pair();
        let t1 = w.enter(&s1);
        let _t2 = w.enter(&s2);
        let _t3 = w.enter(&s3);
        assert_eq!(w.len(), 2);
        assert_eq!(w.evicted.load(Ordering::Relaxed), 1);
        let mut b = [0u8; 1];
        assert_eq!((&s1).read(&mut b).unwrap(), 0, "the oldest was shut down");
        drop(t1);
        assert_eq!(w.len(), 2, "its place was already given away");
    }
}
