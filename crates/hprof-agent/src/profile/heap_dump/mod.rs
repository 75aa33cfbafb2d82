//! `heap=dump`: a complete heap dump, streamed to the output while the VM
//! walks the heap.
//!
//! Sequence (one dump): optional forced GC (`gcbeforedump=y`, the default,
//! so the dump holds live objects only, like `jmap -dump:live`); refresh
//! the class list so every loaded class, array classes included, has a
//! serial, a LOAD CLASS and a tagged mirror; describe each class once
//! (fields, superclass, interfaces: cached across dumps) and compute its
//! field layout; write pending traces; HEAP DUMP BEGIN; the pseudo thread
//! root; FollowReferences with the `walk::Walker` visitor, which writes the
//! roots and one record per visited object in batches; CLASS DUMPs; END.
//!
//! Memory: besides the object table (8 bytes per object, shared with the
//! allocation profile) the walk keeps one open record, a bit per object
//! slot, per-class static values, and at most `MAX_BATCHES_IN_FLIGHT`
//! batches of about 1 MiB queued for the writer.

pub mod epilogue;
pub mod layout;
pub mod scratch_dir;
pub mod vm;
mod vm_text;
pub mod walk;

use super::{Answer, Profile};
use crate::diag;
use crate::format::HeapTotals;
use crate::jvmti::sys::error;
use crate::jvmti::{AgentThread, Jni, Jvmti, Obj, ScratchEnv};
use crate::options::DEBUG_UNPREPARED_REFS;
use crate::protocol::Command;
use crate::report::traces;
use crate::tables::ids::{make_tag, split_tag, TagKind};
use crate::vm::{classes, Context};
use crossbeam_channel::{bounded, Receiver, Sender};
use layout::{ClassDesc, ClassKind, FieldDesc};
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use walk::{Batch, BatchSink, ClassInfo, DumpContext, Leftovers, RootRec, WalkStats, Walker};

/// Batches queued for the writer at most; the walk waits beyond that.
const MAX_BATCHES_IN_FLIGHT: usize = 16;

const RELEASER_NAME: &str = "HPROF heap dump cleanup";
/// JVMTI_THREAD_NORM_PRIORITY.
const RELEASER_PRIORITY: i32 = 5;

/// heap=dump: the profile and what it keeps between dumps.
pub struct HeapDump {
    /// Class descriptions, fetched once per class (unprepared ones again).
    descs: Mutex<HashMap<u32, Arc<ClassDesc>>>,
    /// Scratch environments whose tags are still to be dropped.
    to_release: Mutex<Vec<ScratchEnv>>,
    releaser: AgentThread,
    /// Dumps made by the VM's dumper so far that reached the output (their
    /// identifiers are tagged with their number: transcode::hotspot).
    vm_dumps: AtomicU32,
    /// The next fresh serial for the VM's classes, threads and traces.
    vm_next_serial: Arc<AtomicU64>,
    /// Why the VM's dumper cannot be used in this run, once found out
    /// (a JVM without it): said once, then every dump uses the walk.
    vm_unusable: Mutex<Option<String>>,
    /// Said that dumps stopped with the output.
    output_lost_said: std::sync::atomic::AtomicBool,
}

impl Default for HeapDump {
    fn default() -> Self {
        HeapDump {
            descs: Mutex::default(),
            to_release: Mutex::default(),
            releaser: AgentThread::new(RELEASER_NAME),
            vm_dumps: AtomicU32::new(0),
            vm_next_serial: Arc::new(AtomicU64::new(u64::from(
                crate::transcode::hotspot::FIRST_FRESH_SERIAL,
            ))),
            vm_unusable: Mutex::new(None),
            output_lost_said: Default::default(),
        }
    }
}

/// Which dumper wrote a dump.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dumper {
    Vm,
    Walk,
}

impl Dumper {
    /// As `verbose` names it: `Dumping Java heap (VM dumper) ... done.`
    fn label(self) -> &'static str {
        match self {
            Dumper::Vm => "VM dumper",
            Dumper::Walk => "JVMTI walk",
        }
    }
}

fn describe(ctx: &Context, jni: Jni<'_>, k: Obj<'_>, serial: u32, sig: &str) -> ClassDesc {
    let j = ctx.jvmti;
    let is_interface = j.is_interface(k).unwrap_or(false);
    let kind = ClassKind::from_signature(sig, is_interface);
    let super_serial =
        crate::jvmti::jni::superclass(jni, k).and_then(|sup| classes::known_serial(ctx, sup.obj()));
    let mut interfaces = Vec::new();
    if let Ok(list) = j.implemented_interfaces(jni, k) {
        interfaces.extend(list.iter().filter_map(|i| classes::known_serial(ctx, i)));
    }
    let fields = match kind {
        ClassKind::ObjArray | ClassKind::PrimArray(_) => Some(Vec::new()),
        _ => match j.class_fields(k) {
            Ok(v) => Some(
                v.into_iter()
                    .filter_map(|f| {
                        let ty = crate::format::BasicType::from_sig_char(
                            *f.signature.as_bytes().first()?,
                        )?;
                        Some(FieldDesc {
                            name: f.name.into(),
                            ty,
                            is_static: f.is_static,
                        })
                    })
                    .collect(),
            ),
            Err(e) if e.code == error::CLASS_NOT_PREPARED => None,
            Err(_) => None,
        },
    };
    ClassDesc {
        serial,
        kind,
        super_serial,
        interfaces,
        fields,
    }
}

