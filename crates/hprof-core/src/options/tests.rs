//! Tests of the option parser through its public API.

use super::*;

fn ok(text: &str) -> Options {
    match parse(text) {
        Ok(opts) => opts,
        Err(e) => panic!("{text:?} should parse, got: {e}"),
    }
}

fn err(text: &str) -> String {
    match parse(text) {
        Ok(opts) => panic!("{text:?} should fail, got: {opts:?}"),
        Err(e) => {
            assert_eq!(e.options, text, "error must echo the whole option string");
            e.description
        }
    }
}

/// Reads one field of the options.
type Getter<T> = fn(&Options) -> T;

/// Every `y|n` option with a getter for its field.
const FLAGS: &[(&str, Getter<bool>)] = &[
    ("monitor", |o| o.monitor),
    ("lineno", |o| o.lineno),
    ("thread", |o| o.thread),
    ("doe", |o| o.doe),
    ("msa", |o| o.msa),
    ("force", |o| o.force),
    ("verbose", |o| o.verbose),
    ("gc_okay", |o| o.gc_okay),
    ("primfields", |o| o.primfields),
    ("primarrays", |o| o.primarrays),
    ("coredump", |o| o.coredump),
    ("errorexit", |o| o.errorexit),
    ("pause", |o| o.pause),
    ("debug", |o| o.debug),
    ("gcbeforedump", |o| o.gc_before_dump),
    ("arraylen", |o| o.true_array_len),
    ("rootzero", |o| o.pseudo_root),
];

/// Every mask option with a getter for its field.
const MASKS: &[(&str, Getter<u32>)] = &[
    ("logflags", |o| o.logflags),
    ("debugflags", |o| o.debugflags),
    ("X", |o| o.x_mask),
];

// ---------------------------------------------------------------- defaults

#[test]
fn defaults_of_an_empty_string() {
    let o = ok("");
    assert!(
        o.heap_dump && o.heap_sites,
        "heap=all is the default profile"
    );
    assert!(!o.cpu_samples && !o.cpu_times && !o.cpu_old && !o.monitor);
    assert_eq!(o.format, Format::Ascii);
    assert_eq!(o.file, None);
    assert_eq!(o.net, None);
    assert_eq!(o.depth, 4);
    assert_eq!(o.interval_ms, 10);
    assert_eq!(o.cutoff, 0.0001);
    assert!(o.lineno);
    assert!(!o.thread);
    assert!(o.doe);
    assert!(!o.msa);
    assert!(o.force);
    assert!(o.verbose);
    assert!(o.gc_okay);
    assert!(o.primfields);
    assert!(o.primarrays);
    assert!(!o.coredump && !o.errorexit && !o.pause && !o.debug);
    assert_eq!((o.logflags, o.debugflags, o.x_mask), (0, 0, 0));
    assert_eq!(o.heap_sample_bytes, 0);
    assert!(o.gc_before_dump);
    assert_eq!(o.id_size, 4);
    assert!(!o.true_array_len);
    assert!(o.pseudo_root);
    assert_eq!(o.cpu_sampler, CpuSampler::Async);
    assert_eq!(o.timing_clock, TimingClock::Cpu);
    assert_eq!(o.raw, "");
}

#[test]
fn default_trait_matches_empty_string() {
    assert_eq!(Options::default(), ok(""));
}

#[test]
fn default_constants() {
    assert_eq!(DEFAULT_DEPTH, 4);
    assert_eq!(DEFAULT_INTERVAL_MS, 10);
    assert_eq!(DEFAULT_CUTOFF, 0.0001);
    assert_eq!(ENV_VAR, "_JAVA_HPROF_OPTIONS");
}

#[test]
fn raw_keeps_the_combined_string() {
    assert_eq!(ok("cpu=samples,depth=2,").raw, "cpu=samples,depth=2,");
}

// ---------------------------------------------------------------- booleans

#[test]
fn every_flag_accepts_y_and_n() {
    for &(name, get) in FLAGS {
        assert!(get(&ok(&format!("{name}=y"))), "{name}=y");
        assert!(!get(&ok(&format!("{name}=n"))), "{name}=n");
    }
}

#[test]
fn every_flag_rejects_other_values() {
    for &(name, _) in FLAGS {
        let expected = format!("{name} option value must be y|n");
        for bad in ["Y", "N", "yes", "no", "1", "0", "true", " y", "y ", "yy"] {
            assert_eq!(err(&format!("{name}={bad}")), expected, "{name}={bad}");
        }
        assert_eq!(err(&format!("{name}=")), expected, "{name}= (empty)");
        assert_eq!(
            err(&format!("{name}=,doe=y")),
            expected,
            "{name}= then more"
        );
        assert_eq!(
            err(&format!("depth=3,{name}")),
            expected,
            "{name} without ="
        );
        let long = "y".repeat(5000);
        assert_eq!(err(&format!("{name}={long}")), expected, "{name} over-long");
    }
}

#[test]
fn last_flag_wins() {
    assert!(!ok("doe=y,doe=n").doe);
    assert!(ok("doe=n,doe=y").doe);
    assert!(ok("thread=n,thread=y,lineno=n").thread);
}

// ---------------------------------------------------------------- heap / cpu

#[test]
fn heap_values() {
    let o = ok("heap=dump");
    assert!(o.heap_dump && !o.heap_sites);
    let o = ok("heap=sites");
    assert!(!o.heap_dump && o.heap_sites);
    let o = ok("heap=all");
    assert!(o.heap_dump && o.heap_sites);
}

