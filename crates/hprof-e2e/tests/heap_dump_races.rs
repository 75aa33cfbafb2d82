//! Heap dumps taken while classes are loaded, linked and get their first
//! array class (issue: "24 field values of unexpected type" beside
//! cpu=times and socket commands). A dump describes the loaded classes,
//! then walks the heap at a later safepoint; classes that appear or are
//! prepared in between used to lose their objects and static values (or,
//! with heap=all, have their statics counted as of an unexpected type),
//! and a class whose interface was described a moment before it was
//! prepared had every field index shifted.
//!
//! ClassStorm loads, through fresh class loaders, classes whose every
//! field value is derived from the class number; the test takes several
//! dumps while it runs and checks every value of every object and class
//! of those classes in every dump, that every reference they hold names a
//! record of the same dump, and that every INSTANCE DUMP decodes against
//! its CLASS DUMPs.

use crate::common;

use common::ascii;
use common::sites::parse_sites;
use hprof_core::reader::{open_path, read_all, tag, HeapDump, Parsed, ReadOptions, Value};
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Classes per group (p.I<i>, p.J<i>, p.A<i>, p.B<i>).
const GROUPS: usize = 60;

/// Write and compile the class library ClassStorm loads. Every value is a
/// function of the group number `i`, so the dump can be checked exactly.
fn build_library(dir: &Path) -> PathBuf {
    let src = dir.join("libsrc/p");
    std::fs::create_dir_all(&src).unwrap();
    let mut files = Vec::new();
    for i in 0..GROUPS {
        let mut w = |name: &str, body: String| {
            let p = src.join(format!("{name}{i}.java"));
            std::fs::write(&p, body).unwrap();
            files.push(p);
        };
        w(
            "I",
            format!(
                "package p; public interface I{i} {{ int K = {i}; Object OI = new int[{i}]; }}\n"
            ),
        );
        w(
            "J",
            format!(
                "package p; public interface J{i} extends I{i} {{ long L = {i}L; Object OJ = new StringBuilder(\"j{i}\"); }}\n"
            ),
        );
        w(
            "A",
            format!(
                "package p; public abstract class A{i} implements I{i} {{ static int sa = {i}; static Object so = new long[{i}]; protected long x = {i}; protected Object r = new Object(); byte b = (byte) {i}; }}\n"
            ),
        );
        w(
            "B",
            format!(
                "package p; public class B{i} extends A{i} implements J{i}, Runnable {{ static double sd = {i}.5; int y = {i}; Object q = new int[] {{ {i} }}; char c = (char) ('a' + {i} % 26); boolean z = {i} % 2 == 0; short s = (short) -{i}; public void run() {{}} }}\n"
            ),
        );
    }
    let out = dir.join("lib");
    let st = Command::new(common::javac())
        .args(["--release", "11", "-d"])
        .arg(&out)
        .args(&files)
        .status()
        .expect("run javac");
    assert!(st.success(), "javac failed on the class library");
    out
}

fn group_of(name: &str, prefix: &str) -> Option<usize> {
    name.strip_prefix(prefix)?.parse().ok()
}

/// Every ID a dump defines: instances, arrays and classes.
fn defined_ids(d: &HeapDump) -> HashSet<u64> {
    d.instances
        .iter()
        .map(|i| i.object_id)
        .chain(d.object_arrays.iter().map(|a| a.array_id))
        .chain(d.primitive_arrays.iter().map(|a| a.array_id))
        .chain(d.class_dumps.iter().map(|c| c.class_id))
        .collect()
}

fn static_values(p: &Parsed, d: &HeapDump, class_id: u64) -> HashMap<String, Value> {
    let cd = d
        .class_dump(class_id)
        .unwrap_or_else(|| panic!("no CLASS DUMP for class 0x{class_id:x}"));
    cd.static_fields
        .iter()
        .map(|s| (p.string(s.name_id).unwrap_or("?").to_string(), s.value))
        .collect()
}

