//! Start-up behaviour: option errors, help, the three ways of loading the
//! agent, output-file problems, and profiles this build cannot produce.

use crate::common;

use std::process::Command;

fn java_with(agent_arg: &str) -> std::process::Output {
    let dir = common::scratch("startup");
    common::run_java(&dir, &[agent_arg], "Hello", &[])
}

fn agentpath(opts: &str) -> String {
    format!("-agentpath:{}={}", common::agent_path().display(), opts)
}

/// (option string, exact description in `hprof option error: <desc> (<opts>)`)
const BAD_OPTIONS: &[(&str, &str)] = &[
    ("cpu=fast", "cpu option value must be y|samples|times|old"),
    ("heap=some", "heap option value must be dump|sites|all"),
    ("format=x", "format option value must be a|b"),
    ("depth=-1", "depth option value must be decimal and >= 0"),
    ("depth=ten", "depth option value must be decimal and >= 0"),
    (
        "interval=0",
        "interval option value must be decimal and > 0",
    ),
    (
        "cutoff=-0.5",
        "cutoff option value must be floating point and >= 0",
    ),
    ("lineno=yes", "lineno option value must be y|n"),
    ("thread=Y", "thread option value must be y|n"),
    ("doe,cpu=samples", "Unknown option: doe,cpu"),
    ("cpu=samples,,heap=sites", "Unknown option: ,heap"),
    ("HEAP=dump", "Unknown option: HEAP"),
    (
        "averyveryverylongname=1",
        "general syntax error parsing options",
    ),
    (
        "file=a,file=b",
        "file or net options should only appear once",
    ),
    ("net=localhost", "net option missing ':'"),
    (
        "format=b,cpu=times",
        "cpu=times|old is not supported with format=b",
    ),
    (
        "format=b,monitor=y",
        "monitor=y is not supported with format=b",
    ),
    ("interval=", "syntax error parsing interval=DECIMAL"),
    (
        "exitpause=y",
        "The exitpause option was removed, use -XX:OnError='cmd %%p'",
    ),
];

#[test]
fn every_bad_option_gives_its_error_and_the_jvm_does_not_start() {
    for (opts, desc) in BAD_OPTIONS {
        let out = java_with(&agentpath(opts));
        let err = common::stderr(&out);
        let expected = format!("HPROF ERROR: hprof option error: {desc} ({opts})");
        assert!(
            err.contains(&expected),
            "for {opts}: expected {expected:?} in {err:?}"
        );
        assert_eq!(out.status.code(), Some(1), "exit status for {opts}: {err}");
        assert!(
            !common::stdout(&out).contains("hello"),
            "the program must not run for {opts}"
        );
    }
}

#[test]
fn errorexit_makes_option_errors_fatal() {
    let out = java_with(&agentpath("errorexit=y,depth=x"));
    let err = common::stderr(&out);
    assert!(err
        .contains("HPROF ERROR: hprof option error: depth option value must be decimal and >= 0"));
    assert!(err.contains("HPROF TERMINATED PROCESS"), "{err}");
    assert_eq!(out.status.code(), Some(9));
}

#[test]
fn help_prints_usage_and_exits_zero() {
    let out = java_with(&agentpath("help"));
    assert_eq!(out.status.code(), Some(0));
    let text = common::stdout(&out);
    // The title names the build of the library, which may be a rebuild of
    // a later revision than this test binary: compare the rest exactly.
    let body = |t: &str| t.splitn(3, '\n').nth(2).unwrap_or("").to_string();
    assert!(
        text.starts_with("\n     HPROF: Heap and CPU Profiling Agent, hprof-rs "),
        "{text}"
    );
    assert_eq!(body(&text), body(&hprof_core::options::help_text()));
    assert!(text.contains("heap=dump|sites|all    heap profiling                 all\n"));
    assert!(!text.contains("hello"));
}

#[test]
fn loads_through_agentpath_agentlib_and_xrun() {
    let dir = common::scratch("load_three_ways");
    let lib_dir = common::agent_path().parent().unwrap().to_path_buf();
    for (n, arg) in [
        (
            1,
            format!(
                "-agentpath:{}=cpu=samples,file=o1.txt",
                common::agent_path().display()
            ),
        ),
        (2, "-agentlib:hprof_rs=cpu=samples,file=o2.txt".to_string()),
        (3, "-Xrunhprof_rs:cpu=samples,file=o3.txt".to_string()),
    ] {
        let out = Command::new(common::java())
            .current_dir(&dir)
            .env("LD_LIBRARY_PATH", &lib_dir)
            .arg(&arg)
            .arg("-cp")
            .arg(common::fixture_classes())
            .arg("Hello")
            .output()
            .unwrap();
        assert!(out.status.success(), "{arg}: {}", common::stderr(&out));
        assert_eq!(common::stdout(&out).trim(), "hello");
        let text = std::fs::read_to_string(dir.join(format!("o{n}.txt"))).expect("output written");
        let rep = common::ascii::parse(&text);
        assert_eq!(rep.cpu.len(), 1, "{arg}");
    }
}

