//! heap=sites: allocation sites from the JVM's allocation events.
//!
//! * **Catching allocations.** `SampledObjectAlloc` with a sampling interval
//!   of 0 reports every allocation the VM makes through its allocator (TLAB
//!   and outside-TLAB, interpreter and compiled code, reflection, JNI,
//!   clone). `VMObjectAlloc` is enabled too in exact mode, for allocations
//!   the VM makes where it cannot sample; an object reported by both is
//!   counted once: the VM event is skipped when the object already carries
//!   our tag, and always for `Object.clone` (see [`allocated_by_clone`]).
//! * **Clones.** Since JDK 16 (JDK-8212879) the VM finds a tag through the
//!   object's identity hash, which the tag sets in the object's header.
//!   `Object.clone` copies the original's header over the new object and
//!   then clears it, after SampledObjectAlloc tagged it: the tag can no
//!   longer be found (GetTag answers 0, heap iterations do not report it),
//!   yet the VM still posts ObjectFree for it when the copy dies. The
//!   VMObjectAlloc that follows the clone therefore moves the object to a
//!   new slot with a tag the VM can find, and marks the first slot `GHOST`:
//!   its free releases the slot and counts nothing. (Giving the copy the
//!   first slot's tag again made two tags of one slot, two frees, and the
//!   slot handed to two live objects.)
//! * **Sites.** A site is (class serial, trace serial). The hot path builds
//!   a key from the thread (with `thread=y`) and the raw `(method,
//!   location)` pairs of `GetStackTrace`; a per-thread cache maps key and
//!   class (checked with IsSameObject) to the site, else one sharded-map
//!   lookup on (class serial, key); only a new fingerprint interns frames
//!   and the trace.
//! * **Live counts.** Each counted object gets a JVMTI tag whose payload is
//!   its object-table slot; the slot records (site index, size). ObjectFree
//!   removes the slot and decrements the site's live counters.
//! * **Sampled mode** (`heapsample=N`): the VM samples on average one
//!   allocation per N bytes; each sample of an object of size s stands for
//!   1/p objects with p = 1 - exp(-s/N), the probability that a Poisson
//!   sampling process over allocated bytes picks it. Counters then hold
//!   estimates (instances in 1/65536 units, see [`INSTANCE_SCALE`]). The
//!   VM's interval is redrawn around N after every sample, so that its
//!   sample points fall by size on repeating allocations ([`spread`]).
//!
//! The allocation callback takes no lock of ours except on a new site
//! (once per fingerprint), does no IO and reuses per-thread buffers.

mod spread;

use super::{Answer, Event, Profile};
use crate::diag;
use crate::format::{SITES_FORCE_GC, SITES_SORT_BY_ALLOC, SITES_TAKEN};
use crate::jvmti::sys::{cap, event, jvmtiCapabilities};
use crate::jvmti::{Frame, Jni, MethodId, Obj};
use crate::protocol::{Command, Control};
use crate::tables::ids::{make_tag, split_tag, TagKind};
use crate::tables::objects::{self, ObjectInfo, GHOST, PENDING, REAPED};
use crate::tables::sites::weight;
use crate::tables::threads::UNKNOWN_THREAD_SERIAL;
use crate::vm::{classes, stacks, threads, Context};
use dashmap::DashMap;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// heap=sites: the allocation-site profile and its state.
#[derive(Default)]
pub struct AllocSites {
    /// Events enabled (VM init reached with heap=sites).
    pub enabled: AtomicBool,
    /// Allocations counted (events that created an object entry or were
    /// counted without one).
    pub counted: AtomicU64,
    /// Events for objects already tagged (second report of one object).
    pub duplicates: AtomicU64,
    /// Objects counted from VMObjectAlloc (not seen by SampledObjectAlloc).
    pub from_vm_events: AtomicU64,
    /// Allocations not counted: site table full or no stack/class.
    pub dropped: AtomicU64,
    /// Counted as allocated but not tracked live (object table full or
    /// tagging failed); their live counts never go down.
    pub untracked: AtomicU64,
    /// ObjectFree events applied.
    pub frees: AtomicU64,
    /// Allocations made while the agent's own code ran on the thread (its
    /// JNI calls, its threads, an attach) or on the JVM's attach listener
    /// (tools' requests): never counted.
    pub by_agent: AtomicU64,
    /// ObjectFree callbacks running now: one that has emptied its slot but
    /// not yet lowered its site's counters must finish before a report
    /// reads them.
    frees_in_flight: AtomicUsize,
    /// GarbageCollectionFinish events seen: tells a report whether the GC
    /// it forced really ran.
    pub collections: AtomicU64,
    warned_full: AtomicBool,
    /// Weak references to allocated classes, by class serial, for the
    /// per-thread site caches.
    class_refs: DashMap<u32, Arc<crate::jvmti::refs::WeakRef>>,
    /// `java.lang.Object.clone`'s method ID (set at VM start): the top
    /// frame of a clone's SampledObjectAlloc.
    clone_method: OnceLock<MethodId>,
    /// The class each `new` instruction met creates, by (method, location)
    /// (`made_by_the_code`).
    new_classes: DashMap<(usize, i64), Option<Arc<str>>>,
}

