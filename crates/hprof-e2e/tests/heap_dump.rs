//! heap=dump end to end: the HeapGraph fixture builds a known object graph;
//! its dumps (SIGQUIT and exit, binary and text, gzip) are parsed and
//! checked against the graph, against `jmap -histo:live` on the same
//! program state, and with an independent parser (the jvm-hprof crate).

use crate::common;

use hprof_core::reader::{read_all, HeapDump, Parsed, Value};
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const FIXTURE_CLASSES: [(&str, u64); 4] = [
    ("HeapGraph$Node", 1000),
    ("HeapGraph$Leaf", 777),
    ("HeapGraph$Pair", 3),
    ("HeapGraph$Node[]", 1),
];

struct Running {
    child: Child,
    dir: PathBuf,
}

impl Running {
    fn start(name: &str, jvm_args: &[&str], opts: &str) -> Running {
        let dir = common::scratch(name);
        let agent = format!("-agentpath:{}={opts}", common::agent_path().display());
        let mut child = Command::new(common::java())
            .current_dir(&dir)
            .args(jvm_args)
            .arg(agent)
            .arg("-cp")
            .arg(common::fixture_classes())
            .args(["HeapGraph", "marker", "120"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start java");
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "ready", "fixture did not start");
        Running { child, dir }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Let the fixture exit (dump at VM death) and return its stderr.
    fn finish(self) -> (PathBuf, String) {
        std::fs::write(self.dir.join("marker"), b"").unwrap();
        let out = self.child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "java failed: {err}");
        (self.dir, err)
    }
}

fn send_sigquit(pid: u32) {
    let st = Command::new("kill")
        .args(["-QUIT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(st.success());
}

fn fields(p: &Parsed, d: &HeapDump, obj: u64) -> HashMap<String, Value> {
    let inst = d
        .instances
        .iter()
        .find(|i| i.object_id == obj)
        .unwrap_or_else(|| panic!("no INSTANCE DUMP for {obj:x}"));
    p.field_values(d, inst)
        .expect("decodable instance")
        .into_iter()
        .collect()
}

/// The class object ID of `name` in dump `d`: a file with several dumps by
/// the VM's dumper has one LOAD CLASS per class and dump (their IDs are
/// tagged with the dump's number), so the name is looked up among the
/// dump's own CLASS DUMPs.
fn class_id(p: &Parsed, d: &HeapDump, name: &str) -> u64 {
    let want = hprof_core::reader::java_class_name(name);
    d.class_dumps
        .iter()
        .map(|c| c.class_id)
        .find(|&id| p.class_name(id).map(hprof_core::reader::java_class_name) == Some(want.clone()))
        .unwrap_or_else(|| panic!("no CLASS DUMP named {name}"))
}

fn statics(p: &Parsed, d: &HeapDump, class: &str) -> HashMap<String, Value> {
    let cd = d
        .class_dump(class_id(p, d, class))
        .unwrap_or_else(|| panic!("CLASS DUMP {class}"));
    cd.static_fields
        .iter()
        .map(|s| (p.string(s.name_id).unwrap().to_string(), s.value))
        .collect()
}

fn prim_elements(d: &HeapDump, id: Value) -> Vec<Value> {
    let Value::Object(id) = id else {
        panic!("not a reference: {id:?}")
    };
    d.primitive_arrays
        .iter()
        .find(|a| a.array_id == id)
        .expect("primitive array dump")
        .elements()
        .unwrap()
}

/// Everything the fixture makes knowable, checked on one binary dump.
fn check_graph(p: &Parsed, d: &HeapDump, primitives: bool) {
    let c = common::instance_counts(p, d);
    for (class, n) in FIXTURE_CLASSES {
        assert_eq!(c.get(class).copied(), Some(n), "instances of {class}");
    }
    // Every class an instance or array names has a CLASS DUMP and a LOAD CLASS.
    let class_ids: Vec<u64> = d
        .instances
        .iter()
        .map(|i| i.class_id)
        .chain(d.object_arrays.iter().map(|a| a.array_class_id))
        .collect();
    for id in class_ids {
        assert!(d.class_dump(id).is_some(), "CLASS DUMP for {id:x}");
        assert!(p.class(id).is_some(), "LOAD CLASS for {id:x}");
    }
    // Node fields by value, following `next` from the list head.
    let node = class_id(p, d, "HeapGraph$Node");
    let by_value: HashMap<i64, u64> = d
        .instances_of(node)
        .map(|i| {
            let f = fields(p, d, i.object_id);
            (
                if primitives {
                    f["value"].as_i64().unwrap()
                } else {
                    0
                },
                i.object_id,
            )
        })
        .collect();
    if !primitives {
        for i in d.instances_of(node) {
            let f = fields(p, d, i.object_id);
            assert!(
                ["value", "baseId", "s", "b"]
                    .iter()
                    .all(|k| f[*k].as_i64() == Some(0)),
                "primfields=n: {f:?}"
            );
        }
        return;
    }
    assert_eq!(by_value.len(), 1000, "distinct values 0..999");
    let leaf = class_id(p, d, "HeapGraph$Leaf");
    for i in [0i64, 1, 7, 500, 998, 999] {
        let f = fields(p, d, by_value[&i]);
        assert_eq!(f["baseId"].as_i64(), Some(1_000_000_000_000 + i));
        assert_eq!(f["weight"], Value::Double(i as f64 * 0.5));
        assert_eq!(f["f"], Value::Float(i as f32 * 0.25));
        assert_eq!(f["flag"], Value::Boolean(i % 2 == 0));
        assert_eq!(f["ch"], Value::Char(b'A' as u16 + (i % 26) as u16));
        assert_eq!(f["b"], Value::Byte(i as i8));
        assert_eq!(f["s"], Value::Short((i * 3) as i16));
        let next = f["next"].as_object_id().unwrap_or(0);
        if i == 999 {
            assert_eq!(next, 0);
        } else {
            assert_eq!(next, by_value[&(i + 1)], "node {i}.next");
        }
        let base_ref = f["baseRef"].as_object_id().unwrap();
        let leaf_inst = d
            .instances
            .iter()
            .find(|x| x.object_id == base_ref)
            .unwrap();
        assert_eq!(leaf_inst.class_id, leaf);
        assert_eq!(fields(p, d, base_ref)["id"].as_i64(), Some(i % 777));
    }
    // node 0's name is the String "node-zero" (its value array holds the text).
    let name = fields(p, d, by_value[&0])["name"].as_object_id().unwrap();
    let s = d.instances.iter().find(|x| x.object_id == name);
    assert_eq!(
        s.and_then(|x| p.class_name(x.class_id)),
        Some("java.lang.String"),
        "{:?} {:?}",
        s,
        s.and_then(|x| p.class(x.class_id))
    );

    // Statics of every type, with values.
    let s = statics(p, d, "HeapGraph$Holder");
    assert_eq!(s["sz"], Value::Boolean(true));
    assert_eq!(s["sb"], Value::Byte(-7));
    assert_eq!(s["sc"], Value::Char('Q' as u16));
    assert_eq!(s["ss"], Value::Short(-1234));
    assert_eq!(s["si"], Value::Int(123_456_789));
    assert_eq!(s["sl"], Value::Long(-9_876_543_210));
    assert_eq!(s["sf"], Value::Float(1.5));
    assert_eq!(s["sd"], Value::Double(-2.25));
    // Arrays of every primitive type, element by element.
    assert_eq!(
        prim_elements(d, s["za"]),
        [
            Value::Boolean(true),
            Value::Boolean(false),
            Value::Boolean(true)
        ]
    );
    assert_eq!(
        prim_elements(d, s["ba"]),
        [Value::Byte(1), Value::Byte(-2), Value::Byte(3)]
    );
    assert_eq!(
        prim_elements(d, s["ca"]),
        "hey"
            .chars()
            .map(|c| Value::Char(c as u16))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        prim_elements(d, s["sa"]),
        [-1i16, 2, -3, 4].map(Value::Short)
    );
    assert_eq!(prim_elements(d, s["ia"]), [1, 2, 3, -4, 5].map(Value::Int));
    assert_eq!(
        prim_elements(d, s["la"]),
        [i64::MIN, 0, i64::MAX].map(Value::Long)
    );
    assert_eq!(prim_elements(d, s["fa"]), [0.5f32, -1.25].map(Value::Float));
    assert_eq!(
        prim_elements(d, s["da"]),
        [3.5, -0.125, 1e300].map(Value::Double)
    );
    // Holder.so -> Pair[3] whose first pair is (node 0, leaf 0).
    let Value::Object(pairs) = s["so"] else {
        panic!()
    };
    let arr = d
        .object_arrays
        .iter()
        .find(|a| a.array_id == pairs)
        .expect("Pair[] dump");
    let elems = arr.elements.as_ref().unwrap();
    assert_eq!(elems.len(), 3);
    let p0 = fields(p, d, elems[0]);
    assert_eq!(p0["left"].as_object_id(), Some(by_value[&0]));
    assert_eq!(
        fields(p, d, elems[2])["left"],
        s["ia"],
        "pair 2 holds Holder.ia"
    );
    // Interface constants are statics of the interface.
    assert_eq!(statics(p, d, "HeapGraph$Named")["CODE"], Value::Int(42));
}

/// Independent parser (jvm-hprof): every record and heap sub-record parses
/// and it sees `nodes_per_dump` HeapGraph$Node instances in each dump.
/// jvm-hprof asserts that CLASS DUMPs have an empty constant pool (as
/// HotSpot writes them), which our 8-byte-ID mode does.
fn check_with_jvm_hprof(bytes: &[u8], p: &Parsed, nodes_per_dump: &[u64]) {
    let nodes: Vec<u64> = p
        .heap_dumps
        .iter()
        .map(|d| class_id(p, d, "HeapGraph$Node"))
        .collect();
    let theirs = jvm_hprof::parse_hprof(bytes).expect("jvm-hprof header");
    let mut per_dump = Vec::new();
    for rec in theirs.records_iter() {
        let rec = rec.expect("jvm-hprof record");
        if let Some(seg) = rec.as_heap_dump_segment() {
            let seg = seg.expect("jvm-hprof heap dump");
            let mut n = 0;
            for s in seg.sub_records() {
                if let jvm_hprof::heap_dump::SubRecord::Instance(i) =
                    s.expect("jvm-hprof sub-record")
                {
                    if nodes.contains(&i.class_obj_id().id()) {
                        n += 1;
                    }
                }
            }
            per_dump.push(n);
        }
    }
    // Segments of one dump add up.
    assert_eq!(
        per_dump.iter().sum::<u64>(),
        nodes_per_dump.iter().sum::<u64>(),
        "{per_dump:?}"
    );
}

/// hprof-slurp (a heap dump analyzer people use: `cargo install
/// hprof-slurp`), found through `HPROF_SLURP` or on the PATH; None if it is
/// not installed.
fn hprof_slurp() -> Option<PathBuf> {
    let candidate = std::env::var_os("HPROF_SLURP")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("hprof-slurp"));
    Command::new(&candidate)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| candidate)
}

/// Instance counts per class name (fixture classes) as hprof-slurp reports
/// them for a dump file: its "raw shallow heap classes" table, summed over
/// every heap dump in the file.
fn slurp_counts(tool: &Path, dump: &Path) -> HashMap<String, u64> {
    let out = Command::new(tool)
        .args(["--top", "50", "--filter", "HeapGraph"])
        .arg(dump)
        .output()
        .expect("run hprof-slurp");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "hprof-slurp failed: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = text
        .split("Top 50 raw shallow heap classes:")
        .nth(1)
        .unwrap_or_else(|| panic!("no class table: {text}"));
    let table = table.split("Top 50 largest instances:").next().unwrap();
    let mut m = HashMap::new();
    for line in table.lines() {
        let cols: Vec<&str> = line.split('|').map(str::trim).collect();
        if cols.len() == 6 {
            if let Ok(n) = cols[2].parse::<u64>() {
                // One row per class object: the VM's dumps give a class a
                // new ID in each dump (tagged with its number), so a name
                // has one row per dump.
                *m.entry(cols[4].to_string()).or_insert(0) += n;
            }
        }
    }
    m
}

/// hprof-slurp, if installed, finds the fixture's objects twice in `path`
/// (a SIGQUIT dump and the exit dump).
fn check_twice_with_slurp(path: &Path) {
    match hprof_slurp() {
        Some(tool) => {
            let c = slurp_counts(&tool, path);
            for (class, n) in FIXTURE_CLASSES {
                assert_eq!(c.get(class).copied(), Some(2 * n), "hprof-slurp count of {class}: {c:?}");
            }
        }
        None => eprintln!("hprof-slurp not installed (cargo install hprof-slurp; or set HPROF_SLURP): check skipped"),
    }
}

fn node_array_len(p: &Parsed, d: &HeapDump) -> u32 {
    let c = class_id(p, d, "HeapGraph$Node[]");
    d.object_arrays
        .iter()
        .find(|a| a.array_class_id == c)
        .unwrap()
        .length
}

#[test]
fn binary_dumps_on_sigquit_and_exit_match_jmap_and_the_known_graph() {
    // The JVMTI walk. -Xmx512m: 1.0.1, each dump one HEAP DUMP record,
    // staged in out.hprof.TMP.
    let run = Running::start(
        "hd_bin",
        &["-Xmx512m"],
        "heap=dump,format=b,file=out.hprof,dumper=jvmti",
    );
    let histo = common::jmap_histo_live(run.pid());
    for (class, n) in FIXTURE_CLASSES {
        assert_eq!(
            histo.get(class).copied(),
            Some(n),
            "jmap count of {class}: {histo:?}"
        );
    }
    send_sigquit(run.pid());
    let path = run.dir.join("out.hprof");
    common::wait_for_dumps(&path, 1);
    assert!(
        !run.dir.join("out.hprof.TMP").exists(),
        "temporary file removed once the dump is out"
    );
    let (dir, err) = run.finish();
    assert!(
        err.contains("Dumping Java heap (JVMTI walk) ... done."),
        "{err}"
    );
    assert!(!err.contains("HPROF ERROR"), "{err}");
    let left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".TMP"))
        .collect();
    assert!(left.is_empty(), "temporary files left after exit: {left:?}");

    let p = read_all(dir.join("out.hprof")).unwrap_or_else(|e| panic!("our reader: {e}"));
    assert_eq!(
        p.header.id_size, 4,
        "the walk keeps the original's 4-byte IDs"
    );
    assert_eq!(
        p.header.version, "1.0.1",
        "-Xmx512m: 1.0.1, one HEAP DUMP record per dump"
    );
    assert_eq!(p.heap_dumps.len(), 2, "SIGQUIT and exit");
    for d in &p.heap_dumps {
        assert!(d.ended && !d.segmented && d.records == 1);
        // Same counts as jmap -histo:live for the fixture's classes.
        let c = common::instance_counts(&p, d);
        for (class, _) in FIXTURE_CLASSES {
            assert_eq!(c.get(class), histo.get(class), "{class}");
        }
        check_graph(&p, d, true);
        // Original's quirk by default: object arrays end at the last non-null element.
        assert_eq!(node_array_len(&p, d), 1000);
        // Pseudo root first, then the VM's roots; thread roots come in pairs.
        let first = d.roots[0];
        assert_eq!(first.object_id, 0);
        assert!(matches!(
            first.kind,
            hprof_core::reader::RootKind::ThreadObject {
                thread_serial: 200_000,
                ..
            }
        ));
        let thread_objs = d
            .roots
            .iter()
            .filter(|r| {
                r.object_id != 0
                    && matches!(r.kind, hprof_core::reader::RootKind::ThreadObject { .. })
            })
            .count();
        let blocks = d
            .roots
            .iter()
            .filter(|r| matches!(r.kind, hprof_core::reader::RootKind::ThreadBlock { .. }))
            .count();
        assert!(thread_objs >= 1 && thread_objs == blocks);
        assert!(d
            .roots
            .iter()
            .any(|r| matches!(r.kind, hprof_core::reader::RootKind::StickyClass)));
        assert!(d
            .roots
            .iter()
            .any(|r| matches!(r.kind, hprof_core::reader::RootKind::JavaFrame { .. })));
        // Object IDs are per-dump handles (0x6xxxxxxx); Thread objects and
        // classes keep their table handles (0x5xxxxxxx).
        let node = class_id(&p, d, "HeapGraph$Node");
        assert!(d.instances_of(node).all(|i| i.object_id >> 28 == 6));
        assert!(d
            .instances
            .iter()
            .all(|i| matches!(i.object_id >> 28, 5 | 6)));
        assert!(d.class_dumps.iter().all(|c| c.class_id >> 28 == 5));
    }
    // The two dumps describe the same objects: each holds the fixture's
    // 1000 nodes, whose `next` chains are intact (checked above).
    for d in &p.heap_dumps {
        let node = class_id(&p, d, "HeapGraph$Node");
        assert_eq!(d.instances_of(node).count(), 1000);
        assert!(d.instances.len() >= 3000);
    }
    // A real tool reads the file and finds the fixture's objects, twice.
    check_twice_with_slurp(&dir.join("out.hprof"));
}

