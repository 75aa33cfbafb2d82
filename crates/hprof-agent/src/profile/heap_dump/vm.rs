//! Heap dumps by the VM's own dumper (docs/heap_dump.md, "Two dumpers").
//!
//! HotSpot writes its dump into a file of a private directory the agent
//! creates for it (mode 0700, beside the output file, or in the system's
//! temporary directory with `net=`); the writer thread follows that file
//! while it grows ([`VmStream`], a `sink::Stream`). What HotSpot writes
//! before its heap records (strings, classes, thread stacks) is read and
//! translated by `transcode::hotspot` (class serials ours, class names in
//! Java spelling) and held back until the first heap record, so a dump the
//! VM fails to make early (no module, a full disk) leaves nothing in the
//! output and the walk can take over. Then, in binary output:
//!
//! * the first VM dump of a stream keeps the VM's identifiers and serials
//!   (`vocab::id_space`), so its heap records need no change: when the
//!   output is a plain file and binary 1.0.2, the VM's file itself becomes
//!   the output once the VM is done (`Sink::adopt`: the output so far and
//!   the translated records are written at its beginning, its heap records
//!   stay where the VM wrote them); otherwise its heap records are copied
//!   as they are (`Sink::copy_range`: by the kernel into a file or a
//!   socket), while the VM writes them;
//! * a later dump (or a first one whose serials would meet ours) has every
//!   identifier tagged with its number: its heap records are read a piece
//!   at a time and tagged in place as they are copied
//!   (`Translator::tag_heap`), while the VM writes them.
//!
//! Text output gets the records through `transcode::text` and the text
//! serializer, in the original's order (`vm_text`). Nothing of the dump is
//! held in memory but the record being read (HotSpot's segments are 1-8
//! MiB; a larger one, a single array, is tagged in pieces).
//!
//! Our output keeps everything else: the records already written, the
//! traces written before the dump, the framing of this run's version
//! (1.0.2: HotSpot's segments as they are, then HEAP DUMP END; 1.0.1: one
//! HEAP DUMP record, written once the VM's dump is complete since its
//! length comes first), gzip and sockets (the sink's business). A failure
//! after heap records went out ends the dump there, well-formed, and is
//! reported.

use crate::format::{HeapTotals, HprofVersion, Stamp};
use crate::reader::{HprofReader, ReadOptions, RecordBody};
use crate::sink::{Adoption, FileRange, SinkAnswer, SinkRequest, Step, Stream};
use crate::transcode::hotspot::{self, Counts, HeapScan, OurClasses, Serials, Translator};
use crate::transcode::text;
use crate::vm::output::BoxedFormat;
use crate::vocab::{sub_tag, tag};
use crossbeam_channel::Sender;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

pub use super::scratch_dir::ScratchDir;
use super::vm_text::{Later, TextState};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The VM's dumper is still writing.
pub const RUNNING: u8 = 0;
/// It returned and its file is complete.
pub const FINISHED: u8 = 1;
/// It failed (its file, if any, is incomplete).
pub const FAILED: u8 = 2;

/// Output of one step is cut after about this many bytes (the writer
/// pushes it to the sink in between).
const STEP_OUTPUT: usize = 4 << 20;

/// How long a read of the VM's file waits for bytes the file's size says
/// are there (they always are: this bounds a misbehaving filesystem).
const READ_WAIT: Duration = Duration::from_secs(10);

/// What the dump thread and the stream share.
#[derive(Default)]
pub struct Shared {
    /// [`RUNNING`], [`FINISHED`] or [`FAILED`].
    pub vm_state: AtomicU8,
    /// Bytes of the VM's file copied so far (progress).
    pub consumed: AtomicU64,
    /// The dump thread stopped waiting: the stream ends at its next step.
    pub abandoned: AtomicBool,
}

/// How the stream ended.
#[derive(Debug)]
pub struct Outcome {
    pub result: Result<Counts, String>,
    /// Heap records of this dump reached the output.
    pub emitted: bool,
    /// Bytes of the VM's file read.
    pub bytes: u64,
    /// How the heap records reached the output (for the log).
    pub how: String,
}

/// Consecutive heap records copied by one request, at most.
const COPY_RUN: u64 = 64 << 20;

/// A record other than a heap record among the VM's heap records is read
/// whole to be translated; larger ones are refused.
const STRAY_RECORD_LIMIT: u64 = 64 << 20;

/// Where the stream is in the VM's file.
enum Phase {
    /// Records read by the crate's reader: the records before the heap;
    /// for text the heap records' first pass too (`vm_text`).
    Records,
    /// Binary: the heap records from this offset of the VM's file, not
    /// read by the crate's reader: copied as they are (raw), tagged as
    /// they are copied (a later dump), or (raw, into a file) left where
    /// the VM wrote them once its file becomes the output.
    Heap { pos: u64 },
    /// The VM's file became the output.
    Adopted,
    /// Text: the objects, then the classes, read again from the complete
    /// VM's file.
    Text(Box<Later>),
}

/// A heap record of a tagged dump being tagged as it is copied.
struct TagRun {
    /// Its first byte in the VM's file (the header).
    pos: u64,
    /// Its body: the next byte to read, and its end.
    at: u64,
    end: u64,
    scan: HeapScan,
    /// Read, not done yet: the start of a sub-record the last piece did
    /// not hold whole.
    carry: Vec<u8>,
    /// Body bytes written out so far.
    written: u64,
}

/// A heap record of a tagged dump up to this size is read and tagged whole
/// (a damaged one then reaches the output not at all); a larger one in
/// pieces of [`TAG_PIECE`], and the writer writes out each piece before
/// the next is read: a piece is read, tagged and written while it is in
/// the processor's cache (L2: 512 KiB a core on the benchmark machine).
/// Whole records of up to 16 MiB, and steps of 4 MiB, cost the writer
/// 4-7% more CPU (JDK 17, 232 MB dumps: medians of 18 dumps each, in
/// alternating JVMs, 0.235 against 0.22 and 0.24 against 0.23 CPU-s), and
/// its buffer grew to the largest record.
const WHOLE_RECORD: u64 = TAG_PIECE;
const TAG_PIECE: u64 = 512 << 10;

/// What the sink is to do after the current step.
enum Request {
    Copy {
        offset: u64,
        len: u64,
    },
    Adopt {
        keep_from: u64,
    },
    /// Asked once, before the VM's file is followed.
    MayAdopt,
}

