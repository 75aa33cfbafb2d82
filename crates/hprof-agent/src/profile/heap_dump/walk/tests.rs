use super::*;
use crate::format::{
    AsciiFormat, AsciiOptions, BinaryFormat, BinaryOptions, HprofVersion, IdSize, Stamp,
};
use crate::jvmti::heap::{HeapVisitor, Prim, RefDetail, Reference};
use crate::profile::heap_dump::layout::{compute, ClassDesc, FieldDesc};

struct Collect(Vec<Batch>);
impl BatchSink for Collect {
    fn submit(&mut self, b: Batch) -> Batch {
        self.0.push(b);
        Batch::default()
    }
}

const OBJECT: u32 = 100_000;
const NODE: u32 = 100_001;
const NODES: u32 = 100_002;

/// Object; Node { int v; Node next; }; Node[].
fn ctx(id_size: u8) -> Arc<DumpContext> {
    let mut descs = HashMap::new();
    let d = |serial, kind, sup, fields| ClassDesc {
        serial,
        kind,
        super_serial: sup,
        interfaces: vec![],
        fields: Some(fields),
    };
    descs.insert(OBJECT, d(OBJECT, ClassKind::Instance, None, vec![]));
    let f = |n: &str, ty, is_static| FieldDesc {
        name: n.into(),
        ty,
        is_static,
    };
    descs.insert(
        NODE,
        d(
            NODE,
            ClassKind::Instance,
            Some(OBJECT),
            vec![
                f("v", BasicType::Int, false),
                f("next", BasicType::Object, false),
                f("count", BasicType::Long, true),
            ],
        ),
    );
    descs.insert(NODES, d(NODES, ClassKind::ObjArray, Some(OBJECT), vec![]));
    let info = |serial: u32, sig: &str| {
        Some(ClassInfo {
            serial,
            object_id: 0x5000_0000 + serial as u64 - 99_000,
            signature: sig.into(),
            kind: descs[&serial].kind,
            super_serial: descs[&serial].super_serial,
            load_trace: 300_000,
            layout: compute(serial, &descs, id_size),
        })
    };
    Arc::new(DumpContext {
        id_size,
        system_trace: 300_000,
        classes: vec![
            info(OBJECT, "Ljava/lang/Object;"),
            info(NODE, "LNode;"),
            info(NODES, "[LNode;"),
        ],
        ..Default::default()
    })
}

fn class_tag(serial: u32) -> i64 {
    make_tag(TagKind::Class, serial as u64)
}

