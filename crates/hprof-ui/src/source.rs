//! The source view: the file of a frame, found under the directories given
//! with `--source DIR`, so the page can show it at the frame's line.
//!
//! Only names that look like a source file of a JVM language (by their
//! extension) and a package are looked up, only under those directories,
//! and only files up to [`MAX_SOURCE`] bytes are sent. The file is opened
//! one path component at a time from the directory, none of them followed
//! if it is a symbolic link (`openat` with `O_NOFOLLOW`): a directory
//! swapped for a link while a request runs cannot lead it out.

use serde_json::{json, Value};
use std::collections::VecDeque;
use std::ffi::CString;
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// Largest source file sent to the page.
pub const MAX_SOURCE: u64 = 4 << 20;
/// Directory entries looked at when the file is not where its package says
/// (`src/main/java/...` layouts under the given directory).
const MAX_WALK: usize = 50_000;
/// What a frame's source file may be called: sources of the JVM's
/// languages (a class file names its source file; Rhino's and Nashorn's
/// name scripts).
const SOURCE_EXTENSIONS: [&str; 13] = [
    "java", "kt", "kts", "scala", "sc", "groovy", "gvy", "clj", "cljc", "js", "mjs", "py", "rb",
];

fn plain_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 255
        && !s.starts_with('.')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_$.-".contains(c))
}

fn source_name(s: &str) -> bool {
    plain_name(s)
        && s.rsplit_once('.')
            .is_some_and(|(stem, ext)| !stem.is_empty() && SOURCE_EXTENSIONS.contains(&ext))
}

