//! The heap analyser (`hprof-rs heap`, docs/heap-analyser.md) on dumps
//! whose graph is known: the HeapShapes fixture dumped by HotSpot (`jcmd
//! GC.heap_dump`, plain and gzip), by the agent's VM dumper (two dumps in
//! one file) and by its JVMTI walk with allocation traces (`heap=all`).
//! Counts and shallow sizes are checked against `jmap -histo:live` on the
//! same JVM; retained sizes against the shallow sizes of what each object
//! dominates; dominators, referrers, paths with and without weak
//! references, strings, statics and traces against the fixture. Random
//! graphs written as dumps by hand are checked against a reference
//! computation of dominators.

use crate::common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use hprof_analysis::heap::{self as heap, CacheMode, ClassOrder, Heap, QueryError, Quiet};
use hprof_core::vocab::Value;

fn jdk_tool(name: &str) -> PathBuf {
    common::jdk_home().join("bin").join(name)
}

fn hprof_rs_bin() -> PathBuf {
    common::target_profile_dir().join("hprof-rs")
}

/// `jmap -histo:live`: class name -> (instances, bytes), summed over
/// classes of one name.
fn histo(pid: u32) -> HashMap<String, (u64, u64)> {
    let mut c = Command::new(jdk_tool("jmap"));
    c.args(["-histo:live", &pid.to_string()]);
    let r = common::run_command_bounded(c, std::time::Duration::from_secs(60));
    assert!(
        r.output.status.success(),
        "jmap: {}",
        common::stderr(&r.output)
    );
    let mut m: HashMap<String, (u64, u64)> = HashMap::new();
    for l in common::stdout(&r.output).lines() {
        let c: Vec<&str> = l.split_whitespace().collect();
        if c.len() >= 4 && c[0].ends_with(':') {
            let e = m
                .entry(hprof_core::reader::java_class_name(c[3]))
                .or_default();
            e.0 += c[1].parse::<u64>().unwrap();
            e.1 += c[2].parse::<u64>().unwrap();
        }
    }
    m
}

struct Fixture {
    child: Child,
    dir: PathBuf,
}

