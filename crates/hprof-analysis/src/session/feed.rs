//! Reading a whole stream into a session: gzip or not, binary (the
//! crate's strict reader) or text ([`super::text`]). The session sits in a
//! mutex so that views can be answered while the stream is read: each
//! record is taken under the lock, a heap dump's sub-records outside it.

use super::text::{self, TextFeed};
use super::{Session, State};
use crate::input::Form;
use crate::reader::{HeapSubRecord, HprofReader, ReadOptions, RecordBody};
use crate::text::TextReader;
use std::io::{BufReader, Read};
use std::sync::{Mutex, MutexGuard};

/// Lock, recovering from a panicked holder (the data stays usable: every
/// update leaves it consistent).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Read a whole stream into a session: gzip or not, binary (the crate's
/// strict reader) or text (`text.rs`). Any error ends this session only,
/// with the error on the page.
pub fn feed(s: &Mutex<Session>, r: &mut impl Read) {
    match crate::input::sniff(r) {
        Ok((Form::Empty, _)) => lock(s).fail("empty stream: no HPROF header".into()),
        Ok((form, plain)) => {
            let result = if form == Form::Text {
                read_text(s, plain)
            } else {
                read_binary(s, plain, true)
            };
            if let Err(e) = result {
                lock(s).fail(e);
            }
        }
        Err(e) => lock(s).fail(format!("read: {e}")),
    }
    let mut g = lock(s);
    if g.state == State::Live {
        g.end();
    }
}

/// Read a text report (not gzipped) into a session.
pub fn read_text(s: &Mutex<Session>, r: impl Read) -> Result<(), String> {
    let mut lines = TextReader::new(BufReader::with_capacity(1 << 16, r));
    let mut feed = TextFeed::new();
    while let Some(line) = lines.next().map_err(text::error)? {
        let mut g = lock(s);
        feed.take(&mut g, line)?;
        g.bytes = lines.bytes();
    }
    lock(s).bytes = lines.bytes();
    Ok(())
}

/// An input opened by [`crate::input::open`] (binary or text) read into a
/// new session named `name`, for a command that reads a whole file: its
/// heap dumps are passed over.
pub fn read_input(name: &str, form: Form, r: impl Read) -> Result<Session, String> {
    let s = Mutex::new(Session::new(0, super::Kind::File, name.to_string()));
    let r = BufReader::with_capacity(1 << 16, r);
    match form {
        Form::Empty => return Err("empty stream: no HPROF header".into()),
        Form::Text => read_text(&s, r)?,
        Form::Binary => read_binary(&s, r, false)?,
    }
    Ok(s.into_inner().unwrap_or_else(|p| p.into_inner()))
}

/// A text report carries no time a reader can use (its header's date is
/// local time, in words): date a session read from one by the file's last
/// write, the end of the run that wrote it (docs/jfr.md, "Times"). Binary
/// streams keep their header's time; standard input has no file.
pub fn date_by_file(s: &mut Session, path: &std::path::Path) {
    if s.times.start_ms != 0 || path.as_os_str() == "-" {
        return;
    }
    let modified = std::fs::metadata(path).and_then(|m| m.modified());
    if let Ok(d) = modified.map(|t| t.duration_since(std::time::UNIX_EPOCH)) {
        s.times.start_ms = d.map_or(0, |d| d.as_millis() as u64);
    }
}

/// Read a binary stream (not gzipped) into a session; its heap dumps are
/// counted into class histograms when `histograms`, else passed over.
pub fn read_binary(s: &Mutex<Session>, r: impl Read, histograms: bool) -> Result<(), String> {
    let mut reader =
        HprofReader::with_options(r, ReadOptions::skip_bodies()).map_err(|e| e.to_string())?;
    {
        let h = reader.header();
        let mut g = lock(s);
        g.times.start_ms = h.timestamp_ms;
        g.format = format!("{} (identifier size {})", h.label, h.id_size);
        g.heap.id_size = h.id_size;
        let line = format!("header: {}", g.format);
        g.log(line);
    }
    while let Some(rec) = reader.next_record().map_err(|e| e.to_string())? {
        let name = rec.name();
        let dump = match rec.body {
            RecordBody::HeapDumpStart { segment } => Some(segment),
            _ => None,
        };
        {
            let mut g = lock(s);
            g.apply(rec.time, &name, rec.body)?;
            g.bytes = reader.position();
        }
        if let Some(segment) = dump.filter(|_| histograms) {
            // Counted outside the session's lock: the views stay
            // responsive while a large dump streams by.
            let mut d = lock(s).heap.take_building();
            let result = (|| {
                while let Some(sub) = reader.next_heap_sub_record().map_err(|e| e.to_string())? {
                    match &sub {
                        HeapSubRecord::Root(_) => d.roots += 1,
                        HeapSubRecord::ClassDump(_) => d.classes += 1,
                        _ => {}
                    }
                    d.histo.add(&sub);
                }
                Ok::<(), String>(())
            })();
            let mut g = lock(s);
            if result.is_ok() && !segment {
                let line = format!(
                    "             heap dump: {} roots, {} classes, {} objects and arrays",
                    d.roots,
                    d.classes,
                    d.histo.objects()
                );
                g.log(line);
            }
            g.heap.put_back(d, segment);
            g.bytes = reader.position();
            g.version += 1;
            result?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::Kind;
    use super::*;

    fn session() -> Mutex<Session> {
        Mutex::new(Session::new(1, Kind::File, "x".into()))
    }

    #[test]
    fn a_malformed_stream_fails_only_its_session() {
        let s = session();
        feed(
            &s,
            &mut &b"JAVA PROFILE 1.0.2\0\0\0\0\x08\0\0\0\0\0\0\0\0\x0c\xff\xff"[..],
        );
        let g = lock(&s);
        assert_eq!(g.state, State::Failed);
        assert!(g.error.is_some());
        let t = session();
        feed(&t, &mut &b""[..]);
        assert!(lock(&t).error.as_deref().unwrap().contains("empty stream"));
        let u = session();
        feed(&u, &mut &b"\x1f\x8bnot really gzip"[..]);
        assert_eq!(lock(&u).state, State::Failed);
    }

    #[test]
    fn text_and_gzip_streams_are_read() {
        let text = b"JAVA PROFILE 1.0.1, created today\nWAIT: MONITOR LX;, timeout=0, thread 5\n";
        let s = session();
        feed(&s, &mut &text[..]);
        {
            let g = lock(&s);
            assert_eq!(g.state, State::Ended, "{:?}", g.error);
            assert!(g.text);
            assert_eq!(g.monitors.waits["X"].waits, 1);
        }
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, text).unwrap();
        let packed = gz.finish().unwrap();
        let t = session();
        feed(&t, &mut &packed[..]);
        assert_eq!(lock(&t).monitors.waits["X"].waits, 1);
    }
}
