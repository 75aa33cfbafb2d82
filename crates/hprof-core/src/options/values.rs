//! Conversion of one option's value token into a typed value.
//!
//! Every function takes the option name and the token as returned by the
//! tokenizer (`None` = empty or over-long) and yields either the value or
//! the error description to report. The descriptions follow the original
//! agent's wording; options added by hprof-rs reuse the same patterns.

use super::cnum::{strtod, strtol};
use super::{ListenAddr, NetAddr};

/// Lower bound of a decimal option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bound {
    /// `>= 0`
    NonNegative,
    /// `> 0`
    Positive,
}

/// Largest decimal value accepted: counts and milliseconds end up in JVMTI
/// `jint` parameters.
pub(crate) const MAX_DECIMAL: u32 = i32::MAX as u32;

/// Matches `value` against the accepted spellings.
fn pick<T: Copy>(name: &str, value: &str, choices: &[(&str, T)]) -> Result<T, String> {
    choices
        .iter()
        .find(|(spelling, _)| *spelling == value)
        .map(|&(_, v)| v)
        .ok_or_else(|| format!("{name} option value must be {}", spellings(choices)))
}

/// `a|b|c` from the choice list.
fn spellings<T>(choices: &[(&str, T)]) -> String {
    choices
        .iter()
        .map(|(s, _)| *s)
        .collect::<Vec<_>>()
        .join("|")
}

/// A value from a fixed list (`heap`, `cpu`, `format`, `idsize`).
///
/// Empty: `syntax error parsing <name>=<a|b>`; other text:
/// `<name> option value must be <a|b>`.
pub(crate) fn one_of<T: Copy>(
    name: &str,
    token: Option<&str>,
    choices: &[(&str, T)],
) -> Result<T, String> {
    let value =
        token.ok_or_else(|| format!("syntax error parsing {name}={}", spellings(choices)))?;
    pick(name, value, choices)
}

/// A boolean: exactly `y` or `n`; anything else, including nothing, is
/// `<name> option value must be y|n`.
pub(crate) fn yes_no(name: &str, token: Option<&str>) -> Result<bool, String> {
    pick(name, token.unwrap_or(""), &[("y", true), ("n", false)])
}

/// A decimal integer (`depth`, `interval`, `heapsample`): C `strtol` base 10
/// that must consume the whole value, then `bound..=MAX_DECIMAL`.
pub(crate) fn decimal(name: &str, token: Option<&str>, bound: Bound) -> Result<u32, String> {
    let value = token.ok_or_else(|| format!("syntax error parsing {name}=DECIMAL"))?;
    let (min, rule) = match bound {
        Bound::NonNegative => (0, ">= 0"),
        Bound::Positive => (1, "> 0"),
    };
    match strtol(value, 10) {
        (n, used) if used == value.len() && (min..=i64::from(MAX_DECIMAL)).contains(&n) => {
            Ok(n as u32)
        }
        _ => Err(format!("{name} option value must be decimal and {rule}")),
    }
}

/// A real number (`cutoff`): C `strtod` that must consume the whole value,
/// rejected only when `< 0` (so `inf` and `nan` pass).
pub(crate) fn real(name: &str, token: Option<&str>) -> Result<f64, String> {
    let value = token.ok_or_else(|| format!("syntax error parsing {name}=DOUBLE"))?;
    match strtod(value) {
        (x, used) if used == value.len() && (x >= 0.0 || x.is_nan()) => Ok(x),
        _ => Err(format!(
            "{name} option value must be floating point and >= 0"
        )),
    }
}

/// A bit mask (`logflags`, `debugflags`, `X`): C `strtol` base 0 with no
/// validation at all (trailing text ignored, no number = 0), truncated to
/// 32 bits like the original's `int`. Only an empty/over-long value errors.
pub(crate) fn mask(name: &str, token: Option<&str>) -> Result<u32, String> {
    let value = token.ok_or_else(|| format!("{name} option value must be numeric"))?;
    Ok(strtol(value, 0).0 as u32)
}

/// Error for a `net` value without a `HOST:` part.
const NET_MISSING_COLON: &str = "net option missing ':'";

