//! The request `push=` (the agent) and `hprof-rs push` (the tool) send
//! (docs/push.md): `POST {path}/ingest?...` with a gzipped pprof body, to a
//! Pyroscope-compatible server, over plain TCP, every step under a
//! timeout. HTTP/1.1 with `Connection: close` and a `Content-Length` is all
//! such a server needs; a client library would bring TLS, pools and an
//! async runtime into the JVM's process for one request every few seconds.
//! The only HTTP in this crate, a client of one request.

use crate::options::push::PushTarget;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// How a post ended when it did not succeed.
#[derive(Debug, PartialEq, Eq)]
pub enum Failure {
    /// No answer: not reachable, refused, timed out, cut. Worth retrying.
    Unreachable(String),
    /// The server answered with this status line (not 2xx). 5xx is worth
    /// retrying; 4xx is not (the same request would be refused again).
    Status(u16, String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Unreachable(e) => f.write_str(e),
            Failure::Status(_, line) => write!(f, "the server answered \"{line}\""),
        }
    }
}

/// Sample types of a pushed CPU profile (`cpu` first: the default type,
/// and what makes Pyroscope file it as a CPU profile), with `period_type`
/// `cpu/nanoseconds`.
pub const CPU_TYPES: [(&str, &str); 2] = [("cpu", "nanoseconds"), ("samples", "count")];
/// Sample types of a pushed allocation profile: allocated during the
/// interval, then held live at its end (Go heap profiles' types).
pub const ALLOC_TYPES: [(&str, &str); 4] = [
    ("alloc_objects", "count"),
    ("alloc_space", "bytes"),
    ("inuse_objects", "count"),
    ("inuse_space", "bytes"),
];

/// `APP{k=v,...}`: the application name and labels as the server's `name`
/// parameter writes them (for pprof the server takes the profile type from
/// the sample types, not from a `.cpu` suffix: docs/push.md).
pub fn app_name_with_labels(app: &str, labels: &[(String, String)]) -> String {
    let l: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{app}{{{}}}", l.join(","))
}

/// The query of one profile's post: `name` (percent-encoded here),
/// `from`/`until` in UNIX seconds, `format=pprof`, `spyName`, and for a
/// CPU profile `sampleRate` (Hz) from its period.
pub fn query(name: &str, from_s: i64, until_s: i64, spy: &str, period_ns: Option<i64>) -> String {
    let mut q = format!(
        "name={}&from={from_s}&until={until_s}&format=pprof&spyName={}",
        percent_encode(name),
        percent_encode(spy)
    );
    if let Some(p) = period_ns.filter(|&p| p > 0) {
        q.push_str(&format!("&sampleRate={}", (1_000_000_000 / p).max(1)));
    }
    q
}

/// `%XX` for every byte outside RFC 3986's unreserved set.
pub fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The request's bytes: head and body.
pub fn request(target: &PushTarget, query: &str, body: &[u8]) -> Vec<u8> {
    let host = if target.host.contains(':') {
        format!("[{}]:{}", target.host, target.port)
    } else {
        format!("{}:{}", target.host, target.port)
    };
    let mut r = format!(
        "POST {}/ingest?{query} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: hprof-rs/{}\r\n\
         Content-Type: application/octet-stream\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        target.path,
        env!("CARGO_PKG_VERSION"),
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(body);
    r
}

/// Send `req` and read the status line, all before `deadline` (each
/// connect, write and read gets what is left of it, at most `step`).
pub fn post(
    target: &PushTarget,
    req: &[u8],
    deadline: Instant,
    step: Duration,
) -> Result<(), Failure> {
    let left = || {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .map(|d| d.min(step))
            .ok_or_else(|| Failure::Unreachable("timed out".to_string()))
    };
    let addrs: Vec<SocketAddr> = (target.host.as_str(), target.port)
        .to_socket_addrs()
        .map_err(|e| Failure::Unreachable(format!("cannot resolve {}: {e}", target.host)))?
        .collect();
    let mut last = Failure::Unreachable(format!("{} has no address", target.host));
    let mut stream = None;
    for a in addrs {
        match TcpStream::connect_timeout(&a, left()?) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = Failure::Unreachable(format!("cannot connect to {a}: {e}")),
        }
    }
    let mut s = stream.ok_or(last)?;
    let io = |e: std::io::Error| Failure::Unreachable(format!("no answer: {e}"));
    let _ = s.set_nodelay(true);
    s.set_write_timeout(Some(left()?)).map_err(io)?;
    s.write_all(req).map_err(io)?;
    // The status line: read until the first CRLF (bounded).
    let mut head = Vec::with_capacity(256);
    let mut buf = [0u8; 512];
    while !head.windows(2).any(|w| w == b"\r\n") {
        s.set_read_timeout(Some(left()?)).map_err(io)?;
        let n = s.read(&mut buf).map_err(io)?;
        if n == 0 {
            return Err(Failure::Unreachable(
                "the server closed the connection without answering".to_string(),
            ));
        }
        head.extend_from_slice(&buf[..n]);
        if head.len() > 8192 {
            break;
        }
    }
    let line = status_line(&head);
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse::<u16>().ok())
        .filter(|_| line.starts_with("HTTP/"))
        .ok_or_else(|| Failure::Unreachable(format!("not an HTTP answer: \"{line}\"")))?;
    if (200..300).contains(&status) {
        Ok(())
    } else {
        Err(Failure::Status(status, line))
    }
}