/// root -> array [a, b, null]; a.next = b; a.v = 7; b.v = -1.
fn walk(
    c: Arc<DumpContext>,
    objects: &ObjectTable,
    threads: &ThreadTable,
) -> (Vec<Batch>, WalkStats) {
    let classes = crate::tables::ClassTable::default();
    let mut w = Walker::new(
        c.clone(),
        objects,
        &classes,
        threads,
        Collect(Vec::new()),
        true,
    );
    w.root(RootRec::ThreadObject {
        obj: 0,
        thread: 200_000,
        trace: 300_000,
    });
    let (mut arr, mut a, mut b) = (0i64, 0i64, 0i64);
    fn r(
        kind: u32,
        detail: RefDetail,
        class: u32,
        tag: &mut i64,
        referrer: Option<i64>,
        rc: u32,
    ) -> Reference<'_> {
        Reference {
            kind,
            detail,
            class_tag: class_tag(class),
            referrer_class_tag: if rc == 0 { 0 } else { class_tag(rc) },
            size: 24,
            tag,
            referrer_tag: referrer,
            length: -1,
        }
    }
    w.reference(r(
        heap_ref::JNI_GLOBAL,
        RefDetail::Index(-1),
        NODES,
        &mut arr,
        None,
        0,
    ));
    let mut cls = class_tag(NODES);
    w.reference(r(
        heap_ref::CLASS,
        RefDetail::Index(-1),
        OBJECT,
        &mut cls,
        Some(arr),
        NODES,
    ));
    w.reference(r(
        heap_ref::ARRAY_ELEMENT,
        RefDetail::Index(0),
        NODE,
        &mut a,
        Some(arr),
        NODES,
    ));
    w.reference(r(
        heap_ref::ARRAY_ELEMENT,
        RefDetail::Index(1),
        NODE,
        &mut b,
        Some(arr),
        NODES,
    ));
    let mut cls = class_tag(NODE);
    w.reference(r(
        heap_ref::CLASS,
        RefDetail::Index(-1),
        OBJECT,
        &mut cls,
        Some(a),
        NODE,
    ));
    w.primitive_field(heap_ref::FIELD, 0, class_tag(NODE), a, Prim::Int(7));
    w.reference(r(
        heap_ref::FIELD,
        RefDetail::Index(1),
        NODE,
        &mut b,
        Some(a),
        NODE,
    ));
    let mut cls = class_tag(NODE);
    w.reference(r(
        heap_ref::CLASS,
        RefDetail::Index(-1),
        OBJECT,
        &mut cls,
        Some(b),
        NODE,
    ));
    w.primitive_field(heap_ref::FIELD, 0, class_tag(NODE), b, Prim::Int(-1));
    // Static of Node, reported from its mirror.
    w.primitive_field(
        heap_ref::STATIC_FIELD,
        2,
        0,
        class_tag(NODE),
        Prim::Long(99),
    );
    let (mut sink, mut stats, left) = w.finish();
    let none = vec![None; left.objects.len()];
    super::super::epilogue::write(left, &none, &c, &c, true, &mut sink, &mut stats);
    (sink.0, stats)
}

fn render(batches: &[Batch], c: &DumpContext, f: &mut dyn ProfileFormat) -> Vec<u8> {
    let mut out = Vec::new();
    f.heap_dump_begin(&mut out, Stamp::default(), &Default::default());
    for b in batches {
        b.write(c, f, &mut out);
    }
    f.heap_dump_end(&mut out, Stamp::default());
    out
}

#[test]
fn records_stream_in_visit_order_with_values() {
    let (objects, threads) = (ObjectTable::default(), ThreadTable::default());
    let c = ctx(4);
    let (batches, stats) = walk(c.clone(), &objects, &threads);
    assert_eq!(
        (
            stats.roots,
            stats.instances,
            stats.obj_arrays,
            stats.classes,
            stats.new_objects
        ),
        (2, 2, 1, 3, 3)
    );
    assert_eq!((stats.late_refs, stats.mismatched_fields), (0, 0));
    let text = String::from_utf8(render(
        &batches,
        &c,
        &mut AsciiFormat::new(AsciiOptions::default()),
    ))
    .unwrap();
    let body: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(
        body,
        [
            "ROOT 0 (kind=<thread>, id=200000, trace=300000)",
            "ROOT 50000001 (kind=<JNI global ref>, id=1, trace=300000)",
            "ARR 50000001 (sz=24, trace=300000, nelems=2, elem type=Node[]@500003ea)",
            "\t[0]\t\t50000002",
            "\t[1]\t\t50000003",
            "OBJ 50000002 (sz=24, trace=300000, class=Node@500003e9)",
            "\tnext\t\t50000003",
            "OBJ 50000003 (sz=24, trace=300000, class=Node@500003e9)",
            "CLS 500003e8 (name=java.lang.Object, trace=300000)",
            "CLS 500003e9 (name=Node, trace=300000)",
            "\tsuper\t\t500003e8",
            "CLS 500003ea (name=Node[], trace=300000)",
            "\tsuper\t\t500003e8",
            "HEAP DUMP END",
        ]
    );
}

