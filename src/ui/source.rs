//! The source view: the file of a frame, found under the directories given
//! with `--source DIR`, so the page can show it at the frame's line.
//!
//! Only names that look like a Java source file and a package are looked
//! up, only under those directories (symbolic links that lead out of them
//! are refused), and only files up to [`MAX_SOURCE`] bytes are sent.

use serde_json::{json, Value};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};

/// Largest source file sent to the page.
pub const MAX_SOURCE: u64 = 4 << 20;
/// Directory entries looked at when the file is not where its package says
/// (`src/main/java/...` layouts under the given directory).
const MAX_WALK: usize = 50_000;

fn plain_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 255
        && !s.starts_with('.')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_$.-".contains(c))
}

fn identifier(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// `pkg/sub/File.java` for class `pkg.sub.Cls` and file `File.java`.
fn relative(class: &str, file: &str) -> Result<PathBuf, String> {
    if !plain_name(file) {
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

/// A file under `root` ending with `rel`, where the package says or
/// further down (bounded walk, symbolic links not followed).
fn locate(root: &Path, rel: &Path) -> Option<PathBuf> {
    let direct = root.join(rel);
    if direct.is_file() {
        return Some(direct);
    }
    let mut queue = VecDeque::from([root.to_path_buf()]);
    let mut seen = 0;
    while let Some(dir) = queue.pop_front() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            seen += 1;
            if seen > MAX_WALK {
                return None;
            }
            let Ok(t) = e.file_type() else { continue };
            let p = e.path();
            if t.is_dir() {
                let candidate = p.join(rel);
                if candidate.is_file() {
                    return Some(candidate);
                }
                queue.push_back(p);
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
        // The file itself may be a link out of the directory.
        let Ok(real) = found.canonicalize() else {
            continue;
        };
        if !real.starts_with(root) {
            continue;
        }
        let len = real.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
        if len > MAX_SOURCE {
            return Err((
                413,
                format!("{} is over {} MiB", rel.display(), MAX_SOURCE >> 20),
            ));
        }
        let text = std::fs::read(&real).map_err(|e| (500, format!("{}: {e}", rel.display())))?;
        let text = String::from_utf8_lossy(&text);
        let shown = real
            .strip_prefix(root)
            .unwrap_or(&rel)
            .display()
            .to_string();
        return Ok(json!({"path": shown, "lines": text.lines().collect::<Vec<_>>()}));
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
        std::fs::remove_dir_all(base).unwrap();
    }
}