/// The first line of what the server sent, as messages quote it: cut to
/// `STATUS_SHOWN` characters, its control characters escaped (whoever
/// answers on the port chose them: docs/push.md, "Messages").
fn status_line(head: &[u8]) -> String {
    let text = String::from_utf8_lossy(head);
    let first = text.split(['\r', '\n']).next().unwrap_or("").trim();
    let mut shown: String = first.chars().take(STATUS_SHOWN).collect();
    if first.chars().nth(STATUS_SHOWN).is_some() {
        shown.push('…');
    }
    crate::untrusted::escaped(&shown)
}

/// How much of a server's status line a message quotes.
const STATUS_SHOWN: usize = 200;

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn target(port: u16) -> PushTarget {
        PushTarget {
            host: "127.0.0.1".into(),
            port,
            path: "/base".into(),
            url: format!("http://127.0.0.1:{port}/base"),
        }
    }

    #[test]
    fn the_name_parameter_carries_the_labels() {
        assert_eq!(app_name_with_labels("shop", &[]), "shop{}");
        let l = vec![
            ("env".to_string(), "prod".to_string()),
            ("r".to_string(), "eu".to_string()),
        ];
        assert_eq!(app_name_with_labels("shop", &l), "shop{env=prod,r=eu}");
        assert_eq!(
            query("a{}", 1, 2, "hprof-rs", Some(10_000_000)),
            "name=a%7B%7D&from=1&until=2&format=pprof&spyName=hprof-rs&sampleRate=100"
        );
    }

    #[test]
    fn names_with_braces_are_percent_encoded() {
        assert_eq!(
            percent_encode("app{env=prod,r=eu}"),
            "app%7Benv%3Dprod%2Cr%3Deu%7D"
        );
    }

    #[test]
    fn what_the_server_answers_is_quoted_escaped_and_short() {
        for (answer, code) in [
            (
                &b"HTTP/1.1 403 \x1b]0;owned\x07 \x1b[2J no\r\n\r\n"[..],
                Some(403),
            ),
            (&b"\x1b[2J\xc2\x9b31m garbage\r\n"[..], None),
            (&[b'x'; 9000][..], None),
        ] {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let port = l.local_addr().unwrap().port();
            let answer = answer.to_vec();
            let server = std::thread::spawn(move || {
                let (mut c, _) = l.accept().unwrap();
                let mut got = vec![0u8; 4096];
                let _ = c.read(&mut got);
                let _ = c.write_all(&answer);
                std::thread::sleep(Duration::from_millis(100));
            });
            let t = target(port);
            let req = request(&t, "name=a&from=1&until=2", b"xyz");
            let r = post(
                &t,
                &req,
                Instant::now() + Duration::from_secs(5),
                STEP_FOR_TESTS,
            );
            server.join().unwrap();
            let message = match (&r, code) {
                (Err(Failure::Status(c, _)), Some(code)) => {
                    assert_eq!(*c, code);
                    r.unwrap_err().to_string()
                }
                (Err(Failure::Unreachable(_)), None) => r.unwrap_err().to_string(),
                _ => panic!("{r:?}"),
            };
            assert!(!message.chars().any(char::is_control), "{message:?}");
            assert!(message.chars().count() < 260, "{message:?}");
        }
        let quoted = status_line(b"HTTP/1.1 403 \x1b]0;owned\x07 no\r\n");
        assert_eq!(quoted, "HTTP/1.1 403 \\x1b]0;owned\\x07 no");
        assert_eq!(status_line(b"\xc2\x9b2J"), "\\u{9b}2J");
    }

    const STEP_FOR_TESTS: Duration = Duration::from_secs(5);

    #[test]
    fn a_post_reads_the_status_and_times_out_on_silence() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut c, _) = l.accept().unwrap();
            let mut got = vec![0u8; 4096];
            let n = c.read(&mut got).unwrap();
            c.write_all(b"HTTP/1.1 200 OK\r\n\r\n").unwrap();
            let (c2, _) = l.accept().unwrap(); // accepts and never answers
            std::thread::sleep(Duration::from_millis(600));
            drop(c2);
            String::from_utf8_lossy(&got[..n]).to_string()
        });
        let t = target(port);
        let req = request(&t, "name=a&from=1&until=2", b"xyz");
        let far = Instant::now() + Duration::from_secs(5);
        assert_eq!(post(&t, &req, far, Duration::from_secs(5)), Ok(()));
        let start = Instant::now();
        let r = post(
            &t,
            &req,
            Instant::now() + Duration::from_millis(300),
            Duration::from_secs(5),
        );
        assert!(matches!(r, Err(Failure::Unreachable(_))), "{r:?}");
        assert!(
            start.elapsed() < Duration::from_millis(550),
            "bounded by the deadline"
        );
        let head = server.join().unwrap();
        assert!(
            head.starts_with("POST /base/ingest?name=a&from=1&until=2 HTTP/1.1\r\n"),
            "{head}"
        );
        assert!(
            head.contains("Content-Length: 3\r\n") && head.ends_with("\r\n\r\nxyz"),
            "{head}"
        );
    }
}