/// The description of `serial` (cached across dumps once complete).
fn cached_desc(
    ctx: &Context,
    jni: Jni<'_>,
    cache: &mut HashMap<u32, Arc<ClassDesc>>,
    k: Obj<'_>,
    serial: u32,
) -> Arc<ClassDesc> {
    if let Some(d) = cache.get(&serial).filter(|d| d.fields.is_some()) {
        return d.clone();
    }
    let sig = ctx
        .tables
        .classes
        .get(serial)
        .map(|e| e.signature.clone())
        .unwrap_or_default();
    let d = Arc::new(describe(ctx, jni, k, serial, &sig));
    cache.insert(serial, d.clone());
    d
}

/// Superclasses and superinterfaces of `serial` (transitively) that are
/// described as not prepared.
fn unprepared_ancestors(serial: u32, descs: &HashMap<u32, ClassDesc>) -> Vec<u32> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut stack = vec![serial];
    while let Some(s) = stack.pop() {
        let Some(d) = descs.get(&s) else { continue };
        for &a in d.super_serial.iter().chain(&d.interfaces) {
            if seen.insert(a) {
                if descs.get(&a).is_some_and(|x| x.fields.is_none()) {
                    out.push(a);
                }
                stack.push(a);
            }
        }
    }
    out
}

/// Layouts and IDs of every class loaded now, and the class descriptions
/// they were computed from. With a `scratch` environment every class
/// mirror and known Thread object gets its tag there too.
impl HeapDump {
    fn build_context(
        &self,
        ctx: &Context,
        jni: Jni<'_>,
        scratch: Option<&Jvmti>,
    ) -> (DumpContext, HashMap<u32, ClassDesc>) {
        let j = ctx.jvmti;
        let id_size = if ctx.opts.id_size == 8 && ctx.opts.format == crate::options::Format::Binary
        {
            8
        } else {
            4
        };
        let mut descs: HashMap<u32, ClassDesc> = HashMap::new();
        if let Ok(loaded) = j.loaded_classes(jni) {
            let mut cache = self.descs.lock();
            let mut by_serial: HashMap<u32, Obj<'_>> = HashMap::new();
            for k in loaded.iter() {
                if let Some(serial) = classes::known_serial(ctx, k) {
                    if let Some(s) = scratch {
                        let _ = s.set_tag(k, make_tag(TagKind::Class, serial as u64));
                    }
                    let d = cached_desc(ctx, jni, &mut cache, k, serial);
                    descs.insert(serial, (*d).clone());
                    by_serial.insert(serial, k);
                }
            }
            // Classes are prepared while this runs. A class described as
            // prepared had its superclasses and superinterfaces prepared first
            // (JVMS 5.4), but one of those may have been described a moment
            // earlier, still unprepared: described again now, it is complete,
            // so no layout mixes the two moments (a missing interface would
            // shift every JVMTI field index of the class).
            let complete: Vec<u32> = descs
                .iter()
                .filter(|(_, d)| d.fields.is_some())
                .map(|(&s, _)| s)
                .collect();
            let mut stale: Vec<u32> = complete
                .iter()
                .flat_map(|&s| unprepared_ancestors(s, &descs))
                .collect();
            stale.sort_unstable();
            stale.dedup();
            for s in stale {
                if let Some(&k) = by_serial.get(&s) {
                    let d = cached_desc(ctx, jni, &mut cache, k, s);
                    descs.insert(s, (*d).clone());
                }
            }
        }
        let mut classes: Vec<Option<ClassInfo>> = Vec::new();
        for e in ctx.tables.classes.all() {
            let info = descs.get(&e.serial).map(|d| ClassInfo {
                serial: e.serial,
                object_id: e.object_id as u64,
                signature: e.signature.as_str().into(),
                kind: d.kind,
                super_serial: d.super_serial,
                load_trace: e.load_trace,
                layout: layout::compute(e.serial, &descs, id_size),
            });
            let idx = (e.serial - crate::tables::classes::CLASS_SERIAL_BASE) as usize;
            if classes.len() <= idx {
                classes.resize_with(idx + 1, || None);
            }
            classes[idx] = info;
        }
        let thread_ids = ctx
            .tables
            .threads
            .all()
            .iter()
            .map(|t| (t.serial, t.object_id as u64))
            .collect();
        if let (Some(s), Ok(threads)) = (scratch, j.all_threads(jni)) {
            for t in threads.iter() {
                if let Ok(tag) = j.get_tag(t) {
                    if matches!(split_tag(tag), Some((TagKind::Thread, _))) {
                        let _ = s.set_tag(t, tag);
                    }
                }
            }
        }
        let dump_ctx = DumpContext {
            id_size,
            system_trace: ctx.system_trace(),
            classes,
            // heap=all: an object's trace is its allocation site's (the
            // object table's owner is the site's index).
            site_traces: if ctx.opts.heap_sites {
                (0..ctx.tables.sites.len() as u32)
                    .map(|i| {
                        ctx.tables.sites.get(i).map_or(ctx.system_trace(), |s| {
                            s.trace_serial.load(std::sync::atomic::Ordering::Relaxed)
                        })
                    })
                    .collect()
            } else {
                Vec::new()
            },
            true_array_len: ctx.opts.true_array_len,
            thread_ids,
            scratch_ids: scratch.is_some(),
            need_sizes: ctx.opts.format == crate::options::Format::Ascii,
        };
        (dump_ctx, descs)
    }
}