impl Fixture {
    fn start(name: &str, jvm_args: &[&str]) -> Fixture {
        let dir = common::scratch(name);
        let mut child = Command::new(common::java())
            .current_dir(&dir)
            .args(jvm_args)
            .arg("-cp")
            .arg(common::fixture_classes())
            .args(["HeapShapes", "marker", "120"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start java");
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.starts_with("ready"), "fixture did not start: {line:?}");
        Fixture { child, dir }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn finish(self) -> PathBuf {
        std::fs::write(self.dir.join("marker"), b"").unwrap();
        let out = self.child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "java failed: {err}");
        assert!(
            !err.contains("HPROF ERROR") && !err.contains("panicked"),
            "{err}"
        );
        self.dir
    }
}

fn open(dump: &Path, n: u32) -> Heap {
    let (ix, _) = heap::open(dump, n, CacheMode::NoCache, &Quiet)
        .unwrap_or_else(|e| panic!("{}: {e}", dump.display()));
    Heap::new(ix, dump).unwrap()
}

fn class_row(h: &Heap, name: &str) -> heap::ClassRow {
    h.classes(ClassOrder::Name)
        .into_iter()
        .filter(|r| r.class == name)
        .max_by_key(|r| r.instances)
        .unwrap_or_else(|| panic!("no class {name}"))
}

fn field(info: &heap::ObjectInfo, name: &str) -> Value {
    info.fields
        .iter()
        .chain(info.statics.iter().flatten())
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no field {name} in {:?}", info.fields))
        .value
}

fn reference(info: &heap::ObjectInfo, name: &str) -> u64 {
    match field(info, name) {
        Value::Object(id) if id != 0 => id,
        v => panic!("{name} is {v:?}"),
    }
}

/// retained(x) = shallow(x) + the retained sizes of the objects it
/// dominates, for every object below `top` (at most `limit` of them).
fn check_retained_below(h: &Heap, top: u64, limit: usize) -> usize {
    let mut stack = vec![top];
    let mut seen = 0;
    while let Some(id) = stack.pop() {
        let d = h.dominated(Some(id), 0, u64::MAX).unwrap();
        let me = h.object(id, 0).unwrap();
        let below: u64 = d.objects.iter().map(|o| o.retained).sum();
        assert_eq!(
            me.retained,
            me.shallow + below,
            "retained of 0x{id:x} ({})",
            me.class
        );
        assert_eq!(d.total as usize, d.objects.len());
        seen += 1;
        if seen < limit {
            stack.extend(d.objects.iter().map(|o| o.id));
        }
    }
    seen
}

type Histo = HashMap<String, (u64, u64)>;

/// Every fact the fixture makes knowable, on one dump of it.
/// `histos`: jmap before and after the dump (classes equal in both are
/// compared exactly); `addresses`: the dump's IDs are addresses (HotSpot's
/// dumper: it writes what the GC counts live; the JVMTI walk reaches a few
/// JDK-internal objects fewer, so only classes with the same count are
/// compared there).
fn check_shapes(h: &Heap, histos: Option<(&Histo, &Histo)>, addresses: bool) {
    let m = h.meta();
    // Counts, classes without instances included.
    for (class, n) in common::heap_shapes::INSTANCES {
        assert_eq!(class_row(h, class).instances, n, "{class}");
    }
    // Shallow sizes as jmap counts them.
    if let Some((before, after)) = histos {
        let mut ours: HashMap<String, (u64, u64)> = HashMap::new();
        for r in h.classes(ClassOrder::Name) {
            let e = ours.entry(r.class).or_default();
            e.0 += r.instances;
            e.1 += r.shallow;
        }
        let mut compared = 0;
        for (class, &counts) in before {
            // Class objects' sizes are estimates; jmap counts the heap's
            // filler objects, which HotSpot's dumper leaves out.
            if after.get(class) != Some(&counts)
                || class == "java.lang.Class"
                || class.starts_with("jdk.internal.vm.Filler")
            {
                continue;
            }
            if let Some(&got) = ours.get(class) {
                if !addresses && got.0 != counts.0 {
                    continue;
                }
                assert_eq!(
                    got, counts,
                    "{class}: ours (instances, bytes) vs jmap -histo:live"
                );
                compared += 1;
            }
        }
        assert!(
            compared >= 100,
            "only {compared} classes compared with jmap"
        );
        for class in [
            "HeapShapes$Owner",
            "HeapShapes$Leaf[]",
            "HeapShapes$Node",
            "HeapShapes$Kept",
        ] {
            assert!(
                before.contains_key(class) && ours.get(class) == before.get(class),
                "{class}"
            );
        }
    }
    if addresses {
        assert!(
            m.model_reason.starts_with("inferred from object addresses"),
            "{}",
            m.model_reason
        );
    }
    // The class object holding the statics.
    let main_class = class_row(h, "HeapShapes").id;
    let main = h.object(main_class, 100).unwrap();
    assert_eq!(main.kind, "class");
    let owner = reference(&main, "owner");
    // Exclusive ownership: 1 + 1 + 10 + 10 objects, all retained by owner.
    let o = h.object(owner, 100).unwrap();
    let leaves = h.object(reference(&o, "leaves"), 100).unwrap();
    assert_eq!(leaves.length, Some(10));
    let mut expected = o.shallow + leaves.shallow;
    for e in leaves.elements.as_ref().unwrap() {
        let Value::Object(leaf) = *e else {
            panic!("{e:?}")
        };
        let l = h.object(leaf, 10).unwrap();
        let payload = h.object(reference(&l, "payload"), 10).unwrap();
        assert_eq!(payload.length, Some(1000));
        assert_eq!(l.dominator, Some(leaves.id));
        assert_eq!(payload.dominator, Some(leaf));
        expected += l.shallow + payload.shallow;
    }
    assert_eq!(o.retained, expected);
    assert_eq!(o.dominator, Some(main_class));
    assert_eq!(check_retained_below(h, owner, 100), 22);
    // Sharing: neither holder retains the shared object.
    let a = h.object(reference(&main, "holderA"), 10).unwrap();
    let b = h.object(reference(&main, "holderB"), 10).unwrap();
    let shared = reference(&a, "held");
    assert_eq!(reference(&b, "held"), shared);
    assert_eq!((a.retained, b.retained), (a.shallow, b.shallow));
    let s = h.object(shared, 10).unwrap();
    assert_eq!(s.dominator, Some(main_class));
    let mut referrers: Vec<(u64, &str)> = s
        .referrers
        .iter()
        .map(|l| (l.id, l.field.as_str()))
        .collect();
    referrers.sort();
    let mut want = vec![(a.id, "held"), (b.id, "held")];
    want.sort();
    assert_eq!(referrers, want);
    assert_eq!(s.referrers_total, 2);
    // A 200 000-long list: each node dominates the rest.
    let head = h.object(reference(&main, "list"), 10).unwrap();
    assert_eq!(head.retained, 200_000 * head.shallow);
    let second = h.object(reference(&head, "next"), 10).unwrap();
    assert_eq!(second.dominator, Some(head.id));
    assert_eq!(second.retained, 199_999 * head.shallow);
    let mut node = second.id;
    for _ in 0..3 {
        node = reference(&h.object(node, 10).unwrap(), "next");
    }
    let p = h.path(node, true).unwrap();
    let fields: Vec<Option<&str>> = p
        .path
        .iter()
        .rev()
        .take(5)
        .map(|s| s.field.as_deref())
        .collect();
    assert_eq!(
        fields,
        [
            Some("next"),
            Some("next"),
            Some("next"),
            Some("next"),
            Some("list")
        ]
    );
    assert_eq!(p.path[p.path.len() - 6].id, main_class);
    // A class object on the way is named by the class it stands for (the
    // statics' holder), every other step by its own class only.
    assert_eq!(
        p.path[p.path.len() - 6].describes.as_deref(),
        Some("HeapShapes")
    );
    assert!(p.path[p.path.len() - 5..]
        .iter()
        .all(|s| s.describes.is_none()));
    assert_eq!(p.path.last().unwrap().id, node);
    // The list's tail, 200 000 dominators deep.
    let d = h.dominated(Some(head.id), 0, 5).unwrap();
    assert_eq!((d.total, d.objects[0].id), (1, second.id));
    // Leak suspects: the list's bytes accumulate at the first node whose
    // next retains less than 80 % of it: 3 of 4 nodes, the fourth-last
    // (value 199 996), found below whichever top retainer holds the list.
    let sus = h.suspects(0.1).unwrap();
    let in_list: Vec<&heap::Suspect> = sus
        .objects
        .iter()
        .filter(|s| s.accumulation.class == "HeapShapes$Node")
        .collect();
    assert_eq!(in_list.len(), 1, "{:?}", sus.objects);
    assert!(in_list[0].object.retained >= head.retained);
    let acc = h.object(in_list[0].accumulation.id, 10).unwrap();
    assert_eq!(field(&acc, "value"), Value::Int(199_996));
    assert_eq!(acc.retained, 4 * head.shallow);
    // A cycle of three.
    let c1 = h.object(reference(&main, "cycle"), 10).unwrap();
    let c2 = h.object(reference(&c1, "next"), 10).unwrap();
    let c3 = h.object(reference(&c2, "next"), 10).unwrap();
    assert_eq!(reference(&c3, "next"), c1.id);
    assert_eq!((c2.dominator, c3.dominator), (Some(c1.id), Some(c2.id)));
    assert_eq!(check_retained_below(h, c1.id, 100), 6);
    // Kept strongly and through a weak reference: the strong holder
    // dominates it, the reference retains nothing.
    let kept = reference(&main, "strongly");
    let weak = h.object(reference(&main, "weakly"), 10).unwrap();
    assert_eq!(reference(&weak, "referent"), kept);
    assert_eq!(weak.retained, weak.shallow);
    let k = h.object(kept, 10).unwrap();
    assert_eq!(k.dominator, Some(main_class));
    for exclude_weak in [false, true] {
        let p = h.path(kept, exclude_weak).unwrap();
        assert_eq!(p.path.last().unwrap().field.as_deref(), Some("strongly"));
    }
    // Kept only through a soft reference.
    let soft = h.object(reference(&main, "softOnly"), 10).unwrap();
    let only = reference(&soft, "referent");
    let o = h.object(only, 10).unwrap();
    assert_eq!(o.gc_roots, ["softly_reachable"]);
    assert_eq!(o.dominator, None);
    assert_eq!(soft.retained, soft.shallow);
    let p = h.path(only, false).unwrap();
    assert_eq!(p.path.last().unwrap().field.as_deref(), Some("referent"));
    assert_eq!(p.path[p.path.len() - 2].id, soft.id);
    match h.path(only, true) {
        Err(QueryError::NoAnswer(why)) => assert!(why.contains("referent"), "{why}"),
        other => panic!("a strong path to a softly reachable object: {other:?}"),
    }
    // Strings, Latin-1 and UTF-16 (or char[] on JDK 8).
    let text = |f: &str| h.object(reference(&main, f), 10).unwrap().text;
    assert_eq!(text("latin").as_deref(), Some("hello, heap"));
    assert_eq!(text("utf16").as_deref(), Some("h\u{e9}llo \u{2713}"));
    // Statics of every type.
    let st = h.object(class_row(h, "HeapShapes$Statics").id, 10).unwrap();
    let statics: HashMap<&str, Value> = st
        .statics
        .as_ref()
        .unwrap()
        .iter()
        .map(|f| (f.name.as_str(), f.value))
        .collect();
    assert_eq!(statics["z"], Value::Boolean(true));
    assert_eq!(statics["b"], Value::Byte(-7));
    assert_eq!(statics["c"], Value::Char(u16::from(b'Q')));
    assert_eq!(statics["s"], Value::Short(-1234));
    assert_eq!(statics["i"], Value::Int(123_456_789));
    assert_eq!(statics["l"], Value::Long(-9_876_543_210));
    assert_eq!(statics["f"], Value::Float(1.5));
    assert_eq!(statics["d"], Value::Double(-2.25));
    assert_eq!(statics["nothing"], Value::Object(0));
    assert_eq!(
        h.object(reference(&st, "text"), 1).unwrap().text.as_deref(),
        Some("statics")
    );
    assert_eq!(
        st.superclasses.as_ref().unwrap()[0].class,
        "java.lang.Object"
    );
    // The top of the tree holds everything.
    let top = h.dominated(None, 0, u64::MAX).unwrap();
    assert_eq!(
        top.objects.iter().map(|o| o.retained).sum::<u64>(),
        m.total_shallow
    );
    assert!(top
        .objects
        .windows(2)
        .all(|w| w[0].retained >= w[1].retained));
    // Classes' retained sizes: the fixture's own are exact.
    assert_eq!(class_row(h, "HeapShapes$Owner").retained, expected);
    assert_eq!(class_row(h, "HeapShapes$Node").retained, head.retained);
    assert_eq!(class_row(h, "HeapShapes$Cyc").retained, c1.retained);
}

fn jcmd_dump(pid: u32, path: &Path) {
    let out = Command::new(jdk_tool("jcmd"))
        .arg(pid.to_string())
        .arg("GC.heap_dump")
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success() && path.exists(),
        "jcmd: {}",
        common::stdout(&out)
    );
}

