//! Heap dump sub-records, 1.0.1 and 1.0.2 framing, field decoding, skip
//! mode and the histogram.

use super::*;
use crate::reader::*;

const OBJECT: u64 = 0x100;
const BASE: u64 = 0x101;
const LEAF: u64 = 0x102;
const LEAF_ARRAY: u64 = 0x103;
const INST: u64 = 0x200;

/// Leaf's instance values: its own fields (long, boolean, char, float,
/// double, byte, short), then Base's (reference, int).
fn leaf_values(id_size: u32) -> Vec<u8> {
    let mut o = Out::new(id_size);
    o.u8((-5i64) as u64)
        .u1(1)
        .u2(0x263A)
        .u4(1.5f32.to_bits())
        .u8((-2.25f64).to_bits());
    o.u1(0x80).u2(0xFFFE);
    o.id(INST).u4(1234);
    o.bytes
}

/// Every sub-record kind; returns the body and the offsets (relative to the
/// body start) of each sub-record.
fn heap_body(id_size: u32) -> (Vec<u8>, Vec<usize>) {
    let mut o = Out::new(id_size);
    let mut at = Vec::new();
    at.push(o.len());
    o.u1(0xFF).id(1);
    at.push(o.len());
    o.u1(0x01).id(2).id(0x77);
    at.push(o.len());
    o.u1(0x02).id(3).u4(200_001).u4(u32::MAX);
    at.push(o.len());
    o.u1(0x03).id(4).u4(200_001).u4(2);
    at.push(o.len());
    o.u1(0x04).id(5).u4(200_002);
    at.push(o.len());
    o.u1(0x05).id(OBJECT);
    at.push(o.len());
    o.u1(0x06).id(7).u4(200_003);
    at.push(o.len());
    o.u1(0x07).id(8);
    at.push(o.len());
    o.u1(0x08).id(0).u4(200_000).u4(300_000);
    at.push(o.len());
    o.instance(INST, 300_005, LEAF, &leaf_values(id_size));
    at.push(o.len());
    o.obj_array(0x300, 300_006, LEAF_ARRAY, &[INST, 0, INST]);
    for ty in 4u8..=11 {
        at.push(o.len());
        let size = BasicType::from_code(ty).unwrap().size(id_size) as usize;
        let data: Vec<u8> = (0..2 * size as u8).collect();
        o.prim_array(0x400 + u64::from(ty), 300_007, ty, 2, &data);
    }
    // Classes last, as our agent writes them; superclasses first.
    at.push(o.len());
    o.class_dump(OBJECT, 0, 0, &[], &[]);
    at.push(o.len());
    o.class_dump(
        BASE,
        OBJECT,
        id_size + 4,
        &[(31, 2, &[0; 8][..id_size as usize])],
        &[(21, 2), (22, 10)],
    );
    at.push(o.len());
    // Leaf: a constant pool entry, one static of each type, seven fields.
    let id0 = vec![0u8; id_size as usize];
    o.u1(0x20)
        .id(LEAF)
        .u4(300_008)
        .id(BASE)
        .id(0x500)
        .id(0x501)
        .id(0x502)
        .id(0)
        .id(0)
        .u4(26 + id_size + 4);
    o.u2(1).u2(3).u1(2).id(0x600);
    o.u2(9);
    o.id(40).u1(2).raw(&id0);
    o.id(41).u1(4).u1(1);
    o.id(42).u1(5).u2(65);
    o.id(43).u1(6).u4(0.5f32.to_bits());
    o.id(44).u1(7).u8(1e10f64.to_bits());
    o.id(45).u1(8).u1(0xFF);
    o.id(46).u1(9).u2(300);
    o.id(47).u1(10).u4(-7i32 as u32);
    o.id(48).u1(11).u8(1 << 40);
    o.u2(7);
    for (name, ty) in [
        (23, 11),
        (24, 4),
        (25, 5),
        (26, 6),
        (27, 7),
        (28, 8),
        (29, 9),
    ] {
        o.id(name).u1(ty);
    }
    at.push(o.len());
    o.class_dump(LEAF_ARRAY, OBJECT, 0, &[], &[]);
    (o.bytes, at)
}

fn names(f: &mut FileBuilder) {
    for (id, s) in [
        (21, "next"),
        (22, "count"),
        (23, "big"),
        (24, "flag"),
        (25, "c"),
        (26, "f"),
        (27, "d"),
        (28, "b"),
        (29, "s"),
        (50, "java.lang.Object"),
        (51, "Base"),
        (52, "Leaf"),
        (53, "Leaf[]"),
    ] {
        f.utf8(id, s);
    }
    f.load_class(1, OBJECT, 50)
        .load_class(2, BASE, 51)
        .load_class(3, LEAF, 52)
        .load_class(4, LEAF_ARRAY, 53);
}

