//! Fuzzing of every parser that reads outside input, on the stable
//! toolchain with proptest (docs/testing.md, "Fuzzing"): the option parser,
//! the binary HPROF reader (print, histo, flame, ui), the text report reader
//! (flame), the socket command reader, the class-file rewriter, HotSpot's
//! perfdata files (`hprof-rs jvms`) and the JVM's answers to attach
//! requests (`hprof-rs attach`).
//!
//! Inputs are real files mutated structurally: byte flips and overwrites,
//! truncation, insertion, length fields set to 0, 1, 2^31 or 2^32-1, and
//! splices of one part over another. Seeds come from real runs: the agent's
//! own binary and text output of a fixture, the fixtures' class files, and
//! encoded socket commands. Each target runs for `HPROF_FUZZ_SECS` seconds
//! (3 by default, so the test command stays quick; longer runs are
//! documented in docs/testing.md). A parser may refuse an input; it may not
//! panic, hang, or take long. Crash reproducers found so far are kept in
//! `crates/hprof-e2e/tests/fuzz-regressions/<target>/` and replayed first on every run.

use crate::common;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Longest a single input may take to parse.
const PER_INPUT: Duration = Duration::from_secs(2);

fn budget() -> Duration {
    let secs = std::env::var("HPROF_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(3.0);
    Duration::from_secs_f64(secs)
}

/// One mutation of a seed.
#[derive(Clone, Debug)]
enum Mutation {
    Flip {
        at: u32,
        bit: u8,
    },
    Set {
        at: u32,
        value: u8,
    },
    Truncate {
        at: u32,
    },
    Insert {
        at: u32,
        bytes: Vec<u8>,
    },
    /// A big-endian u32 (the width of HPROF lengths and counts).
    Length {
        at: u32,
        value: u32,
    },
    Splice {
        from: u32,
        to: u32,
        len: u16,
    },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<u32>(), 0u8..8).prop_map(|(at, bit)| Mutation::Flip { at, bit }),
        (any::<u32>(), any::<u8>()).prop_map(|(at, value)| Mutation::Set { at, value }),
        any::<u32>().prop_map(|at| Mutation::Truncate { at }),
        (any::<u32>(), prop::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(at, bytes)| Mutation::Insert { at, bytes }),
        (
            any::<u32>(),
            prop_oneof![
                Just(0u32),
                Just(1),
                Just(1 << 31),
                Just(u32::MAX),
                any::<u32>()
            ]
        )
            .prop_map(|(at, value)| Mutation::Length { at, value }),
        (any::<u32>(), any::<u32>(), any::<u16>()).prop_map(|(from, to, len)| Mutation::Splice {
            from,
            to,
            len
        }),
    ]
}

fn apply(seed: &[u8], muts: &[Mutation]) -> Vec<u8> {
    let mut d = seed.to_vec();
    for m in muts {
        if d.is_empty() {
            break;
        }
        let pos = |at: u32, d: &Vec<u8>| at as usize % d.len();
        match m {
            Mutation::Flip { at, bit } => {
                let p = pos(*at, &d);
                d[p] ^= 1 << bit;
            }
            Mutation::Set { at, value } => {
                let p = pos(*at, &d);
                d[p] = *value;
            }
            Mutation::Truncate { at } => {
                let p = pos(*at, &d);
                d.truncate(p);
            }
            Mutation::Insert { at, bytes } => {
                let p = pos(*at, &d);
                d.splice(p..p, bytes.iter().copied());
            }
            Mutation::Length { at, value } => {
                let p = pos(*at, &d);
                if p + 4 <= d.len() {
                    d[p..p + 4].copy_from_slice(&value.to_be_bytes());
                }
            }
            Mutation::Splice { from, to, len } => {
                let (f, t) = (pos(*from, &d), pos(*to, &d));
                let n = (*len as usize).min(d.len() - f).min(d.len() - t);
                let part = d[f..f + n].to_vec();
                d[t..t + n].copy_from_slice(&part);
            }
        }
    }
    d
}

