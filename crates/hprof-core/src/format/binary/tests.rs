//! Byte-exact tests of the binary stream against docs/output-formats.md §2.

use super::*;

/// Parse "4A 41 ..." (whitespace separated hex bytes) into bytes.
fn hex(s: &str) -> Vec<u8> {
    s.split_whitespace().map(|b| u8::from_str_radix(b, 16).unwrap()).collect()
}

/// Expected-bytes builder for the longer records.
#[derive(Default)]
struct B(Vec<u8>);

impl B {
    fn u1(mut self, v: u8) -> Self {
        self.0.push(v);
        self
    }
    fn u2(mut self, v: u16) -> Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn u4(mut self, v: u32) -> Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn u8(mut self, v: u64) -> Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    /// An 8-byte ID of the agent's own, as written (`vocab::id_space`).
    fn id(self, v: u64) -> Self {
        self.u8(crate::vocab::id_space::ours(v))
    }
    fn raw(mut self, v: &[u8]) -> Self {
        self.0.extend_from_slice(v);
        self
    }
    /// Record header.
    fn rec(self, tag: u8, time: u32, len: u32) -> Self {
        self.u1(tag).u4(time).u4(len)
    }
    fn utf8(self, time: u32, id: u32, s: &str) -> Self {
        self.rec(0x01, time, 4 + s.len() as u32).u4(id).raw(s.as_bytes())
    }
}

fn at_us(micros_since_load: u64) -> Stamp {
    Stamp { micros_since_load, unix_millis: 0, utc_offset_secs: 0 }
}

fn bin(version: HprofVersion) -> BinaryFormat {
    BinaryFormat::new(BinaryOptions { version, ..Default::default() })
}

fn bin8() -> BinaryFormat {
    BinaryFormat::new(BinaryOptions { id_size: IdSize::Eight, ..Default::default() })
}

/// docs/output-formats.md §2.2-2.3: header, CONTROL SETTINGS, UTF8, LOAD CLASS.
#[test]
fn example_stream_start_of_section_8() {
    let mut f = bin(HprofVersion::V1_0_1);
    let mut out = Vec::new();
    f.header(&mut out, Stamp { micros_since_load: 0, unix_millis: 0x0000_0118_9C2A_5E10, utc_offset_secs: 3600 });
    f.control_settings(&mut out, at_us(0), &ControlSettings { heap_or_sites: true, cpu_sampling: false, depth: 4 });
    f.load_class(
        &mut out,
        at_us(100_000),
        &LoadClass { class_serial: 100000, class_obj_id: 0x50000001, trace_serial: 300000, class_sig: "Ljava/lang/Object;" },
    );
    let mut want = hex(
        "4A 41 56 41 20 50 52 4F 46 49 4C 45 20 31 2E 30 2E 31 00
         00 00 00 04
         00 00 01 18 9C 2A 5E 10
         0E 00 00 00 00 00 00 00 06 00 00 00 01 00 04
         01 00 01 86 A0 00 00 00 14 A0 00 00 01",
    );
    want.extend_from_slice(b"java.lang.Object");
    want.extend(hex("02 00 01 86 A0 00 00 00 10 00 01 86 A0 50 00 00 01 00 04 93 E0 A0 00 00 01"));
    assert_eq!(out, want);
}

#[test]
fn header_versions_and_id_size() {
    let mut out = Vec::new();
    bin(HprofVersion::V1_0_2).header(&mut out, Stamp { unix_millis: 1, ..Default::default() });
    assert_eq!(&out[..19], b"JAVA PROFILE 1.0.2\0");
    assert_eq!(&out[19..], hex("00 00 00 04 00 00 00 00 00 00 00 01"));
    out.clear();
    bin8().header(&mut out, Stamp::default());
    assert_eq!(&out[19..23], hex("00 00 00 08"));
    assert_eq!(out.len(), 31);
    assert_eq!(HprofVersion::for_max_memory(1_999_999_999), HprofVersion::V1_0_1);
    assert_eq!(HprofVersion::for_max_memory(2_000_000_000), HprofVersion::V1_0_2);
}

#[test]
fn control_settings_flags() {
    let mut out = Vec::new();
    let s = ControlSettings { heap_or_sites: false, cpu_sampling: true, depth: 0x102 };
    bin(HprofVersion::V1_0_2).control_settings(&mut out, at_us(0x0102_0304), &s);
    assert_eq!(out, hex("0E 01 02 03 04 00 00 00 06 00 00 00 02 01 02"));
    let both = ControlSettings { heap_or_sites: true, cpu_sampling: true, depth: 4 };
    assert_eq!(both.flags(), 3);
}