/// The class of every leftover object: by its class mirror's tag when that
/// is a class tag; otherwise by asking the VM which objects carry the
/// mirror's tag (a class registered after the walk began may still carry
/// its allocation's object tag) or, for a mirror the walk could not name,
/// the object's own tag, and registering the class found.
fn leftover_classes(
    ctx: &Context,
    jni: Jni<'_>,
    env: &Jvmti,
    left: &Leftovers,
) -> Vec<Option<u32>> {
    let mut found: HashMap<i64, u32> = HashMap::new();
    let unresolved = |o: &&walk::LateObject, found: &HashMap<i64, u32>| {
        !matches!(split_tag(o.class_tag), Some((TagKind::Class, _)))
            && (o.class_tag == 0 || !found.contains_key(&o.class_tag))
    };
    // Mirror tags first (mirrors outlive their objects), then objects.
    for by_mirror in [true, false] {
        let mut ask: Vec<i64> = left
            .objects
            .iter()
            .filter(|o| unresolved(o, &found))
            .map(|o| if by_mirror { o.class_tag } else { o.tag })
            .filter(|&t| t != 0)
            .collect();
        ask.sort_unstable();
        ask.dedup();
        let trace = ctx.system_trace();
        for chunk in ask.chunks(512) {
            let Ok(objs) = env.objects_with_tags(jni, chunk) else {
                continue;
            };
            for (obj, tag) in objs {
                let class = if by_mirror {
                    classes::ensure(ctx, obj.obj(), trace)
                } else {
                    crate::jvmti::jni::object_class(jni, obj.obj())
                        .and_then(|k| classes::ensure(ctx, k.obj(), trace))
                };
                if let Some(e) = class {
                    found.insert(tag, e.serial);
                }
            }
        }
    }
    // A mirror still carrying its allocation's object tag during the walk
    // may have been registered since: its tag is a class tag now.
    for o in &left.objects {
        if let Some((TagKind::Object, slot)) = split_tag(o.class_tag) {
            if let std::collections::hash_map::Entry::Vacant(v) = found.entry(o.class_tag) {
                if let Some((TagKind::Class, s)) =
                    ctx.tags.identity_of_slot(slot as u32).and_then(split_tag)
                {
                    v.insert(s as u32);
                }
            }
        }
    }
    left.objects
        .iter()
        .map(|o| match split_tag(o.class_tag) {
            Some((TagKind::Class, s)) => Some(s as u32),
            _ => found
                .get(&o.class_tag)
                .filter(|_| o.class_tag != 0)
                .or_else(|| found.get(&o.tag))
                .copied(),
        })
        .collect()
}

