//! Where the agent library that goes with this tool is: next to the
//! executable (a cargo build: `target/release/hprof-rs` beside
//! `target/release/libhprof_rs.so`) or in `../lib/` (the release layout,
//! `bin/hprof-rs` with `lib/libhprof_rs.so`). `hprof-rs agent-path`,
//! `attach` and the UI's Launch all take their default agent from here.

use super::jvms::AGENT_LIBRARY;
use std::path::{Path, PathBuf};

/// The places the agent is looked for, beside the tool in `exe_dir`, in order.
pub fn candidates(exe_dir: &Path) -> [PathBuf; 2] {
    let lib = match exe_dir.parent() {
        Some(up) => up.join("lib"),
        None => exe_dir.join("..").join("lib"),
    };
    [exe_dir.join(AGENT_LIBRARY), lib.join(AGENT_LIBRARY)]
}

/// The first of [`candidates`] that is a file, as an absolute path without
/// symbolic links; the error names every place looked at.
pub fn agent_beside(exe_dir: &Path) -> Result<PathBuf, String> {
    let places = candidates(exe_dir);
    for p in &places {
        if p.is_file() {
            return p
                .canonicalize()
                .map_err(|e| format!("cannot resolve {}: {e}", p.display()));
        }
    }
    Err(format!(
        "no agent library with this hprof-rs: looked for {} and {}",
        places[0].display(),
        places[1].display()
    ))
}

/// The agent library that goes with the running tool ([`agent_beside`]
/// the executable, whose path the kernel gives with links resolved).
pub fn bundled_agent() -> Result<PathBuf, String> {
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot tell where this hprof-rs is: {e}"))?;
    agent_beside(exe.parent().unwrap_or(Path::new("/")))
}

/// `path`, when it can follow `-agentpath:` (which ends the path at its
/// first `=`, and an option string at a `,`).
pub fn for_agentpath(path: PathBuf) -> Result<PathBuf, String> {
    if path.to_string_lossy().contains(['=', ',']) {
        return Err(format!(
            "the agent path {} contains '=' or ',', which -agentpath: cannot carry; \
             move or link the library to a path without them",
            path.display()
        ));
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("hprof-bundled-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d.canonicalize().unwrap()
    }

    #[test]
    fn beside_the_tool_comes_before_the_release_lib_dir() {
        let d = scratch("order");
        std::fs::create_dir_all(d.join("bin")).unwrap();
        std::fs::create_dir_all(d.join("lib")).unwrap();
        std::fs::write(d.join("lib").join(AGENT_LIBRARY), b"").unwrap();
        let bin = d.join("bin");
        assert_eq!(
            agent_beside(&bin).unwrap(),
            d.join("lib").join(AGENT_LIBRARY)
        );
        std::fs::write(bin.join(AGENT_LIBRARY), b"").unwrap();
        assert_eq!(agent_beside(&bin).unwrap(), bin.join(AGENT_LIBRARY));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn none_found_names_both_places() {
        let d = scratch("none");
        let bin = d.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        // A directory of the library's name is not a library.
        std::fs::create_dir_all(d.join("lib").join(AGENT_LIBRARY)).unwrap();
        assert_eq!(
            agent_beside(&bin).unwrap_err(),
            format!(
                "no agent library with this hprof-rs: looked for {}/bin/{AGENT_LIBRARY} and {}/lib/{AGENT_LIBRARY}",
                d.display(),
                d.display()
            )
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn agentpath_cannot_carry_equals_or_commas() {
        assert!(for_agentpath("/opt/a=b/libhprof_rs.so".into()).is_err());
        assert!(for_agentpath("/opt/a,b/libhprof_rs.so".into()).is_err());
        assert_eq!(
            for_agentpath("/opt/hprof-rs/lib/libhprof_rs.so".into()).unwrap(),
            PathBuf::from("/opt/hprof-rs/lib/libhprof_rs.so")
        );
    }
}
