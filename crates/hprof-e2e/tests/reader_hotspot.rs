//! The reader against a real HotSpot heap dump: compiles and runs the
//! fixture java-fixtures/reader/MarkerDump.java, which holds 1234 `Marker`
//! and 10 `SubMarker` objects and dumps its own heap through
//! HotSpotDiagnosticMXBean.dumpHeap, then reads that dump.
//!
//! Needs `javac` and `java` on PATH; without them the tests say so and pass.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use hprof_core::reader::{
    histogram, open_path, read_all, HeapSubRecord, HistoEntry, HprofReader, ReadOptions,
    RecordBody, RootKind, Value,
};

const MARKERS: u64 = 1234;
const SUB_MARKERS: u64 = 10;

/// True if `tool probe_arg` runs and succeeds.
fn have(tool: &str, probe_arg: &str) -> bool {
    Command::new(tool)
        .arg(probe_arg)
        .output()
        .is_ok_and(|o| o.status.success())
}

fn run(cmd: &mut Command) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Compiles the fixture once per test binary; `None` when no JDK is present.
fn classes() -> Option<&'static Path> {
    static CLASSES: OnceLock<Option<PathBuf>> = OnceLock::new();
    CLASSES
        .get_or_init(|| {
            if !have("javac", "-version") || !have("java", "-version") {
                eprintln!("reader_hotspot: javac/java not on PATH, skipping HotSpot dump tests");
                return None;
            }
            let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("reader-hotspot");
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            let src = Path::new(env!("HPROF_REPO")).join("java-fixtures/reader/MarkerDump.java");
            let classes = dir.join("classes");
            run(Command::new("javac").arg("-d").arg(&classes).arg(&src));
            Some(classes)
        })
        .as_deref()
}

/// The fixture's own dump (HotSpotDiagnosticMXBean), made once per test
/// binary.
fn dump() -> Option<&'static Path> {
    static DUMP: OnceLock<Option<PathBuf>> = OnceLock::new();
    DUMP.get_or_init(|| {
        let classes = classes()?;
        let hprof = classes.parent().unwrap().join("marker.hprof");
        run(Command::new("java")
            .args(["-Xmx64m", "-XX:+UseSerialGC", "-cp"])
            .arg(classes)
            .arg("MarkerDump")
            .arg(&hprof));
        Some(hprof)
    })
    .as_deref()
}

fn row<'a>(h: &'a [HistoEntry], name: &str) -> &'a HistoEntry {
    h.iter()
        .find(|e| e.class_name == name)
        .unwrap_or_else(|| panic!("no histogram row for {name}"))
}

#[test]
fn histogram_counts_markers_exactly() {
    let Some(path) = dump() else { return };
    let r = open_path(path).unwrap();
    assert_eq!(r.header().version, "1.0.2");
    assert_eq!(r.header().id_size, 8);
    let h = histogram(r).unwrap();
    let marker = row(&h, "Marker");
    assert_eq!(marker.instances, MARKERS);
    // int + long + reference + boolean: align8(12 + 4 + 8 + 4 + 1) = 32
    assert_eq!(marker.shallow_bytes, MARKERS * 32);
    let sub = row(&h, "SubMarker");
    assert_eq!(sub.instances, SUB_MARKERS);
    // ... + double: align8(29 + 8) = 40
    assert_eq!(sub.shallow_bytes, SUB_MARKERS * 40);
    assert!(row(&h, "Marker[]").instances >= 1);
    // Internal names (java/lang/String, [I, [Ljava/lang/String;) come out Java style.
    for name in [
        "java.lang.String",
        "int[]",
        "byte[]",
        "java.lang.String[]",
        "java.lang.Object[]",
        "java.util.ArrayList",
    ] {
        assert!(row(&h, name).instances > 0, "{name}");
    }
    assert!(h
        .iter()
        .all(|e| !e.class_name.contains('/') && !e.class_name.starts_with('[')));
    assert!(h
        .windows(2)
        .all(|w| w[0].shallow_bytes >= w[1].shallow_bytes));
}

