//! Files and directories made new under a name no one else holds: the
//! agent's heap dump scratch file and dump directory, the tool's
//! temporary heap indexes. Each is created exclusively (O_EXCL, mkdir),
//! never through a symlink, so another local user can neither redirect it
//! nor read what goes in it; a name already taken is passed for the next.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Make something new at the first free name: `name(0)`, `name(1)`, ...
/// (at most `tries`). `make` creates it exclusively and fails with
/// `AlreadyExists` when the name is taken; a symlink planted at the name
/// (refused with `ELOOP` by `O_NOFOLLOW`) counts as taken. Other errors end
/// the search; when every name is taken, the last refusal is the error.
pub fn create_unique<T>(
    tries: u32,
    mut name: impl FnMut(u32) -> io::Result<PathBuf>,
    mut make: impl FnMut(&Path) -> io::Result<T>,
) -> io::Result<(T, PathBuf)> {
    let mut last = None;
    for attempt in 0..tries {
        let path = name(attempt)?;
        match make(&path) {
            Ok(made) => return Ok((made, path)),
            Err(e) if is_taken(&e) => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::new(io::ErrorKind::AlreadyExists, "no free name")))
}

fn is_taken(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::AlreadyExists || e.raw_os_error() == Some(libc::ELOOP)
}

/// A new file at `path` for reading and writing: created here (O_EXCL),
/// not through a symlink (O_NOFOLLOW), mode 0600.
pub fn create_private_file(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("hprof-core-fs-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir(&d).unwrap();
        d
    }

    #[test]
    fn taken_names_and_planted_symlinks_are_passed_over() {
        let d = dir("taken");
        let name = |n: u32| Ok(d.join(format!("f.{n}")));
        std::fs::write(d.join("f.0"), b"planted").unwrap();
        std::os::unix::fs::symlink(d.join("elsewhere"), d.join("f.1")).unwrap();
        let (mut f, path) = create_unique(4, name, create_private_file).unwrap();
        assert_eq!(path, d.join("f.2"));
        std::io::Write::write_all(&mut f, b"x").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(
            !d.join("elsewhere").exists(),
            "not written through the link"
        );
        assert_eq!(std::fs::read(d.join("f.0")).unwrap(), b"planted");
        // Every name taken: the last refusal.
        let e = create_unique(2, name, create_private_file).unwrap_err();
        assert!(is_taken(&e), "{e}");
        // Another error ends the search at once.
        let mut tried = 0;
        let e = create_unique(
            5,
            |n| Ok(d.join("missing").join(n.to_string())),
            |p| {
                tried += 1;
                create_private_file(p)
            },
        )
        .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert_eq!(tried, 1);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
