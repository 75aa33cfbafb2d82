//! Which build of hprof-rs this is: the package version and the source
//! revision it was built from, recorded by each product's build script
//! (crates/build-revision.rs) and handed over here when the product starts
//! (`Agent_OnLoad`/`Agent_OnAttach`, `hprof-rs`'s `main`). Printed by `help`,
//! in the text header and by `hprof-rs --version`, so a profile or a bug
//! report names the code that made it. Given at run time rather than built
//! into this crate, so a commit rebuilds the two products only.

use std::sync::OnceLock;

static BUILD: OnceLock<&'static str> = OnceLock::new();

/// What is said before a product has set it (this crate's unit tests).
const UNSET: &str = concat!(env!("CARGO_PKG_VERSION"), " (revision not recorded)");

/// Record the product's build string, "<version> (git <commit>)",
/// "<version> (git <commit>+changes)" or "<version> (revision unknown)".
/// The first call wins.
pub fn set(build: &'static str) {
    let _ = BUILD.set(build);
}

/// The build string (see [`set`]).
pub fn get() -> &'static str {
    BUILD.get().copied().unwrap_or(UNSET)
}

#[cfg(test)]
mod tests {
    #[test]
    fn build_names_the_package_version_and_a_revision() {
        let b = super::get();
        assert!(b.starts_with(env!("CARGO_PKG_VERSION")));
        assert!(b.contains(" (") && b.ends_with(')'));
    }
}
