//! Lifetime-bound views of the JNI environment and of JNI references, so
//! that no raw `JNIEnv` or `jobject` leaves this layer.
//!
//! * [`Jni`] is the current thread's JNI environment for the duration of a
//!   callback, a native method or an agent thread's run (`'a`); it is
//!   neither `Send` nor `Sync`, as the JNI specification requires.
//! * [`Obj`] borrows a reference someone else owns (an event's argument, a
//!   [`Local`], a global reference) for `'a`; it never deletes anything.
//! * [`Local`] owns a local reference and deletes it when dropped, and
//!   [`Locals`] the local references a JVMTI call returned in a buffer
//!   (GetLoadedClasses, GetAllThreads, ...), all deleted with the buffer.
//! * [`MethodId`] is a method ID: not a reference (it stays valid until its
//!   class is unloaded) and usable from any thread.

use super::memory::JvmtiArray;
use super::sys::{jmethodID, jobject, jvmtiFrameInfo, JNIEnv};
/// Owned JNI references (the `jni` crate's): a global reference lives
/// until dropped; a weak one does not keep its object.
pub use jni::objects::{GlobalRef, WeakRef};
use std::marker::PhantomData;

/// The JNI environment of the current thread, valid for `'a`.
#[derive(Clone, Copy)]
pub struct Jni<'a> {
    raw: *mut JNIEnv,
    _scope: PhantomData<&'a ()>,
}

impl<'a> Jni<'a> {
    /// # Safety
    /// `raw` must be null or the current thread's JNIEnv, valid for `'a`.
    pub(crate) unsafe fn from_raw(raw: *mut JNIEnv) -> Option<Jni<'a>> {
        (!raw.is_null()).then_some(Jni {
            raw,
            _scope: PhantomData,
        })
    }

    pub(crate) fn raw(self) -> *mut JNIEnv {
        self.raw
    }

    /// The `jni` crate's view of this environment, for the calls in
    /// `jvmti::jni` and `jvmti::tracker_natives`.
    pub(crate) fn env(self) -> jni::JNIEnv<'a> {
        // SAFETY: raw is this thread's live JNIEnv for 'a (from_raw's
        // contract) and non-null.
        unsafe { jni::JNIEnv::from_raw(self.raw) }.expect("non-null JNIEnv")
    }

    /// Take ownership of a local reference the VM returned to this thread
    /// (None for null).
    ///
    /// # Safety
    /// `raw` must be null or a local reference of this thread that nobody
    /// else deletes.
    pub(crate) unsafe fn own(self, raw: jobject) -> Option<Local<'a>> {
        (!raw.is_null()).then_some(Local { raw, jni: self })
    }
}

/// A JNI reference owned by someone else, valid for `'a`. Null is allowed
/// (a "no object" argument, the current thread in JVMTI calls).
/// Transparent over `jobject`, so a slice of them is a JVMTI list.
#[repr(transparent)]
#[derive(Clone, Copy, Debug)]
pub struct Obj<'a> {
    raw: jobject,
    _scope: PhantomData<&'a ()>,
}

impl<'a> Obj<'a> {
    /// # Safety
    /// `raw` must be null or a live reference for `'a` on this thread (or a
    /// global reference living at least as long).
    pub(crate) unsafe fn from_raw(raw: jobject) -> Obj<'a> {
        Obj {
            raw,
            _scope: PhantomData,
        }
    }

    /// The null reference (JVMTI: "the current thread").
    pub fn null() -> Obj<'static> {
        Obj {
            raw: std::ptr::null_mut(),
            _scope: PhantomData,
        }
    }

    pub fn is_null(self) -> bool {
        self.raw.is_null()
    }

    pub(crate) fn raw(self) -> jobject {
        self.raw
    }
}

/// The raw references of `objs`, for a JVMTI call taking a list.
pub(crate) fn raw_list<'s>(objs: &'s [Obj<'_>]) -> &'s [jobject] {
    // SAFETY: Obj is repr(transparent) over jobject (its other field is a
    // zero-sized marker), so the slices have the same layout.
    unsafe { std::slice::from_raw_parts(objs.as_ptr() as *const jobject, objs.len()) }
}

/// A local reference of the current thread, deleted when dropped.
pub struct Local<'a> {
    raw: jobject,
    jni: Jni<'a>,
}

impl<'a> Local<'a> {
    pub fn obj(&self) -> Obj<'_> {
        // SAFETY: the reference lives until self is dropped, which the
        // borrow prevents while the Obj exists.
        unsafe { Obj::from_raw(self.raw) }
    }

    pub(crate) fn raw(&self) -> jobject {
        self.raw
    }
}