/// Complete heap dumps in a file that is still being written (the part
/// read before the first incomplete record).
fn complete_dumps(path: &Path) -> usize {
    let Ok(mut r) = open_path(path) else { return 0 };
    r.set_options(ReadOptions::skip_bodies());
    let mut n = 0;
    while let Ok(Some(rec)) = r.next_record() {
        if rec.tag == tag::HEAP_DUMP || rec.tag == tag::HEAP_DUMP_END {
            n += 1;
        }
    }
    n
}

/// Check one dump; returns how many p.B instances it holds that the
/// fixture had finished constructing (those its arrays hold: an object a
/// thread is still constructing legitimately has default values).
fn check_dump(p: &Parsed, d: &HeapDump) -> usize {
    let ids = defined_ids(d);
    let name_of = |id: u64| p.class_name(id).map(hprof_core::reader::java_class_name);
    // Every instance decodes against its class chain's CLASS DUMPs.
    let layouts = d.layouts(p.header.id_size);
    for inst in &d.instances {
        layouts.decode_instance(inst).unwrap_or_else(|e| {
            panic!(
                "INSTANCE DUMP 0x{:x} of {:?} does not decode: {e}",
                inst.object_id,
                name_of(inst.class_id)
            )
        });
    }
    let mut constructed = HashSet::new();
    for a in &d.object_arrays {
        let Some(name) = name_of(a.array_class_id) else {
            panic!("array 0x{:x} of a class without LOAD CLASS", a.array_id)
        };
        if group_of(name.trim_end_matches("[]"), "p.B").is_some() {
            for e in a.elements.iter().flatten().filter(|&&e| e != 0) {
                assert!(ids.contains(e), "{name} element 0x{e:x} has no record");
                constructed.insert(*e);
            }
        }
    }
    let mut b_count = 0;
    for inst in &d.instances {
        let Some(name) = name_of(inst.class_id) else {
            panic!(
                "instance 0x{:x} of a class without LOAD CLASS",
                inst.object_id
            )
        };
        let Some(i) = group_of(&name, "p.B") else {
            continue;
        };
        if !constructed.contains(&inst.object_id) {
            continue;
        }
        b_count += 1;
        let f: HashMap<String, Value> = p.field_values(d, inst).unwrap().into_iter().collect();
        let want = [
            ("y", Value::Int(i as i32)),
            ("x", Value::Long(i as i64)),
            ("b", Value::Byte(i as i8)),
            ("c", Value::Char(u16::from(b'a') + (i % 26) as u16)),
            ("z", Value::Boolean(i % 2 == 0)),
            ("s", Value::Short(-(i as i16))),
        ];
        for (field, v) in want {
            assert_eq!(
                f.get(field),
                Some(&v),
                "p.B{i}.{field} of 0x{:x}: {f:?}",
                inst.object_id
            );
        }
        for field in ["q", "r"] {
            match f.get(field) {
                Some(Value::Object(id)) if *id != 0 => assert!(
                    ids.contains(id),
                    "p.B{i}.{field} names 0x{id:x}, which has no record in the dump"
                ),
                other => panic!("p.B{i}.{field} of 0x{:x} is {other:?}", inst.object_id),
            }
        }
    }
    for cd in &d.class_dumps {
        let Some(name) = name_of(cd.class_id) else {
            continue;
        };
        let (statics, want): (_, Vec<(&str, Value)>) = if let Some(i) = group_of(&name, "p.B") {
            (
                static_values(p, d, cd.class_id),
                vec![("sd", Value::Double(i as f64 + 0.5))],
            )
        } else if let Some(i) = group_of(&name, "p.A") {
            (
                static_values(p, d, cd.class_id),
                vec![("sa", Value::Int(i as i32))],
            )
        } else if let Some(i) = group_of(&name, "p.I") {
            (
                static_values(p, d, cd.class_id),
                vec![("K", Value::Int(i as i32))],
            )
        } else if let Some(i) = group_of(&name, "p.J") {
            (
                static_values(p, d, cd.class_id),
                vec![("L", Value::Long(i as i64))],
            )
        } else {
            continue;
        };
        for (field, v) in want {
            // A class loaded but not yet initialised has its statics at 0.
            let got = statics.get(field).copied();
            assert!(
                got == Some(v) || got.is_some_and(|g| is_zero(&g)),
                "{name}.{field} = {got:?}, want {v:?} (or 0 before initialisation)"
            );
        }
        for (field, v) in &statics {
            if let Value::Object(id) = v {
                assert!(
                    *id == 0 || ids.contains(id),
                    "{name}.{field} names 0x{id:x}, which has no record in the dump"
                );
            }
        }
    }
    b_count
}

