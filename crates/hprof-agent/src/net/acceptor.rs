//! `listen=`: the thread that accepts front-ends on the agent's port
//! (docs/socket-protocol.md, "The agent listens").
//!
//! One front-end at a time: while one is connected, every other connection
//! is refused at once. With a token, a connection must send it first, as
//! one line, within [`TOKEN_WAIT`]; a wrong token, a line that is too long,
//! silence or a close end that connection. Up to [`MAX_HANDSHAKES`]
//! connections may be sending their token at the same time; a new one
//! beyond that turns the oldest away. The thread never blocks on any of
//! them (every socket is non-blocking), so peers that connect and stall
//! cannot keep out a real front-end, which sends its token at once, nor
//! hold up the program. A refused peer is
//! sent one line saying why (`HPROF-RS REFUSED: ...`), and the program's
//! standard error gets one line per refusal, at most [`MAX_REPORTED`] per
//! run, so a flood of connections cannot flood the program's output.
//!
//! This is a plain thread, not an agent thread: it makes no JNI or JVMTI
//! call. An accepted front-end is handed to the listener thread, which
//! replays the recording to it and reads its commands.

use crate::sink::record::FrontEnd;
use crossbeam_channel::{bounded, Receiver, Sender};
use parking_lot::Mutex;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a connection has to send its token.
pub const TOKEN_WAIT: Duration = Duration::from_secs(5);
/// Connections sending their token at the same time, at most.
pub const MAX_HANDSHAKES: usize = 8;
/// Longest token line (the option value's limit, plus the newline).
const MAX_TOKEN_LINE: usize = 4096 + 2;
/// Refusals reported on standard error per run, at most.
pub const MAX_REPORTED: u32 = 10;
/// The accept loop's pace: how soon a new connection or a stop request is
/// seen while nothing else happens.
const IDLE_TICK: Duration = Duration::from_millis(100);
const HANDSHAKE_TICK: Duration = Duration::from_millis(10);

/// A front-end that may now have the stream, with any bytes it sent after
/// its token line (its first commands).
pub struct Accepted {
    pub front_end: Arc<FrontEnd>,
    pub leftover: Vec<u8>,
}

/// The accepting thread and what the listener thread sees of it.
pub struct Acceptor {
    stop: Arc<AtomicBool>,
    /// A front-end is connected (set here, cleared by the listener thread
    /// with [`Acceptor::release`]).
    busy: Arc<AtomicBool>,
    rx: Receiver<Accepted>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Acceptor {
    /// Start accepting on `listener`. `token`: the secret each connection
    /// must send first (None: none is asked for).
    pub fn start(listener: TcpListener, token: Option<Vec<u8>>) -> io::Result<Acceptor> {
        listener.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let busy = Arc::new(AtomicBool::new(false));
        let (tx, rx) = bounded(1);
        let mut run = Loop {
            listener,
            token,
            stop: stop.clone(),
            busy: busy.clone(),
            tx,
            pending: Vec::new(),
            reported: 0,
        };
        let thread = std::thread::Builder::new()
            .name("hprof-acceptor".into())
            .spawn(move || run.run())?;
        Ok(Acceptor {
            stop,
            busy,
            rx,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// The next accepted front-end, waiting at most `wait`.
    pub fn next(&self, wait: Duration) -> Option<Accepted> {
        self.rx.recv_timeout(wait).ok()
    }

    /// The front-end handed out by `next` is gone: the next may come.
    pub fn release(&self) {
        self.busy.store(false, Ordering::Release);
    }

    /// Stop accepting and close the port (bounded wait for the thread:
    /// it checks the flag at least every [`IDLE_TICK`]).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Release);
        let Some(t) = self.thread.lock().take() else {
            return;
        };
        let start = Instant::now();
        while !t.is_finished() && start.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(5));
        }
        if t.is_finished() {
            let _ = t.join();
        }
    }
}

/// A connection that has not sent its whole token line yet.
struct Handshake {
    stream: TcpStream,
    peer: String,
    buf: Vec<u8>,
    deadline: Instant,
}

struct Loop {
    listener: TcpListener,
    token: Option<Vec<u8>>,
    stop: Arc<AtomicBool>,
    busy: Arc<AtomicBool>,
    tx: Sender<Accepted>,
    pending: Vec<Handshake>,
    reported: u32,
}

impl Loop {
    fn run(&mut self) {
        while !self.stop.load(Ordering::Acquire) {
            loop {
                match self.listener.accept() {
                    Ok((s, peer)) => self.admit(s, peer.to_string()),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    // WouldBlock: nobody else is waiting. Anything else
                    // (out of file descriptors, a connection reset while
                    // queued) is the peer's or passing: try again later.
                    Err(_) => break,
                }
            }
            let pending = std::mem::take(&mut self.pending);
            for h in pending {
                if let Some(h) = self.progress(h) {
                    self.pending.push(h);
                }
            }
            std::thread::sleep(if self.pending.is_empty() {
                IDLE_TICK
            } else {
                HANDSHAKE_TICK
            });
        }
        // Stopping: connections still sending their token are closed with
        // the listening socket.
    }