fn check_dump(p: &Parsed, d: &HeapDump, id_size: u32) {
    assert_eq!(d.roots.len(), 9);
    let kinds: Vec<RootKind> = d.roots.iter().map(|r| r.kind).collect();
    assert_eq!(
        kinds,
        vec![
            RootKind::Unknown,
            RootKind::JniGlobal {
                jni_global_ref_id: 0x77
            },
            RootKind::JniLocal {
                thread_serial: 200_001,
                frame_depth: u32::MAX
            },
            RootKind::JavaFrame {
                thread_serial: 200_001,
                frame_depth: 2
            },
            RootKind::NativeStack {
                thread_serial: 200_002
            },
            RootKind::StickyClass,
            RootKind::ThreadBlock {
                thread_serial: 200_003
            },
            RootKind::MonitorUsed,
            RootKind::ThreadObject {
                thread_serial: 200_000,
                trace_serial: 300_000
            },
        ]
    );
    assert_eq!(
        d.roots.iter().map(|r| r.object_id).collect::<Vec<_>>(),
        vec![1, 2, 3, 4, 5, OBJECT, 7, 8, 0]
    );

    assert_eq!(d.instances.len(), 1);
    let inst = &d.instances[0];
    assert_eq!(
        (inst.object_id, inst.trace_serial, inst.class_id),
        (INST, 300_005, LEAF)
    );
    assert_eq!(inst.values_len as usize, 26 + id_size as usize + 4);

    let a = &d.object_arrays[0];
    assert_eq!(
        (a.array_id, a.trace_serial, a.length, a.array_class_id),
        (0x300, 300_006, 3, LEAF_ARRAY)
    );
    assert_eq!(a.elements.as_deref(), Some(&[INST, 0, INST][..]));

    assert_eq!(d.primitive_arrays.len(), 8);
    let ints = d
        .primitive_arrays
        .iter()
        .find(|a| a.element_type == BasicType::Int)
        .unwrap();
    assert_eq!(
        ints.elements().unwrap(),
        vec![Value::Int(0x0001_0203), Value::Int(0x0405_0607)]
    );
    let bools = d
        .primitive_arrays
        .iter()
        .find(|a| a.element_type == BasicType::Boolean)
        .unwrap();
    assert_eq!(
        bools.elements().unwrap(),
        vec![Value::Boolean(false), Value::Boolean(true)]
    );
    let longs = d
        .primitive_arrays
        .iter()
        .find(|a| a.element_type == BasicType::Long)
        .unwrap();
    assert_eq!(longs.data_len(), 16);
    assert_eq!(longs.data.as_ref().unwrap().len(), 16);

    assert_eq!(d.class_dumps.len(), 4);
    let leaf = d.class_dump(LEAF).unwrap();
    assert_eq!(
        (
            leaf.trace_serial,
            leaf.super_class_id,
            leaf.class_loader_id,
            leaf.signers_id,
            leaf.protection_domain_id
        ),
        (300_008, BASE, 0x500, 0x501, 0x502)
    );
    assert_eq!(
        leaf.constant_pool,
        vec![ConstantPoolEntry {
            index: 3,
            value: Value::Object(0x600)
        }]
    );
    let statics: Vec<Value> = leaf.static_fields.iter().map(|s| s.value).collect();
    assert_eq!(
        statics,
        vec![
            Value::Object(0),
            Value::Boolean(true),
            Value::Char(65),
            Value::Float(0.5),
            Value::Double(1e10),
            Value::Byte(-1),
            Value::Short(300),
            Value::Int(-7),
            Value::Long(1 << 40),
        ]
    );
    assert_eq!(leaf.instance_fields.len(), 7);
    assert_eq!(
        leaf.instance_fields[0],
        FieldDescriptor {
            name_id: 23,
            ty: BasicType::Long
        }
    );

    // Class dumps come after the instance: decode in a second step.
    let fields = p.field_values(d, inst).unwrap();
    assert_eq!(
        fields,
        vec![
            ("big".to_string(), Value::Long(-5)),
            ("flag".to_string(), Value::Boolean(true)),
            ("c".to_string(), Value::Char(0x263A)),
            ("f".to_string(), Value::Float(1.5)),
            ("d".to_string(), Value::Double(-2.25)),
            ("b".to_string(), Value::Byte(-128)),
            ("s".to_string(), Value::Short(-2)),
            ("next".to_string(), Value::Object(INST)),
            ("count".to_string(), Value::Int(1234)),
        ]
    );
    let raw = d.layouts(id_size).decode_instance(inst).unwrap();
    assert_eq!(raw[7].class_id, BASE);
    assert_eq!(raw[0].class_id, LEAF);
}