/// The VM's dump file as it grows: a read at its current end waits for
/// more while the VM still writes (bounded by [`READ_WAIT`]).
struct TailFile {
    file: File,
    shared: Arc<Shared>,
}

impl Read for TailFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let start = Instant::now();
        loop {
            let n = self.file.read(buf)?;
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
            if self.shared.vm_state.load(Ordering::Acquire) != RUNNING {
                // Bytes written just before the VM returned are there now.
                return self.file.read(buf);
            }
            if start.elapsed() > READ_WAIT {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the VM's dump file stopped growing",
                ));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

enum Mode {
    Binary {
        t: Box<Translator>,
        /// Known at the first step, from the format.
        version: Option<HprofVersion>,
    },
    Text(Box<TextState>),
}

struct Input {
    reader: HprofReader<TailFile>,
    /// A second handle for the file's size and record headers.
    probe: File,
    /// The VM's file is freed up to here (see [`PUNCH_STEP`]); `None` once
    /// its filesystem refused.
    punched: Option<u64>,
    /// The file's size when last asked: that much of it is there.
    known: u64,
    /// Bytes of the file read ahead from `ahead_at`, for record headers.
    ahead: Vec<u8>,
    ahead_at: u64,
}

/// Record headers are read this many bytes ahead: the records before the
/// heap are small (about 42 000 in 2 MB for a small program), and a system
/// call for each header and another for the file's size took most of the
/// writer's time there (measured on JDK 17: 0.06 of its 0.11 CPU-s of a
/// dump whose VM file became the output).
const HEAD_AHEAD: usize = 64 << 10;

impl Input {
    fn new(reader: HprofReader<TailFile>, probe: File) -> Input {
        Input {
            reader,
            probe,
            punched: Some(0),
            known: 0,
            ahead: Vec::new(),
            ahead_at: 0,
        }
    }

    /// The file's size now (and what is known to be there from now on).
    fn size(&mut self) -> Result<u64, String> {
        self.known = self.probe.metadata().map_err(|e| e.to_string())?.len();
        Ok(self.known)
    }

    /// The tag and body length of the record at `pos`, whose header is
    /// in the file: from the bytes read ahead, or read again from `pos`
    /// with `ahead` bytes (what the VM wrote stays as it is: only the file
    /// grows).
    fn head(&mut self, pos: u64, ahead: usize) -> Result<(u8, u64), String> {
        let within = pos
            .checked_sub(self.ahead_at)
            .and_then(|at| usize::try_from(at).ok())
            .filter(|&at| at + 9 <= self.ahead.len());
        let at = match within {
            Some(at) => at,
            None => {
                self.ahead.clear();
                self.ahead_at = pos;
                crate::os::read_at_append(&self.probe, &mut self.ahead, ahead.max(9), pos)
                    .map_err(|e| format!("cannot read the VM's dump file: {e}"))?;
                if self.ahead.len() < 9 {
                    return Err(format!(
                        "cannot read the VM's dump file: no record header at byte {pos}"
                    ));
                }
                0
            }
        };
        let h = &self.ahead[at..at + 9];
        Ok((
            h[0],
            u64::from(u32::from_be_bytes([h[5], h[6], h[7], h[8]])),
        ))
    }

    /// The complete record at `pos` if the part of the file known to be
    /// there holds it (no need to ask the file's size).
    fn known_record(&mut self, pos: u64) -> Result<Option<(u8, u64)>, String> {
        if pos + 9 > self.known {
            return Ok(None);
        }
        let (t, n) = self.head(pos, HEAD_AHEAD)?;
        Ok((pos + 9 + n <= self.known).then_some((t, n)))
    }

    /// Free what is copied of the VM's file, up to `pos`, every
    /// [`PUNCH_STEP`] bytes.
    fn punch_to(&mut self, pos: u64) {
        if let Some(done) = self.punched {
            let upto = pos & !0xfff;
            if upto >= done + PUNCH_STEP {
                self.punched = crate::os::punch_hole(&self.probe, done, upto - done)
                    .ok()
                    .map(|()| upto);
            }
        }
    }
}

/// Raw: note what the record just translated into `span` of the held
/// bytes means for moving strings after the heap (see
/// `VmStream::movable`).
fn note_movable(
    body: &RecordBody,
    span: std::ops::Range<usize>,
    movable: &mut Vec<(usize, usize, u64)>,
    pinned: &mut rustc_hash::FxHashSet<u64>,
) {
    match body {
        RecordBody::Utf8 { id, text }
            if text.bytes().any(|c| matches!(c, b'.' | b';' | b'[' | b'/')) =>
        {
            movable.push((span.start, span.end, *id));
        }
        RecordBody::LoadClass(lc) => {
            pinned.insert(lc.name_id);
        }
        RecordBody::Frame(f) => {
            pinned.extend([f.method_name_id, f.signature_id, f.source_file_id]);
        }
        _ => {}
    }
}

/// Where a record of the VM's other than a heap record goes once our heap
/// dump has begun: inside our one 1.0.1 HEAP DUMP record (`in_record`) it
/// waits in `after_heap` for the record's end, else it goes out now.
fn outside_heap_record<'a>(
    in_record: bool,
    after_heap: &'a mut Vec<u8>,
    out: &'a mut Vec<u8>,
) -> &'a mut Vec<u8> {
    if in_record {
        after_heap
    } else {
        out
    }
}

/// What is at `pos` of the VM's file, `len` bytes long now.
enum Next {
    /// A complete record: its tag and body length.
    Record(u8, u64),
    /// Nothing to read yet (the VM still writes), or the end.
    Stop(Step),
}

/// The complete record at `pos`, if there is one; an error where the
/// finished file ends inside or before a record (`ended`: its HEAP DUMP
/// END was seen, so the end is expected). `ahead`: bytes read at once
/// where the header is not read yet (small records follow).
fn next_record(
    input: &mut Input,
    pos: u64,
    len: u64,
    running: bool,
    ended: bool,
    ahead: usize,
) -> Result<Next, String> {
    if len < pos + 9 {
        if running {
            return Ok(Next::Stop(Step::Wait));
        }
        if len == pos && ended {
            return Ok(Next::Stop(Step::Done));
        }
        return Err(format!(
            "the VM's dump file ends at byte {len}, inside or before a record at {pos}"
        ));
    }
    let (t, n) = input.head(pos, ahead)?;
    if len < pos + 9 + n {
        if running {
            return Ok(Next::Stop(Step::Wait));
        }
        return Err(format!(
            "the VM's dump file ends at byte {len}, inside the record at {pos}"
        ));
    }
    Ok(Next::Record(t, n))
}