#[test]
fn heap_accumulates() {
    let o = ok("heap=dump,heap=sites");
    assert!(o.heap_dump && o.heap_sites);
    let o = ok("heap=all,heap=dump");
    assert!(o.heap_dump && o.heap_sites, "a later heap= never clears");
    let o = ok("heap=sites,cpu=samples,heap=sites");
    assert!(!o.heap_dump && o.heap_sites && o.cpu_samples);
}

#[test]
fn heap_errors() {
    assert_eq!(err("heap="), "syntax error parsing heap=dump|sites|all");
    assert_eq!(err("heap"), "syntax error parsing heap=dump|sites|all");
    assert_eq!(err("heap=DUMP"), "heap option value must be dump|sites|all");
    assert_eq!(err("heap=y"), "heap option value must be dump|sites|all");
    assert_eq!(
        err("heap=dump|sites"),
        "heap option value must be dump|sites|all"
    );
}

#[test]
fn cpu_values() {
    for text in ["cpu=samples", "cpu=y"] {
        let o = ok(text);
        assert!(o.cpu_samples && !o.cpu_times && !o.cpu_old, "{text}");
    }
    let o = ok("cpu=times");
    assert!(!o.cpu_samples && o.cpu_times && !o.cpu_old);
    let o = ok("cpu=old");
    assert!(!o.cpu_samples && !o.cpu_times && o.cpu_old);
}

#[test]
fn cpu_accumulation() {
    let o = ok("cpu=samples,cpu=times");
    assert!(
        o.cpu_samples && o.cpu_times,
        "sampling and timing are independent"
    );
    let o = ok("cpu=times,cpu=old");
    assert!(!o.cpu_times && o.cpu_old, "old selects the old format");
    let o = ok("cpu=old,cpu=times");
    assert!(o.cpu_times && !o.cpu_old, "times clears the old format");
    let o = ok("cpu=old,cpu=samples");
    assert!(o.cpu_samples && o.cpu_old);
}

#[test]
fn cpu_errors() {
    assert_eq!(err("cpu="), "syntax error parsing cpu=y|samples|times|old");
    assert_eq!(err("cpu"), "syntax error parsing cpu=y|samples|times|old");
    assert_eq!(err("cpu=n"), "cpu option value must be y|samples|times|old");
    assert_eq!(
        err("cpu=sample"),
        "cpu option value must be y|samples|times|old"
    );
    assert_eq!(
        err("cpu=Samples"),
        "cpu option value must be y|samples|times|old"
    );
}

#[test]
fn default_profile_only_without_any_profile() {
    for text in ["cpu=samples", "cpu=times", "cpu=old", "monitor=y"] {
        let o = ok(text);
        assert!(
            !o.heap_dump && !o.heap_sites,
            "{text} alone must not add heap profiling"
        );
    }
    for text in [
        "doe=n",
        "depth=8",
        "monitor=n",
        "file=x",
        "format=b",
        "heapsample=100",
    ] {
        let o = ok(text);
        assert!(o.heap_dump && o.heap_sites, "{text} alone gets heap=all");
    }
    let o = ok("heap=dump");
    assert!(!o.heap_sites, "an explicit heap= is not widened");
}

// ---------------------------------------------------------------- format

#[test]
fn format_values() {
    assert_eq!(ok("format=a").format, Format::Ascii);
    assert_eq!(ok("format=b").format, Format::Binary);
    assert_eq!(ok("format=b,format=a").format, Format::Ascii);
}

#[test]
fn format_errors() {
    assert_eq!(err("format="), "syntax error parsing format=a|b");
    assert_eq!(err("format"), "syntax error parsing format=a|b");
    assert_eq!(err("format=B"), "format option value must be a|b");
    assert_eq!(err("format=binary"), "format option value must be a|b");
}

#[test]
fn format_b_conflicts() {
    for text in [
        "format=b,cpu=times",
        "cpu=times,format=b",
        "cpu=old,format=b",
        "format=b,cpu=samples,cpu=old",
    ] {
        assert_eq!(
            err(text),
            "cpu=times|old is not supported with format=b",
            "{text}"
        );
    }
    for text in ["format=b,monitor=y", "monitor=y,format=b"] {
        assert_eq!(
            err(text),
            "monitor=y is not supported with format=b",
            "{text}"
        );
    }
    assert_eq!(
        err("monitor=y,cpu=times,format=b"),
        "cpu=times|old is not supported with format=b",
        "timing is reported before monitor"
    );
    ok("format=b,cpu=samples,heap=all");
    ok("format=b,monitor=n");
    ok("format=b,cpu=times,format=a");
    ok("monitor=y,format=b,monitor=n");
}

#[test]
fn parse_errors_come_before_conflicts() {
    assert_eq!(
        err("format=b,cpu=times,depth=x"),
        "depth option value must be decimal and >= 0"
    );
}

// ---------------------------------------------------------------- file / net

#[test]
fn file_names_are_verbatim() {
    assert_eq!(ok("file=out.txt").file.as_deref(), Some("out.txt"));
    assert_eq!(ok("file=a=b:c").file.as_deref(), Some("a=b:c"));
    assert_eq!(
        ok("file= spaced name ").file.as_deref(),
        Some(" spaced name ")
    );
    assert_eq!(
        ok("file=/tmp/x/y.hprof,format=b").file.as_deref(),
        Some("/tmp/x/y.hprof")
    );
    let longest = "f".repeat(4096);
    assert_eq!(
        ok(&format!("file={longest}")).file.as_deref(),
        Some(longest.as_str())
    );
}

#[test]
fn file_errors() {
    assert_eq!(err("file="), "syntax error parsing file=filename");
    assert_eq!(err("file"), "syntax error parsing file=filename");
    assert_eq!(err("file=,doe=n"), "syntax error parsing file=filename");
    assert_eq!(
        err(&format!("file={}", "f".repeat(4097))),
        "syntax error parsing file=filename"
    );
}