/// No HPROF ERROR in `err`, and nothing of the VM's dumper left in `dir`.
fn no_error_nothing_left(dir: &Path, err: &str) {
    assert!(!err.contains("HPROF ERROR"), "{err}");
    assert!(
        vm_scratch_left(dir).is_empty(),
        "{:?}",
        vm_scratch_left(dir)
    );
}

/// Scratch directories of the VM's dumper left in `dir`.
fn vm_scratch_left(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".vmdump.") || n.contains(".TMP"))
        .collect()
}

/// What every dump by the VM's dumper in `p` must satisfy: the fixture's
/// graph, jmap's counts, identifiers as the VM wrote them in the first
/// dump and tagged with the dump's number in later ones (never in the
/// agent's own space), every class named, thread roots with their stack
/// traces, frames naming classes.
fn check_vm_dumps(p: &Parsed, histo: &HashMap<String, u64>) {
    assert_eq!(p.header.id_size, 8);
    let ours = hprof_core::vocab::id_space::OURS;
    for (k, d) in p.heap_dumps.iter().enumerate() {
        let tag = if k == 0 { 0 } else { (k as u64 + 1) << 48 };
        assert!(d.ended);
        let c = common::instance_counts(p, d);
        for (class, _) in FIXTURE_CLASSES {
            assert_eq!(c.get(class), histo.get(class), "dump {k}: {class}");
        }
        check_graph(p, d, true);
        // HotSpot writes object arrays with their full length.
        assert_eq!(node_array_len(p, d), 1200);
        let ids = d
            .instances
            .iter()
            .map(|i| i.object_id)
            .chain(d.object_arrays.iter().map(|a| a.array_id))
            .chain(d.primitive_arrays.iter().map(|a| a.array_id))
            .chain(d.class_dumps.iter().map(|c| c.class_id));
        for id in ids {
            assert_eq!(id >> 48, tag >> 48, "dump {k}: ID 0x{id:x}");
            assert_eq!(id & ours, 0, "dump {k}: ID 0x{id:x}");
        }
        for cd in &d.class_dumps {
            assert!(
                p.class_name(cd.class_id).is_some(),
                "LOAD CLASS of 0x{:x}",
                cd.class_id
            );
            for f in cd
                .static_fields
                .iter()
                .map(|f| f.name_id)
                .chain(cd.instance_fields.iter().map(|f| f.name_id))
            {
                assert!(p.string(f).is_some(), "field name 0x{f:x}");
            }
        }
        // Thread roots name a stack trace the file holds; every frame's
        // class has a LOAD CLASS.
        let mut threads = 0;
        for r in &d.roots {
            if let hprof_core::reader::RootKind::ThreadObject { trace_serial, .. } = r.kind {
                threads += 1;
                assert!(
                    p.traces.iter().any(|t| t.serial == trace_serial),
                    "TRACE {trace_serial}"
                );
            }
        }
        assert!(threads >= 2, "main thread and the VM's own");
        assert!(d
            .roots
            .iter()
            .any(|r| matches!(r.kind, hprof_core::reader::RootKind::JavaFrame { .. })));
    }
    // A class serial names one class object. The VM's classes took the
    // serials of our own LOAD CLASS records, so one serial named both the
    // agent's ID (0x40000000500...) and the VM's address of the class.
    let mut by_serial: HashMap<u32, u64> = HashMap::new();
    for c in &p.classes {
        let id = *by_serial.entry(c.serial).or_insert(c.class_id);
        assert_eq!(
            id, c.class_id,
            "class serial {} names 0x{id:x} and 0x{:x}",
            c.serial, c.class_id
        );
    }
    // The agent's own objects (its threads) are in its own space.
    assert!(!p.thread_starts.is_empty());
    for t in &p.thread_starts {
        assert_eq!(t.thread_id & ours, ours, "START THREAD 0x{:x}", t.thread_id);
    }
    for f in &p.frames {
        assert!(
            p.classes.iter().any(|c| c.serial == f.class_serial),
            "FRAME class serial {}",
            f.class_serial
        );
    }
}