#[test]
fn utf8_strings_are_lazy_deduplicated_and_numbered_by_first_use() {
    let mut f = bin(HprofVersion::V1_0_2);
    let mut out = Vec::new();
    let t = at_us(5);
    let lc = |serial, obj, sig| LoadClass { class_serial: serial, class_obj_id: obj, trace_serial: 300000, class_sig: sig };
    f.load_class(&mut out, t, &lc(100001, 0x50000002, "[I"));
    f.load_class(&mut out, t, &lc(100002, 0x50000003, "[I"));
    f.thread_start(
        &mut out,
        t,
        &ThreadStart {
            thread_serial: 200002,
            obj_id: 0x50000150,
            trace_serial: 300001,
            name: Some("main"),
            group: Some("main"),
            parent_group: None,
        },
    );
    let want = B::default()
        .utf8(5, 0xA0000001, "int[]")
        .rec(0x02, 5, 16).u4(100001).u4(0x50000002).u4(300000).u4(0xA0000001)
        .rec(0x02, 5, 16).u4(100002).u4(0x50000003).u4(300000).u4(0xA0000001)
        .utf8(5, 0xA0000002, "main")
        // name and group share one string; no parent group -> ID 0, no record
        .rec(0x0A, 5, 24).u4(200002).u4(0x50000150).u4(300001).u4(0xA0000002).u4(0xA0000002).u4(0);
    assert_eq!(out, want.0);
}

#[test]
fn end_thread_unload_class_heap_summary() {
    let mut f = bin(HprofVersion::V1_0_2);
    let mut out = Vec::new();
    f.thread_end(&mut out, at_us(1), 200001);
    f.unload_class(&mut out, at_us(2), 100009);
    f.heap_summary(
        &mut out,
        at_us(3),
        &HeapTotals { live_bytes: 0x10, live_instances: 0x20, alloc_bytes: 0x1_0000_0030, alloc_instances: 0x40 },
    );
    assert_eq!(
        out,
        hex("0B 00 00 00 01 00 00 00 04 00 03 0D 41
             03 00 00 00 02 00 00 00 04 00 01 86 A9
             07 00 00 00 03 00 00 00 18 00 00 00 10 00 00 00 20
                00 00 00 01 00 00 00 30 00 00 00 00 00 00 00 40")
    );
}

#[test]
fn record_time_is_truncated_to_32_bits() {
    let mut out = Vec::new();
    bin(HprofVersion::V1_0_2).thread_end(&mut out, at_us(0x1_0000_0007), 1);
    assert_eq!(&out[1..5], hex("00 00 00 07"));
}

fn frame(id: u64, method: &'static str, file: Option<&'static str>, line: i32) -> FrameInfo<'static> {
    FrameInfo {
        frame_id: id,
        class_sig: "LHello;",
        class_serial: 100010,
        method_name: method,
        method_sig: "()V",
        source_file: file,
        line,
    }
}

#[test]
fn frames_are_written_once_before_the_first_trace_using_them() {
    let mut f = bin(HprofVersion::V1_0_2);
    let mut out = Vec::new();
    let make = frame(0x70000001, "make", Some("Hello.java"), 12);
    let main = frame(0x70000002, "main", Some("Hello.java"), 5);
    let native = frame(0x70000003, "run", None, LINE_UNKNOWN);
    let traces = vec![
        TraceInfo { serial: 300417, thread_serial: None, phase: JvmPhase::Live, frames: vec![make, main] },
        TraceInfo { serial: 300418, thread_serial: Some(200003), phase: JvmPhase::Live, frames: vec![native, main] },
        TraceInfo { serial: 300000, thread_serial: None, phase: JvmPhase::Live, frames: vec![] },
    ];
    f.traces(&mut out, at_us(9), &traces);
    f.traces(&mut out, at_us(9), &traces); // all written already
    assert!(f.trace_written(300418));
    assert!(!f.trace_written(300419));
    let want = B::default()
        .utf8(9, 0xA0000001, "make")
        .utf8(9, 0xA0000002, "()V")
        .utf8(9, 0xA0000003, "Hello.java")
        .rec(0x04, 9, 24).u4(0x70000001).u4(0xA0000001).u4(0xA0000002).u4(0xA0000003).u4(100010).u4(12)
        .utf8(9, 0xA0000004, "main")
        .rec(0x04, 9, 24).u4(0x70000002).u4(0xA0000004).u4(0xA0000002).u4(0xA0000003).u4(100010).u4(5)
        .rec(0x05, 9, 20).u4(300417).u4(0).u4(2).u4(0x70000001).u4(0x70000002)
        .utf8(9, 0xA0000005, "run")
        // unknown source file -> ID 0; unknown line -> -1
        .rec(0x04, 9, 24).u4(0x70000003).u4(0xA0000005).u4(0xA0000002).u4(0).u4(100010).u4(0xFFFF_FFFF)
        .rec(0x05, 9, 20).u4(300418).u4(200003).u4(2).u4(0x70000003).u4(0x70000002)
        .rec(0x05, 9, 12).u4(300000).u4(0).u4(0);
    assert_eq!(out, want.0);
}

fn sites_report(cutoff: f64) -> SitesReport<'static> {
    let row = |sig, serial, trace, live, alloc| SiteRow {
        class_sig: sig,
        class_serial: serial,
        trace_serial: trace,
        live_bytes: live,
        live_instances: 1,
        alloc_bytes: alloc,
        alloc_instances: 2,
    };
    SitesReport {
        flags: 0,
        cutoff,
        totals: HeapTotals { live_bytes: 1000, live_instances: 3, alloc_bytes: 5000, alloc_instances: 6 },
        rows: vec![
            row("LA;", 100001, 300001, 100, 200),
            row("[[I", 100002, 300002, 0, 300),
            row("[C", 100003, 300003, 900, 900),
        ],
    }
}