/// Run `parse` on mutations of `seeds` for the time budget, after replaying
/// the kept reproducers of `target`. Fails on a panic or a slow input.
fn fuzz(target: &str, seeds: &[Vec<u8>], parse: impl Fn(&[u8])) {
    assert!(!seeds.is_empty(), "{target}: no seeds");
    let dir = PathBuf::from(env!("HPROF_REPO"))
        .join("crates/hprof-e2e/tests/fuzz-regressions")
        .join(target);
    let mut replayed = 0;
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for e in entries.flatten() {
            let bytes = std::fs::read(e.path()).unwrap();
            let t0 = Instant::now();
            parse(&bytes);
            assert!(
                t0.elapsed() < PER_INPUT,
                "{target}: reproducer {:?} is slow",
                e.path()
            );
            replayed += 1;
        }
    }
    let start = Instant::now();
    let mut cases = 0u64;
    let mut round = 0u64;
    while start.elapsed() < budget() {
        let config = Config {
            cases: 64,
            failure_persistence: None,
            max_shrink_iters: 512,
            ..Config::default()
        };
        let mut seed_bytes = [0u8; 32];
        seed_bytes[..8].copy_from_slice(&round.to_le_bytes());
        seed_bytes[8..8 + target.len().min(24)]
            .copy_from_slice(&target.as_bytes()[..target.len().min(24)]);
        let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes);
        let mut runner = TestRunner::new_with_rng(config, rng);
        let strategy = (0..seeds.len(), prop::collection::vec(mutation(), 1..6));
        let result = runner.run(&strategy, |(i, muts)| {
            let input = apply(&seeds[i], &muts);
            let t0 = Instant::now();
            parse(&input);
            if t0.elapsed() > PER_INPUT {
                return Err(TestCaseError::fail(format!(
                    "{} bytes took {:?}",
                    input.len(),
                    t0.elapsed()
                )));
            }
            Ok(())
        });
        if let Err(e) = result {
            panic!("{target}: fuzz round {round} failed: {e}");
        }
        cases += 64;
        round += 1;
    }
    eprintln!(
        "fuzz {target}: {cases} inputs in {:.1} s from {} seeds, {replayed} reproducers replayed",
        start.elapsed().as_secs_f64(),
        seeds.len()
    );
}

/// Real outputs of the agent, made once: (binary, text).
fn agent_outputs() -> &'static (Vec<u8>, Vec<u8>) {
    static OUT: OnceLock<(Vec<u8>, Vec<u8>)> = OnceLock::new();
    OUT.get_or_init(|| {
        let dir = common::scratch("fuzz_seeds");
        for (opts, file) in [
            (
                "cpu=samples,heap=all,format=b,depth=6,file=seed.hprof",
                "seed.hprof",
            ),
            ("cpu=samples,heap=sites,depth=6,file=seed.txt", "seed.txt"),
        ] {
            let r = common::run_with_agent_bounded(
                &dir,
                opts,
                "CpuSplit",
                &["1"],
                Duration::from_secs(120),
            );
            assert!(
                r.output.status.success(),
                "{file}: {}",
                common::stderr(&r.output)
            );
        }
        (
            std::fs::read(dir.join("seed.hprof")).unwrap(),
            std::fs::read(dir.join("seed.txt")).unwrap(),
        )
    })
}

#[test]
fn fuzz_binary_reader() {
    let (binary, _) = agent_outputs();
    // Small seeds mutate faster: the file's first 64 KiB (header, strings,
    // classes, traces) and the whole file.
    let seeds = vec![
        binary[..binary.len().min(64 << 10)].to_vec(),
        binary.clone(),
    ];
    fuzz("binary_reader", &seeds, |bytes| {
        let mut r = match hprof_core::reader::HprofReader::new(std::io::Cursor::new(bytes)) {
            Ok(r) => r,
            Err(_) => return,
        };
        while let Ok(Some(_)) = r.next_record() {}
        let _ = hprof_core::reader::HprofReader::new(std::io::Cursor::new(bytes)).map(|r| {
            hprof_core::reader::histogram_with(
                r,
                &hprof_core::reader::ShallowSizeModel::COMPRESSED_OOPS,
            )
        });
        let _ = hprof_cli::flame::collapse_binary(std::io::Cursor::new(bytes), true);
    });
}