#[test]
fn vm_dumper_binary_dumps_on_sigquit_and_exit_match_jmap_and_the_known_graph() {
    // -Xmx512m: 1.0.1, each dump one HEAP DUMP record.
    let run = Running::start(
        "hd_vm_bin",
        &["-Xmx512m"],
        "heap=dump,format=b,file=out.hprof",
    );
    let histo = common::jmap_histo_live(run.pid());
    send_sigquit(run.pid());
    let path = run.dir.join("out.hprof");
    common::wait_for_dumps(&path, 1);
    assert!(
        vm_scratch_left(&run.dir).is_empty(),
        "the VM's file is removed once copied"
    );
    let (dir, err) = run.finish();
    assert_eq!(
        err.matches("Dumping Java heap (VM dumper) ... done.")
            .count(),
        2,
        "{err}"
    );
    no_error_nothing_left(&dir, &err);
    let p = read_all(dir.join("out.hprof")).unwrap_or_else(|e| panic!("our reader: {e}"));
    assert_eq!(p.header.version, "1.0.1");
    assert_eq!(p.heap_dumps.len(), 2, "SIGQUIT and exit");
    for d in &p.heap_dumps {
        assert!(!d.segmented && d.records == 1);
    }
    check_vm_dumps(&p, &histo);
    let bytes = std::fs::read(dir.join("out.hprof")).unwrap();
    check_with_jvm_hprof(&bytes, &p, &[1000, 1000]);
    check_twice_with_slurp(&dir.join("out.hprof"));
}

