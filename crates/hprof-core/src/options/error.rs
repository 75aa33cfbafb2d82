//! The option error type.

use std::fmt;

/// A rejected option string.
///
/// `Display` renders `hprof option error: <description> (<options>)`; the
/// agent prints it after `HPROF ERROR: ` and before its own location
/// suffix, then exits with status 1 — or, when [`OptionError::errorexit`]
/// is set, takes the fatal path (`HPROF TERMINATED PROCESS`, exit 9, or
/// abort when [`OptionError::dump_core`] is set).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionError {
    /// What is wrong, e.g. `depth option value must be decimal and >= 0`.
    pub description: String,
    /// The complete combined option string, echoed verbatim.
    pub options: String,
    /// `errorexit=y` had already been parsed when the error was found.
    pub errorexit: bool,
    /// `coredump=y` or `debug=y` had already been parsed when the error
    /// was found.
    pub dump_core: bool,
}

impl fmt::Display for OptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "hprof option error: {} ({})",
            self.description, self.options
        )
    }
}

impl std::error::Error for OptionError {}