#[test]
fn hotspot_dump_plain_and_gzip() {
    let f = Fixture::start("heap_analyser_hotspot", &["-Xmx512m"]);
    let before = histo(f.pid());
    let dump = f.dir.join("heap.hprof");
    jcmd_dump(f.pid(), &dump);
    let after = histo(f.pid());
    f.finish();
    let h = open(&dump, 1);
    check_shapes(&h, Some((&before, &after)), true);
    assert!(h.sites().is_err(), "HotSpot's objects carry no traces");
    // The same dump gzip-compressed gives the same answers.
    let gz = dump.with_extension("hprof.gz");
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::fast(),
    );
    enc.write_all(&std::fs::read(&dump).unwrap()).unwrap();
    enc.finish().unwrap();
    let z = open(&gz, 1);
    assert_eq!(
        z.classes(ClassOrder::Retained),
        h.classes(ClassOrder::Retained)
    );
    let main = class_row(&z, "HeapShapes").id;
    let latin = reference(&z.object(main, 100).unwrap(), "latin");
    assert_eq!(
        z.object(latin, 10).unwrap().text.as_deref(),
        Some("hello, heap")
    );
    cli_answers(&dump);
}

/// The command line's JSON carries the names the issue lists.
fn cli_answers(dump: &Path) {
    let run = |args: &[&str]| -> serde_json::Value {
        let out = Command::new(hprof_rs_bin())
            .arg("heap")
            .arg(dump)
            .args(args)
            .arg("--json")
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {}", common::stderr(&out));
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}"))
    };
    let keys = |v: &serde_json::Value, want: &[&str]| {
        for k in want {
            assert!(v.get(k).is_some(), "no {k} in {v}");
        }
    };
    let classes = run(&["classes"]);
    let row = classes["classes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["class"] == "HeapShapes$Node")
        .unwrap();
    keys(
        row,
        &["class", "id", "instances", "shallow", "retained", "loader"],
    );
    let inst = run(&["instances", "HeapShapes$Node", "--limit", "2"]);
    keys(&inst, &["class", "total", "objects"]);
    assert_eq!(inst["total"], 200_000);
    let node = inst["objects"][0]["id"].as_str().unwrap().to_string();
    keys(&inst["objects"][0], &["id", "shallow", "retained"]);
    assert!(node.starts_with("0x"));
    let obj = run(&["object", &node]);
    keys(
        &obj,
        &[
            "id",
            "class",
            "shallow",
            "retained",
            "fields",
            "references",
            "referrers",
            "trace",
        ],
    );
    keys(&obj["fields"][0], &["name", "type", "value"]);
    keys(&obj["referrers"][0], &["id", "class", "field"]);
    let path = run(&["path", &node, "--exclude-weak"]);
    keys(&path, &["root_kind", "path"]);
    keys(&path["path"][0], &["id", "class", "field"]);
    // The list hangs from HeapShapes' statics: that step says whose.
    let holder = path["path"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["describes"] == "HeapShapes")
        .unwrap_or_else(|| panic!("no step through HeapShapes' class object: {path}"));
    assert_eq!(holder["class"], "java.lang.Class");
    let doms = run(&["dominators", "--top", "3"]);
    assert_eq!(doms["objects"].as_array().unwrap().len(), 3);
    let top = doms["objects"][0]["id"].as_str().unwrap().to_string();
    keys(
        &run(&["dominated", &top]),
        &["id", "retained", "total", "objects"],
    );
    keys(&run(&["suspects"]), &["total", "suspects", "classes"]);
    // A class object shows its statics and superclasses.
    let main = classes["classes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["class"] == "HeapShapes$Statics")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let cls = run(&["object", &main]);
    keys(&cls, &["statics", "superclasses"]);
    // No such object: an error naming it, exit status 1.
    let out = Command::new(hprof_rs_bin())
        .arg("heap")
        .arg(dump)
        .args(["object", "0x1"])
        .output()
        .unwrap();
    assert!(!out.status.success() && common::stderr(&out).contains("no object 0x1"));
}

/// The fixture run with the agent (`opts`, output `dump.hprof`), dumped by
/// SIGQUIT between two `jmap -histo:live`, then at exit: the file and the
/// two histograms.
fn sigquit_dump(name: &str, opts: &str) -> (PathBuf, Histo, Histo) {
    let opts = format!(
        "-agentpath:{}={opts},file=dump.hprof",
        common::agent_path().display()
    );
    let f = Fixture::start(name, &["-Xmx512m", &opts]);
    let before = histo(f.pid());
    let st = Command::new("kill")
        .args(["-QUIT", &f.pid().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    common::wait_for_dumps(&f.dir.join("dump.hprof"), 1);
    let after = histo(f.pid());
    let dir = f.finish();
    (dir.join("dump.hprof"), before, after)
}

#[test]
fn agent_vm_dumps_two_in_one_file() {
    let (dump, before, after) = sigquit_dump("heap_analyser_vm", "heap=dump,format=b");
    check_shapes(&open(&dump, 1), Some((&before, &after)), true);
    check_shapes(&open(&dump, 2), None, true);
    match heap::open(&dump, 3, CacheMode::NoCache, &Quiet) {
        Err(e) => assert!(e.contains("holds 2 heap dump"), "{e}"),
        Ok(_) => panic!("a third dump"),
    }
}

#[test]
fn agent_walk_dump_with_allocation_traces() {
    // arraylen=y: object arrays at their full length (the walk writes them up
    // to their last non-null element otherwise).
    let (dump, before, after) =
        sigquit_dump("heap_analyser_all", "heap=all,format=b,depth=8,arraylen=y");
    // The SIGQUIT dump, taken between the two histograms.
    let h = open(&dump, 1);
    check_shapes(&h, Some((&before, &after)), false);
    // Each object's allocation site, and bytes per site.
    let main = class_row(&h, "HeapShapes").id;
    let owner = reference(&h.object(main, 100).unwrap(), "owner");
    let trace = h.object(owner, 10).unwrap().trace.expect("a trace");
    assert_eq!(
        (trace[0].class.as_str(), trace[0].method.as_str()),
        ("HeapShapes", "makeOwner")
    );
    assert!(trace.iter().any(|f| f.method == "main"));
    let sites = h.sites().unwrap();
    let leaf_site = sites
        .iter()
        .find(|s| s.frames.first().is_some_and(|f| f.method == "makeOwner") && s.instances == 10)
        .expect("the site of the ten Leafs");
    let leaf = class_row(&h, "HeapShapes$Leaf");
    assert_eq!(leaf_site.shallow, leaf.shallow);
    // Each Leaf retains its byte[1000], allocated elsewhere (Leaf.<init>).
    assert_eq!(leaf_site.retained, leaf.retained);
    assert!(leaf_site.retained > leaf_site.shallow + 10 * 1000);
    let total: u64 = sites.iter().map(|s| s.instances).sum();
    assert_eq!(total, h.meta().objects);
    // The command line's `sites --json`: the same sites, the same figures.
    let out = Command::new(hprof_rs_bin())
        .arg("heap")
        .arg(&dump)
        .args(["sites", "--top", "100000", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v["sites"].as_array().expect("sites");
    assert_eq!(rows.len(), sites.len(), "every site");
    let row = rows
        .iter()
        .find(|r| {
            r["instances"] == 10
                && r["frames"][0]["method"] == "makeOwner"
                && r["frames"][0]["class"] == "HeapShapes"
        })
        .unwrap_or_else(|| panic!("the Leafs' site in {v}"));
    assert_eq!(row["shallow"], leaf_site.shallow);
    assert_eq!(row["retained"], leaf_site.retained);
    assert!(row["trace"].is_u64() || row["trace"].is_string(), "{row}");
    let json_total: u64 = rows.iter().map(|r| r["instances"].as_u64().unwrap()).sum();
    assert_eq!(json_total, total);
    // `site TRACE`: the site's own objects, the ten Leafs, biggest
    // retained first; an object's trace serial leads to its site.
    let at = h.site_objects(leaf_site.trace, 0, 100).unwrap();
    assert!(at.by_retained);
    assert_eq!(at.site, *leaf_site);
    assert_eq!(at.objects.len(), 10);
    assert!(at.objects.iter().all(|o| o.class == "HeapShapes$Leaf"));
    assert!(at
        .objects
        .windows(2)
        .all(|w| w[0].retained >= w[1].retained));
    let shallow: u64 = at.objects.iter().map(|o| o.shallow).sum();
    assert_eq!(shallow, leaf_site.shallow);
    let serial = h.object(owner, 10).unwrap().trace_serial.expect("a serial");
    let own = h.site_objects(serial, 0, 1000).unwrap();
    assert!(own.objects.iter().any(|o| o.id == owner), "{own:?}");
    let page = h.site_objects(leaf_site.trace, 8, 5).unwrap();
    assert_eq!(page.objects, at.objects[8..]);
    assert!(h.site_objects(u32::MAX, 0, 10).is_err());
    let out = Command::new(hprof_rs_bin())
        .arg("heap")
        .arg(&dump)
        .args([
            "site",
            &leaf_site.trace.to_string(),
            "--limit",
            "100",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<String> = at.objects.iter().map(|o| format!("0x{:x}", o.id)).collect();
    let json_ids: Vec<String> = v["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(json_ids, ids, "{v}");
    assert_eq!(v["site"]["instances"], 10);
    assert_eq!(v["by_retained"], true);
}

#[test]
fn a_saved_index_is_reused_until_the_dump_changes() {
    let dir = common::scratch("heap_analyser_cache");
    let dump = dir.join("graph.hprof");
    let g = common::synth::Graph {
        refs: vec![vec![1], vec![2], vec![]],
        roots: vec![0],
    };
    std::fs::write(&dump, common::synth::dump(&g)).unwrap();
    let (_, first) = heap::open(&dump, 1, CacheMode::Save, &Quiet).unwrap();
    assert!(first.built);
    let saved = first.path.clone().unwrap();
    assert_eq!(saved, dir.join("graph.hprof.hprof-rs-index"));
    let (ix, again) = heap::open(&dump, 1, CacheMode::Save, &Quiet).unwrap();
    assert!(!again.built, "reused");
    assert_eq!(ix.meta.objects, 6, "3 instances, 3 class objects");
    // Another dump of the same length, same second: its content differs.
    let mut g2 = g;
    g2.refs = vec![vec![2], vec![2], vec![]];
    std::fs::write(&dump, common::synth::dump(&g2)).unwrap();
    let (ix, changed) = heap::open(&dump, 1, CacheMode::Save, &Quiet).unwrap();
    assert!(changed.built, "rebuilt");
    let h = Heap::new(ix, &dump).unwrap();
    let third = h.object(common::synth::object_id(2), 0).unwrap();
    assert_eq!(third.dominator, Some(common::synth::object_id(0)));
    // A planted index (someone else's) is never read.
    let nobody = Command::new("chown")
        .args(["65534", saved.to_str().unwrap()])
        .status();
    if nobody.is_ok_and(|s| s.success()) {
        let (_, replanted) = heap::open(&dump, 1, CacheMode::Save, &Quiet).unwrap();
        assert!(replanted.built, "another user's index was used");
    }
    // In memory only: nothing written beside the dump.
    std::fs::remove_file(&saved).unwrap();
    let (_, tmp) = heap::open(&dump, 1, CacheMode::NoCache, &Quiet).unwrap();
    assert_eq!(tmp.path, None);
    assert!(!saved.exists());
}

/// Dominators by the definition, over the graph the dump was written from.
fn reference_idom(g: &common::synth::Graph) -> Vec<Option<usize>> {
    let n = g.refs.len();
    let reach = |removed: Option<usize>| {
        let mut seen = vec![false; n];
        let mut stack: Vec<usize> = g
            .roots
            .iter()
            .copied()
            .filter(|&r| Some(r) != removed)
            .collect();
        for &r in &stack {
            seen[r] = true;
        }
        while let Some(v) = stack.pop() {
            for &t in &g.refs[v] {
                if Some(t) != removed && !seen[t] {
                    seen[t] = true;
                    stack.push(t);
                }
            }
        }
        seen
    };
    let all = reach(None);
    let doms: Vec<Vec<bool>> = (0..n)
        .map(|d| {
            let r = reach(Some(d));
            (0..n).map(|v| all[v] && v != d && !r[v]).collect()
        })
        .collect();
    (0..n)
        .map(|v| {
            let strict: Vec<usize> = (0..n).filter(|&d| doms[d][v]).collect();
            strict
                .iter()
                .copied()
                .find(|&d| strict.iter().all(|&o| o == d || doms[o][d]))
        })
        .collect()
}

#[test]
fn dominators_of_random_graphs_written_as_dumps() {
    let dir = common::scratch("heap_analyser_random");
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut below = |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    for round in 0..300 {
        let n = 2 + below(20) as usize;
        let refs: Vec<Vec<usize>> = (0..n)
            .map(|_| (0..below(4)).map(|_| below(n as u64) as usize).collect())
            .collect();
        let roots: Vec<usize> = (0..1 + below(3))
            .map(|_| below(n as u64) as usize)
            .collect();
        let g = common::synth::Graph { refs, roots };
        let dump = dir.join(format!("g{round}.hprof"));
        std::fs::write(&dump, common::synth::dump(&g)).unwrap();
        let h = open(&dump, 1);
        let want = reference_idom(&g);
        let reachable: Vec<bool> = {
            let mut s = vec![false; g.refs.len()];
            let mut stack = g.roots.clone();
            while let Some(v) = stack.pop() {
                if !s[v] {
                    s[v] = true;
                    stack.extend(&g.refs[v]);
                }
            }
            s
        };
        let mut sum = 0;
        for (v, w) in want.iter().enumerate() {
            let o = h.object(common::synth::object_id(v), 0).unwrap();
            sum += o.shallow;
            if reachable[v] {
                assert_eq!(
                    o.dominator,
                    w.map(common::synth::object_id),
                    "round {round}, object {v}: {:?}",
                    g.refs
                );
                assert!(o.gc_roots.iter().all(|k| k != "unreachable"));
            } else {
                assert!(o
                    .dominator
                    .is_none_or(|d| !reachable[((d - common::synth::object_id(0)) / 32) as usize]));
            }
            check_retained_below(&h, common::synth::object_id(v), 1000);
        }
        assert!(sum <= h.meta().total_shallow);
    }
}

/// References to IDs the dump holds no object for are left out, and the
/// warning names the object holding the most of them (a JDK 17 HotSpot dump
/// has ~830, all in one Object[]: docs/heap-analyser.md).
#[test]
fn references_to_missing_objects_are_left_out_and_their_holder_named() {
    let dir = common::scratch("heap_analyser_dangling");
    // Objects 0..3; 7, 8 and 9 are not in the dump.
    let g = common::synth::Graph {
        refs: vec![vec![1, 7, 8], vec![9], vec![]],
        roots: vec![0],
    };
    let dump = dir.join("dangling.hprof");
    std::fs::write(&dump, common::synth::dump(&g)).unwrap();
    let h = open(&dump, 1);
    assert_eq!(h.meta().dangling, 3);
    let id0 = common::synth::object_id(0);
    assert!(
        h.meta().warnings.contains(&format!(
            "3 reference(s) to IDs that are no object of the dump (left out; held by 2 objects, 2 of them by {id0:#x}, a Node3)"
        )),
        "{:?}",
        h.meta().warnings
    );
    // What is left: 0 -> 1 only, so 1 is dominated by 0 and 2 is unreachable.
    let o0 = h.object(id0, 10).unwrap();
    assert_eq!(o0.references_total, 1);
    assert_eq!(o0.references[0].id, common::synth::object_id(1));
    let o1 = h.object(common::synth::object_id(1), 10).unwrap();
    assert_eq!(o1.dominator, Some(id0));
    assert_eq!(o1.references_total, 0);
}

/// Position of `needle` in `hay` (the first).
fn find(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len())
        .position(|w| w == needle)
        .expect("the pattern is in the dump")
}

#[test]
fn a_damaged_dump_gets_an_error_with_its_offset() {
    let dir = common::scratch("heap_analyser_damaged");
    let dump = dir.join("graph.hprof");
    let g = common::synth::Graph {
        refs: vec![vec![1, 2], vec![2], vec![0]],
        roots: vec![0],
    };
    let good = common::synth::dump(&g);
    let err = |bytes: &[u8]| -> String {
        std::fs::write(&dump, bytes).unwrap();
        match heap::open(&dump, 1, CacheMode::NoCache, &Quiet) {
            Err(e) => e,
            Ok(_) => panic!("a damaged dump was indexed"),
        }
    };
    // Cut anywhere in the heap record (the END record's 9 bytes follow it).
    let object0 = find(
        &good,
        &[&[0x21][..], &common::synth::object_id(0).to_be_bytes()].concat(),
    );
    for cut in [object0, object0 + 3, good.len() - 9 - 5] {
        let e = err(&good[..cut]);
        assert!(
            e.contains("graph.hprof")
                && e.contains("truncated")
                && e.contains(&format!("(input ends at offset {cut})")),
            "cut at {cut}: {e}"
        );
    }
    // An unknown sub-record where the first instance begins.
    let mut bad = good.clone();
    bad[object0] = 0x7F;
    let e = err(&bad);
    assert!(e.contains(&format!("at offset {object0}")), "{e}");
    // A heap record claiming 2^32-1 bytes: the rest of the file is cut short.
    let heap_record = find(&good, &[0x1C, 0, 0, 0, 0]);
    let mut long = good.clone();
    long[heap_record + 5..heap_record + 9].copy_from_slice(&u32::MAX.to_be_bytes());
    let e = err(&long);
    assert!(e.contains("offset"), "{e}");
    // No heap dump at all, and a dump number beyond the file's.
    let e = err(&good[..heap_record]);
    assert!(e.contains("no heap dump"), "{e}");
    std::fs::write(&dump, &good).unwrap();
    let e = heap::open(&dump, 2, CacheMode::NoCache, &Quiet)
        .err()
        .unwrap();
    assert!(e.contains("holds 1 heap dump"), "{e}");
}

#[test]
fn hostile_class_graphs_are_indexed_without_hanging() {
    let dir = common::scratch("heap_analyser_hostile");
    let dump = dir.join("graph.hprof");
    let g = common::synth::Graph {
        refs: vec![vec![1], vec![2], vec![]],
        roots: vec![0],
    };
    let mut bytes = common::synth::dump(&g);
    // Node1 becomes its own superclass: a loop the field layout and the
    // superclass chain must stop on.
    let node1 = common::synth::class_id(1).to_be_bytes();
    let at = find(&bytes, &[&[0x20][..], &node1].concat());
    let sup = at + 1 + 8 + 4;
    assert_eq!(
        bytes[sup..sup + 8],
        common::synth::OBJECT_CLASS.to_be_bytes()
    );
    bytes[sup..sup + 8].copy_from_slice(&node1);
    std::fs::write(&dump, &bytes).unwrap();
    let h = open(&dump, 1);
    assert_eq!(h.meta().objects, 6, "3 instances, 3 class objects");
    let cls = h.object(common::synth::class_id(1), 10).unwrap();
    let supers = cls.superclasses.expect("a class object's superclasses");
    assert!(supers.len() <= 3, "{supers:?}");
    let o = h.object(common::synth::object_id(0), 10).unwrap();
    assert_eq!(o.class, "Node1");
}

/// The index goes to the cache directory when it cannot be saved beside
/// the dump, and is reused from there; `--no-cache` saves nothing.
#[test]
fn the_index_falls_back_to_the_cache_directory() {
    let dir = common::scratch("heap_analyser_cache_dir");
    let dump = dir.join("graph.hprof");
    let g = common::synth::Graph {
        refs: vec![vec![1], vec![2], vec![]],
        roots: vec![0],
    };
    std::fs::write(&dump, common::synth::dump(&g)).unwrap();
    // A directory where the index would go beside the dump: even root
    // cannot put a file there.
    std::fs::create_dir(dir.join("graph.hprof.hprof-rs-index")).unwrap();
    let cache = dir.join("xdg");
    let run = |extra: &[&str]| {
        let out = Command::new(hprof_rs_bin())
            .env("XDG_CACHE_HOME", &cache)
            .arg("heap")
            .arg(&dump)
            .arg("classes")
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", common::stderr(&out));
        (common::stdout(&out), common::stderr(&out))
    };
    let saved_in = |d: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(d)
            .map(|r| r.flatten().map(|e| e.path()).collect())
            .unwrap_or_default()
    };
    let (text, log) = run(&["--no-cache"]);
    assert!(text.contains("Node1"), "{text}");
    assert!(log.contains("index not saved"), "{log}");
    assert!(
        saved_in(&cache.join("hprof-rs")).is_empty(),
        "--no-cache saved an index"
    );
    let (first, log) = run(&[]);
    assert_eq!(first, text);
    let saved = saved_in(&cache.join("hprof-rs"));
    assert_eq!(saved.len(), 1, "{saved:?}");
    assert!(
        saved[0]
            .to_string_lossy()
            .ends_with("-graph.hprof.hprof-rs-index")
            && log.contains(&format!("saved as {}", saved[0].display())),
        "{log}"
    );
    let (again, log) = run(&[]);
    assert_eq!(again, text);
    assert!(
        !log.contains("indexed"),
        "the saved index was not reused: {log}"
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&saved[0]).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "the index is the user's only: {mode:o}");
}

/// Long phases show their progress on a terminal (`script` gives the
/// command one; bsdutils is Essential in Debian), and nothing of it when
/// stderr is a pipe.
#[test]
fn progress_is_shown_on_a_terminal_only() {
    let dir = common::scratch("heap_analyser_progress");
    let dump = dir.join("graph.hprof");
    let g = common::synth::Graph {
        refs: (0..1000).map(|i| vec![(i + 1) % 1000]).collect(),
        roots: vec![0],
    };
    std::fs::write(&dump, common::synth::dump(&g)).unwrap();
    let cmd = format!(
        "{} heap {} --no-cache classes --top 1",
        hprof_rs_bin().display(),
        dump.display()
    );
    let out = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .output()
        .expect("script (bsdutils)");
    let tty = common::stdout(&out);
    assert!(out.status.success(), "{tty}");
    assert!(
        tty.contains("\rhprof-rs heap: reading the dump") && tty.contains("Node1"),
        "{tty:?}"
    );
    let piped = Command::new(hprof_rs_bin())
        .args(["heap", dump.to_str().unwrap(), "--no-cache", "classes"])
        .output()
        .unwrap();
    let err = common::stderr(&piped);
    assert!(piped.status.success() && !err.contains('\r'), "{err:?}");
    assert!(err.contains("indexed 1002 objects"), "{err}");
}

/// `diff OTHER`: per class, OTHER minus FILE.
#[test]
fn diff_of_two_dumps_per_class() {
    let dir = common::scratch("heap_analyser_diff");
    let a = common::synth::write_list(&dir.join("a.hprof"), 3);
    let b = common::synth::write_list(&dir.join("b.hprof"), 5);
    let out = Command::new(hprof_rs_bin())
        .arg("heap")
        .arg(&a)
        .args(["--no-cache", "--json", "diff"])
        .arg(&b)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v["classes"].as_array().unwrap();
    // Two more Node1 (a list node with one field); Node0 (its end) as many.
    assert_eq!(rows.len(), 1, "{v}");
    assert_eq!(rows[0]["class"], "Node1");
    assert_eq!(rows[0]["instances"], 2);
    let shallow = rows[0]["shallow"].as_i64().unwrap();
    assert!(shallow > 0);
    assert_eq!(rows[0]["retained"].as_i64().unwrap(), shallow, "{v}");
}