#[test]
fn environment_variable_options_are_appended() {
    let dir = common::scratch("env_opts");
    let out = Command::new(common::java())
        .current_dir(&dir)
        .env("_JAVA_HPROF_OPTIONS", "depth=zz")
        .arg(agentpath("cpu=samples"))
        .arg("-cp")
        .arg(common::fixture_classes())
        .arg("Hello")
        .output()
        .unwrap();
    let err = common::stderr(&out);
    assert!(
        err.contains("depth option value must be decimal and >= 0 (cpu=samples,depth=zz)"),
        "{err}"
    );
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn unwritable_output_file_is_a_clear_error() {
    let out = java_with(&agentpath("cpu=samples,file=/nonexistent-dir/x/out.txt"));
    let err = common::stderr(&out);
    assert!(
        err.contains("HPROF ERROR: can't create profile file: /nonexistent-dir/x/out.txt"),
        "{err}"
    );
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn default_file_names_and_force_n() {
    let dir = common::scratch("default_names");
    let run = |opts: &str| {
        let out = common::run_with_agent(&dir, opts, "Hello", &[]);
        assert!(out.status.success(), "{}", common::stderr(&out));
    };
    run("cpu=samples");
    assert!(dir.join("java.hprof.txt").exists());
    run("cpu=samples,format=b");
    assert!(dir.join("java.hprof").exists());
    // force=n with an existing file: a PID-suffixed name, the old file kept.
    let before = std::fs::read(dir.join("java.hprof.txt")).unwrap();
    run("cpu=samples,force=n");
    assert_eq!(std::fs::read(dir.join("java.hprof.txt")).unwrap(), before);
    let uniq: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|n| n.starts_with("java.hprof.") && n.ends_with(".txt") && n != "java.hprof.txt")
        .collect();
    assert_eq!(uniq.len(), 1, "one java.hprof.<pid>.txt: {uniq:?}");
}

#[test]
fn no_options_means_heap_all_dump_and_sites() {
    // With no profiling option the original's default is heap=all: a heap
    // dump and the allocation sites, in that order, at exit.
    for opts in ["", "heap=dump,heap=sites"] {
        let dir = common::scratch("heap_all");
        let arg = if opts.is_empty() {
            format!("-agentpath:{}=file=o.txt", common::agent_path().display())
        } else {
            agentpath(&format!("{opts},file=o.txt"))
        };
        let out = common::run_java(&dir, &[&arg], "Hello", &[]);
        assert!(out.status.success(), "{opts}: {}", common::stderr(&out));
        assert!(common::stdout(&out).contains("hello"));
        let text = std::fs::read_to_string(dir.join("o.txt")).unwrap();
        let dump = text.find("\nHEAP DUMP BEGIN (").expect("heap dump");
        let sites = text
            .find("\nSITES BEGIN (ordered by live bytes)")
            .expect("sites");
        assert!(dump < sites, "heap dump before sites");
        assert!(text.contains("\nHEAP DUMP END\n") && text.contains("\nSITES END\n"));
        assert!(text.matches("\nOBJ ").count() > 100, "objects in the dump");
        assert!(
            text.contains(" java.lang.String\n"),
            "String allocation sites listed"
        );
    }
}

#[test]
fn attach_is_refused_cleanly() {
    // Agent_OnAttach answers "not supported" instead of half-starting.
    let dir = common::scratch("attach");
    let marker = dir.join("stop");
    let mut child = Command::new(common::java())
        .current_dir(&dir)
        .args([
            "-XX:+IgnoreUnrecognizedVMOptions",
            "-XX:+EnableDynamicAgentLoading",
            "-cp",
        ])
        .arg(common::fixture_classes())
        .arg("WaitForSignal")
        .arg(&marker)
        .arg("30")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    let jcmd = common::jdk_home().join("bin/jcmd");
    let out = Command::new(&jcmd)
        .arg(child.id().to_string())
        .arg("JVMTI.agent_load")
        .arg(common::agent_path())
        .output()
        .unwrap();
    std::fs::write(&marker, b"").unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "the target JVM survives a refused attach");
    let text = format!("{}{}", common::stdout(&out), common::stderr(&out));
    assert!(!text.is_empty());
}

#[test]
fn loading_twice_is_fatal() {
    let a = agentpath("cpu=samples,file=a.txt");
    let b = agentpath("cpu=samples,file=b.txt");
    let dir = common::scratch("twice");
    let out = common::run_java(&dir, &[&a, &b], "Hello", &[]);
    let err = common::stderr(&out);
    assert!(err.contains("HPROF ERROR: Cannot load this JVM TI agent twice, check your java command line for duplicate hprof options."), "{err}");
    assert!(err.contains("HPROF TERMINATED PROCESS"));
    assert_eq!(out.status.code(), Some(9));
}

#[test]
fn logflags_log_and_dump_tables() {
    let dir = common::scratch("logflags");
    let out = common::run_with_agent(&dir, "cpu=samples,logflags=3,file=o.txt", "Hello", &[]);
    assert!(out.status.success());
    let err = common::stderr(&out);
    assert!(err.contains("HPROF LOG: VM init done"), "{err}");
    assert!(err.contains("HPROF TABLES (VM init):") && err.contains("HPROF TABLES (VM death):"));
    // The class table at VM init holds the core classes with serials from 100000.
    assert!(err.contains("class 100000 "), "{err}");
    let classes: usize = err
        .split("  classes: ")
        .nth(1)
        .and_then(|r| r.lines().next())
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        classes > 100,
        "hundreds of classes are loaded by VM init: {classes}"
    );
}
