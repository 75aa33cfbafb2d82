//! `hprof-rs histo`: class histogram of one heap dump in a file (ours or
//! HotSpot's, plain or gzip; the last one, or `--dump N`), in the layout of
//! `jmap -histo`. Counts are exact; shallow bytes follow the reader's size
//! model (see `reader::histo`). The file goes through the crate's one
//! reader, which seeks over the payloads a histogram does not need in
//! plain files.

use super::CliResult;
use crate::reader::{
    histogram_of, HistoEntry, HprofReader, ReadOptions, ShallowSizeModel, WhichDump,
};

/// The histogram as text, and a note for stderr naming the dump when the
/// file has several.
pub fn run(
    path: &str,
    uncompressed_oops: bool,
    dump: Option<usize>,
) -> CliResult<(String, Option<String>)> {
    let model = if uncompressed_oops {
        ShallowSizeModel::UNCOMPRESSED_64
    } else {
        ShallowSizeModel::COMPRESSED_OOPS
    };
    let which = match dump {
        None => WhichDump::Last,
        Some(0) => return Err("--dump counts from 1".into()),
        Some(n) => WhichDump::Number(n),
    };
    let input = super::progress::open(path)?;
    let reader = HprofReader::seekable(input, ReadOptions::skip_bodies())
        .map_err(|e| format!("{path}: {e}"))?;
    let h = histogram_of(reader, &model, which).map_err(|e| format!("{path}: {e}"))?;
    if h.dumps == 0 {
        return Err(format!("{path}: no heap dump in the file"));
    }
    if h.number == 0 {
        return Err(format!(
            "{path}: --dump {}: the file has {} heap dump{}",
            dump.unwrap_or(0),
            h.dumps,
            if h.dumps == 1 { "" } else { "s" }
        ));
    }
    let note = (h.dumps > 1).then(|| {
        format!(
            "dump {} of {} in {path}{}",
            h.number,
            h.dumps,
            if dump.is_none() {
                " (--dump N for another)"
            } else {
                ""
            }
        )
    });
    Ok((render(&h.rows), note))
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