/// The tag and body length of the VM's record at `pos`.
fn record_head(probe: &File, pos: u64) -> Result<(u8, u64), String> {
    let mut head = [0u8; 9];
    probe
        .read_exact_at(&mut head, pos)
        .map_err(|e| format!("cannot read the VM's dump file: {e}"))?;
    Ok((
        head[0],
        u64::from(u32::from_be_bytes([head[5], head[6], head[7], head[8]])),
    ))
}

/// Whether the VM's complete file holds, from `pos` to its end (`len`),
/// heap records and then one HEAP DUMP END, exactly.
fn only_heap_records(probe: &File, mut pos: u64, len: u64) -> Result<bool, String> {
    while pos + 9 <= len {
        let (t, n) = record_head(probe, pos)?;
        pos += 9 + n;
        match t {
            tag::HEAP_DUMP_SEGMENT | tag::HEAP_DUMP => {}
            tag::HEAP_DUMP_END => return Ok(n == 0 && pos == len),
            _ => return Ok(false),
        }
    }
    Ok(false)
}

/// Copied parts of the VM's file are freed (holes punched) every this many
/// bytes: the file then needs disk space only for what is not copied yet,
/// and its dirty pages are dropped instead of written back to the disk
/// (which otherwise writes every byte twice: the VM's file and our output).
const PUNCH_STEP: u64 = 8 << 20;

/// The writer-thread side of one VM dump.
pub struct VmStream {
    path: PathBuf,
    shared: Arc<Shared>,
    done: Option<Sender<Outcome>>,
    input: Option<Input>,
    mode: Mode,
    /// Records before the first heap record, held back (see the module
    /// documentation).
    held: Vec<u8>,
    /// The heap dump has begun in our output (segment, record or text).
    began: bool,
    /// HEAP DUMP END seen.
    ended: bool,
    /// 1.0.1: bytes of the one HEAP DUMP record still to write.
    v101_left: Option<u64>,
    /// Tagged: the heap record being tagged.
    tagging: Option<TagRun>,
    /// Text: where the first heap record is.
    first_heap: Option<u64>,
    stamp: Stamp,
    totals: HeapTotals,
    /// Back from the translator when the stream ends (the next dump's
    /// fresh serials start there).
    next_serial: Arc<AtomicU64>,
    /// This dump's number in the run (a tagged restart uses it).
    dump_number: u32,
    phase: Phase,
    request: Option<Request>,
    /// The output may take the VM's file (binary 1.0.2 into a file); false
    /// once the sink refused or the file holds more than heap records.
    adoptable: bool,
    /// Why the VM's file did not become the output (for the log).
    not_adopted: Option<String>,
    /// The sink was asked whether it could take the VM's file.
    asked_sink: bool,
    /// 1.0.1: records met among the heap records, written after the one
    /// HEAP DUMP record; or the records moved after the heap of an adopted
    /// file.
    after_heap: Vec<u8>,
    /// Raw: UTF8 records in `held` (start, end, ID) that no heap record
    /// can name (their text has `.`, `;`, `[` or `/`, which a field name
    /// cannot hold: JVMS 4.2.2), so they may follow the heap records when
    /// the VM's file becomes the output and room before them is short.
    movable: Vec<(usize, usize, u64)>,
    /// IDs of strings the records before the heap name (frames, classes):
    /// never moved.
    pinned: rustc_hash::FxHashSet<u64>,
    /// The movable pieces of `held` for the adoption.
    movable_spans: Vec<(usize, usize)>,
}

impl VmStream {
    #[allow(clippy::too_many_arguments)]
    /// `file_output`: our output is a file of the agent's own (not a
    /// socket), which the VM's file may become (binary 1.0.2).
    pub fn new(
        path: PathBuf,
        shared: Arc<Shared>,
        done: Sender<Outcome>,
        text: bool,
        dump_number: u32,
        ours: OurClasses,
        next_serial: Arc<AtomicU64>,
        stamp: Stamp,
        totals: HeapTotals,
        file_output: bool,
    ) -> VmStream {
        let first = next_serial.load(Ordering::Relaxed) as u32;
        let mode = if text {
            Mode::Text(Box::new(TextState::new(Serials::new(
                first,
                ours.system_trace,
            ))))
        } else {
            // The first VM dump keeps the VM's identifiers (module
            // documentation).
            let t = if dump_number == 1 {
                Translator::new_raw(ours, first)
            } else {
                Translator::new(dump_number, ours, first)
            };
            Mode::Binary {
                t: Box::new(t),
                version: None,
            }
        };
        VmStream {
            path,
            shared,
            done: Some(done),
            input: None,
            mode,
            held: Vec::new(),
            began: false,
            ended: false,
            v101_left: None,
            tagging: None,
            first_heap: None,
            stamp,
            totals,
            next_serial,
            dump_number,
            phase: Phase::Records,
            request: None,
            // Only a raw dump's heap records can stay where the VM wrote
            // them.
            adoptable: file_output && !text && dump_number == 1,
            not_adopted: None,
            asked_sink: false,
            movable: Vec::new(),
            pinned: Default::default(),
            movable_spans: Vec::new(),
            after_heap: Vec::new(),
        }
    }

    /// How the heap records went (for the log).
    fn how(&self) -> String {
        match (&self.mode, &self.phase) {
            (Mode::Text(_), _) => "read into text".into(),
            (_, Phase::Adopted) => "the VM's file became the output".into(),
            (Mode::Binary { t, .. }, _) if !t.is_raw() => "tagged as they were copied".into(),
            (_, Phase::Heap { .. }) => match &self.not_adopted {
                Some(why) => format!("copied as they are (not adopted: {why})"),
                None => "copied as they are".into(),
            },
            (_, Phase::Records | Phase::Text(_)) => "not reached".into(),
        }
    }

    fn vm_state(&self) -> u8 {
        self.shared.vm_state.load(Ordering::Acquire)
    }

    fn finish(&mut self, result: Result<Counts, String>) {
        let next = match &self.mode {
            Mode::Binary { t, .. } => t.next_serial(),
            Mode::Text(st) => st.serials.next(),
        };
        self.next_serial.store(u64::from(next), Ordering::Relaxed);
        if let Some(tx) = self.done.take() {
            let bytes = self.shared.consumed.load(Ordering::Relaxed);
            let how = self.how();
            let _ = tx.send(Outcome {
                result,
                emitted: self.began,
                bytes,
                how,
            });
        }
    }