/// Describe what the walk left over: every class of a leftover object or
/// mirror and every class the context could not lay out completely, with
/// their ancestors. Returns the context extended with their layouts.
impl HeapDump {
    fn describe_leftovers(
        &self,
        vm: &Context,
        jni: Jni<'_>,
        ctx: &DumpContext,
        mut descs: HashMap<u32, ClassDesc>,
        left: &Leftovers,
        classes_of: &[Option<u32>],
    ) -> DumpContext {
        let j = vm.jvmti;
        let mut wanted: Vec<u32> = classes_of.iter().flatten().copied().collect();
        wanted.extend(left.mirrors.keys().copied());
        wanted.extend(
            ctx.classes
                .iter()
                .flatten()
                .filter(|c| c.layout.incomplete)
                .map(|c| c.serial),
        );
        if wanted.is_empty() {
            return ctx.with_classes(Vec::new());
        }
        // Classes that hold values we kept (objects or statics): worth linking
        // if the VM has not (see `link_if_archived`).
        let with_values: HashSet<u32> = classes_of
            .iter()
            .flatten()
            .copied()
            .chain(
                left.mirrors
                    .iter()
                    .filter(|(_, m)| !m.late_statics.is_empty())
                    .map(|(&s, _)| s),
            )
            .collect();
        let Ok(loaded) = j.loaded_classes(jni) else {
            return ctx.with_classes(Vec::new());
        };
        let by_serial: HashMap<u32, Obj<'_>> = loaded
            .iter()
            .filter_map(|k| classes::known_serial(vm, k).map(|s| (s, k)))
            .collect();
        let mut cache = self.descs.lock();
        let mut todo = wanted;
        let mut seen = HashSet::new();
        let mut described = Vec::new();
        while let Some(s) = todo.pop() {
            if !seen.insert(s) {
                continue;
            }
            let needs = descs.get(&s).is_none_or(|d| d.fields.is_none());
            if needs {
                if let Some(&k) = by_serial.get(&s) {
                    if with_values.contains(&s) {
                        link_if_archived(vm, jni, k);
                    }
                    let d = cached_desc(vm, jni, &mut cache, k, s);
                    descs.insert(s, (*d).clone());
                }
            }
            described.push(s);
            if let Some(d) = descs.get(&s) {
                todo.extend(d.super_serial.iter().chain(&d.interfaces).copied());
            }
        }
        drop(cache);
        if vm.opts.debugflags & DEBUG_UNPREPARED_REFS != 0 {
            debug_unprepared(vm, &descs, left, classes_of);
        }
        let extra = described
            .into_iter()
            .filter(|&s| ctx.class(s).is_none_or(|c| c.layout.incomplete))
            .filter_map(|s| {
                let e = vm.tables.classes.get(s)?;
                let d = descs.get(&s)?;
                Some(ClassInfo {
                    serial: s,
                    object_id: e.object_id as u64,
                    signature: e.signature.as_str().into(),
                    kind: d.kind,
                    super_serial: d.super_serial,
                    load_trace: e.load_trace,
                    layout: layout::compute(s, &descs, ctx.id_size),
                })
            })
            .collect();
        ctx.with_classes(extra)
    }
}

/// `debugflags=0x1`: the values the dump could not place because their
/// class is still not prepared, on stderr.
fn debug_unprepared(
    vm: &Context,
    descs: &HashMap<u32, ClassDesc>,
    left: &Leftovers,
    classes_of: &[Option<u32>],
) {
    let unprepared = |s: u32| descs.get(&s).is_some_and(|d| d.fields.is_none());
    let name = |s: u32| {
        vm.tables
            .classes
            .get(s)
            .map_or_else(|| format!("class {s}"), |e| e.signature.clone())
    };
    for (o, class) in left.objects.iter().zip(classes_of) {
        let Some(s) = class.filter(|&s| unprepared(s)) else {
            continue;
        };
        for (index, v) in &o.values {
            diag::debug(&format!(
                "heap dump: object 0x{:x} of unprepared {}: field {index} = {v:?} left out",
                o.obj,
                name(s)
            ));
        }
    }
    for (&s, m) in &left.mirrors {
        if unprepared(s) {
            for (index, v) in &m.late_statics {
                diag::debug(&format!(
                    "heap dump: static field {index} of unprepared {} = {v:?} left out",
                    name(s)
                ));
            }
        }
    }
}

/// JDK 12 and later map objects archived by CDS into the heap before
/// their classes are linked (JDK 17: `jdk.internal.math.FDBigInteger`'s
/// cache, in every dump of a program that never formatted a double), and
/// JVMTI describes no fields of a class that is not linked. Such a class
/// comes from the boot loader (only its classes have archived objects) and
/// is never verified there, so linking it runs no Java code of the program
/// and loads nothing: it is linked (`Class.getDeclaredFields` links before
/// it answers) so its objects keep their values. Classes of other loaders
/// are left alone: linking them could verify and load classes through the
/// program's own class loaders.
fn link_if_archived(ctx: &Context, jni: Jni<'_>, k: Obj<'_>) {
    let j = ctx.jvmti;
    let prepared = j
        .class_status(k)
        .is_ok_and(|st| st & crate::jvmti::sys::JVMTI_CLASS_STATUS_PREPARED != 0);
    if prepared {
        return;
    }
    let boot = j.class_loader(jni, k).is_ok_and(|l| l.is_none());
    if boot {
        crate::jvmti::jni::link_class(jni, k);
    }
}

/// Hands batches to the writer thread, at most `MAX_BATCHES_IN_FLIGHT` at
/// a time, and prints progress for long dumps with `verbose`.
struct WriterSink<'a> {
    vm: &'a Context,
    ctx: Arc<DumpContext>,
    slots: Sender<()>,
    freed: Receiver<()>,
    /// Written batches come back emptied, for reuse.
    spare_tx: Sender<Batch>,
    spare_rx: Receiver<Batch>,
    started: Instant,
    last_report: Instant,
    records: u64,
    bytes: u64,
    reported: bool,
    /// Time the walk spent waiting for the writer (back-pressure).
    blocked: Duration,
}

