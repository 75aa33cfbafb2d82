//! One way out for the files the tool writes (flame graphs, exports):
//! a path, or `-` for standard output.

use crate::ToolResult;
use std::io::Write;

/// Write `bytes` to `path`, or to standard output for `-`.
pub fn write(path: &str, bytes: &[u8]) -> ToolResult<()> {
    if path == "-" {
        let mut out = std::io::stdout().lock();
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