    /// Open the VM's file once it holds a header.
    fn open(&mut self) -> Result<bool, String> {
        use std::os::unix::fs::OpenOptionsExt;
        let state = self.vm_state();
        // Read-write: the file may become the output, and what is copied
        // of it is freed as it goes (`Input::punch_to`), which a file
        // open only for reading refuses (EBADF).
        let f = match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&self.path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound && state == RUNNING => return Ok(false),
            Err(e) => return Err(format!("cannot open the VM's dump file: {e}")),
        };
        let len = f.metadata().map_err(|e| e.to_string())?.len();
        // "JAVA PROFILE 1.0.2\0" + id size + time.
        if len < 31 && state == RUNNING {
            return Ok(false);
        }
        let probe = f.try_clone().map_err(|e| e.to_string())?;
        // Binary reads only the records before the heap with it; text's
        // first pass needs only the roots and the CLASS DUMPs.
        let options = ReadOptions::skip_bodies();
        let tail = TailFile {
            file: f,
            shared: self.shared.clone(),
        };
        let reader =
            HprofReader::with_options(tail, options).map_err(|e| format!("the VM's dump: {e}"))?;
        hotspot::check_header(reader.header()).map_err(|e| e.to_string())?;
        self.input = Some(Input::new(reader, probe));
        Ok(true)
    }

    fn advance(&mut self, fmt: &mut BoxedFormat, out: &mut Vec<u8>) -> Result<Step, String> {
        if self.input.is_none() {
            if let Mode::Binary { version, .. } = &mut self.mode {
                let v = fmt
                    .binary_options()
                    .map(|o| o.version)
                    .unwrap_or(HprofVersion::V1_0_2);
                *version = Some(v);
                // 1.0.1 has one HEAP DUMP record, not the VM's segments.
                self.adoptable &= v == HprofVersion::V1_0_2;
            }
            // Whether the sink could take the VM's file decides whether
            // it is copied while the VM writes it or taken once complete.
            if self.adoptable && !self.asked_sink {
                self.asked_sink = true;
                self.request = Some(Request::MayAdopt);
                return Ok(Step::More);
            }
            if !self.open()? {
                return Ok(Step::Wait);
            }
        }
        match &mut self.phase {
            Phase::Records => {}
            Phase::Heap { pos } => {
                let pos = *pos;
                return self.advance_heap(fmt, out, pos);
            }
            Phase::Adopted => {
                // The strings moved after the heap records, then done.
                out.append(&mut self.after_heap);
                return Ok(Step::Done);
            }
            Phase::Text(later) => {
                let Mode::Text(st) = &mut self.mode else {
                    return Err("internal: text passes of a binary dump".into());
                };
                if !later.step(st, fmt, out, STEP_OUTPUT)? {
                    return Ok(Step::More);
                }
                self.ended = true;
                fmt.heap_dump_end(out, self.stamp);
                return Ok(Step::Done);
            }
        }
        let raw = matches!(&self.mode, Mode::Binary { t, .. } if t.is_raw());
        // The records before a raw dump's heap may have to be read again
        // (a restart, tagged), and text reads its heap records again: not
        // freed.
        let free = matches!(&self.mode, Mode::Binary { t, .. } if !t.is_raw());
        let Some(input) = self.input.as_mut() else {
            return Ok(Step::Wait);
        };
        // The state is read before the size: once it says the VM is done,
        // the size read after it is final.
        let state = self.shared.vm_state.load(Ordering::Acquire);
        let pos = input.reader.position();
        self.shared.consumed.store(pos, Ordering::Relaxed);
        if free {
            input.punch_to(pos);
        }
        if state == FAILED {
            return Err("the VM's dumper failed".into());
        }
        let running = state == RUNNING;
        let head_tag = match input.known_record(pos)? {
            Some((t, _)) => t,
            None => {
                let len = input.size()?;
                match next_record(input, pos, len, running, self.ended, HEAD_AHEAD)? {
                    Next::Record(t, _) => t,
                    Next::Stop(step) => return Ok(step),
                }
            }
        };
        let is_heap = matches!(head_tag, tag::HEAP_DUMP_SEGMENT | tag::HEAP_DUMP);
        if let (true, Mode::Binary { t, .. }) = (is_heap, &mut self.mode) {
            if !t.is_raw() || t.raw_serials_fit() {
                self.phase = Phase::Heap { pos };
            } else {
                // Its serials would meet ours: translated from the start.
                t.restart_tagged(self.dump_number);
                self.held.clear();
                self.movable.clear();
                self.pinned.clear();
                self.input = None;
                self.adoptable = false;
                self.not_adopted = Some("its stack trace or thread serials are too many".into());
            }
            return Ok(Step::More);
        }
        let Some(input) = self.input.as_mut() else {
            return Ok(Step::Wait);
        };
        let rec = input
            .reader
            .next_record()
            .map_err(|e| format!("the VM's dump: {e}"))?
            .ok_or("the VM's dump ended early")?;
        match rec.body {
            // Binary dumps leave this phase at their first heap record.
            RecordBody::HeapDumpStart { .. } => {
                self.first_heap.get_or_insert(pos);
                let end = input.reader.position() + u64::from(rec.length);
                self.text_first_pass(fmt, out, end)?;
            }
            RecordBody::HeapDumpEnd => {
                // The VM's file is complete: the objects and classes next.
                self.begin(fmt, out);
                let Some(input) = self.input.as_ref() else {
                    return Err("the VM's dump file is not open".into());
                };
                let from = self.first_heap.unwrap_or(pos);
                let later = Later::new(&input.probe, from, pos)
                    .map_err(|e| format!("cannot read the VM's dump file again: {e}"))?;
                self.phase = Phase::Text(Box::new(later));
            }
            _ => match &mut self.mode {
                Mode::Binary { t, .. } => {
                    if raw && !self.began {
                        let at = self.held.len();
                        t.record(&rec, &mut self.held).map_err(|e| e.to_string())?;
                        note_movable(
                            &rec.body,
                            at..self.held.len(),
                            &mut self.movable,
                            &mut self.pinned,
                        );
                    } else {
                        t.record(&rec, &mut self.held).map_err(|e| e.to_string())?;
                    }
                }
                Mode::Text(st) => {
                    let TextState { syms, serials, .. } = &mut **st;
                    syms.learn(&rec.body);
                    // HotSpot's thread stacks, which its thread roots
                    // name, as TRACEs of ours (held back like the rest).
                    if let RecordBody::Trace(t) = &rec.body {
                        if let Some((serial, _)) = serials.of_trace(t) {
                            let to = if self.began {
                                &mut *out
                            } else {
                                &mut self.held
                            };
                            let ours = crate::reader::Trace {
                                serial,
                                ..t.clone()
                            };
                            text::trace(fmt.as_mut(), to, self.stamp, syms, &ours);
                        }
                    }
                }
            },
        }
        Ok(Step::More)
    }

    /// 1.0.1: the one HEAP DUMP record begins, the length of the VM's heap
    /// records from `pos` on (its file is complete) announced.
    fn begin_v101(&mut self, out: &mut Vec<u8>, pos: u64, len: u64) -> Result<(), String> {
        let Some(input) = self.input.as_ref() else {
            return Err("the VM's dump file is not open".into());
        };
        let total = heap_bytes(&input.probe, pos, len)?;
        if total > u64::from(u32::MAX) {
            return Err(format!(
                "the VM's dump has {total} bytes of heap records, more than a 1.0.1 HEAP DUMP record holds"
            ));
        }
        out.append(&mut self.held);
        hotspot::record_header(out, tag::HEAP_DUMP, self.time(), total as u32);
        self.v101_left = Some(total);
        self.began = true;
        Ok(())
    }

    /// The VM's HEAP DUMP END: ours (1.0.2, text), or the end of our one
    /// HEAP DUMP record and what came among its records (1.0.1).
    fn end_heap(&mut self, fmt: &mut BoxedFormat, out: &mut Vec<u8>) {
        self.ended = true;
        self.begin(fmt, out);
        match &self.mode {
            Mode::Binary {
                version: Some(HprofVersion::V1_0_1),
                ..
            } => out.append(&mut self.after_heap),
            Mode::Binary { .. } => hotspot::record_header(out, tag::HEAP_DUMP_END, self.time(), 0),
            Mode::Text(_) => fmt.heap_dump_end(out, self.stamp),
        }
    }

    /// A binary dump from its first heap record at `pos`: a raw one's VM
    /// file becomes the output once complete (when the output can take
    /// it), or its heap records are copied as they are, as the VM writes
    /// them; a tagged one's are tagged as they are copied.
    fn advance_heap(
        &mut self,
        fmt: &mut BoxedFormat,
        out: &mut Vec<u8>,
        mut pos: u64,
    ) -> Result<Step, String> {
        if self.tagging.is_some() {
            return self.tag_piece(out);
        }
        let v101 = self.is_v101();
        let raw = matches!(&self.mode, Mode::Binary { t, .. } if t.is_raw());
        let Some(input) = self.input.as_mut() else {
            return Err("the VM's dump file is not open".into());
        };
        let state = self.shared.vm_state.load(Ordering::Acquire);
        self.shared.consumed.store(pos, Ordering::Relaxed);
        if !self.adoptable {
            input.punch_to(pos);
        }
        let len = input.size()?;
        if state == FAILED {
            return Err("the VM's dumper failed".into());
        }
        let running = state == RUNNING;
        if running && (self.adoptable || v101) {
            // Both need the whole file.
            return Ok(Step::Wait);
        }
        if self.adoptable {
            if only_heap_records(&input.probe, pos, len)? {
                let pinned = &self.pinned;
                self.movable_spans = self
                    .movable
                    .iter()
                    .filter(|(_, _, id)| !pinned.contains(id))
                    .map(|&(s, e, _)| (s, e))
                    .collect();
                self.request = Some(Request::Adopt { keep_from: pos });
                return Ok(Step::More);
            }
            self.adoptable = false;
            self.not_adopted = Some("other records among its heap records".into());
        }
        let (head_tag, rec_len) = match next_record(input, pos, len, running, self.ended, 9)? {
            Next::Record(t, n) => (t, n),
            Next::Stop(step) => return Ok(step),
        };
        let end = pos + 9 + rec_len;
        match head_tag {
            tag::HEAP_DUMP_SEGMENT | tag::HEAP_DUMP if v101 => {
                if self.v101_left.is_none() {
                    self.begin_v101(out, pos, len)?;
                }
                let left = self.v101_left.unwrap_or(0);
                if rec_len > left {
                    return Err("the VM's heap records grew while being copied".into());
                }
                self.v101_left = Some(left - rec_len);
                if !raw {
                    return self.start_tagging(out, pos, end);
                }
                self.request = Some(Request::Copy {
                    offset: pos + 9,
                    len: rec_len,
                });
                pos = end;
            }
            tag::HEAP_DUMP_SEGMENT | tag::HEAP_DUMP if !raw => {
                self.begin(fmt, out);
                return self.start_tagging(out, pos, end);
            }
            tag::HEAP_DUMP_SEGMENT | tag::HEAP_DUMP => {
                // A run of complete heap records, copied as one range.
                let start = pos;
                pos = end;
                while pos - start < COPY_RUN && pos + 9 <= len {
                    let (t, n) = record_head(&input.probe, pos)?;
                    if !matches!(t, tag::HEAP_DUMP_SEGMENT | tag::HEAP_DUMP) || pos + 9 + n > len {
                        break;
                    }
                    pos += 9 + n;
                }
                self.begin(fmt, out);
                self.request = Some(Request::Copy {
                    offset: start,
                    len: pos - start,
                });
            }
            tag::HEAP_DUMP_END => {
                self.end_heap(fmt, out);
                pos = end;
            }
            _ => {
                // Another record among the heap records: translated.
                if rec_len > STRAY_RECORD_LIMIT {
                    return Err(format!(
                        "a record of {rec_len} bytes (tag 0x{head_tag:02x}) among the VM's heap records"
                    ));
                }
                let mut bytes = b"JAVA PROFILE 1.0.2\0".to_vec();
                bytes.extend_from_slice(&hotspot::ID_SIZE.to_be_bytes());
                bytes.extend_from_slice(&0u64.to_be_bytes());
                let at = bytes.len();
                bytes.resize(at + 9 + rec_len as usize, 0);
                input
                    .probe
                    .read_exact_at(&mut bytes[at..], pos)
                    .map_err(|e| format!("cannot read the VM's dump file: {e}"))?;
                let mut r = HprofReader::new(&bytes[..]).map_err(|e| e.to_string())?;
                let rec = r
                    .next_record()
                    .map_err(|e| format!("the VM's dump: {e}"))?
                    .ok_or("the VM's dump: a record ended early")?;
                let Mode::Binary { t, .. } = &mut self.mode else {
                    return Err("internal: verbatim text".into());
                };
                // The heap began at the first heap record, before this one.
                let to = outside_heap_record(v101 && !self.ended, &mut self.after_heap, out);
                t.record(&rec, to).map_err(|e| e.to_string())?;
                pos = end;
            }
        }
        self.phase = Phase::Heap { pos };
        Ok(Step::More)
    }

    /// Heap records are being tagged as they are copied.
    fn tagging_heap(&self) -> bool {
        matches!(self.phase, Phase::Heap { .. })
            && matches!(&self.mode, Mode::Binary { t, .. } if !t.is_raw())
    }

    fn is_v101(&self) -> bool {
        matches!(
            self.mode,
            Mode::Binary {
                version: Some(HprofVersion::V1_0_1),
                ..
            }
        )
    }

    /// Tagged: the complete heap record at `pos..end` of the VM's file is
    /// tagged as it is copied, from its first piece on.
    fn start_tagging(&mut self, out: &mut Vec<u8>, pos: u64, end: u64) -> Result<Step, String> {
        self.tagging = Some(TagRun {
            pos,
            at: pos + 9,
            end,
            scan: HeapScan::Start,
            carry: Vec::new(),
            written: 0,
        });
        self.tag_piece(out)
    }

    /// The next piece of the heap record being tagged (see [`TagRun`]):
    /// read straight into `out`, tagged there, and what a piece ends in
    /// the middle of kept for the next one. On an error, `out` keeps only
    /// whole pieces (none of a record read whole).
    fn tag_piece(&mut self, out: &mut Vec<u8>) -> Result<Step, String> {
        let v101 = self.is_v101();
        let time = self.time();
        let (Some(run), Some(input), Mode::Binary { t, .. }) =
            (self.tagging.as_mut(), self.input.as_ref(), &mut self.mode)
        else {
            return Err("internal: no heap record to tag".into());
        };
        let body_len = run.end - run.pos - 9;
        let mark = out.len();
        if run.at == run.pos + 9 && !v101 {
            // 1.0.2: HotSpot's framing; tagging keeps every length.
            let (head_tag, _) = record_head(&input.probe, run.pos)?;
            hotspot::record_header(out, head_tag, time, body_len as u32);
        }
        let piece = if body_len <= WHOLE_RECORD {
            run.end - run.at
        } else {
            (run.end - run.at).min(TAG_PIECE)
        };
        let body = out.len();
        out.extend_from_slice(&run.carry);
        let tagged = match crate::os::read_at_append(&input.probe, out, piece as usize, run.at) {
            Ok(n) if n == piece as usize => t
                .tag_heap(&mut out[body..], &mut run.scan)
                .map_err(|e| e.to_string()),
            Ok(n) => Err(format!(
                "the VM's dump file ends at byte {}, inside the record at {}",
                run.at + n as u64,
                run.pos
            )),
            Err(e) => Err(format!("cannot read the VM's dump file: {e}")),
        };
        let done = match tagged {
            Ok(n) => n,
            Err(e) => {
                out.truncate(if run.written == 0 { mark } else { body });
                return Err(e);
            }
        };
        run.carry.clear();
        run.carry.extend_from_slice(&out[body + done..]);
        out.truncate(body + done);
        run.written += done as u64;
        run.at += piece;
        self.shared.consumed.store(run.at, Ordering::Relaxed);
        if run.at < run.end {
            return Ok(Step::More);
        }
        if !run.carry.is_empty() || run.scan != HeapScan::Start {
            return Err(
                "a heap sub-record of the VM's dump runs past the end of its record".into(),
            );
        }
        let end = run.end;
        self.tagging = None;
        self.phase = Phase::Heap { pos: end };
        Ok(Step::More)
    }

    fn time(&self) -> u32 {
        self.stamp.micros_since_load as u32
    }

    /// Our heap dump begins (1.0.2 and text; 1.0.1 wrote its header).
    fn begin(&mut self, fmt: &mut BoxedFormat, out: &mut Vec<u8>) {
        if self.began {
            return;
        }
        self.began = true;
        out.append(&mut self.held);
        if let Mode::Text(_) = self.mode {
            fmt.heap_dump_begin(out, self.stamp, &self.totals);
        }
    }

    /// Text, the first pass over one of HotSpot's heap records, whose body
    /// ends at `end`: its roots are written, its CLASS DUMPs noted
    /// (`vm_text`).
    fn text_first_pass(
        &mut self,
        fmt: &mut BoxedFormat,
        out: &mut Vec<u8>,
        end: u64,
    ) -> Result<(), String> {
        self.begin(fmt, out);
        let (Some(input), Mode::Text(st)) = (self.input.as_mut(), &mut self.mode) else {
            return Err("internal: a text pass over a binary dump".into());
        };
        let reader = &mut input.reader;
        while reader.position() < end {
            let at = reader.position();
            let sub = reader
                .next_heap_sub_record()
                .map_err(|e| format!("the VM's dump: {e}"))?
                .ok_or("the VM's heap record ended early")?;
            st.first_pass(fmt, out, sub, at, reader.position());
        }
        Ok(())
    }

    /// After an error: leave our output well-formed. A heap record being
    /// tagged keeps the length its header announced: the array it stopped
    /// in is filled with zeros, the rest with filler sub-records.
    fn close(&mut self, fmt: &mut BoxedFormat, out: &mut Vec<u8>) {
        if !self.began || self.ended {
            return;
        }
        self.ended = true;
        let v101 = self.is_v101();
        let mut gap = 0;
        if let Some(run) = self.tagging.take() {
            // 1.0.2: nothing of a record whose header was taken back.
            if v101 || run.written > 0 {
                let mut left = (run.end - run.pos - 9).saturating_sub(run.written);
                let array = match run.scan {
                    HeapScan::Start => 0,
                    HeapScan::Values(n) => n,
                    HeapScan::Elements(n) => n.saturating_mul(8),
                }
                .min(left);
                out.resize(out.len() + array as usize, 0);
                left -= array;
                gap = left;
            }
        }
        match &self.mode {
            // The record's length is out: what is left is filled so that
            // readers still find the next record.
            Mode::Binary { .. } if v101 => fill(out, self.v101_left.unwrap_or(0) + gap),
            Mode::Binary { .. } => {
                fill(out, gap);
                hotspot::record_header(out, tag::HEAP_DUMP_END, self.time(), 0)
            }
            Mode::Text(_) => fmt.heap_dump_end(out, self.stamp),
        }
    }
}