impl BatchSink for WriterSink<'_> {
    fn submit(&mut self, mut batch: Batch) -> Batch {
        self.records += batch.recs.len() as u64;
        self.bytes += batch.weight() as u64;
        if self.vm.out.has_failed() {
            batch.clear();
            return batch;
        }
        // Wait for room; bounded so a writer that went away cannot hang the VM.
        let t = Instant::now();
        let room = self.slots.send_timeout((), Duration::from_secs(60));
        self.blocked += t.elapsed();
        if room.is_err() {
            batch.clear();
            return batch;
        }
        let (ctx, freed, spare) = (self.ctx.clone(), self.freed.clone(), self.spare_tx.clone());
        self.vm.out.submit(move |f, out| {
            let mut batch = batch;
            batch.write(&ctx, &mut **f, out);
            batch.clear();
            let _ = spare.try_send(batch);
            let _ = freed.try_recv();
        });
        if self.vm.opts.verbose && self.last_report.elapsed() >= Duration::from_secs(2) {
            self.last_report = Instant::now();
            self.reported = true;
            diag::verbose(
                true,
                &format!(
                    "\nHPROF heap dump: {} records, {} MB, {:.1} s",
                    self.records,
                    self.bytes >> 20,
                    self.started.elapsed().as_secs_f64()
                ),
            );
        }
        self.spare_rx.try_recv().unwrap_or_default()
    }
}

impl HeapDump {
    /// Drop a dump's tags (dispose its environment; the VM frees one tag
    /// map entry and weak handle per object: ~1 s per 8 M objects on JDK
    /// 17, ~4 s on JDK 21) and give the memory back to the OS, in an agent
    /// thread so the dump is done sooner. At VM death nothing is released:
    /// the process is ending. When profiling stops while the VM runs on,
    /// it is done here, before the stop returns: the tags must not outlive
    /// the profile. If no thread can be started it is done here too.
    /// (A thread already running takes this one too, unless it has just
    /// found its list empty: then the next dump's thread releases it.)
    fn release_later(&'static self, ctx: &Context, jni: Jni<'_>, scratch: ScratchEnv) {
        if ctx.dying.load(std::sync::atomic::Ordering::Acquire) {
            std::mem::forget(scratch);
            return;
        }
        if ctx.gate.is_closed() {
            // Stopping: this is the final dump.
            drop(scratch);
            self.release_now();
            return;
        }
        self.to_release.lock().push(scratch);
        if self.releaser.is_running() {
            return;
        }
        let started = crate::vm::threads::start_agent_thread(
            ctx,
            jni,
            &self.releaser,
            RELEASER_PRIORITY,
            move |_| self.release_now(),
        );
        if started.is_err() {
            self.release_now();
        }
    }

    fn release_now(&self) {
        loop {
            let envs = std::mem::take(&mut *self.to_release.lock());
            if envs.is_empty() {
                return;
            }
            drop(envs);
            crate::jvmti::memory::release_free_memory();
        }
    }
}

/// Why a dump by the VM's dumper did not happen as asked.
struct VmFailure {
    /// Part of it reached the output.
    emitted: bool,
    /// This JVM has no such dumper: do not try again.
    permanent: bool,
    reason: String,
}

/// Whether a failure of the VM's dumper says its disk was full (HotSpot
/// reports the C library's text of the error: ENOSPC, EDQUOT, EFBIG).
fn out_of_space(reason: &str) -> bool {
    let ours = |code: i32| {
        let t = std::io::Error::from_raw_os_error(code).to_string();
        t.split(" (os error").next().unwrap_or_default().to_string()
    };
    [libc::ENOSPC, libc::EDQUOT, libc::EFBIG]
        .into_iter()
        .map(ours)
        .chain(["No space left on device".into(), "File too large".into()])
        .any(|t| !t.is_empty() && reason.contains(&t))
}

/// Whether the output is a regular file on the filesystem the VM's dumper
/// writes to (beside it): a dump that did not fit there cannot be written
/// into the output by the walk either.
fn output_shares_disk(ctx: &Context) -> bool {
    use std::os::unix::fs::MetadataExt;
    if ctx.opts.net.is_some() {
        return false;
    }
    let out = std::path::Path::new(ctx.opts.file_name());
    let dir = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => std::path::Path::new("."),
    };
    match (std::fs::metadata(out), std::fs::metadata(dir)) {
        (Ok(o), Ok(d)) => o.is_file() && o.dev() == d.dev(),
        _ => false,
    }
}

/// Totals for the text `HEAP DUMP BEGIN` line (docs/output-formats.md,
/// "HEAP DUMP"): with heap=sites the live objects and bytes of the
/// allocation sites, as the original printed; without it the objects the
/// agent holds handles for, and no byte total (0). They are not counts of
/// the lines that follow: the dump is streamed as it is walked.
fn heap_totals(ctx: &Context) -> HeapTotals {
    if ctx.opts.heap_sites {
        let t = crate::report::sites::heap_totals(ctx);
        return HeapTotals {
            live_bytes: t.live_bytes,
            live_instances: t.live_instances,
            ..Default::default()
        };
    }
    HeapTotals {
        live_instances: ctx.tables.objects.live() as u32,
        ..Default::default()
    }
}

