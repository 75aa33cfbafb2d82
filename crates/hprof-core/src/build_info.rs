//! Which build of hprof-rs this is: the package version and the source
//! revision it was built from, recorded by `build.rs`. Printed by `help`,
//! in the text header and by `hprof-rs --version`, so a profile or a bug
//! report names the code that made it.

/// "<version> (git <commit>)", "<version> (git <commit>+changes)" or
/// "<version> (revision unknown)".
pub const BUILD: &str = env!("HPROF_RS_BUILD");

#[cfg(test)]
mod tests {
    #[test]
    fn build_names_the_package_version_and_a_revision() {
        assert!(super::BUILD.starts_with(env!("CARGO_PKG_VERSION")));
        assert!(super::BUILD.contains(" (") && super::BUILD.ends_with(')'));
    }
}
