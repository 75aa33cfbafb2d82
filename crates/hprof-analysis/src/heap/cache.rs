//! Where a dump's index lives, and whether it still describes the dump.
//!
//! The index of dump `N` of `FILE` is saved beside it as
//! `FILE.hprof-rs-index` (`FILE.dumpN.hprof-rs-index` for N > 1), or, when
//! that directory is not writable, in the user's cache directory
//! (`$XDG_CACHE_HOME/hprof-rs`, else `~/.cache/hprof-rs`) under the file's
//! name and a hash of its full path. An index is used only when:
//!
//! * it is a regular file owned by this user and writable by no one else
//!   (another user's planted index is never read);
//! * its identity matches the dump: size, modification time, inode and
//!   device, the dump's number, and a hash of the dump's first and last
//!   64 KiB (a dump rewritten in place within the same second is caught by
//!   its content).
//!
//! Otherwise it is rebuilt: written under a temporary name in the same
//! directory (created exclusively, mode 0600) and renamed into place once
//! complete, so a reader never sees half an index. `--no-cache` builds into
//! an unnamed temporary file that vanishes with the process.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::index::{self, HeapIndex};
use super::Progress;

/// Where a query's index comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheMode {
    /// Reuse a saved index, or build and save one.
    Save,
    /// Build in a temporary file, save nothing.
    NoCache,
}

/// How an index was obtained.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opened {
    /// The saved index, if any.
    pub path: Option<PathBuf>,
    /// Built by this call (else reused).
    pub built: bool,
    /// Why a saved index could not be written or used, if so.
    pub note: Option<String>,
}

const SUFFIX: &str = "hprof-rs-index";

/// 64-bit FNV-1a: a stable hash (the same in every build of hprof-rs).
fn fnv(h: u64, bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(h, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

/// What must not have changed for an index to describe the dump.
pub fn identity(dump: &Path, number: u32) -> io::Result<Vec<u8>> {
    let mut f = File::open(dump)?;
    let m = f.metadata()?;
    let mut head = vec![0u8; 64 << 10];
    let n = read_up_to(&mut f, &mut head)?;
    let mut h = fnv(FNV_START, &head[..n]);
    if m.len() > head.len() as u64 {
        f.seek(SeekFrom::Start(m.len().saturating_sub(head.len() as u64)))?;
        let n = read_up_to(&mut f, &mut head)?;
        h = fnv(h, &head[..n]);
    }
    let mut id = Vec::new();
    for v in [
        m.len(),
        m.mtime() as u64,
        m.mtime_nsec() as u64,
        m.ino(),
        m.dev(),
        u64::from(number),
        h,
    ] {
        id.extend_from_slice(&v.to_le_bytes());
    }
    Ok(id)
}

fn read_up_to(f: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match f.read(&mut buf[got..])? {
            0 => break,
            n => got += n,
        }
    }
    Ok(got)
}

fn file_name(dump: &Path, number: u32) -> String {
    let base = dump
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "dump".into());
    if number == 1 {
        format!("{base}.{SUFFIX}")
    } else {
        format!("{base}.dump{number}.{SUFFIX}")
    }
}

/// The user's cache directory for indexes.
fn cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("hprof-rs"))
}

/// The two places an index of `dump` may be saved: beside it, and in the
/// cache directory.
pub fn locations(dump: &Path, number: u32) -> Vec<PathBuf> {
    let mut v = Vec::new();
    let name = file_name(dump, number);
    v.push(dump.with_file_name(&name));
    if let Some(dir) = cache_dir() {
        let full = fs::canonicalize(dump).unwrap_or_else(|_| dump.to_path_buf());
        let h = fnv(FNV_START, full.as_os_str().as_encoded_bytes());
        v.push(dir.join(format!("{h:016x}-{name}")));
    }
    v
}