/// `n` bytes of heap sub-records that say nothing: one byte array of ID 0
/// (or roots of ID 0 where that is too long).
fn fill(out: &mut Vec<u8>, n: u64) {
    match n {
        0 => {}
        18.. => {
            let len = (n - 18) as u32;
            out.push(sub_tag::PRIMITIVE_ARRAY_DUMP);
            out.extend_from_slice(&0u64.to_be_bytes());
            out.extend_from_slice(&0u32.to_be_bytes());
            out.extend_from_slice(&len.to_be_bytes());
            out.push(crate::vocab::BasicType::Byte.code());
            out.resize(out.len() + len as usize, 0);
        }
        // A thread block root (ID, thread serial), a JNI global (two IDs).
        13 | 17 => {
            out.push(if n == 13 {
                sub_tag::ROOT_THREAD_BLOCK
            } else {
                sub_tag::ROOT_JNI_GLOBAL
            });
            out.resize(out.len() + n as usize - 1, 0);
        }
        _ => {
            for _ in 0..n / 9 {
                out.push(sub_tag::ROOT_UNKNOWN);
                out.extend_from_slice(&0u64.to_be_bytes());
            }
        }
    }
}

/// Bytes of the heap records' bodies from `pos` to the end of the file.
fn heap_bytes(probe: &File, mut pos: u64, len: u64) -> Result<u64, String> {
    let mut total = 0u64;
    while pos + 9 <= len {
        let mut head = [0u8; 9];
        probe
            .read_exact_at(&mut head, pos)
            .map_err(|e| format!("cannot read the VM's dump file: {e}"))?;
        let n = u64::from(u32::from_be_bytes([head[5], head[6], head[7], head[8]]));
        if matches!(head[0], tag::HEAP_DUMP_SEGMENT | tag::HEAP_DUMP) {
            total += n;
        }
        pos += 9 + n;
    }
    Ok(total)
}

