//! The few parts of HTTP/1.1 the UI needs, on std: one request per
//! connection (`Connection: close`), a bounded head, no chunked uploads.
//! The head is read first so that the security checks run before any body
//! is accepted; small bodies (commands, queries) are then read whole up to
//! [`MAX_BODY`], and an upload is streamed by its handler up to its own
//! bound.

use std::collections::HashMap;
use std::io::{Read, Write};

/// Request line and headers together.
pub const MAX_HEAD: usize = 16 * 1024;
/// Request bodies read into memory (commands, view queries, launch forms).
pub const MAX_BODY: usize = 64 * 1024;

pub struct Request {
    pub method: String,
    pub path: String,
    pub query: HashMap<String, String>,
    /// Header names in lower case.
    pub headers: HashMap<String, String>,
    /// The declared body length (0 without Content-Length).
    pub content_length: u64,
    /// Body bytes: after [`read_body`], the whole body; before, the bytes
    /// that came in with the head.
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query.get(name).map(String::as_str)
    }
}

/// Read the request line and headers; `Err` carries the status to answer
/// with. Body bytes read past the head are kept in `body`.
pub fn read_head(r: &mut impl Read) -> Result<Request, (u16, String)> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    let head_end = loop {
        let found = find(&buf, b"\r\n\r\n");
        if found.unwrap_or(buf.len()) > MAX_HEAD {
            return Err((431, "request head too large".into()));
        }
        if let Some(p) = found {
            break p;
        }
        let n = r
            .read(&mut chunk)
            .map_err(|e| (400, format!("read: {e}")))?;
        if n == 0 {
            return Err((400, "connection closed in the request head".into()));
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = std::str::from_utf8(&buf[..head_end]).map_err(|_| (400, "head not UTF-8".into()))?;
    let mut lines = head.split("\r\n");
    let line = lines.next().unwrap_or("");
    let mut parts = line.split(' ');
    let (method, target) = match (parts.next(), parts.next(), parts.next()) {
        (Some(m), Some(t), Some(v)) if v.starts_with("HTTP/1.") => (m.to_string(), t),
        _ => return Err((400, "bad request line".into())),
    };
    let mut headers = HashMap::new();
    for l in lines {
        let (k, v) = l
            .split_once(':')
            .ok_or((400, "bad header line".to_string()))?;
        headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
    }
    if headers.contains_key("transfer-encoding") {
        return Err((411, "chunked bodies are not accepted".into()));
    }
    let content_length: u64 = match headers.get("content-length") {
        None => 0,
        Some(v) => v
            .parse()
            .map_err(|_| (400, "bad Content-Length".to_string()))?,
    };
    let mut body = buf[head_end + 4..].to_vec();
    body.truncate(usize::try_from(content_length).unwrap_or(usize::MAX));
    let (path, q) = target.split_once('?').unwrap_or((target, ""));
    let query = q
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect();
    Ok(Request {
        method,
        path: percent_decode(path),
        query,
        headers,
        content_length,
        body,
    })
}

/// Read the rest of a body of at most `limit` bytes into `req.body`.
pub fn read_body(req: &mut Request, r: &mut impl Read, limit: usize) -> Result<(), (u16, String)> {
    let len = usize::try_from(req.content_length).unwrap_or(usize::MAX);
    if len > limit {
        return Err((413, format!("body over {limit} bytes")));
    }
    let mut chunk = [0u8; 8192];
    while req.body.len() < len {
        let n = r
            .read(&mut chunk)
            .map_err(|e| (400, format!("read: {e}")))?;
        if n == 0 {
            return Err((400, "connection closed in the body".into()));
        }
        let take = n.min(len - req.body.len());
        req.body.extend_from_slice(&chunk[..take]);
    }
    Ok(())
}

/// The body of `req` as a stream: the bytes that came with the head, then
/// the rest from `r`, exactly Content-Length bytes in all.
pub fn body_reader<'a, R: Read>(req: &'a Request, r: &'a mut R) -> impl Read + 'a {
    let early = req.body.len() as u64;
    std::io::Cursor::new(&req.body[..]).chain(r.take(req.content_length.saturating_sub(early)))
}

/// Head and body in one call (tests, and handlers that need no streaming).
pub fn read_request(r: &mut impl Read) -> Result<Request, (u16, String)> {
    let mut req = read_head(r)?;
    read_body(&mut req, r, MAX_BODY)?;
    Ok(req)
}

/// Reads from a socket until a deadline: each read may wait only for the
/// time left (per-read timeouts alone let a slow client go on forever).
pub struct Deadline<'a> {
    stream: &'a std::net::TcpStream,
    until: std::time::Instant,
}

impl<'a> Deadline<'a> {
    pub fn new(stream: &'a std::net::TcpStream, within: std::time::Duration) -> Self {
        Deadline {
            stream,
            until: std::time::Instant::now() + within,
        }
    }
}

impl Read for Deadline<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let too_long =
            || std::io::Error::new(std::io::ErrorKind::TimedOut, "the request took too long");
        let left = self
            .until
            .saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err(too_long());
        }
        self.stream.set_read_timeout(Some(left))?;
        let mut s = self.stream;
        match s.read(buf) {
            // The socket's timeout is the deadline: when it expires inside
            // this read, Linux says EAGAIN, which would reach the client as
            // "Resource temporarily unavailable".
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                Err(too_long())
            }
            r => r,
        }
    }
}

