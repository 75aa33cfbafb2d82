//! `logflags=0x4` with a binary heap dump: at exit, read the finished
//! output file back with the crate's strict reader and write what it holds
//! to `java.hprof.check.txt` in the current directory — one line per
//! top-level record (offset, name, length), each heap dump's sub-records
//! counted by kind, and the first error with its offset if the file does
//! not parse. The original's check did the same with its own reader.

use crate::options::CHECK_FILE_NAME;
use crate::reader::{record_name, HeapSubRecord, HprofReader, ReadOptions};
use std::io::Write;
use std::path::Path;

/// Check `output` and write the rendering; errors writing the check file
/// itself are returned, a bad output file is reported inside it.
pub fn check_output(output: &Path) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(CHECK_FILE_NAME)?);
    writeln!(out, "hprof-rs check of {}", output.display())?;
    let mut r = match std::fs::File::open(output)
        .map_err(|e| e.to_string())
        .and_then(|f| {
            HprofReader::with_options(std::io::BufReader::new(f), ReadOptions::skip_bodies())
                .map_err(|e| e.to_string())
        }) {
        Ok(r) => r,
        Err(e) => {
            writeln!(out, "ERROR: {e}")?;
            return out.flush();
        }
    };
    let h = r.header().clone();
    writeln!(
        out,
        "header: {} (identifiers of {} bytes)",
        h.version, h.id_size
    )?;
    let mut records = 0u64;
    loop {
        let rec = match r.next_record() {
            Ok(Some(rec)) => rec,
            Ok(None) => break,
            Err(e) => {
                writeln!(out, "ERROR: {e}")?;
                writeln!(out, "{records} records read before the error")?;
                return out.flush();
            }
        };
        records += 1;
        let name = record_name(rec.tag).unwrap_or("unknown");
        writeln!(out, "{:>12} {name} ({} bytes)", rec.offset, rec.length)?;
        if r.in_heap_dump() {
            let mut counts = [0u64; 5];
            loop {
                match r.next_heap_sub_record() {
                    Ok(Some(sub)) => {
                        counts[match sub {
                            HeapSubRecord::Root(_) => 0,
                            HeapSubRecord::ClassDump(_) => 1,
                            HeapSubRecord::InstanceDump(_) => 2,
                            HeapSubRecord::ObjectArrayDump(_) => 3,
                            HeapSubRecord::PrimitiveArrayDump(_) => 4,
                        }] += 1
                    }
                    Ok(None) => break,
                    Err(e) => {
                        writeln!(out, "ERROR: {e}")?;
                        return out.flush();
                    }
                }
            }
            writeln!(
                out,
                "             roots {}, classes {}, instances {}, object arrays {}, primitive arrays {}",
                counts[0], counts[1], counts[2], counts[3], counts[4]
            )?;
        }
    }
    writeln!(out, "{records} records, no error")?;
    out.flush()
}
