//! Truncated and corrupt input: errors name the offset and the record.

use super::*;
use crate::reader::*;

fn read_err(bytes: &[u8]) -> ReadError {
    match HprofReader::new(bytes).and_then(collect) {
        Err(e) => e,
        Ok(_) => panic!("read {} bytes without error", bytes.len()),
    }
}

/// A 1.0.2 file: strings, a class, a segment with an instance, END.
fn sample(id_size: u32) -> (Vec<u8>, u64, u64) {
    let mut f = FileBuilder::new("1.0.2", id_size);
    f.record(tag::CONTROL_SETTINGS, 0, |o| {
        o.u4(1).u2(4);
    });
    f.utf8(1, "app.Thing");
    f.load_class(100_000, 0x50, 1);
    f.record(tag::TRACE, 0, |o| {
        o.u4(300_000).u4(0).u4(1).id(0x70);
    });
    let seg = f.pos();
    let inst = seg + 9 + 1 + u64::from(id_size);
    f.record(tag::HEAP_DUMP_SEGMENT, 0, |o| {
        o.u1(0x05).id(0x50);
        o.instance(0x51, 0, 0x50, &[1, 2, 3, 4, 5, 6, 7, 8]);
        o.prim_array(0x52, 0, 10, 2, &[0; 8]);
        o.class_dump(0x50, 0, 8, &[], &[(1, 11)]);
    });
    f.record(tag::HEAP_DUMP_END, 0, |_| {});
    (f.bytes(), seg, inst)
}

#[test]
fn every_truncation_point_is_reported_as_truncated() {
    for id_size in [4, 8] {
        let (bytes, _, _) = sample(id_size);
        let mut boundaries = vec![];
        let mut r = reader(&bytes);
        boundaries.push(r.position());
        while let Some(rec) = r.next_record().unwrap() {
            boundaries.push(rec.end_offset());
        }
        for cut in 0..bytes.len() {
            let res = HprofReader::new(&bytes[..cut]).and_then(collect);
            if boundaries.contains(&(cut as u64)) {
                assert!(res.is_ok(), "cut at {cut}: {:?}", res.err());
            } else {
                let e = res.expect_err("truncated input accepted");
                assert!(e.is_truncated(), "cut at {cut}: {e}");
                match e.kind {
                    ErrorKind::Truncated { file_end } => assert_eq!(file_end, cut as u64, "{e}"),
                    _ => unreachable!(),
                }
                assert!(e.offset <= cut as u64);
            }
        }
    }
}

#[test]
fn truncated_sub_record_names_segment_sub_record_and_offsets() {
    let (bytes, _, inst) = sample(8);
    let cut = inst as usize + 20;
    let e = read_err(&bytes[..cut]);
    assert_eq!(
        e.to_string(),
        format!("truncated HEAP DUMP SEGMENT sub-record INSTANCE DUMP at offset {inst} (input ends at offset {cut})")
    );
    assert_eq!(e.offset, inst);
}

#[test]
fn truncated_header_and_records_are_named() {
    let (bytes, seg, _) = sample(4);
    assert_eq!(
        read_err(&bytes[..10]).to_string(),
        "truncated file header at offset 0 (input ends at offset 10)"
    );
    assert_eq!(
        read_err(&bytes[..33]).to_string(),
        "truncated record header at offset 31 (input ends at offset 33)"
    );
    assert_eq!(
        read_err(&bytes[..43]).to_string(),
        "truncated CONTROL SETTINGS record at offset 31 (input ends at offset 43)"
    );
    // Skipping an unread segment body still notices the missing bytes.
    let mut r = reader(&bytes[..seg as usize + 12]);
    while let Some(rec) = r.next_record().transpose() {
        if let Err(e) = rec {
            assert_eq!(
                e.to_string(),
                format!(
                    "truncated HEAP DUMP SEGMENT record at offset {seg} (input ends at offset {})",
                    seg + 12
                )
            );
            return;
        }
    }
    panic!("no error");
}

#[test]
fn truncated_gzip_is_an_error_not_a_panic() {
    let (bytes, _, _) = sample(8);
    let gz = gzip(&bytes);
    for cut in [3, 10, gz.len() / 2, gz.len() - 4] {
        assert!(
            HprofReader::new(&gz[..cut]).and_then(collect).is_err(),
            "cut {cut}"
        );
    }
}