    fn admit(&mut self, stream: TcpStream, peer: String) {
        if self.busy.load(Ordering::Acquire) {
            return self.refuse(stream, &peer, "another front-end is connected");
        }
        if self.token.is_none() {
            return self.hand_over(stream, peer, Vec::new());
        }
        if stream.set_nonblocking(true).is_err() {
            return;
        }
        if self.pending.len() >= MAX_HANDSHAKES {
            // The oldest has had the longest to send its token; a real
            // front-end sends it as soon as it connects.
            let oldest = self.pending.remove(0);
            self.refuse(
                oldest.stream,
                &oldest.peer,
                "too many connections are sending their token",
            );
        }
        let h = Handshake {
            stream,
            peer,
            buf: Vec::new(),
            deadline: Instant::now() + TOKEN_WAIT,
        };
        if let Some(h) = self.progress(h) {
            self.pending.push(h);
        }
    }

    /// Read what the connection sent; decide when its line is complete.
    /// Returns it when it must still be waited for.
    fn progress(&mut self, mut h: Handshake) -> Option<Handshake> {
        let mut chunk = [0u8; 512];
        loop {
            match h.stream.read(&mut chunk) {
                Ok(0) => {
                    self.refuse(h.stream, &h.peer, "closed before sending the token");
                    return None;
                }
                Ok(n) => {
                    h.buf.extend_from_slice(&chunk[..n]);
                    if let Some(i) = h.buf.iter().position(|&b| b == b'\n') {
                        let leftover = h.buf.split_off(i + 1);
                        let mut line = std::mem::take(&mut h.buf);
                        line.pop();
                        if line.last() == Some(&b'\r') {
                            line.pop();
                        }
                        let expected = self.token.as_deref().unwrap_or_default();
                        if !same_secret(&line, expected) {
                            self.refuse(h.stream, &h.peer, "wrong token");
                        } else if self.busy.load(Ordering::Acquire) {
                            self.refuse(h.stream, &h.peer, "another front-end is connected");
                        } else {
                            self.hand_over(h.stream, h.peer, leftover);
                        }
                        return None;
                    }
                    if h.buf.len() > MAX_TOKEN_LINE {
                        self.refuse(h.stream, &h.peer, "no token line (too long)");
                        return None;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return None,
            }
        }
        if Instant::now() >= h.deadline {
            let why = format!("sent no token within {} s", TOKEN_WAIT.as_secs());
            self.refuse(h.stream, &h.peer, &why);
            return None;
        }
        Some(h)
    }

    fn hand_over(&mut self, stream: TcpStream, peer: String, leftover: Vec<u8>) {
        let Ok(front_end) = FrontEnd::new(stream, peer) else {
            return;
        };
        self.busy.store(true, Ordering::Release);
        let accepted = Accepted {
            front_end,
            leftover,
        };
        if let Err(e) = self.tx.try_send(accepted) {
            // The listener thread has not taken the previous one: it is
            // stopping. Nobody will serve this one.
            let a = e.into_inner();
            let _ = a.front_end.stream.shutdown(Shutdown::Both);
        }
    }

    /// Tell the peer why (best effort: its socket may be full or gone),
    /// close, and say so on standard error within the per-run limit.
    fn refuse(&mut self, mut stream: TcpStream, peer: &str, why: &str) {
        let _ = stream.set_nonblocking(true);
        let _ = stream.write(format!("HPROF-RS REFUSED: {why}\n").as_bytes());
        let _ = stream.shutdown(Shutdown::Both);
        self.reported += 1;
        if self.reported <= MAX_REPORTED {
            crate::diag::rejected(&format!("front-end connection from {peer} refused: {why}"));
        }
        if self.reported == MAX_REPORTED {
            crate::diag::rejected("further refused front-end connections are not reported");
        }
    }
}

/// Compare a secret without an early exit at the first differing byte, so
/// the time taken does not tell how much of a guess was right. (The length
/// of the longer of the two can still be timed; the secret's length is not
/// the secret.)
pub fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    let n = given.len().max(expected.len());
    let mut diff = given.len() ^ expected.len();
    for i in 0..n {
        let a = given.get(i).copied().unwrap_or(0);
        let b = expected.get(i).copied().unwrap_or(0);
        diff |= usize::from(a ^ b);
    }
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_compare_by_every_byte_and_the_length() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abd", b"abc"));
        assert!(!same_secret(b"ab", b"abc"));
        assert!(!same_secret(b"abc\0", b"abc"));
        assert!(!same_secret(b"", b"abc"));
        assert!(same_secret(b"", b""));
    }