#[test]
fn file_or_net_only_once() {
    let once = "file or net options should only appear once";
    assert_eq!(err("file=a,file=b"), once);
    assert_eq!(err("file=a,file=a"), once);
    assert_eq!(err("file=a,net=h:1"), once);
    assert_eq!(err("net=h:1,file=a"), once);
    assert_eq!(err("net=h:1,net=h:2"), once);
    assert_eq!(
        err("file=a,file="),
        once,
        "checked before the value is read"
    );
}

#[test]
fn net_values() {
    let o = ok("net=localhost:8000");
    assert_eq!(
        o.net,
        Some(NetAddr {
            host: "localhost".into(),
            port: 8000
        })
    );
    assert_eq!(o.file, None);
    let o = ok("net=10.0.0.1:1,cpu=samples");
    assert_eq!(
        o.net,
        Some(NetAddr {
            host: "10.0.0.1".into(),
            port: 1
        })
    );
    assert!(o.cpu_samples);
    assert_eq!(ok("net=h:65535").net.unwrap().port, 65535);
    assert_eq!(ok("net=h:+80").net.unwrap().port, 80);
    assert_eq!(ok("net=h=x:80").net.unwrap().host, "h=x");
    // Only the first ':' separates: the rest must be the port.
    assert_eq!(err("net=::1:80"), "net option missing ':'");
}

#[test]
fn net_missing_parts() {
    assert_eq!(err("net=localhost"), "net option missing ':'");
    assert_eq!(err("net=localhost,cpu=samples"), "net option missing ':'");
    assert_eq!(err("net=localhost,file=a:b"), "net option missing ':'");
    assert_eq!(err("net="), "net option missing ':'");
    assert_eq!(err("net"), "net option missing ':'");
    assert_eq!(err("net=:80"), "net option missing ':'");
    assert_eq!(err("net=localhost:"), "net option missing port");
    assert_eq!(err("net=localhost:,cpu=samples"), "net option missing port");
}

#[test]
fn net_invalid_ports() {
    for port in [
        "0",
        "70000",
        "65536",
        "131072",
        "-1",
        "abc",
        "80x",
        " 80 ",
        "0x50",
        "99999999999999999999999",
    ] {
        assert_eq!(
            err(&format!("net=localhost:{port}")),
            "invalid port number",
            "port {port:?}"
        );
    }
}

// ---------------------------------------------------------------- numbers

#[test]
fn depth_values() {
    assert_eq!(ok("depth=0").depth, 0);
    assert_eq!(ok("depth=8").depth, 8);
    assert_eq!(ok("depth=008").depth, 8);
    assert_eq!(ok("depth= 5").depth, 5, "strtol skips leading blanks");
    assert_eq!(ok("depth=+5").depth, 5);
    assert_eq!(ok("depth=-0").depth, 0);
    assert_eq!(ok("depth=2147483647").depth, 2147483647);
    assert_eq!(ok("depth=1,depth=9").depth, 9);
}

#[test]
fn depth_errors() {
    let bad = "depth option value must be decimal and >= 0";
    assert_eq!(err("depth="), "syntax error parsing depth=DECIMAL");
    assert_eq!(err("depth"), "syntax error parsing depth=DECIMAL");
    assert_eq!(
        err(&format!("depth={}", "1".repeat(4097))),
        "syntax error parsing depth=DECIMAL"
    );
    for v in [
        "-1",
        "abc",
        "4x",
        "5 ",
        "0x10",
        "1.5",
        "1e2",
        " ",
        "2147483648",
        "99999999999999999999",
    ] {
        assert_eq!(err(&format!("depth={v}")), bad, "depth={v:?}");
    }
}

#[test]
fn interval_values() {
    assert_eq!(ok("interval=1").interval_ms, 1);
    assert_eq!(ok("interval=20").interval_ms, 20);
    assert_eq!(ok("cpu=samples,interval=20,depth=3").interval_ms, 20);
}

#[test]
fn interval_errors() {
    let bad = "interval option value must be decimal and > 0";
    assert_eq!(err("interval="), "syntax error parsing interval=DECIMAL");
    for v in ["0", "-5", "ten", "10ms", "0x0a", "-0"] {
        assert_eq!(err(&format!("interval={v}")), bad, "interval={v}");
    }
}

#[test]
fn cutoff_values() {
    assert_eq!(ok("cutoff=0").cutoff, 0.0);
    assert_eq!(ok("cutoff=0.5").cutoff, 0.5);
    assert_eq!(ok("cutoff=.25").cutoff, 0.25);
    assert_eq!(ok("cutoff=1e-3").cutoff, 0.001);
    assert_eq!(ok("cutoff=5E+1").cutoff, 50.0);
    assert_eq!(ok("cutoff= 0.1").cutoff, 0.1);
    assert_eq!(ok("cutoff=0x1p-2").cutoff, 0.25);
    assert_eq!(ok("cutoff=inf").cutoff, f64::INFINITY);
    assert_eq!(ok("cutoff=Infinity").cutoff, f64::INFINITY);
    assert!(
        ok("cutoff=nan").cutoff.is_nan(),
        "nan passes the >= 0 check"
    );
    assert!(ok("cutoff=-nan").cutoff.is_nan());
    let z = ok("cutoff=-0").cutoff;
    assert!(z == 0.0 && z.is_sign_negative());
}

#[test]
fn cutoff_errors() {
    let bad = "cutoff option value must be floating point and >= 0";
    assert_eq!(err("cutoff="), "syntax error parsing cutoff=DOUBLE");
    for v in ["-0.1", "-inf", "abc", "0.5x", "1e", "0.1 ", ".", "1,0"] {
        let text = format!("cutoff={v}");
        assert_eq!(
            err(&text),
            if v == "1,0" { "Unknown option: 0" } else { bad },
            "{text}"
        );
    }
}

