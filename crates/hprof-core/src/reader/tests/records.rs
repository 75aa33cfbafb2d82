//! Header and top-level records, both identifier sizes, gzip input.

use super::*;
use crate::reader::*;

#[test]
fn header_1_0_1_with_4_byte_ids() {
    let f = FileBuilder::new("1.0.1", 4);
    let r = reader(&f.out.bytes);
    let h = r.header();
    assert_eq!(h.version, "1.0.1");
    assert_eq!(h.label, "JAVA PROFILE 1.0.1");
    assert_eq!(h.id_size, 4);
    assert_eq!(h.timestamp_ms, TS);
    assert_eq!(h.len, 31);
    assert!(!h.is_segmented_version());
}

#[test]
fn header_1_0_2_with_8_byte_ids_and_empty_stream() {
    let f = FileBuilder::new("1.0.2", 8);
    let mut r = reader(&f.out.bytes);
    assert_eq!(r.header().version, "1.0.2");
    assert!(r.header().is_segmented_version());
    assert_eq!(r.id_size(), 8);
    assert!(!r.is_gzip());
    assert_eq!(r.next_record().unwrap(), None);
    assert_eq!(r.next_record().unwrap(), None);
}

/// A stream with one of every non-heap record; returns it and the expected
/// bodies in order.
fn every_record(id_size: u32) -> (Vec<u8>, Vec<(u8, u32, RecordBody)>) {
    let mut f = FileBuilder::new("1.0.1", id_size);
    let big = if id_size == 8 {
        0x7f00_0000_0000_0010
    } else {
        0xA000_0001
    };
    let mut want = Vec::new();
    f.record(tag::CONTROL_SETTINGS, 0, |o| {
        o.u4(3).u2(4);
    });
    want.push((
        tag::CONTROL_SETTINGS,
        0,
        RecordBody::ControlSettings(ControlSettings { flags: 3, depth: 4 }),
    ));
    f.record(tag::UTF8, 1000, |o| {
        o.id(big).raw(b"java.lang.Object");
    });
    want.push((
        tag::UTF8,
        1000,
        RecordBody::Utf8 {
            id: big,
            text: "java.lang.Object".into(),
        },
    ));
    f.record(tag::LOAD_CLASS, 2000, |o| {
        o.u4(100_000).id(0x5000_0001).u4(300_000).id(big);
    });
    want.push((
        tag::LOAD_CLASS,
        2000,
        RecordBody::LoadClass(LoadClass {
            class_serial: 100_000,
            class_id: 0x5000_0001,
            trace_serial: 300_000,
            name_id: big,
        }),
    ));
    f.record(tag::UNLOAD_CLASS, 3000, |o| {
        o.u4(100_001);
    });
    want.push((
        tag::UNLOAD_CLASS,
        3000,
        RecordBody::UnloadClass {
            class_serial: 100_001,
        },
    ));
    f.record(tag::FRAME, 4000, |o| {
        o.id(0x7000_0001)
            .id(2)
            .id(3)
            .id(0)
            .u4(100_000)
            .u4(-1i32 as u32);
    });
    want.push((
        tag::FRAME,
        4000,
        RecordBody::Frame(Frame {
            id: 0x7000_0001,
            method_name_id: 2,
            signature_id: 3,
            source_file_id: 0,
            class_serial: 100_000,
            line: -1,
        }),
    ));
    f.record(tag::TRACE, 5000, |o| {
        o.u4(300_001)
            .u4(200_001)
            .u4(2)
            .id(0x7000_0001)
            .id(0x7000_0002);
    });
    want.push((
        tag::TRACE,
        5000,
        RecordBody::Trace(Trace {
            serial: 300_001,
            thread_serial: 200_001,
            frame_ids: vec![0x7000_0001, 0x7000_0002],
        }),
    ));
    f.record(tag::TRACE, 5001, |o| {
        o.u4(300_000).u4(0).u4(0);
    });
    want.push((
        tag::TRACE,
        5001,
        RecordBody::Trace(Trace {
            serial: 300_000,
            thread_serial: 0,
            frame_ids: vec![],
        }),
    ));
    f.record(tag::ALLOC_SITES, 6000, |o| {
        o.u2(0x2)
            .u4(0xEB1C_432D)
            .u4(1000)
            .u4(10)
            .u8(5_000_000_000)
            .u8(70);
        o.u4(2);
        o.u1(0).u4(100_000).u4(300_001).u4(600).u4(6).u4(700).u4(7);
        o.u1(10).u4(100_002).u4(300_000).u4(400).u4(4).u4(500).u4(5);
    });
    want.push((
        tag::ALLOC_SITES,
        6000,
        RecordBody::AllocSites(AllocSites {
            flags: 2,
            cutoff_raw: 0xEB1C_432D,
            total_live_bytes: 1000,
            total_live_instances: 10,
            total_bytes_allocated: 5_000_000_000,
            total_instances_allocated: 70,
            sites: vec![
                AllocSite {
                    array_type: 0,
                    class_serial: 100_000,
                    trace_serial: 300_001,
                    live_bytes: 600,
                    live_instances: 6,
                    bytes_allocated: 700,
                    instances_allocated: 7,
                },
                AllocSite {
                    array_type: 10,
                    class_serial: 100_002,
                    trace_serial: 300_000,
                    live_bytes: 400,
                    live_instances: 4,
                    bytes_allocated: 500,
                    instances_allocated: 5,
                },
            ],
        }),
    ));
    f.record(tag::HEAP_SUMMARY, 7000, |o| {
        o.u4(1).u4(2).u8(3).u8(4);
    });
    want.push((
        tag::HEAP_SUMMARY,
        7000,
        RecordBody::HeapSummary(HeapSummary {
            total_live_bytes: 1,
            total_live_instances: 2,
            total_bytes_allocated: 3,
            total_instances_allocated: 4,
        }),
    ));
    f.record(tag::START_THREAD, 8000, |o| {
        o.u4(200_001)
            .id(0x5000_0009)
            .u4(300_000)
            .id(11)
            .id(12)
            .id(0);
    });
    want.push((
        tag::START_THREAD,
        8000,
        RecordBody::StartThread(StartThread {
            thread_serial: 200_001,
            thread_id: 0x5000_0009,
            trace_serial: 300_000,
            name_id: 11,
            group_name_id: 12,
            parent_group_name_id: 0,
        }),
    ));
    f.record(tag::END_THREAD, 9000, |o| {
        o.u4(200_001);
    });
    want.push((
        tag::END_THREAD,
        9000,
        RecordBody::EndThread {
            thread_serial: 200_001,
        },
    ));
    f.record(tag::CPU_SAMPLES, u32::MAX, |o| {
        o.u4(30).u4(2).u4(20).u4(300_001).u4(10).u4(300_002);
    });
    want.push((
        tag::CPU_SAMPLES,
        u32::MAX,
        RecordBody::CpuSamples(CpuSamples {
            total: 30,
            entries: vec![
                CpuSample {
                    count: 20,
                    trace_serial: 300_001,
                },
                CpuSample {
                    count: 10,
                    trace_serial: 300_002,
                },
            ],
        }),
    ));
    // An unknown tag is skipped by its length.
    f.record(0x55, 1, |o| {
        o.raw(&[1, 2, 3, 4, 5]);
    });
    want.push((0x55, 1, RecordBody::Unknown));
    f.record(tag::HEAP_DUMP_END, 0, |_| {});
    want.push((tag::HEAP_DUMP_END, 0, RecordBody::HeapDumpEnd));
    (f.bytes(), want)
}