impl AllocSites {
    /// Agent_OnLoad: set the sampling interval before the VM creates its
    /// threads. Each thread draws its first sampling point when it is
    /// created, from the interval in force then (512 KiB by default), so a
    /// thread made before this call would skip about that many bytes
    /// before its first event even with interval 0.
    fn set_interval(&self, ctx: &Context) -> Result<(), String> {
        let interval = ctx.opts.heap_sample_bytes.min(i32::MAX as u64);
        ctx.tables.sites.set_interval(interval);
        ctx.jvmti
            .set_heap_sampling_interval(interval as i32)
            .map_err(|e| format!("cannot set the heap sampling interval: {e}"))
    }

    /// The allocation events of this mode (VMObjectAlloc only when exact:
    /// in sampled mode those allocations are part of the sampled
    /// population already).
    fn alloc_events(&self, ctx: &Context) -> Vec<u32> {
        let mut events = vec![event::SAMPLED_OBJECT_ALLOC];
        if ctx.tables.sites.interval() == 0 {
            events.push(event::VM_OBJECT_ALLOC);
        }
        events
    }

    /// Enable the events (VM init or attach, after the tables exist).
    /// Tracking covers everything allocated from here on. Returns the first
    /// event that could not be enabled (the others are enabled all the same).
    fn start(&self, ctx: &Context, jni: Jni<'_>) -> Result<(), String> {
        let j = ctx.jvmti;
        if let Some(m) =
            crate::jvmti::jni::method_id(jni, "java/lang/Object", "clone", "()Ljava/lang/Object;")
        {
            let _ = self.clone_method.set(m);
        }
        let mut events = vec![event::OBJECT_FREE, event::GARBAGE_COLLECTION_FINISH];
        events.extend(self.alloc_events(ctx));
        let mut failed = None;
        for ev in events {
            if let Err(e) = j.set_event_mode(true, ev) {
                failed.get_or_insert(format!("cannot enable JVMTI event {ev}: {e}"));
            }
        }
        // Threads keep allocating in the TLAB they already hold without
        // reaching the sampler until it is full: the sampling point is only
        // installed when a TLAB is refilled (the VM masks the event until
        // the live phase, so enabling it earlier does not help). A GC
        // retires every TLAB, so each thread's next allocation takes the
        // sampled path. (On a heap that has barely started this costs a few
        // ms.) Not on JDK 11: there a full GC forced at VM init made the VM
        // skip about 1% of the samples of threads started later (64
        // threads: 6 203-6 379 of 6 400 objects reported, all without the
        // GC). There the VM-init thread, which runs the program's main,
        // fills its TLAB with scratch arrays until it takes the sampled
        // path once; threads the VM started before (reference handler,
        // finalizer, signal dispatcher) keep their TLABs. After an attach
        // the program's threads are not this one: the GC is the only way
        // to reach them, on JDK 11 too.
        let t0 = Instant::now();
        let jdk11 = j.version().is_ok_and(|v| (v >> 16) & 0x0FFF == 11);
        if jdk11 && !ctx.attached {
            self.enabled.store(true, Ordering::Release);
            prime_this_thread(jni);
        } else if let Err(e) = j.force_garbage_collection() {
            diag::error(&format!("cannot force a garbage collection at start-up: {e}; allocations already in thread-local buffers are missed"));
        }
        diag::verbose(
            ctx.opts.verbose,
            &format!(
                "Allocation tracking on ({} ms to retire thread-local buffers)\n",
                t0.elapsed().as_millis()
            ),
        );
        self.enabled.store(true, Ordering::Release);
        failed.map_or(Ok(()), Err)
    }

    /// Socket CONTROL allocation tracking on/off: start or stop counting
    /// new allocations (frees of tracked objects are still applied).
    fn set_tracking(&self, ctx: &Context, on: bool) {
        if !self.enabled.load(Ordering::Acquire) {
            return;
        }
        for ev in self.alloc_events(ctx) {
            let _ = ctx.jvmti.set_event_mode(on, ev);
        }
    }
}

/// The JVM signature of the primitive array `newarray` makes for its
/// `atype` operand (JVMS 6.5).
fn primitive_array_signature(atype: u8) -> Option<&'static str> {
    Some(match atype {
        4 => "[Z",
        5 => "[C",
        6 => "[F",
        7 => "[D",
        8 => "[B",
        9 => "[S",
        10 => "[I",
        11 => "[J",
        _ => return None,
    })
}

/// Entries of the per-thread site cache (direct mapped).
const CACHE_SLOTS: usize = 256;

/// One remembered allocation site of this thread: the raw stack key, the
/// class (a weak reference, compared with IsSameObject, which takes no VM
/// lock unlike GetTag) and the site it led to.
struct CacheEntry {
    key: Vec<u64>,
    class: Arc<crate::jvmti::refs::WeakRef>,
    site: u32,
}