#[test]
fn alloc_sites_record_with_float_cutoff() {
    let mut out = Vec::new();
    bin(HprofVersion::V1_0_2).sites(&mut out, at_us(1), &sites_report(0.0001));
    let want = B::default()
        .rec(0x06, 1, 34 + 25 * 2)
        .u2(0)
        .raw(&hex("38 D1 B7 17"))
        .u4(1000).u4(3).u8(5000).u8(6)
        .u4(2)
        .u1(5).u4(100003).u4(300003).u4(900).u4(1).u4(900).u4(2)
        .u1(0).u4(100001).u4(300001).u4(100).u4(1).u4(200).u4(2);
    // [[I has 0 live bytes: below the cutoff, so it and anything after it is dropped.
    assert_eq!(out, want.0);
}

#[test]
fn alloc_sites_cutoff_bug_compatible_low_word_of_double() {
    let mut f = BinaryFormat::new(BinaryOptions { cutoff_encoding: CutoffEncoding::DoubleLowWord, ..Default::default() });
    let mut out = Vec::new();
    let mut r = sites_report(0.0001);
    r.flags = SITES_SORT_BY_ALLOC | SITES_INCREMENTAL;
    f.sites(&mut out, at_us(1), &r);
    assert_eq!(&out[9..11], hex("00 03"));
    assert_eq!(&out[11..15], hex("EB 1C 43 2D"));
    // Sorted by allocation, every row made enough of the allocated bytes
    // to stay, [[I (300 allocated, nothing live) included.
    assert_eq!(&out[39..43], hex("00 00 00 03"));
    assert_eq!(out[43], 5);
}

#[test]
fn alloc_sites_zero_total_keeps_all_rows() {
    let mut out = Vec::new();
    let mut r = sites_report(0.5);
    r.totals.live_bytes = 0;
    bin(HprofVersion::V1_0_2).sites(&mut out, at_us(1), &r);
    assert_eq!(&out[39..43], hex("00 00 00 03"));
    // [[I -> arrays of arrays report element kind 2
    assert_eq!(out[43 + 25 * 2], 2);
}

#[test]
fn cpu_samples_record() {
    let row = |trace, hits| CpuRow { trace_serial: trace, hits, cost: hits as u64, top_frame: None };
    let r = CpuReport {
        title: CpuTitle::Samples,
        // The total is truncated to 32 bits on output (ratios use the full value).
        cutoff: 0.0,
        total: 0x1_0000_000A,
        rows: vec![row(300001, 3), row(300002, 0), row(300003, 7)],
    };
    let mut out = Vec::new();
    let mut f = bin(HprofVersion::V1_0_2);
    f.cpu(&mut out, at_us(2), &r);
    assert_eq!(
        out,
        hex("0D 00 00 00 02 00 00 00 18 00 00 00 0A 00 00 00 02
             00 00 00 07 00 04 93 E3 00 00 00 03 00 04 93 E1")
    );
    out.clear();
    f.cpu(&mut out, at_us(2), &CpuReport { title: CpuTitle::Times, ..r });
    assert!(out.is_empty(), "no binary CPU TIME record");
}

#[test]
fn samples_not_counted_follow_as_a_utf8_record_of_their_line() {
    let mut f = bin(HprofVersion::V1_0_2);
    let lost = LostSamples {
        counted: 9,
        reasons: vec![("deoptimizing".into(), 1)],
    };
    let line = "CPU SAMPLES LOST 1 of 10 (10.00%): deoptimizing 1";
    assert_eq!(lost.line(), line);
    let mut first = Vec::new();
    f.cpu_lost(&mut first, at_us(2), &lost);
    let mut expect = hex("01 00 00 00 02");
    expect.extend_from_slice(&(4 + line.len() as u32).to_be_bytes());
    expect.extend_from_slice(&hex("A0 00 00 01"));
    expect.extend_from_slice(line.as_bytes());
    assert_eq!(first, expect);
    // The same line again (a later report) is a record of its own.
    let mut again = Vec::new();
    f.cpu_lost(&mut again, at_us(2), &lost);
    assert_eq!(&again[9..13], &hex("A0 00 00 02")[..]);
}

#[test]
fn text_only_records_write_nothing() {
    let mut f = bin(HprofVersion::V1_0_2);
    let mut out = Vec::new();
    f.cpu_old(&mut out, at_us(0), &OldProfReport::default());
    f.monitor_dump(&mut out, at_us(0), &MonitorDump::default());
    f.monitor_time(&mut out, at_us(0), &MonitorTimeReport { total_ns: 10_000_000, ..Default::default() });
    f.monitor_wait(&mut out, at_us(0), &MonitorWait::default());
    f.monitor_waited(&mut out, at_us(0), &MonitorWaited::default());
    assert!(out.is_empty());
    assert_eq!(f.kind(), crate::format::FormatKind::Binary);
}

// ------------------------------------------------------------- heap dumps

fn all_roots() -> Vec<Root<'static>> {
    vec![
        Root::ThreadObject { obj_id: 0, thread_serial: 200000, trace_serial: 300000 },
        Root::Unknown { obj_id: 0x50000001 },
        Root::JniGlobal { obj_id: 0x50000002, global_ref_id: 1, trace_serial: 300003 },
        Root::JniLocal { obj_id: 0x50000003, thread_serial: 200001, frame_depth: 2 },
        Root::JavaFrame { obj_id: 0x50000004, thread_serial: 200001, frame_depth: 0 },
        Root::NativeStack { obj_id: 0x50000005, thread_serial: 200002 },
        Root::StickyClass { obj_id: 0x50000006, class_sig: "Ljava/lang/String;" },
        Root::ThreadBlock { obj_id: 0x50000007, thread_serial: 200003 },
        Root::MonitorUsed { obj_id: 0x50000008 },
    ]
}