fn identifier(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// `pkg/sub/File.java` for class `pkg.sub.Cls` and file `File.java`.
fn relative(class: &str, file: &str) -> Result<PathBuf, String> {
    if !source_name(file) {
        return Err(format!("not a source file name: {file:?}"));
    }
    let mut p = PathBuf::new();
    if let Some((package, _)) = class.rsplit_once('.') {
        for seg in package.split('.') {
            if !identifier(seg) {
                return Err(format!("not a package name: {package:?}"));
            }
            p.push(seg);
        }
    }
    p.push(file);
    Ok(p)
}

/// Open `rel` (plain components only) under the directory `root`, one
/// component at a time, following no symbolic link: directories with
/// `O_DIRECTORY | O_NOFOLLOW`, the file with `O_NOFOLLOW | O_NONBLOCK` (a
/// FIFO does not block) and then only if it is a regular file.
fn open_beneath(root: &Path, rel: &Path) -> std::io::Result<File> {
    let at = |dir: Option<&OwnedFd>, name: &std::ffi::OsStr, flags: libc::c_int| {
        let c = CString::new(name.as_bytes())
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
        let base = dir.map_or(libc::AT_FDCWD, |d| d.as_raw_fd());
        // SAFETY: `c` is a NUL-terminated path that outlives the call;
        // `base` is AT_FDCWD or an open directory descriptor we own.
        let fd = unsafe { libc::openat(base, c.as_ptr(), flags | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` was just returned by openat and is owned by no one else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    };
    let dir_flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW;
    // The root was canonicalised at start-up: no link in it to follow.
    let mut dir = at(None, root.as_os_str(), dir_flags)?;
    let parts: Vec<&std::ffi::OsStr> = rel
        .components()
        .map(|c| match c {
            Component::Normal(n) => Ok(n),
            _ => Err(std::io::Error::from(std::io::ErrorKind::InvalidInput)),
        })
        .collect::<Result<_, _>>()?;
    let (file, dirs) = parts.split_last().ok_or(std::io::ErrorKind::InvalidInput)?;
    for d in dirs {
        dir = at(Some(&dir), d, dir_flags)?;
    }
    let fd = at(
        Some(&dir),
        file,
        libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK,
    )?;
    let f = File::from(fd);
    if !f.metadata()?.is_file() {
        return Err(std::io::ErrorKind::InvalidInput.into());
    }
    Ok(f)
}

/// Where under `root` a file ending with `rel` is, relative to `root`:
/// where the package says, or further down (bounded walk, symbolic links
/// not followed). Only a guess: the file is then opened with
/// [`open_beneath`].
fn locate(root: &Path, rel: &Path) -> Option<PathBuf> {
    if root.join(rel).is_file() {
        return Some(rel.to_path_buf());
    }
    let mut queue = VecDeque::from([PathBuf::new()]);
    let mut seen = 0;
    while let Some(sub) = queue.pop_front() {
        let Ok(entries) = std::fs::read_dir(root.join(&sub)) else {
            continue;
        };
        for e in entries.flatten() {
            seen += 1;
            if seen > MAX_WALK {
                return None;
            }
            let Ok(t) = e.file_type() else { continue };
            if t.is_dir() {
                let below = sub.join(e.file_name());
                let candidate = below.join(rel);
                if root.join(&candidate).is_file() {
                    return Some(candidate);
                }
                queue.push_back(below);
            }
        }
    }
    None
}

/// The source of `file` (of class `class`) under `roots`.
pub fn find(roots: &[PathBuf], class: &str, file: &str) -> Result<Value, (u16, String)> {
    if roots.is_empty() {
        return Err((
            404,
            "no source directory: start the UI with --source DIR".into(),
        ));
    }
    let rel = relative(class, file).map_err(|e| (400, e))?;
    for root in roots {
        let Some(found) = locate(root, &rel) else {
            continue;
        };
        let Ok(f) = open_beneath(root, &found) else {
            continue;
        };
        let len = f.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
        if len > MAX_SOURCE {
            return Err((
                413,
                format!("{} is over {} MiB", rel.display(), MAX_SOURCE >> 20),
            ));
        }
        let mut text = Vec::new();
        f.take(MAX_SOURCE)
            .read_to_end(&mut text)
            .map_err(|e| (500, format!("{}: {e}", rel.display())))?;
        let text = String::from_utf8_lossy(&text);
        return Ok(
            json!({"path": found.display().to_string(), "lines": text.lines().collect::<Vec<_>>()}),
        );
    }
    Err((
        404,
        format!("{} not found under the source directories", rel.display()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> (PathBuf, PathBuf) {
        let base = std::env::temp_dir().join(format!("hprof-rs-ui-source-{}", std::process::id()));
        let root = base.join("root");
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(root.join("src/main/java/demo")).unwrap();
        std::fs::write(
            root.join("src/main/java/demo/App.java"),
            "package demo;\nclass App {}\n",
        )
        .unwrap();
        std::fs::write(root.join("Top.java"), "class Top {}\n").unwrap();
        std::fs::write(base.join("Secret.java"), "secret\n").unwrap();
        std::os::unix::fs::symlink(base.join("Secret.java"), root.join("Link.java")).unwrap();
        (base, root.canonicalize().unwrap())
    }

    fn root_of(roots: &[PathBuf]) -> &Path {
        &roots[0]
    }

    #[test]
    fn finds_sources_by_package_and_refuses_to_leave_the_root() {
        let (base, root) = tree();
        let roots = [root];
        let v = find(&roots, "demo.App", "App.java").unwrap();
        assert_eq!(v["path"], "src/main/java/demo/App.java");
        assert_eq!(v["lines"][1], "class App {}");
        assert_eq!(
            find(&roots, "Top", "Top.java").unwrap()["lines"][0],
            "class Top {}"
        );
        assert_eq!(
            find(&roots, "Link", "Link.java").unwrap_err().0,
            404,
            "a link out of the root"
        );
        assert_eq!(find(&roots, "x.Y", "../Secret.java").unwrap_err().0, 400);
        assert_eq!(find(&roots, "..x.Y", "Y.java").unwrap_err().0, 400);
        assert_eq!(find(&roots, "a/b.Y", "Y.java").unwrap_err().0, 400);
        assert_eq!(find(&roots, "demo.Gone", "Gone.java").unwrap_err().0, 404);
        assert_eq!(find(&[], "demo.App", "App.java").unwrap_err().0, 404);
        // Only sources, and only plain files.
        std::fs::write(root_of(&roots).join("notes.txt"), "x\n").unwrap();
        assert_eq!(find(&roots, "Top", "notes.txt").unwrap_err().0, 400);
        assert_eq!(find(&roots, "Top", "Top.class").unwrap_err().0, 400);
        assert_eq!(find(&roots, "Top", ".java").unwrap_err().0, 400);
        std::fs::create_dir(root_of(&roots).join("Dir.java")).unwrap();
        assert_eq!(find(&roots, "Dir", "Dir.java").unwrap_err().0, 404);
        // A package directory that is a link out of the root.
        std::fs::create_dir_all(base.join("out/evil")).unwrap();
        std::fs::write(base.join("out/evil/E.java"), "secret\n").unwrap();
        std::os::unix::fs::symlink(base.join("out/evil"), root_of(&roots).join("evil")).unwrap();
        assert_eq!(find(&roots, "evil.E", "E.java").unwrap_err().0, 404);
        std::fs::remove_dir_all(base).unwrap();
    }
}
