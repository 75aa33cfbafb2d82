//! The tool's command-line conventions on a file the agent wrote: `-` for
//! standard input and output, `--quiet`, and a clear refusal where a
//! command must read its file more than once.

use crate::common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// `hprof-rs ARGS` with `input` on its standard input: exit code,
/// standard output, standard error.
fn piped(args: &[&str], input: &[u8]) -> (Option<i32>, Vec<u8>, String) {
    let mut child = Command::new(env!("HPROF_RS_TOOL"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    // A writer thread: the tool may answer (or fail) before reading it all.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    (
        out.status.code(),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn gzip(b: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

fn profile(dir: &Path) -> Vec<u8> {
    let r = common::run_with_agent_bounded(
        dir,
        "cpu=samples,interval=1,depth=4,format=b,file=cpu.hprof",
        "CpuSplit",
        &["60", "100"],
        std::time::Duration::from_secs(120),
    );
    assert!(r.output.status.success(), "{}", common::stderr(&r.output));
    std::fs::read(dir.join("cpu.hprof")).unwrap()
}

#[test]
fn a_dash_reads_standard_input_and_writes_standard_output() {
    let dir = common::scratch("tool_stdio");
    let bytes = profile(&dir);
    let file = dir.join("cpu.hprof");
    let file = file.to_str().unwrap();
    // The same collapsed stacks from the file and from a gzip'd pipe.
    let (code, from_file, err) = piped(&["flame", file], b"");
    assert_eq!(code, Some(0), "{err}");
    let (code, from_pipe, err) = piped(&["flame", "-"], &gzip(&bytes));
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(from_pipe, from_file);
    assert!(String::from_utf8_lossy(&from_file).contains("CpuSplit.main;CpuSplit.work60 "));
    // Exports and the SVG to standard output, nothing else on it.
    let (code, pb, err) = piped(&["--quiet", "export", "-", "--pprof", "-"], &bytes);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(&pb[..2], &[0x1f, 0x8b], "a gzip'd profile");
    assert!(err.contains("wrote standard output"), "{err}");
    let (code, jfr, err) = piped(&["export", file, "--jfr", "-"], b"");
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(&jfr[..4], b"FLR\0");
    assert_eq!(
        u64::from_be_bytes(jfr[8..16].try_into().unwrap()),
        jfr.len() as u64,
        "the chunk's size is the whole output"
    );
    let (code, svg, err) = piped(&["flame", "-", "--svg", "-"], &bytes);
    assert_eq!(code, Some(0), "{err}");
    let svg = String::from_utf8(svg).unwrap();
    assert!(svg.starts_with("<?xml") && svg.trim_end().ends_with("</svg>"));
}

#[test]
fn commands_that_read_their_file_twice_refuse_standard_input_with_what_to_do() {
    for (cmd, args) in [
        ("print", vec!["print", "-"]),
        ("heap", vec!["heap", "-", "classes"]),
    ] {
        let (code, out, err) = piped(&args, b"JAVA PROFILE 1.0.2\0");
        assert_eq!(code, Some(1), "{cmd}: {err}");
        assert!(out.is_empty());
        assert!(
            err.contains("not standard input") && err.contains("save the stream to a file"),
            "{cmd}: {err}"
        );
    }
}