#[test]
fn masks_accept_anything_numeric_or_not() {
    for &(name, get) in MASKS {
        assert_eq!(get(&ok(&format!("{name}=4"))), 4, "{name}");
        assert_eq!(get(&ok(&format!("{name}=0x1C"))), 0x1c, "{name} hex");
        assert_eq!(get(&ok(&format!("{name}=017"))), 15, "{name} octal");
        assert_eq!(get(&ok(&format!("{name}=junk"))), 0, "{name} no number");
        assert_eq!(
            get(&ok(&format!("{name}=3junk"))),
            3,
            "{name} trailing text"
        );
        assert_eq!(get(&ok(&format!("{name}=-1"))), u32::MAX, "{name} negative");
        assert_eq!(
            get(&ok(&format!("{name}=1,{name}=2"))),
            2,
            "{name} last wins"
        );
    }
    assert_eq!(ok("").logflags, 0);
}

#[test]
fn masks_reject_only_empty_or_long_values() {
    for &(name, _) in MASKS {
        let expected = format!("{name} option value must be numeric");
        assert_eq!(err(&format!("{name}=")), expected);
        assert_eq!(err(name), expected);
        assert_eq!(err(&format!("{name}={}", "1".repeat(4097))), expected);
    }
}

#[test]
fn mask_option_names_are_case_sensitive() {
    assert_eq!(err("x=1"), "Unknown option: x");
    assert_eq!(err("LOGFLAGS=1"), "Unknown option: LOGFLAGS");
}

// ---------------------------------------------------------------- removed / unknown

#[test]
fn removed_options() {
    let exitpause = "The exitpause option was removed, use -XX:OnError='cmd %%p'";
    let precrash = "The precrash option was removed, use -XX:OnError='precrash -p %%p'";
    assert_eq!(err("exitpause=y"), exitpause);
    assert_eq!(err("exitpause"), exitpause);
    assert_eq!(err("exitpause="), exitpause);
    assert_eq!(err("cpu=samples,exitpause=n,doe=y"), exitpause);
    assert_eq!(err("precrash=y"), precrash);
    assert_eq!(err("precrash"), precrash);
    assert_eq!(
        err("exitpause,cpu=samples"),
        "Unknown option: exitpause,cpu"
    );
    assert_eq!(err("precrash,doe=n"), "Unknown option: precrash,doe");
}

#[test]
fn unknown_options() {
    assert_eq!(err("HEAP=dump"), "Unknown option: HEAP");
    assert_eq!(err("help"), "Unknown option: help");
    assert_eq!(err("help,cpu=samples"), "Unknown option: help,cpu");
    assert_eq!(err("foo=1"), "Unknown option: foo");
    assert_eq!(err(" doe=y"), "Unknown option:  doe");
    assert_eq!(err("gc=y"), "Unknown option: gc");
    assert_eq!(err("cpu=samples,heap sites"), "Unknown option: heap sites");
}

#[test]
fn general_syntax_errors() {
    let general = "general syntax error parsing options";
    assert_eq!(err("="), general);
    assert_eq!(err("=y"), general);
    assert_eq!(err("cpu=samples,=y"), general);
    assert_eq!(err("abcdefghijklmnop=1"), general);
    assert_eq!(err("cpu=samples,verylongnamewithoutequals"), general);
}

#[test]
fn name_limit_is_fifteen_bytes() {
    assert_eq!(err("abcdefghijklmno=1"), "Unknown option: abcdefghijklmno");
    assert_eq!(
        err("abcdefghijklmnop=1"),
        "general syntax error parsing options"
    );
}

#[test]
fn first_error_wins() {
    assert_eq!(
        err("depth=x,foo=1"),
        "depth option value must be decimal and >= 0"
    );
    assert_eq!(err("foo=1,depth=x"), "Unknown option: foo");
}

// ---------------------------------------------------------------- tokenizer consequences

#[test]
fn trailing_comma_is_harmless() {
    assert!(ok("cpu=samples,").cpu_samples);
    assert_eq!(ok("file=x,").file.as_deref(), Some("x"));
}

#[test]
fn empty_element_is_not_skipped() {
    assert_eq!(err("cpu=samples,,heap=sites"), "Unknown option: ,heap");
    assert_eq!(err(",heap=sites"), "Unknown option: ,heap");
    assert_eq!(err(","), "Unknown option: ,");
}

#[test]
fn name_without_equals_swallows_following_options() {
    assert_eq!(err("doe,cpu=samples"), "Unknown option: doe,cpu");
    assert_eq!(err("cpu=samples,doe"), "doe option value must be y|n");
}

#[test]
fn values_may_contain_equals_and_colon_but_not_comma() {
    assert_eq!(ok("file=a=b").file.as_deref(), Some("a=b"));
    assert_eq!(ok("file=c:\\x").file.as_deref(), Some("c:\\x"));
    assert_eq!(err("file=a,b"), "Unknown option: b");
}

#[test]
fn no_whitespace_trimming() {
    assert_eq!(err("doe=y, thread=y"), "Unknown option:  thread");
    assert_eq!(err("doe =y"), "Unknown option: doe ");
}

// ---------------------------------------------------------------- extensions

#[test]
fn extension_names_fit_the_name_buffer() {
    for name in [
        "heapsample",
        "gcbeforedump",
        "idsize",
        "dumper",
        "arraylen",
        "rootzero",
        "cpusampler",
        "clock",
    ] {
        assert!(name.len() <= 15, "{name}");
    }
}