fn all_roots_bytes() -> Vec<u8> {
    hex("08 00 00 00 00 00 03 0D 40 00 04 93 E0
         FF 50 00 00 01
         01 50 00 00 02 00 00 00 01
         02 50 00 00 03 00 03 0D 41 00 00 00 02
         03 50 00 00 04 00 03 0D 41 00 00 00 00
         04 50 00 00 05 00 03 0D 42
         05 50 00 00 06
         06 50 00 00 07 00 03 0D 43
         07 50 00 00 08")
}

#[test]
fn heap_dump_1_0_1_is_one_record() {
    let mut f = bin(HprofVersion::V1_0_1);
    let mut out = Vec::new();
    f.heap_dump_begin(&mut out, at_us(10), &HeapTotals::default());
    for r in &all_roots() {
        f.heap_root(&mut out, r);
    }
    assert!(out.is_empty(), "1.0.1 buffers the whole dump");
    f.heap_dump_end(&mut out, at_us(20));
    let body = all_roots_bytes();
    let want = B::default().rec(0x0C, 20, body.len() as u32).raw(&body);
    assert_eq!(out, want.0);
}

/// A file as the scratch area, as the agent's (the test removes it when
/// dropped too, so the test can see the format drop it once copied out).
#[derive(Debug)]
struct TestScratch(std::path::PathBuf);

impl TestScratch {
    fn at(p: std::path::PathBuf) -> Self {
        TestScratch(p)
    }
}

#[derive(Debug)]
struct TestArea(std::fs::File, std::path::PathBuf);

impl heap::ScratchSource for TestScratch {
    fn name(&self) -> String {
        self.0.display().to_string()
    }
    fn create(&mut self) -> std::io::Result<Box<dyn heap::Scratch>> {
        let f = std::fs::OpenOptions::new().read(true).write(true).create_new(true).open(&self.0)?;
        Ok(Box::new(TestArea(f, self.0.clone())))
    }
    fn report(&self, what: &str) {
        panic!("unexpected problem: {what}");
    }
}

impl heap::Scratch for TestArea {
    fn name(&self) -> String {
        self.1.display().to_string()
    }
    fn report(&self, what: &str) {
        panic!("unexpected problem: {what}");
    }
}

impl std::io::Read for TestArea {
    fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(b)
    }
}

impl std::io::Write for TestArea {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.write(b)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl std::io::Seek for TestArea {
    fn seek(&mut self, p: std::io::SeekFrom) -> std::io::Result<u64> {
        self.0.seek(p)
    }
}

impl Drop for TestArea {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.1);
    }
}

