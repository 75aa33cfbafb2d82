use hprof_rs::reader::{HprofReader, ReadOptions, RecordBody};
use hprof_rs::transcode::hotspot::{record_header, OurClasses, Translator};
use std::io::Write;
use std::time::Instant;
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let t0 = Instant::now();
    let f = std::fs::File::open(&a[1]).unwrap();
    let mut r = HprofReader::with_options(f, ReadOptions::skip_bodies()).unwrap();
    let mut t = Translator::new(1, OurClasses::default(), 0);
    let mut out = Vec::with_capacity(16 << 20);
    let mut o = std::fs::File::create(&a[2]).unwrap();
    let mode = a.get(3).map(String::as_str).unwrap_or("full");
    let mut raw = Vec::new();
    let mut seg = Vec::new();
    let mut wr = std::time::Duration::ZERO;
    while let Some(rec) = r.next_record().unwrap() {
        match rec.body {
            RecordBody::HeapDumpStart { .. } => {
                let end = r.position() + rec.length as u64;
                seg.clear();
                while r.position() < end {
                    raw.clear();
                    let sub = r.next_heap_sub_record_raw(&mut raw).unwrap().unwrap();
                    if mode != "parse" { t.sub_record(&sub, &mut raw).unwrap(); }
                    seg.extend_from_slice(&raw);
                }
                record_header(&mut out, 0x1c, 0, seg.len() as u32);
                out.extend_from_slice(&seg);
            }
            _ => t.record(&rec, &mut out).unwrap(),
        }
        if out.len() > 8 << 20 { let w = Instant::now(); if mode != "nowrite" { o.write_all(&out).unwrap(); } wr += w.elapsed(); out.clear(); }
    }
    o.write_all(&out).unwrap();
    eprintln!("{mode}: {:.2} s total, {:.2} s writing; {:?}", t0.elapsed().as_secs_f64(), wr.as_secs_f64(), t.counts);
}