#[test]
fn cpusampler() {
    assert_eq!(ok("cpu=samples").cpu_sampler, CpuSampler::Async);
    assert_eq!(ok("cpusampler=async").cpu_sampler, CpuSampler::Async);
    assert_eq!(
        ok("cpusampler=safepoint").cpu_sampler,
        CpuSampler::Safepoint
    );
    assert_eq!(
        ok("cpusampler=safepoint,cpusampler=runnable").cpu_sampler,
        CpuSampler::Runnable
    );
    // Choosing a sampler is no profile request.
    let o = ok("cpusampler=runnable");
    assert!(!o.cpu_samples && o.heap_dump && o.heap_sites);
    assert_eq!(
        err("cpusampler="),
        "syntax error parsing cpusampler=async|safepoint|runnable|wall"
    );
    assert_eq!(
        ok("cpu=samples,cpusampler=wall").cpu_sampler,
        CpuSampler::Wall
    );
    assert_eq!(
        err("cpu=samples,cpu=times,cpusampler=wall"),
        "cpusampler=wall cannot be combined with cpu=times|old on clock=cpu (use clock=wall, or a separate run)"
    );
    assert!(ok("cpu=samples,cpu=times,cpusampler=wall,clock=wall").cpu_samples);
    for v in ["Async", "y", "sync", " async", "async "] {
        assert_eq!(
            err(&format!("cpusampler={v}")),
            "cpusampler option value must be async|safepoint|runnable|wall",
            "{v}"
        );
    }
}

#[test]
fn clock() {
    assert_eq!(ok("cpu=times").timing_clock, TimingClock::Cpu);
    assert_eq!(ok("cpu=times,clock=wall").timing_clock, TimingClock::Wall);
    assert_eq!(ok("clock=wall,clock=cpu").timing_clock, TimingClock::Cpu);
    assert!(ok("clock=wall").heap_dump, "no profile request");
    assert_eq!(err("clock="), "syntax error parsing clock=cpu|wall");
    assert_eq!(err("clock=thread"), "clock option value must be cpu|wall");
}

#[test]
fn heapsample() {
    assert_eq!(ok("heapsample=0").heap_sample_bytes, 0);
    assert!(!ok("heapsample=0").sampled_allocations());
    assert_eq!(ok("heapsample=524288").heap_sample_bytes, 524288);
    assert!(ok("heap=sites,heapsample=1").sampled_allocations());
    assert_eq!(ok("heapsample=2147483647").heap_sample_bytes, 2147483647);
    assert_eq!(
        err("heapsample="),
        "syntax error parsing heapsample=DECIMAL"
    );
    for v in ["-1", "512k", "1e6", "2147483648", "x"] {
        assert_eq!(
            err(&format!("heapsample={v}")),
            "heapsample option value must be decimal and >= 0",
            "{v}"
        );
    }
}

#[test]
fn idsize() {
    assert_eq!(ok("idsize=4").id_size, 4);
    assert_eq!(ok("idsize=8,format=b").id_size, 8);
    assert_eq!(ok("idsize=8,idsize=4").id_size, 4);
    assert_eq!(err("idsize="), "syntax error parsing idsize=4|8");
    for v in ["2", "16", "0x8", " 8", "eight"] {
        assert_eq!(
            err(&format!("idsize={v}")),
            "idsize option value must be 4|8",
            "{v}"
        );
    }
}

#[test]
fn dumper_and_the_id_size_it_implies() {
    use crate::options::HeapDumper;
    assert_eq!(ok("").dumper, HeapDumper::Vm);
    assert_eq!(ok("dumper=jvmti").dumper, HeapDumper::Jvmti);
    assert_eq!(ok("dumper=jvmti,dumper=vm").dumper, HeapDumper::Vm);
    assert_eq!(err("dumper="), "syntax error parsing dumper=vm|jvmti");
    assert_eq!(
        err("dumper=hotspot"),
        "dumper option value must be vm|jvmti"
    );
    // The VM's dumper writes 8-byte IDs: binary heap=dump gets them unless
    // idsize says otherwise; the walk and text keep the original's 4.
    assert!(ok("heap=dump,format=b").vm_dumper_wanted());
    assert_eq!(ok("heap=dump,format=b").id_size, 8);
    assert_eq!(ok("heap=dump,format=b,idsize=4").id_size, 4);
    assert_eq!(ok("heap=dump").id_size, 4);
    assert_eq!(ok("heap=dump,format=b,dumper=jvmti").id_size, 4);
    assert!(!ok("heap=dump,format=b,dumper=jvmti").vm_dumper_wanted());
    // Allocation traces of objects come only from the walk.
    assert!(!ok("heap=all,format=b").vm_dumper_wanted());
    assert_eq!(ok("heap=all,format=b").id_size, 4);
    assert_eq!(ok("format=b").id_size, 4, "the default profile is heap=all");
    assert!(!ok("cpu=samples,format=b").vm_dumper_wanted());
}

#[test]
fn extension_flags() {
    assert!(!ok("gcbeforedump=n").gc_before_dump);
    assert!(ok("arraylen=y").true_array_len);
    assert!(!ok("rootzero=n").pseudo_root);
    assert_eq!(err("arraylen=true"), "arraylen option value must be y|n");
}

// ---------------------------------------------------------------- derived switches

#[test]
fn derived_switches() {
    let o = ok("cpu=samples");
    assert!(!o.object_watching() && !o.needs_injection() && !o.cpu_timing());
    assert_eq!(o.control_flags(), CONTROL_CPU_SAMPLING);

    let o = ok("");
    assert!(o.object_watching() && !o.needs_injection());
    assert_eq!(o.control_flags(), CONTROL_ALLOC_TRACES);

    let o = ok("heap=sites,cpu=samples,format=b");
    assert_eq!(o.control_flags(), 0x3);

    assert_eq!(ok("monitor=y").control_flags(), 0);
    assert_eq!(ok("heap=dump").control_flags(), 0x1);

    let o = ok("cpu=times");
    assert!(o.needs_injection() && o.cpu_timing() && !o.object_watching());
    assert!(ok("cpu=old").needs_injection());
}

