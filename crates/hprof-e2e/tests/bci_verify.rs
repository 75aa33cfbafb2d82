//! Proof that rewritten classes are accepted by the JVM's verifier
//! (`-Xverify:all`) and that the injected calls fire exactly as often as the
//! methods run.

use crate::bci_support as support;

use std::collections::{BTreeMap, HashMap, HashSet};

use hprof_bci::SkipReason;
use std::path::Path;

use hprof_bci::{inject, InjectConfig, MethodInfo};

const TRACKER: &str = "bcitest/Tracker";
const CNUM_BASE: u32 = 0x1000_0000;

/// Injects every class under `src` into `dst`; returns cnum -> (class, methods).
fn inject_tree(
    src: &Path,
    dst: &Path,
    call_sites: bool,
    object_tracking: bool,
) -> HashMap<u32, (String, Vec<MethodInfo>)> {
    let mut map = HashMap::new();
    for (i, rel) in support::class_files(src).iter().enumerate() {
        let bytes = std::fs::read(src.join(rel)).unwrap();
        let cnum = CNUM_BASE + i as u32;
        let mut cfg = InjectConfig::new(TRACKER, cnum);
        cfg.call_sites = call_sites;
        cfg.object_tracking = object_tracking;
        let out = inject(&bytes, &cfg).unwrap_or_else(|e| panic!("{rel:?}: {e}"));
        for (k, r) in out
            .skipped_methods()
            .filter(|(_, r)| **r != SkipReason::ClassSkipped)
        {
            let m = &out.methods[k];
            println!(
                "  skipped {}.{}{}: {r:?}",
                out.class_name, m.name, m.descriptor
            );
        }
        let target = dst.join(rel);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::write(&target, out.new_bytes.as_deref().unwrap_or(&bytes)).unwrap();
        map.insert(cnum, (out.class_name, out.methods));
    }
    map
}

/// Parses the test Tracker's report: (class, method+descriptor) -> (calls, returns), NEWARRAY.
fn tracker_report(
    stdout: &str,
    classes: &HashMap<u32, (String, Vec<MethodInfo>)>,
) -> (BTreeMap<String, (u64, u64)>, u64) {
    let mut sites = BTreeMap::new();
    let mut new_arrays = 0;
    for line in stdout.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        match f[0] {
            "SITE" => {
                let cnum: u32 = f[1].parse::<i32>().unwrap() as u32;
                let mnum: usize = f[2].parse().unwrap();
                let (class, methods) = &classes[&cnum];
                let m = &methods[mnum];
                sites.insert(
                    format!("{class}.{}{}", m.name, m.descriptor),
                    (f[3].parse().unwrap(), f[4].parse().unwrap()),
                );
            }
            "NEWARRAY" => new_arrays = f[1].parse().unwrap(),
            _ => {}
        }
    }
    (sites, new_arrays)
}

fn result_line(stdout: &str) -> String {
    stdout
        .lines()
        .find(|l| l.starts_with("RESULT"))
        .unwrap_or("no RESULT line")
        .to_string()
}

