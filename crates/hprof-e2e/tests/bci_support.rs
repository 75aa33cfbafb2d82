//! Helpers shared by the bci tests (`bci_verify`, `bci_jdk_roundtrip`).
#![allow(dead_code)]

use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The crate's java-fixtures/bci directory.
pub fn fixtures() -> PathBuf {
    Path::new(env!("HPROF_REPO"))
        .join("java-fixtures")
        .join("bci")
}

/// A fresh scratch directory under Cargo's per-target temp dir, unique per
/// call: tests run in parallel and must not delete each other's files.
pub fn scratch(name: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Compiles Java sources into `out` with javac (extra args first).
pub fn javac(args: &[&str], sources: &[PathBuf], out: &Path) {
    let st = Command::new("javac")
        .args(args)
        .arg("-d")
        .arg(out)
        .args(sources)
        .status()
        .expect("javac on PATH");
    assert!(st.success(), "javac failed for {sources:?}");
}

/// Runs DumpJrt and calls `f(name, bytes)` for every class of the JDK image.
pub fn for_each_jdk_class(mut f: impl FnMut(&str, &[u8])) {
    let out = scratch("bci_dumpjrt");
    javac(&[], &[fixtures().join("DumpJrt.java")], &out);
    let mut child = Command::new("java")
        .arg("-cp")
        .arg(&out)
        .arg("DumpJrt")
        .stdout(Stdio::piped())
        .spawn()
        .expect("java on PATH");
    let mut r = BufReader::with_capacity(1 << 20, child.stdout.take().unwrap());
    let mut name = Vec::new();
    let mut bytes = Vec::new();
    loop {
        let n = read_u16(&mut r) as usize;
        if n == 0 {
            break;
        }
        name.resize(n, 0);
        r.read_exact(&mut name).unwrap();
        let len = read_u32(&mut r) as usize;
        bytes.resize(len, 0);
        r.read_exact(&mut bytes).unwrap();
        f(std::str::from_utf8(&name).unwrap(), &bytes);
    }
    assert!(child.wait().unwrap().success());
}

fn read_u16(r: &mut impl Read) -> u16 {
    let mut b = [0; 2];
    r.read_exact(&mut b).unwrap();
    u16::from_be_bytes(b)
}

fn read_u32(r: &mut impl Read) -> u32 {
    let mut b = [0; 4];
    r.read_exact(&mut b).unwrap();
    u32::from_be_bytes(b)
}

/// Every `.class` file under `dir` (relative paths, sorted).
pub fn class_files(dir: &Path) -> Vec<PathBuf> {
    fn walk(base: &Path, d: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(base, &p, out);
            } else if p.extension().is_some_and(|x| x == "class") {
                out.push(p.strip_prefix(base).unwrap().to_path_buf());
            }
        }
    }
    let mut v = Vec::new();
    walk(dir, dir, &mut v);
    v.sort();
    v
}

/// Appends one record of the DumpJrt/VerifyDriver stream format.
pub fn put_record(out: &mut Vec<u8>, name: &str, bytes: &[u8]) {
    out.extend_from_slice(&(name.len() as u16).to_be_bytes());
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    out.extend_from_slice(bytes);
}

/// Runs `java` with `args`; returns (success, stdout, stderr).
pub fn java(args: &[&str]) -> (bool, String, String) {
    let o = Command::new("java")
        .args(args)
        .output()
        .expect("java on PATH");
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}