impl HeapDump {
    /// Why this dump cannot come from the VM's dumper, if it cannot.
    fn vm_dumper_unusable(&self, ctx: &Context) -> Option<String> {
        if ctx.opts.dumper == crate::options::HeapDumper::Jvmti {
            return Some("dumper=jvmti".into());
        }
        if ctx.opts.heap_sites {
            return Some(
                "objects carry allocation traces (heap=sites), which only the walk gives".into(),
            );
        }
        if !ctx.opts.primfields || !ctx.opts.primarrays {
            return Some(
                "primfields=n or primarrays=n (the VM's dumper writes every value)".into(),
            );
        }
        if ctx.opts.format == crate::options::Format::Binary && ctx.opts.id_size != 8 {
            return Some("idsize=4 (the VM's identifiers are 8-byte addresses)".into());
        }
        self.vm_unusable.lock().clone()
    }

    /// Write one complete heap dump to the output, by the VM's dumper when
    /// it can make it, else by the JVMTI walk. `announce`: say which in the
    /// `verbose` progress line of a full dump.
    fn write(&'static self, ctx: &Context, jni: Jni<'_>, announce: bool) {
        let say = |d: Dumper| {
            if announce {
                diag::verbose(ctx.opts.verbose, &format!(" Java heap ({}) ...", d.label()));
            }
        };
        // A dump into an output that stopped (a full disk) would cost a
        // whole dump of the heap and write nothing.
        if ctx.out.has_failed() {
            if !self.output_lost_said.swap(true, Ordering::Relaxed) {
                diag::error(
                    "heap dump not made: the output stopped earlier (see above); no heap dump is made from now on",
                );
            }
            return;
        }
        if let Some(why) = self.vm_dumper_unusable(ctx) {
            if ctx.opts.logflags & crate::options::LOG_MISC != 0 {
                crate::vm::log::log(ctx, &format!("heap dump by the JVMTI walk: {why}"));
            }
            say(Dumper::Walk);
            self.write_walk(ctx, jni);
            return;
        }
        say(Dumper::Vm);
        match self.write_by_vm(ctx, jni) {
            Ok(()) => {}
            // The writer said why; a walk would go nowhere either.
            Err(_) if ctx.out.has_failed() => diag::error(
                "heap dump: the output stopped while the VM's dump was being written to it (see above): that heap dump is incomplete",
            ),
            Err(f) if !f.emitted && out_of_space(&f.reason) && output_shares_disk(ctx) => {
                diag::error(&format!(
                    "heap dump not made: the VM's dumper ran out of room beside the output ({}), and the output's own disk could not hold the dump either, so no JVMTI walk follows",
                    f.reason
                ))
            }
            Err(f) if !f.emitted => {
                if f.permanent {
                    *self.vm_unusable.lock() = Some(f.reason.clone());
                }
                diag::error(&format!(
                    "heap dump: the VM's dumper could not make it ({}); the JVMTI walk makes it instead",
                    f.reason
                ));
                self.write_walk(ctx, jni);
            }
            Err(f) => diag::error(&format!(
                "heap dump: the VM's dumper failed after part of its dump was written ({}): that heap dump is incomplete; no JVMTI walk follows it, since readers would count its objects twice",
                f.reason
            )),
        }
    }

