//! Every `hprof-rs` file command on files the agent really wrote: each
//! profile, text and binary, from real JVM runs of the fixtures. Results
//! are checked where the fixture makes them knowable; combinations a
//! command does not handle give one clear message and exit code 1, never a
//! panic. Damaged files get an error naming the offset, in bounded time
//! and memory (histo used to panic or allocate gigabytes by a length field).

use crate::common;

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

fn tool(args: &[&str]) -> common::BoundedRun {
    let mut cmd = Command::new(env!("HPROF_RS_TOOL"));
    cmd.args(args);
    // At most 1 GiB of address space: allocating by a damaged length field
    // (2-4 GiB) then fails and aborts the tool, which the exit code shows.
    // SAFETY: only async-signal-safe setrlimit runs between fork and exec.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 1 << 30,
                rlim_max: 1 << 30,
            };
            libc::setrlimit(libc::RLIMIT_AS, &limit);
            Ok(())
        });
    }
    let r = common::run_command_bounded(cmd, Duration::from_secs(60));
    assert!(!r.timed_out, "hprof-rs {args:?} hung");
    let code = r.output.status.code();
    assert!(
        code == Some(0) || code == Some(1),
        "hprof-rs {args:?}: exit {code:?} (a panic is 101)\n{}",
        common::stderr(&r.output)
    );
    r
}

fn ok(args: &[&str]) -> String {
    let r = tool(args);
    assert!(
        r.output.status.success(),
        "hprof-rs {args:?}: {}",
        common::stderr(&r.output)
    );
    common::stdout(&r.output)
}

fn fails(args: &[&str], message: &str) {
    let r = tool(args);
    let err = common::stderr(&r.output);
    assert_eq!(
        r.output.status.code(),
        Some(1),
        "hprof-rs {args:?} should fail"
    );
    assert!(
        err.contains(message),
        "hprof-rs {args:?}: expected `{message}` in\n{err}"
    );
}

/// Files written by the agent, by name.
struct Outputs {
    dir: PathBuf,
}

impl Outputs {
    fn path(&self, name: &str) -> String {
        self.dir.join(name).to_str().unwrap().to_string()
    }
}

/// Runs each profile once (text and binary) and keeps the files.
fn outputs() -> &'static Outputs {
    static OUT: OnceLock<Outputs> = OnceLock::new();
    OUT.get_or_init(|| {
        let dir = common::scratch("tool_real");
        let runs: [(&str, &str, &str, &[&str]); 9] = [
            (
                "cpu.txt",
                "cpu=samples,interval=1,depth=8",
                "CpuSplit",
                &["1"],
            ),
            (
                "cpu.hprof",
                "cpu=samples,interval=1,depth=8,format=b",
                "CpuSplit",
                &["1"],
            ),
            (
                "cut.txt",
                "cpu=samples,interval=1,depth=3",
                "DeepStack",
                &["40", "800"],
            ),
            ("times.txt", "cpu=times", "CpuSplit", &["1"]),
            ("sites.txt", "heap=sites", "AllocSites", &[]),
            ("sites.hprof", "heap=sites,format=b", "AllocSites", &[]),
            ("dump.txt", "heap=dump", "HoldObjects", &[]),
            ("dump.hprof", "heap=dump,format=b", "HoldObjects", &[]),
            (
                "monitor.txt",
                "monitor=y",
                "Contention",
                &["measure", "2", "2", "50"],
            ),
        ];
        for (file, opts, main, args) in runs {
            let r = common::run_with_agent_bounded(
                &dir,
                &format!("{opts},file={file}"),
                main,
                args,
                Duration::from_secs(120),
            );
            assert!(
                !r.timed_out && r.output.status.success(),
                "{opts}: {}",
                common::stderr(&r.output)
            );
        }
        Outputs { dir }
    })
}

const TEXT_FILES: [&str; 6] = [
    "cpu.txt",
    "cut.txt",
    "times.txt",
    "sites.txt",
    "dump.txt",
    "monitor.txt",
];
const BINARY_FILES: [&str; 3] = ["cpu.hprof", "sites.hprof", "dump.hprof"];

