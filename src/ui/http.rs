//! The few parts of HTTP/1.1 the UI needs, on std: one request per
//! connection (`Connection: close`), bounded head and body, no chunked
//! uploads. The page only fetches small JSON and posts short commands.

use std::collections::HashMap;
use std::io::{Read, Write};

/// Request line and headers together.
pub const MAX_HEAD: usize = 16 * 1024;
/// Request bodies (commands).
pub const MAX_BODY: usize = 64 * 1024;

pub struct Request {
    pub method: String,
    pub path: String,
    pub query: HashMap<String, String>,
    /// Header names in lower case.
    pub headers: HashMap<String, String>,
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

/// Read one request; `Err` carries the status to answer with.
pub fn read_request(r: &mut impl Read) -> Result<Request, (u16, String)> {
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
    let len: usize = match headers.get("content-length") {
        None => 0,
        Some(v) => v
            .parse()
            .map_err(|_| (400, "bad Content-Length".to_string()))?,
    };
    if len > MAX_BODY {
        return Err((413, format!("body over {MAX_BODY} bytes")));
    }
    let mut body = buf[head_end + 4..].to_vec();
    body.truncate(len);
    while body.len() < len {
        let n = r
            .read(&mut chunk)
            .map_err(|e| (400, format!("read: {e}")))?;
        if n == 0 {
            return Err((400, "connection closed in the body".into()));
        }
        let take = n.min(len - body.len());
        body.extend_from_slice(&chunk[..take]);
    }
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
        body,
    })
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

pub fn respond(w: &mut impl Write, status: u16, ctype: &str, body: &[u8]) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Payload Too Large",
        431 => "Request Header Fields Too Large",
        _ => "Error",
    };
    // no-referrer: the token in the URL must not leak to other sites;
    // the CSP forbids loading anything from elsewhere.
    write!(
        w,
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n\
         Connection: close\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n\
         Referrer-Policy: no-referrer\r\nX-Frame-Options: DENY\r\n\
         Content-Security-Policy: default-src 'none'; script-src 'unsafe-inline'; \
         style-src 'unsafe-inline'; connect-src 'self'; img-src data:; frame-ancestors 'none'\r\n\r\n",
        body.len()
    )?;
    w.write_all(body)?;
    w.flush()
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
        assert_eq!(
            read_request(&mut &b"garbage\r\n\r\n"[..]).err().unwrap().0,
            400
        );
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
    }
}
