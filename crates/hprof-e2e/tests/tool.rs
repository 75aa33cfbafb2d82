//! The `hprof-rs` tool's file subcommands: `histo` against `jmap -histo` on
//! the same HotSpot heap state, `flame` against hand-computed stacks of
//! hand-made text and binary files, errors naming the offset of a corrupt
//! record.

use crate::common;

use hprof_core::format::{self as fmt, BinaryFormat, BinaryOptions, ProfileFormat, Stamp};
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

fn tool(args: &[&str]) -> std::process::Output {
    Command::new(env!("HPROF_RS_TOOL"))
        .args(args)
        .output()
        .unwrap()
}

fn jdk_tool(name: &str) -> std::path::PathBuf {
    common::jdk_home().join("bin").join(name)
}

/// class name (Java style) -> instances, from `jmap -histo` or our histo.
fn parse_histo(text: &str, java_names: bool) -> HashMap<String, u64> {
    let mut m = HashMap::new();
    for l in text.lines() {
        let c: Vec<&str> = l.split_whitespace().collect();
        if c.len() >= 4 && c[0].ends_with(':') {
            let name = if java_names {
                c[3].to_string()
            } else {
                hprof_core::reader::java_class_name(c[3])
            };
            *m.entry(name).or_insert(0) += c[1].parse::<u64>().unwrap();
        }
    }
    m
}

#[test]
fn histo_of_a_jcmd_heap_dump_matches_jmap_histo() {
    let dir = common::scratch("tool_histo");
    let mut child = Command::new(common::java())
        .args(["-Xmx256m", "-XX:+UseSerialGC", "-cp"])
        .arg(common::fixture_classes())
        .arg("HoldObjects")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready");
    let pid = child.id().to_string();
    let dump = dir.join("heap.hprof");
    let st = Command::new(jdk_tool("jcmd"))
        .args([&pid, "GC.heap_dump"])
        .arg(&dump)
        .output()
        .unwrap();
    assert!(
        st.status.success() && dump.exists(),
        "{}",
        common::stdout(&st)
    );
    let jmap = Command::new(jdk_tool("jmap"))
        .args(["-histo:live", &pid])
        .output()
        .unwrap();
    assert!(jmap.status.success(), "{}", common::stderr(&jmap));
    drop(child.stdin.take());
    child.wait().unwrap();

    let ours = tool(&["histo", dump.to_str().unwrap()]);
    assert!(ours.status.success(), "{}", common::stderr(&ours));
    let text = common::stdout(&ours);
    assert!(
        text.starts_with(" num     #instances         #bytes  class name\n"),
        "{text}"
    );
    let ours = parse_histo(&text, true);
    let theirs = parse_histo(&common::stdout(&jmap), false);
    for (class, n) in [
        ("HoldObjects$HeldA", 3000),
        ("HoldObjects$HeldB", 700),
        ("HoldObjects$HeldA[]", 50),
    ] {
        assert_eq!(ours.get(class), Some(&n), "{class} in our histogram");
        assert_eq!(theirs.get(class), Some(&n), "{class} in jmap -histo");
    }
    // The heap is idle between the two commands; only the attach machinery
    // may allocate a little. Every class jmap reports is in ours, and the
    // counts agree for nearly all of them.
    let same = theirs
        .iter()
        .filter(|(k, v)| ours.get(*k) == Some(v))
        .count();
    let missing: Vec<&String> = theirs
        .keys()
        .filter(|k| !ours.contains_key(*k) && *k != "java.lang.Class")
        .collect();
    eprintln!("{same} of {} classes have identical counts", theirs.len());
    assert!(
        missing.len() <= 3,
        "classes missing from our histogram: {missing:?}"
    );
    assert!(
        same * 100 >= theirs.len() * 95,
        "only {same} of {} classes agree",
        theirs.len()
    );
    // Our total line adds up the rows.
    let total: u64 = ours.values().sum();
    assert!(text
        .lines()
        .last()
        .unwrap()
        .starts_with(&format!("Total {total:14} ")));
}