/// A storm of SIGQUITs while the VM's dumper runs (1.0.2, so its segments
/// are copied while the VM writes): every dump the storm causes is whole
/// and right, none overlaps another, the JVM survives and the exit dump
/// follows. (HotSpot prints a thread dump per SIGQUIT: stdout is drained.)
#[test]
fn sigquit_storm_during_vm_dumps() {
    let mut run = Running::start(
        "hd_vm_storm",
        &["-Xmx2100m"],
        "heap=dump,format=b,file=out.hprof",
    );
    let histo = common::jmap_histo_live(run.pid());
    let mut stdout = run.child.stdout.take().unwrap();
    let drain = std::thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut stdout, &mut sink);
    });
    for _ in 0..12 {
        send_sigquit(run.pid());
        std::thread::sleep(Duration::from_millis(25));
    }
    let path = run.dir.join("out.hprof");
    common::wait_for_dumps(&path, 1);
    // Let the dumps the storm queued finish before the exit dump.
    std::thread::sleep(Duration::from_secs(2));
    let (dir, err) = run.finish();
    drain.join().unwrap();
    assert!(!err.contains("HPROF ERROR"), "{err}");
    let p = read_all(dir.join("out.hprof")).unwrap_or_else(|e| panic!("our reader: {e}"));
    assert_eq!(p.header.version, "1.0.2");
    let done = err
        .matches("Dumping Java heap (VM dumper) ... done.")
        .count();
    assert_eq!(p.heap_dumps.len(), done, "{err}");
    assert!(
        (2..=13).contains(&done),
        "{done} dumps for 12 SIGQUITs and the exit"
    );
    check_vm_dumps(&p, &histo);
    assert!(
        vm_scratch_left(&dir).is_empty(),
        "{:?}",
        vm_scratch_left(&dir)
    );
}

