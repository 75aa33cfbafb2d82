//! The checks every request passes before anything else: the random token
//! of the printed URL, a Host header naming this server (against DNS
//! rebinding) and, when present, an Origin of this server (against other
//! sites' pages). They run on the request head, before any body is read.

use super::http::Request;
use std::io::Read;
use std::net::SocketAddr;

/// 128 random bits from the kernel, as hex.
pub fn random_token() -> Result<String, String> {
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .map_err(|e| format!("cannot read /dev/urandom for the access token: {e}"))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// Host header values that name the server bound at `addr`.
pub fn host_names(addr: SocketAddr) -> Vec<String> {
    let port = addr.port();
    let mut v = vec![match addr {
        SocketAddr::V4(a) => format!("{}:{port}", a.ip()),
        SocketAddr::V6(a) => format!("[{}]:{port}", a.ip()),
    }];
    if addr.ip().is_loopback() {
        v.push(format!("localhost:{port}"));
        v.push(format!("127.0.0.1:{port}"));
        v.push(format!("[::1]:{port}"));
    }
    v
}

/// Token comparison that does not stop at the first differing byte.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// Ok when the request may go on; otherwise why not (answered with 403).
pub fn allowed(token: &str, hosts: &[String], req: &Request) -> Result<(), &'static str> {
    let host = req.header("host").ok_or("no Host header")?;
    if !hosts.iter().any(|h| h.eq_ignore_ascii_case(host)) {
        return Err("Host header does not name this server");
    }
    if let Some(origin) = req.header("origin") {
        if !hosts
            .iter()
            .any(|h| origin.eq_ignore_ascii_case(&format!("http://{h}")))
        {
            return Err("request from a foreign Origin");
        }
    }
    match req.param("token") {
        Some(t) if same(t, token) => Ok(()),
        _ => Err("missing or wrong token"),
    }
}

#[cfg(test)]
mod tests {
    use super::super::http::read_request;
    use super::*;

    fn check(raw: &str) -> Result<(), &'static str> {
        let hosts = host_names("127.0.0.1:8080".parse().unwrap());
        let req = read_request(&mut raw.as_bytes()).unwrap();
        allowed("abc", &hosts, &req)
    }

    #[test]
    fn token_host_and_origin_are_all_required() {
        assert!(check("GET /?token=abc HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n").is_ok());
        assert!(check("GET /?token=abc HTTP/1.1\r\nHost: localhost:8080\r\nOrigin: http://127.0.0.1:8080\r\n\r\n").is_ok());
        assert!(check("GET /?token=abd HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n").is_err());
        assert!(check("GET /?token=ab HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n").is_err());
        assert!(check("GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n").is_err());
        assert!(check("GET /?token=abc HTTP/1.1\r\n\r\n").is_err());
        assert!(check("GET /?token=abc HTTP/1.1\r\nHost: evil.example:8080\r\n\r\n").is_err());
        assert!(check("GET /?token=abc HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nOrigin: http://evil.example\r\n\r\n").is_err());
        assert!(
            check("GET /?token=abc HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nOrigin: null\r\n\r\n")
                .is_err()
        );
        assert_eq!(random_token().unwrap().len(), 32);
        assert_ne!(random_token().unwrap(), random_token().unwrap());
    }
}