impl Stream<BoxedFormat> for VmStream {
    fn step(&mut self, fmt: &mut BoxedFormat, out: &mut Vec<u8>) -> Step {
        if self.shared.abandoned.load(Ordering::Relaxed) {
            self.close(fmt, out);
            self.finish(Err("the dump was given up".into()));
            return Step::Done;
        }
        let start = out.len();
        loop {
            let limit = if self.tagging_heap() {
                TAG_PIECE as usize
            } else {
                STEP_OUTPUT
            };
            match self.advance(fmt, out) {
                // A request for the sink ends the step: the writer does it next.
                Ok(Step::More) if self.request.is_none() && out.len() - start < limit => continue,
                Ok(Step::Done) => {
                    let counts = match &self.mode {
                        Mode::Binary { t, .. } => t.counts,
                        Mode::Text(_) => Counts::default(),
                    };
                    self.finish(Ok(counts));
                    return Step::Done;
                }
                Ok(s) => return s,
                Err(e) => {
                    self.close(fmt, out);
                    self.finish(Err(e));
                    return Step::Done;
                }
            }
        }
    }

    fn sink_request(&mut self) -> Option<SinkRequest<'_>> {
        let request = self.request.take()?;
        if let Request::MayAdopt = request {
            return self.path.parent().map(SinkRequest::MayAdopt);
        }
        let input = self.input.as_ref()?;
        Some(match request {
            Request::MayAdopt => return None,
            Request::Copy { offset, len } => SinkRequest::Copy(FileRange {
                file: &input.probe,
                offset,
                len,
            }),
            Request::Adopt { keep_from } => SinkRequest::Adopt(Adoption {
                file: &input.probe,
                path: &self.path,
                keep_from,
                head: &self.held,
                movable: &self.movable_spans,
            }),
        })
    }

    fn answer(&mut self, answer: SinkAnswer) {
        let result = match answer {
            SinkAnswer::MayAdopt(Ok(())) => return,
            SinkAnswer::MayAdopt(Err(why)) => {
                self.adoptable = false;
                self.not_adopted = Some(why);
                return;
            }
            SinkAnswer::Adopted(r) => r,
        };
        match result {
            Ok(after) => {
                self.held.clear();
                self.after_heap = after;
                self.began = true;
                self.ended = true;
                self.phase = Phase::Adopted;
                if let Some(input) = &self.input {
                    if let Ok(m) = input.probe.metadata() {
                        self.shared.consumed.store(m.len(), Ordering::Relaxed);
                    }
                }
            }
            Err(reason) => {
                // Copied instead, from the heap record the adoption
                // would have kept (the phase still points there).
                self.adoptable = false;
                self.not_adopted = Some(reason);
            }
        }
    }

    fn abandon(&mut self) {
        self.finish(Err("output stopped".into()));
    }
}