#[test]
fn heap_dump_1_0_1_staged_in_a_file_gives_the_same_record() {
    let dir = std::env::temp_dir().join(format!("hprof-stage-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let tmp = dir.join("java.hprof.TMP");
    let mut f = bin(HprofVersion::V1_0_1);
    f.stage_heap_dumps_in(Box::new(TestScratch::at(tmp.clone())));
    let mut out = Vec::new();
    f.heap_dump_begin(&mut out, at_us(10), &HeapTotals::default());
    // Enough sub-records to pass the 1 MiB kept in memory.
    let big = vec![0x7Fu8; 300_000];
    let a = PrimArrayDump { obj_id: 1, size: 0, trace_serial: 0, elements: PrimElements::BigEndian(BasicType::Byte, &big) };
    for _ in 0..5 {
        f.heap_prim_array(&mut out, &a);
    }
    for r in &all_roots() {
        f.heap_root(&mut out, r);
    }
    assert!(out.is_empty());
    assert!(std::fs::metadata(&tmp).unwrap().len() >= 1 << 20, "sub-records staged in the file");
    f.heap_dump_end(&mut out, at_us(20));
    assert_eq!(out.len(), 9, "only the record header so far");
    // The writer's loop: pieces of at most DRAIN_CHUNK until none is left.
    let mut pieces = 0;
    let mut piece = Vec::new();
    while f.drain_staged(&mut piece) {
        pieces += 1;
        out.append(&mut piece);
    }
    assert!(pieces >= 2 && !f.drain_staged(&mut piece));
    assert!(!tmp.exists(), "temporary file removed once copied");

    let mut g = bin(HprofVersion::V1_0_1);
    let mut want = Vec::new();
    g.heap_dump_begin(&mut want, at_us(10), &HeapTotals::default());
    for _ in 0..5 {
        g.heap_prim_array(&mut want, &a);
    }
    for r in &all_roots() {
        g.heap_root(&mut want, r);
    }
    g.heap_dump_end(&mut want, at_us(20));
    assert!(out == want, "staged and in-memory records differ");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn heap_dump_1_0_2_is_segment_plus_end() {
    let mut f = bin(HprofVersion::V1_0_2);
    let mut out = Vec::new();
    f.heap_dump_begin(&mut out, at_us(10), &HeapTotals::default());
    for r in &all_roots() {
        f.heap_root(&mut out, r);
    }
    f.heap_dump_end(&mut out, at_us(20));
    let body = all_roots_bytes();
    let want = B::default().rec(0x1C, 20, body.len() as u32).raw(&body).rec(0x2C, 20, 0);
    assert_eq!(out, want.0);

    // Even an empty dump is one (empty) segment plus END.
    out.clear();
    f.heap_dump_begin(&mut out, at_us(30), &HeapTotals::default());
    f.heap_dump_end(&mut out, at_us(31));
    assert_eq!(out, hex("1C 00 00 00 1F 00 00 00 00 2C 00 00 00 1F 00 00 00 00"));
}

fn small_limit(limit: u64) -> BinaryFormat {
    BinaryFormat::new(BinaryOptions { segment_limit: limit, ..Default::default() })
}

/// Split a stream of records into (tag, time, body).
fn records(mut s: &[u8]) -> Vec<(u8, u32, Vec<u8>)> {
    let mut v = Vec::new();
    while !s.is_empty() {
        let time = u32::from_be_bytes(s[1..5].try_into().unwrap());
        let len = u32::from_be_bytes(s[5..9].try_into().unwrap()) as usize;
        v.push((s[0], time, s[9..9 + len].to_vec()));
        s = &s[9 + len..];
    }
    v
}

#[test]
fn segments_are_cut_at_sub_record_boundaries_below_the_limit() {
    // ROOT UNKNOWN is 5 bytes, ROOT THREAD OBJECT 13 bytes (4-byte IDs).
    let u = |id| Root::Unknown { obj_id: id };
    let t = |id| Root::ThreadObject { obj_id: id, thread_serial: 1, trace_serial: 2 };
    let seq = [u(1), t(2), u(3), u(4), t(5)];
    let mut f = small_limit(20);
    let mut out = Vec::new();
    f.heap_dump_begin(&mut out, at_us(7), &HeapTotals::default());
    let mut cut_after = Vec::new();
    for r in &seq {
        f.heap_root(&mut out, r);
        cut_after.push(out.len());
    }
    f.heap_dump_end(&mut out, at_us(8));
    // 5+13 = 18; +5 would reach 23 >= 20 -> cut. 5+5 = 10; +13 -> cut. 13 left.
    let recs = records(&out);
    let lens: Vec<usize> = recs.iter().map(|r| r.2.len()).collect();
    assert_eq!(lens, [18, 10, 13, 0]);
    assert_eq!(recs.iter().map(|r| (r.0, r.1)).collect::<Vec<_>>(), [(0x1C, 7), (0x1C, 7), (0x1C, 8), (0x2C, 8)]);
    // Segments appear as soon as they are complete (streaming).
    assert_eq!(cut_after, [0, 0, 9 + 18, 9 + 18, 9 + 18 + 9 + 10]);
    // Concatenated segment bodies are exactly the unsegmented dump.
    let mut whole = Vec::new();
    let mut g = bin(HprofVersion::V1_0_1);
    g.heap_dump_begin(&mut whole, at_us(7), &HeapTotals::default());
    seq.iter().for_each(|r| g.heap_root(&mut whole, r));
    g.heap_dump_end(&mut whole, at_us(8));
    let joined: Vec<u8> = recs.iter().flat_map(|r| r.2.clone()).collect();
    assert_eq!(joined, whole[9..]);
    assert_eq!(&recs[0].2[..5], hex("FF 00 00 00 01"));
    assert_eq!(recs[1].2[0], 0xFF);
    assert_eq!(recs[2].2[0], 0x08);
}

#[test]
fn a_sub_record_larger_than_the_limit_gets_its_own_segment() {
    let u = |id| Root::Unknown { obj_id: id };
    let t = Root::ThreadObject { obj_id: 9, thread_serial: 1, trace_serial: 2 };
    let mut f = small_limit(8);
    let mut out = Vec::new();
    f.heap_dump_begin(&mut out, at_us(0), &HeapTotals::default());
    for r in [u(1), t, u(3)] {
        f.heap_root(&mut out, &r);
    }
    f.heap_dump_end(&mut out, at_us(0));
    let lens: Vec<usize> = records(&out).iter().map(|r| r.2.len()).collect();
    assert_eq!(lens, [5, 13, 5, 0]);
}

#[test]
fn class_dump_sub_record_and_its_utf8_records() {
    let mut f = bin(HprofVersion::V1_0_2);
    let mut out = Vec::new();
    let cp = [ConstantPoolEntry { index: 3, obj_id: 0x50000a01 }, ConstantPoolEntry { index: 9, obj_id: 0x50000a02 }];
    let statics = [
        NamedValue { name: "ref", value: Value::Object(0x50000b01) },
        NamedValue { name: "flag", value: Value::Boolean(true) },
        NamedValue { name: "c", value: Value::Char(0x41) },
        NamedValue { name: "f", value: Value::Float(1.5) },
        NamedValue { name: "d", value: Value::Double(-2.0) },
        NamedValue { name: "b", value: Value::Byte(-1) },
        NamedValue { name: "s", value: Value::Short(-2) },
        NamedValue { name: "i", value: Value::Int(0x01020304) },
        NamedValue { name: "j", value: Value::Long(-3) },
    ];
    let fields = [FieldDecl { name: "ref", ty: BasicType::Object }, FieldDecl { name: "count", ty: BasicType::Int }];
    let c = ClassDump {
        class_id: 0x50000100,
        class_sig: "LW;",
        trace_serial: 300042,
        super_id: 0x50000001,
        loader_id: 0x50000200,
        signers_id: 0x50000300,
        protection_domain_id: 0x50000400,
        instance_size: 8,
        constant_pool: &cp,
        statics: &statics,
        instance_fields: &fields,
    };
    f.heap_dump_begin(&mut out, at_us(3), &HeapTotals::default());
    f.heap_class(&mut out, &c);
    let utf8s = ["ref", "flag", "c", "f", "d", "b", "s", "i", "j", "<constant pool[9]>", "<constant pool[3]>", "count"]
        .iter()
        .enumerate()
        .fold(B::default(), |b, (i, s)| b.utf8(3, 0xA0000001 + i as u32, s));
    assert_eq!(out, utf8s.0, "field names are announced while the dump is produced");
    f.heap_dump_end(&mut out, at_us(4));
    let body = B::default()
        .u1(0x20).u4(0x50000100).u4(300042)
        .u4(0x50000001).u4(0x50000200).u4(0x50000300).u4(0x50000400).u4(0).u4(0)
        .u4(8)
        // Constant-pool entries are pseudo statics after the real ones
        // (last entry first); the constant-pool section is empty.
        .u2(0)
        .u2(11)
        .u4(0xA0000001).u1(2).u4(0x50000b01)
        .u4(0xA0000002).u1(4).u1(1)
        .u4(0xA0000003).u1(5).u2(0x41)
        .u4(0xA0000004).u1(6).raw(&hex("3F C0 00 00"))
        .u4(0xA0000005).u1(7).raw(&hex("C0 00 00 00 00 00 00 00"))
        .u4(0xA0000006).u1(8).u1(0xFF)
        .u4(0xA0000007).u1(9).u2(0xFFFE)
        .u4(0xA0000008).u1(10).u4(0x01020304)
        .u4(0xA0000009).u1(11).u8(0xFFFF_FFFF_FFFF_FFFD)
        .u4(0xA000000A).u1(2).u4(0x50000a02)
        .u4(0xA000000B).u1(2).u4(0x50000a01)
        .u2(2)
        .u4(0xA0000001).u1(2)
        .u4(0xA000000C).u1(10);
    let want = B(utf8s.0).rec(0x1C, 4, body.0.len() as u32).raw(&body.0).rec(0x2C, 4, 0);
    assert_eq!(out, want.0);
}

fn dump_one(f: &mut BinaryFormat, write: impl FnOnce(&mut BinaryFormat, &mut Vec<u8>)) -> Vec<u8> {
    let mut out = Vec::new();
    f.heap_dump_begin(&mut out, at_us(0), &HeapTotals::default());
    write(f, &mut out);
    f.heap_dump_end(&mut out, at_us(0));
    let recs = records(&out);
    assert_eq!(recs.len(), 2);
    recs[0].2.clone()
}

#[test]
fn instance_dump_typed_values_own_class_first() {
    let own = [
        NamedValue { name: "value", value: Value::Object(0x50000002) },
        NamedValue { name: "hash", value: Value::Int(7) },
    ];
    let sup = [NamedValue { name: "flag", value: Value::Boolean(false) }, NamedValue { name: "l", value: Value::Long(1) }];
    let groups: [&[NamedValue]; 2] = [&own, &sup];
    let o = InstanceDump {
        obj_id: 0x50000001,
        size: 40,
        trace_serial: 300001,
        class_id: 0x50000100,
        class_sig: "LQ;",
        values: InstanceValues::Fields(&groups),
    };
    let body = dump_one(&mut bin(HprofVersion::V1_0_2), |f, out| f.heap_instance(out, &o));
    assert_eq!(
        body,
        hex("21 50 00 00 01 00 04 93 E1 50 00 01 00 00 00 00 11
             50 00 00 02 00 00 00 07 00 00 00 00 00 00 00 00 01")
    );
    let enc = InstanceDump { values: InstanceValues::Encoded { bytes: &[0xAB, 0xCD], ref_fields: &[] }, ..o };
    let body = dump_one(&mut bin(HprofVersion::V1_0_2), |f, out| f.heap_instance(out, &enc));
    assert_eq!(body, hex("21 50 00 00 01 00 04 93 E1 50 00 01 00 00 00 00 02 AB CD"));
}

#[test]
fn object_array_dump_trims_trailing_nulls_unless_asked() {
    let a = ObjArrayDump {
        obj_id: 0x50000020,
        size: 32,
        trace_serial: 300000,
        array_class_id: 0x50000c10,
        array_class_sig: "[Ljava/lang/String;",
        elements: &[0, 0x50000021, 0, 0],
    };
    let body = dump_one(&mut bin(HprofVersion::V1_0_2), |f, out| f.heap_obj_array(out, &a));
    assert_eq!(body, hex("22 50 00 00 20 00 04 93 E0 00 00 00 02 50 00 0C 10 00 00 00 00 50 00 00 21"));
    let nulls = ObjArrayDump { elements: &[0, 0], ..a };
    let body = dump_one(&mut bin(HprofVersion::V1_0_2), |f, out| f.heap_obj_array(out, &nulls));
    assert_eq!(body, hex("22 50 00 00 20 00 04 93 E0 00 00 00 00 50 00 0C 10"));
    let mut full = BinaryFormat::new(BinaryOptions { object_array_full_length: true, ..Default::default() });
    let body = dump_one(&mut full, |f, out| f.heap_obj_array(out, &nulls));
    assert_eq!(body, hex("22 50 00 00 20 00 04 93 E0 00 00 00 02 50 00 0C 10 00 00 00 00 00 00 00 00"));
}

#[test]
fn primitive_array_dumps_of_every_type() {
    let p = |elements| PrimArrayDump { obj_id: 0x50000030, size: 99, trace_serial: 300001, elements };
    let cases: Vec<(PrimArrayDump, &str)> = vec![
        (p(PrimElements::Boolean(&[1, 0])), "00 00 00 02 04 01 00"),
        (p(PrimElements::Char(&[0x41, 0x263A])), "00 00 00 02 05 00 41 26 3A"),
        (p(PrimElements::Float(&[1.0])), "00 00 00 01 06 3F 80 00 00"),
        (p(PrimElements::Double(&[1.0])), "00 00 00 01 07 3F F0 00 00 00 00 00 00"),
        (p(PrimElements::Byte(&[-1, 2])), "00 00 00 02 08 FF 02"),
        (p(PrimElements::Short(&[-2])), "00 00 00 01 09 FF FE"),
        (p(PrimElements::Int(&[1, -1])), "00 00 00 02 0A 00 00 00 01 FF FF FF FF"),
        (p(PrimElements::Long(&[0x0102030405060708])), "00 00 00 01 0B 01 02 03 04 05 06 07 08"),
        (p(PrimElements::Omitted(BasicType::Int)), "00 00 00 00 0A"),
        (p(PrimElements::BigEndian(BasicType::Char, &[0, 0x41, 0, 0x42])), "00 00 00 02 05 00 41 00 42"),
    ];
    // Native-order bytes are swapped while written (a partial element is dropped).
    let ints: Vec<u8> = [1i32, -2].iter().flat_map(|x| x.to_ne_bytes()).chain([9]).collect();
    let longs: Vec<u8> = 0x0102030405060708u64.to_ne_bytes().to_vec();
    let chars: Vec<u8> = 0x263Au16.to_ne_bytes().to_vec();
    let cases: Vec<(PrimArrayDump, &str)> = cases
        .into_iter()
        .chain([
            (p(PrimElements::NativeEndian(BasicType::Int, &ints)), "00 00 00 02 0A 00 00 00 01 FF FF FF FE"),
            (p(PrimElements::NativeEndian(BasicType::Long, &longs)), "00 00 00 01 0B 01 02 03 04 05 06 07 08"),
            (p(PrimElements::NativeEndian(BasicType::Char, &chars)), "00 00 00 01 05 26 3A"),
            (p(PrimElements::NativeEndian(BasicType::Byte, &[0xFF, 2])), "00 00 00 02 08 FF 02"),
        ])
        .collect();
    for (a, tail) in cases {
        let body = dump_one(&mut bin(HprofVersion::V1_0_2), |f, out| f.heap_prim_array(out, &a));
        let mut want = hex("23 50 00 00 30 00 04 93 E1");
        want.extend(hex(tail));
        assert_eq!(body, want, "{:?}", a.elements);
    }
    // NaN payloads are kept bit for bit.
    let nans = [f32::from_bits(0x7FC0_1234)];
    let a = PrimArrayDump { obj_id: 1, size: 0, trace_serial: 0, elements: PrimElements::Float(&nans) };
    let body = dump_one(&mut bin(HprofVersion::V1_0_2), |f, out| f.heap_prim_array(out, &a));
    assert_eq!(&body[body.len() - 4..], hex("7F C0 12 34"));
}

#[test]
fn eight_byte_ids_everywhere_ids_are_written() {
    let mut f = bin8();
    let mut out = Vec::new();
    let t = at_us(1);
    f.load_class(&mut out, t, &LoadClass { class_serial: 100000, class_obj_id: 0x1_5000_0001, trace_serial: 300000, class_sig: "LA;" });
    let want = B::default()
        .rec(0x01, 1, 8 + 1).id(0xA0000001).raw(b"A")
        .rec(0x02, 1, 24).u4(100000).id(0x1_5000_0001).u4(300000).id(0xA0000001);
    assert_eq!(out, want.0);

    out.clear();
    let tr = TraceInfo { serial: 300001, thread_serial: None, phase: JvmPhase::Live, frames: vec![frame(0x70000001, "m", None, 3)] };
    f.traces(&mut out, t, &[tr]);
    f.thread_start(&mut out, t, &ThreadStart { thread_serial: 200001, obj_id: 0x50000009, trace_serial: 300001, name: Some("m"), group: None, parent_group: None });
    let want = B::default()
        .utf8_8(1, 0xA0000002, "m")
        .utf8_8(1, 0xA0000003, "()V")
        .rec(0x04, 1, 40).id(0x70000001).id(0xA0000002).id(0xA0000003).id(0).u4(100010).u4(3)
        .rec(0x05, 1, 20).u4(300001).u4(0).u4(1).id(0x70000001)
        .rec(0x0A, 1, 40).u4(200001).id(0x50000009).u4(300001).id(0xA0000002).id(0).id(0);
    assert_eq!(out, want.0);

    out.clear();
    let statics = [NamedValue { name: "A", value: Value::Object(0x50000002) }];
    let c = ClassDump {
        class_id: 1,
        class_sig: "LA;",
        trace_serial: 2,
        super_id: 3,
        loader_id: 4,
        signers_id: 5,
        protection_domain_id: 6,
        instance_size: 8,
        constant_pool: &[ConstantPoolEntry { index: 1, obj_id: 7 }],
        statics: &statics,
        instance_fields: &[],
    };
    let elems = [8u64, 0];
    let groups_own = [NamedValue { name: "x", value: Value::Object(0x50000003) }];
    let groups: [&[NamedValue]; 1] = [&groups_own];
    f.heap_dump_begin(&mut out, t, &HeapTotals::default());
    f.heap_root(&mut out, &Root::JniGlobal { obj_id: 1, global_ref_id: 2, trace_serial: 0 });
    f.heap_class(&mut out, &c);
    f.heap_instance(&mut out, &InstanceDump { obj_id: 9, size: 0, trace_serial: 2, class_id: 1, class_sig: "LA;", values: InstanceValues::Fields(&groups) });
    f.heap_obj_array(&mut out, &ObjArrayDump { obj_id: 10, size: 0, trace_serial: 2, array_class_id: 11, array_class_sig: "[LA;", elements: &elems });
    f.heap_prim_array(&mut out, &PrimArrayDump { obj_id: 12, size: 0, trace_serial: 2, elements: PrimElements::Omitted(BasicType::Byte) });
    f.heap_dump_end(&mut out, t);
    let body = B::default()
        .u1(0x01).id(1).id(2)
        .u1(0x20).id(1).u4(2).id(3).id(4).id(5).id(6).id(0).id(0).u4(8)
        .u2(0)
        .u2(2).id(0xA0000001).u1(2).id(0x50000002).id(0xA0000004).u1(2).id(7)
        .u2(0)
        .u1(0x21).id(9).u4(2).id(1).u4(8).id(0x50000003)
        .u1(0x22).id(10).u4(2).u4(1).id(11).id(8)
        .u1(0x23).id(12).u4(2).u4(0).u1(8);
    // "A" (static name) was already announced as the class name string, and
    // INSTANCE DUMP carries no field names: the only UTF8 record names the
    // constant-pool entry's pseudo static.
    let want = B::default().utf8_8(1, 0xA0000004, "<constant pool[1]>").rec(0x1C, 1, body.0.len() as u32).raw(&body.0).rec(0x2C, 1, 0);
    assert_eq!(out, want.0);
}

impl B {
    fn utf8_8(self, time: u32, id: u64, s: &str) -> Self {
        self.rec(0x01, time, 8 + s.len() as u32).id(id).raw(s.as_bytes())
    }
}

#[test]
fn string_ids_continue_across_heap_dumps_and_records() {
    let mut f = bin(HprofVersion::V1_0_2);
    let mut out = Vec::new();
    let fields = [FieldDecl { name: "java.lang.Object", ty: BasicType::Int }];
    let c = ClassDump {
        class_id: 1,
        class_sig: "LA;",
        trace_serial: 0,
        super_id: 0,
        loader_id: 0,
        signers_id: 0,
        protection_domain_id: 0,
        instance_size: 4,
        constant_pool: &[],
        statics: &[],
        instance_fields: &fields,
    };
    f.heap_dump_begin(&mut out, at_us(0), &HeapTotals::default());
    f.heap_class(&mut out, &c);
    f.heap_dump_end(&mut out, at_us(0));
    out.clear();
    // Same string used later by LOAD CLASS: no second UTF8 record.
    f.load_class(&mut out, at_us(0), &LoadClass { class_serial: 1, class_obj_id: 2, trace_serial: 3, class_sig: "Ljava/lang/Object;" });
    assert_eq!(out, B::default().rec(0x02, 0, 16).u4(1).u4(2).u4(3).u4(0xA0000001).0);
}