#[test]
fn binary_values_are_big_endian_at_the_id_size() {
    let (objects, threads) = (ObjectTable::default(), ThreadTable::default());
    let c = ctx(8);
    let (batches, _) = walk(c.clone(), &objects, &threads);
    let opts = BinaryOptions {
        version: HprofVersion::V1_0_2,
        id_size: IdSize::Eight,
        ..Default::default()
    };
    let bytes = render(&batches, &c, &mut BinaryFormat::new(opts));
    // Node a: v = 7, next = b (8-byte ID, the agent's mark set), values
    // 12 bytes.
    let b_id = crate::vocab::id_space::OURS | 0x5000_0003;
    let a_values = [&[0, 0, 0, 7][..], &b_id.to_be_bytes()].concat();
    assert!(bytes.windows(a_values.len()).any(|w| w == a_values));
    // Node's static count = 99 as a long.
    assert!(bytes
        .windows(9)
        .any(|w| w[0] == 11 && w[1..] == 99u64.to_be_bytes()));
}

#[test]
fn scratch_numbers_name_objects_without_the_object_table() {
    let (objects, threads) = (ObjectTable::default(), ThreadTable::default());
    let mut c = Arc::try_unwrap(ctx(4)).unwrap();
    c.scratch_ids = true;
    c.need_sizes = true;
    let c = Arc::new(c);
    let (batches, stats) = walk(c.clone(), &objects, &threads);
    assert_eq!((stats.new_objects, stats.table_full), (3, 0));
    assert_eq!(objects.live(), 0, "no object table slot taken");
    let text = String::from_utf8(render(
        &batches,
        &c,
        &mut AsciiFormat::new(AsciiOptions::default()),
    ))
    .unwrap();
    let body: Vec<&str> = text.lines().skip(1).take(8).collect();
    assert_eq!(
        body,
        [
            "ROOT 0 (kind=<thread>, id=200000, trace=300000)",
            "ROOT 60000001 (kind=<JNI global ref>, id=1, trace=300000)",
            "ARR 60000001 (sz=24, trace=300000, nelems=2, elem type=Node[]@500003ea)",
            "\t[0]\t\t60000002",
            "\t[1]\t\t60000003",
            "OBJ 60000002 (sz=24, trace=300000, class=Node@500003e9)",
            "\tnext\t\t60000003",
            "OBJ 60000003 (sz=24, trace=300000, class=Node@500003e9)",
        ]
    );
}