#[test]
fn record_length_must_match_its_fields() {
    let mut f = FileBuilder::new("1.0.1", 4);
    let at = f.pos();
    f.raw_record(tag::LOAD_CLASS, 0, 17, &[0; 17]);
    assert_eq!(
        read_err(&f.bytes()).to_string(),
        format!("corrupt LOAD CLASS record at offset {at}: length 17 but its fields use 16 bytes")
    );

    let mut f = FileBuilder::new("1.0.1", 8);
    f.raw_record(tag::LOAD_CLASS, 0, 16, &[0; 16]);
    let e = read_err(&f.bytes());
    assert!(e.is_corrupt());
    assert_eq!(
        e.to_string(),
        "corrupt LOAD CLASS record at offset 31: length 16 is too short for its fields"
    );

    // TRACE claims three frames but holds two.
    let mut f = FileBuilder::new("1.0.1", 4);
    f.record(tag::TRACE, 0, |o| {
        o.u4(1).u4(0).u4(3).id(1).id(2);
    });
    assert!(read_err(&f.bytes())
        .to_string()
        .contains("TRACE record at offset 31: length 20 is too short"));

    // CPU SAMPLES with a trailing byte.
    let mut f = FileBuilder::new("1.0.1", 4);
    f.record(tag::CPU_SAMPLES, 0, |o| {
        o.u4(1).u4(1).u4(1).u4(300_000).u1(0);
    });
    assert!(read_err(&f.bytes())
        .to_string()
        .contains("length 17 but its fields use 16 bytes"));

    // A huge count in a small ALLOC SITES record must not allocate.
    let mut f = FileBuilder::new("1.0.1", 4);
    f.record(tag::ALLOC_SITES, 0, |o| {
        o.u2(0).u4(0).u4(0).u4(0).u8(0).u8(0).u4(u32::MAX);
    });
    assert!(read_err(&f.bytes()).is_corrupt());

    let mut f = FileBuilder::new("1.0.2", 4);
    f.raw_record(tag::HEAP_DUMP_END, 0, 1, &[0]);
    assert_eq!(
        read_err(&f.bytes()).to_string(),
        "corrupt HEAP DUMP END record at offset 31: length 1, expected 0"
    );

    let mut f = FileBuilder::new("1.0.1", 4);
    f.raw_record(tag::UTF8, 0, 3, &[0; 3]);
    assert!(read_err(&f.bytes())
        .to_string()
        .contains("corrupt UTF8 record at offset 31"));
}

#[test]
fn sub_record_overrunning_its_segment_is_corrupt() {
    let mut f = FileBuilder::new("1.0.2", 4);
    let mut body = Out::new(4);
    body.u1(0x05).id(1);
    let inst_at = 31 + 9 + body.len() as u64;
    body.instance(2, 0, 1, &[0; 8]);
    // Declare the segment two bytes short; the next record follows.
    f.raw_record(
        tag::HEAP_DUMP_SEGMENT,
        0,
        body.len() as u32 - 2,
        &body.bytes,
    );
    f.record(tag::HEAP_DUMP_END, 0, |_| {});
    let e = read_err(&f.bytes());
    let end = 31 + 9 + body.len() as u64 - 2;
    assert_eq!(
        e.to_string(),
        format!(
            "corrupt HEAP DUMP SEGMENT sub-record INSTANCE DUMP at offset {inst_at}: needs 8 bytes at offset {} \
             but its HEAP DUMP SEGMENT record (at offset 31) ends at offset {end}",
            inst_at + 17
        )
    );
}

#[test]
fn bad_sub_records_are_corrupt() {
    let one = |f: &dyn Fn(&mut Out)| {
        let mut b = FileBuilder::new("1.0.1", 4);
        b.record(tag::HEAP_DUMP, 0, |o| {
            o.u1(0x07).id(1);
            f(o)
        });
        read_err(&b.bytes())
    };
    let e = one(&|o| {
        o.u1(0x99).u4(0);
    });
    assert_eq!(
        e.to_string(),
        "corrupt HEAP DUMP sub-record 0x99 at offset 45: unknown sub-record tag 0x99 \
         (sub-records have no length, so it cannot be skipped)"
    );
    let e = one(&|o| {
        o.class_dump(1, 0, 0, &[], &[(5, 3)]);
    });
    assert!(e.to_string().starts_with("corrupt HEAP DUMP sub-record CLASS DUMP at offset 45: unknown basic type 3 for instance field"), "{e}");
    let e = one(&|o| {
        o.class_dump(1, 0, 0, &[(5, 12, &[0])], &[]);
    });
    assert!(
        e.to_string()
            .contains("unknown basic type 12 for static field"),
        "{e}"
    );
    let e = one(&|o| {
        o.prim_array(1, 0, 2, 1, &[0; 4]);
    });
    assert!(
        e.to_string()
            .contains("PRIMITIVE ARRAY DUMP at offset 45: element type 2"),
        "{e}"
    );
    let e = one(&|o| {
        // A class dump announcing 60000 fields in a tiny record.
        o.u1(0x20)
            .id(1)
            .u4(0)
            .id(0)
            .id(0)
            .id(0)
            .id(0)
            .id(0)
            .id(0)
            .u4(0)
            .u2(0)
            .u2(0)
            .u2(60000);
    });
    assert!(
        e.is_corrupt() && e.to_string().contains("CLASS DUMP"),
        "{e}"
    );
}

#[test]
fn bad_headers_are_rejected() {
    let e = read_err(b"PK\x03\x04 not a profile\0\0\0\0\x04");
    assert!(
        e.to_string()
            .starts_with("corrupt file header at offset 0: not an HPROF file"),
        "{e}"
    );
    let e = read_err(&[b'J'; 100]);
    assert!(e.to_string().contains("no NUL-terminated label"), "{e}");
    let mut o = Out::new(4);
    o.raw(b"JAVA PROFILE 1.0.2\0").u4(3).u8(0);
    assert_eq!(
        read_err(&o.bytes).to_string(),
        "corrupt file header at offset 0: identifier size 3 at offset 19 (only 4 and 8 are supported)"
    );
    assert!(read_err(&[]).is_truncated());
}
