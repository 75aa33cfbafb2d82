//! The checks every request passes before anything else: the random token
//! of the printed URL, a Host header naming this server (against DNS
//! rebinding) and, when present, an Origin of this server (against other
//! sites' pages). They run on the request head, before any body is read.

use super::http::Request;
use super::secrets::same;
use std::net::{IpAddr, SocketAddr};

/// 128 random bits from the kernel, as hex.
pub fn random_token() -> Result<String, String> {
    super::secrets::new_secret()
}

/// The names a Host header (and an Origin) may give this server.
///
/// Bound to loopback: `127.0.0.1`, `localhost` and `[::1]`. Bound to
/// another address: that address and this machine's host name. Bound to
/// every address (`0.0.0.0`, `[::]`): any IP address literal (a page of
/// another site reached by DNS rebinding names its own domain, never an
/// address) and this machine's host name. Always with the bound port.
pub struct Hosts {
    port: u16,
    names: Vec<String>,
    any_address: bool,
}

/// Host header values that name the server bound at `addr`.
pub fn host_names(addr: SocketAddr) -> Hosts {
    let ip = addr.ip();
    let mut names = vec![ip.to_string()];
    if ip.is_loopback() {
        names.extend(["localhost", "127.0.0.1", "::1"].map(str::to_string));
    } else if let Ok(h) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
        let h = h.trim();
        if !h.is_empty() && h != "(none)" {
            names.push(h.to_string());
        }
        names.push("localhost".into());
    }
    Hosts {
        port: addr.port(),
        names,
        any_address: ip.is_unspecified(),
    }
}

impl Hosts {
    /// True when `authority` (`HOST:PORT`, `[V6]:PORT`) names this server.
    pub fn names(&self, authority: &str) -> bool {
        let Some((host, port)) = authority.rsplit_once(':') else {
            return false;
        };
        if port.parse::<u16>() != Ok(self.port) {
            return false;
        }
        let bracketed = host.starts_with('[') && host.ends_with(']');
        let bare = if bracketed {
            &host[1..host.len() - 1]
        } else {
            host
        };
        if let Ok(ip) = bare.parse::<IpAddr>() {
            // An IPv6 literal must be bracketed, an IPv4 one must not.
            return ip.is_ipv6() == bracketed
                && (self.any_address || self.names.iter().any(|n| n.parse() == Ok(ip)));
        }
        !bracketed && self.names.iter().any(|n| n.eq_ignore_ascii_case(bare))
    }
}

/// Ok when the request may go on; otherwise why not (answered with 403).
pub fn allowed(token: &str, hosts: &Hosts, req: &Request) -> Result<(), &'static str> {
    let host = req.header("host").ok_or("no Host header")?;
    if !hosts.names(host) {
        return Err("Host header does not name this server");
    }
    if let Some(origin) = req.header("origin") {
        let ours = origin
            .strip_prefix("http://")
            .is_some_and(|authority| hosts.names(authority));
        if !ours {
            return Err("request from a foreign Origin");
        }
    }
    match req.param("token") {
        Some(t) if same(t.as_bytes(), token.as_bytes()) => Ok(()),
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
        assert!(check("GET /?token=abc HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n").is_ok());
        assert!(check("GET /?token=abd HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n").is_err());
        assert!(check("GET /?token=ab HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n").is_err());
        assert!(check("GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n").is_err());
        assert!(check("GET /?token=abc HTTP/1.1\r\n\r\n").is_err());
        assert!(check("GET /?token=abc HTTP/1.1\r\nHost: evil.example:8080\r\n\r\n").is_err());
        assert!(check("GET /?token=abc HTTP/1.1\r\nHost: 127.0.0.1:8081\r\n\r\n").is_err());
        assert!(check("GET /?token=abc HTTP/1.1\r\nHost: 10.0.0.1:8080\r\n\r\n").is_err());
        assert!(check("GET /?token=abc HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").is_err());
        assert!(check("GET /?token=abc HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nOrigin: http://evil.example\r\n\r\n").is_err());
        assert!(
            check("GET /?token=abc HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nOrigin: null\r\n\r\n")
                .is_err()
        );
        assert_eq!(random_token().unwrap().len(), 32);
        assert_ne!(random_token().unwrap(), random_token().unwrap());
    }

    #[test]
    fn bound_to_every_address_the_machine_s_names_are_its_own() {
        let all = host_names("0.0.0.0:8080".parse().unwrap());
        let me = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
        let me = me.trim();
        for ok in [
            "192.168.1.20:8080".to_string(),
            "10.1.2.3:8080".into(),
            "[fe80::1]:8080".into(),
            "localhost:8080".into(),
            format!("{me}:8080"),
            format!("{}:8080", me.to_uppercase()),
        ] {
            assert!(all.names(&ok), "{ok}");
        }
        for bad in [
            "evil.example:8080".to_string(),
            format!("{me}.evil.example:8080"),
            "192.168.1.20:8081".into(),
            "fe80::1:8080".into(),
            "[192.168.1.20]:8080".into(),
            "192.168.1.20".into(),
        ] {
            assert!(!all.names(&bad), "{bad}");
        }
        let one = host_names("192.168.1.20:8080".parse().unwrap());
        assert!(one.names("192.168.1.20:8080"));
        assert!(one.names(&format!("{me}:8080")));
        assert!(
            !one.names("192.168.1.21:8080"),
            "another address of the machine"
        );
    }
}