#[test]
fn timing_depth() {
    assert_eq!(ok("cpu=old,depth=10").timing_depth(), 2);
    assert_eq!(ok("cpu=old,depth=10").depth, 10, "other traces keep depth");
    assert_eq!(ok("cpu=times,depth=10").timing_depth(), 10);
    assert_eq!(ok("cpu=old,cpu=times").timing_depth(), 4);
}

#[test]
fn fatal_path_switches() {
    assert!(!ok("").dumps_core());
    assert!(ok("coredump=y").dumps_core());
    assert!(ok("debug=y").dumps_core());
}

#[test]
fn binary_check_needs_flag_format_and_heap_dump() {
    assert!(ok("logflags=4,format=b").check_binary_output());
    assert!(ok("logflags=0x7,format=b,heap=dump").check_binary_output());
    assert!(!ok("logflags=4").check_binary_output());
    assert!(!ok("logflags=4,format=b,heap=sites").check_binary_output());
    assert!(!ok("logflags=3,format=b").check_binary_output());
}

// ---------------------------------------------------------------- errors

#[test]
fn error_display() {
    let e = parse("cpu=samples,depth=-1").unwrap_err();
    assert_eq!(
        e.to_string(),
        "hprof option error: depth option value must be decimal and >= 0 (cpu=samples,depth=-1)"
    );
    let e = parse("format=b,monitor=y").unwrap_err();
    assert_eq!(
        e.to_string(),
        "hprof option error: monitor=y is not supported with format=b (format=b,monitor=y)"
    );
    let boxed: Box<dyn std::error::Error> = Box::new(e);
    assert!(boxed.to_string().starts_with("hprof option error: "));
}

#[test]
fn error_remembers_fatal_switches_parsed_before_it() {
    let e = parse("errorexit=y,foo=1").unwrap_err();
    assert!(e.errorexit && !e.dump_core);
    let e = parse("foo=1,errorexit=y").unwrap_err();
    assert!(!e.errorexit);
    let e = parse("errorexit=y,coredump=y,depth=x").unwrap_err();
    assert!(e.errorexit && e.dump_core);
    let e = parse("debug=y,depth=x").unwrap_err();
    assert!(e.dump_core);
    let e = parse("errorexit=x").unwrap_err();
    assert!(!e.errorexit);
    let e = parse("format=b,cpu=times,errorexit=y").unwrap_err();
    assert!(e.errorexit, "conflicts are found after everything was read");
}

// ---------------------------------------------------------------- help / env

#[test]
fn help_request_is_exact() {
    assert!(is_help_request("help"));
    for text in [
        "",
        "help,",
        "help=",
        "HELP",
        " help",
        "help ",
        "help,cpu=samples",
        "cpu=samples,help",
    ] {
        assert!(!is_help_request(text), "{text:?}");
    }
}

#[test]
fn env_joining() {
    assert_eq!(combine_with_env("cpu=samples", None), "cpu=samples");
    assert_eq!(combine_with_env("cpu=samples", Some("")), "cpu=samples");
    assert_eq!(
        combine_with_env("cpu=samples", Some("depth=8")),
        "cpu=samples,depth=8"
    );
    assert_eq!(combine_with_env("", Some("depth=8")), "depth=8");
    assert_eq!(combine_with_env("", None), "");
    assert_eq!(combine_with_env("", Some("")), "");
    // No clever de-duplication of commas.
    assert_eq!(
        combine_with_env("cpu=samples,", Some("depth=8")),
        "cpu=samples,,depth=8"
    );
    assert_eq!(combine_with_env("a", Some(",b")), "a,,b");
}

#[test]
fn env_options_are_parsed_and_echoed() {
    let combined = combine_with_env("cpu=samples", Some("logflags=0xC"));
    let o = ok(&combined);
    assert!(o.cpu_samples && o.logflags == 0xc);
    assert_eq!(o.raw, "cpu=samples,logflags=0xC");
    let e = parse(&combine_with_env("cpu=samples", Some("depth=z"))).unwrap_err();
    assert_eq!(e.options, "cpu=samples,depth=z");
    // The file-once rule spans both sources.
    assert_eq!(
        err(&combine_with_env("file=a", Some("file=b"))),
        "file or net options should only appear once"
    );
    // "help" from the environment alone is just an unknown option.
    assert_eq!(
        err(&combine_with_env("", Some("help"))),
        "Unknown option: help"
    );
    // A trailing comma on the command line produces an empty element.
    assert_eq!(
        err(&combine_with_env("cpu=samples,", Some("doe=n"))),
        "Unknown option: ,doe"
    );
}

// ---------------------------------------------------------------- table of bad strings