    fn connect(port: u16) -> TcpStream {
        let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s
    }

    fn said(mut s: TcpStream) -> String {
        let mut v = String::new();
        let _ = s.read_to_string(&mut v);
        v
    }

    #[test]
    fn token_busy_and_release() {
        crate::diag::captured::enable();
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let a = Acceptor::start(l, Some(b"s3cret".to_vec())).unwrap();

        let mut wrong = connect(port);
        wrong.write_all(b"guess\n").unwrap();
        assert_eq!(said(wrong), "HPROF-RS REFUSED: wrong token\n");

        let mut good = connect(port);
        good.write_all(b"s3cret\r\n\xff").unwrap();
        let acc = a.next(Duration::from_secs(5)).expect("accepted");
        assert_eq!(acc.leftover, b"\xff");

        // One at a time.
        let mut second = connect(port);
        second.write_all(b"s3cret\n").unwrap();
        assert_eq!(
            said(second),
            "HPROF-RS REFUSED: another front-end is connected\n"
        );

        drop(acc);
        drop(good);
        a.release();
        let mut third = connect(port);
        third.write_all(b"s3cret\n").unwrap();
        assert!(a.next(Duration::from_secs(5)).is_some());
        a.stop();
        assert!(
            TcpStream::connect(("127.0.0.1", port)).is_err(),
            "port closed"
        );
        let _ = crate::diag::captured::take_matching("refused");
    }

    #[test]
    fn stalled_and_garbage_connections_are_refused_without_delaying_others() {
        crate::diag::captured::enable();
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let a = Acceptor::start(l, Some(b"t".to_vec())).unwrap();
        // Peers that send nothing take the handshake slots...
        let mut stalled: Vec<TcpStream> = (0..MAX_HANDSHAKES).map(|_| connect(port)).collect();
        std::thread::sleep(Duration::from_millis(300));
        // ...so one more turns the oldest away; a real front-end, sending
        // its token at once, gets in all the same.
        stalled.push(connect(port));
        let oldest = stalled.remove(0);
        assert_eq!(
            said(oldest),
            "HPROF-RS REFUSED: too many connections are sending their token\n"
        );
        let mut ok = connect(port);
        ok.write_all(b"t\n").unwrap();
        let first = a
            .next(Duration::from_secs(2))
            .expect("accepted past the crowd");
        let t0 = Instant::now();
        for s in stalled {
            assert!(said(s).starts_with("HPROF-RS REFUSED: "));
        }
        assert!(t0.elapsed() < TOKEN_WAIT + Duration::from_secs(2));
        drop((first, ok));
        a.release();
        let mut junk = connect(port);
        let _ = junk.write_all(&vec![b'x'; MAX_TOKEN_LINE + 10]);
        assert_eq!(said(junk), "HPROF-RS REFUSED: no token line (too long)\n");
        let mut ok = connect(port);
        ok.write_all(b"t\n").unwrap();
        assert!(a.next(Duration::from_secs(5)).is_some());
        a.stop();
        let lines = crate::diag::captured::take_matching("refused");
        assert!(lines.len() as u32 <= MAX_REPORTED + 1, "{lines:?}");
    }
}