/// `hprof-rs histo`'s fast path reads files straight from disk.
#[test]
fn fuzz_histo() {
    let (binary, _) = agent_outputs();
    let dir = common::scratch("fuzz_histo");
    let path = dir.join("input.hprof");
    let seeds = vec![binary[..binary.len().min(64 << 10)].to_vec()];
    fuzz("histo", &seeds, |bytes| {
        std::fs::write(&path, bytes).unwrap();
        let _ = hprof_cli::histo::run(path.to_str().unwrap(), false, None);
        let _ = hprof_cli::histo::run(path.to_str().unwrap(), false, Some(1));
    });
}

#[test]
fn fuzz_text_reader() {
    let (_, text) = agent_outputs();
    fuzz("text_reader", std::slice::from_ref(text), |bytes| {
        let text = String::from_utf8_lossy(bytes);
        let _ = hprof_cli::flame::collapse_text(text.as_bytes(), true);
        let _ = hprof_cli::flame::collapse_text(text.as_bytes(), false);
    });
}

#[test]
fn fuzz_option_parser() {
    let seeds: Vec<Vec<u8>> = [
        "cpu=samples,interval=20,depth=3",
        "heap=sites,heapsample=524288,cutoff=0.01,sitesorder=alloc",
        "heap=dump,format=b,file=x.hprof,force=n,idsize=8",
        "cpu=times,doe=n,net=localhost:9000,logflags=0x3,clock=wall",
        "cpu=samples,cpusampler=safepoint,interval=1,cpusampler=runnable",
        "monitor=y,thread=y,lineno=n,verbose=n,cutoff=0x1p-10",
        "help",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    fuzz("option_parser", &seeds, |bytes| {
        let s = String::from_utf8_lossy(bytes);
        let _ = hprof_core::options::parse(&s);
        let _ = hprof_core::options::parse(&hprof_core::options::combine_with_env(&s, Some(&s)));
    });
}

#[test]
fn fuzz_socket_command_reader() {
    use hprof_core::protocol::{Command, Control, ThreadRef};
    let commands = [
        Command::ForceGc,
        Command::DumpHeap,
        Command::AllocSites {
            flags: 0x3,
            cutoff: 0.5,
        },
        Command::HeapSummary,
        Command::DumpTraces,
        Command::CpuSamples {
            ignored: 0,
            cutoff: 0.01,
        },
        Command::Control(Control::Sampling {
            on: true,
            thread: ThreadRef::from_id(0),
        }),
        Command::Control(Control::SetMaxDepth(8)),
        Command::Control(Control::ClearCpuSamples),
        Command::Exit,
    ];
    let stream: Vec<u8> = commands
        .iter()
        .enumerate()
        .flat_map(|(i, c)| c.encode(i as u32 + 1))
        .collect();
    fuzz("socket_commands", &[stream], |bytes| {
        let mut r = hprof_core::protocol::CommandReader::new(std::io::Cursor::new(bytes));
        for _ in 0..10_000 {
            if r.next_command().is_err() {
                break;
            }
        }
    });
}

#[test]
fn fuzz_class_file_rewriter() {
    let seeds: Vec<Vec<u8>> = std::fs::read_dir(common::fixture_classes())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "class"))
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    fuzz("class_rewriter", &seeds, |bytes| {
        let mut cfg = hprof_bci::InjectConfig::new("com/sun/demo/jvmti/hprof/Tracker", 7);
        cfg.call_sites = true;
        let _ = hprof_bci::inject(bytes, &cfg);
        cfg.object_tracking = true;
        let _ = hprof_bci::inject(bytes, &cfg);
    });
}