/// Collapsed stacks (`root;...;top count`) by stack.
fn collapsed(text: &str) -> HashMap<String, u64> {
    text.lines()
        .map(|l| {
            let (stack, n) = l.rsplit_once(' ').expect("stack count");
            (stack.to_string(), n.parse().expect("count"))
        })
        .collect()
}

#[test]
fn flame_reads_the_cpu_reports_the_agent_writes() {
    let o = outputs();
    for file in ["cpu.txt", "cpu.hprof"] {
        let stacks = collapsed(&ok(&["flame", &o.path(file)]));
        let top = stacks.iter().max_by_key(|(_, &n)| n).unwrap();
        assert_eq!(top.0, "CpuSplit.main;CpuSplit.work60", "{file}: {stacks:?}");
        let all = collapsed(&ok(&["flame", &o.path(file), "--all"]));
        assert_eq!(all, stacks, "{file}: one exit section, --all is the same");
        let svg = o.dir.join(format!("{file}.svg"));
        let r = tool(&["flame", &o.path(file), "--svg", svg.to_str().unwrap()]);
        assert!(r.output.status.success());
        let svg = std::fs::read_to_string(svg).unwrap();
        assert!(svg.contains("CPU samples of") && svg.contains("CpuSplit.work60 ("));
        assert!(
            !common::stderr(&r.output).contains("cut at"),
            "{file}: whole stacks called cut"
        );
    }
}

