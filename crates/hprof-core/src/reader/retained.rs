//! A bound on what a reader of files from anywhere keeps: the tools
//! (`print`, `histo`, `flame`, the UI) count each definition they keep
//! (a name, class, frame, trace) and stop at [`DEFINITIONS_LIMIT`], so
//! that a small compressed file of many distinct definitions cannot make
//! them hold gigabytes. Only new definitions count: a file that defines a
//! name again (a VM dump announcing every class at each dump) costs once.

use super::stream::{DEFINITIONS_LIMIT, DEFINITION_OVERHEAD};

/// Bytes kept so far, against a limit.
#[derive(Debug, Clone)]
pub struct Retained {
    used: u64,
    limit: u64,
}

impl Default for Retained {
    fn default() -> Self {
        Self::new(DEFINITIONS_LIMIT)
    }
}

impl Retained {
    pub fn new(limit: u64) -> Self {
        Retained { used: 0, limit }
    }

    /// Count a new definition of `bytes` (plus [`DEFINITION_OVERHEAD`]);
    /// `Err` says what was passed once the total is over the limit.
    pub fn keep(&mut self, bytes: u64) -> Result<(), String> {
        self.used = self.used.saturating_add(bytes + DEFINITION_OVERHEAD);
        if self.used > self.limit {
            return Err(format!(
                "the file defines more than {} MiB of names, classes, frames and traces, \
                 the most this tool keeps (a damaged or hostile file?)",
                self.limit >> 20
            ));
        }
        Ok(())
    }

    pub fn used(&self) -> u64 {
        self.used
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_with_overhead_and_says_when_over() {
        let mut r = Retained::new(1 << 20);
        for _ in 0..1000 {
            r.keep(900).unwrap();
        }
        assert_eq!(r.used(), 1000 * (900 + DEFINITION_OVERHEAD));
        let mut n = 0;
        let e = loop {
            match r.keep(900) {
                Ok(()) => n += 1,
                Err(e) => break e,
            }
        };
        assert_eq!(n, (1 << 20) / 964 - 1000);
        assert!(e.contains("more than 1 MiB"), "{e}");
    }
}
