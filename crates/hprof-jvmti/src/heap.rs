//! The heap walk (JVMTI FollowReferences) and the class and field queries
//! a heap dump needs, behind safe types.
//!
//! The VM calls the heap callbacks on its own thread while the world is
//! stopped; a callback may not call JNI or most JVMTI functions. The
//! visitor therefore only sees plain values: tags (readable and, for the
//! object the callback is about, writable), sizes, indices, and borrowed
//! primitive data.

use super::env::{JResult, Jvmti};
use super::memory::{take_string, JvmtiArray};
use super::refs::{Jni, Local, Locals, Obj};
use super::sys::*;
use std::os::raw::{c_char, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

/// Where a reference comes from, for the reference kinds that say more
/// than an index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefDetail {
    /// Field, static field, array element or constant-pool index (-1 when
    /// the kind has none).
    Index(i32),
    /// Stack local or JNI local root: tag of the owning thread object and
    /// frame depth (0 = top).
    Local { thread_tag: i64, depth: i32 },
}

/// A primitive value of a field, by JVMTI primitive type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Prim {
    Boolean(bool),
    Byte(i8),
    Char(u16),
    Short(i16),
    Int(i32),
    Long(i64),
    Float(f32),
    Double(f64),
}

/// One reference reported by the walk.
#[derive(Debug)]
pub struct Reference<'a> {
    /// `heap_ref::*` kind.
    pub kind: u32,
    pub detail: RefDetail,
    /// Tag of the referee's class (0 = untagged).
    pub class_tag: i64,
    /// Tag of the referrer's class; 0 for roots.
    pub referrer_class_tag: i64,
    /// Referee size in bytes.
    pub size: i64,
    /// The referee's tag; the visitor may set it.
    pub tag: &'a mut i64,
    /// The referrer's tag (`None` for roots). When an object refers to
    /// itself this equals the referee's tag before the callback.
    pub referrer_tag: Option<i64>,
    /// Array length of the referee, -1 if it is not an array.
    pub length: i32,
}

/// What the heap walk reports, one call per reference / value.
pub trait HeapVisitor {
    fn reference(&mut self, r: Reference<'_>);
    /// A primitive instance (`heap_ref::FIELD`) or static
    /// (`heap_ref::STATIC_FIELD`) field of the object tagged `owner_tag`,
    /// whose class is tagged `owner_class_tag`.
    fn primitive_field(
        &mut self,
        kind: u32,
        index: i32,
        owner_class_tag: i64,
        owner_tag: i64,
        value: Prim,
    );
    /// The elements of a primitive array, in native byte order.
    fn primitive_array(
        &mut self,
        class_tag: i64,
        tag: i64,
        size: i64,
        elem_type: u32,
        count: i32,
        data: &[u8],
    );
}

/// Element size of a JVMTI primitive type code.
pub fn prim_size(ty: u32) -> usize {
    match ty {
        prim::BOOLEAN | prim::BYTE => 1,
        prim::CHAR | prim::SHORT => 2,
        prim::INT | prim::FLOAT => 4,
        _ => 8,
    }
}

struct Walk<'v, V> {
    visitor: &'v mut V,
    panicked: bool,
}