fn run_fixture(release: &str) {
    let fx = support::fixtures();
    let dir = support::scratch(&format!("bci_fixture_{release}"));
    let (classes, rewritten, tracker) = (
        dir.join("classes"),
        dir.join("rewritten"),
        dir.join("tracker"),
    );
    let sources: Vec<_> = ["Main", "Shape", "Square"]
        .iter()
        .map(|n| fx.join("bcifix").join(format!("{n}.java")))
        .collect();
    support::javac(&["--release", release], &sources, &classes);
    support::javac(&[], &[fx.join("bcitest").join("Tracker.java")], &tracker);

    let cp_plain = classes.to_str().unwrap().to_string();
    let (ok, plain_out, err) = support::java(&["-cp", &cp_plain, "bcifix.Main"]);
    assert!(ok, "{err}");

    let map = inject_tree(&classes, &rewritten, true, true);
    let cp = format!("{}:{}", rewritten.display(), tracker.display());
    let (ok, out, err) = support::java(&["-Xverify:all", "-cp", &cp, "bcifix.Main"]);
    assert!(
        ok,
        "instrumented fixture failed (release {release}):\n{err}\n{out}"
    );
    assert_eq!(
        result_line(&out),
        result_line(&plain_out),
        "instrumentation changed the program's result"
    );

    let (sites, new_arrays) = tracker_report(&out, &map);
    let lambda = sites
        .keys()
        .find(|k| k.contains("lambda$main$"))
        .cloned()
        .expect("lambda body instrumented");
    let expected: BTreeMap<String, (u64, u64)> = [
        ("bcifix/Main.main([Ljava/lang/String;)V", (1, 1)),
        ("bcifix/Main.<clinit>()V", (1, 1)),
        ("bcifix/Main.initCounter()I", (1, 1)),
        ("bcifix/Main.<init>(I)V", (2, 2)),
        ("bcifix/Main.<init>()V", (1, 1)),
        ("bcifix/Main.fib(I)I", (1973, 1973)),
        ("bcifix/Main.loopTop(I)I", (3, 3)),
        ("bcifix/Main.dense(I)I", (8, 8)),
        ("bcifix/Main.sparse(I)I", (5, 5)),
        ("bcifix/Main.strings(Ljava/lang/String;)I", (4, 4)),
        ("bcifix/Main.thrower(I)I", (10, 5)),
        ("bcifix/Main.tryCatchFinally(I)I", (10, 10)),
        ("bcifix/Main.returnInFinally(I)I", (5, 5)),
        ("bcifix/Main.syncStatic()V", (3, 3)),
        ("bcifix/Main.syncBlock()V", (4, 4)),
        ("bcifix/Main.longs(JD)J", (1, 1)),
        ("bcifix/Main.nested(I)I", (1, 1)),
        ("bcifix/Main.ternaryOnStack(IZ)I", (6, 6)),
        ("bcifix/Main.arrays(I)I", (1, 1)),
        (lambda.as_str(), (7, 7)),
        ("bcifix/Square.<init>()V", (1, 1)),
        ("bcifix/Square.sides()I", (2, 2)),
        ("bcifix/Square.kind()I", (1, 1)),
        ("bcifix/Base.<init>()V", (1, 1)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    println!(
        "release {release}: {} instrumented methods ran, {new_arrays} arrays",
        sites.len()
    );
    assert_eq!(sites, expected);
    assert_eq!(
        new_arrays, 5,
        "one keys literal in main + four allocations in arrays()"
    );
    let shape = map.values().find(|(c, _)| c == "bcifix/Shape").unwrap();
    assert!(
        shape
            .1
            .iter()
            .all(|m| m.skipped == Some(SkipReason::ClassSkipped)),
        "interfaces are skipped as a whole"
    );
}

#[test]
fn fixture_counts_are_exact_under_full_verification() {
    run_fixture("17");
    run_fixture("8");
}

/// Binary name (a.b.C) of a jrt entry "module/a/b/C.class".
fn binary_name(jrt_name: &str) -> Option<String> {
    let path = jrt_name.split_once('/')?.1.strip_suffix(".class")?;
    if path == "module-info" || path.starts_with("java/") {
        return None; // java.* cannot be defined by a user class loader
    }
    Some(path.replace('/', "."))
}

/// Result of one VerifyDriver run.
struct DriverRun {
    /// Classes (of `ours`) whose verification ran inside a BEGIN/DONE window.
    verified: HashSet<String>,
    /// Requested class -> "VerifyError: ..." / "ClassFormatError: ...".
    bad: BTreeMap<String, String>,
    outcomes: BTreeMap<String, usize>,
}

fn run_driver(driver: &Path, input: &Path, ours: &HashSet<String>) -> DriverRun {
    let (ok, out, err) = support::java(&[
        "-Xverify:all",
        "-Xlog:class+init=info:stdout",
        "-cp",
        driver.to_str().unwrap(),
        "VerifyDriver",
        input.to_str().unwrap(),
    ]);
    assert!(ok, "driver failed: {}", &err[..err.len().min(4000)]);
    let mut run = DriverRun {
        verified: HashSet::new(),
        bad: BTreeMap::new(),
        outcomes: BTreeMap::new(),
    };
    let mut in_window = false;
    for line in out.lines() {
        if line.starts_with("BEGIN ") {
            in_window = true;
        } else if let Some(rest) = line.strip_prefix("DONE ") {
            in_window = false;
            let (name, result) = rest.split_once(' ').unwrap();
            let kind = result.split(':').next().unwrap().to_string();
            if kind.contains("VerifyError") || kind.contains("ClassFormatError") {
                run.bad.insert(name.to_string(), result.to_string());
            }
            *run.outcomes.entry(kind).or_default() += 1;
        } else if let Some(n) = line.split("End class verification for: ").nth(1) {
            if in_window && ours.contains(n.trim()) {
                run.verified.insert(n.trim().to_string());
            }
        }
    }
    run
}

/// Every non-java.* class of the JDK is rewritten and linked under
/// -Xverify:all in a child-first loader. Mixing our copies with the boot
/// loader's (e.g. javax.accessibility vs java.awt) makes some classes fail
/// even unmodified, so the same run with the original bytes is the baseline:
/// rewriting must not add a single VerifyError or ClassFormatError.
#[test]
fn rewritten_jdk_classes_pass_the_verifier() {
    let dir = support::scratch("bci_jdk_verify");
    let (mut original, mut modified) = (Vec::new(), Vec::new());
    let mut rewritten: HashSet<String> = HashSet::new();
    let mut total = 0usize;
    let mut cnum = CNUM_BASE;
    support::for_each_jdk_class(|jrt_name, bytes| {
        let Some(name) = binary_name(jrt_name) else {
            return;
        };
        total += 1;
        cnum += 1;
        let mut cfg = InjectConfig::new(TRACKER, cnum);
        cfg.call_sites = true;
        cfg.object_tracking = true;
        let out = inject(bytes, &cfg).unwrap_or_else(|e| panic!("{jrt_name}: {e}"));
        support::put_record(&mut original, &name, bytes);
        support::put_record(
            &mut modified,
            &name,
            out.new_bytes.as_deref().unwrap_or(bytes),
        );
        if out.new_bytes.is_some() {
            rewritten.insert(name);
        }
    });
    let driver = dir.join("driver");
    support::javac(
        &[],
        &[support::fixtures().join("VerifyDriver.java")],
        &driver,
    );
    let mut runs = Vec::new();
    for (file, stream) in [
        ("original.bin", &mut original),
        ("rewritten.bin", &mut modified),
    ] {
        stream.extend_from_slice(&[0, 0]);
        std::fs::write(dir.join(file), &stream).unwrap();
        runs.push(run_driver(&driver, &dir.join(file), &rewritten));
    }
    // "End class verification" is logged even when verification failed.
    let failed: Vec<String> = runs.iter().flat_map(|r| r.bad.keys().cloned()).collect();
    for n in &failed {
        runs[1].verified.remove(n);
    }
    let (base, run) = (&runs[0], &runs[1]);
    let new_bad: Vec<_> = run
        .bad
        .iter()
        .filter(|(n, _)| !base.bad.contains_key(*n))
        .collect();
    println!(
        "jdk verify: {total} non-java.* classes defined, {} rewritten, {} rewritten classes verified without error",
        rewritten.len(),
        run.verified.len()
    );
    println!(
        "  baseline (unmodified) failures: {}, with rewriting: {}, new: {}",
        base.bad.len(),
        run.bad.len(),
        new_bad.len()
    );
    println!("  outcomes: {:?}", run.outcomes);
    for (n, r) in new_bad.iter().take(10) {
        println!("  NEW {n}: {}", &r[..r.len().min(1500)]);
    }
    assert!(
        new_bad.is_empty(),
        "{} classes fail verification only after rewriting",
        new_bad.len()
    );
    assert_eq!(run.bad.len(), base.bad.len());
    assert!(
        run.verified.len() > 5000,
        "too few classes verified: {}",
        run.verified.len()
    );
}

/// Java source with methods whose conditional branches fit in 16 bits
/// before injection but not after, so the rewriter must widen them to
/// `if<!cond> +8; goto_w` and add StackMapTable frames after them (with an
/// empty and with a non-empty operand stack).
fn huge_source() -> String {
    let mut s = String::from("package bcifix;\n\npublic class Huge {\n    static int sink;\n\n");
    s.push_str("    static int take(String s, int v) {\n        return v + s.length();\n    }\n\n");
    // ~2700 x 11 bytes guarded by one `if (x > 0)`; every block gains a
    // ReturnSite call, pushing the guard's target beyond 32767 bytes.
    s.push_str("    public static int returns(int x, String s) {\n        int r = s.length();\n        if (x > 0) {\n");
    for k in 1000..3700 {
        s.push_str(&format!("            if (x == {k}) return {k};\n"));
    }
    s.push_str("            r += 1;\n        }\n        return r + x;\n    }\n\n");
    // A conditional expression whose condition jumps over a ~31 KB switch
    // expression while `s` is on the operand stack; every case allocates an
    // array, and the NewArray calls push the jump beyond 32767 bytes.
    s.push_str("    public static int stacked(int x, String s) {\n        return take(s, x > 0 ? switch (x) {\n");
    for k in 1..1500 {
        s.push_str(&format!(
            "            case {k} -> {{ sink += new int[1].length; yield {k}; }}\n"
        ));
    }
    s.push_str("            default -> -1;\n        } : 0);\n    }\n\n");
    s.push_str("    public static void main(String[] a) {\n        long sum = 0;\n");
    s.push_str("        for (int x : new int[] {-5, 0, 1000, 2500, 3699, 3700, 9999}) sum += returns(x, \"ab\");\n");
    s.push_str(
        "        for (int x : new int[] {-5, 0, 1, 700, 1499, 1500}) sum += stacked(x, \"abc\");\n",
    );
    s.push_str("        System.out.println(\"RESULT \" + sum + \" \" + sink);\n    }\n}\n");
    s
}

#[test]
fn widened_branches_get_frames_and_verify() {
    let dir = support::scratch("bci_huge");
    let (src, classes, rewritten, tracker) = (
        dir.join("src"),
        dir.join("classes"),
        dir.join("rewritten"),
        dir.join("tracker"),
    );
    std::fs::create_dir_all(src.join("bcifix")).unwrap();
    let file = src.join("bcifix").join("Huge.java");
    std::fs::write(&file, huge_source()).unwrap();
    support::javac(&[], &[file], &classes);
    support::javac(
        &[],
        &[support::fixtures().join("bcitest").join("Tracker.java")],
        &tracker,
    );
    let (ok, plain, err) = support::java(&["-cp", classes.to_str().unwrap(), "bcifix.Huge"]);
    assert!(ok, "{err}");

    // Before injection every branch of the two big methods is short.
    let bytes = std::fs::read(classes.join("bcifix/Huge.class")).unwrap();
    let cf = hprof_bci::classfile::ClassFile::parse(&bytes).unwrap();
    for m in &cf.methods {
        let code = &m.code().unwrap().code;
        let insns = hprof_bci::code::instructions::decode_all(code).unwrap();
        assert!(
            insns.iter().all(|i| i.opcode != 0xc8),
            "javac already used goto_w"
        );
    }

    let map = inject_tree(&classes, &rewritten, true, true);
    let out_bytes = std::fs::read(rewritten.join("bcifix/Huge.class")).unwrap();
    let out_cf = hprof_bci::classfile::ClassFile::parse(&out_bytes).unwrap();
    let frames = |cf: &hprof_bci::classfile::ClassFile| -> usize {
        use hprof_bci::classfile::attributes::AttributeInfo;
        cf.methods
            .iter()
            .flat_map(|m| m.code().unwrap().attributes.iter())
            .map(|a| match &a.info {
                AttributeInfo::StackMapTable(f) => f.len(),
                _ => 0,
            })
            .sum()
    };
    assert_eq!(
        frames(&out_cf),
        frames(&cf) + 2,
        "one new frame after each widened conditional"
    );
    let mut goto_w = 0;
    for m in &out_cf.methods {
        let code = &m.code().unwrap().code;
        goto_w += hprof_bci::code::instructions::decode_all(code)
            .unwrap()
            .iter()
            .filter(|i| i.opcode == 0xc8)
            .count();
    }
    assert!(
        goto_w >= 2,
        "expected widened branches, found {goto_w} goto_w"
    );

    let cp = format!("{}:{}", rewritten.display(), tracker.display());
    let (ok, out, err) = support::java(&["-Xverify:all", "-cp", &cp, "bcifix.Huge"]);
    assert!(
        ok,
        "instrumented Huge failed:\n{}",
        &err[..err.len().min(3000)]
    );
    assert_eq!(result_line(&out), result_line(&plain));
    let (sites, new_arrays) = tracker_report(&out, &map);
    println!("huge: {goto_w} goto_w after injection; sites {sites:?}; {new_arrays} arrays");
    assert_eq!(sites["bcifix/Huge.returns(ILjava/lang/String;)I"], (7, 7));
    assert_eq!(sites["bcifix/Huge.stacked(ILjava/lang/String;)I"], (6, 6));
    assert_eq!(sites["bcifix/Huge.take(Ljava/lang/String;I)I"], (6, 6));
    // two int[] literals in main + one array per case taken (1, 700, 1499)
    assert_eq!(new_arrays, 2 + 3);
}
