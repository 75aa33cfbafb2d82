//! The values of `push=URL`, `pushinterval=SECONDS`, `pushapp=NAME` and
//! `pushlabels=KEY:VALUE+...` (docs/push.md): where the agent sends each
//! interval's profile, how often, and under which name and labels.

use super::cnum::strtol;

/// Fewest and most seconds between two pushes.
pub const MIN_PUSH_INTERVAL_S: u32 = 1;
pub const MAX_PUSH_INTERVAL_S: u32 = 3600;
/// `pushinterval` when not given.
pub const DEFAULT_PUSH_INTERVAL_S: u32 = 10;
/// At most this many labels.
pub const MAX_PUSH_LABELS: usize = 16;

/// `push=http://HOST[:PORT][/PATH]`: the server's base URL.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PushTarget {
    /// Host name or address (IPv6 without its brackets).
    pub host: String,
    /// 80 unless given.
    pub port: u16,
    /// The base path without its trailing `/` ("" for the root); the
    /// agent posts to `{path}/ingest`.
    pub path: String,
    /// The URL as given (for messages).
    pub url: String,
}

/// `push=URL`: only `http://` (the agent has no TLS: a reverse proxy or an
/// agent such as Grafana Alloy on the host carries it further).
pub fn target(token: Option<&str>) -> Result<PushTarget, String> {
    let url = token.ok_or("syntax error parsing push=http://HOST[:PORT][/PATH]")?;
    let lower = url.to_ascii_lowercase();
    if lower.starts_with("https://") {
        return Err(
            "push option supports http:// only: the agent speaks no TLS; send to an http:// \
             collector on this host or network (e.g. Grafana Alloy's pyroscope.receive_http) \
             that forwards over https"
                .to_string(),
        );
    }
    let rest = lower
        .starts_with("http://")
        .then(|| &url["http://".len()..])
        .ok_or("push option value must start with http://")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if authority.contains('@') {
        return Err("push option URL may not carry a user or password".to_string());
    }
    if path.contains(['?', '#']) || !path.bytes().all(|b| b.is_ascii_graphic()) {
        return Err("push option URL path may not have a query, a fragment or spaces".to_string());
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, after) = v6
            .split_once(']')
            .ok_or("push option URL has an unclosed '['")?;
        match after.strip_prefix(':') {
            Some(p) => (h, Some(p)),
            None if after.is_empty() => (h, None),
            None => return Err("push option URL has text after ']'".to_string()),
        }
    } else {
        match authority.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err("push option URL has no host".to_string());
    }
    let port = match port {
        None => 80,
        Some(p) => match strtol(p, 10) {
            (n, used) if used == p.len() && (1..=65535).contains(&n) => n as u16,
            _ => return Err("push option URL has an invalid port number".to_string()),
        },
    };
    Ok(PushTarget {
        host: host.to_string(),
        port,
        path: path.trim_end_matches('/').to_string(),
        url: url.to_string(),
    })
}

/// `pushinterval=SECONDS`, 1..=3600.
pub fn interval(token: Option<&str>) -> Result<u32, String> {
    let value = token.ok_or("syntax error parsing pushinterval=SECONDS")?;
    match strtol(value, 10) {
        (n, used)
            if used == value.len()
                && (i64::from(MIN_PUSH_INTERVAL_S)..=i64::from(MAX_PUSH_INTERVAL_S))
                    .contains(&n) =>
        {
            Ok(n as u32)
        }
        _ => Err(format!(
            "pushinterval option value must be decimal seconds in \
             {MIN_PUSH_INTERVAL_S}..{MAX_PUSH_INTERVAL_S}"
        )),
    }
}

/// A name or label value the server's `name=APP{k=v,...}` syntax carries
/// as it is: letters, digits, `_ . - / :`.
fn plain(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-/:".contains(&b))
}