/// The perfdata file of a real JVM (HoldObjects, idle), read while it runs.
fn real_perfdata() -> Vec<u8> {
    use hprof_cli::attach::{perfdata, procfs};
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let mut child = Command::new(common::java())
        .arg("-cp")
        .arg(common::fixture_classes())
        .arg("HoldObjects")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start java");
    let mut line = String::new();
    let _ = BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut line);
    let pid = child.id();
    let file = perfdata::hsperfdata_dirs(&procfs::target_tmp(pid))
        .into_iter()
        .map(|d| d.join(pid.to_string()))
        .find(|p| p.exists());
    let bytes = file.map(|f| perfdata::read_file(&f).unwrap());
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(line, "ready\n");
    bytes.expect("the JVM's perfdata file")
}

#[test]
fn fuzz_perfdata() {
    let real = real_perfdata();
    let parsed = hprof_cli::attach::perfdata::parse(&real).unwrap();
    assert_eq!(parsed.java_command(), Some("HoldObjects"));
    // The prologue and the first entries, and the whole file.
    let seeds = vec![real[..real.len().min(4096)].to_vec(), real.clone()];
    fuzz("perfdata", &seeds, |bytes| {
        if let Ok(d) = hprof_cli::attach::perfdata::parse(bytes) {
            let _ = (d.java_command(), d.java_version(), d.attachable());
        }
    });
}

#[test]
fn fuzz_attach_reply() {
    use hprof_cli::attach::hotspot;
    let seeds: Vec<Vec<u8>> = [
        &b"0\nreturn code: 0\n"[..],
        b"0\nreturn code: -1\n",
        b"-1\n/x.so was not loaded.\n/x.so: cannot open shared object file: No such file or directory\n",
        b"0\nAgent_OnAttach is not available in /lib/libzip.so\n",
        b"-1\nOperation getversion not recognized!",
        b"0\n2 streaming",
        b"101\n",
    ]
    .iter()
    .map(|s| s.to_vec())
    .collect();
    fuzz("attach_reply", &seeds, |bytes| {
        if let Ok(r) = hotspot::parse_reply(bytes) {
            let _ = hotspot::interpret_load(&r);
        }
    });
}

/// The heap analyser's index builder (`hprof-rs heap`), then a few queries
/// on what it built: on a dump written by hand (classes first, addresses)
/// and on the agent's `heap=all` output (the JVMTI walk: classes last,
/// traces). Index files go to an unnamed temporary file (`--no-cache`).
#[test]
fn fuzz_heap_index() {
    use hprof_analysis::heap::{self, CacheMode, ClassOrder, Heap, Quiet};
    let (binary, _) = agent_outputs();
    let graph = common::synth::Graph {
        refs: vec![vec![1, 2], vec![2], vec![0, 3], vec![], vec![4]],
        roots: vec![0, 4],
    };
    let seeds = vec![common::synth::dump(&graph), binary.clone()];
    let dir = common::scratch("fuzz_heap_index");
    let path = dir.join("input.hprof");
    fuzz("heap_index", &seeds, |bytes| {
        std::fs::write(&path, bytes).unwrap();
        let Ok((ix, _)) = heap::open(&path, 1, CacheMode::NoCache, &Quiet) else {
            return;
        };
        let Ok(h) = Heap::new(ix, &path) else { return };
        let classes = h.classes(ClassOrder::Retained);
        if let Ok(top) = h.dominated(None, 0, 3) {
            for o in &top.objects {
                let _ = h.object(o.id, 5);
                let _ = h.path(o.id, true);
                let _ = h.path(o.id, false);
            }
        }
        if let Some(c) = classes.first() {
            let _ = h.instances(&c.class, 0, 3);
            let _ = h.object(c.id, 5);
        }
        let _ = h.suspects(10.0);
        let _ = h.sites();
    });
}
