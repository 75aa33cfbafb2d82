//! `hprof-rs jvms`: the JVMs running on this machine, like `jps`, with
//! their Java version and whether our agent is in them.
//!
//! A process is a JVM when it has libjvm.so mapped (/proc/PID/maps); when
//! its map cannot be read (another user's process), when a perfdata file
//! of its pid and owner exists. Command and version come from the perfdata
//! file (`sun.rt.javaCommand`, `java.property.java.version`); a JVM run
//! with `-XX:-UsePerfData` has none, and then its command line and the
//! `release` file of its Java home are read instead.

use super::perfdata::{self, PerfData};
use super::{procfs, untrusted};
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The agent library's file name, as it appears in /proc/PID/maps.
pub const AGENT_LIBRARY: &str = "libhprof_rs.so";

#[derive(Clone, Debug, PartialEq)]
pub struct Jvm {
    pub pid: u32,
    /// `java.version`, when known.
    pub java_version: Option<String>,
    /// Main class (or jar, or module) and arguments.
    pub command: Option<String>,
    /// Whether libhprof_rs.so is mapped; None when the map is unreadable.
    pub agent: Option<bool>,
    /// Whether the JVM accepts attach; None without perfdata.
    pub attachable: Option<bool>,
}

/// Every JVM found, by pid.
pub fn list() -> Vec<Jvm> {
    let me = std::process::id();
    // pid -> agent mapped (None: map unreadable, a JVM by its perfdata).
    let mut found: BTreeMap<u32, Option<bool>> = BTreeMap::new();
    for pid in procfs::all_pids() {
        if pid == me {
            continue;
        }
        if let Ok(f) = procfs::maps_contain(pid, &["/libjvm.so", &format!("/{AGENT_LIBRARY}")]) {
            if f[0] {
                found.insert(pid, Some(f[1]));
            }
        }
    }
    for (pid, file) in perfdata::files_in(Path::new("/tmp")) {
        if found.contains_key(&pid) || pid == me {
            continue;
        }
        // A perfdata file names a live JVM when the process of that pid
        // belongs to the file's owner and its map cannot tell us more.
        let (Ok(st), Ok(meta)) = (procfs::status(pid), std::fs::symlink_metadata(&file)) else {
            continue;
        };
        if st.euid == meta.uid() && procfs::maps_contain(pid, &[]).is_err() {
            found.insert(pid, None);
        }
    }
    found
        .into_iter()
        .filter_map(|(pid, agent)| describe(pid, agent))
        .collect()
}

fn describe(pid: u32, agent: Option<bool>) -> Option<Jvm> {
    let st = procfs::status(pid).ok()?;
    if st.state == 'Z' {
        return None;
    }
    let perf = perfdata::for_process(&procfs::target_tmp(pid), st.ns_pid, st.euid);
    let cmdline = || procfs::cmdline(pid).ok();
    let command = perf
        .as_ref()
        .and_then(PerfData::java_command)
        .filter(|c| !c.is_empty())
        .map(str::to_string)
        .or_else(|| cmdline().and_then(|a| command_from_args(&a)));
    let java_version = perf
        .as_ref()
        .and_then(PerfData::java_version)
        .map(str::to_string)
        .or_else(|| version_from_release(pid));
    Some(Jvm {
        pid,
        java_version: java_version.map(|v| untrusted::printable(&v)),
        command: command.map(|c| untrusted::printable(&c)),
        agent,
        attachable: perf.as_ref().and_then(PerfData::attachable),
    })
}

/// Launcher options that take the next argument as their value.
const OPTIONS_WITH_VALUE: &[&str] = &[
    "-cp",
    "-classpath",
    "--class-path",
    "-p",
    "--module-path",
    "--upgrade-module-path",
    "--add-modules",
    "--limit-modules",
    "--add-reads",
    "--add-exports",
    "--add-opens",
    "--patch-module",
    "--enable-native-access",
];