/// Per-thread buffers of the allocation callback: raw frames, the stack
/// key and the site cache.
#[derive(Default)]
struct Buffers {
    frames: Vec<Frame>,
    key: Vec<u64>,
    cache: Vec<Option<CacheEntry>>,
    /// The session (`Context::session`) the cache's sites belong to: a
    /// session started after a stop has a site table of its own.
    session: u32,
}

/// Bytes of scratch arrays the VM-init thread allocates at most to reach
/// the sampled path (a TLAB is far smaller).
const PRIMING_LIMIT: usize = 256 << 20;

/// Allocate scratch arrays on this thread until one of them is sampled
/// (its TLAB refilled with a sampling point), not counting them.
fn prime_this_thread(jni: Jni<'_>) {
    PRIMING.with(|p| p.set(Some(false)));
    let mut allocated = 0;
    while PRIMING.with(|p| p.get()) == Some(false) && allocated < PRIMING_LIMIT {
        if !crate::jvmti::jni::scratch_array(jni, 1024) {
            break;
        }
        allocated += 8 * 1024;
    }
    PRIMING.with(|p| p.set(None));
}

thread_local! {
    /// Set while `prime_this_thread` runs: Some(true) once its sample came.
    static PRIMING: std::cell::Cell<Option<bool>> = const { std::cell::Cell::new(None) };
    static BUFFERS: RefCell<Buffers> = RefCell::new(Buffers::default());
    /// The slot this thread's last SampledObjectAlloc inside
    /// `Object.clone` was counted in, until the clone's VMObjectAlloc
    /// (see `move_clone`).
    static CLONE_SLOT: std::cell::Cell<Option<(u32, u32)>> = const { std::cell::Cell::new(None) };
}

fn slot_of(key: &[u64]) -> usize {
    use std::hash::Hasher;
    let mut h = rustc_hash::FxHasher::default();
    for &k in key {
        h.write_u64(k);
    }
    (h.finish() >> 56) as usize % CACHE_SLOTS
}

impl AllocSites {
    /// The VMObjectAlloc of a clone whose first tag the VM lost (module
    /// doc, "Clones"): the slot its SampledObjectAlloc counted becomes
    /// `GHOST` (released by the lost tag's free, which counts nothing) and
    /// the object moves, with its site and size, to a new slot under a tag
    /// the VM finds, so its free and the report's heap check reach it.
    /// False when no SampledObjectAlloc counted this clone.
    fn move_clone(&self, ctx: &Context, obj: Obj<'_>, size: i64) -> bool {
        let Some(slot) = CLONE_SLOT
            .with(|c| c.take())
            .and_then(|(session, slot)| (session == ctx.session).then_some(slot))
        else {
            return false;
        };
        let table = &ctx.tables.objects;
        // The slot must describe this object: same size, still a site's (a
        // heap check may have reaped it meanwhile: it cannot see the object).
        let Some(info) = table
            .get(slot)
            .filter(|i| i64::from(i.size) == size && i.owner < PENDING)
        else {
            return true;
        };
        let pending = ObjectInfo {
            owner: info.owner | PENDING,
            ..info
        };
        let Some(moved) = table.insert(pending) else {
            return true;
        };
        let ghost = ObjectInfo {
            owner: GHOST,
            size: info.size,
        };
        if !table.replace(slot, info, ghost) {
            // Reaped or freed meanwhile: the object stays where it was counted.
            table.remove(moved);
            return true;
        }
        if ctx
            .jvmti
            .set_tag(obj, make_tag(TagKind::Object, moved as u64))
            .is_ok()
        {
            table.replace(moved, pending, info);
        } else {
            // Untracked from here on, like any object we cannot tag: its
            // live count stays (it is alive now).
            table.remove(moved);
            self.untracked.fetch_add(1, Ordering::Relaxed);
        }
        true
    }

    /// True when the current thread's top frame is `java.lang.Object.clone`.
    /// The sampler always reports clones, but since JDK 16 the tag set
    /// during that SampledObjectAlloc is lost (module doc, "Clones"), so
    /// the tag check alone would count every clone twice. VMObjectAlloc
    /// events are rare: a one-frame stack here is cheap.
    fn allocated_by_clone(&self, ctx: &Context, jni: Jni<'_>) -> bool {
        let mut top = Vec::with_capacity(1);
        if ctx.jvmti.stack_trace(Obj::null(), 1, &mut top).is_err() || top.is_empty() {
            return false;
        }
        match self.clone_method.get() {
            Some(&m) => top[0].method == m,
            None => stacks::method_entry(ctx, jni, top[0].method)
                .is_some_and(|e| e.name == "clone" && e.class_signature == "Ljava/lang/Object;"),
        }
    }