/// Opens an index file only if it is this user's own, regular and not
/// writable by others.
fn open_trusted(path: &Path) -> io::Result<File> {
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    let m = f.metadata()?;
    if !m.is_file() || m.uid() != crate::os::euid() || m.mode() & 0o022 != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "not a file of this user's own (or writable by others)",
        ));
    }
    Ok(f)
}

/// The index of dump `number` of `dump`: a saved one that still matches,
/// else a new one (saved unless `mode` is [`CacheMode::NoCache`]).
pub fn open(
    dump: &Path,
    number: u32,
    mode: CacheMode,
    progress: &dyn Progress,
) -> Result<(HeapIndex, Opened), String> {
    let ident =
        identity(dump, number).map_err(|e| format!("cannot open {}: {e}", dump.display()))?;
    let places = locations(dump, number);
    if mode == CacheMode::Save {
        for p in &places {
            let Ok(f) = open_trusted(p) else { continue };
            if let Ok((ix, stored)) = HeapIndex::open(f) {
                if stored == ident {
                    return Ok((
                        ix,
                        Opened {
                            path: Some(p.clone()),
                            built: false,
                            note: None,
                        },
                    ));
                }
            }
        }
    }
    let mut notes = Vec::new();
    if mode == CacheMode::Save {
        for p in &places {
            match build_at(dump, number, &ident, p, progress) {
                Ok(ix) => {
                    return Ok((
                        ix,
                        Opened {
                            path: Some(p.clone()),
                            built: true,
                            note: None,
                        },
                    ))
                }
                Err(Failure::Place(e)) => notes.push(format!("{}: {e}", p.display())),
                Err(Failure::Build(e)) => return Err(e),
            }
        }
    }
    // In memory only: an unnamed file in a temporary directory.
    let dir = places
        .get(1)
        .and_then(|p| p.parent())
        .filter(|d| fs::create_dir_all(d).is_ok())
        .map(Path::to_path_buf)
        .unwrap_or_else(std::env::temp_dir);
    let (f, tmp) = create_temp(&dir, "no-cache")
        .map_err(|e| format!("cannot create a temporary index in {}: {e}", dir.display()))?;
    let _ = fs::remove_file(&tmp);
    let f = index::build(dump, number, f, &ident, progress)?;
    let (ix, _) = HeapIndex::open(f).map_err(|e| format!("index just built: {e}"))?;
    Ok((
        ix,
        Opened {
            path: None,
            built: true,
            note: (!notes.is_empty()).then(|| format!("index not saved ({})", notes.join("; "))),
        },
    ))
}

enum Failure {
    /// This place cannot hold the index (try the next).
    Place(io::Error),
    /// The dump cannot be indexed.
    Build(String),
}

fn create_temp(dir: &Path, tag: &str) -> io::Result<(File, PathBuf)> {
    let pid = std::process::id();
    let name = |n: u32| Ok(dir.join(format!(".{SUFFIX}.{tag}.{pid}.{n}")));
    hprof_core::fs::create_unique(100, name, hprof_core::fs::create_private_file)
}

fn build_at(
    dump: &Path,
    number: u32,
    ident: &[u8],
    target: &Path,
    progress: &dyn Progress,
) -> Result<HeapIndex, Failure> {
    let dir = target.parent().unwrap_or(Path::new("."));
    if fs::create_dir_all(dir).is_ok() && dir.ends_with("hprof-rs") {
        let _ = fs::set_permissions(dir, fs::Permissions::from_mode(0o700));
    }
    let (f, tmp) = create_temp(dir, "tmp").map_err(Failure::Place)?;
    let result = index::build(dump, number, f, ident, progress);
    let f = match result {
        Ok(f) => f,
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            return Err(Failure::Build(e));
        }
    };
    if let Err(e) = fs::rename(&tmp, target) {
        let _ = fs::remove_file(&tmp);
        return Err(Failure::Place(e));
    }
    HeapIndex::open(f)
        .map(|(ix, _)| ix)
        .map_err(|e| Failure::Build(format!("index just built: {e}")))
}