/// Symlinks planted at names like those of the VM's private directory
/// (one to a directory of the user's, one to a name that does not exist)
/// are left alone: nothing is written through them or removed with them,
/// and the dump is the VM dumper's, whole (crates/hprof-e2e/tests/heap_dump_hostile.rs
/// plants every name of the old rule, as another user).
#[test]
fn symlinks_at_the_vm_dump_directory_names_are_not_followed() {
    let run = Running::start("hd_vm_links", &[], "heap=dump,format=b,file=out.hprof");
    let histo = common::jmap_histo_live(run.pid());
    let precious = run.dir.join("precious");
    std::fs::create_dir_all(&precious).unwrap();
    std::fs::write(precious.join("keep"), b"keep me").unwrap();
    let nowhere = run.dir.join("created-through-link");
    let base = format!("out.hprof.vmdump.{}", run.pid());
    std::os::unix::fs::symlink(&precious, run.dir.join(format!("{base}.0"))).unwrap();
    std::os::unix::fs::symlink(&nowhere, run.dir.join(format!("{base}.1"))).unwrap();
    send_sigquit(run.pid());
    common::wait_for_dumps(&run.dir.join("out.hprof"), 1);
    let (dir, err) = run.finish();
    assert_eq!(
        err.matches("Dumping Java heap (VM dumper) ... done.")
            .count(),
        2,
        "{err}"
    );
    assert!(!err.contains("HPROF ERROR"), "{err}");
    let names: Vec<String> = std::fs::read_dir(&precious)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["keep"]);
    assert_eq!(std::fs::read(precious.join("keep")).unwrap(), b"keep me");
    assert!(!nowhere.exists(), "created through the link");
    for n in [0, 1] {
        let link = dir.join(format!("{base}.{n}"));
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
    }
    let p = read_all(dir.join("out.hprof")).unwrap_or_else(|e| panic!("our reader: {e}"));
    assert_eq!(p.heap_dumps.len(), 2);
    check_vm_dumps(&p, &histo);
}

