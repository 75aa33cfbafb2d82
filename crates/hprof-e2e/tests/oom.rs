//! A program that ends with its heap full: the JVM exits without a VM
//! death event (the OutOfMemoryError is thrown again while the launcher
//! ends the main thread). Every profile used to leave a 0-byte file and no
//! message; now what was written is in the file (header first) and one line
//! says the final report could not be written (docs/options.md, "When the
//! JVM ends abnormally").

use crate::common;

use std::time::Duration;

const MESSAGE: &str = "the JVM is exiting without a VM death event";

#[test]
fn a_full_heap_at_exit_keeps_the_output_written_so_far() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("oom");
    for (opts, file) in [
        ("cpu=samples", "cpu.txt"),
        ("cpu=times", "times.txt"),
        ("heap=sites", "sites.txt"),
        ("monitor=y", "monitor.txt"),
        ("heap=dump,format=b", "dump.hprof"),
    ] {
        let agent = format!(
            "-agentpath:{}={opts},file={file}",
            common::agent_path().display()
        );
        let r = common::run_java_bounded(
            &dir,
            &["-Xmx32m", &agent],
            "FillHeap",
            &[],
            Duration::from_secs(120),
        );
        assert!(!r.timed_out, "{opts}: did not exit");
        let err = common::stderr(&r.output);
        assert!(err.contains("OutOfMemoryError"), "{opts}: {err}");
        assert_eq!(err.matches(MESSAGE).count(), 1, "{opts}: {err}");
        let bytes = std::fs::read(dir.join(file)).unwrap();
        assert!(
            bytes.starts_with(b"JAVA PROFILE 1.0."),
            "{opts}: {} bytes, no header",
            bytes.len()
        );
        if file.ends_with(".hprof") {
            let parsed = hprof_core::reader::read_all(dir.join(file)).expect("the prefix parses");
            assert!(!parsed.control_settings.is_empty(), "{opts}");
        } else {
            let text = String::from_utf8(bytes).unwrap();
            assert!(
                text.contains("THREAD START"),
                "{opts}: records after the header"
            );
        }
    }
}