fn is_zero(v: &Value) -> bool {
    matches!(
        v,
        Value::Int(0) | Value::Long(0) | Value::Double(0.0) | Value::Object(0)
    )
}

/// Run ClassStorm with `opts`, take `dumps` dumps by SIGQUIT while it
/// loads classes, let it exit (one more dump) and check them all.
fn storm(name: &str, opts: &str, dumps: usize) {
    let dir = common::scratch(name);
    let lib = build_library(&dir);
    let agent = format!(
        "-agentpath:{}={opts},format=b,file=out.hprof,verbose=y",
        common::agent_path().display()
    );
    let mut child = Command::new(common::java())
        .current_dir(&dir)
        .arg(&agent)
        .arg("-cp")
        .arg(common::fixture_classes())
        .arg("ClassStorm")
        .arg(&lib)
        .arg(GROUPS.to_string())
        .args(["marker", "120"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start java");
    // Each SIGQUIT also makes the JVM print a thread dump on stdout: drain
    // it, or the VM's signal thread blocks on a full pipe.
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready", "fixture did not start");
    let drain = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut rest);
        rest
    });
    let path = dir.join("out.hprof");
    let deadline = Instant::now() + Duration::from_secs(90);
    for n in 1..=dumps {
        let st = Command::new("kill")
            .args(["-QUIT", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(st.success());
        // Wait for this dump before asking for the next one.
        loop {
            if complete_dumps(&path) >= n {
                break;
            }
            assert!(Instant::now() < deadline, "dump {n} did not arrive");
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    std::fs::write(dir.join("marker"), b"").unwrap();
    let out = child.wait_with_output().unwrap();
    let rest = drain.join().unwrap();
    assert!(rest.contains("done"), "fixture did not finish: {rest}");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "java failed: {err}");
    common::check_agent_stderr(&[&agent], &out);
    assert!(!err.contains("HPROF ERROR"), "{err}");
    let p = read_all(&path).unwrap_or_else(|e| panic!("our reader: {e}"));
    assert_eq!(
        p.heap_dumps.len(),
        dumps + 1,
        "SIGQUIT dumps and the exit dump"
    );
    let mut total = 0;
    for d in &p.heap_dumps {
        assert!(d.ended);
        total += check_dump(&p, d);
    }
    assert!(
        total >= GROUPS * (dumps + 1),
        "p.B instances checked: {total}"
    );
    let late: usize = err
        .lines()
        .filter(|l| l.contains("written after the walk"))
        .count();
    eprintln!("{name}: {total} p.B instances checked in {} dumps; {late} dumps had objects written after the walk", p.heap_dumps.len());
}

#[test]
fn dumps_in_a_class_loading_storm_have_every_value_and_reference() {
    storm("storm_dump", "heap=dump", 5);
}

#[test]
fn dumps_with_allocation_sites_in_a_class_loading_storm_have_every_value() {
    // heap=all: objects and class mirrors keep the agent's own tags, so a
    // class registered after the dump began is known by its tag but has no
    // layout; its statics were reported as "of unexpected type".
    storm("storm_all", "heap=all", 4);
}

/// JDK 12 and later map objects archived by CDS into the heap before their
/// classes are linked (JDK 17: FDBigInteger's cache). JVMTI gives no fields
/// for an unlinked class; those objects came out with no field values.
#[test]
fn objects_of_classes_archived_but_not_linked_keep_their_values() {
    let dir = common::scratch("cds_archived");
    let r = common::run_with_agent_bounded(
        &dir,
        "heap=dump,format=b,file=out.hprof",
        "Hello",
        &[],
        Duration::from_secs(60),
    );
    assert!(r.output.status.success(), "{}", common::stderr(&r.output));
    let p = read_all(dir.join("out.hprof")).unwrap();
    let d = &p.heap_dumps[0];
    let layouts = d.layouts(p.header.id_size);
    let mut checked = 0;
    for inst in &d.instances {
        let fields = layouts.decode_instance(inst).unwrap();
        let name = p
            .class_name(inst.class_id)
            .map(hprof_core::reader::java_class_name)
            .unwrap_or_default();
        if name == "jdk.internal.math.FDBigInteger" {
            let f: HashMap<String, Value> = p.field_values(d, inst).unwrap().into_iter().collect();
            assert!(
                matches!(f.get("data"), Some(Value::Object(id)) if *id != 0),
                "FDBigInteger.data of 0x{:x}: {f:?}",
                inst.object_id
            );
            assert!(
                f.contains_key("nWords") && f.contains_key("offset"),
                "{f:?}"
            );
            checked += 1;
        }
        // Whatever the JDK archives: an instance of a class with instance
        // fields has values.
        let cd = d.class_dump(inst.class_id).unwrap();
        if !cd.instance_fields.is_empty() {
            assert!(
                !fields.is_empty(),
                "{name} 0x{:x} has no values",
                inst.object_id
            );
        }
    }
    eprintln!("FDBigInteger instances checked: {checked}");
}

/// Since JDK 16 the VM loses the tag SampledObjectAlloc puts on a clone
/// (Object.clone clears the header that holds the identity hash the tag
/// map looks objects up by) but still posts its ObjectFree. Giving the copy
/// the same tag again made two frees for one slot: the slot went to two
/// live objects, live counts drifted and heap dumps named one ID twice.
#[test]
fn clones_keep_exact_live_counts_through_garbage_collections() {
    let dir = common::scratch("clone_churn");
    let r = common::run_with_agent_bounded(
        &dir,
        "heap=all,file=out.txt,depth=2",
        "CloneChurn",
        &[],
        Duration::from_secs(120),
    );
    let err = common::stderr(&r.output);
    assert!(!r.timed_out && r.output.status.success(), "{err}");
    assert_eq!(common::stdout(&r.output).trim(), "kept 2000");
    assert!(!err.contains("HPROF ERROR"), "{err}");
    let text = std::fs::read_to_string(dir.join("out.txt")).unwrap();
    let rep = ascii::parse(&text);
    let sites = parse_sites(&rep.body);
    let (live, allocated) = sites[0]
        .rows
        .iter()
        .filter(|r| r.class == "CloneChurn$Item")
        .fold((0, 0), |(l, a), r| {
            (l + r.counts.live_objs, a + r.counts.alloc_objs)
        });
    assert_eq!(
        (live, allocated),
        (2001, 100_001),
        "CloneChurn$Item (live, allocated): the prototype and 2000 kept clones"
    );
    // The exit heap dump names every object once.
    let ids: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("OBJ ") || l.starts_with("ARR "))
        .filter_map(|l| l.split_whitespace().nth(1))
        .collect();
    let unique: std::collections::HashSet<&&str> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "an object ID written twice");
    let items = text
        .lines()
        .filter(|l| l.starts_with("OBJ ") && l.contains("class=CloneChurn$Item@"))
        .count();
    assert_eq!(items, 2001, "CloneChurn$Item instances in the heap dump");
}