/// Run one callback body; a panic stops the walk instead of unwinding into
/// the VM.
fn run<V>(user_data: *mut c_void, f: impl FnOnce(&mut V)) -> jint {
    // SAFETY: user_data is the `Walk` that `follow_references` passed to
    // the VM; the VM calls back only during that call, on one thread.
    let walk = unsafe { &mut *(user_data as *mut Walk<'_, V>) };
    if walk.panicked {
        return JVMTI_VISIT_ABORT;
    }
    let v = &mut *walk.visitor;
    match catch_unwind(AssertUnwindSafe(|| f(v))) {
        Ok(()) => JVMTI_VISIT_OBJECTS,
        Err(_) => {
            walk.panicked = true;
            JVMTI_VISIT_ABORT
        }
    }
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn on_reference<V: HeapVisitor>(
    kind: jvmtiHeapReferenceKind,
    info: *const jvmtiHeapReferenceInfo,
    class_tag: jlong,
    referrer_class_tag: jlong,
    size: jlong,
    tag_ptr: *mut jlong,
    referrer_tag_ptr: *mut jlong,
    length: jint,
    user_data: *mut c_void,
) -> jint {
    if tag_ptr.is_null() {
        return JVMTI_VISIT_OBJECTS;
    }
    let detail = if info.is_null() {
        RefDetail::Index(-1)
    } else {
        // SAFETY: the VM passes a valid info for kinds that have one; the
        // union member read matches the kind (JVMTI spec, jvmtiHeapReferenceInfo).
        unsafe {
            match kind {
                heap_ref::STACK_LOCAL => {
                    let s = (*info).stack_local;
                    RefDetail::Local {
                        thread_tag: s.thread_tag,
                        depth: s.depth,
                    }
                }
                heap_ref::JNI_LOCAL => {
                    let s = (*info).jni_local;
                    RefDetail::Local {
                        thread_tag: s.thread_tag,
                        depth: s.depth,
                    }
                }
                heap_ref::FIELD
                | heap_ref::STATIC_FIELD
                | heap_ref::ARRAY_ELEMENT
                | heap_ref::CONSTANT_POOL => RefDetail::Index((*info).index),
                _ => RefDetail::Index(-1),
            }
        }
    };
    // SAFETY: referrer_tag_ptr is null for roots or points to the
    // referrer's tag for the duration of the callback; we only read it.
    let referrer_tag = if referrer_tag_ptr.is_null() {
        None
    } else {
        Some(unsafe { *referrer_tag_ptr })
    };
    run::<V>(user_data, |v| {
        // SAFETY: tag_ptr (checked non-null) points to the referee's tag,
        // writable during the callback. The only other pointer that may
        // alias it (referrer_tag_ptr, for self references) was read above
        // and is not used while this borrow lives.
        let tag = unsafe { &mut *tag_ptr };
        v.reference(Reference {
            kind,
            detail,
            class_tag,
            referrer_class_tag,
            size,
            tag,
            referrer_tag,
            length,
        })
    })
}

unsafe extern "C" fn on_primitive_field<V: HeapVisitor>(
    kind: jvmtiHeapReferenceKind,
    info: *const jvmtiHeapReferenceInfo,
    object_class_tag: jlong,
    object_tag_ptr: *mut jlong,
    value: jvalue,
    value_type: jvmtiPrimitiveType,
    user_data: *mut c_void,
) -> jint {
    if info.is_null() || object_tag_ptr.is_null() {
        return JVMTI_VISIT_OBJECTS;
    }
    // SAFETY: info carries the field index for FIELD/STATIC_FIELD; the tag
    // pointer is valid during the callback; the jvalue member read is the
    // one `value_type` names (JVMTI spec, Primitive Field Callback).
    let (index, owner_tag, value) = unsafe {
        let v = match value_type {
            prim::BOOLEAN => Prim::Boolean(value.z != 0),
            prim::BYTE => Prim::Byte(value.b),
            prim::CHAR => Prim::Char(value.c),
            prim::SHORT => Prim::Short(value.s),
            prim::INT => Prim::Int(value.i),
            prim::LONG => Prim::Long(value.j),
            prim::FLOAT => Prim::Float(value.f),
            _ => Prim::Double(value.d),
        };
        ((*info).index, *object_tag_ptr, v)
    };
    run::<V>(user_data, |v| {
        v.primitive_field(kind, index, object_class_tag, owner_tag, value)
    })
}

unsafe extern "C" fn on_array_primitive<V: HeapVisitor>(
    class_tag: jlong,
    size: jlong,
    tag_ptr: *mut jlong,
    element_count: jint,
    element_type: jvmtiPrimitiveType,
    elements: *const c_void,
    user_data: *mut c_void,
) -> jint {
    if tag_ptr.is_null() {
        return JVMTI_VISIT_OBJECTS;
    }
    let n = element_count.max(0) as usize * prim_size(element_type);
    let data = if elements.is_null() || n == 0 {
        &[][..]
    } else {
        // SAFETY: the VM passes `element_count` packed elements of
        // `element_type` at `elements`, readable during the callback.
        unsafe { std::slice::from_raw_parts(elements as *const u8, n) }
    };
    // SAFETY: tag_ptr checked non-null, valid during the callback.
    let tag = unsafe { *tag_ptr };
    run::<V>(user_data, |v| {
        v.primitive_array(class_tag, tag, size, element_type, element_count, data)
    })
}

/// A field of a class as GetClassFields / GetFieldName /
/// GetFieldModifiers describe it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldInfo {
    pub name: String,
    /// JVM type signature (`I`, `Ljava/lang/String;`, `[B`).
    pub signature: String,
    pub is_static: bool,
}

const ACC_STATIC: jint = 0x0008;

impl Jvmti {
    /// Walk every object reachable from the GC roots (FollowReferences, no
    /// filter). Primitive field values and primitive array contents are
    /// reported only when asked for. Returns an error if the walk failed or
    /// the visitor panicked.
    pub fn follow_references<V: HeapVisitor>(
        &self,
        visitor: &mut V,
        prim_fields: bool,
        prim_arrays: bool,
    ) -> JResult<()> {
        let callbacks = jvmtiHeapCallbacks {
            heap_iteration_callback: None,
            heap_reference_callback: Some(on_reference::<V>),
            primitive_field_callback: if prim_fields {
                Some(on_primitive_field::<V>)
            } else {
                None
            },
            array_primitive_value_callback: if prim_arrays {
                Some(on_array_primitive::<V>)
            } else {
                None
            },
            string_primitive_value_callback: None,
            reserved: [ptr::null(); 11],
        };
        let mut walk = Walk {
            visitor,
            panicked: false,
        };
        let env = self.raw();
        // SAFETY: env is the agent's live jvmtiEnv; callbacks and user_data
        // outlive the call (the VM uses them only until it returns); the
        // callbacks interpret user_data as the `Walk<V>` passed here.
        let code = unsafe {
            match (**env).FollowReferences {
                Some(f) => f(
                    env,
                    0,
                    ptr::null_mut(),
                    ptr::null_mut(),
                    &callbacks,
                    &mut walk as *mut Walk<'_, V> as *const c_void,
                ),
                None => error::NOT_AVAILABLE,
            }
        };
        if walk.panicked {
            return Err(super::JvmtiError {
                code: error::INTERNAL,
                function: "FollowReferences (visitor panicked)",
            });
        }
        if code != error::NONE {
            return Err(super::JvmtiError {
                code,
                function: "FollowReferences",
            });
        }
        Ok(())
    }

    /// Call `visit` with the tag of every tagged object in the heap
    /// (IterateThroughHeap with the untagged filter: one linear pass over
    /// the heap, at a safepoint). Unreachable objects the last GC left are
    /// visited too, so callers collect garbage first. `visit` runs on the
    /// VM's thread with the world stopped: it may not call JNI or JVMTI,
    /// and what it needs should be allocated beforehand.
    pub fn for_each_tagged_object<F: FnMut(i64)>(&self, visit: &mut F) -> JResult<()> {
        struct Iteration<'f, F> {
            visit: &'f mut F,
            panicked: bool,
        }
        unsafe extern "C" fn on_object<F: FnMut(i64)>(
            _class_tag: jlong,
            _size: jlong,
            tag_ptr: *mut jlong,
            _length: jint,
            user_data: *mut c_void,
        ) -> jint {
            // SAFETY: user_data is the `Iteration` passed below; the VM calls
            // back only during that call, on one thread.
            let it = unsafe { &mut *(user_data as *mut Iteration<'_, F>) };
            if it.panicked || tag_ptr.is_null() {
                return if it.panicked { JVMTI_VISIT_ABORT } else { 0 };
            }
            // SAFETY: the VM passes a valid tag pointer for the object.
            let tag = unsafe { *tag_ptr };
            match catch_unwind(AssertUnwindSafe(|| (it.visit)(tag))) {
                Ok(()) => 0,
                Err(_) => {
                    it.panicked = true;
                    JVMTI_VISIT_ABORT
                }
            }
        }
        let callbacks = jvmtiHeapCallbacks {
            heap_iteration_callback: Some(on_object::<F>),
            heap_reference_callback: None,
            primitive_field_callback: None,
            array_primitive_value_callback: None,
            string_primitive_value_callback: None,
            reserved: [ptr::null(); 11],
        };
        let mut it = Iteration {
            visit,
            panicked: false,
        };
        let env = self.raw();
        // SAFETY: env is the agent's live jvmtiEnv; callbacks and user_data
        // outlive the call; the callback reads user_data as the
        // `Iteration<F>` passed here.
        let code = unsafe {
            match (**env).IterateThroughHeap {
                Some(f) => f(
                    env,
                    JVMTI_HEAP_FILTER_UNTAGGED,
                    ptr::null_mut(),
                    &callbacks,
                    &mut it as *mut Iteration<'_, F> as *const c_void,
                ),
                None => error::NOT_AVAILABLE,
            }
        };
        if it.panicked {
            return Err(super::JvmtiError {
                code: error::INTERNAL,
                function: "IterateThroughHeap (visitor panicked)",
            });
        }
        if code != error::NONE {
            return Err(super::JvmtiError {
                code,
                function: "IterateThroughHeap",
            });
        }
        Ok(())
    }

    /// The objects that carry one of `tags`, as local references of the
    /// calling thread, with their tags (JVMTI GetObjectsWithTags).
    pub fn objects_with_tags<'a>(
        &self,
        jni: Jni<'a>,
        tags: &[i64],
    ) -> JResult<Vec<(Local<'a>, i64)>> {
        let env = self.raw();
        let mut count: jint = 0;
        let mut objs: *mut jobject = ptr::null_mut();
        let mut found: *mut jlong = ptr::null_mut();
        let n = jint::try_from(tags.len()).map_err(|_| super::JvmtiError {
            code: error::ILLEGAL_ARGUMENT,
            function: "GetObjectsWithTags",
        })?;
        // SAFETY: live env; `tags` holds `n` jlongs for the call; the
        // out-pointers are valid locals.
        let code = unsafe {
            match (**env).GetObjectsWithTags {
                Some(f) => f(env, n, tags.as_ptr(), &mut count, &mut objs, &mut found),
                None => error::NOT_AVAILABLE,
            }
        };
        if code != error::NONE {
            return Err(super::JvmtiError {
                code,
                function: "GetObjectsWithTags",
            });
        }
        // SAFETY: on success both arrays are JVMTI allocations of `count`
        // elements that we now own (freed by JvmtiArray's Drop), the first
        // holding new local references of this thread.
        let (objs, found) = unsafe {
            (
                JvmtiArray::from_raw(env, objs, count),
                JvmtiArray::from_raw(env, found, count),
            )
        };
        Ok(objs
            .iter()
            .zip(found.iter())
            // SAFETY: each is a local reference handed over to us, owned once.
            .filter_map(|(&o, &t)| unsafe { jni.own(o) }.map(|l| (l, t)))
            .collect())
    }

    /// Fields declared by a class, in class-file order. Fails with
    /// JVMTI_ERROR_CLASS_NOT_PREPARED for classes not yet prepared.
    pub fn class_fields(&self, klass: Obj<'_>) -> JResult<Vec<FieldInfo>> {
        let env = self.raw();
        let klass = klass.raw();
        let mut count: jint = 0;
        let mut fields: *mut jfieldID = ptr::null_mut();
        // SAFETY: live env; out-pointers are valid locals.
        let code = unsafe {
            match (**env).GetClassFields {
                Some(f) => f(env, klass, &mut count, &mut fields),
                None => error::NOT_AVAILABLE,
            }
        };
        if code != error::NONE {
            return Err(super::JvmtiError {
                code,
                function: "GetClassFields",
            });
        }
        // SAFETY: on success, `count` field IDs in a JVMTI buffer we now own.
        let ids = unsafe { JvmtiArray::from_raw(env, fields, count) };
        let mut out = Vec::with_capacity(ids.len());
        for &fid in ids.iter() {
            let mut name: *mut c_char = ptr::null_mut();
            let mut sig: *mut c_char = ptr::null_mut();
            let mut mods: jint = 0;
            // SAFETY: fid is a field of klass (just returned by the VM);
            // out-pointers are valid locals; the strings are JVMTI
            // allocations taken over by take_string.
            let (c1, c2, name, sig) = unsafe {
                let c1 = match (**env).GetFieldName {
                    Some(f) => f(env, klass, fid, &mut name, &mut sig, ptr::null_mut()),
                    None => error::NOT_AVAILABLE,
                };
                let c2 = match (**env).GetFieldModifiers {
                    Some(f) => f(env, klass, fid, &mut mods),
                    None => error::NOT_AVAILABLE,
                };
                (c1, c2, take_string(env, name), take_string(env, sig))
            };
            if c1 != error::NONE {
                return Err(super::JvmtiError {
                    code: c1,
                    function: "GetFieldName",
                });
            }
            if c2 != error::NONE {
                return Err(super::JvmtiError {
                    code: c2,
                    function: "GetFieldModifiers",
                });
            }
            out.push(FieldInfo {
                name: name.unwrap_or_default(),
                signature: sig.unwrap_or_default(),
                is_static: mods & ACC_STATIC != 0,
            });
        }
        Ok(out)
    }

    /// Direct superinterfaces of a class or interface.
    pub fn implemented_interfaces<'a>(&self, jni: Jni<'a>, klass: Obj<'_>) -> JResult<Locals<'a>> {
        let env = self.raw();
        let klass = klass.raw();
        let mut count: jint = 0;
        let mut list: *mut jclass = ptr::null_mut();
        // SAFETY: live env; valid out-pointers.
        let code = unsafe {
            match (**env).GetImplementedInterfaces {
                Some(f) => f(env, klass, &mut count, &mut list),
                None => error::NOT_AVAILABLE,
            }
        };
        if code != error::NONE {
            return Err(super::JvmtiError {
                code,
                function: "GetImplementedInterfaces",
            });
        }
        // SAFETY: `count` local refs of this thread in a JVMTI buffer we
        // now own.
        Ok(unsafe { Locals::new(JvmtiArray::from_raw(env, list, count), jni) })
    }
}

impl Jvmti {
    pub fn is_interface(&self, klass: Obj<'_>) -> JResult<bool> {
        let env = self.raw();
        let klass = klass.raw();
        let mut b: jboolean = 0;
        // SAFETY: live env; valid out-pointer.
        let code = unsafe {
            match (**env).IsInterface {
                Some(f) => f(env, klass, &mut b),
                None => error::NOT_AVAILABLE,
            }
        };
        if code != error::NONE {
            return Err(super::JvmtiError {
                code,
                function: "IsInterface",
            });
        }
        Ok(b != 0)
    }
}
