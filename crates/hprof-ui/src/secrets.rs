//! The secrets agents prove when they connect (docs/ui.md, "Safety"), and
//! the files that carry them.
//!
//! Agents are started with `tokenfile=FILE` rather than `token=SECRET`: a
//! command line is visible to every local user (`ps`, /proc/PID/cmdline),
//! a file in a directory only this user can enter is not. The directory
//! is made for this run (mode 0700, a random name, created exclusively so
//! that nothing planted is used) in `$XDG_RUNTIME_DIR` when that is a
//! private directory of ours, else in the temporary directory. It holds
//! the agents port's token for as long as the UI runs and one file per
//! Launch until its agent has connected. SIGINT, SIGTERM and SIGHUP remove
//! it before the UI ends.

use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// `bytes` random bytes from the kernel, as hex.
pub fn random_hex(bytes: usize) -> Result<String, String> {
    let mut b = vec![0u8; bytes];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .map_err(|e| format!("cannot read /dev/urandom for a secret: {e}"))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// A new 128-bit secret.
pub fn new_secret() -> Result<String, String> {
    random_hex(16)
}

/// Comparison whose time does not depend on where `a` and `b` first differ.
pub fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// This run's private directory and the agents port's token.
pub struct Secrets {
    dir: PathBuf,
    /// The token every agent on the agents port proves.
    pub agents: String,
    /// The file that holds it (`tokenfile=` of the printed options).
    pub agents_file: PathBuf,
}

impl Secrets {
    pub fn create() -> Result<Secrets, String> {
        let dir = private_dir()?;
        let agents = new_secret()?;
        let agents_file = dir.join("agents.token");
        if let Err(e) = write_secret(&agents_file, &agents) {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(e);
        }
        Ok(Secrets {
            dir,
            agents,
            agents_file,
        })
    }

    /// A file holding a new secret for one Launch: the secret and the file.
    pub fn launch_file(&self) -> Result<(String, PathBuf), String> {
        static SEQ: AtomicU64 = AtomicU64::new(1);
        let secret = new_secret()?;
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let path = self.dir.join(format!("launch-{n}.token"));
        write_secret(&path, &secret)?;
        Ok((secret, path))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Remove the directory and what is in it.
    pub fn remove(&self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `$XDG_RUNTIME_DIR` when it is a directory of ours that only we can
/// enter; otherwise the temporary directory.
fn base_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("XDG_RUNTIME_DIR") {
        let d = PathBuf::from(d);
        // SAFETY: geteuid has no preconditions and cannot fail.
        let uid = unsafe { libc::geteuid() };
        let private = std::fs::symlink_metadata(&d)
            .is_ok_and(|m| m.is_dir() && m.uid() == uid && m.mode() & 0o077 == 0);
        if private {
            return d;
        }
    }
    std::env::temp_dir()
}

fn private_dir() -> Result<PathBuf, String> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let base = base_dir();
    let mut last = String::new();
    for _ in 0..8 {
        let name = format!(
            "hprof-rs-ui-{}-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed),
            random_hex(8)?
        );
        let dir = base.join(name);
        // mkdir fails on anything already there, a planted link included.
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => {
                if dir.to_string_lossy().contains([',', '=']) {
                    let _ = std::fs::remove_dir(&dir);
                    return Err(format!(
                        "the directory for the agents' token, {}, has ',' or '=' in its \
                         name, which agent options cannot carry: set TMPDIR",
                        dir.display()
                    ));
                }
                return Ok(dir);
            }
            Err(e) => last = format!("{}: {e}", dir.display()),
        }
    }
    Err(format!(
        "cannot create a private directory for the agents' token ({last})"
    ))
}

/// The secret and a newline in a new file only we can read.
fn write_secret(path: &Path, secret: &str) -> Result<(), String> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .and_then(|mut f| f.write_all(format!("{secret}\n").as_bytes()))
        .map_err(|e| format!("cannot write the token file {}: {e}", path.display()))
}

/// Remove `dir` when the UI is ended by SIGINT, SIGTERM or SIGHUP, then
/// end as that signal would have (`hprof_core::os::on_termination`: call
/// before any other thread starts).
pub fn remove_on_termination(dir: PathBuf) -> Result<(), String> {
    hprof_core::os::on_termination(move |_| {
        let _ = std::fs::remove_dir_all(&dir);
        false
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_private_random_and_removed() {
        let s = Secrets::create().unwrap();
        let meta = std::fs::metadata(s.dir()).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o700);
        let f = std::fs::metadata(&s.agents_file).unwrap();
        assert_eq!(f.mode() & 0o777, 0o600);
        assert_eq!(
            std::fs::read_to_string(&s.agents_file).unwrap(),
            format!("{}\n", s.agents)
        );
        assert_eq!(s.agents.len(), 32);
        let (secret, file) = s.launch_file().unwrap();
        assert_ne!(secret, s.agents);
        assert_eq!(std::fs::read_to_string(&file).unwrap().trim(), secret);
        let (again, other_file) = s.launch_file().unwrap();
        assert_ne!(again, secret);
        assert_ne!(other_file, file);
        let other = Secrets::create().unwrap();
        assert_ne!(other.dir(), s.dir());
        assert_ne!(other.agents, s.agents);
        s.remove();
        other.remove();
        assert!(!s.dir().exists());
    }

    #[test]
    fn comparison_is_exact() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"ab"));
        assert!(!same(b"", b"a"));
    }
}
