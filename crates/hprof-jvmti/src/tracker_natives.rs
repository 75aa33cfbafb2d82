//! The JNI surface of the cpu=times Tracker class (`java.lang.HprofTracker`,
//! source in crates/hprof-agent/src/profile/cpu_times/java/): the native methods it calls,
//! exported under their JNI names, and safe wrappers for what the agent
//! reads and writes in it (its static fields, the threads' event buffers,
//! the thread table, the bit sets of resolved methods).
//!
//! Every exported entry point runs the profile's handler inside
//! `catch_unwind`, so a panic never unwinds into the JVM.

use super::refs::{Jni, Obj};
use super::sys::{jclass, jint, jobject, JNIEnv};
use jni::objects::{GlobalRef, JClass, JLongArray, JObject, JObjectArray, JValue};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::AtomicU64;
use std::sync::OnceLock;

/// Internal name of the Tracker class.
pub const TRACKER_CLASS: &str = "java/lang/HprofTracker";

/// The class file, compiled from its Java source by scripts/build-tracker.sh.
pub const TRACKER_CLASS_BYTES: &[u8] =
    include_bytes!("../../hprof-agent/src/profile/cpu_times/java/HprofTracker.class");

/// Header slots of a thread's buffer: next free index, shadow-stack depth,
/// the address of the thread's clock.
pub const BUFFER_HEADER: usize = 3;

/// What the agent does when the Tracker calls it.
pub trait TrackerCalls: Send + Sync {
    /// `syncCall`: a call to handle now, after the thread's buffered
    /// events (full buffer, unresolved method, the thread's first event).
    fn sync_call(&self, jni: Jni<'_>, thread: Obj<'_>, cnum: u32, mnum: u32);
    /// `syncReturn`: a return to handle now, after the thread's buffered
    /// events (full buffer, no call left on the shadow stack, unresolved
    /// method, the thread's first event).
    fn sync_return(&self, jni: Jni<'_>, thread: Obj<'_>, cnum: u32, mnum: u32);
}

static CALLS: OnceLock<&'static dyn TrackerCalls> = OnceLock::new();

/// Install the handler (once per process). The natives are bound by the
/// JVM itself: HotSpot looks up `Java_...` symbols in agent libraries
/// when it links a native method. RegisterNatives would work too, but on
/// JDK 15+ it logs a warning on stdout for classes of named modules
/// (`Re-registering of platform native method`), which would change the
/// program's output.
pub fn install(calls: &'static dyn TrackerCalls) {
    let _ = CALLS.set(calls);
}

