//! printf-like line output with the original's 1023-byte truncation, and
//! C-compatible number formatting.

use std::fmt::{self, Write as _};

/// Longest piece of text one formatted write may produce; the original
/// formats every write into a 1024-byte buffer (1023 bytes + NUL) and drops
/// the rest, including a trailing newline.
pub const MAX_WRITE: usize = 1023;

/// Formats one printf-style write at a time into a reusable buffer.
#[derive(Debug, Default)]
pub struct Printer {
    scratch: String,
}

impl Printer {
    /// Format `args` and append at most [`MAX_WRITE`] bytes of it to `out`.
    pub fn put(&mut self, out: &mut Vec<u8>, args: fmt::Arguments<'_>) {
        self.scratch.clear();
        // Writing into a String cannot fail.
        let _ = self.scratch.write_fmt(args);
        let bytes = self.scratch.as_bytes();
        out.extend_from_slice(&bytes[..bytes.len().min(MAX_WRITE)]);
    }
}

/// `pf!(printer, out, "fmt", args..)`: one printf-style write.
macro_rules! pf {
    ($p:expr, $out:expr, $($arg:tt)*) => {
        $p.put($out, format_args!($($arg)*))
    };
}
pub(crate) use pf;

/// A ratio shown as C `%5.2f` of `ratio * 100` (the caller adds the `%`).
/// Any NaN prints as `nan`.
#[derive(Clone, Copy, Debug)]
pub struct Pct(pub f64);

impl fmt::Display for Pct {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0 * 100.0;
        if v.is_nan() {
            write!(f, "{:>5}", "nan")
        } else {
            // Rust and glibc both round the exact binary value half-to-even,
            // and both spell infinities "inf".
            write!(f, "{v:5.2}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pct(v: f64) -> String {
        Pct(v).to_string()
    }

    #[test]
    fn percent_like_printf() {
        assert_eq!(pct(0.0413), " 4.13");
        assert_eq!(pct(0.4413), "44.13");
        assert_eq!(pct(1.0), "100.00");
        assert_eq!(pct(0.0), " 0.00");
        assert_eq!(pct(0.00125), " 0.12");
        assert_eq!(pct(0.00375), " 0.38");
        assert_eq!(pct(f64::NAN), "  nan");
        assert_eq!(pct(-f64::NAN), "  nan");
        assert_eq!(pct(f64::INFINITY), "  inf");
    }

    #[test]
    fn long_writes_are_cut_without_newline() {
        let mut p = Printer::default();
        let mut out = Vec::new();
        let long = "x".repeat(2000);
        pf!(p, &mut out, "A{long}\n");
        assert_eq!(out.len(), MAX_WRITE);
        assert_eq!(out[0], b'A');
        assert!(!out.contains(&b'\n'));
        out.clear();
        let exact = "y".repeat(MAX_WRITE - 1);
        pf!(p, &mut out, "{exact}\n");
        assert_eq!(out.len(), MAX_WRITE);
        assert_eq!(out.last(), Some(&b'\n'));
    }
}