/// `net=HOST:PORT`. HOST is the text before the first `:` and may not be
/// empty; PORT must be a decimal number in 1..=65535 (hprof-rs deviation:
/// the original silently truncated it to 16 bits and treated 0 as "no
/// socket").
pub(crate) fn net(token: Option<&str>) -> Result<NetAddr, String> {
    let value = token.ok_or(NET_MISSING_COLON)?;
    let (host, port) = value.split_once(':').ok_or(NET_MISSING_COLON)?;
    if host.is_empty() {
        return Err(NET_MISSING_COLON.to_string());
    }
    if port.is_empty() {
        return Err("net option missing port".to_string());
    }
    Ok(NetAddr {
        host: host.to_string(),
        port: port_number(port)?,
    })
}

/// `listen=PORT` (loopback) or `listen=HOST:PORT`; the host is what comes
/// before the last `:`, and brackets around it are removed so that IPv6
/// addresses can be written (`listen=[::1]:9000`).
pub(crate) fn listen(token: Option<&str>) -> Result<ListenAddr, String> {
    let value = token.ok_or("syntax error parsing listen=[HOST:]PORT")?;
    let (host, port) = match value.rsplit_once(':') {
        Some((h, p)) => {
            let h = h
                .strip_prefix('[')
                .and_then(|h| h.strip_suffix(']'))
                .unwrap_or(h);
            if h.is_empty() {
                return Err("listen option missing host before ':'".to_string());
            }
            (h, p)
        }
        None => ("127.0.0.1", value),
    };
    Ok(ListenAddr {
        host: host.to_string(),
        port: port_number(port)?,
    })
}

/// A TCP port: whole value decimal (as `strtol` base 10), 1..=65535.
fn port_number(text: &str) -> Result<u16, String> {
    match strtol(text, 10) {
        (n, used) if used == text.len() && n > 0 => {
            u16::try_from(n).map_err(|_| "invalid port number".to_string())
        }
        _ => Err("invalid port number".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_of_builds_both_messages_from_the_choices() {
        let choices = [("a", 1), ("bb", 2)];
        assert_eq!(one_of("k", Some("bb"), &choices), Ok(2));
        assert_eq!(
            one_of("k", None, &choices),
            Err("syntax error parsing k=a|bb".into())
        );
        assert_eq!(
            one_of("k", Some("c"), &choices),
            Err("k option value must be a|bb".into())
        );
    }

    #[test]
    fn yes_no_accepts_exactly_y_and_n() {
        assert_eq!(yes_no("doe", Some("y")), Ok(true));
        assert_eq!(yes_no("doe", Some("n")), Ok(false));
        for bad in [
            None,
            Some("Y"),
            Some("N"),
            Some("yes"),
            Some(" y"),
            Some("1"),
        ] {
            assert_eq!(
                yes_no("doe", bad),
                Err("doe option value must be y|n".into())
            );
        }
    }

    #[test]
    fn decimal_bounds() {
        assert_eq!(decimal("d", Some("0"), Bound::NonNegative), Ok(0));
        assert_eq!(
            decimal("d", Some("2147483647"), Bound::NonNegative),
            Ok(MAX_DECIMAL)
        );
        assert!(decimal("d", Some("2147483648"), Bound::NonNegative).is_err());
        assert!(decimal("d", Some("0"), Bound::Positive).is_err());
        assert_eq!(decimal("d", Some("1"), Bound::Positive), Ok(1));
        assert_eq!(decimal("d", Some(" +3"), Bound::Positive), Ok(3));
        assert!(decimal("d", Some("3 "), Bound::Positive).is_err());
    }

    #[test]
    fn mask_never_fails_on_text() {
        assert_eq!(mask("X", Some("0x10")), Ok(16));
        assert_eq!(mask("X", Some("junk")), Ok(0));
        assert_eq!(mask("X", Some("-1")), Ok(u32::MAX));
        assert_eq!(mask("X", Some("0x1ffffffff")), Ok(u32::MAX));
        assert_eq!(
            mask("X", None),
            Err("X option value must be numeric".into())
        );
    }

    #[test]
    fn port_numbers() {
        assert_eq!(port_number("1"), Ok(1));
        assert_eq!(port_number("65535"), Ok(65535));
        for bad in [
            "0",
            "65536",
            "70000",
            "-1",
            "abc",
            "80x",
            "99999999999999999999",
        ] {
            assert_eq!(port_number(bad), Err("invalid port number".into()), "{bad}");
        }
    }
}
