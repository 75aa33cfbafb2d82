//! The end-to-end tests run the products the workspace built: the tool
//! (`hprof-rs`) and the agent (`libhprof_rs.so`) of the same profile
//! directory. Cargo names a binary of another package to no test, so this
//! script tells the tests where that directory is (`HPROF_RS_TOOL`) and
//! where the repository's fixtures and documents are (`HPROF_REPO`), and
//! for which platform they are built (`HPROF_TARGET`).
//! `scripts/test.sh` builds the workspace before it runs the tests.

use std::path::PathBuf;

fn main() {
    // OUT_DIR is <target>/<profile>/build/<package>-<hash>/out.
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let profile_dir = out
        .ancestors()
        .nth(3)
        .expect("OUT_DIR lies three levels below the profile directory");
    println!(
        "cargo:rustc-env=HPROF_RS_TOOL={}",
        profile_dir.join("hprof-rs").display()
    );
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let repo = manifest
        .parent()
        .and_then(|p| p.parent())
        .expect("crates/hprof-e2e lies two levels below the repository");
    println!("cargo:rustc-env=HPROF_REPO={}", repo.display());
    // The platform the tests run on (crate_walls.rs asks cargo metadata
    // about it alone, which needs no other platform's packages).
    println!(
        "cargo:rustc-env=HPROF_TARGET={}",
        std::env::var("TARGET").expect("cargo sets TARGET")
    );
    println!("cargo:rerun-if-changed=build.rs");
}