    /// A weak reference to the class with this serial, made once per class
    /// and kept for the life of the agent (it does not keep the class
    /// loaded).
    fn class_ref(
        &self,
        jni: Jni<'_>,
        serial: u32,
        klass: Obj<'_>,
    ) -> Option<Arc<crate::jvmti::refs::WeakRef>> {
        if let Some(r) = self.class_refs.get(&serial) {
            return Some(r.clone());
        }
        let w = Arc::new(crate::jvmti::jni::new_weak_ref(jni, klass)?);
        Some(self.class_refs.entry(serial).or_insert(w).clone())
    }

    /// Site index for the current thread's stack and `klass`: first the
    /// thread's cache (same stack, same class by IsSameObject), then the
    /// shared fingerprint map, then (new site) frames and trace interning.
    fn site_of(
        &self,
        ctx: &Context,
        jni: Jni<'_>,
        klass: Obj<'_>,
        thread_serial: u32,
        b: &mut Buffers,
    ) -> Option<u32> {
        let depth = ctx.depth() as usize;
        b.frames.clear();
        if depth > 0 {
            // A thread with no Java frames (e.g. VM-internal) gets the empty trace.
            let _ = ctx.jvmti.stack_trace(Obj::null(), depth, &mut b.frames);
        }
        b.key.clear();
        b.key.push(thread_serial as u64);
        for f in b.frames.iter() {
            b.key.push(f.method.as_usize() as u64);
            b.key.push(f.location as u64);
        }
        let slot = slot_of(&b.key);
        if b.cache.is_empty() {
            b.cache.resize_with(CACHE_SLOTS, || None);
        }
        if let Some(e) = &b.cache[slot] {
            if e.key == b.key
                && crate::jvmti::jni::is_same_object(jni, klass, Obj::of_weak(&e.class))
            {
                return Some(e.site);
            }
        }
        let class_serial = classes::serial(ctx, klass)?;
        // Shared map: the key with the class serial in its first word.
        b.key[0] = class_serial as u64 | (thread_serial as u64) << 32;
        let sites = &ctx.tables.sites;
        let site = match sites.by_fingerprint(&b.key) {
            Some(i) => i,
            None => {
                // New fingerprint: intern frames and trace (frames that cannot
                // be resolved, e.g. of an unloaded method, fall back to the
                // system trace).
                let mut trace_key = Vec::with_capacity(b.frames.len() + 1);
                let class_sig = ctx
                    .tables
                    .classes
                    .get(class_serial)
                    .map(|c| c.signature.clone())
                    .unwrap_or_default();
                let trace = if !self.made_by_the_code(ctx, jni, &b.frames, &class_sig) {
                    ctx.system_trace()
                } else {
                    stacks::trace_of(ctx, jni, thread_serial, &b.frames, &mut trace_key)
                        .map(|t| t.serial)
                        .unwrap_or_else(|| ctx.system_trace())
                };
                let i = sites.intern(class_serial, trace)?;
                sites.remember_fingerprint(&b.key, i);
                i
            }
        };
        b.key[0] = thread_serial as u64;
        let Some(class) = self.class_ref(jni, class_serial, klass) else {
            return Some(site);
        };
        match &mut b.cache[slot] {
            Some(e) => {
                e.key.clear();
                e.key.extend_from_slice(&b.key);
                e.class = class;
                e.site = site;
            }
            empty => {
                *empty = Some(CacheEntry {
                    key: b.key.clone(),
                    class,
                    site,
                })
            }
        }
        Some(site)
    }

    /// Whether the program's code on top of the stack made this object
    /// (`class_sig`, its JVM signature), or the VM made it on the thread
    /// for its own work. The VM does so at instructions that allocate
    /// nothing (`bci::code::instructions::may_allocate`): the JIT, when a
    /// method's invocation or loop counter asks for a compilation, resolves
    /// the string constants of the method's class first
    /// (CompileBroker::compile_method), making Strings and their byte[]
    /// that stay live, with the thread at a method's entry or a loop's back
    /// branch. And at allocating instructions it makes other objects than
    /// the instruction's: at a `new`, the name String of the class it loads
    /// for it (or, at a method's entry, the JIT's Strings again). So the
    /// object must be the instruction's: an instance of `new`'s class, a
    /// primitive array of `newarray`'s type, an array of `anewarray` and
    /// `multianewarray`. Other instructions that may allocate (invocations,
    /// `ldc`, field and array access, ...) keep what they make. Asked once
    /// per new fingerprint (stack and class); without `can_get_bytecodes`
    /// every object stays at its stack.
    fn made_by_the_code(
        &self,
        ctx: &Context,
        jni: Jni<'_>,
        frames: &[crate::jvmti::Frame],
        class_sig: &str,
    ) -> bool {
        use crate::bci::code::instructions::{may_allocate, op};
        let Some(top) = frames.first().filter(|f| f.location >= 0) else {
            return true; // a native method (or no frame) allocates itself
        };
        let Ok(Some([code, a, b])) = ctx.jvmti.instruction_at(top.method, top.location) else {
            return true;
        };
        match code {
            _ if !may_allocate(code) => false,
            op::NEWARRAY => primitive_array_signature(a) == Some(class_sig),
            op::ANEWARRAY => class_sig.starts_with("[L") || class_sig.starts_with("[["),
            op::MULTIANEWARRAY => class_sig.starts_with('['),
            op::NEW => match self.class_of_new(ctx, jni, top, u16::from_be_bytes([a, b])) {
                Some(name) => {
                    class_sig.len() == name.len() + 2
                        && class_sig.starts_with('L')
                        && class_sig.ends_with(';')
                        && class_sig[1..class_sig.len() - 1] == *name
                }
                None => !class_sig.starts_with('['),
            },
            _ => true,
        }
    }