    /// One heap dump by the VM's own dumper, streamed into the output by
    /// the writer thread (`vm::VmStream`) while the VM writes it.
    fn write_by_vm(&'static self, ctx: &Context, jni: Jni<'_>) -> Result<(), VmFailure> {
        let started = Instant::now();
        let fail = |emitted, reason: String| VmFailure {
            emitted,
            permanent: false,
            reason,
        };
        // Every class gets its serial and LOAD CLASS (HotSpot's classes
        // take ours by name), and every trace a record may name is written.
        classes::refresh(ctx, jni);
        traces::submit_all_unprinted(ctx);
        let mut ours = crate::transcode::hotspot::OurClasses {
            system_trace: ctx.system_trace(),
            ..Default::default()
        };
        for e in ctx.tables.classes.all() {
            ours.add(&e.signature, e.load_trace);
        }
        let base = if ctx.opts.net.is_some() {
            std::env::temp_dir()
                .join("hprof-rs")
                .to_string_lossy()
                .into_owned()
        } else {
            ctx.opts.file_name().to_string()
        };
        let dir = vm::ScratchDir::create(&base).map_err(|e| {
            fail(
                false,
                format!("cannot create a private directory beside {base} for its file: {e}"),
            )
        })?;
        let file = dir.dump_file();
        let shared = Arc::new(vm::Shared::default());
        let (done_tx, done_rx) = bounded(1);
        // Dumps are made one at a time (the dump lock). A dump that put
        // nothing into the output leaves its number to the next one, which
        // may then keep the VM's identifiers.
        let number = self.vm_dumps.load(Ordering::Relaxed) + 1;
        let stream = vm::VmStream::new(
            file.clone(),
            shared.clone(),
            done_tx,
            ctx.opts.format == crate::options::Format::Ascii,
            number,
            ours,
            self.vm_next_serial.clone(),
            ctx.stamp(),
            heap_totals(ctx),
            // Our output is a file of the agent's (not a socket, not a
            // recording for listen=): the VM's file may become it.
            ctx.opts.net.is_none() && ctx.opts.listen.is_none(),
        );
        ctx.out.stream(Box::new(stream));
        let path = file.to_string_lossy().into_owned();
        let made = crate::jvmti::jni::hotspot_dump_heap(jni, &path, ctx.opts.gc_before_dump);
        shared.vm_state.store(
            if made.is_ok() {
                vm::FINISHED
            } else {
                vm::FAILED
            },
            std::sync::atomic::Ordering::Release,
        );
        let vm_done = Instant::now();
        // Wait for the copy, as long as it makes progress.
        let mut last = (0u64, Instant::now());
        let mut last_report = Instant::now();
        let outcome = loop {
            match done_rx.recv_timeout(Duration::from_millis(500)) {
                Ok(o) => break Some(o),
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => break None,
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                    let copied = shared.consumed.load(Ordering::Relaxed);
                    if copied != last.0 {
                        last = (copied, Instant::now());
                    } else if last.1.elapsed() > Duration::from_secs(60) {
                        shared.abandoned.store(true, Ordering::Relaxed);
                        break done_rx.recv_timeout(Duration::from_secs(10)).ok();
                    }
                    if ctx.opts.verbose && last_report.elapsed() >= Duration::from_secs(2) {
                        last_report = Instant::now();
                        diag::verbose(
                            true,
                            &format!(
                                "\nHPROF heap dump (VM dumper): {} MB copied, {:.1} s",
                                copied >> 20,
                                started.elapsed().as_secs_f64()
                            ),
                        );
                    }
                }
            }
        };
        drop(dir);
        if outcome.as_ref().is_none_or(|o| o.emitted) {
            self.vm_dumps.store(number, Ordering::Relaxed);
        }
        let outcome =
            outcome.ok_or_else(|| fail(true, "the copy into the output stopped".into()))?;
        if ctx.opts.logflags & crate::options::LOG_MISC != 0 {
            ctx.out.flush();
            crate::vm::log::log(
                ctx,
                &format!(
                    "heap dump phases (VM dumper): the VM's dump {:.2} s, done {:.2} s after it, {} MB, heap records {}; {:?}",
                    (vm_done - started).as_secs_f64(),
                    vm_done.elapsed().as_secs_f64(),
                    outcome.bytes >> 20,
                    outcome.how,
                    outcome.result
                ),
            );
        }
        match (made, outcome.result) {
            (Ok(()), Ok(_)) => Ok(()),
            (Err(e), _) => Err(VmFailure {
                emitted: outcome.emitted,
                // No such dumper in this JVM: the walk from now on.
                permanent: e.contains("ClassNotFoundException")
                    || e.contains("NoClassDefFoundError"),
                reason: e,
            }),
            (Ok(()), Err(e)) => Err(fail(outcome.emitted, e)),
        }
    }

    /// Write one complete heap dump by the JVMTI walk.
    fn write_walk(&'static self, ctx: &Context, jni: Jni<'_>) -> WalkStats {
        let j = ctx.jvmti;
        let started = Instant::now();
        if ctx.opts.gc_before_dump {
            if let Err(e) = j.force_garbage_collection() {
                diag::error(&format!("heap dump: {e}"));
            }
        }
        let gc_done = Instant::now();
        classes::refresh(ctx, jni);
        // Objects are tagged in an environment of their own, dropped after
        // the dump (its tags with it), unless allocation sites track them
        // in the agent's environment.
        let scratch = if ctx.opts.heap_sites {
            None
        } else {
            ScratchEnv::new()
        };
        if scratch.is_none() && !ctx.opts.heap_sites {
            diag::error(
                "heap dump: no second JVMTI environment; objects keep their tags after the dump",
            );
        }
        let shared = scratch.as_ref().map(|s| ctx.tags.share_with(*s.env()));
        let (dump_ctx, descs) = self.build_context(ctx, jni, scratch.as_ref().map(|s| s.env()));
        let dump_ctx = Arc::new(dump_ctx);
        let ctx_done = Instant::now();

        // Every trace a dump record may name is written before it.
        traces::submit_all_unprinted(ctx);
        let (at, totals) = (ctx.stamp(), heap_totals(ctx));
        ctx.out
            .submit(move |f, out| f.heap_dump_begin(out, at, &totals));

        let (slots, freed) = bounded(MAX_BATCHES_IN_FLIGHT);
        let (spare_tx, spare_rx) = bounded(MAX_BATCHES_IN_FLIGHT + 1);
        let sink = WriterSink {
            vm: ctx,
            ctx: dump_ctx.clone(),
            slots,
            freed,
            spare_tx,
            spare_rx,
            started,
            last_report: Instant::now(),
            records: 0,
            bytes: 0,
            reported: false,
            blocked: Duration::ZERO,
        };
        let mut walker = Walker::new(
            dump_ctx.clone(),
            &ctx.tables.objects,
            &ctx.tables.classes,
            &ctx.tables.threads,
            sink,
            ctx.opts.primarrays,
        );
        if ctx.opts.pseudo_root {
            walker.root(RootRec::ThreadObject {
                obj: 0,
                thread: crate::tables::threads::UNKNOWN_THREAD_SERIAL,
                trace: dump_ctx.system_trace,
            });
        }
        let walker_env = scratch.as_ref().map_or(&j, |s| s.env());
        let walked =
            walker_env.follow_references(&mut walker, ctx.opts.primfields, ctx.opts.primarrays);
        let walk_done = Instant::now();
        let (mut sink, mut stats, left) = walker.finish();
        // What the walk could not lay out is described now and written
        // last (still inside the dump: IDs and tags are those of the walk).
        let classes_of = leftover_classes(ctx, jni, walker_env, &left);
        let ctx2 =
            Arc::new(self.describe_leftovers(ctx, jni, &dump_ctx, descs, &left, &classes_of));
        sink.ctx = ctx2.clone();
        epilogue::write(
            left,
            &classes_of,
            &dump_ctx,
            &ctx2,
            ctx.opts.primarrays,
            &mut sink,
            &mut stats,
        );
        drop(shared);
        // Every tag of the dump goes at once, off the dump's critical path.
        if let Some(s) = scratch {
            self.release_later(ctx, jni, s);
        }
        let disposed = Instant::now();
        let at = ctx.stamp();
        ctx.out.submit(move |f, out| f.heap_dump_end(out, at));
        if ctx.opts.logflags & crate::options::LOG_MISC != 0 {
            ctx.out.flush();
            crate::vm::log::log(
                ctx,
                &format!(
                    "heap dump phases: gc {:.2} s, classes {:.2} s, walk {:.2} s (waiting for the writer {:.2} s), tags dropped in {:.2} s, writer drained {:.2} s later; {:?}",
                    (gc_done - started).as_secs_f64(),
                    (ctx_done - gc_done).as_secs_f64(),
                    (walk_done - ctx_done).as_secs_f64(),
                    sink.blocked.as_secs_f64(),
                    (disposed - walk_done).as_secs_f64(),
                    disposed.elapsed().as_secs_f64(),
                    stats
                ),
            );
        }
        if sink.reported {
            diag::verbose(
                true,
                &format!(
                    "\nHPROF heap dump: {} records, {} MB, {:.1} s\n",
                    sink.records,
                    sink.bytes >> 20,
                    started.elapsed().as_secs_f64()
                ),
            );
        }
        if let Err(e) = walked {
            diag::error(&format!("heap dump incomplete: {e}"));
        }
        if stats.late_refs > 0
            || stats.mismatched_fields > 0
            || stats.table_full > 0
            || stats.late_lost > 0
        {
            diag::error(&format!(
                "heap dump: {} references after their object was written, {} field values of unexpected type, {} objects without ID (table full), {} objects of classes loaded during the dump left out",
                stats.late_refs, stats.mismatched_fields, stats.table_full, stats.late_lost
            ));
        }
        if ctx.opts.verbose && (stats.late_objects > 0 || stats.unprepared_values > 0) {
            diag::verbose(
                true,
                &format!(
                    "\nHPROF heap dump: {} objects of classes loaded or prepared while the dump began were written after the walk; {} field values of classes the VM never prepared were left out\n",
                    stats.late_objects, stats.unprepared_values
                ),
            );
        }
        stats
    }
}

impl Profile for HeapDump {
    fn name(&self) -> &'static str {
        "heap=dump"
    }

    fn dump(&'static self, ctx: &'static Context, jni: Jni<'_>) {
        self.write(ctx, jni, true);
    }

    /// Nothing to set up: each dump walks the heap as it is then, with the
    /// classes and threads the vm floor met at the attach and since.
    fn attach(&'static self, _ctx: &'static Context, _jni: Jni<'_>) -> Result<(), String> {
        Ok(())
    }

    /// A dump's tags may still be being dropped by the cleanup thread: a
    /// stop waits for it (bounded), so they go before the stop returns.
    fn detach(&self, _ctx: &Context, _jni: Jni<'_>) {
        let start = Instant::now();
        while self.releaser.is_running() && start.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn command(&'static self, ctx: &'static Context, jni: Jni<'_>, cmd: &Command) -> Answer {
        match cmd {
            // DUMP HEAP: a heap dump section, preceded by pending traces.
            Command::DumpHeap => {
                self.write(ctx, jni, false);
                Answer::Done
            }
            _ => Answer::NotMine,
        }
    }
}