/// The text checks both dumpers' output must pass: the original's layout
/// (ROOT lines, then OBJ and ARR, then CLS, superclasses first), jmap's
/// counts of the fixture's classes, object arrays' text length, reference
/// field lines, a class with its static references.
fn check_text_dump(dump: &str, histo: Option<&HashMap<String, u64>>) {
    let lines: Vec<&str> = dump.lines().collect();
    // The VM's text used to follow the VM's order: CLS first, ROOT last.
    let rank = |l: &&str| match l.split(' ').next() {
        Some("ROOT") => Some(0),
        Some("OBJ" | "ARR") => Some(1),
        Some("CLS") => Some(2),
        _ => None,
    };
    let ranked: Vec<(usize, &str)> = lines.iter().filter_map(|l| Some((rank(l)?, *l))).collect();
    assert!(ranked.len() > 3000);
    if let Some(w) = ranked.windows(2).find(|w| w[0].0 > w[1].0) {
        panic!(
            "out of the original's order: {:?} before {:?}",
            w[0].1, w[1].1
        );
    }
    for kind in ["ROOT", "OBJ", "ARR", "CLS"] {
        assert!(lines.iter().any(|l| l.starts_with(kind)), "no {kind} line");
    }
    let cls_pos = |name: &str| {
        dump.find(&format!("(name={name},"))
            .unwrap_or_else(|| panic!("CLS {name}"))
    };
    assert!(cls_pos("java.lang.Object") < cls_pos("HeapGraph$Base"));
    assert!(
        cls_pos("HeapGraph$Base") < cls_pos("HeapGraph$Node"),
        "superclasses first"
    );
    let objs = |class: &str| {
        lines
            .iter()
            .filter(|l| l.starts_with("OBJ ") && l.contains(&format!("class={class}@")))
            .count() as u64
    };
    for (class, n) in &FIXTURE_CLASSES[..3] {
        assert_eq!(objs(class), *n, "{class}");
        if let Some(h) = histo {
            assert_eq!(
                Some(objs(class)),
                h.get(*class).copied(),
                "jmap count of {class}"
            );
        }
    }
    let node_arr: Vec<&&str> = lines
        .iter()
        .filter(|l| l.starts_with("ARR ") && l.contains("elem type=HeapGraph$Node[]@"))
        .collect();
    assert_eq!(node_arr.len(), 1);
    assert!(node_arr[0].contains("nelems=1000,"), "{}", node_arr[0]);
    let node_blocks: Vec<&str> = dump
        .split("\nOBJ ")
        .filter(|b| b.contains("class=HeapGraph$Node@"))
        .collect();
    assert_eq!(node_blocks.len(), 1000);
    assert_eq!(
        node_blocks
            .iter()
            .filter(|b| b.contains("\n\tnext\t\t"))
            .count(),
        999
    );
    assert!(node_blocks.iter().all(|b| b.contains("\n\tbaseRef\t")));
    // Superclass side first: baseRef (Base) before next (Node).
    assert!(node_blocks
        .iter()
        .filter(|b| b.contains("\tnext"))
        .all(|b| b.find("baseRef") < b.find("\tnext")));
    let holder = dump
        .split("\nCLS ")
        .find(|c| c.contains("(name=HeapGraph$Holder,"))
        .expect("CLS Holder");
    assert!(holder.contains("\tstatic so\t"), "{holder}");
    assert!(holder.contains("\tstatic ia\t"));
}

#[test]
fn vm_dumper_text_dump_matches_jmap() {
    let run = Running::start("hd_vm_txt", &[], "heap=dump,file=out.txt");
    let histo = common::jmap_histo_live(run.pid());
    let (dir, err) = run.finish();
    assert!(
        err.contains("Dumping Java heap (VM dumper) ... done."),
        "{err}"
    );
    assert!(!err.contains("HPROF ERROR"), "{err}");
    assert!(vm_scratch_left(&dir).is_empty());
    let text = std::fs::read_to_string(dir.join("out.txt")).unwrap();
    assert_eq!(text.matches("\nHEAP DUMP BEGIN (").count(), 1);
    let begin = text.find("\nHEAP DUMP BEGIN (").unwrap() + 1;
    let end = text.find("\nHEAP DUMP END\n").expect("HEAP DUMP END");
    let dump = &text[begin..end];
    check_text_dump(dump, Some(&histo));
    let lines: Vec<&str> = dump.lines().collect();
    assert!(lines
        .iter()
        .any(|l| l.starts_with("ROOT ") && l.contains("(kind=<thread>")));
    assert!(lines
        .iter()
        .any(|l| l.starts_with("ROOT ") && l.contains("(kind=<Java stack>")));
    // Every trace a record of the dump names is one the file has (HotSpot's
    // own serials were printed as they were before: trace=1 on every
    // object, thread roots naming traces that were never written).
    let defined: std::collections::HashSet<u32> = text
        .lines()
        .filter_map(|l| l.strip_prefix("TRACE ")?.strip_suffix(':')?.parse().ok())
        .collect();
    let mut named = 0;
    for l in &lines {
        for part in l.split("trace=").skip(1) {
            let n: u32 = part
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|d| d.parse().ok())
                .unwrap_or_else(|| panic!("{l}"));
            // A JNI global reference has no trace (0).
            if n != 0 {
                named += 1;
                assert!(defined.contains(&n), "TRACE {n} is not in the file: {l}");
            }
        }
    }
    assert!(named > 1000, "{named}");
    let thread_root = lines
        .iter()
        .find(|l| l.starts_with("ROOT ") && l.contains("(kind=<thread>"))
        .unwrap();
    assert!(!thread_root.contains("trace=300000"), "{thread_root}");
}