/// Hand-computed from crates/hprof-e2e/tests/fixtures/flame-small.txt: traces 300001 (8) and
/// 300003 (4) have the same methods, main -> mid -> leaf.
const EXPECTED_COLLAPSED: &str = "\
app.Main.main;app.Main.mid 2
app.Main.main;app.Main.mid;app.Main.leaf 12
app.Other.run 6
";

#[test]
fn flame_of_a_hand_made_text_report() {
    let path = format!(
        "{}/crates/hprof-e2e/tests/fixtures/flame-small.txt",
        env!("HPROF_REPO")
    );
    let out = tool(&["flame", &path, "--collapsed"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert_eq!(common::stdout(&out), EXPECTED_COLLAPSED);
}

#[test]
fn flame_of_a_hand_made_binary_report_and_its_svg() {
    let dir = common::scratch("tool_flame");
    let mut f = BinaryFormat::new(BinaryOptions::default());
    let mut b = Vec::new();
    let at = Stamp::default();
    f.header(&mut b, at);
    for (serial, sig) in [(100001, "Lapp/Main;"), (100002, "Lapp/Other;")] {
        f.load_class(
            &mut b,
            at,
            &fmt::LoadClass {
                class_serial: serial,
                class_obj_id: u64::from(serial),
                trace_serial: 300000,
                class_sig: sig,
            },
        );
    }
    let frame =
        |id: u64, class_serial: u32, class_sig: &'static str, m: &'static str, line: i32| {
            fmt::FrameInfo {
                frame_id: id,
                class_sig,
                class_serial,
                method_name: m,
                method_sig: "()V",
                source_file: Some("Main.java"),
                line,
            }
        };
    let (leaf3, leaf4) = (
        frame(1, 100001, "Lapp/Main;", "leaf", 3),
        frame(2, 100001, "Lapp/Main;", "leaf", 4),
    );
    let (mid9, mid11) = (
        frame(3, 100001, "Lapp/Main;", "mid", 9),
        frame(4, 100001, "Lapp/Main;", "mid", 11),
    );
    let (main20, main21) = (
        frame(5, 100001, "Lapp/Main;", "main", 20),
        frame(6, 100001, "Lapp/Main;", "main", 21),
    );
    let run = frame(7, 100002, "Lapp/Other;", "run", 5);
    let trace = |serial, frames: Vec<fmt::FrameInfo<'static>>| fmt::TraceInfo {
        serial,
        thread_serial: None,
        phase: Default::default(),
        frames,
    };
    f.traces(
        &mut b,
        at,
        &[
            trace(300001, vec![leaf3, mid9, main20]),
            trace(300002, vec![mid11, main20]),
            trace(300003, vec![leaf4, mid9, main21]),
            trace(300004, vec![run]),
        ],
    );
    let row = |trace_serial, hits| fmt::CpuRow {
        trace_serial,
        hits,
        cost: u64::from(hits),
        top_frame: None,
    };
    f.cpu(
        &mut b,
        at,
        &fmt::CpuReport {
            title: fmt::CpuTitle::Samples,
            cutoff: 0.0,
            total: 20,
            rows: vec![
                row(300001, 8),
                row(300004, 6),
                row(300003, 4),
                row(300002, 2),
            ],
        },
    );
    let path = dir.join("small.hprof");
    std::fs::write(&path, &b).unwrap();
    let p = path.to_str().unwrap();

    let out = tool(&["flame", p]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert_eq!(common::stdout(&out), EXPECTED_COLLAPSED);

    let svg = dir.join("small.svg");
    let out = tool(&["flame", p, "--svg", svg.to_str().unwrap()]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(s.starts_with("<?xml") && s.trim_end().ends_with("</svg>"));
    for title in [
        "all (20 samples, 100.00%)",
        "app.Main.main (14 samples, 70.00%)",
        "app.Main.mid (14 samples, 70.00%)",
        "app.Main.leaf (12 samples, 60.00%)",
        "app.Other.run (6 samples, 30.00%)",
    ] {
        assert!(
            s.contains(&format!("<title>{title}</title>")),
            "{title} in {s}"
        );
    }
    assert_eq!(
        s.matches("<title>").count(),
        5,
        "one box per distinct frame path"
    );

    // The same file as text: format=a layout of its TRACE and CPU records.
    let out = tool(&["print", p]);
    let text = common::stdout(&out);
    assert!(text.contains("TRACE 300001:\n\tapp.Main.leaf(Main.java:3)\n\tapp.Main.mid(Main.java:9)\n\tapp.Main.main(Main.java:20)\n"), "{text}");
    assert!(
        text.contains("   2 30.00% 70.00%       6 300004 app.Other.run\n"),
        "{text}"
    );

    // A corrupt copy: errors name the record and its offset.
    let mut bad = b.clone();
    let cpu_at = bad.len() - (9 + 8 + 4 * 8);
    bad[cpu_at + 5..cpu_at + 9].copy_from_slice(&1000u32.to_be_bytes());
    let bad_path = dir.join("bad.hprof");
    std::fs::write(&bad_path, &bad).unwrap();
    let out = tool(&["flame", bad_path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = common::stderr(&out);
    assert!(
        err.contains(&format!("CPU SAMPLES record at offset {cpu_at}")),
        "{err}"
    );
}

/// The tool and its agent copied (hard-linked where possible) into `dir`
/// as `bin/hprof-rs` and, when `with_lib`, `lib/libhprof_rs.so`: the
/// release layout, outside the build tree.
fn release_layout(dir: &std::path::Path, with_lib: bool) -> std::path::PathBuf {
    let place = |from: &std::path::Path, to: &std::path::Path| {
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        if std::fs::hard_link(from, to).is_err() {
            std::fs::copy(from, to).unwrap();
        }
    };
    let bin = dir.join("bin/hprof-rs");
    place(std::path::Path::new(env!("HPROF_RS_TOOL")), &bin);
    if with_lib {
        place(&common::agent_path(), &dir.join("lib/libhprof_rs.so"));
    }
    bin
}

#[test]
fn agent_path_names_the_library_beside_the_tool_or_in_its_lib_dir() {
    // The build tree: the library next to the tool.
    let out = tool(&["agent-path"]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let beside = std::path::Path::new(env!("HPROF_RS_TOOL"))
        .with_file_name("libhprof_rs.so")
        .canonicalize()
        .unwrap();
    assert_eq!(common::stdout(&out), format!("{}\n", beside.display()));
    assert_eq!(common::stderr(&out), "");

    // The release layout, bin/ and lib/: `java -agentpath:$(hprof-rs
    // agent-path)=...` profiles a program with it.
    let dir = common::scratch("tool_agent_path").canonicalize().unwrap();
    let bin = release_layout(&dir, true);
    let lib = dir.join("lib/libhprof_rs.so");
    let out = Command::new(&bin).arg("agent-path").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    assert_eq!(common::stdout(&out), format!("{}\n", lib.display()));
    let run = Command::new("sh")
        .arg("-c")
        .arg(r#""$JAVA" -agentpath:$("$TOOL" agent-path)=cpu=samples,file=cpu.txt -cp "$CP" CpuSplit 1"#)
        .env("JAVA", common::java())
        .env("TOOL", &bin)
        .env("CP", common::fixture_classes())
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", common::stderr(&run));
    let report = std::fs::read_to_string(dir.join("cpu.txt")).unwrap();
    assert!(report.contains("CPU SAMPLES BEGIN"), "{report}");
    assert!(report.contains(" CpuSplit.work60"), "{report}");

    // No library: exit 1, naming both places looked at.
    std::fs::remove_file(&lib).unwrap();
    let out = Command::new(&bin).arg("agent-path").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(common::stdout(&out), "");
    assert_eq!(
        common::stderr(&out),
        format!(
            "hprof-rs: no agent library with this hprof-rs: looked for {d}/bin/libhprof_rs.so \
             and {d}/lib/libhprof_rs.so; keep the tool and the library together \
             (bin/hprof-rs with lib/libhprof_rs.so, as in the release, or side by side, as \
             cargo builds them)\n",
            d = dir.display()
        )
    );
    // `attach` takes its default agent from the same place.
    let out = Command::new(&bin)
        .args(["attach", &std::process::id().to_string()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        common::stderr(&out),
        format!(
            "hprof-rs: no agent library with this hprof-rs: looked for {d}/bin/libhprof_rs.so \
             and {d}/lib/libhprof_rs.so; name it with --agent PATH\n",
            d = dir.display()
        )
    );
}

const SUBCOMMANDS: [&str; 14] = [
    "listen",
    "connect",
    "commands",
    "attach",
    "jvms",
    "print",
    "flame",
    "sites",
    "histo",
    "heap",
    "ui",
    "export",
    "agent-path",
    "completions",
];

#[test]
fn completions_for_bash_zsh_and_fish_name_every_subcommand() {
    let dir = common::scratch("tool_completions");
    for shell in ["bash", "zsh", "fish"] {
        let out = tool(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
        let script = common::stdout(&out);
        for sub in SUBCOMMANDS {
            assert!(script.contains(sub), "{shell}: no {sub}");
        }
        // The heap queries and attach's options are completed too.
        for word in ["dominators", "reply-timeout"] {
            assert!(script.contains(word), "{shell}: no {word}");
        }
        let file = dir.join(format!("hprof-rs.{shell}"));
        std::fs::write(&file, &script).unwrap();
        if shell == "bash" {
            // bash reads it without a syntax error, and then completes
            // the subcommands and their own words, with the function the
            // script registers for hprof-rs.
            let check = Command::new("bash").arg("-n").arg(&file).output().unwrap();
            assert!(check.status.success(), "{}", common::stderr(&check));
            let complete = |line: &str| {
                let out = Command::new("bash")
                    .arg("-c")
                    .arg(
                        r#"source "$1"; f=$(complete -p hprof-rs | sed 's/.* -F \([^ ]*\) .*/\1/');
                        read -ra COMP_WORDS <<< "$2"; COMP_CWORD=$((${#COMP_WORDS[@]} - 1));
                        COMP_LINE="$2"; COMP_POINT=${#COMP_LINE};
                        "$f" hprof-rs "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}";
                        printf '%s\n' "${COMPREPLY[@]}""#,
                    )
                    .arg("bash")
                    .arg(&file)
                    .arg(line)
                    .output()
                    .unwrap();
                assert!(out.status.success(), "{}", common::stderr(&out));
                common::stdout(&out)
            };
            assert_eq!(complete("hprof-rs ag"), "agent-path\n");
            assert_eq!(complete("hprof-rs heap h.hprof sus"), "suspects\n");
            assert_eq!(complete("hprof-rs attach 1 --reply"), "--reply-timeout\n");
        }
    }
    let out = tool(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(common::stdout(&out), "");
    assert!(
        common::stderr(&out).starts_with("error: invalid value 'tcsh' for '<SHELL>'\n"),
        "{}",
        common::stderr(&out)
    );
}

/// A dump is anyone's file: a class named with terminal control sequences
/// reaches no terminal as it is from any command that prints names
/// (`heap`, `print`, `histo`), on standard output or in a warning; it is
/// shown escaped (docs/hprof-rs-tool.md, "Names from files").
#[test]
fn names_with_control_characters_are_printed_escaped() {
    let dir = common::scratch("tool_hostile_names");
    // Object 0 (a Node1) refers to object 1; object 1 (a Node2) to itself
    // and to an ID with no object, so the heap analyser's warning names a
    // Node2.
    let g = common::synth::Graph {
        refs: vec![vec![1], vec![1, 9]],
        roots: vec![0],
    };
    let mut dump = common::synth::dump(&g);
    // "Node1" -> ESC "]0;" BEL (sets a terminal's title), "Node2" -> CSI
    // "2J2" (clears the screen): same lengths, so the records stay whole.
    let at = dump.windows(5).position(|w| w == b"Node1").unwrap();
    dump[at..at + 5].copy_from_slice(b"\x1b]0;\x07");
    let at = dump.windows(5).position(|w| w == b"Node2").unwrap();
    dump[at..at + 5].copy_from_slice("\u{9b}2J2".as_bytes());
    let file = dir.join("names.hprof");
    std::fs::write(&file, &dump).unwrap();
    let f = file.to_str().unwrap();
    for args in [
        &["heap", f, "classes", "--no-cache"][..],
        &["heap", f, "classes", "--no-cache", "--json"],
        &["print", f],
        &["histo", f],
    ] {
        let o = tool(args);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        for (what, bytes) in [("stdout", &o.stdout), ("stderr", &o.stderr)] {
            let text = String::from_utf8_lossy(bytes);
            assert!(
                !text
                    .chars()
                    .any(|c| c.is_control() && c != '\n' && c != '\t'),
                "{args:?} {what}: {text}"
            );
        }
        let out = String::from_utf8_lossy(&o.stdout);
        let (esc, csi) = if args.contains(&"--json") {
            // JSON's own escapes.
            ("\\u001b]0;\\u0007", "\\u009b2J2")
        } else {
            ("\\x1b]0;\\x07", "\\u{9b}2J2")
        };
        assert!(out.contains(esc) && out.contains(csi), "{args:?}: {out}");
    }
    // The analyser's warning names the holder of the missing object's
    // reference, escaped.
    let o = tool(&["heap", f, "classes", "--no-cache"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(", a \\u{9b}2J2)"), "{err}");
    // The same dump sent to `listen` as an agent's stream: its summary
    // lines name the classes, escaped.
    let rec = dir.join("rec.hprof");
    let listen = common::start_listen(&rec, &[]);
    {
        use std::io::Write;
        let mut c = std::net::TcpStream::connect(("127.0.0.1", listen.port)).unwrap();
        c.write_all(&dump).unwrap();
    }
    let out = listen.child.wait_with_output().unwrap();
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(
        !summary
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t'),
        "{summary}"
    );
    assert!(summary.contains("\\x1b]0;\\x07"), "{summary}");
    assert_eq!(std::fs::read(&rec).unwrap(), dump);
}

/// Usage errors exit 2 (clap's own and the tool's checks of values,
/// before anything is read or any JVM is touched); failures exit 1.
#[test]
fn usage_errors_exit_2_and_failures_exit_1() {
    let missing = "/nonexistent/heap.hprof";
    let usage: &[(&[&str], &str)] = &[
        (
            &["attach", "1", "--timeout", "0"],
            "error: invalid value '0' for '--timeout <SECS>': a positive number of seconds is needed, e.g. 10 or 0.5",
        ),
        (
            &["attach", "1", "--reply-timeout=-3"],
            "error: invalid value '-3' for '--reply-timeout <SECS>': a positive number of seconds is needed, e.g. 10 or 0.5",
        ),
        (
            &["connect", "127.0.0.1:1", "--out", "/nonexistent/out", "--timeout", "soon"],
            "error: invalid value 'soon' for '--timeout <SECS>': a positive number of seconds is needed, e.g. 10 or 0.5",
        ),
        (
            &["connect", "localhost", "--out", "/nonexistent/out"],
            "error: invalid value 'localhost' for '<ADDR>': HOST:PORT is needed, e.g. 127.0.0.1:9000",
        ),
        (
            &["listen", "--port", "0", "--out", "/nonexistent/out", "--send", "frobnicate"],
            "error: invalid value 'frobnicate' for '--send <CMD>': unknown command 'frobnicate'; `hprof-rs commands` lists the commands",
        ),
        (
            &["heap", missing, "object", "bogus"],
            "error: invalid value 'bogus' for '<ID>': not an object ID: write it as the dump and this tool show it, e.g. 0x7f3a01c0 (`hprof-rs heap FILE dominators` lists some)",
        ),
        (
            &["heap", missing, "suspects", "--threshold", "0"],
            "error: invalid value '0' for '--threshold <THRESHOLD>': a percentage above 0 and at most 100 is needed, e.g. 5",
        ),
        (
            &["histo", missing, "--dump", "0"],
            "error: invalid value '0' for '--dump <N>': 0 is not in 1..=4294967295",
        ),
        (
            &["sites", missing, "--order", "size"],
            "error: invalid value 'size' for '--order <alloc|live>': 'size': the order is alloc or live",
        ),
        (
            &["ui", "--bind", "8080"],
            "error: invalid value '8080' for '--bind <BIND>': HOST:PORT is needed, e.g. 127.0.0.1:9000",
        ),
        (
            &["attach", "1", "net=127.0.0.1:1", "--listen", "--out", "/nonexistent/out"],
            "error: --listen sets the agent's net= option itself; leave net= out of the options",
        ),
    ];
    for (args, first_line) in usage {
        let out = tool(args);
        let err = common::stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(common::stdout(&out), "", "{args:?}");
        assert_eq!(err.lines().next(), Some(*first_line), "{args:?}: {err}");
        assert!(
            err.ends_with("\nFor more information, try '--help'.\n"),
            "{args:?}: {err}"
        );
    }

    // Runtime failures: exit 1, one line.
    let closed_port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let addr = format!("127.0.0.1:{closed_port}");
    let failures: &[(&[&str], String)] = &[
        (
            &["histo", missing],
            format!("hprof-rs: cannot open {missing}: No such file or directory (os error 2)\n"),
        ),
        (
            &["connect", &addr, "--out", "/dev/null", "--timeout", "1"],
            format!("hprof-rs: cannot connect to {addr}: Connection refused (os error 111)\n"),
        ),
    ];
    for (args, expected) in failures {
        let out = tool(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(&common::stderr(&out), expected, "{args:?}");
    }
}

#[test]
fn help_shows_examples_and_the_exit_status() {
    let out = tool(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    let help = common::stdout(&out);
    for sub in SUBCOMMANDS {
        assert!(help.contains(&format!("\n  {sub} ")), "{sub} in {help}");
    }
    assert!(
        help.ends_with(
            "\nExamples:\n  hprof-rs jvms\n  hprof-rs profile -d 30s -o cpu.html 4242\n  \
             hprof-rs attach 4242\n  \
             java -agentpath:$(hprof-rs agent-path)=cpu=samples -jar app.jar\n  \
             hprof-rs flame java.hprof.txt --svg cpu.svg\n  hprof-rs heap heap.hprof suspects\n\n\
             A FILE argument may be `-` for standard input, and an output file `-` for\n\
             standard output (not for `print` and `heap`, which read their file twice).\n\
             Progress shows on standard error for long reads (a bar on a terminal, a line\n\
             every 5 % otherwise); `--quiet` turns it off.\n\n\
             Exit status: 0 done, 1 failed (a file, a JVM, the network), 2 usage error.\n"
        ),
        "{help}"
    );
    let out = tool(&["attach", "--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        common::stdout(&out).ends_with(
            "\nExamples:\n\
             \x20 hprof-rs jvms                                  the PIDs of the JVMs\n\
             \x20 hprof-rs attach 4242                           CPU samples and allocation sites\n\
             \x20 hprof-rs attach 4242 cpu=samples,file=cpu.txt\n\
             \x20 hprof-rs attach 4242 stop                      write the report; the JVM runs on\n\
             \x20 hprof-rs attach 4242 --listen --out run.hprof --send \"cpu 0.01\"\n"
        ),
        "{}",
        common::stdout(&out)
    );
    // Every command but `commands` and `jvms` has an example; -h shows it too.
    for sub in SUBCOMMANDS {
        if matches!(sub, "commands" | "jvms") {
            continue;
        }
        let out = tool(&[sub, "-h"]);
        assert_eq!(out.status.code(), Some(0), "{sub}");
        assert!(common::stdout(&out).contains("\nExample"), "{sub}");
    }
}