#[test]
fn heap_dump_1_0_1_every_sub_record_both_id_sizes() {
    for id_size in [4, 8] {
        let mut f = FileBuilder::new("1.0.1", id_size);
        names(&mut f);
        let (body, at) = heap_body(id_size);
        let rec_at = f.pos();
        f.record(tag::HEAP_DUMP, 99, |o| {
            o.raw(&body);
        });
        let bytes = f.bytes();

        // Streaming: offsets and tags of every sub-record.
        let mut r = reader(&bytes);
        let mut subs = Vec::new();
        while let Some(rec) = r.next_record().unwrap() {
            if let RecordBody::HeapDumpStart { segment } = rec.body {
                assert!(!segment);
                assert_eq!(
                    (rec.offset, rec.time, rec.tag),
                    (rec_at, 99, tag::HEAP_DUMP)
                );
                assert!(r.in_heap_dump());
                while let Some(s) = r.next_heap_sub_record().unwrap() {
                    subs.push(s);
                }
                assert!(!r.in_heap_dump());
                assert_eq!(r.next_heap_sub_record().unwrap(), None);
            }
        }
        let offsets: Vec<u64> = subs.iter().map(|s| s.offset()).collect();
        let want: Vec<u64> = at.iter().map(|&a| rec_at + 9 + a as u64).collect();
        assert_eq!(offsets, want);
        assert_eq!(subs[9].name(), "INSTANCE DUMP");
        assert_eq!(subs[0].name(), "ROOT UNKNOWN");

        let p = collect(reader(&bytes)).unwrap();
        assert_eq!(p.heap_dumps.len(), 1);
        let d = &p.heap_dumps[0];
        assert!(!d.segmented && d.ended);
        assert_eq!(d.records, 1);
        assert_eq!(d.sub_record_tags.len(), at.len());
        check_dump(&p, d, id_size);
    }
}

#[test]
fn heap_dump_1_0_2_segments_make_one_dump() {
    for id_size in [4, 8] {
        let mut f = FileBuilder::new("1.0.2", id_size);
        names(&mut f);
        let (body, at) = heap_body(id_size);
        // Split at sub-record boundaries into three segments.
        let (c1, c2) = (at[5], at[12]);
        for part in [&body[..c1], &body[c1..c2], &body[c2..]] {
            f.record(tag::HEAP_DUMP_SEGMENT, 0, |o| {
                o.raw(part);
            });
        }
        f.record(tag::HEAP_DUMP_END, 0, |_| {});
        // A second dump, a single segment holding one instance.
        f.record(tag::HEAP_DUMP_SEGMENT, 0, |o| {
            o.instance(INST, 1, LEAF, &leaf_values(id_size));
        });
        f.record(tag::HEAP_DUMP_END, 0, |_| {});
        let p = collect(reader(&f.bytes())).unwrap();
        assert_eq!(p.heap_dumps.len(), 2);
        let d = &p.heap_dumps[0];
        assert!(d.segmented && d.ended);
        assert_eq!(d.records, 3);
        check_dump(&p, d, id_size);
        let d2 = &p.heap_dumps[1];
        assert_eq!(
            (d2.records, d2.instances.len(), d2.class_dumps.len()),
            (1, 1, 0)
        );
        // Field decoding with class layouts from the other dump.
        let fields = d
            .layouts(id_size)
            .decode_instance(&d2.instances[0])
            .unwrap();
        assert_eq!(fields.last().unwrap().value, Value::Int(1234));
    }
}

#[test]
fn unfinished_segmented_dump_is_marked() {
    let mut f = FileBuilder::new("1.0.2", 8);
    f.record(tag::HEAP_DUMP_SEGMENT, 0, |o| {
        o.u1(0x05).id(1);
    });
    let p = collect(reader(&f.bytes())).unwrap();
    assert!(!p.heap_dumps[0].ended);
}