#[test]
fn every_top_level_record_with_both_id_sizes() {
    for id_size in [4, 8] {
        let (bytes, want) = every_record(id_size);
        let mut r = reader(&bytes);
        let mut offset = 31;
        for (t, time, body) in want {
            let rec = r.next_record().unwrap().expect("record");
            assert_eq!(
                (rec.tag, rec.time, rec.offset),
                (t, time, offset),
                "id size {id_size}"
            );
            assert_eq!(rec.body, body, "id size {id_size}");
            offset = rec.end_offset();
            assert_eq!(r.position(), offset);
        }
        assert_eq!(r.next_record().unwrap(), None);
        assert_eq!(offset, bytes.len() as u64);
    }
}

#[test]
fn record_lengths_follow_the_spec() {
    let (bytes, _) = every_record(4);
    let mut r = reader(&bytes);
    let mut lens = std::collections::HashMap::new();
    while let Some(rec) = r.next_record().unwrap() {
        lens.entry(rec.tag).or_insert(rec.length);
    }
    assert_eq!(lens[&tag::LOAD_CLASS], 16);
    assert_eq!(lens[&tag::UNLOAD_CLASS], 4);
    assert_eq!(lens[&tag::FRAME], 24);
    assert_eq!(lens[&tag::TRACE], 12 + 4 * 2);
    assert_eq!(lens[&tag::ALLOC_SITES], 34 + 25 * 2);
    assert_eq!(lens[&tag::HEAP_SUMMARY], 24);
    assert_eq!(lens[&tag::START_THREAD], 24);
    assert_eq!(lens[&tag::CPU_SAMPLES], 8 + 8 * 2);
    assert_eq!(lens[&tag::CONTROL_SETTINGS], 6);
}