impl Drop for Local<'_> {
    fn drop(&mut self) {
        delete_local(self.jni, self.raw);
    }
}

fn delete_local(jni: Jni<'_>, raw: jobject) {
    let env = jni.raw();
    // SAFETY: env is this thread's live JNIEnv; raw is a local reference
    // of this thread owned by the caller, deleted exactly once.
    unsafe {
        if let Some(f) = (**env).DeleteLocalRef {
            f(env, raw);
        }
    }
}

/// Local references handed over by the VM in one JVMTI buffer; each is
/// deleted, and the buffer freed, when this is dropped.
pub struct Locals<'a> {
    refs: JvmtiArray<jobject>,
    jni: Jni<'a>,
}

impl<'a> Locals<'a> {
    /// # Safety
    /// Every element of `refs` must be a local reference of the current
    /// thread owned by nobody else.
    pub(crate) unsafe fn new(refs: JvmtiArray<jobject>, jni: Jni<'a>) -> Self {
        Locals { refs, jni }
    }

    pub fn len(&self) -> usize {
        self.refs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.refs.is_empty()
    }

    pub fn get(&self, i: usize) -> Option<Obj<'_>> {
        // SAFETY: the reference lives as long as self (see Drop).
        self.refs.get(i).map(|&r| unsafe { Obj::from_raw(r) })
    }

    pub fn iter(&self) -> impl Iterator<Item = Obj<'_>> + '_ {
        // SAFETY: as in `get`.
        self.refs.iter().map(|&r| unsafe { Obj::from_raw(r) })
    }
}

impl Drop for Locals<'_> {
    fn drop(&mut self) {
        for &r in self.refs.iter() {
            if !r.is_null() {
                delete_local(self.jni, r);
            }
        }
    }
}

/// A JNI method ID. Not a reference: it stays valid until its class is
/// unloaded and may be kept and compared on any thread.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct MethodId(usize);

impl MethodId {
    pub(crate) fn from_raw(m: jmethodID) -> MethodId {
        MethodId(m as usize)
    }

    pub(crate) fn raw(self) -> jmethodID {
        self.0 as jmethodID
    }

    /// The ID as a number (table keys).
    pub fn as_usize(self) -> usize {
        self.0
    }

    /// The ID back from a number.
    ///
    /// # Safety
    /// `key` must come from [`as_usize`](Self::as_usize) of a method ID
    /// (a made-up number would reach the VM as a method ID).
    pub unsafe fn from_key(key: usize) -> MethodId {
        MethodId(key)
    }

    pub fn is_null(self) -> bool {
        self.0 == 0
    }
}

/// One stack frame: method and byte-code index (`jvmtiFrameInfo` with a
/// [`MethodId`]; the same layout, so stack queries fill these directly).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Frame {
    pub method: MethodId,
    pub location: i64,
}

// The VM writes jvmtiFrameInfo records where Frames are expected.
const _: () = {
    assert!(std::mem::size_of::<Frame>() == std::mem::size_of::<jvmtiFrameInfo>());
    assert!(std::mem::align_of::<Frame>() == std::mem::align_of::<jvmtiFrameInfo>());
    assert!(
        std::mem::offset_of!(Frame, location) == std::mem::offset_of!(jvmtiFrameInfo, location)
    );
};

/// View frames the VM filled as [`Frame`]s.
pub(crate) fn frames(raw: &[jvmtiFrameInfo]) -> &[Frame] {
    // SAFETY: Frame is repr(C) with the same size, alignment and field
    // offsets as jvmtiFrameInfo (checked above); MethodId is a transparent
    // usize, which holds any jmethodID bit pattern.
    unsafe { std::slice::from_raw_parts(raw.as_ptr() as *const Frame, raw.len()) }
}

impl<'a> Obj<'a> {
    /// A global reference, borrowed for as long as it lives.
    pub fn of_global(g: &'a jni::objects::GlobalRef) -> Obj<'a> {
        // SAFETY: the global reference lives at least as long as the borrow.
        unsafe { Obj::from_raw(g.as_obj().as_raw()) }
    }

    /// A weak global reference, borrowed for as long as it lives (the
    /// object may be gone: compare it with `jni::is_same_object`).
    pub fn of_weak(w: &'a jni::objects::WeakRef) -> Obj<'a> {
        // SAFETY: the weak reference lives at least as long as the borrow;
        // JNI accepts weak references wherever a reference is expected.
        unsafe { Obj::from_raw(w.as_raw()) }
    }
}
