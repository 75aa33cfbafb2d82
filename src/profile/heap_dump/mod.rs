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
pub mod walk;

use crate::agent::Agent;
use crate::control::trace_info;
use crate::diag;
use crate::format::HeapTotals;
use crate::jvmti::env::{Jvmti, ScratchEnv};
use crate::jvmti::sys::{error, jclass, JNIEnv};
use crate::tables::ids::{make_tag, split_tag, TagKind};
use crossbeam_channel::{bounded, Receiver, Sender};
use layout::{ClassDesc, ClassKind, FieldDesc};
use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use walk::{Batch, BatchSink, ClassInfo, DumpContext, Leftovers, RootRec, WalkStats, Walker};

/// Batches queued for the writer at most; the walk waits beyond that.
const MAX_BATCHES_IN_FLIGHT: usize = 16;

/// Class descriptions, fetched once per class (unprepared ones again).
fn desc_cache() -> &'static Mutex<HashMap<u32, Arc<ClassDesc>>> {
    static CACHE: OnceLock<Mutex<HashMap<u32, Arc<ClassDesc>>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// The scratch environment of the dump in progress, if it has one: a class
/// registered while the dump starts gets its tag there too
/// (`tag_new_class`), so the walk knows its mirror and objects as that
/// class's. Written only at the start and end of a dump; read by class
/// registration.
static ACTIVE_SCRATCH: RwLock<Option<Jvmti>> = RwLock::new(None);

/// Called when a class is registered (its tag set in the agent's
/// environment): give the mirror the same tag in the running dump's scratch
/// environment.
pub fn tag_new_class(klass: jclass, tag: i64) {
    if let Some(env) = *ACTIVE_SCRATCH.read() {
        let _ = env.set_tag(klass, tag);
    }
}

/// Makes a scratch environment the active one for as long as it lives.
struct ActiveScratch;

impl ActiveScratch {
    fn new(env: Option<&Jvmti>) -> Option<ActiveScratch> {
        let env = env?;
        *ACTIVE_SCRATCH.write() = Some(*env);
        Some(ActiveScratch)
    }
}

impl Drop for ActiveScratch {
    fn drop(&mut self) {
        *ACTIVE_SCRATCH.write() = None;
    }
}

fn class_serial(agent: &Agent, k: jclass) -> Option<u32> {
    match split_tag(agent.jvmti.get_tag(k).ok()?) {
        Some((TagKind::Class, s)) => Some(s as u32),
        _ => None,
    }
}

