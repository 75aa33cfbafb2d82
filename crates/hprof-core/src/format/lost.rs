//! The samples a CPU SAMPLES report does not count, and why: one line
//! after the section, the same text in both formats (docs/output-formats.md,
//! "Samples not counted"):
//!
//! ```text
//! CPU SAMPLES LOST 12 of 6034 (0.20%): deoptimizing 5, stack not walkable in Java 7
//! ```
//!
//! Text output writes it after `CPU SAMPLES END`, where readers of the
//! original's format see no section; binary output writes it as a UTF8
//! record right after the CPU SAMPLES record, a string no other record
//! names, which readers that do not know it keep unused.

/// What the line says: samples counted in the report, and those not
/// counted by reason.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LostSamples {
    /// Samples the report counts (its total).
    pub counted: u64,
    /// Reason and samples not counted for it, in the order written.
    pub reasons: Vec<(String, u64)>,
}

/// How the line starts.
pub const LOST_PREFIX: &str = "CPU SAMPLES LOST ";

impl LostSamples {
    /// Samples not counted, all reasons together.
    pub fn lost(&self) -> u64 {
        self.reasons.iter().map(|(_, n)| n).sum()
    }

    /// Samples taken: counted and not.
    pub fn taken(&self) -> u64 {
        self.counted.saturating_add(self.lost())
    }

    /// Share of the samples taken that were not counted, in percent.
    pub fn percent(&self) -> f64 {
        match self.taken() {
            0 => 0.0,
            t => self.lost() as f64 * 100.0 / t as f64,
        }
    }

    /// The line (without its newline).
    pub fn line(&self) -> String {
        let mut s = format!(
            "{LOST_PREFIX}{} of {} ({:.2}%)",
            self.lost(),
            self.taken(),
            self.percent()
        );
        for (i, (why, n)) in self.reasons.iter().enumerate() {
            s.push_str(if i == 0 { ": " } else { ", " });
            s.push_str(why);
            s.push(' ');
            s.push_str(&n.to_string());
        }
        s
    }

    /// The line read back (`None` if `line` is not one).
    pub fn parse(line: &str) -> Option<LostSamples> {
        let rest = line.strip_prefix(LOST_PREFIX)?;
        let (counts, reasons) = match rest.split_once("): ") {
            Some((c, r)) => (c, Some(r)),
            None => (rest.strip_suffix(')')?, None),
        };
        let (lost, rest) = counts.split_once(" of ")?;
        let (taken, _) = rest.split_once(" (")?;
        let (lost, taken): (u64, u64) = (lost.parse().ok()?, taken.parse().ok()?);
        let mut out = LostSamples {
            counted: taken.checked_sub(lost)?,
            reasons: Vec::new(),
        };
        for part in reasons.into_iter().flat_map(|r| r.split(", ")) {
            let (why, n) = part.rsplit_once(' ')?;
            out.reasons.push((why.to_string(), n.parse().ok()?));
        }
        (out.lost() == lost).then_some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_reads_back_as_written() {
        let l = LostSamples {
            counted: 6022,
            reasons: vec![
                ("deoptimizing".into(), 5),
                ("stack not walkable in Java".into(), 7),
            ],
        };
        let line = l.line();
        assert_eq!(
            line,
            "CPU SAMPLES LOST 12 of 6034 (0.20%): deoptimizing 5, stack not walkable in Java 7"
        );
        assert_eq!(LostSamples::parse(&line), Some(l));
        let none = LostSamples {
            counted: 10,
            reasons: vec![],
        };
        assert_eq!(none.line(), "CPU SAMPLES LOST 0 of 10 (0.00%)");
        assert_eq!(LostSamples::parse(&none.line()), Some(none));
    }

    #[test]
    fn other_lines_are_not_taken_for_it() {
        for l in [
            "CPU SAMPLES END",
            "CPU SAMPLES LOST",
            "CPU SAMPLES LOST x of 3 (1%)",
            "CPU SAMPLES LOST 5 of 3 (1%)",
            "CPU SAMPLES LOST 2 of 3 (66.67%): a 1",
            "CPU SAMPLES LOST 1 of 3 (33.33%): a b",
            "java/lang/String",
        ] {
            assert_eq!(LostSamples::parse(l), None, "{l}");
        }
    }
}
