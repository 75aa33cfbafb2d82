//! Text read from a file, written where a terminal may show it. A dump or a
//! report is anyone's file, and its names (classes, threads, methods,
//! fields, sources) reach the output as they are: a control character in
//! one could move the cursor, rewrite earlier lines or set the window
//! title. Every control character but line breaks and tabs is written as
//! an escape (`hprof_core::untrusted::escaped`, which the tool already
//! applies to what other processes send), bytes that are no UTF-8 as
//! `\xNN`.

use hprof_core::untrusted::escaped;
use std::io::{self, Write};

/// A string made safe to print (see the module).
pub use hprof_core::untrusted::escaped as safe;

/// JSON text with DEL and the C1 control characters (U+007F to U+009F)
/// written as `\u00XX` escapes: serde_json escapes only those below
/// U+0020, and outside strings JSON text has no control character but
/// white space, so the document stays valid and means the same (and
/// [`safe`] then finds nothing to change).
pub fn json_safe(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if c.is_control() && u32::from(c) >= 0x7f {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// True when UTF-8 text `b` has nothing to escape: no C0 control but line
/// breaks and tabs, no DEL, and no 0xC2 byte (the lead byte of the C1
/// controls, and of a few other characters, which then take the slow
/// path). Most output has none, and `print` writes hundreds of MB of it:
/// a scan without early exit, which the compiler can vectorize, costs far
/// less than rebuilding the text a character at a time.
fn plain(b: &[u8]) -> bool {
    !b.iter().fold(false, |hit, &c| {
        hit | ((c < 0x20) & (c != b'\n') & (c != b'\t')) | (c == 0x7f) | (c == 0xc2)
    })
}

/// Standard output, buffered, with what is written made safe to print.
pub fn stdout() -> io::BufWriter<Escaping<io::StdoutLock<'static>>> {
    io::BufWriter::with_capacity(1 << 16, Escaping::new(io::stdout().lock()))
}

/// A writer that passes text on made safe to print. A character split
/// between two writes is held until its end arrives.
pub struct Escaping<W: Write> {
    inner: W,
    /// The start of a character cut off at the end of the last write.
    carry: Vec<u8>,
}

impl<W: Write> Escaping<W> {
    pub fn new(inner: W) -> Self {
        Escaping {
            inner,
            carry: Vec::new(),
        }
    }

    /// Valid text, escaped where it has to be.
    fn text(&mut self, s: &str) -> io::Result<()> {
        if plain(s.as_bytes()) {
            self.inner.write_all(s.as_bytes())
        } else {
            self.inner.write_all(escaped(s).as_bytes())
        }
    }

    fn pass(&mut self, mut rest: &[u8]) -> io::Result<()> {
        loop {
            match std::str::from_utf8(rest) {
                Ok(s) => return self.text(s),
                Err(e) => {
                    let (good, bad) = rest.split_at(e.valid_up_to());
                    if let Ok(s) = std::str::from_utf8(good) {
                        self.text(s)?;
                    }
                    match e.error_len() {
                        // Cut off: the next write may complete it.
                        None => {
                            self.carry.extend_from_slice(bad);
                            return Ok(());
                        }
                        Some(n) => {
                            for b in &bad[..n] {
                                write!(self.inner, "\\x{b:02x}")?;
                            }
                            rest = &bad[n..];
                        }
                    }
                }
            }
        }
    }
}

impl<W: Write> Write for Escaping<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.carry.is_empty() {
            self.pass(buf)?;
        } else {
            let mut joined = std::mem::take(&mut self.carry);
            joined.extend_from_slice(buf);
            self.pass(&joined)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl<W: Write> Drop for Escaping<W> {
    /// A character never completed is written as the bytes it had.
    fn drop(&mut self) {
        for b in std::mem::take(&mut self.carry) {
            let _ = write!(self.inner, "\\x{b:02x}");
        }
        let _ = self.inner.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn through(pieces: &[&[u8]]) -> String {
        let mut out = Vec::new();
        {
            let mut w = Escaping::new(&mut out);
            for p in pieces {
                w.write_all(p).unwrap();
            }
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn control_characters_are_escaped_and_lines_kept() {
        assert_eq!(
            through(&[b"class \x1b]0;pwned\x07Evil\r\n\tnext\n"]),
            "class \\x1b]0;pwned\\x07Evil\\x0d\n\tnext\n"
        );
        // C1 controls (two bytes in UTF-8) too; other text unchanged.
        assert_eq!(through(&["a\u{9b}2Jé€".as_bytes()]), "a\\u{9b}2Jé€");
        // Text without controls passes as it is, by either path (0xC2 also
        // leads '°').
        assert_eq!(
            through(&["plain text, 20°C\n".as_bytes()]),
            "plain text, 20°C\n"
        );
        assert!(plain(b"a\tb\n") && !plain(b"a\rb") && !plain(b"\x7f"));
    }

    #[test]
    fn a_character_split_between_writes_is_kept_whole() {
        let s = "x\u{9b}y€z".as_bytes();
        for cut in 0..=s.len() {
            assert_eq!(through(&[&s[..cut], &s[cut..]]), "x\\u{9b}y€z", "cut {cut}");
        }
        // Byte by byte.
        let bytes: Vec<&[u8]> = s.chunks(1).collect();
        assert_eq!(through(&bytes), "x\\u{9b}y€z");
    }

    #[test]
    fn json_keeps_its_meaning_with_c1_controls_escaped() {
        let doc = serde_json::json!({"class": "a\u{9b}2J\u{1b}b\u{7f}"});
        let text = json_safe(&serde_json::to_string(&doc).unwrap());
        assert_eq!(text, r#"{"class":"a\u009b2J\u001bb\u007f"}"#);
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&text).unwrap(),
            doc
        );
        assert_eq!(safe(&text), text);
    }

    #[test]
    fn bytes_that_are_no_utf8_are_shown_as_hex() {
        assert_eq!(through(&[b"a\xffb\xc3"]), "a\\xffb\\xc3");
        assert_eq!(safe("\u{1b}[2J"), "\\x1b[2J");
    }
}