fn describe(agent: &Agent, jni: *mut JNIEnv, k: jclass, serial: u32, sig: &str) -> ClassDesc {
    let j = agent.jvmti;
    let is_interface = j.is_interface(k).unwrap_or(false);
    let kind = ClassKind::from_signature(sig, is_interface);
    let sup = crate::jvmti::jni::superclass(jni, k);
    let super_serial = if sup.is_null() {
        None
    } else {
        class_serial(agent, sup)
    };
    crate::jvmti::jni::delete_local_ref(jni, sup);
    let mut interfaces = Vec::new();
    if let Ok(list) = j.implemented_interfaces(k) {
        for &i in list.iter() {
            interfaces.extend(class_serial(agent, i));
            crate::jvmti::jni::delete_local_ref(jni, i);
        }
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
    agent: &Agent,
    jni: *mut JNIEnv,
    cache: &mut HashMap<u32, Arc<ClassDesc>>,
    k: jclass,
    serial: u32,
) -> Arc<ClassDesc> {
    if let Some(d) = cache.get(&serial).filter(|d| d.fields.is_some()) {
        return d.clone();
    }
    let sig = agent
        .tables
        .classes
        .get(serial)
        .map(|e| e.signature.clone())
        .unwrap_or_default();
    let d = Arc::new(describe(agent, jni, k, serial, &sig));
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
fn build_context(
    agent: &Agent,
    jni: *mut JNIEnv,
    scratch: Option<&Jvmti>,
) -> (DumpContext, HashMap<u32, ClassDesc>) {
    let j = agent.jvmti;
    let id_size = if agent.opts.id_size == 8 && agent.opts.format == crate::options::Format::Binary
    {
        8
    } else {
        4
    };
    let mut descs: HashMap<u32, ClassDesc> = HashMap::new();
    if let Ok(loaded) = j.loaded_classes() {
        let mut cache = desc_cache().lock();
        let mut by_serial: HashMap<u32, jclass> = HashMap::new();
        for &k in loaded.iter() {
            if let Some(serial) = class_serial(agent, k) {
                if let Some(s) = scratch {
                    let _ = s.set_tag(k, make_tag(TagKind::Class, serial as u64));
                }
                let d = cached_desc(agent, jni, &mut cache, k, serial);
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
                let d = cached_desc(agent, jni, &mut cache, k, s);
                descs.insert(s, (*d).clone());
            }
        }
        for &k in loaded.iter() {
            crate::jvmti::jni::delete_local_ref(jni, k);
        }
    }
    let mut classes: Vec<Option<ClassInfo>> = Vec::new();
    for e in agent.tables.classes.all() {
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
    let thread_ids = agent
        .tables
        .threads
        .all()
        .iter()
        .map(|t| (t.serial, t.object_id as u64))
        .collect();
    if let (Some(s), Ok(threads)) = (scratch, j.all_threads()) {
        for &t in threads.iter() {
            if let Ok(tag) = j.get_tag(t) {
                if matches!(split_tag(tag), Some((TagKind::Thread, _))) {
                    let _ = s.set_tag(t, tag);
                }
            }
            crate::jvmti::jni::delete_local_ref(jni, t);
        }
    }
    let ctx = DumpContext {
        id_size,
        system_trace: agent.system_trace(),
        classes,
        site_traces: Vec::new(),
        true_array_len: agent.opts.true_array_len,
        thread_ids,
        scratch_ids: scratch.is_some(),
        need_sizes: agent.opts.format == crate::options::Format::Ascii,
    };
    (ctx, descs)
}

/// The class of every leftover object: by its class mirror's tag when that
/// is a class tag; otherwise by asking the VM which objects carry the
/// mirror's tag (a class registered after the walk began may still carry
/// its allocation's object tag) or, for a mirror the walk could not name,
/// the object's own tag, and registering the class found.
fn leftover_classes(
    agent: &Agent,
    jni: *mut JNIEnv,
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
        let trace = agent.system_trace();
        for chunk in ask.chunks(512) {
            crate::jvmti::jni::with_local_frame(jni, chunk.len() as i32 + 16, || {
                let Ok(objs) = env.objects_with_tags(chunk) else {
                    return;
                };
                for (obj, tag) in objs {
                    let k = if by_mirror {
                        Some(obj)
                    } else {
                        crate::jvmti::jni::object_class(jni, obj)
                    };
                    if let Some(e) = k.and_then(|k| crate::agent::classes::ensure(agent, k, trace))
                    {
                        found.insert(tag, e.serial);
                    }
                }
            });
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
fn describe_leftovers(
    agent: &Agent,
    jni: *mut JNIEnv,
    ctx: &DumpContext,
    mut descs: HashMap<u32, ClassDesc>,
    left: &Leftovers,
    classes_of: &[Option<u32>],
) -> DumpContext {
    let j = agent.jvmti;
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
    let with_values: std::collections::HashSet<u32> = classes_of
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
    let Ok(loaded) = j.loaded_classes() else {
        return ctx.with_classes(Vec::new());
    };
    let mut by_serial: HashMap<u32, jclass> = HashMap::new();
    for &k in loaded.iter() {
        match class_serial(agent, k) {
            Some(s) => {
                by_serial.insert(s, k);
            }
            None => crate::jvmti::jni::delete_local_ref(jni, k),
        }
    }
    let mut cache = desc_cache().lock();
    let mut todo = wanted;
    let mut seen = std::collections::HashSet::new();
    let mut described = Vec::new();
    while let Some(s) = todo.pop() {
        if !seen.insert(s) {
            continue;
        }
        let needs = descs.get(&s).is_none_or(|d| d.fields.is_none());
        if needs {
            if let Some(&k) = by_serial.get(&s) {
                if with_values.contains(&s) {
                    link_if_archived(agent, jni, k);
                }
                let d = cached_desc(agent, jni, &mut cache, k, s);
                descs.insert(s, (*d).clone());
            }
        }
        described.push(s);
        if let Some(d) = descs.get(&s) {
            todo.extend(d.super_serial.iter().chain(&d.interfaces).copied());
        }
    }
    drop(cache);
    for (_, k) in by_serial {
        crate::jvmti::jni::delete_local_ref(jni, k);
    }
    let extra = described
        .into_iter()
        .filter(|&s| ctx.class(s).is_none_or(|c| c.layout.incomplete))
        .filter_map(|s| {
            let e = agent.tables.classes.get(s)?;
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
fn link_if_archived(agent: &Agent, jni: *mut JNIEnv, k: jclass) {
    let j = agent.jvmti;
    let prepared = j
        .class_status(k)
        .is_ok_and(|st| st & crate::jvmti::sys::JVMTI_CLASS_STATUS_PREPARED != 0);
    if prepared {
        return;
    }
    let boot = j.class_loader(k).is_ok_and(|l| {
        let is_boot = l.is_null();
        crate::jvmti::jni::delete_local_ref(jni, l);
        is_boot
    });
    if boot {
        crate::jvmti::jni::link_class(jni, k);
    }
}

/// Hands batches to the writer thread, at most `MAX_BATCHES_IN_FLIGHT` at
/// a time, and prints progress for long dumps with `verbose`.
struct WriterSink<'a> {
    agent: &'a Agent,
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
        if self.agent.out.has_failed() {
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
        self.agent.out.submit(move |f, out| {
            let mut batch = batch;
            batch.write(&ctx, &mut **f, out);
            batch.clear();
            let _ = spare.try_send(batch);
            let _ = freed.try_recv();
        });
        if self.agent.opts.verbose && self.last_report.elapsed() >= Duration::from_secs(2) {
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

/// Scratch environments whose tags are still to be dropped.
static TO_RELEASE: Mutex<Vec<ScratchEnv>> = Mutex::new(Vec::new());

const RELEASER_NAME: &str = "HPROF heap dump cleanup";
/// JVMTI_THREAD_NORM_PRIORITY.
const RELEASER_PRIORITY: i32 = 5;

/// Drop a dump's tags (dispose its environment; the VM frees one tag map
/// entry and weak handle per object: ~1 s per 8 M objects on JDK 17, ~4 s
/// on JDK 21) and give the memory back to the OS, in an agent thread so
/// the dump is done sooner. At VM death nothing is released: the process
/// is ending. If no thread can be started it is done here.
fn release_later(agent: &Agent, jni: *mut JNIEnv, scratch: ScratchEnv) {
    if agent.gate.is_closed() {
        std::mem::forget(scratch);
        return;
    }
    TO_RELEASE.lock().push(scratch);
    let started = crate::jvmti::jni::new_thread_object(jni, RELEASER_NAME).is_some_and(|thread| {
        crate::agent::threads::register(agent, jni, thread, true, false);
        let r = agent.jvmti.run_agent_thread(
            thread,
            releaser_main,
            std::ptr::null_mut(),
            RELEASER_PRIORITY,
        );
        crate::jvmti::jni::delete_local_ref(jni, thread);
        r.is_ok()
    });
    if !started {
        release_now();
    }
}

fn release_now() {
    let envs = std::mem::take(&mut *TO_RELEASE.lock());
    if !envs.is_empty() {
        drop(envs);
        crate::jvmti::memory::release_free_memory();
    }
}

unsafe extern "C" fn releaser_main(
    _env: *mut crate::jvmti::sys::jvmtiEnv,
    _jni: *mut JNIEnv,
    _arg: *mut std::ffi::c_void,
) {
    if std::panic::catch_unwind(release_now).is_err() {
        diag::error("internal error while dropping heap dump tags");
    }
}

/// Totals for the text `HEAP DUMP BEGIN` line (docs/output-formats.md,
/// "HEAP DUMP"): with heap=sites the live objects and bytes of the
/// allocation sites, as the original printed; without it the objects the
/// agent holds handles for, and no byte total (0). They are not counts of
/// the lines that follow: the dump is streamed as it is walked.
fn heap_totals(agent: &Agent) -> HeapTotals {
    if agent.opts.heap_sites {
        let t = crate::tables::sites::totals_of(&agent.tables.sites.snapshot());
        let interval = agent
            .alloc
            .interval
            .load(std::sync::atomic::Ordering::Relaxed);
        return HeapTotals {
            live_bytes: t.live_bytes.min(u64::from(u32::MAX)) as u32,
            live_instances: crate::profile::alloc_sites::report_instances(
                t.live_instances,
                interval,
            )
            .min(u64::from(u32::MAX)) as u32,
            ..Default::default()
        };
    }
    HeapTotals {
        live_instances: agent.tables.objects.live() as u32,
        ..Default::default()
    }
}

/// Write one complete heap dump to the output. `jni` may be null (the
/// current thread's environment is looked up then).
pub fn dump(agent: &Agent, jni: *mut JNIEnv) -> Option<WalkStats> {
    let jni = if jni.is_null() {
        crate::jvmti::jni::current_env()
    } else {
        jni
    };
    let j = agent.jvmti;
    let started = Instant::now();
    if agent.opts.gc_before_dump {
        if let Err(e) = j.force_garbage_collection() {
            diag::error(&format!("heap dump: {e}"));
        }
    }
    let gc_done = Instant::now();
    crate::agent::classes::refresh(agent, jni);
    // Objects are tagged in an environment of their own, dropped after the
    // dump (its tags with it), unless allocation sites track them in the
    // agent's environment.
    let scratch = if agent.opts.heap_sites {
        None
    } else {
        ScratchEnv::new()
    };
    if scratch.is_none() && !agent.opts.heap_sites {
        diag::error(
            "heap dump: no second JVMTI environment; objects keep their tags after the dump",
        );
    }
    let active = ActiveScratch::new(scratch.as_ref().map(|s| s.env()));
    let (ctx, descs) = build_context(agent, jni, scratch.as_ref().map(|s| s.env()));
    let ctx = Arc::new(ctx);
    let ctx_done = Instant::now();

    // Every trace a dump record may name is written before it.
    trace_info::submit_traces(
        agent,
        trace_info::unprinted(agent, agent.tables.traces.all()),
    );
    let (at, totals) = (agent.stamp(), heap_totals(agent));
    agent
        .out
        .submit(move |f, out| f.heap_dump_begin(out, at, &totals));

    let (slots, freed) = bounded(MAX_BATCHES_IN_FLIGHT);
    let (spare_tx, spare_rx) = bounded(MAX_BATCHES_IN_FLIGHT + 1);
    let sink = WriterSink {
        agent,
        ctx: ctx.clone(),
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
        ctx.clone(),
        &agent.tables.objects,
        &agent.tables.classes,
        &agent.tables.threads,
        sink,
        agent.opts.primarrays,
    );
    if agent.opts.pseudo_root {
        walker.root(RootRec::ThreadObject {
            obj: 0,
            thread: crate::tables::threads::UNKNOWN_THREAD_SERIAL,
            trace: ctx.system_trace,
        });
    }
    let walker_env = scratch.as_ref().map_or(&j, |s| s.env());
    let walked =
        walker_env.follow_references(&mut walker, agent.opts.primfields, agent.opts.primarrays);
    let walk_done = Instant::now();
    let (mut sink, mut stats, left) = walker.finish();
    // What the walk could not lay out is described now and written last
    // (still inside the dump: IDs and tags are those of the walk).
    let classes_of = leftover_classes(agent, jni, walker_env, &left);
    let ctx2 = Arc::new(describe_leftovers(
        agent,
        jni,
        &ctx,
        descs,
        &left,
        &classes_of,
    ));
    sink.ctx = ctx2.clone();
    epilogue::write(
        left,
        &classes_of,
        &ctx,
        &ctx2,
        agent.opts.primarrays,
        &mut sink,
        &mut stats,
    );
    drop(active);
    // Every tag of the dump goes at once, off the dump's critical path.
    if let Some(s) = scratch {
        release_later(agent, jni, s);
    }
    let disposed = Instant::now();
    let at = agent.stamp();
    agent.out.submit(move |f, out| f.heap_dump_end(out, at));
    if agent.opts.logflags & crate::options::LOG_MISC != 0 {
        agent.out.flush();
        crate::agent::debug::log(
            agent,
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
    if agent.opts.verbose && (stats.late_objects > 0 || stats.unprepared_values > 0) {
        diag::verbose(
            true,
            &format!(
                "\nHPROF heap dump: {} objects of classes loaded or prepared while the dump began were written after the walk; {} field values of classes the VM never prepared were left out\n",
                stats.late_objects, stats.unprepared_values
            ),
        );
    }
    Some(stats)
}