    /// The internal name of the class a `new` at `at` creates (constant
    /// pool entry `index` of its method's class), remembered per location.
    fn class_of_new(
        &self,
        ctx: &Context,
        jni: Jni<'_>,
        at: &crate::jvmti::Frame,
        index: u16,
    ) -> Option<Arc<str>> {
        let key = (at.method.as_usize(), at.location);
        if let Some(n) = self.new_classes.get(&key) {
            return n.clone();
        }
        let name = ctx
            .jvmti
            .method_declaring_class(jni, at.method)
            .ok()
            .and_then(|k| ctx.jvmti.constant_pool(k.obj()).ok())
            .and_then(|(count, entries)| {
                crate::bci::classfile::constant_pool::class_name_at(count, &entries, index)
                    .map(|n| Arc::from(String::from_utf8_lossy(n).as_ref()))
            });
        self.new_classes.insert(key, name.clone());
        name
    }

    /// ObjectFree: release the object's slot and take it off its site's
    /// live counters. Only agent-side work (no JVMTI calls), as the spec
    /// demands.
    fn on_free(&self, ctx: &Context, tag: i64) {
        self.frees_in_flight.fetch_add(1, Ordering::AcqRel);
        let slot = match split_tag(tag) {
            Some((TagKind::Object, slot)) => Some(slot as u32),
            Some((TagKind::Class | TagKind::Thread, _)) => ctx.tags.take_slot(tag),
            None => None,
        };
        if let Some(info) = slot.and_then(|s| ctx.tables.objects.remove(s)) {
            // A reaped slot's site was decremented by the heap check
            // already; a ghost's object is counted in another slot; pending
            // slots never get a free (their object is held by the
            // allocating thread).
            if info.owner < PENDING {
                let (bytes, units) = weight(info.size as u64, ctx.tables.sites.interval());
                ctx.tables.sites.freed(info.owner, bytes, units);
                self.frees.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.frees_in_flight.fetch_sub(1, Ordering::AcqRel);
    }

    /// Before a report: with `gcbeforedump=y` (or a socket request), collect
    /// garbage and take every object the GC freed off its site's live
    /// counters, so live counts equal what the heap holds.
    ///
    /// The JVM posts ObjectFree events late: JDK 11 during the GC, JDK 16 and
    /// later from the service thread some time after it (JDK-8212879), and no
    /// JVMTI call says when the last one has arrived. So the agent does not
    /// wait for them: after the GC it lists the tagged objects the heap still
    /// holds (`reap_dead`), and every tracked object missing from that list is
    /// dead. Its counts are taken off now; the free that arrives later only
    /// releases its slot. (Re-enabling ObjectFree would make the VM flush
    /// pending frees synchronously, but that path waits for the service
    /// thread without being safepoint-safe and deadlocked JDK 17.0.15 when a
    /// safepoint was requested meanwhile, so it is not used.)
    fn prepare_report(&self, ctx: &Context, force_gc: bool) {
        let st = self;
        if !(ctx.opts.gc_before_dump || force_gc) || !st.enabled.load(Ordering::Acquire) {
            return;
        }
        let t0 = Instant::now();
        let frees0 = st.frees.load(Ordering::Relaxed);
        let _no_reuse = ctx.tables.objects.pause_recycling();
        let retries = match self.force_collection(ctx) {
            Ok(n) => n,
            Err(e) => {
                diag::error(&format!(
                    "cannot force a garbage collection before the report: {e}"
                ));
                return;
            }
        };
        if retries > 0 {
            diag::verbose(
                ctx.opts.verbose,
                &format!(" (the GC ran at attempt {})", retries + 1),
            );
        }
        let reaped = match self.reap_dead(ctx) {
            Ok(n) => n,
            Err(e) => {
                diag::error(&format!(
                    "cannot list the objects left after the garbage collection: {e}; live counts include objects whose ObjectFree has not arrived"
                ));
                0
            }
        };
        // A free that emptied a slot the check then skipped may still be
        // lowering its site's counters: let it finish (microseconds).
        let limit = Instant::now() + std::time::Duration::from_secs(1);
        while st.frees_in_flight.load(Ordering::Acquire) != 0 && Instant::now() < limit {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        diag::verbose(
            ctx.opts.verbose,
            &format!(
                " (GC before report: {} objects freed, {} of them found dead before their ObjectFree arrived, in {} ms)",
                st.frees.load(Ordering::Relaxed) - frees0 + reaped,
                reaped,
                t0.elapsed().as_millis()
            ),
        );
    }

    /// Force a garbage collection and make sure one ran: HotSpot skips a
    /// forced full GC without a word while a thread is in a JNI critical
    /// region (GCLocker), and the heap check would then count that garbage as
    /// live. Retries for up to half a second; returns how many retries it took.
    fn force_collection(&self, ctx: &Context) -> crate::jvmti::JResult<u32> {
        const ATTEMPTS: u32 = 50;
        for attempt in 0..ATTEMPTS {
            let before = self.collections.load(Ordering::Acquire);
            ctx.jvmti.force_garbage_collection()?;
            if self.collections.load(Ordering::Acquire) != before {
                return Ok(attempt);
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        diag::verbose(
            ctx.opts.verbose,
            " (no garbage collection ran for the report; unreachable objects may count as live)",
        );
        Ok(ATTEMPTS)
    }

    /// Compare the object table with the heap (after a GC, with slot reuse
    /// paused by the caller): every counted object whose tag the heap no
    /// longer holds is taken off its site's live counters and its slot marked
    /// `REAPED`. Returns how many were.
    ///
    /// The table is read inside the heap iteration, while the world is
    /// stopped, so each slot's state matches what the iteration sees: a
    /// slot that is tagged there was tagged before the iteration began
    /// (tagging needs the VM), and one still pending is skipped.
    fn reap_dead(&self, ctx: &Context) -> crate::jvmti::JResult<u64> {
        let table = &ctx.tables.objects;
        let limit = table.slot_limit() as usize;
        let mut seen = vec![0u64; limit.div_ceil(64)];
        let mut cells = vec![0u64; limit];
        let mut copied = false;
        // Class mirrors and Thread objects counted at allocation carry an
        // identity tag now; `retagged` maps those to their slots.
        let mut identity_tags = Vec::new();
        ctx.jvmti.for_each_tagged_object(&mut |tag| {
            if !copied {
                table.copy_cells(&mut cells);
                copied = true;
            }
            match split_tag(tag) {
                Some((TagKind::Object, slot)) if (slot as usize) < limit => {
                    seen[slot as usize / 64] |= 1 << (slot % 64);
                }
                Some((TagKind::Class | TagKind::Thread, _)) => identity_tags.push(tag),
                _ => {}
            }
        })?;
        if !copied {
            // No tagged object at all (not even a class): nothing to compare.
            return Ok(0);
        }
        for tag in identity_tags {
            if let Some(slot) = ctx.tags.slot(tag).map(|s| s as usize) {
                if slot < limit {
                    seen[slot / 64] |= 1 << (slot % 64);
                }
            }
        }
        let interval = ctx.tables.sites.interval();
        let mut reaped = 0;
        let mut pending = 0;
        for (slot, &raw) in cells.iter().enumerate().skip(1) {
            let Some(info) = objects::decode(raw) else {
                continue;
            };
            if objects::is_pending(info.owner) {
                pending += 1;
            }
            // Pending, reaped and non-site slots are left alone.
            if info.owner >= PENDING || seen[slot / 64] & (1 << (slot % 64)) != 0 {
                continue;
            }
            let dead = ObjectInfo {
                owner: REAPED,
                size: info.size,
            };
            // Fails when the free arrived meanwhile (it decremented the site).
            if table.replace(slot as u32, info, dead) {
                let (bytes, units) = weight(info.size as u64, interval);
                ctx.tables.sites.freed(info.owner, bytes, units);
                reaped += 1;
            }
        }
        diag::verbose(
            ctx.opts.verbose,
            &format!(" (heap check: {pending} objects still being tagged)"),
        );
        Ok(reaped)
    }

    /// One line of memory use for `verbose`.
    fn memory_summary(&self, ctx: &Context) -> String {
        let st = self;
        let t = &ctx.tables;
        format!(
            " (allocation sites: {} sites, {} fingerprints, {} KiB; object table: {} live entries, {} KiB; \
             {} allocations counted, {} from VMObjectAlloc, {} duplicate reports, {} frees, {} dropped, {} untracked, \
             {} made by the agent or for tools and not counted)",
            t.sites.len(),
            t.sites.fingerprints(),
            t.sites.memory_bytes() / 1024,
            t.objects.live(),
            t.objects.memory_bytes() / 1024,
            st.counted.load(Ordering::Relaxed),
            st.from_vm_events.load(Ordering::Relaxed),
            st.duplicates.load(Ordering::Relaxed),
            st.frees.load(Ordering::Relaxed),
            st.dropped.load(Ordering::Relaxed),
            st.untracked.load(Ordering::Relaxed),
            st.by_agent.load(Ordering::Relaxed),
        )
    }
}

impl Profile for AllocSites {
    fn name(&self) -> &'static str {
        "heap=sites"
    }

    fn capabilities(
        &self,
        potential: &jvmtiCapabilities,
        need: &mut jvmtiCapabilities,
    ) -> Result<(), String> {
        // Allocation events and frees; only asked for when heap=sites is on
        // (sampling support costs the VM a little even when idle).
        for c in [
            cap::CAN_GENERATE_SAMPLED_OBJECT_ALLOC_EVENTS,
            cap::CAN_GENERATE_VM_OBJECT_ALLOC_EVENTS,
            cap::CAN_GENERATE_OBJECT_FREE_EVENTS,
        ] {
            if !potential.has(c) {
                return Err("heap=sites needs JVMTI allocation sampling (JDK 11 or later) and object free events, which this VM does not offer.".into());
            }
            need.set(c);
        }
        // To tell the VM's own allocations on a thread from the program's
        // (`made_by_the_code`); without them they stay at the program's line.
        for c in [cap::CAN_GET_BYTECODES, cap::CAN_GET_CONSTANT_POOL] {
            if potential.has(c) {
                need.set(c);
            }
        }
        Ok(())
    }

    fn events(&self) -> &'static [Event] {
        &[
            Event::SampledObjectAlloc,
            Event::VmObjectAlloc,
            Event::ObjectFree,
            Event::GcFinish,
        ]
    }

    fn on_load(&self, ctx: &Context) {
        if let Err(e) = self.set_interval(ctx) {
            diag::error(&format!("{e}; allocation sites are incomplete"));
        }
    }

    fn vm_start(&'static self, ctx: &'static Context, jni: Jni<'_>) {
        if let Err(e) = self.start(ctx, jni) {
            diag::error(&format!("{e}; allocation sites are incomplete"));
        }
    }

    /// Allocations from now on (the SITES title says so, and objects
    /// allocated before are neither counted nor tracked live). The forced
    /// GC of `start` matters even more here: every thread holds a
    /// thread-local buffer it has been allocating in without the sampler.
    fn attach(&'static self, ctx: &'static Context, jni: Jni<'_>) -> Result<(), String> {
        self.set_interval(ctx)?;
        self.start(ctx, jni)
    }

    /// GC and frees first (`gcbeforedump`), then every trace not yet
    /// written, then SITES / ALLOC SITES.
    fn dump(&'static self, ctx: &'static Context, _jni: Jni<'_>) {
        diag::verbose(ctx.opts.verbose, " allocation sites ...");
        let order = if ctx.opts.sites_by_alloc {
            SITES_SORT_BY_ALLOC
        } else {
            0
        };
        self.prepare_report(ctx, false);
        // Once a front-end took the counts (`profile -e alloc` sums its
        // takes), this report is one more take: every site's counts since
        // the last take, none cut, rows split past 4 GiB like the others'
        // (docs/socket-protocol.md, "Taking the allocations").
        let (flags, cutoff) = if ctx.tables.sites.taken() {
            (order | SITES_TAKEN, 0.0)
        } else {
            (order, ctx.opts.cutoff)
        };
        crate::report::sites::write(ctx, flags, cutoff);
        diag::verbose(ctx.opts.verbose, &self.memory_summary(ctx));
    }

    fn command(&'static self, ctx: &'static Context, _jni: Jni<'_>, cmd: &Command) -> Answer {
        match *cmd {
            // ALLOC SITES: flags 0x1 changed only, 0x2 sort by allocated
            // bytes, 0x4 force a GC first (also done for every report with
            // `gcbeforedump=y`, but for a take: 0x20, the allocations
            // since the last take, asked for four times a second by `hprof-rs
            // profile -e alloc`, where a GC a second would be the cost).
            Command::AllocSites { flags, cutoff } => {
                let take = flags & SITES_TAKEN != 0;
                let gc = flags & SITES_FORCE_GC != 0;
                if gc || !take {
                    self.prepare_report(ctx, gc);
                }
                crate::report::sites::write(ctx, flags, f64::from(cutoff));
                // Not for a take: four a second would fill the program's
                // stderr with these lines for as long as the profile runs.
                if !take {
                    diag::verbose(ctx.opts.verbose, &self.memory_summary(ctx));
                }
            }
            Command::HeapSummary => crate::report::sites::write_heap_summary(ctx),
            Command::Control(Control::AllocTracking(on)) => self.set_tracking(ctx, on),
            // Reset the site counters in place (the original discarded the
            // table, leaving tracked objects pointing at freed sites).
            Command::Control(Control::ClearAllocSites) => ctx.tables.sites.clear(),
            _ => return Answer::NotMine,
        }
        Answer::Done
    }

    /// Disable the allocation events (VM death, after the final dump).
    fn shut_down(&self, ctx: &Context) {
        if !self.enabled.swap(false, Ordering::AcqRel) {
            return;
        }
        for ev in [
            event::SAMPLED_OBJECT_ALLOC,
            event::VM_OBJECT_ALLOC,
            event::OBJECT_FREE,
            event::GARBAGE_COLLECTION_FINISH,
        ] {
            let _ = ctx.jvmti.set_event_mode(false, ev);
        }
    }

    /// SampledObjectAlloc / VMObjectAlloc. `vm_event`: from VMObjectAlloc,
    /// which may report an object SampledObjectAlloc reported already.
    fn object_alloc(
        &self,
        ctx: &Context,
        jni: Jni<'_>,
        thread: Obj<'_>,
        obj: Obj<'_>,
        klass: Obj<'_>,
        size: i64,
        vm_event: bool,
    ) {
        let mean = ctx.tables.sites.interval();
        if !vm_event && mean != 0 {
            // This sample's thread has drawn its next point already; the
            // next draw (of any thread) gets a new mean (spread.rs).
            let _ = ctx
                .jvmti
                .set_heap_sampling_interval(spread::interval_for(mean, spread::uniform()));
        }
        if PRIMING.with(|p| p.get()).is_some() {
            PRIMING.with(|p| p.set(Some(true)));
            return;
        }
        // The agent's own objects (a JNI call of one of its callbacks, one
        // of its threads) and the attach listener's: not the program's.
        if crate::jvmti::own_work::agent_code_below() {
            self.by_agent.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let j = ctx.jvmti;
        // SampledObjectAlloc reports a fresh object before anyone could tag
        // it; VMObjectAlloc comes later for objects the sampler may have seen.
        if vm_event {
            let tag = j.get_tag(obj).unwrap_or(0);
            if tag != 0 {
                CLONE_SLOT.with(|c| c.take());
                self.duplicates.fetch_add(1, Ordering::Relaxed);
                return;
            }
            // A clone its SampledObjectAlloc counted (then lost the tag of)
            // moves; one the sampler did not report is counted here.
            if self.allocated_by_clone(ctx, jni) && self.move_clone(ctx, obj, size) {
                self.duplicates.fetch_add(1, Ordering::Relaxed);
                return;
            }
        }
        let thread_serial = if ctx.opts.thread {
            threads::known_serial(ctx, thread).unwrap_or(UNKNOWN_THREAD_SERIAL)
        } else {
            0
        };
        let clone_method = self.clone_method.get().copied();
        let mut in_clone = false;
        let site = BUFFERS.with(|b| {
            let mut fresh = Buffers::default();
            // Re-entered on this thread (an allocation inside our own
            // callback): use fresh buffers.
            let mut held = b.try_borrow_mut().ok();
            let b = held.as_deref_mut().unwrap_or(&mut fresh);
            if b.session != ctx.session {
                b.cache.clear();
                b.session = ctx.session;
            }
            let site = self.site_of(ctx, jni, klass, thread_serial, b);
            in_clone = !vm_event
                && clone_method.is_some_and(|m| b.frames.first().is_some_and(|f| f.method == m));
            site
        });
        let Some(site) = site else {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let size = size.max(0) as u64;
        let (bytes, units) = weight(size, mean);
        let sites = &ctx.tables.sites;
        self.counted.fetch_add(1, Ordering::Relaxed);
        if vm_event {
            self.from_vm_events.fetch_add(1, Ordering::Relaxed);
        }
        let info = ObjectInfo {
            owner: site,
            size: size.min(u32::MAX as u64) as u32,
        };
        // The slot says "pending" until the tag is set: a heap check running
        // meanwhile cannot see the object and must not call it dead.
        let pending = ObjectInfo {
            owner: site | PENDING,
            ..info
        };
        match ctx.tables.objects.insert(pending) {
            Some(slot) => {
                // Count before tagging: once tagged, a free may arrive (not
                // while we hold the local reference, but keep the order simple).
                sites.allocated(site, bytes, units, true);
                if j.set_tag(obj, make_tag(TagKind::Object, slot as u64))
                    .is_err()
                {
                    ctx.tables.objects.remove(slot);
                    sites.freed(site, bytes, units);
                    self.untracked.fetch_add(1, Ordering::Relaxed);
                } else {
                    // Nothing else changes a pending slot: no free can come
                    // for an object we still hold, and heap checks skip it.
                    ctx.tables.objects.replace(slot, pending, info);
                    if in_clone {
                        CLONE_SLOT.with(|c| c.set(Some((ctx.session, slot))));
                    }
                }
            }
            None => {
                sites.allocated(site, bytes, units, false);
                self.untracked.fetch_add(1, Ordering::Relaxed);
                if !self.warned_full.swap(true, Ordering::Relaxed) {
                    diag::error("object table full: further allocations are counted but their live counts are not tracked");
                }
            }
        }
    }

    fn object_free(&self, ctx: &Context, tag: i64) {
        self.on_free(ctx, tag);
    }

    /// Counted only (JVMTI allows little else in this event): tells a
    /// report whether the GC it forced really ran.
    fn gc_finish(&self, _ctx: &Context) {
        self.collections.fetch_add(1, Ordering::AcqRel);
    }
}