#[test]
fn table_of_bad_option_strings() {
    let table: &[(&str, &str)] = &[
        ("=", "general syntax error parsing options"),
        ("sixteen_chars_xx=1", "general syntax error parsing options"),
        (
            "file=a,net=b:1",
            "file or net options should only appear once",
        ),
        ("file=", "syntax error parsing file=filename"),
        ("net=host", "net option missing ':'"),
        ("net=host:", "net option missing port"),
        ("net=host:0", "invalid port number"),
        ("net=host:70000", "invalid port number"),
        ("net=host:http", "invalid port number"),
        ("format=", "syntax error parsing format=a|b"),
        ("format=c", "format option value must be a|b"),
        ("depth=", "syntax error parsing depth=DECIMAL"),
        ("depth=-3", "depth option value must be decimal and >= 0"),
        ("depth=3.0", "depth option value must be decimal and >= 0"),
        ("interval=", "syntax error parsing interval=DECIMAL"),
        (
            "interval=0",
            "interval option value must be decimal and > 0",
        ),
        ("cutoff=", "syntax error parsing cutoff=DOUBLE"),
        (
            "cutoff=-1e-9",
            "cutoff option value must be floating point and >= 0",
        ),
        (
            "cutoff=one",
            "cutoff option value must be floating point and >= 0",
        ),
        ("cpu=", "syntax error parsing cpu=y|samples|times|old"),
        ("cpu=all", "cpu option value must be y|samples|times|old"),
        ("heap=", "syntax error parsing heap=dump|sites|all"),
        ("heap=none", "heap option value must be dump|sites|all"),
        ("lineno=yes", "lineno option value must be y|n"),
        ("thread=1", "thread option value must be y|n"),
        ("doe", "doe option value must be y|n"),
        ("msa=", "msa option value must be y|n"),
        ("force=N", "force option value must be y|n"),
        ("verbose=off", "verbose option value must be y|n"),
        ("primfields=x", "primfields option value must be y|n"),
        ("primarrays=x", "primarrays option value must be y|n"),
        ("monitor=on", "monitor option value must be y|n"),
        ("gc_okay=ok", "gc_okay option value must be y|n"),
        ("coredump=", "coredump option value must be y|n"),
        ("errorexit=t", "errorexit option value must be y|n"),
        ("pause=1", "pause option value must be y|n"),
        ("debug=Y", "debug option value must be y|n"),
        ("logflags=", "logflags option value must be numeric"),
        ("debugflags=", "debugflags option value must be numeric"),
        ("X=", "X option value must be numeric"),
        (
            "exitpause=y",
            "The exitpause option was removed, use -XX:OnError='cmd %%p'",
        ),
        (
            "precrash=y",
            "The precrash option was removed, use -XX:OnError='precrash -p %%p'",
        ),
        ("heap=all,bogus=1", "Unknown option: bogus"),
        ("cpu=samples,,heap=sites", "Unknown option: ,heap"),
        ("doe,cpu=samples", "Unknown option: doe,cpu"),
        (
            "format=b,cpu=old",
            "cpu=times|old is not supported with format=b",
        ),
        (
            "monitor=y,format=b",
            "monitor=y is not supported with format=b",
        ),
        (
            "heapsample=-1",
            "heapsample option value must be decimal and >= 0",
        ),
        ("idsize=2", "idsize option value must be 4|8"),
        ("dumper=x", "dumper option value must be vm|jvmti"),
        ("gcbeforedump=1", "gcbeforedump option value must be y|n"),
        ("rootzero=", "rootzero option value must be y|n"),
        (
            "cpusampler=jfr",
            "cpusampler option value must be async|safepoint|runnable|wall",
        ),
        ("clock=", "syntax error parsing clock=cpu|wall"),
    ];
    assert!(table.len() >= 20);
    for &(text, expected) in table {
        let e = parse(text).expect_err(text);
        assert_eq!(e.description, expected, "for {text:?}");
        assert_eq!(e.options, text);
        assert_eq!(
            e.to_string(),
            format!("hprof option error: {expected} ({text})")
        );
    }
}

#[test]
fn table_of_good_option_strings() {
    let table = [
        "",
        "heap=all",
        "cpu=samples,interval=20,depth=3",
        "heap=sites",
        "cpu=times,thread=y,lineno=n",
        "format=b,file=snap.hprof,heap=dump",
        "monitor=y,cutoff=0.01,doe=n",
        "net=127.0.0.1:9000,cpu=samples,verbose=n",
        "force=n,file=run.txt,msa=y,gc_okay=n",
        "primfields=n,primarrays=n,logflags=0xC,debugflags=1,X=1",
        "coredump=y,errorexit=y,pause=n,debug=n",
        "heapsample=1048576,gcbeforedump=n,idsize=8,arraylen=y,rootzero=n,format=b",
        "cpu=samples,cpusampler=safepoint,interval=1",
        "cpu=times,clock=wall",
    ];
    for text in table {
        assert_eq!(ok(text).raw, text);
    }
}

// ------------------------------------------------------- listen / token / stop

#[test]
fn listen_values() {
    let o = ok("listen=9000");
    assert_eq!(
        o.listen,
        Some(ListenAddr {
            host: "127.0.0.1".into(),
            port: 9000
        })
    );
    assert!(o.listen.as_ref().unwrap().is_loopback());
    assert!(!o.writes_user_file(), "recorded privately without file=");
    let o = ok("listen=0.0.0.0:9001,cpu=samples");
    let l = o.listen.unwrap();
    assert_eq!((l.host.as_str(), l.port), ("0.0.0.0", 9001));
    assert!(!l.is_loopback());
    // The host is what precedes the last ':'; brackets allow IPv6.
    let l = ok("listen=[::1]:7").listen.unwrap();
    assert_eq!((l.host.as_str(), l.port), ("::1", 7));
    assert!(l.is_loopback());
    assert!(ok("listen=localhost:7").listen.unwrap().is_loopback());
    assert!(!ok("listen=example.org:7").listen.unwrap().is_loopback());
    // With file= the file is the recording.
    let o = ok("listen=9000,file=run.txt");
    assert!(o.writes_user_file());
    assert!(ok("file=run.txt").writes_user_file());
    assert!(!ok("net=h:1").writes_user_file());
}