impl Drop for VmStream {
    fn drop(&mut self) {
        self.finish(Err("the stream was dropped".into()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{BinaryFormat, BinaryOptions, IdSize};
    use crate::reader::{collect, HprofReader};
    use crate::sink::{Sink, Writer};
    use crate::transcode::hotspot::tests::hotspot_like_with;

    /// One VM dump (HotSpot-like, complete) streamed by the writer into a
    /// binary 1.0.2 file that already holds a header: what the stream said
    /// and what the file holds.
    fn stream_into_file(name: &str, symbols: u64) -> (Outcome, crate::reader::Parsed, PathBuf) {
        let (o, p, dir, _) = stream_vm_file(name, &hotspot_like_with(symbols), 1);
        (o, p, dir)
    }

    /// `vm_dump` as the VM's complete file, streamed as the run's dump
    /// `number`; also how many bytes of the VM's file the disk still held
    /// when the stream ended.
    fn stream_vm_file(
        name: &str,
        vm_dump: &[u8],
        number: u32,
    ) -> (Outcome, crate::reader::Parsed, PathBuf, u64) {
        use std::os::unix::fs::MetadataExt;
        let dir =
            std::env::temp_dir().join(format!("hprof-rs-vmstream-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("out.hprof");
        let fmt: BoxedFormat = Box::new(BinaryFormat::new(BinaryOptions {
            version: HprofVersion::V1_0_2,
            id_size: IdSize::Eight,
            ..Default::default()
        }));
        let w = Writer::spawn(Sink::create_file(&out, true).unwrap(), fmt).unwrap();
        w.submit(|f, b| f.header(b, Stamp::default()));
        let scratch = ScratchDir::create(out.to_str().unwrap()).unwrap();
        let vm_file = scratch.dump_file();
        std::fs::write(&vm_file, vm_dump).unwrap();
        let shared = Arc::new(Shared::default());
        shared.vm_state.store(FINISHED, Ordering::Release);
        let (tx, rx) = crossbeam_channel::bounded(1);
        let ours = OurClasses {
            system_trace: 300_000,
            ..Default::default()
        };
        w.stream(Box::new(VmStream::new(
            vm_file,
            shared,
            tx,
            false,
            number,
            ours,
            Arc::new(AtomicU64::new(0)),
            Stamp::default(),
            HeapTotals::default(),
            true,
        )));
        let outcome = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the stream ends");
        w.stop();
        let held = std::fs::metadata(scratch.dump_file()).map_or(0, |m| m.blocks() * 512);
        drop(scratch);
        let bytes = std::fs::read(&out).unwrap();
        let p = collect(HprofReader::new(&bytes[..]).unwrap()).unwrap();
        (outcome, p, dir, held)
    }

    fn check_dump(p: &crate::reader::Parsed) {
        assert_eq!(p.heap_dumps.len(), 1);
        let d = &p.heap_dumps[0];
        assert!(d.ended && d.segmented);
        let i = &d.instances[0];
        assert_eq!(i.object_id, 0xE000_1000, "the VM's address, kept");
        assert_eq!(p.class_name(i.class_id), Some("p.Foo"));
        assert_eq!(p.string(0x7f00_0020), Some("next"), "the field name");
        assert_eq!(i.trace_serial, 1);
        assert!(p.traces.iter().any(|t| t.serial == 1));
    }

    /// Room enough once the strings no heap record names move after the
    /// heap: the VM's file becomes the output.
    #[test]
    fn the_vm_file_becomes_the_output_when_the_head_fits() {
        let (o, p, dir) = stream_into_file("fits", 200);
        assert!(o.result.is_ok(), "{o:?}");
        assert_eq!(o.how, "the VM's file became the output");
        check_dump(&p);
        // Every string of the VM's is still in the file.
        for i in 0..200u64 {
            assert!(p.string(0x7e00_0000 + i * 8).is_some(), "string {i}");
        }
        let left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(left, [std::ffi::OsString::from("out.hprof")]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Too little room before the VM's heap records (a tiny dump): refused
    /// once the VM is done, and the records are copied instead.
    #[test]
    fn a_head_that_does_not_fit_gets_the_heap_records_copied() {
        let (o, p, dir) = stream_into_file("nofit", 0);
        assert!(o.result.is_ok(), "{o:?}");
        assert!(
            o.how
                .starts_with("copied as they are (not adopted: the output so far"),
            "{}",
            o.how
        );
        check_dump(&p);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Record headers come from bytes read ahead (`Input::head`): with
    /// records before the heap over several of its windows, and headers
    /// across their edges, every record is read, in a raw dump and a
    /// tagged one.
    #[test]
    fn records_before_the_heap_over_many_read_ahead_windows() {
        const SYMBOLS: u64 = 8000;
        let vm = hotspot_like_with(SYMBOLS);
        assert!(vm.len() > 4 * HEAD_AHEAD);
        for number in [1, 2] {
            let (o, p, dir, _) = stream_vm_file(&format!("ahead{number}"), &vm, number);
            assert!(o.result.is_ok(), "{o:?}");
            let tag = if number == 1 {
                0
            } else {
                u64::from(number) << 48
            };
            for i in 0..SYMBOLS {
                assert_eq!(
                    p.string(tag + 0x7e00_0000 + i * 8),
                    Some(format!("(Ljava/lang/String;I)V{i}").as_str()),
                    "dump {number}, string {i}"
                );
            }
            assert_eq!(p.heap_dumps.len(), 1);
            assert_eq!(p.heap_dumps[0].instances[0].object_id, tag + 0xE000_1000);
            let _ = std::fs::remove_dir_all(&dir);
        }
    }

    /// A later dump's heap records are tagged as they are copied, and what
    /// is copied of the VM's file is freed on the way (its file used to be
    /// opened read-only, so every hole punched failed, EBADF, and the file
    /// kept all its bytes until the dump ended).
    #[test]
    fn a_tagged_dump_frees_what_it_copied_of_the_vm_file() {
        const ARRAYS: u64 = 4;
        const BYTES: usize = 8 << 20;
        let mut vm = hotspot_like_with(0);
        // Before the HEAP DUMP END: four segments of one 8 MiB byte[] each.
        vm.truncate(vm.len() - 9);
        for k in 0..ARRAYS {
            hotspot::record(&mut vm, tag::HEAP_DUMP_SEGMENT, 0, |r| {
                r.push(sub_tag::PRIMITIVE_ARRAY_DUMP);
                r.extend_from_slice(&(0xE001_0000 + k * 0x1000).to_be_bytes());
                r.extend_from_slice(&1u32.to_be_bytes());
                r.extend_from_slice(&(BYTES as u32).to_be_bytes());
                r.push(crate::vocab::BasicType::Byte.code());
                r.resize(r.len() + BYTES, k as u8 + 1);
            });
        }
        hotspot::record(&mut vm, tag::HEAP_DUMP_END, 0, |_| {});
        let (o, p, dir, held) = stream_vm_file("tagged-punch", &vm, 2);
        assert!(o.result.is_ok(), "{o:?}");
        assert_eq!(o.how, "tagged as they were copied");
        let d = &p.heap_dumps[0];
        assert_eq!(d.instances[0].object_id, (2 << 48) + 0xE000_1000);
        let arrays: Vec<_> = d
            .primitive_arrays
            .iter()
            .map(|a| {
                (
                    a.array_id,
                    a.length,
                    a.data.as_ref().map(|v| (v[0], v[BYTES - 1])),
                )
            })
            .collect();
        let expected: Vec<_> = (0..ARRAYS)
            .map(|k| {
                (
                    (2 << 48) + 0xE001_0000 + k * 0x1000,
                    BYTES as u32,
                    Some((k as u8 + 1, k as u8 + 1)),
                )
            })
            .collect();
        assert_eq!(arrays, expected);
        // Freed up to the start of the last segment at least (every
        // PUNCH_STEP, at record boundaries): what is left is the last
        // segment and what preceded it within one step.
        let size = vm.len() as u64;
        assert!(
            held <= size - 2 * PUNCH_STEP,
            "the VM's file of {size} bytes still holds {held}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