#[test]
fn text_dump_gives_the_same_counts() {
    let run = Running::start("hd_txt", &[], "heap=dump,file=out.txt,dumper=jvmti");
    let (dir, _) = run.finish();
    let text = std::fs::read_to_string(dir.join("out.txt")).unwrap();
    let begin = text.find("\nHEAP DUMP BEGIN (").expect("HEAP DUMP BEGIN") + 1;
    let end = text.find("\nHEAP DUMP END\n").expect("HEAP DUMP END");
    let dump = &text[begin..end];
    let lines: Vec<&str> = dump.lines().collect();
    assert!(
        lines[1].starts_with("ROOT 0 (kind=<thread>, id=200000, trace="),
        "{}",
        lines[1]
    );
    check_text_dump(dump, None);
    // Primitive arrays: sz = element bytes, e.g. Holder.da (3 doubles).
    assert!(lines.iter().any(|l| l.starts_with("ARR ")
        && l.contains("(sz=24, trace=")
        && l.contains("nelems=3, elem type=double[])")));
}

#[test]
fn gzip_eight_byte_ids_segments_and_true_array_length() {
    // The VM's dumper (heap=dump, binary, 8-byte IDs), 1.0.2 segments,
    // through gzip; HotSpot writes object arrays at their full length
    // (what arraylen=y asks of the walk).
    let run = Running::start(
        "hd_gz",
        &["-Xmx2g"],
        "heap=dump,format=b,file=out.hprof.gz,idsize=8,arraylen=y",
    );
    let (dir, _) = run.finish();
    let raw = std::fs::read(dir.join("out.hprof.gz")).unwrap();
    assert_eq!(&raw[..2], &[0x1f, 0x8b], "gzip stream");
    let p = read_all(dir.join("out.hprof.gz")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.header.id_size, 8);
    assert_eq!(p.header.version, "1.0.2");
    assert_eq!(p.heap_dumps.len(), 1);
    let d = &p.heap_dumps[0];
    assert!(d.segmented && d.ended);
    check_graph(&p, d, true);
    assert_eq!(
        node_array_len(&p, d),
        1200,
        "arraylen=y keeps trailing nulls"
    );
    let s = statics(&p, d, "HeapGraph$Holder");
    let Value::Object(empty) = s["empty"] else {
        panic!()
    };
    assert_eq!(
        d.object_arrays
            .iter()
            .find(|a| a.array_id == empty)
            .unwrap()
            .length,
        5
    );
    assert!(
        d.class_dumps.iter().all(|c| c.constant_pool.is_empty()),
        "idsize=8: HotSpot-style class dumps"
    );
    let mut plain = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&raw[..]), &mut plain).unwrap();
    check_with_jvm_hprof(&plain, &p, &[1000]);
}

#[test]
fn primfields_and_primarrays_off() {
    let run = Running::start(
        "hd_noprim",
        &[],
        "heap=dump,format=b,file=out.hprof,primfields=n,primarrays=n",
    );
    let (dir, _) = run.finish();
    let p = read_all(dir.join("out.hprof")).unwrap();
    let d = &p.heap_dumps[0];
    check_graph(&p, d, false);
    assert!(
        d.primitive_arrays.iter().all(|a| a.length == 0),
        "primarrays=n: no elements"
    );
    let s = statics(&p, d, "HeapGraph$Holder");
    assert_eq!(s["si"], Value::Int(0));
    assert!(
        matches!(s["ia"], Value::Object(id) if id != 0),
        "references are still written"
    );
}

/// `logflags=0x4` with a binary heap dump: at exit the agent reads its own
/// file back and writes what it holds to java.hprof.check.txt.
#[test]
fn logflags_4_checks_the_binary_output_at_exit() {
    let dir = common::scratch("check_binary");
    let r = common::run_with_agent_bounded(
        &dir,
        "heap=dump,format=b,logflags=0x4,file=out.hprof",
        "Hello",
        &[],
        Duration::from_secs(60),
    );
    assert!(r.output.status.success(), "{}", common::stderr(&r.output));
    let check = std::fs::read_to_string(dir.join("java.hprof.check.txt")).expect("check file");
    let p = read_all(dir.join("out.hprof")).unwrap();
    let d = &p.heap_dumps[0];
    assert!(check.contains("header: 1.0."), "{check}");
    // One count line per heap record (the VM's dumper writes several
    // segments): their sum is the dump.
    let mut sum = [0u64; 5];
    for line in check
        .lines()
        .filter(|l| l.trim_start().starts_with("roots "))
    {
        let n: Vec<u64> = line
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|w| w.parse().ok())
            .collect();
        for (s, v) in sum.iter_mut().zip(n) {
            *s += v;
        }
    }
    let want = [
        d.roots.len(),
        d.class_dumps.len(),
        d.instances.len(),
        d.object_arrays.len(),
        d.primitive_arrays.len(),
    ]
    .map(|n| n as u64);
    assert_eq!(sum, want, "{check}");
    assert!(
        check.ends_with(&format!("{} records, no error\n", p.records.len())),
        "{check}"
    );
}

/// The `logflags=1` phase lines of the VM's dumps, in order.
fn vm_phase_lines(err: &str) -> Vec<&str> {
    err.lines()
        .filter(|l| l.contains("heap dump phases (VM dumper)"))
        .collect()
}