#[test]
fn next_record_skips_the_rest_of_a_heap_record() {
    let mut f = FileBuilder::new("1.0.1", 4);
    let (body, _) = heap_body(4);
    f.record(tag::HEAP_DUMP, 0, |o| {
        o.raw(&body);
    });
    f.record(tag::END_THREAD, 0, |o| {
        o.u4(7);
    });
    let bytes = f.bytes();
    let mut r = reader(&bytes);
    assert!(matches!(
        r.next_record().unwrap().unwrap().body,
        RecordBody::HeapDumpStart { .. }
    ));
    assert!(r.next_heap_sub_record().unwrap().is_some());
    assert_eq!(
        r.next_record().unwrap().unwrap().body,
        RecordBody::EndThread { thread_serial: 7 }
    );
    assert_eq!(r.next_heap_sub_record().unwrap(), None);
    assert_eq!(r.next_record().unwrap(), None);
}

#[test]
fn skip_bodies_keeps_lengths_and_drops_payloads() {
    let mut f = FileBuilder::new("1.0.1", 8);
    let (body, at) = heap_body(8);
    f.record(tag::HEAP_DUMP, 0, |o| {
        o.raw(&body);
    });
    let bytes = f.bytes();
    let mut r = HprofReader::with_options(&bytes[..], ReadOptions::skip_bodies()).unwrap();
    r.next_record().unwrap();
    let mut n = 0;
    while let Some(s) = r.next_heap_sub_record().unwrap() {
        n += 1;
        match s {
            HeapSubRecord::InstanceDump(i) => {
                assert_eq!(i.values, None);
                assert_eq!(i.values_len, 26 + 8 + 4);
            }
            HeapSubRecord::ObjectArrayDump(a) => {
                assert_eq!(a.elements, None);
                assert_eq!(a.length, 3);
            }
            HeapSubRecord::PrimitiveArrayDump(a) => {
                // Switched on after the first primitive array (below).
                assert_eq!(a.data.is_some(), n > 12);
                assert_eq!(a.elements().is_some(), n > 12);
                assert_eq!(a.length, 2);
            }
            HeapSubRecord::ClassDump(c) if c.class_id == LEAF => {
                assert_eq!(c.static_fields.len(), 9)
            }
            _ => {}
        }
        // Options can change between sub-records.
        if n == 12 {
            r.set_options(ReadOptions {
                primitive_array_data: true,
                ..ReadOptions::skip_bodies()
            });
        }
    }
    assert_eq!(n, at.len());
}

#[test]
fn layouts_report_bad_instances() {
    let mut l = ClassLayouts::new(4);
    let cd = |class_id, super_class_id, fields: Vec<FieldDescriptor>| ClassDump {
        offset: 0,
        class_id,
        trace_serial: 0,
        super_class_id,
        class_loader_id: 0,
        signers_id: 0,
        protection_domain_id: 0,
        reserved1: 0,
        reserved2: 0,
        instance_size: 0,
        constant_pool: vec![],
        static_fields: vec![],
        instance_fields: fields,
    };
    l.add(&cd(
        1,
        0,
        vec![FieldDescriptor {
            name_id: 9,
            ty: BasicType::Int,
        }],
    ));
    l.add(&cd(
        2,
        1,
        vec![FieldDescriptor {
            name_id: 8,
            ty: BasicType::Object,
        }],
    ));
    l.add(&cd(3, 99, vec![]));
    assert_eq!(l.field_counts(2), Some((1, 4)));
    assert_eq!(l.all_fields(2).unwrap().len(), 2);
    assert_eq!(
        l.decode_values(2, &[0, 0, 0, 5, 0, 0, 0, 6]).unwrap()[1].value,
        Value::Int(6)
    );
    assert!(l
        .decode_values(2, &[0; 7])
        .unwrap_err()
        .contains("need more"));
    assert!(l
        .decode_values(2, &[0; 9])
        .unwrap_err()
        .contains("use 8 of 9"));
    assert!(l
        .decode_values(3, &[])
        .unwrap_err()
        .contains("0x63 has no CLASS DUMP"));
    assert_eq!(l.field_counts(3), None);
    let inst = InstanceDump {
        offset: 77,
        object_id: 5,
        trace_serial: 0,
        class_id: 2,
        values_len: 3,
        values: Some(vec![0; 3]),
    };
    let e = l.decode_instance(&inst).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("corrupt INSTANCE DUMP at offset 77: "),
        "{e}"
    );
    let skipped = InstanceDump {
        values: None,
        ..inst
    };
    assert!(l.decode_instance(&skipped).is_err());
}

