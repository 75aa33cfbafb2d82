//! The private directory the VM's dumper writes its file into
//! (docs/heap_dump.md, "The VM's dumper"): beside the output file, or in
//! the system's temporary directory with `net=`.
//!
//! * Its name cannot be guessed (`<base>.vmdump.<pid>.<16 random hex
//!   digits>`) and it is created new (mkdir fails on any existing name, a
//!   symlink included), mode 0700: another user can neither make its name
//!   fail in advance nor put anything in it, so a planted name never sends
//!   a dump to the JVMTI walk.
//! * The VM is given its file through `/proc/self/fd/N/heap.hprof`, N the
//!   directory held open: the directory is the one created, whatever its
//!   name becomes meanwhile.
//! * The open directory carries an exclusive flock(2) for as long as the
//!   dump runs; the kernel drops it however the process ends. A JVM killed
//!   during a dump (SIGKILL: no code of the agent runs) leaves its
//!   directory behind; the next dump beside the same base name removes
//!   such directories when they are the user's own, mode 0700, unlocked,
//!   and named after a process that no longer exists.

use std::fs::File;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

/// Between the base name and the process ID.
const MARK: &str = ".vmdump.";

/// Random bytes in a name (as hex digits).
const RANDOM_BYTES: usize = 8;

/// Names tried when one exists already (2^64 odds each without a planted
/// name: a planted name cannot be the one drawn).
const TRIES: u32 = 8;

/// A private directory for the VM's dump file, removed with whatever is
/// in it when dropped.
pub struct ScratchDir {
    /// Its name when created.
    path: PathBuf,
    /// The directory, open and locked.
    dir: File,
    /// The directory whatever its name (`/proc/self/fd/N`), else `path`.
    pinned: PathBuf,
}

impl ScratchDir {
    /// A new directory `<base>.vmdump.<pid>.<random>`, after removing the
    /// ones killed dumps left beside `base`.
    pub fn create(base: &str) -> io::Result<ScratchDir> {
        sweep(base);
        let pid = std::process::id();
        let name = |_| {
            crate::os::random_hex(RANDOM_BYTES)
                .map(|r| PathBuf::from(format!("{base}{MARK}{pid}.{r}")))
        };
        let (dir, path) = hprof_core::fs::create_unique(TRIES, name, |path| {
            std::fs::DirBuilder::new().mode(0o700).create(path)?;
            // Opened without following a symlink and checked: in a
            // directory others may write without the sticky bit, the name
            // could have been replaced since mkdir (taken: the next name).
            match crate::os::open_dir_at(None, path.as_os_str()) {
                Ok(d) if is_private(&d) => Ok(d),
                Ok(_) | Err(_) => Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} was replaced after it was made", path.display()),
                )),
            }
        })?;
        // Without a lock (a filesystem that refuses flock on a directory)
        // the dump goes on; a later sweep then never takes this directory
        // for a dead one.
        let _ = crate::os::try_lock_exclusive(&dir);
        let pinned = pinned_name(&dir).unwrap_or_else(|| path.clone());
        Ok(ScratchDir { path, dir, pinned })
    }

    /// The dump file the VM is asked to create (it must end in `.hprof`),
    /// named through the open directory.
    pub fn dump_file(&self) -> PathBuf {
        self.pinned.join("heap.hprof")
    }

    /// The directory's name when it was made (for messages).
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// `/proc/self/fd/N` for `dir`, if /proc shows that very directory there.
fn pinned_name(dir: &File) -> Option<PathBuf> {
    use std::os::unix::io::AsRawFd;
    let p = PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd()));
    let (a, b) = (std::fs::metadata(&p).ok()?, dir.metadata().ok()?);
    ((a.dev(), a.ino()) == (b.dev(), b.ino())).then_some(p)
}

/// A directory of this user's, mode 0700.
fn is_private(dir: &File) -> bool {
    dir.metadata()
        .is_ok_and(|m| m.is_dir() && m.uid() == crate::os::euid() && m.mode() & 0o7777 == 0o700)
}