#[inline]
fn run(what: &str, f: impl FnOnce(&'static dyn TrackerCalls)) {
    let Some(calls) = CALLS.get().copied() else {
        return;
    };
    if catch_unwind(AssertUnwindSafe(|| f(calls))).is_err() {
        crate::diag::error(&format!("internal error in Tracker.{what}; call ignored"));
    }
}

/// # Safety
/// Called by the JVM only, as the Tracker's native `syncCall`, with the
/// calling thread's JNIEnv and a live Thread reference.
#[no_mangle]
pub unsafe extern "system" fn Java_java_lang_HprofTracker_syncCall(
    jni: *mut JNIEnv,
    _cls: jclass,
    thread: jobject,
    cnum: jint,
    mnum: jint,
) {
    // SAFETY: a native method's JNIEnv and argument, valid for the call.
    let (Some(jni), thread) = (unsafe { Jni::from_raw(jni) }, unsafe {
        Obj::from_raw(thread)
    }) else {
        return;
    };
    run("syncCall", |c| {
        c.sync_call(jni, thread, cnum as u32, mnum as u32)
    })
}

/// # Safety
/// Called by the JVM only, as the Tracker's native `syncReturn`, with the
/// calling thread's JNIEnv and a live Thread reference.
#[no_mangle]
pub unsafe extern "system" fn Java_java_lang_HprofTracker_syncReturn(
    jni: *mut JNIEnv,
    _cls: jclass,
    thread: jobject,
    cnum: jint,
    mnum: jint,
) {
    // SAFETY: a native method's JNIEnv and argument, valid for the call.
    let (Some(jni), thread) = (unsafe { Jni::from_raw(jni) }, unsafe {
        Obj::from_raw(thread)
    }) else {
        return;
    };
    run("syncReturn", |c| {
        c.sync_return(jni, thread, cnum as u32, mnum as u32)
    })
}

/// Turn a JNI failure into text, clearing any pending Java exception (an
/// agent must never leave one in the application's thread).
fn fail(env: &mut jni::JNIEnv<'_>, e: jni::errors::Error) -> String {
    if env.exception_check().unwrap_or(false) {
        let _ = env.exception_clear();
    }
    e.to_string()
}

/// View a `long[]` reference as the jni crate's type (no ownership).
fn long_array(o: Obj<'_>) -> JLongArray<'_> {
    // SAFETY: callers pass a live reference to a long[] (a native method's
    // argument or a global reference held by the agent); the wrapper does
    // not delete it.
    unsafe { JLongArray::from_raw(o.raw()) }
}

/// View a reference as the jni crate's type (no ownership).
fn jobj(o: Obj<'_>) -> JObject<'_> {
    // SAFETY: a live reference for the borrow; not deleted by the wrapper.
    unsafe { JObject::from_raw(o.raw()) }
}

/// The Tracker class, defined by the agent, and its fields.
pub struct Tracker {
    class: GlobalRef,
}

/// One live entry of the thread table: (Thread, identity hash, buffer).
pub type TableEntry<'a> = (&'a GlobalRef, i32, &'a GlobalRef);

impl Tracker {
    /// Define the class in the boot class loader (JNI DefineClass with a
    /// null loader), so every module reads it and every loader finds it.
    pub fn define(jni: Jni<'_>) -> Result<Tracker, String> {
        let class = super::jni::define_boot_class(jni, TRACKER_CLASS, TRACKER_CLASS_BYTES)?;
        Ok(Tracker { class })
    }

    /// The class (a global reference the agent keeps for the process's life).
    pub fn class(&self) -> Obj<'_> {
        Obj::of_global(&self.class)
    }

    fn jclass(&self) -> JClass<'_> {
        // SAFETY: a global reference to the Tracker class, alive as long as self.
        unsafe { JClass::from_raw(self.class().raw()) }
    }

    fn set_static(&self, jni: Jni<'_>, name: &str, sig: &str, v: JValue) -> Result<(), String> {
        let mut env = jni.env();
        let class = self.jclass();
        let r = env
            .get_static_field_id(&class, name, sig)
            .and_then(|id| env.set_static_field(&class, id, v));
        r.map_err(|e| fail(&mut env, e))
    }

    /// `engaged`: non-zero while timing.
    pub fn set_engaged(&self, jni: Jni<'_>, on: bool) -> Result<(), String> {
        self.set_static(
            jni,
            "engaged",
            "I",
            JValue::Int(if on { 0xFFFF } else { 0 }),
        )
    }

    /// `untimed`: the classes among `names` (internal names) this JVM has;
    /// the Tracker drops the events of their thread instances. Returns the
    /// names found. A missing class is not an error (older JDKs).
    pub fn set_untimed<'n>(&self, jni: Jni<'_>, names: &[&'n str]) -> Result<Vec<&'n str>, String> {
        let mut env = jni.env();
        let class = self.jclass();
        let r = env.with_local_frame(8 + names.len() as i32, |env| {
            let mut found = Vec::new();
            let mut classes = Vec::new();
            for &name in names {
                match env.find_class(name) {
                    Ok(c) => {
                        found.push(name);
                        classes.push(c);
                    }
                    // NoClassDefFoundError: this JDK has no such class.
                    Err(_) => {
                        if env.exception_check()? {
                            env.exception_clear()?;
                        }
                    }
                }
            }
            let arr =
                env.new_object_array(classes.len() as i32, "java/lang/Class", JObject::null())?;
            for (i, c) in classes.iter().enumerate() {
                env.set_object_array_element(&arr, i as i32, c)?;
            }
            let id = env.get_static_field_id(&class, "untimed", "[Ljava/lang/Class;")?;
            env.set_static_field(&class, id, JValue::Object(&arr))?;
            Ok::<_, jni::errors::Error>(found)
        });
        r.map_err(|e| fail(&mut env, e))
    }

    /// Call each native once (with arguments the handlers ignore) so the
    /// JVM links them now: linking looks the symbols up through
    /// `ClassLoader.findNative`, instrumented Java code, which would
    /// recurse if it first happened inside an engaged Tracker call.
    pub fn link_natives(&self, jni: Jni<'_>) -> Result<(), String> {
        let null = JObject::null();
        let class = self.class();
        for name in ["syncCall", "syncReturn"] {
            super::jni::call_static_void(
                jni,
                class,
                name,
                "(Ljava/lang/Thread;II)V",
                &[JValue::Object(&null), JValue::Int(-1), JValue::Int(-1)],
            )
            .map_err(|e| format!("{name}: {e}"))?;
        }
        Ok(())
    }

    /// `System.identityHashCode(obj)`, the hash the Tracker probes with.
    pub fn identity_hash(&self, jni: Jni<'_>, obj: Obj<'_>) -> Result<i32, String> {
        let mut env = jni.env();
        let o = jobj(obj);
        let r = env
            .call_static_method(
                "java/lang/System",
                "identityHashCode",
                "(Ljava/lang/Object;)I",
                &[JValue::Object(&o)],
            )
            .and_then(|v| v.i());
        r.map_err(|e| fail(&mut env, e))
    }

    /// A new, empty event buffer of `len` slots (header included) whose
    /// events are stamped with `clock` (nanoseconds). The Tracker reads the
    /// counter through its address with Unsafe on every event of the
    /// thread: `'static` keeps that address valid for the life of the
    /// process.
    pub fn new_buffer(
        &self,
        jni: Jni<'_>,
        len: usize,
        clock: &'static AtomicU64,
    ) -> Result<GlobalRef, String> {
        let clock = clock as *const AtomicU64 as usize as i64;
        let mut env = jni.env();
        let r = env
            .new_long_array(len.max(BUFFER_HEADER) as i32)
            .and_then(|a| {
                // The header, clock address included, is in place before the
                // buffer is published to the Tracker's table.
                let g = env
                    .set_long_array_region(&a, 0, &[BUFFER_HEADER as i64, 0, clock])
                    .and_then(|_| env.new_global_ref(&a));
                let _ = env.delete_local_ref(a);
                g
            });
        r.map_err(|e| fail(&mut env, e))
    }

    /// Append the buffer's event slots from index `from` up to its
    /// current end to `out`; returns that end. Writes nothing: another
    /// thread may be appending to the buffer (see `reset`).
    pub fn read_events(
        jni: Jni<'_>,
        buffer: Obj<'_>,
        from: usize,
        out: &mut Vec<i64>,
    ) -> Result<usize, String> {
        let env = jni.env();
        let b = long_array(buffer);
        let mut head = [0i64];
        env.get_long_array_region(&b, 0, &mut head)
            .map_err(|e| e.to_string())?;
        let len = env.get_array_length(&b).map_err(|e| e.to_string())? as usize;
        let end = (head[0].max(0) as usize).clamp(BUFFER_HEADER, len);
        let from = from.clamp(BUFFER_HEADER, end);
        let start = out.len();
        out.resize(start + (end - from), 0);
        env.get_long_array_region(&b, from as i32, &mut out[start..])
            .map_err(|e| e.to_string())?;
        Ok(end)
    }

    /// Empty the buffer and set its depth slot (the shadow stack's depth).
    /// Only the buffer's own thread may do this: it is the only writer of
    /// the header while it runs Java code.
    pub fn reset(jni: Jni<'_>, buffer: Obj<'_>, depth: usize) -> Result<(), String> {
        let env = jni.env();
        env.set_long_array_region(long_array(buffer), 0, &[BUFFER_HEADER as i64, depth as i64])
            .map_err(|e| e.to_string())
    }

    /// Replace the thread table with a new one of `slots` slots holding
    /// `entries` (the live threads; tombstones are dropped).
    pub fn rebuild_table(
        &self,
        jni: Jni<'_>,
        slots: usize,
        entries: &[TableEntry<'_>],
    ) -> Result<(), String> {
        debug_assert!(slots.is_power_of_two() && entries.len() < slots);
        let mut env = jni.env();
        let r = env.with_local_frame(8, |env| -> jni::errors::Result<()> {
            let tab: JObjectArray<'_> =
                env.new_object_array(2 * slots as i32, "java/lang/Object", JObject::null())?;
            let mut used = vec![false; slots];
            for &(thread, hash, buffer) in entries {
                let mut i = hash as usize & (slots - 1);
                while used[i] {
                    i = (i + 1) & (slots - 1);
                }
                used[i] = true;
                env.set_object_array_element(&tab, 2 * i as i32, thread.as_obj())?;
                env.set_object_array_element(&tab, 2 * i as i32 + 1, buffer.as_obj())?;
            }
            let class = self.jclass();
            let id = env.get_static_field_id(&class, "threads", "[Ljava/lang/Object;")?;
            env.set_static_field(&class, id, JValue::Object(&tab))
        });
        r.map_err(|e| fail(&mut env, e))
    }

    /// Probe the current table as the Tracker does, from `hash`: with
    /// `insert`, put (thread, buffer) in the first free or dead slot; else
    /// replace the thread's entry by a tombstone (the class object: not a
    /// Thread, so never matched, but it keeps probe chains going).
    /// Ok(false) if the table has no room (insert) or no such entry.
    pub fn table_update(
        &self,
        jni: Jni<'_>,
        thread: Obj<'_>,
        hash: i32,
        insert: Option<Obj<'_>>,
    ) -> Result<bool, String> {
        let mut env = jni.env();
        let r = env.with_local_frame(16, |env| -> jni::errors::Result<bool> {
            let class = self.jclass();
            let id = env.get_static_field_id(&class, "threads", "[Ljava/lang/Object;")?;
            let tab = env
                .get_static_field_unchecked(
                    &class,
                    id,
                    jni::signature::JavaType::Array(Box::new(jni::signature::JavaType::Object(
                        "java/lang/Object".into(),
                    ))),
                )?
                .l()?;
            if tab.is_null() {
                return Ok(false);
            }
            let tab = JObjectArray::from(tab);
            let slots = env.get_array_length(&tab)? as usize / 2;
            if slots == 0 {
                return Ok(false);
            }
            let t = jobj(thread);
            let mut i = hash as usize & (slots - 1);
            for _ in 0..slots {
                let o = env.get_object_array_element(&tab, 2 * i as i32)?;
                let empty = o.is_null();
                let dead = !empty && env.is_same_object(&o, &class)?;
                let mine = !empty && !dead && env.is_same_object(&o, &t)?;
                env.delete_local_ref(o)?;
                match insert {
                    Some(buffer) if empty || dead => {
                        let b = jobj(buffer);
                        env.set_object_array_element(&tab, 2 * i as i32 + 1, &b)?;
                        env.set_object_array_element(&tab, 2 * i as i32, &t)?;
                        return Ok(true);
                    }
                    None if mine => {
                        env.set_object_array_element(&tab, 2 * i as i32, &class)?;
                        env.set_object_array_element(&tab, 2 * i as i32 + 1, JObject::null())?;
                        return Ok(true);
                    }
                    None if empty => return Ok(false),
                    _ => {}
                }
                i = (i + 1) & (slots - 1);
            }
            Ok(false)
        });
        r.map_err(|e| fail(&mut env, e))
    }

    /// Mark method `mnum` of class `cnum` (which has `methods` methods) as
    /// resolved, growing the bit sets as needed. Callers serialise.
    pub fn set_known(
        &self,
        jni: Jni<'_>,
        cnum: u32,
        mnum: u32,
        methods: usize,
    ) -> Result<(), String> {
        let mut env = jni.env();
        let r = env.with_local_frame(16, |env| -> jni::errors::Result<()> {
            let class = self.jclass();
            let id = env.get_static_field_id(&class, "known", "[[J")?;
            let ty = jni::signature::JavaType::Array(Box::new(jni::signature::JavaType::Array(
                Box::new(jni::signature::JavaType::Primitive(
                    jni::signature::Primitive::Long,
                )),
            )));
            let cur = env.get_static_field_unchecked(&class, id, ty)?.l()?;
            let cur = JObjectArray::from(cur);
            let len = if cur.is_null() {
                0
            } else {
                env.get_array_length(&cur)? as usize
            };
            let outer = if (cnum as usize) < len {
                cur
            } else {
                let n = (cnum as usize + 1).max(2 * len).max(256);
                let grown = env.new_object_array(n as i32, "[J", JObject::null())?;
                for k in 0..len {
                    let e = env.get_object_array_element(&cur, k as i32)?;
                    env.set_object_array_element(&grown, k as i32, &e)?;
                    env.delete_local_ref(e)?;
                }
                env.set_static_field(&class, id, JValue::Object(&grown))?;
                grown
            };
            let word = (mnum / 64) as usize;
            let words = methods.max(mnum as usize + 1).div_ceil(64);
            let bits = JLongArray::from(env.get_object_array_element(&outer, cnum as i32)?);
            let bits = if !bits.is_null() && env.get_array_length(&bits)? as usize > word {
                bits
            } else {
                let fresh = env.new_long_array(words as i32)?;
                if !bits.is_null() {
                    let old = env.get_array_length(&bits)? as usize;
                    let mut v = vec![0i64; old];
                    env.get_long_array_region(&bits, 0, &mut v)?;
                    env.set_long_array_region(&fresh, 0, &v)?;
                }
                env.set_object_array_element(&outer, cnum as i32, &fresh)?;
                fresh
            };
            let mut w = [0i64];
            env.get_long_array_region(&bits, word as i32, &mut w)?;
            w[0] |= 1i64 << (mnum % 64);
            env.set_long_array_region(&bits, word as i32, &w)
        });
        r.map_err(|e| fail(&mut env, e))
    }
}