#[test]
fn collect_gathers_every_record_kind() {
    let (bytes, _) = every_record(8);
    let p = collect(reader(&bytes)).unwrap();
    assert_eq!(p.records.len(), 14);
    assert_eq!(
        p.control_settings,
        vec![ControlSettings { flags: 3, depth: 4 }]
    );
    assert_eq!(p.classes.len(), 1);
    assert_eq!(p.classes[0].name.as_deref(), Some("java.lang.Object"));
    assert_eq!(p.class_name(0x5000_0001), Some("java.lang.Object"));
    assert_eq!(p.class_by_name("java/lang/Object").unwrap().serial, 100_000);
    assert_eq!(p.unloaded_classes, vec![100_001]);
    assert_eq!(p.frames.len(), 1);
    assert_eq!(p.traces.len(), 2);
    assert_eq!(p.alloc_sites[0].sites.len(), 2);
    assert_eq!(p.heap_summaries.len(), 1);
    assert_eq!(p.thread_starts[0].thread_serial, 200_001);
    assert_eq!(p.thread_ends, vec![200_001]);
    assert_eq!(p.cpu_samples[0].total, 30);
    assert!(p.heap_dumps.is_empty());
}

#[test]
fn alloc_sites_cutoff_is_kept_raw() {
    let s = AllocSites {
        flags: 0,
        cutoff_raw: 0x38D1_B717,
        total_live_bytes: 0,
        total_live_instances: 0,
        total_bytes_allocated: 0,
        total_instances_allocated: 0,
        sites: vec![],
    };
    assert!((s.cutoff_as_f32() - 0.0001).abs() < 1e-9);
}

#[test]
fn utf8_text_accepts_modified_utf8() {
    assert_eq!(decode_java_utf8(b"plain"), "plain");
    assert_eq!(decode_java_utf8("h\u{e9}".as_bytes()), "h\u{e9}");
    // NUL as C0 80
    assert_eq!(decode_java_utf8(&[b'a', 0xC0, 0x80, b'b']), "a\0b");
    // U+1F600 as a surrogate pair in CESU form: ED A0 BD ED B8 80
    assert_eq!(
        decode_java_utf8(&[0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80]),
        "\u{1F600}"
    );
    // garbage becomes replacement characters, never a panic
    assert_eq!(decode_java_utf8(&[0xFF, b'x']), "\u{FFFD}x");
}