/// Remove the files of the open directory `dir` (never a subdirectory,
/// which no dump makes), then its name `path` if that still names it.
/// False if something stayed.
fn empty_and_remove(dir: &File, path: &Path) -> bool {
    use std::os::unix::io::AsRawFd;
    let listing = format!("/proc/self/fd/{}", dir.as_raw_fd());
    let Ok(entries) = std::fs::read_dir(&listing).or_else(|_| std::fs::read_dir(path)) else {
        return false;
    };
    for e in entries.flatten() {
        if e.file_type().is_ok_and(|t| !t.is_dir()) {
            let _ = crate::os::unlink_at(dir, &e.file_name());
        }
    }
    let same = match (std::fs::symlink_metadata(path), dir.metadata()) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    };
    same && std::fs::remove_dir(path).is_ok()
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        // The dump, the VM's part files if it left any (JDK 22 and later),
        // or the old output if an adoption stopped between its two steps.
        empty_and_remove(&self.dir, &self.path);
    }
}

/// Remove the directories that dumps of killed processes left beside
/// `base` (see the module documentation). Errors are ignored: nothing
/// depends on it.
fn sweep(base: &str) {
    let base = Path::new(base);
    let Some(file) = base.file_name() else { return };
    let parent = match base.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let prefix = format!("{}{MARK}", file.to_string_lossy());
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    let me = std::process::id();
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        let Some(rest) = name.strip_prefix(&prefix) else {
            continue;
        };
        let Some(pid) = rest
            .split_once('.')
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me || crate::os::process_exists(pid) {
            continue;
        }
        let path = parent.join(&*name);
        let Ok(dir) = crate::os::open_dir_at(None, path.as_os_str()) else {
            continue;
        };
        if is_private(&dir) && crate::os::try_lock_exclusive(&dir).unwrap_or(false) {
            empty_and_remove(&dir, &path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmpdir(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("hprof-rs-scratch-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn names_are_new_private_and_unguessable() {
        let d = tmpdir("names");
        let base = d.join("out.hprof");
        let base = base.to_str().unwrap();
        let a = ScratchDir::create(base).unwrap();
        let b = ScratchDir::create(base).unwrap();
        assert_ne!(a.path(), b.path());
        let name = a.path().file_name().unwrap().to_string_lossy().into_owned();
        let rest = name
            .strip_prefix(&format!("out.hprof.vmdump.{}.", std::process::id()))
            .unwrap();
        assert_eq!(rest.len(), 2 * RANDOM_BYTES, "{name}");
        let m = std::fs::symlink_metadata(a.path()).unwrap();
        assert!(m.is_dir());
        assert_eq!(m.mode() & 0o777, 0o700);
        // The VM's file is made through the open directory.
        std::fs::write(a.dump_file(), b"x").unwrap();
        assert!(a.path().join("heap.hprof").exists());
        let (pa, pb) = (a.path().to_path_buf(), b.path().to_path_buf());
        drop(a);
        drop(b);
        assert!(!pa.exists() && !pb.exists());
        let _ = std::fs::remove_dir_all(&d);
    }

    /// A directory left by a process that no longer exists is removed by
    /// the next one; one of a live process (this one, locked), one of
    /// another owner's mode, and one that is a symlink are not.
    #[test]
    fn leftovers_of_dead_processes_are_swept() {
        let d = tmpdir("sweep");
        let base = d.join("out.hprof");
        let base_s = base.to_str().unwrap();
        // A PID no process has: above the kernel's limit.
        let dead = 4_194_305u32;
        let left = d.join(format!("out.hprof.vmdump.{dead}.00aa"));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&left)
            .unwrap();
        std::fs::write(left.join("heap.hprof"), vec![1u8; 1000]).unwrap();
        std::fs::write(left.join("heap.hprof.p0"), b"p").unwrap();
        let open_mode = d.join(format!("out.hprof.vmdump.{dead}.00bb"));
        std::fs::DirBuilder::new()
            .mode(0o755)
            .create(&open_mode)
            .unwrap();
        let target = d.join("target");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("keep"), b"k").unwrap();
        let link = d.join(format!("out.hprof.vmdump.{dead}.00cc"));
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let other_base = d.join(format!("other.hprof.vmdump.{dead}.00dd"));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&other_base)
            .unwrap();
        let live = ScratchDir::create(base_s).unwrap();
        assert!(!left.exists(), "the dead process's directory is gone");
        assert!(open_mode.exists(), "not a private directory: left");
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(target.join("keep")).unwrap(), b"k");
        assert!(other_base.exists(), "another base name's");
        // A second dump of this process keeps the first one's directory.
        let again = ScratchDir::create(base_s).unwrap();
        assert!(live.path().exists());
        drop(again);
        drop(live);
        let _ = std::fs::remove_dir_all(&d);
    }
}
