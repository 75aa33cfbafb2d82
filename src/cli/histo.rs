//! `hprof-rs histo`: class histogram of the last heap dump in a file (ours
//! or HotSpot's, plain or gzip), in the layout of `jmap -histo`. Counts are
//! exact; shallow bytes follow the reader's size model (see
//! `reader::histo`). The file goes through the crate's one reader, which
//! seeks over the payloads a histogram does not need in plain files.

use super::CliResult;
use crate::reader::{histogram_with, HistoEntry, HprofReader, ReadOptions, ShallowSizeModel};

pub fn run(path: &str, uncompressed_oops: bool) -> CliResult<String> {
    let model = if uncompressed_oops {
        ShallowSizeModel::UNCOMPRESSED_64
    } else {
        ShallowSizeModel::COMPRESSED_OOPS
    };
    let input = super::progress::open(path)?;
    let reader = HprofReader::seekable(input, ReadOptions::skip_bodies())
        .map_err(|e| format!("{path}: {e}"))?;
    let rows = histogram_with(reader, &model).map_err(|e| format!("{path}: {e}"))?;
    if rows.is_empty() {
        return Err(format!("{path}: no heap dump in the file"));
    }
    Ok(render(&rows))
}
pub fn render(rows: &[HistoEntry]) -> String {
    let mut out = String::with_capacity(64 * (rows.len() + 4));
    out.push_str(" num     #instances         #bytes  class name\n");
    out.push_str("----------------------------------------------\n");
    let (mut n, mut b) = (0u64, 0u64);
    for (i, r) in rows.iter().enumerate() {
        out.push_str(&format!(
            "{:4}: {:14} {:14}  {}\n",
            i + 1,
            r.instances,
            r.shallow_bytes,
            r.class_name
        ));
        n += r.instances;
        b += r.shallow_bytes;
    }
    out.push_str(&format!("Total {n:14} {b:14}\n"));
    out
}