/// The first dump into a binary 1.0.2 file: the VM's file becomes the
/// output (the records written before it, CPU samples among them, stay at
/// its beginning; the exit's records follow it), keeping the output's mode
/// and name; a later dump is tagged with its number as its records are
/// copied (they used to be decoded and translated one by one: 1.5x the
/// VM's own dump). Every reader finds both dumps.
#[test]
fn the_vm_dump_file_becomes_the_output_and_later_dumps_are_tagged() {
    let run = Running::start(
        "hd_vm_adopt",
        &["-Xmx2100m"],
        "heap=dump,cpu=samples,format=b,logflags=1,file=out.hprof",
    );
    let histo = common::jmap_histo_live(run.pid());
    let path = run.dir.join("out.hprof");
    let before = std::fs::metadata(&path).unwrap();
    send_sigquit(run.pid());
    common::wait_for_dumps(&path, 1);
    let (dir, err) = run.finish();
    no_error_nothing_left(&dir, &err);
    let phases = vm_phase_lines(&err);
    assert_eq!(phases.len(), 2, "{err}");
    assert!(
        phases[0].contains("heap records the VM's file became the output"),
        "{}",
        phases[0]
    );
    assert!(
        phases[1].contains("heap records tagged as they were copied"),
        "{}",
        phases[1]
    );
    assert!(
        vm_scratch_left(&dir).is_empty(),
        "{:?}",
        vm_scratch_left(&dir)
    );
    let meta = std::fs::metadata(&path).unwrap();
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    assert_ne!(meta.ino(), before.ino(), "a new file under the same name");
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let p = read_all(&path).unwrap_or_else(|e| panic!("our reader: {e}"));
    assert_eq!(p.header.version, "1.0.2");
    assert_eq!(p.heap_dumps.len(), 2);
    check_vm_dumps(&p, &histo);
    // The dumper is called without looking up the platform MXBean, which
    // loads every platform MBean provider (and, on JDK 11-21, the lambda
    // machinery) into the program, 35-75 ms of the first dump that `jcmd
    // GC.heap_dump` does not pay, and leaves them in every later dump. JDK
    // 11 has no other way in (docs/heap_dump.md, "The VM's dumper"): its
    // dumps hold the one provider the lookup made.
    let providers = if common::java_major() >= 17 { 0 } else { 1 };
    for (k, d) in p.heap_dumps.iter().enumerate() {
        let c = common::instance_counts(&p, d);
        assert_eq!(
            c.get("com.sun.management.internal.PlatformMBeanProviderImpl")
                .copied()
                .unwrap_or(0),
            providers,
            "dump {k}"
        );
    }
    // At most one filler record, which nothing names: its text says what
    // it is, as much as fits, then blanks.
    let filler = hprof_core::vocab::id_space::FILLER;
    if let Some(t) = p.string(filler) {
        assert!(
            "hprof-rs: room before the VM's heap records".starts_with(t.trim_end_matches(' ')),
            "{t:?}"
        );
    }
    // CPU SAMPLES at the exit come after both dumps; CONTROL SETTINGS
    // (written at start-up) before them.
    let first_heap = p.heap_dumps[0].offset;
    let tags_at = |t: u8| {
        p.records
            .iter()
            .filter(move |r| r.tag == t)
            .map(|r| r.offset)
    };
    assert!(tags_at(hprof_core::vocab::tag::CONTROL_SETTINGS).all(|o| o < first_heap));
    assert!(tags_at(hprof_core::vocab::tag::CPU_SAMPLES).any(|o| o > p.heap_dumps[1].offset));
    let bytes = std::fs::read(&path).unwrap();
    check_with_jvm_hprof(&bytes, &p, &[1000, 1000]);
    check_twice_with_slurp(&path);
}

/// Where the output's name is a symlink the VM's file cannot take its
/// place: the heap records are copied as they are (by the kernel), the
/// symlink stays, and the dump is the same.
#[test]
fn a_symlinked_output_gets_the_vm_dump_copied() {
    let dir = common::scratch("hd_vm_symlink_out");
    std::fs::create_dir_all(dir.join("real")).unwrap();
    std::os::unix::fs::symlink(dir.join("real/out.hprof"), dir.join("link.hprof")).unwrap();
    let agent = format!(
        "-agentpath:{}=heap=dump,format=b,logflags=1,file=link.hprof",
        common::agent_path().display()
    );
    let out = Command::new(common::java())
        .current_dir(&dir)
        .args(["-Xmx2100m", &agent, "-cp"])
        .arg(common::fixture_classes())
        .args(["HeapGraph", "marker", "0"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let phases = vm_phase_lines(&err);
    assert_eq!(phases.len(), 1, "{err}");
    assert!(
        phases[0]
            .contains("copied as they are (not adopted: the output's name is a symbolic link)"),
        "{}",
        phases[0]
    );
    assert!(std::fs::symlink_metadata(dir.join("link.hprof"))
        .unwrap()
        .file_type()
        .is_symlink());
    let p = read_all(dir.join("real/out.hprof")).unwrap_or_else(|e| panic!("our reader: {e}"));
    assert_eq!(p.heap_dumps.len(), 1);
    let d = &p.heap_dumps[0];
    assert!(d.ended);
    check_graph(&p, d, true);
    let bytes = std::fs::read(dir.join("real/out.hprof")).unwrap();
    check_with_jvm_hprof(&bytes, &p, &[1000]);
}

/// The output file removed while the program runs: the dumps go on into
/// the removed file, as the original's did, and one warning says so.
#[test]
fn a_removed_output_file_is_warned_about() {
    let run = Running::start(
        "hd_vm_removed",
        &["-Xmx2100m"],
        "heap=dump,format=b,file=out.hprof",
    );
    std::fs::remove_file(run.dir.join("out.hprof")).unwrap();
    let (dir, err) = run.finish();
    assert_eq!(
        err.matches("HPROF WARNING: out.hprof was removed while the program ran")
            .count(),
        1,
        "{err}"
    );
    no_error_nothing_left(&dir, &err);
}