/// CPU TIME is weighted by time: CpuSplit spends 6:3:1 in work60, work30
/// and work10 with as many calls to each.
#[test]
fn flame_of_cpu_times_weighs_time() {
    let o = outputs();
    let stacks = collapsed(&ok(&["flame", &o.path("times.txt")]));
    let of = |m: &str| {
        stacks
            .iter()
            .filter(|(s, _)| s.ends_with(m))
            .map(|(_, &n)| n)
            .sum::<u64>() as f64
    };
    let ratio = of("CpuSplit.work60") / of("CpuSplit.work10");
    assert!(
        (3.0..12.0).contains(&ratio),
        "work60/work10 = {ratio}: {stacks:?}"
    );
    let svg = o.dir.join("times.svg");
    ok(&[
        "flame",
        &o.path("times.txt"),
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert!(std::fs::read_to_string(svg)
        .unwrap()
        .contains("CPU time (us, cpu=times) of"));
}

#[test]
fn flame_says_when_stacks_are_cut_by_depth() {
    let o = outputs();
    let r = tool(&["flame", &o.path("cut.txt")]);
    assert!(r.output.status.success());
    let err = common::stderr(&r.output);
    assert!(
        err.contains("stacks are cut at 3 frames") && err.contains("depth="),
        "{err}"
    );
}

#[test]
fn flame_on_reports_without_cpu_sections_says_so() {
    let o = outputs();
    for file in [
        "sites.txt",
        "dump.txt",
        "monitor.txt",
        "sites.hprof",
        "dump.hprof",
    ] {
        fails(
            &["flame", &o.path(file)],
            "no CPU SAMPLES or CPU TIME section",
        );
    }
}

#[test]
fn binary_commands_on_text_reports_say_it_is_a_text_report() {
    let o = outputs();
    for file in TEXT_FILES {
        let path = o.path(file);
        fails(&["print", &path], "this is a text report (format=a)");
        fails(&["histo", &path], "this is a text report (format=a)");
        let out = o.dir.join("x.pb.gz");
        fails(
            &["export", &path, "--pprof", out.to_str().unwrap()],
            "this is a text report (format=a)",
        );
    }
}

#[test]
fn print_and_histo_read_every_binary_file() {
    let o = outputs();
    for file in BINARY_FILES {
        let text = ok(&["print", &o.path(file)]);
        assert!(text.starts_with("JAVA PROFILE 1.0."), "{file}");
    }
    // HoldObjects keeps 3000 HeldA, 700 HeldB and 50 HeldA[] (scale 1).
    let histo = ok(&["histo", &o.path("dump.hprof")]);
    let count = |name: &str| {
        histo
            .lines()
            .find(|l| l.split_whitespace().nth(3) == Some(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.parse::<u64>().ok())
    };
    assert_eq!(count("HoldObjects$HeldA"), Some(3000), "{histo}");
    assert_eq!(count("HoldObjects$HeldB"), Some(700));
    assert_eq!(count("HoldObjects$HeldA[]"), Some(50));
    fails(&["histo", &o.path("cpu.hprof")], "no heap dump in the file");
    let pb = o.dir.join("cpu.pb.gz");
    ok(&[
        "export",
        &o.path("cpu.hprof"),
        "--pprof",
        pb.to_str().unwrap(),
    ]);
    assert!(std::fs::read(pb).unwrap().starts_with(&[0x1f, 0x8b]));
}

/// `listen` records a text stream as faithfully as a binary one (it used
/// to compare 13 bytes with a 27-byte label and count 0 records).
#[test]
fn listen_records_a_text_stream() {
    let dir = common::scratch("tool_real_listen");
    let rec = dir.join("rec.txt");
    let listen = common::start_listen(&rec, &[]);
    let r = common::run_with_agent_bounded(
        &dir,
        &format!("cpu=samples,interval=1,net=127.0.0.1:{}", listen.port),
        "CpuSplit",
        &["1"],
        Duration::from_secs(120),
    );
    assert!(r.output.status.success(), "{}", common::stderr(&r.output));
    let out = listen.child.wait_with_output().unwrap();
    let summary = common::stdout(&out);
    let text = std::fs::read_to_string(&rec).unwrap();
    assert!(text.starts_with("JAVA PROFILE 1.0.1, created") && text.contains("CPU SAMPLES END"));
    assert!(summary.contains("text: CPU SAMPLES BEGIN"), "{summary}");
    let last = summary.lines().last().unwrap();
    let records: u64 = last
        .split(" bytes, ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(records > 5, "{last}");
    let stacks = collapsed(&ok(&["flame", rec.to_str().unwrap()]));
    assert!(
        stacks.contains_key("CpuSplit.main;CpuSplit.work60"),
        "{stacks:?}"
    );
}

/// Damaged copies of a real heap dump: histo, print and flame answer with
/// an error (or a result), exit 0 or 1, within the time limit and in 1 GiB
/// of address space (see `tool`).
#[test]
fn damaged_files_get_errors_not_panics_or_huge_allocations() {
    let o = outputs();
    let original = std::fs::read(o.path("dump.hprof")).unwrap();
    let dir = common::scratch("tool_real_damaged");
    // The first UTF8 record: after the header (label, NUL, u4, u8), walk
    // the records (tag u1, time u4, length u4) to the first tag 0x01.
    let mut header = original.iter().position(|&b| b == 0).unwrap() + 1 + 12;
    while original[header] != 0x01 {
        let len = u32::from_be_bytes(original[header + 5..header + 9].try_into().unwrap());
        header += 9 + len as usize;
    }
    let mut cases: Vec<(String, Vec<u8>)> = Vec::new();
    for len in [0u32, 1, 3, 1 << 31, u32::MAX] {
        let mut d = original.clone();
        d[header + 5..header + 9].copy_from_slice(&len.to_be_bytes());
        cases.push((format!("utf8-len-{len}"), d));
    }
    for cut in [header + 3, original.len() / 2, original.len() - 1] {
        cases.push((format!("cut-{cut}"), original[..cut].to_vec()));
    }
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    for i in 0..40 {
        let mut d = original.clone();
        for _ in 0..4 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let at = header + (x as usize % (d.len() - header));
            d[at] ^= 1 << (x % 8);
        }
        cases.push((format!("flip-{i}"), d));
    }
    for (name, bytes) in cases {
        let p = dir.join(format!("{name}.hprof"));
        std::fs::write(&p, &bytes).unwrap();
        let p = p.to_str().unwrap();
        for cmd in ["histo", "print", "flame"] {
            tool(&[cmd, p]);
        }
    }
    // A length past the end names the record and its offset.
    let p = dir.join("utf8-len-2147483648.hprof");
    fails(
        &["histo", p.to_str().unwrap()],
        &format!("UTF8 record at offset {header}"),
    );
    let p = dir.join("utf8-len-1.hprof");
    fails(
        &["histo", p.to_str().unwrap()],
        &format!("UTF8 record at offset {header}: length 1 is too short for its fields"),
    );
}
