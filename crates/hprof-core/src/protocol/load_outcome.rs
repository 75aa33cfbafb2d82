//! What a load of the agent into a running JVM (an attach, or `stop`)
//! ended with, told to the tool that asked (docs/attach.md, "What the tool
//! is told"). HotSpot's answer to `load` carries only the return code of
//! Agent_OnAttach, and the agent's own message goes to the JVM's standard
//! error, which whoever attached rarely sees. So the agent also sets one of
//! the JVM's agent properties, the JDK's place for what agents publish to
//! attach clients (read with the attach command `agentProperties`; the
//! program does not see them).
//!
//! The value: the time it was set (milliseconds since the epoch, so a tool
//! can tell its own load's outcome from an older one), a space, the status
//! word, then one line per thing to say (the reason of a refusal; where the
//! report goes and what the profile costs).

/// The agent property.
pub const PROPERTY: &str = "hprof-rs.attach";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Profiling started.
    Started,
    /// The session that ran was stopped (`stop`).
    Stopped,
    /// Nothing started or stopped; the lines say why.
    Refused,
}

impl Status {
    fn word(self) -> &'static str {
        match self {
            Status::Started => "started",
            Status::Stopped => "stopped",
            Status::Refused => "refused",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadOutcome {
    /// When the agent set it (ms since the epoch).
    pub at_ms: u64,
    pub status: Status,
    /// What to tell the user, one line each (no line breaks inside).
    pub lines: Vec<String>,
}

impl LoadOutcome {
    pub fn now(status: Status, lines: Vec<String>) -> LoadOutcome {
        LoadOutcome {
            at_ms: epoch_ms(),
            status,
            lines,
        }
    }

    pub fn encode(&self) -> String {
        let mut s = format!("{} {}", self.at_ms, self.status.word());
        for l in &self.lines {
            s.push('\n');
            s.push_str(&l.replace(['\n', '\r'], " "));
        }
        s
    }

    pub fn decode(value: &str) -> Option<LoadOutcome> {
        let mut lines = value.split('\n');
        let (at, word) = lines.next()?.split_once(' ')?;
        let status = [Status::Started, Status::Stopped, Status::Refused]
            .into_iter()
            .find(|s| s.word() == word)?;
        Some(LoadOutcome {
            at_ms: at.parse().ok()?,
            status,
            lines: lines.map(String::from).collect(),
        })
    }
}

/// Milliseconds since the epoch (0 if the clock is before it).
pub fn epoch_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The value of `key` in the text of `java.util.Properties.store` (what
/// the attach command `agentProperties` answers): comment lines start with
/// `#` or `!`, a key ends at an unescaped `=`, `:` or blank, values may run
/// on over lines ending in an odd number of backslashes, and `\uXXXX`,
/// `\t`, `\n`, `\r`, `\f` and `\<char>` are escapes. The last line with the
/// key wins, as in `Properties.load`.
pub fn property(text: &str, key: &str) -> Option<String> {
    let mut found = None;
    let mut lines = text.lines();
    while let Some(first) = lines.next() {
        let mut logical = first.trim_start().to_string();
        if logical.is_empty() || logical.starts_with('#') || logical.starts_with('!') {
            continue;
        }
        while ends_in_escape(&logical) {
            logical.pop();
            match lines.next() {
                Some(next) => logical.push_str(next.trim_start()),
                None => break,
            }
        }
        let (k, v) = split_entry(&logical);
        if unescape(k) == key {
            found = Some(unescape(v));
        }
    }
    found
}

/// An odd number of backslashes at the end: the line goes on.
fn ends_in_escape(line: &str) -> bool {
    line.bytes().rev().take_while(|&b| b == b'\\').count() % 2 == 1
}

/// Key and value (both still escaped) of one logical line.
fn split_entry(line: &str) -> (&str, &str) {
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '=' | ':' | ' ' | '\t' | '\x0c' => {
                let key = &line[..i];
                let mut rest = line[i..].trim_start_matches([' ', '\t', '\x0c']);
                if !matches!(c, '=' | ':') {
                    if let Some(r) = rest.strip_prefix(['=', ':']) {
                        rest = r;
                    }
                } else {
                    rest = &rest[1..];
                }
                return (key, rest.trim_start_matches([' ', '\t', '\x0c']));
            }
            _ => {}
        }
    }
    (line, "")
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    let mut pending_high: Option<u16> = None;
    while let Some(c) = chars.next() {
        let unit = if c == '\\' {
            match chars.next() {
                Some('u') => {
                    let hex: String = chars.by_ref().take(4).collect();
                    match u16::from_str_radix(&hex, 16) {
                        Ok(u) if hex.len() == 4 => Some(u),
                        _ => {
                            out.push('\u{fffd}');
                            None
                        }
                    }
                }
                Some('t') => Some(u16::from(b'\t')),
                Some('n') => Some(u16::from(b'\n')),
                Some('r') => Some(u16::from(b'\r')),
                Some('f') => Some(0x0c),
                Some(other) => {
                    out.push(other);
                    None
                }
                None => None,
            }
        } else {
            out.push(c);
            None
        };
        // UTF-16 units from \u escapes, surrogate pairs joined.
        if let Some(u) = unit {
            if let Some(high) = pending_high.take() {
                match char::decode_utf16([high, u]).next() {
                    Some(Ok(ch)) => {
                        out.push(ch);
                        continue;
                    }
                    _ => out.push('\u{fffd}'),
                }
            }
            if (0xD800..0xDC00).contains(&u) {
                pending_high = Some(u);
            } else {
                out.push(char::from_u32(u32::from(u)).unwrap_or('\u{fffd}'));
            }
        }
    }
    if pending_high.is_some() {
        out.push('\u{fffd}');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_round_trip_and_junk_is_none() {
        let o = LoadOutcome {
            at_ms: 1_700_000_000_123,
            status: Status::Refused,
            lines: vec!["already profiling\nwith a break".into(), "second".into()],
        };
        let back = LoadOutcome::decode(&o.encode()).unwrap();
        assert_eq!(back.status, Status::Refused);
        assert_eq!(back.at_ms, o.at_ms);
        assert_eq!(back.lines, ["already profiling with a break", "second"]);
        assert_eq!(LoadOutcome::decode("12 started").unwrap().lines.len(), 0);
        assert_eq!(LoadOutcome::decode("x started"), None);
        assert_eq!(LoadOutcome::decode("12 exploded"), None);
        assert_eq!(LoadOutcome::decode(""), None);
    }

    #[test]
    fn properties_as_the_jdk_stores_them() {
        // What Properties.store wrote for these values (JDK 17).
        let text = "#Fri Nov 27 06:23:27 UTC 2026\n\
                    sun.jvm.args=-Xmx1g\n\
                    hprof-rs.attach=1700000000123 refused\\nHPROF says \\u001B[2J \\u00FC \\uD83D\\uDE00 a\\=b\\:c \\\\ done\n\
                    sun.java.command=Main\n\
                    with\\ space = x\n\
                    continued=a\\\n    b\n";
        assert_eq!(
            property(text, PROPERTY).unwrap(),
            "1700000000123 refused\nHPROF says \u{1b}[2J ü 😀 a=b:c \\ done"
        );
        assert_eq!(property(text, "sun.jvm.args").unwrap(), "-Xmx1g");
        assert_eq!(property(text, "with space").unwrap(), "x");
        assert_eq!(property(text, "continued").unwrap(), "ab");
        assert_eq!(property(text, "missing"), None);
        assert_eq!(property("k", "k").unwrap(), "");
        assert_eq!(property("k=\\u12", "k").unwrap(), "\u{fffd}");
    }
}