/// The same heap written once with our agent's Java-style names and 4-byte
/// IDs and once HotSpot style (internal names, 8-byte IDs, class dumps
/// first); both must give the same histogram.
fn histo_file(hotspot: bool) -> Vec<u8> {
    let id_size = if hotspot { 8 } else { 4 };
    let mut f = FileBuilder::new(if hotspot { "1.0.2" } else { "1.0.1" }, id_size);
    let names: [&str; 4] = if hotspot {
        ["java/lang/Object", "app/Point", "[Lapp/Point;", "[[I"]
    } else {
        ["java.lang.Object", "app.Point", "app.Point[]", "int[][]"]
    };
    for (i, n) in names.iter().enumerate() {
        f.utf8(60 + i as u64, n);
        f.load_class(1 + i as u32, OBJECT + i as u64, 60 + i as u64);
    }
    f.utf8(70, "x");
    f.utf8(71, "next");
    let point = OBJECT + 1;
    let mut classes = Out::new(id_size);
    classes.class_dump(OBJECT, 0, 0, &[], &[]);
    classes.class_dump(point, OBJECT, 4 + id_size, &[], &[(70, 10), (71, 2)]);
    classes.class_dump(OBJECT + 2, OBJECT, 0, &[], &[]);
    classes.class_dump(OBJECT + 3, OBJECT, 0, &[], &[]);
    let mut objs = Out::new(id_size);
    let vals = vec![0u8; 4 + id_size as usize];
    for i in 0..5 {
        objs.instance(0x1000 + i, 0, point, &vals);
    }
    objs.instance(0x2000, 0, OBJECT, &[]);
    objs.obj_array(0x3000, 0, OBJECT + 2, &[0x1000, 0x1001]);
    objs.obj_array(0x3001, 0, OBJECT + 3, &[0; 5]);
    objs.prim_array(0x4000, 0, 10, 3, &[0; 12]);
    objs.prim_array(0x4001, 0, 10, 0, &[]);
    objs.prim_array(0x4002, 0, 5, 5, &[0; 10]);
    // An earlier dump that the histogram must ignore.
    let mut earlier = Out::new(id_size);
    earlier.instance(0x9000, 0, OBJECT, &[]);
    if hotspot {
        f.record(tag::HEAP_DUMP_SEGMENT, 0, |o| {
            o.raw(&earlier.bytes);
        });
        f.record(tag::HEAP_DUMP_END, 0, |_| {});
        for body in [&classes.bytes, &objs.bytes] {
            f.record(tag::HEAP_DUMP_SEGMENT, 0, |o| {
                o.raw(body);
            });
        }
        f.record(tag::HEAP_DUMP_END, 0, |_| {});
    } else {
        f.record(tag::HEAP_DUMP, 0, |o| {
            o.raw(&earlier.bytes);
        });
        f.record(tag::HEAP_DUMP, 0, |o| {
            o.raw(&objs.bytes).raw(&classes.bytes);
        });
    }
    f.bytes()
}

#[test]
fn histogram_is_the_same_for_agent_and_hotspot_style_files() {
    let row = |n: &str, c: u64, b: u64| (n.to_string(), c, b);
    // Point: align8(12 + 4 (int) + 4 (compressed ref)) = 24
    let want = vec![
        row("app.Point", 5, 120),
        row("int[]", 2, 16 + 32),  // align8(16 + 0) + align8(16 + 12)
        row("int[][]", 1, 40),     // align8(16 + 5*4)
        row("char[]", 1, 32),      // align8(16 + 10)
        row("app.Point[]", 1, 24), // align8(16 + 2*4)
        row("java.lang.Object", 1, 16),
    ];
    for hotspot in [false, true] {
        let h = histogram(reader(&histo_file(hotspot))).unwrap();
        let got: Vec<(String, u64, u64)> = h
            .iter()
            .map(|e| (e.class_name.clone(), e.instances, e.shallow_bytes))
            .collect();
        assert_eq!(got, want, "hotspot style: {hotspot}");
        assert_eq!(
            h.iter().find(|e| e.class_name == "int[]").unwrap().class_id,
            None
        );
    }
    let big = histogram_with(
        reader(&histo_file(true)),
        &ShallowSizeModel::UNCOMPRESSED_64,
    )
    .unwrap();
    assert_eq!(big[0].shallow_bytes, 5 * 32); // align8(16 + 4 + 8)
}

#[test]
fn histogram_names_unknown_classes() {
    let mut f = FileBuilder::new("1.0.1", 4);
    f.record(tag::HEAP_DUMP, 0, |o| {
        o.instance(1, 0, 0xabc, &[0; 6]);
    });
    let h = histogram(reader(&f.bytes())).unwrap();
    assert_eq!(h[0].class_name, "<unknown class 0xabc>");
    assert_eq!(h[0].shallow_bytes, 24); // align8(12 + 6 value bytes)
}