/// The main class and its arguments from a `java` command line: what
/// follows the launcher's options (`-jar FILE ...` and `-m MODULE[/CLASS]
/// ...` keep their file or module), as the launcher records it in
/// `sun.rt.javaCommand`.
pub fn command_from_args(args: &[String]) -> Option<String> {
    let mut i = 1;
    while i < args.len() {
        let a = args[i].as_str();
        if a == "-jar" || a == "-m" || a == "--module" {
            return args.get(i + 1).map(|_| args[i + 1..].join(" "));
        }
        if let Some(m) = a.strip_prefix("--module=") {
            let mut rest = vec![m.to_string()];
            rest.extend(args[i + 1..].iter().cloned());
            return Some(rest.join(" "));
        }
        if OPTIONS_WITH_VALUE.contains(&a) {
            i += 2;
        } else if a.starts_with('-') {
            i += 1;
        } else {
            return Some(args[i..].join(" "));
        }
    }
    None
}

/// `JAVA_VERSION` from the `release` file of the JDK the process runs
/// (its executable's `../release`, inside the process's file system).
fn version_from_release(pid: u32) -> Option<String> {
    let exe = std::fs::read_link(procfs::proc_dir(pid).join("exe")).ok()?;
    let home = exe.parent()?.parent()?;
    let rel = home.strip_prefix("/").ok()?;
    let path: PathBuf = procfs::proc_dir(pid).join("root").join(rel).join("release");
    let text = procfs::read_bounded(&path, 64 << 10).ok()?;
    release_version(&String::from_utf8_lossy(&text))
}

pub fn release_version(text: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.strip_prefix("JAVA_VERSION="))
        .map(|v| v.trim().trim_matches('"').to_string())
        .filter(|v| !v.is_empty())
}

/// The table `hprof-rs jvms` prints.
pub fn table(jvms: &[Jvm]) -> String {
    let rows: Vec<[String; 5]> = jvms
        .iter()
        .map(|j| {
            [
                j.pid.to_string(),
                j.java_version.clone().unwrap_or_else(|| "?".into()),
                match j.agent {
                    Some(true) => "loaded".into(),
                    Some(false) => "-".into(),
                    None => "?".into(),
                },
                match j.attachable {
                    Some(true) => "yes".into(),
                    Some(false) => "disabled".into(),
                    None => "?".into(),
                },
                j.command.clone().unwrap_or_else(|| "?".into()),
            ]
        })
        .collect();
    let head = ["PID", "JAVA", "AGENT", "ATTACH", "COMMAND"];
    let mut width = head.map(str::len);
    for r in &rows {
        for (w, c) in width.iter_mut().zip(r.iter()) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: [&str; 5]| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                s.push_str(c);
            } else {
                s.push_str(&format!("{c:<w$}  ", w = width[i]));
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(head);
    for r in &rows {
        out.push_str(&line([&r[0], &r[1], &r[2], &r[3], &r[4]]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn main_class_from_a_command_line() {
        let c = |s: &str| command_from_args(&args(s));
        assert_eq!(
            c("java -Xmx1g -cp a:b app.Main x y").as_deref(),
            Some("app.Main x y")
        );
        assert_eq!(
            c("/jdk/bin/java -jar app.jar --port 1").as_deref(),
            Some("app.jar --port 1")
        );
        assert_eq!(
            c("java --add-opens java.base/x=ALL -m mod/app.Main a").as_deref(),
            Some("mod/app.Main a")
        );
        assert_eq!(
            c("java --module=mod/app.Main").as_deref(),
            Some("mod/app.Main")
        );
        assert_eq!(c("java -version"), None);
        assert_eq!(c("java -jar"), None);
    }

    #[test]
    fn version_from_a_release_file() {
        let text =
            "IMPLEMENTOR=\"Debian\"\nJAVA_VERSION=\"17.0.15\"\nJAVA_VERSION_DATE=\"2025-04-15\"\n";
        assert_eq!(release_version(text).as_deref(), Some("17.0.15"));
        assert_eq!(release_version("JAVA_VERSION=\"\"\n"), None);
    }

    #[test]
    fn table_aligns_its_columns() {
        let t = table(&[
            Jvm {
                pid: 7,
                java_version: Some("17.0.15".into()),
                command: Some("Main a".into()),
                agent: Some(true),
                attachable: Some(true),
            },
            Jvm {
                pid: 12345,
                java_version: None,
                command: None,
                agent: None,
                attachable: Some(false),
            },
        ]);
        assert_eq!(
            t,
            "PID    JAVA     AGENT   ATTACH    COMMAND\n\
             7      17.0.15  loaded  yes       Main a\n\
             12345  ?        ?       disabled  ?\n"
        );
    }
}
