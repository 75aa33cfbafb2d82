//! One way out for the files the tool writes (flame graphs, exports):
//! a path, or `-` for standard output.

use crate::ToolResult;
use std::io::{IsTerminal, Write};

/// Write `bytes` to `path`, or to standard output for `-`.
pub fn write(path: &str, bytes: &[u8]) -> ToolResult<()> {
    if path == "-" {
        let mut out = std::io::stdout().lock();
        // A file format (SVG, JFR, gzip'd pprof) is no text for a terminal,
        // and the names in it come from the profiled file: a control
        // character in one would reach the terminal as it is.
        if out.is_terminal() {
            return Err(
                "standard output is a terminal: give a file name, or send it on with `| COMMAND` or `> FILE`"
                    .to_string(),
            );
        }
        return match out.write_all(bytes).and_then(|_| out.flush()) {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                Err(format!("cannot write to standard output: {e}"))
            }
            _ => Ok(()),
        };
    }
    std::fs::write(path, bytes).map_err(|e| format!("cannot write {path}: {e}"))
}

/// How a written output is named in messages.
pub fn name(path: &str) -> &str {
    if path == "-" {
        "standard output"
    } else {
        path
    }
}