#[test]
fn listen_errors() {
    assert_eq!(err("listen="), "syntax error parsing listen=[HOST:]PORT");
    assert_eq!(err("listen"), "syntax error parsing listen=[HOST:]PORT");
    assert_eq!(err("listen=:80"), "listen option missing host before ':'");
    assert_eq!(err("listen=[]:80"), "listen option missing host before ':'");
    for port in ["0", "65536", "x", "h:", "9000 "] {
        assert_eq!(
            err(&format!("listen={port}")),
            "invalid port number",
            "{port}"
        );
    }
    assert_eq!(
        err("listen=1,listen=2"),
        "listen option should only appear once"
    );
    assert_eq!(
        err("listen=1,net=h:2"),
        "net and listen options cannot be combined"
    );
    assert_eq!(
        err("net=h:2,listen=1"),
        "net and listen options cannot be combined"
    );
    assert_eq!(
        err("listen=1,file=a.txt.GZ"),
        "listen cannot record to a compressed (.gz) file"
    );
}

#[test]
fn tokens() {
    let o = ok("listen=1,token=s3cret");
    assert_eq!(o.token, Some(TokenSource::Inline("s3cret".into())));
    assert_eq!(format!("{:?}", o.token.unwrap()), "Inline(<hidden>)");
    let o = ok("tokenfile=/run/t,listen=1");
    assert_eq!(o.token, Some(TokenSource::File("/run/t".into())));
    assert_eq!(err("listen=1,token="), "syntax error parsing token=SECRET");
    assert_eq!(
        err("listen=1,tokenfile="),
        "syntax error parsing tokenfile=filename"
    );
    let e = parse("listen=1,token=a,tokenfile=b").unwrap_err();
    assert_eq!(
        e.description,
        "token or tokenfile options should only appear once"
    );
    assert_eq!(e.options, "listen=1,token=***,tokenfile=b");
    assert_eq!(
        parse("token=a").unwrap_err().description,
        "token and tokenfile need the listen or net option"
    );
    // With net= the agent is the one that sends the token.
    let o = ok("tokenfile=a,net=h:1");
    assert_eq!(o.token, Some(TokenSource::File("a".into())));
    assert!(o.net.is_some());
}

/// The secret never reaches the error message, wherever it stands.
#[test]
fn errors_do_not_echo_the_token() {
    for (text, shown) in [
        ("token=abc,depth=-1", "token=***,depth=-1"),
        ("listen=1,token=abc,bogus=1", "listen=1,token=***,bogus=1"),
        ("token=abc", "token=***"),
        ("doe,token=abc,x=1", "doe,token=***,x=1"),
        ("mytoken=abc", "mytoken=abc"),
    ] {
        let e = parse(text).unwrap_err();
        assert_eq!(e.options, shown, "{text}");
        assert!(!e.to_string().contains(",token=abc"), "{e}");
    }
    assert_eq!(redact_token(""), "");
    // Nothing to hide in an empty value.
    assert_eq!(redact_token("token="), "token=");
    assert_eq!(redact_token("token=,x=1"), "token=,x=1");
}

#[test]
fn stop_is_a_whole_string_request() {
    assert!(is_stop_request("stop"));
    assert!(!is_stop_request("stop,cpu=samples"));
    assert!(!is_stop_request(" stop"));
    // As options it means nothing: a name without a value.
    assert_eq!(err("cpu=samples,stop"), "Unknown option: stop");
}

/// Exact allocation tracking says what it costs; the tool's default and
/// sampled sites cost nothing worth a warning.
#[test]
fn exact_allocation_tracking_warns_of_its_cost() {
    let warn = |s: &str| parse(s).unwrap().cost_warnings();
    assert!(warn(TOOL_DEFAULT_OPTIONS).is_empty());
    assert!(warn("cpu=samples").is_empty());
    assert!(warn("heap=dump").is_empty());
    assert!(warn("heap=sites,heapsample=65536").is_empty());
    let w = warn("heap=sites");
    assert_eq!(w.len(), 1);
    assert!(
        w[0].starts_with("heap=sites without heapsample= tracks every allocation exactly"),
        "{w:?}"
    );
    for all in ["", "heap=all", "file=x.txt"] {
        let w = warn(all);
        assert_eq!(w.len(), 1, "{all:?}");
        assert!(w[0].starts_with("heap=all (also the default"), "{w:?}");
    }
}

/// jcmd cuts an unquoted `cpu=samples,interval=5` to `cpu`: exactly a
/// known option's name alone is recognised, nothing else.
#[test]
fn an_option_name_alone_is_recognised_as_cut_by_jcmd() {
    for name in [
        "cpu",
        "heap",
        "file",
        "net",
        "listen",
        "depth",
        "interval",
        "monitor",
        "format",
        "heapsample",
        "logflags",
        "doe",
        "token",
    ] {
        assert_eq!(cut_by_jcmd(name), Some(name), "{name}");
        assert!(parse(name).is_err(), "{name} alone parses");
    }
    for other in [
        "",
        "help",
        "stop",
        "x",
        "CPU",
        "exitpause",
        "precrash",
        "cpu=",
        "cpu=samples",
        "cpu,doe",
        " cpu",
        "cpu ",
    ] {
        assert_eq!(cut_by_jcmd(other), None, "{other:?}");
    }
    assert_eq!(
        cut_by_jcmd_message("cpu", 4242, "/opt/hprof-rs/lib/libhprof_rs.so"),
        "the option string is just \"cpu\", without a value: jcmd cuts an unquoted option \
         string at its first '=' and passes only what comes before it; give jcmd the whole \
         string in double quotes, quoted again for the shell: \
         jcmd 4242 JVMTI.agent_load /opt/hprof-rs/lib/libhprof_rs.so '\"cpu=...\"' \
         (or: hprof-rs attach 4242 cpu=...)"
    );
}