/// Node loaded after the context was built: its objects and statics are
/// kept by index during the walk and written after it with the layout
/// described then, exactly as a known class's would have been.
#[test]
fn objects_of_classes_unknown_to_the_context_are_written_after_the_walk() {
    let (objects, threads) = (ObjectTable::default(), ThreadTable::default());
    let full = ctx(4);
    let mut before = Arc::try_unwrap(ctx(4)).unwrap();
    before.classes[(NODE - CLASS_SERIAL_BASE) as usize] = None;
    let before = Arc::new(before);
    let classes = crate::tables::ClassTable::default();
    for sig in ["Ljava/lang/Object;", "LNode;", "[LNode;"] {
        classes.insert(
            sig.into(),
            0x5000_03e8 + classes.len() as u32,
            300_000,
            None,
        );
    }
    // The same walk as `walk`, by hand: the array, a and b, a's fields,
    // b's field, Node's static.
    let mut w = Walker::new(
        before.clone(),
        &objects,
        &classes,
        &threads,
        Collect(Vec::new()),
        true,
    );
    let (mut arr, mut a, mut b) = (0i64, 0i64, 0i64);
    fn mk(
        kind: u32,
        i: i32,
        class: u32,
        tag: &mut i64,
        referrer: Option<i64>,
        rc: u32,
    ) -> Reference<'_> {
        Reference {
            kind,
            detail: RefDetail::Index(i),
            class_tag: class_tag(class),
            referrer_class_tag: if rc == 0 { 0 } else { class_tag(rc) },
            size: 24,
            tag,
            referrer_tag: referrer,
            length: -1,
        }
    }
    w.reference(mk(heap_ref::JNI_GLOBAL, -1, NODES, &mut arr, None, 0));
    w.reference(mk(
        heap_ref::ARRAY_ELEMENT,
        0,
        NODE,
        &mut a,
        Some(arr),
        NODES,
    ));
    w.reference(mk(
        heap_ref::ARRAY_ELEMENT,
        1,
        NODE,
        &mut b,
        Some(arr),
        NODES,
    ));
    w.primitive_field(heap_ref::FIELD, 0, class_tag(NODE), a, Prim::Int(7));
    w.reference(mk(heap_ref::FIELD, 1, NODE, &mut b, Some(a), NODE));
    w.primitive_field(heap_ref::FIELD, 0, class_tag(NODE), b, Prim::Int(-1));
    w.primitive_field(
        heap_ref::STATIC_FIELD,
        2,
        0,
        class_tag(NODE),
        Prim::Long(99),
    );
    let (mut sink, mut stats, left) = w.finish();
    assert_eq!((stats.late_objects, stats.mismatched_fields), (2, 0));
    assert_eq!(left.objects.len(), 2);
    assert_eq!(
        left.mirrors[&NODE].late_statics,
        vec![(2, LateValue::Prim(Prim::Long(99)))]
    );
    let node = full.class(NODE).unwrap().clone();
    let after = Arc::new(before.with_classes(vec![node]));
    let classes_of = vec![Some(NODE); left.objects.len()];
    let walked = sink.0.len();
    super::super::epilogue::write(
        left,
        &classes_of,
        &before,
        &after,
        true,
        &mut sink,
        &mut stats,
    );
    assert_eq!(
        (stats.instances, stats.mismatched_fields, stats.late_lost),
        (2, 0, 0)
    );
    let mut f = AsciiFormat::new(AsciiOptions::default());
    let mut out = Vec::new();
    f.heap_dump_begin(&mut out, Stamp::default(), &Default::default());
    for batch in &sink.0[..walked] {
        batch.write(&before, &mut f, &mut out);
    }
    for batch in &sink.0[walked..] {
        batch.write(&after, &mut f, &mut out);
    }
    f.heap_dump_end(&mut out, Stamp::default());
    let text = String::from_utf8(out).unwrap();
    let body: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(
        body,
        [
            "ROOT 50000001 (kind=<JNI global ref>, id=1, trace=300000)",
            "ARR 50000001 (sz=24, trace=300000, nelems=2, elem type=Node[]@500003ea)",
            "\t[0]\t\t50000002",
            "\t[1]\t\t50000003",
            "OBJ 50000002 (sz=24, trace=300000, class=Node@500003e9)",
            "\tnext\t\t50000003",
            "OBJ 50000003 (sz=24, trace=300000, class=Node@500003e9)",
            "CLS 500003e8 (name=java.lang.Object, trace=300000)",
            "CLS 500003e9 (name=Node, trace=300000)",
            "\tsuper\t\t500003e8",
            "CLS 500003ea (name=Node[], trace=300000)",
            "\tsuper\t\t500003e8",
            "HEAP DUMP END",
        ]
    );
    // The binary form carries the static value and a's int.
    let opts = BinaryOptions::default();
    let mut bf = BinaryFormat::new(opts);
    let mut out = Vec::new();
    bf.heap_dump_begin(&mut out, Stamp::default(), &Default::default());
    for batch in &sink.0[walked..] {
        batch.write(&after, &mut bf, &mut out);
    }
    bf.heap_dump_end(&mut out, Stamp::default());
    assert!(out
        .windows(9)
        .any(|w| w[0] == 11 && w[1..] == 99u64.to_be_bytes()));
    assert!(out.windows(8).any(|w| w == [0, 0, 0, 7, 0x50, 0, 0, 3]));
}