#[test]
fn gzip_input_is_detected_and_offsets_are_uncompressed() {
    let (bytes, want) = every_record(4);
    let gz = gzip(&bytes);
    assert_eq!(gz[..2], GZIP_MAGIC);
    let mut r = HprofReader::new(&gz[..]).unwrap();
    assert!(r.is_gzip());
    assert_eq!(r.header().version, "1.0.1");
    let mut n = 0;
    while let Some(rec) = r.next_record().unwrap() {
        assert_eq!(rec.body, want[n].2);
        n += 1;
    }
    assert_eq!(n, want.len());
    assert_eq!(r.position(), bytes.len() as u64);
}

#[test]
fn multi_member_gzip_is_read_through() {
    // HotSpot's -gz dumps are many gzip members back to back.
    let (bytes, want) = every_record(8);
    let cut = 31 + 15; // inside the UTF8 record
    let mut gz = gzip(&bytes[..cut]);
    gz.extend(gzip(&bytes[cut..]));
    let p = collect(HprofReader::new(&gz[..]).unwrap()).unwrap();
    assert_eq!(p.records.len(), want.len());
}

#[test]
fn open_path_and_read_all_handle_plain_and_gz_files() {
    let (bytes, _) = every_record(4);
    let plain = temp_path("plain.hprof");
    let gz = temp_path("packed.hprof.gz");
    std::fs::write(&plain, &bytes).unwrap();
    std::fs::write(&gz, gzip(&bytes)).unwrap();
    let a = read_all(&plain).unwrap();
    let b = read_all(&gz).unwrap();
    assert!(open_path(&gz).unwrap().is_gzip());
    assert_eq!(a, b);
    assert_eq!(a.records.len(), 14);
    std::fs::remove_file(plain).unwrap();
    std::fs::remove_file(gz).unwrap();
    let e = match open_path(temp_path("missing.hprof")) {
        Err(e) => e,
        Ok(_) => panic!("opened a missing file"),
    };
    assert!(matches!(e.kind, ErrorKind::Io(_)), "{e}");
}

/// A name longer than [`MAX_NAME`] is cut at a character (the rest
/// skipped, `…` added) and the records after it read as usual.
#[test]
fn long_names_are_cut_at_a_character() {
    let mut f = FileBuilder::new("1.0.2", 4);
    // 'é' is two bytes: the cut at MAX_NAME falls inside one.
    let long = format!("a{}", "é".repeat(MAX_NAME));
    f.utf8(1, &long).utf8(2, "next");
    let mut r = reader(&f.out.bytes);
    let Some(RecordBody::Utf8 { id: 1, text }) = r.next_record().unwrap().map(|r| r.body) else {
        panic!("UTF8 first")
    };
    assert!(text.ends_with("é…"), "cut at a character");
    assert_eq!(text.len(), 1 + (MAX_NAME - 1) / 2 * 2 + '…'.len_utf8());
    let next = r.next_record().unwrap().unwrap();
    assert_eq!(
        next.body,
        RecordBody::Utf8 {
            id: 2,
            text: "next".into()
        }
    );
}

/// A record claiming more than [`MAX_RECORD`] is refused before it is
/// read, and says so (here it would otherwise be "truncated").
#[test]
fn records_over_the_limit_are_refused_by_their_length() {
    let mut f = FileBuilder::new("1.0.2", 4);
    let at = f.pos();
    f.raw_record(tag::TRACE, 0, MAX_RECORD + 1, &[0; 64]);
    let e = reader(&f.out.bytes).next_record().unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Limit(_)), "{e}");
    assert_eq!(
        e.to_string(),
        format!(
            "refused TRACE record at offset {at}: its length {} is over 64 MiB, the longest \
             record this reader decodes (a damaged or hostile file?)",
            MAX_RECORD + 1
        )
    );
}