#[test]
fn read_all_decodes_marker_fields() {
    let Some(path) = dump() else { return };
    let p = read_all(path).unwrap();
    assert_eq!(p.heap_dumps.len(), 1);
    let d = &p.heap_dumps[0];
    assert!(d.segmented && d.ended);

    // HotSpot style: internal class names, class serials from 1.
    let names: Vec<&str> = p.classes.iter().filter_map(|c| c.name.as_deref()).collect();
    for raw in [
        "java/lang/String",
        "[I",
        "[Ljava/lang/String;",
        "Marker",
        "SubMarker",
        "[LMarker;",
    ] {
        assert!(names.contains(&raw), "no LOAD CLASS for {raw}");
    }
    assert!(p.classes.iter().any(|c| c.serial == 1));

    // HotSpot writes every CLASS DUMP before the first object.
    let first_object = d.instances.iter().map(|i| i.offset).min().unwrap();
    assert!(d.class_dumps.iter().all(|c| c.offset < first_object));
    assert!(d
        .roots
        .iter()
        .any(|r| matches!(r.kind, RootKind::ThreadObject { .. })));
    assert!(d.roots.iter().any(|r| r.kind == RootKind::StickyClass));

    let marker = p.class_by_name("Marker").unwrap().class_id;
    let sub = p.class_by_name("SubMarker").unwrap().class_id;
    assert_eq!(d.class_dump(sub).unwrap().super_class_id, marker);
    let markers: Vec<_> = d.instances_of(marker).collect();
    assert_eq!(markers.len() as u64, MARKERS);
    let ids: HashSet<u64> = markers.iter().map(|i| i.object_id).collect();

    let layouts = d.layouts(p.header.id_size);
    let mut serials = Vec::new();
    let mut nulls = 0;
    for inst in &markers {
        let f: HashMap<String, Value> = p.field_values(d, inst).unwrap().into_iter().collect();
        let serial = f["serial"].as_i64().unwrap();
        assert_eq!(f["twice"], Value::Long(2 * serial));
        assert_eq!(f["even"], Value::Boolean(serial % 2 == 0));
        match f["prev"] {
            Value::Object(0) => nulls += 1,
            Value::Object(id) => assert!(ids.contains(&id), "prev of {serial} is not a Marker"),
            v => panic!("prev is {v:?}"),
        }
        serials.push(serial);
        assert_eq!(layouts.decode_instance(inst).unwrap().len(), 4);
    }
    serials.sort();
    assert_eq!(serials, (0..MARKERS as i64).collect::<Vec<_>>());
    assert_eq!(nulls, 1);

    // A subclass instance carries its own field, then the inherited ones
    // (HotSpot lists each class's fields in its own order, not source order).
    let s = d.instances_of(sub).next().unwrap();
    let f = p.field_values(d, s).unwrap();
    assert_eq!(f[0].0, "weight");
    let mut inherited: Vec<&str> = f[1..].iter().map(|(n, _)| n.as_str()).collect();
    inherited.sort();
    assert_eq!(inherited, ["even", "prev", "serial", "twice"]);
    let f: HashMap<String, Value> = f.into_iter().collect();
    assert_eq!(f["twice"], Value::Long(2 * f["serial"].as_i64().unwrap()));

    // Every instance in the dump decodes exactly against its class chain.
    for inst in &d.instances {
        layouts.decode_instance(inst).unwrap();
    }

    // MarkerDump.numbers = {7, 8, 9}
    let want = [Value::Int(7), Value::Int(8), Value::Int(9)];
    assert!(d
        .primitive_arrays
        .iter()
        .filter_map(|a| a.elements())
        .any(|e| e == want));
}

#[test]
fn skip_mode_streaming_matches_full_read_and_gzip() {
    let Some(path) = dump() else { return };
    // Counts sub-records by kind, and heap dump segments.
    let count = |r: &mut HprofReader<std::fs::File>| {
        let mut n = [0u64; 5];
        let mut segments = 0;
        while let Some(rec) = r.next_record().unwrap() {
            if let RecordBody::HeapDumpStart { segment } = rec.body {
                assert!(segment);
                segments += 1;
                while let Some(s) = r.next_heap_sub_record().unwrap() {
                    n[match s {
                        HeapSubRecord::Root(_) => 0,
                        HeapSubRecord::ClassDump(_) => 1,
                        HeapSubRecord::InstanceDump(_) => 2,
                        HeapSubRecord::ObjectArrayDump(_) => 3,
                        HeapSubRecord::PrimitiveArrayDump(_) => 4,
                    }] += 1;
                }
            }
        }
        (n, segments)
    };
    let f = || std::fs::File::open(path).unwrap();
    let full = count(&mut HprofReader::new(f()).unwrap());
    let skip = count(&mut HprofReader::with_options(f(), ReadOptions::skip_bodies()).unwrap());
    assert_eq!(full, skip);
    assert!(full.1 >= 1);

    let gz_path = path.with_extension("flate2.hprof.gz");
    {
        let mut enc = flate2::write::GzEncoder::new(
            std::fs::File::create(&gz_path).unwrap(),
            flate2::Compression::fast(),
        );
        std::io::copy(&mut f(), &mut enc).unwrap();
        enc.finish().unwrap();
    }
    let gz = open_path(&gz_path).unwrap();
    assert!(gz.is_gzip());
    assert_eq!(
        histogram(gz).unwrap(),
        histogram(open_path(path).unwrap()).unwrap()
    );
}

