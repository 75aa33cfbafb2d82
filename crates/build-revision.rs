//! Build script of the two products, the agent (crates/hprof-agent) and the
//! `hprof-rs` binary (crates/hprof-cli): records which build of hprof-rs this
//! is, so that a profile or a bug report can be traced back to its source.
//!
//! It sets `HPROF_RS_BUILD` to "<package version> (<source revision>)"; each
//! product hands it to `hprof_core::build_info::set` when it starts, and
//! `help`, the text header and `hprof-rs --version` print it. Only these two
//! crates run it: the revision changes with every commit, and a crate whose
//! build script output changes is rebuilt with everything that depends on
//! it (when `hprof-core` ran it, every commit rebuilt the whole workspace). The revision is the git commit the tree was
//! built from, with "+changes" when tracked files differed from it; a build
//! from a source archive without git says "revision unknown".

use std::path::{Path, PathBuf};
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let revision = match git(&["rev-parse", "--short=12", "HEAD"]) {
        Some(rev) if !rev.is_empty() => {
            // Only tracked files count: build outputs and scratch files in
            // the tree do not make a build "changed".
            // --no-optional-locks: a plain `git status` refreshes and
            // rewrites the index, whose change (watched below) made the
            // next cargo command run this script again and rebuild the
            // whole crate (3.5 min of CI on two cores).
            let changed = git(&[
                "--no-optional-locks",
                "status",
                "--porcelain",
                "--untracked-files=no",
            ])
            .map(|s| !s.is_empty())
            .unwrap_or(false);
            if changed {
                format!("git {rev}+changes")
            } else {
                format!("git {rev}")
            }
        }
        _ => "revision unknown".to_string(),
    };
    println!("cargo:rustc-env=HPROF_RS_BUILD={version} ({revision})");

    // Run again when the commit or the index changes (a commit, a checkout,
    // `git add`); source edits rebuild the crate anyway, and a changed
    // source file changes the index only once it is added.
    println!("cargo:rerun-if-changed=../build-revision.rs");
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        let dir = PathBuf::from(dir);
        for name in ["HEAD", "index"] {
            let p = dir.join(name);
            if p.exists() {
                println!("cargo:rerun-if-changed={}", p.display());
            }
        }
        // The branch file HEAD points to (or packed-refs when it is packed).
        if let Some(head_ref) = git(&["symbolic-ref", "-q", "HEAD"]) {
            let common = git(&["rev-parse", "--git-common-dir"])
                .map(PathBuf::from)
                .unwrap_or(dir.clone());
            for p in [common.join(&head_ref), common.join("packed-refs")] {
                if Path::new(&p).exists() {
                    println!("cargo:rerun-if-changed={}", p.display());
                }
            }
        }
    }
}