/// `pushapp=NAME`.
pub fn app(token: Option<&str>) -> Result<String, String> {
    let value = token.ok_or("syntax error parsing pushapp=NAME")?;
    if value.len() > 128 || !plain(value) || value.contains(':') {
        return Err(
            "pushapp option value must be at most 128 letters, digits, '_', '.', '-' or '/'"
                .to_string(),
        );
    }
    Ok(value.to_string())
}

/// `pushlabels=KEY:VALUE+KEY:VALUE...` (`,` and `=` belong to the option
/// string and to the server's name syntax, so neither can separate them).
pub fn labels(token: Option<&str>) -> Result<Vec<(String, String)>, String> {
    let value = token.ok_or("syntax error parsing pushlabels=KEY:VALUE+KEY:VALUE")?;
    let mut out: Vec<(String, String)> = Vec::new();
    for pair in value.split('+') {
        let (k, v) = pair
            .split_once(':')
            .ok_or("pushlabels option needs KEY:VALUE pairs joined by '+'")?;
        let key_ok = k
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            && !k.starts_with("__")
            && k.len() <= 64;
        if !key_ok {
            return Err(format!(
                "pushlabels key '{k}' must be letters, digits and '_', not starting with a \
                 digit or '__'"
            ));
        }
        if !plain(v) || v.len() > 128 {
            return Err(format!(
                "pushlabels value of '{k}' must be at most 128 letters, digits, '_', '.', '-', \
                 '/' or ':'"
            ));
        }
        if out.iter().any(|(o, _)| o == k) {
            return Err(format!("pushlabels key '{k}' appears twice"));
        }
        out.push((k.to_string(), v.to_string()));
    }
    if out.len() > MAX_PUSH_LABELS {
        return Err(format!("pushlabels takes at most {MAX_PUSH_LABELS} labels"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_http_only_with_host_port_and_path() {
        let t = target(Some("http://127.0.0.1:4040")).unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.path.as_str()),
            ("127.0.0.1", 4040, "")
        );
        let t = target(Some("http://pyro.example/base/")).unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.path.as_str()),
            ("pyro.example", 80, "/base")
        );
        let t = target(Some("http://[::1]:9")).unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", 9));
        assert!(target(Some("https://x:1")).unwrap_err().contains("TLS"));
        assert!(target(Some("ftp://x")).unwrap_err().contains("http://"));
        assert!(target(Some("http://:1")).unwrap_err().contains("no host"));
        assert!(target(Some("http://x:0")).unwrap_err().contains("port"));
        assert!(target(Some("http://x:65536")).unwrap_err().contains("port"));
        assert!(target(Some("http://u:p@x"))
            .unwrap_err()
            .contains("password"));
        assert!(target(Some("http://x/a?b")).unwrap_err().contains("query"));
        assert!(target(None).unwrap_err().contains("syntax error"));
    }

    #[test]
    fn interval_limits() {
        assert_eq!(interval(Some("1")), Ok(1));
        assert_eq!(interval(Some("3600")), Ok(3600));
        for bad in ["0", "3601", "-1", "10s", "x", "99999999999"] {
            assert!(
                interval(Some(bad)).unwrap_err().contains("1..3600"),
                "{bad}"
            );
        }
    }

    #[test]
    fn app_and_labels() {
        assert_eq!(app(Some("shop.checkout")).unwrap(), "shop.checkout");
        assert!(app(Some("a{b}")).is_err());
        assert!(app(Some("a:b")).is_err());
        assert_eq!(
            labels(Some("env:prod+region:eu-west-1")).unwrap(),
            vec![
                ("env".to_string(), "prod".to_string()),
                ("region".to_string(), "eu-west-1".to_string())
            ]
        );
        assert!(labels(Some("env")).is_err());
        assert!(labels(Some("1x:y")).is_err());
        assert!(labels(Some("__name__:y")).is_err());
        assert!(labels(Some("a:b}")).is_err());
        assert!(labels(Some("a:1+a:2")).unwrap_err().contains("twice"));
    }
}