/// Cross-check with the independent `jvm-hprof` crate: the same number of
/// instances and arrays per class object ID, and of primitive arrays per
/// element type.
#[test]
fn instance_counts_agree_with_jvm_hprof() {
    use jvm_hprof::heap_dump::SubRecord;
    let Some(path) = dump() else { return };
    let bytes = std::fs::read(path).unwrap();
    let hprof = jvm_hprof::parse_hprof(&bytes).unwrap();
    let mut theirs: HashMap<u64, u64> = HashMap::new();
    let mut theirs_prim: HashMap<String, u64> = HashMap::new();
    for rec in hprof.records_iter() {
        let rec = rec.unwrap();
        let Some(seg) = rec.as_heap_dump_segment() else {
            continue;
        };
        for sub in seg.unwrap().sub_records() {
            match sub.unwrap() {
                SubRecord::Instance(i) => *theirs.entry(i.class_obj_id().id()).or_default() += 1,
                SubRecord::ObjectArray(a) => {
                    *theirs.entry(a.array_class_obj_id().id()).or_default() += 1
                }
                SubRecord::PrimitiveArray(a) => {
                    let name = format!("{}[]", a.primitive_type().java_type_name());
                    *theirs_prim.entry(name).or_default() += 1
                }
                _ => {}
            }
        }
    }
    let h = histogram(open_path(path).unwrap()).unwrap();
    let ours: HashMap<u64, u64> = h
        .iter()
        .filter_map(|e| e.class_id.map(|c| (c, e.instances)))
        .collect();
    let ours_prim: HashMap<String, u64> = h
        .iter()
        .filter(|e| e.class_id.is_none())
        .map(|e| (e.class_name.clone(), e.instances))
        .collect();
    assert_eq!(ours, theirs);
    assert_eq!(ours_prim, theirs_prim);
    assert!(ours.values().sum::<u64>() > MARKERS);
}

/// HotSpot's own gzip output (`jcmd PID GC.heap_dump -gz=1`: many gzip
/// members back to back).
#[test]
fn hotspot_gzip_dump_is_read() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let Some(classes) = classes() else { return };
    if !have("jcmd", "-h") {
        eprintln!("reader_hotspot: jcmd not on PATH, skipping the gzip dump test");
        return;
    }
    let path = classes.parent().unwrap().join("marker-jcmd.hprof.gz");
    let mut child = Command::new("java")
        .args(["-Xmx64m", "-XX:+UseSerialGC", "-cp"])
        .arg(classes)
        .args(["MarkerDump", "-", "wait"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready");
    let dumped = Command::new("jcmd")
        .arg(child.id().to_string())
        .arg("GC.heap_dump")
        .arg("-gz=1")
        .arg(&path)
        .output();
    drop(child.stdin.take());
    let status = child.wait().unwrap();
    let dumped = dumped.unwrap();
    assert!(
        dumped.status.success() && status.success(),
        "jcmd: {}{}",
        String::from_utf8_lossy(&dumped.stdout),
        String::from_utf8_lossy(&dumped.stderr)
    );

    let head = std::fs::read(&path).unwrap();
    assert_eq!(head[..2], hprof_core::reader::GZIP_MAGIC);
    let r = open_path(&path).unwrap();
    assert!(r.is_gzip());
    assert_eq!(r.header().id_size, 8);
    let h = histogram(r).unwrap();
    assert_eq!(row(&h, "Marker").instances, MARKERS);
    assert_eq!(row(&h, "SubMarker").instances, SUB_MARKERS);
}