fn find(h: &[u8], n: &[u8]) -> Option<usize> {
    h.windows(n.len()).position(|w| w == n)
}

/// `%XX` and `+` decoding; invalid escapes are kept as written.
pub fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                match u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("x"), 16) {
                    Ok(v) => {
                        out.push(v);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Payload Too Large",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Error",
    }
}

/// Status line and headers. `len` None: no Content-Length (an event
/// stream, ended by closing the connection). `extra` headers are written
/// as given; callers only pass values they built themselves.
pub fn write_head(
    w: &mut impl Write,
    status: u16,
    ctype: &str,
    len: Option<u64>,
    extra: &[(&str, String)],
) -> std::io::Result<()> {
    let mut h = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {ctype}\r\n",
        reason(status)
    );
    if let Some(n) = len {
        h += &format!("Content-Length: {n}\r\n");
    }
    for (k, v) in extra {
        h += &format!("{k}: {v}\r\n");
    }
    // no-referrer: the token in the URL must not leak to other sites;
    // the CSP forbids loading anything from elsewhere. A reply that gives
    // its own policy (the flame graph shown in the page: its script by
    // hash, framed by the page only) gives its own framing rule with it.
    h += "Connection: close\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n\
          Referrer-Policy: no-referrer\r\n";
    if !extra
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("Content-Security-Policy"))
    {
        h += "X-Frame-Options: DENY\r\n\
              Content-Security-Policy: default-src 'none'; script-src 'self'; \
              style-src 'self'; connect-src 'self'; img-src data:; frame-src 'self'; \
              frame-ancestors 'none'\r\n";
    }
    h += "\r\n";
    w.write_all(h.as_bytes())
}

pub fn respond(w: &mut impl Write, status: u16, ctype: &str, body: &[u8]) -> std::io::Result<()> {
    write_head(w, status, ctype, Some(body.len() as u64), &[])?;
    w.write_all(body)?;
    w.flush()
}

/// `attachment; filename="..."` with the name reduced to safe characters
/// (it comes from session sources, which may be file names or uploads).
pub fn attachment(name: &str) -> (&'static str, String) {
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    (
        "Content-Disposition",
        format!("attachment; filename=\"{clean}\""),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_request_with_query_and_body() {
        let raw = b"POST /api/x%20y?token=ab%2Fc&f=java.%2C+!.io. HTTP/1.1\r\nHost: h:1\r\nContent-Length: 2\r\n\r\ngcEXTRA";
        let r = read_request(&mut &raw[..]).unwrap();
        assert_eq!(r.method, "POST");
        assert_eq!(r.path, "/api/x y");
        assert_eq!(r.param("token"), Some("ab/c"));
        assert_eq!(r.param("f"), Some("java., !.io."));
        assert_eq!(r.header("host"), Some("h:1"));
        assert_eq!(r.body, b"gc");
    }

    #[test]
    fn refuses_oversized_and_malformed_requests() {
        let big = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(MAX_HEAD));
        assert_eq!(read_request(&mut big.as_bytes()).err().unwrap().0, 431);
        let body = format!(
            "POST / HTTP/1.1\r\nContent-Length: {}\r\n\r\n",
            MAX_BODY + 1
        );
        assert_eq!(read_request(&mut body.as_bytes()).err().unwrap().0, 413);
        let huge = "POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n";
        assert_eq!(read_request(&mut huge.as_bytes()).err().unwrap().0, 400);
        assert_eq!(
            read_request(&mut &b"garbage\r\n\r\n"[..]).err().unwrap().0,
            400
        );
        let chunked = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert_eq!(read_request(&mut chunked.as_bytes()).err().unwrap().0, 411);
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
    }

    #[test]
    fn a_streamed_body_is_exactly_content_length_bytes() {
        let raw = b"POST /u HTTP/1.1\r\nContent-Length: 10\r\n\r\n0123";
        let mut rest: &[u8] = b"456789TRAILING";
        let mut head = &raw[..];
        let req = read_head(&mut head).unwrap();
        assert_eq!(req.content_length, 10);
        let mut got = Vec::new();
        body_reader(&req, &mut rest).read_to_end(&mut got).unwrap();
        assert_eq!(got, b"0123456789");
    }

    #[test]
    fn a_slow_head_is_cut_at_the_deadline() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (server, _) = l.accept().unwrap();
        server
            .set_read_timeout(Some(std::time::Duration::from_secs(30)))
            .unwrap();
        // A byte now and then, never the end of the head.
        let writer = std::thread::spawn(move || {
            for _ in 0..10 {
                if client.write_all(b"G").is_err() {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        });
        let start = std::time::Instant::now();
        let mut d = Deadline::new(&server, std::time::Duration::from_millis(300));
        let e = read_head(&mut d).err().unwrap();
        assert_eq!(e.0, 400);
        assert!(e.1.contains("too long"), "{e:?}");
        assert!(start.elapsed() < std::time::Duration::from_secs(2));
        drop(server);
        writer.join().unwrap();
    }

    #[test]
    fn attachment_names_are_reduced_to_safe_characters() {
        let (k, v) = attachment("a\"b\r\nc/../x.hprof");
        assert_eq!(k, "Content-Disposition");
        assert_eq!(v, "attachment; filename=\"a_b__c_.._x.hprof\"");
    }
}
