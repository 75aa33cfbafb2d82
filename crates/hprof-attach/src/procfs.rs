//! What `/proc` says about another process: whether it exists, who owns it,
//! its pid inside its own pid namespace, whether it catches SIGQUIT, which
//! libraries it has mapped, its command line, and where its `/tmp` is.
//! Every read is bounded: these files belong to other processes and a
//! command line or a map can be long.

use super::untrusted::printable;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// Linux numbers SIGQUIT 3; bit 2 of the Sig* masks in /proc/PID/status.
const SIGQUIT_BIT: u64 = 1 << (libc::SIGQUIT - 1);

/// Longest status or cmdline we read (both are a few KiB in practice).
const SMALL_FILE_MAX: u64 = 256 << 10;
/// Longest maps file we scan (a JVM's is a few hundred KiB).
const MAPS_MAX: u64 = 16 << 20;

pub fn proc_dir(pid: u32) -> PathBuf {
    PathBuf::from(format!("/proc/{pid}"))
}

/// Reads at most `max` bytes of `path`.
pub fn read_bounded(path: &Path, max: u64) -> io::Result<Vec<u8>> {
    let mut v = Vec::new();
    File::open(path)?.take(max).read_to_end(&mut v)?;
    Ok(v)
}

/// The fields of /proc/PID/status that attach needs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Status {
    /// The executable's short name (`Name:`).
    pub name: String,
    /// One letter: R, S, D, Z (zombie), T, ...
    pub state: char,
    /// The pid as the process sees it in its innermost pid namespace (the
    /// last `NSpid:` field; the pid itself on kernels without that line).
    pub ns_pid: u32,
    pub euid: u32,
    pub egid: u32,
    /// Whether SIGQUIT has a handler, is ignored; None when not reported.
    pub catches_quit: Option<bool>,
    pub ignores_quit: Option<bool>,
}

/// Parses the text of /proc/PID/status; `pid` is the fallback `ns_pid`.
pub fn parse_status(text: &str, pid: u32) -> Status {
    let mut st = Status {
        ns_pid: pid,
        state: '?',
        ..Status::default()
    };
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        let mask = || {
            u64::from_str_radix(value, 16)
                .ok()
                .map(|m| m & SIGQUIT_BIT != 0)
        };
        // Uid and Gid list real, effective, saved and filesystem ids.
        let second = || value.split_whitespace().nth(1).and_then(|v| v.parse().ok());
        match key {
            "Name" => st.name = printable(value),
            "State" => st.state = value.chars().next().unwrap_or('?'),
            "NSpid" => {
                if let Some(p) = value.split_whitespace().last().and_then(|v| v.parse().ok()) {
                    st.ns_pid = p;
                }
            }
            "Uid" => st.euid = second().unwrap_or(u32::MAX),
            "Gid" => st.egid = second().unwrap_or(u32::MAX),
            "SigCgt" => st.catches_quit = mask(),
            "SigIgn" => st.ignores_quit = mask(),
            _ => {}
        }
    }
    st
}

/// /proc/PID/status of a live process; NotFound when there is none.
pub fn status(pid: u32) -> io::Result<Status> {
    let bytes = read_bounded(&proc_dir(pid).join("status"), SMALL_FILE_MAX)?;
    Ok(parse_status(&String::from_utf8_lossy(&bytes), pid))
}

/// Which of `names` appear in the paths of the process's mapped files
/// (for example `/libjvm.so`). Err when the map cannot be read (another
/// user's process, or the process is gone).
pub fn maps_contain(pid: u32, names: &[&str]) -> io::Result<Vec<bool>> {
    let bytes = read_bounded(&proc_dir(pid).join("maps"), MAPS_MAX)?;
    let text = String::from_utf8_lossy(&bytes);
    let mut found = vec![false; names.len()];
    for line in text.lines() {
        // The path is the last field and may contain spaces; the fields
        // before it (addresses, offsets, device) never contain a '/'.
        let Some(start) = line.find('/') else {
            continue;
        };
        let path = line[start..].trim_end_matches(" (deleted)");
        for (i, n) in names.iter().enumerate() {
            if path.ends_with(n) {
                found[i] = true;
            }
        }
    }
    Ok(found)
}

/// The process's arguments (/proc/PID/cmdline, NUL-separated).
pub fn cmdline(pid: u32) -> io::Result<Vec<String>> {
    let bytes = read_bounded(&proc_dir(pid).join("cmdline"), SMALL_FILE_MAX)?;
    Ok(bytes
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect())
}

/// The target's `/tmp` as seen from here: through /proc/PID/root when we
/// may look into its file system (a process in a container has its own
/// /tmp), else our own /tmp, which is then hopefully shared (HotSpot's own
/// client falls back the same way).
pub fn target_tmp(pid: u32) -> PathBuf {
    let through_root = proc_dir(pid).join("root/tmp");
    if std::fs::metadata(&through_root).is_ok_and(|m| m.is_dir()) {
        through_root
    } else {
        PathBuf::from("/tmp")
    }
}

/// The pids of all processes visible here, in ascending order.
pub fn all_pids() -> Vec<u32> {
    let mut pids: Vec<u32> = std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
                .collect()
        })
        .unwrap_or_default();
    pids.sort_unstable();
    pids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_of_a_containerised_jvm() {
        let text = "Name:\tjava\nState:\tS (sleeping)\nUid:\t1000\t1001\t1001\t1001\n\
                    Gid:\t50\t51\t51\t51\nNSpid:\t4242\t7\nSigIgn:\t0000000000000000\n\
                    SigCgt:\t2000000181005ccf\n";
        let st = parse_status(text, 4242);
        assert_eq!(
            st,
            Status {
                name: "java".into(),
                state: 'S',
                ns_pid: 7,
                euid: 1001,
                egid: 51,
                catches_quit: Some(true),
                ignores_quit: Some(false),
            }
        );
    }

    #[test]
    fn status_without_nspid_or_masks() {
        let st = parse_status("Name:\tsleep\nState:\tZ (zombie)\nSigCgt:\tzz\n", 9);
        assert_eq!(st.ns_pid, 9);
        assert_eq!(st.state, 'Z');
        assert_eq!(st.catches_quit, None);
        assert_eq!(st.ignores_quit, None);
        // A handler for SIGINT only (bit 1) is not one for SIGQUIT.
        let st = parse_status("SigCgt:\t0000000000000002\n", 9);
        assert_eq!(st.catches_quit, Some(false));
    }

    #[test]
    fn names_are_printable() {
        let st = parse_status("Name:\tevil\x1b[2J\x07\n", 1);
        assert_eq!(st.name, "evil?[2J?");
    }

    #[test]
    fn this_process_is_readable() {
        let me = std::process::id();
        let st = status(me).unwrap();
        assert_eq!(st.euid, crate::sys::euid());
        assert!(!cmdline(me).unwrap().is_empty());
        assert_eq!(
            maps_contain(me, &["/no-such-library.so"]).unwrap(),
            vec![false]
        );
        assert!(all_pids().contains(&me));
    }
}
