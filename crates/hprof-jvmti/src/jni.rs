//! The handful of JNI operations the agent performs, through the `jni`
//! crate, on the lifetime-bound types of `refs`. Intermediate references
//! live in a local frame popped before returning; results the caller keeps
//! come back as [`Local`]s (deleted when dropped) or global references.

use super::refs::{Jni, Local, MethodId, Obj};
use super::sys::JNIEnv;
use jni::objects::{GlobalRef, JClass, JObject, JValue, WeakRef};

/// Drop any Java exception our JNI call raised: an agent must never leave
/// one pending in the application's thread.
fn clear(env: &mut jni::JNIEnv<'_>) {
    if env.exception_check().unwrap_or(false) {
        let _ = env.exception_clear();
    }
}

/// A borrowed reference as the `jni` crate's type. The crate's `JObject`
/// has no destructor: nothing is deleted when it goes out of scope.
fn jobj<'a>(o: Obj<'a>) -> JObject<'a> {
    // SAFETY: o is a live reference for 'a (Obj's contract).
    unsafe { JObject::from_raw(o.raw()) }
}

/// Run `f` in a local frame of `capacity` references and clear any
/// exception it raised; `f`'s result may hold no local reference (they are
/// all gone when the frame pops), only plain values or global references.
fn in_frame<R>(
    jni: Jni<'_>,
    capacity: i32,
    f: impl FnOnce(&mut jni::JNIEnv<'_>) -> Option<R>,
) -> Option<R> {
    let mut env = jni.env();
    let r = env
        .with_local_frame(capacity, |env| -> jni::errors::Result<Option<R>> {
            Ok(f(env))
        })
        .ok()
        .flatten();
    clear(&mut env);
    r
}

/// A new, unstarted `java.lang.Thread` named `name`, for RunAgentThread.
pub fn new_thread_object<'a>(jni: Jni<'a>, name: &str) -> Option<Local<'a>> {
    let mut env = jni.env();
    let result = (|| {
        let jname = env.new_string(name).ok()?;
        let t = env.new_object(
            "java/lang/Thread",
            "(Ljava/lang/String;)V",
            &[JValue::Object(&jname)],
        );
        let _ = env.delete_local_ref(jname);
        t.ok()
    })();
    clear(&mut env);
    // SAFETY: a new local reference of this thread, owned by nobody else.
    result.and_then(|t| unsafe { jni.own(t.into_raw()) })
}

/// `Runtime.getRuntime().maxMemory()`, which picks the binary header version.
pub fn runtime_max_memory(jni: Jni<'_>) -> Option<i64> {
    in_frame(jni, 4, |env| {
        let rt = env
            .call_static_method(
                "java/lang/Runtime",
                "getRuntime",
                "()Ljava/lang/Runtime;",
                &[],
            )
            .ok()?
            .l()
            .ok()?;
        env.call_method(&rt, "maxMemory", "()J", &[]).ok()?.j().ok()
    })
}

/// `System.exit(status)` (socket EXIT command). Returns only if the call
/// could not be made; otherwise VM death runs on this thread and the VM halts.
pub fn system_exit(jni: Jni<'_>, status: i32) {
    let mut env = jni.env();
    let _ = env.call_static_method("java/lang/System", "exit", "(I)V", &[JValue::Int(status)]);
    clear(&mut env);
}

/// A global reference to `obj`, usable on any thread until dropped.
pub fn new_global_ref(jni: Jni<'_>, obj: Obj<'_>) -> Option<GlobalRef> {
    let env = jni.env();
    env.new_global_ref(jobj(obj)).ok()
}

/// A weak global reference to `obj` (kept by the caller for as long as it
/// wants to recognise the object with [`is_same_object`]).
pub fn new_weak_ref(jni: Jni<'_>, obj: Obj<'_>) -> Option<WeakRef> {
    let env = jni.env();
    env.new_weak_ref(jobj(obj)).ok().flatten()
}

/// Run `f` inside a JNI local frame so the local references it creates
/// are released in one go even where it does not drop them itself.
pub fn with_local_frame<R>(jni: Jni<'_>, capacity: i32, f: impl FnOnce() -> R) -> R {
    let env = jni.env();
    let pushed = env.push_local_frame(capacity).is_ok();
    let r = f();
    if pushed {
        // SAFETY: exactly one frame was pushed above on this thread, and
        // no reference created inside it is used after `f` returned.
        let _ = unsafe { env.pop_local_frame(&JObject::null()) };
    }
    r
}

/// The class of `obj` (JNI GetObjectClass).
pub fn object_class<'a>(jni: Jni<'a>, obj: Obj<'_>) -> Option<Local<'a>> {
    if obj.is_null() {
        return None;
    }
    let mut env = jni.env();
    let k = env.get_object_class(jobj(obj)).ok();
    clear(&mut env);
    // SAFETY: a new local reference of this thread.
    k.and_then(|k| unsafe { jni.own(k.into_raw()) })
}

/// The superclass of `klass` (None for java.lang.Object, interfaces and
/// primitive types).
pub fn superclass<'a>(jni: Jni<'a>, klass: Obj<'_>) -> Option<Local<'a>> {
    let mut env = jni.env();
    // SAFETY: klass is a live class reference for the call (Obj's contract).
    let k = unsafe { JClass::from_raw(klass.raw()) };
    let r = env.get_superclass(&k).ok().flatten();
    clear(&mut env);
    // SAFETY: a new local reference of this thread.
    r.and_then(|s| unsafe { jni.own(s.into_raw()) })
}

/// Define a class from `bytes` in the bootstrap class loader (JNI
/// DefineClass with a null loader); a global reference to it, kept for the
/// life of the process. Any pending exception (e.g. the class exists
/// already) is described, cleared and reported as `Err`.
pub fn define_boot_class(jni: Jni<'_>, name: &str, bytes: &[u8]) -> Result<GlobalRef, String> {
    let mut env = jni.env();
    let r = env
        .define_class(name, &JObject::null(), bytes)
        .and_then(|c| {
            let g = env.new_global_ref(&c);
            let _ = env.delete_local_ref(c);
            g
        });
    if env.exception_check().unwrap_or(false) {
        let _ = env.exception_describe();
    }
    clear(&mut env);
    r.map_err(|e| e.to_string())
}

/// JNI IsSameObject.
pub fn is_same_object(jni: Jni<'_>, a: Obj<'_>, b: Obj<'_>) -> bool {
    let env = jni.env();
    env.is_same_object(jobj(a), jobj(b)).unwrap_or(false)
}

/// Call a static void method of `class` (any access) with int/object
/// arguments; any exception it throws is cleared and reported as `Err`.
pub fn call_static_void(
    jni: Jni<'_>,
    class: Obj<'_>,
    name: &str,
    sig: &str,
    args: &[JValue<'_, '_>],
) -> Result<(), String> {
    let mut env = jni.env();
    // SAFETY: a live class reference for the call (Obj's contract).
    let class = unsafe { JClass::from_raw(class.raw()) };
    let r = env.call_static_method(&class, name, sig, args).map(|_| ());
    let threw = env.exception_check().unwrap_or(false);
    clear(&mut env);
    match r {
        Ok(()) if !threw => Ok(()),
        Ok(()) => Err("exception".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// Link `klass` without initializing it: `Class.getDeclaredFields()` links
/// the class before it answers (HotSpot's JVM_GetClassDeclaredFields) and
/// runs none of the class's code. The array it returns is dropped; any
/// exception (a linkage error) is cleared. Returns whether it succeeded.
pub fn link_class(jni: Jni<'_>, klass: Obj<'_>) -> bool {
    in_frame(jni, 4, |env| {
        env.call_method(
            jobj(klass),
            "getDeclaredFields",
            "()[Ljava/lang/reflect/Field;",
            &[],
        )
        .ok()?;
        (!env.exception_check().unwrap_or(true)).then_some(())
    })
    .is_some()
}

/// The method ID of `class.name(sig)` (JNI FindClass + GetMethodID); None
/// if either fails (the exception is cleared).
pub fn method_id(jni: Jni<'_>, class: &str, name: &str, sig: &str) -> Option<MethodId> {
    in_frame(jni, 4, |env| {
        let c = env.find_class(class).ok()?;
        let m = env.get_method_id(&c, name, sig).ok()?;
        Some(MethodId::from_raw(m.into_raw() as super::sys::jmethodID))
    })
}

/// Set `key` to `value` among the JVM's agent properties
/// (`jdk.internal.vm.VMSupport.getAgentProperties()`, JDK 9 and later): the
/// JDK's place for what an agent publishes to attach clients, which read
/// them with the attach command `agentProperties`; the program does not
/// see them. JNI calls are not subject to module access checks. False when
/// the VM has no such properties (the exception is cleared).
pub fn set_agent_property(jni: Jni<'_>, key: &str, value: &str) -> bool {
    in_frame(jni, 8, |env| {
        let props = env
            .call_static_method(
                "jdk/internal/vm/VMSupport",
                "getAgentProperties",
                "()Ljava/util/Properties;",
                &[],
            )
            .ok()?
            .l()
            .ok()?;
        let k = env.new_string(key).ok()?;
        let v = env.new_string(value).ok()?;
        env.call_method(
            &props,
            "setProperty",
            "(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/Object;",
            &[JValue::Object(&k), JValue::Object(&v)],
        )
        .ok()?;
        (!env.exception_check().unwrap_or(true)).then_some(())
    })
    .is_some()
}

/// Run `f` with the current thread's JNI environment, if the VM knows the
/// thread (threads that get no JNIEnv with their event: DataDumpRequest).
pub fn with_current_jni<R>(f: impl FnOnce(Option<Jni<'_>>) -> R) -> R {
    let raw = current_env();
    // SAFETY: current_env returns this thread's JNIEnv (or null); the
    // borrow given to `f` cannot outlive this call.
    f(unsafe { Jni::from_raw(raw) })
}

/// Allocate a `long[len]` and drop it at once (the allocation profile
/// uses this to move a thread onto the VM's sampled allocation path).
pub fn scratch_array(jni: Jni<'_>, len: i32) -> bool {
    let mut env = jni.env();
    let ok = match env.new_long_array(len) {
        Ok(a) => {
            let _ = env.delete_local_ref(a);
            true
        }
        Err(_) => false,
    };
    clear(&mut env);
    ok
}

/// The process's JavaVM, stored at Agent_OnLoad so threads that receive no
/// JNIEnv with their event (DataDumpRequest) can get theirs.
static VM: std::sync::atomic::AtomicPtr<super::sys::JavaVM> =
    std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());

pub fn set_vm(vm: *mut super::sys::JavaVM) {
    VM.store(vm, std::sync::atomic::Ordering::Release);
}

/// The JavaVM stored at Agent_OnLoad (null before).
pub(crate) fn java_vm() -> *mut super::sys::JavaVM {
    VM.load(std::sync::atomic::Ordering::Acquire)
}

/// The JNIEnv of the current thread if the VM knows it (null otherwise);
/// see `refs::with_current_jni`.
pub(crate) fn current_env() -> *mut JNIEnv {
    let vm = VM.load(std::sync::atomic::Ordering::Acquire);
    if vm.is_null() {
        return std::ptr::null_mut();
    }
    let mut env: *mut std::ffi::c_void = std::ptr::null_mut();
    // SAFETY: vm is the live JavaVM handed to Agent_OnLoad (valid for the
    // process); GetEnv only writes the env pointer for the calling thread.
    let rc = unsafe {
        match (**vm).GetEnv {
            Some(get_env) => get_env(vm, &mut env, jni::sys::JNI_VERSION_1_6),
            None => -1,
        }
    };
    if rc == 0 {
        env as *mut JNIEnv
    } else {
        std::ptr::null_mut()
    }
}

/// Ask HotSpot's own heap dumper to write the heap to `path`, through
/// `com.sun.management.HotSpotDiagnosticMXBean.dumpHeap(path, live)` (what
/// `jcmd GC.heap_dump` and `jmap -dump` reach too): it runs the dump as a
/// VM operation at a safepoint and returns when the file is complete. The
/// file must not exist (the VM creates it with O_CREAT|O_EXCL, mode 0600)
/// and its name must end in `.hprof`. `live` makes it collect garbage
/// first and dump reachable objects only. Works from any thread the VM
/// knows (an agent thread, the thread of a DataDumpRequest or of VM
/// death). `Err` carries the Java exception, e.g. a JVM without the
/// `jdk.management` module, or an IOException from the dumper (disk full).
///
/// The MXBean's own class is called, straight to its native method
/// (docs/heap_dump.md, "The VM's dumper"): `ManagementFactory.getPlatformMXBean`
/// loads every platform MBean provider and their MXBeans first, and on JDK
/// 11-21 the MXBean's `dumpHeap` and the provider that loads its library
/// run lambdas, whose first use in a JVM starts the lambda machinery:
/// together 35-75 ms of the first dump of a JVM (JDK 17, measured) that
/// `jcmd GC.heap_dump` does not pay, and objects that stay in the
/// program's heap. Where the classes this needs are missing (JDK 11 has
/// no `BootLoader.loadLibrary`) the MXBean is looked up instead.
pub fn hotspot_dump_heap(jni: Jni<'_>, path: &str, live: bool) -> Result<(), String> {
    // Set once the dumper is about to be called.
    let mut called = false;
    let made = java_call(jni, |env| {
        let class = env.find_class(DIAGNOSTIC_IMPL)?;
        // The library of its native method, into the boot loader's, which
        // defines the class (jdk.management), as the module's MBean
        // provider loads it; once loaded, loading it again does nothing.
        let lib = env.new_string(DIAGNOSTIC_LIBRARY)?;
        env.call_static_method(
            "jdk/internal/loader/BootLoader",
            "loadLibrary",
            "(Ljava/lang/String;)V",
            &[JValue::Object(&lib)],
        )?;
        // Present in this JDK (a missing one is not a failed dump).
        env.get_method_id(&class, "dumpHeap0", DUMP_HEAP_SIG)?;
        let bean = env.new_object(&class, "()V", &[])?;
        let jpath = env.new_string(path)?;
        called = true;
        env.call_method(
            &bean,
            "dumpHeap0",
            DUMP_HEAP_SIG,
            &[JValue::Object(&jpath), JValue::Bool(u8::from(live))],
        )?;
        Ok(())
    });
    match made {
        // A native method that did not link never ran: no dump was made.
        Err(e) if !called || e.starts_with("java.lang.UnsatisfiedLinkError") => {
            dump_heap_through_mxbean(jni, path, live)
        }
        r => r,
    }
}

/// The class behind the `HotSpotDiagnosticMXBean` (jdk.management, JDK
/// 9-25), and the library of its native methods.
const DIAGNOSTIC_IMPL: &str = "com/sun/management/internal/HotSpotDiagnostic";
const DIAGNOSTIC_LIBRARY: &str = "management_ext";
const DUMP_HEAP_SIG: &str = "(Ljava/lang/String;Z)V";

/// `hotspot_dump_heap` through the platform MXBean, for a JVM whose
/// jdk.management does not have the classes it calls.
fn dump_heap_through_mxbean(jni: Jni<'_>, path: &str, live: bool) -> Result<(), String> {
    java_call(jni, |env| {
        let bean_class = env.find_class("com/sun/management/HotSpotDiagnosticMXBean")?;
        let bean = env
            .call_static_method(
                "java/lang/management/ManagementFactory",
                "getPlatformMXBean",
                "(Ljava/lang/Class;)Ljava/lang/management/PlatformManagedObject;",
                &[JValue::Object(&bean_class)],
            )?
            .l()?;
        if bean.is_null() {
            return Err(jni::errors::Error::NullPtr("HotSpotDiagnosticMXBean"));
        }
        let jpath = env.new_string(path)?;
        env.call_method(
            &bean,
            "dumpHeap",
            "(Ljava/lang/String;Z)V",
            &[JValue::Object(&jpath), JValue::Bool(u8::from(live))],
        )?;
        Ok(())
    })
}

/// Run `call` in a local frame of 16 references; `Err` carries the Java
/// exception it raised (its `toString`), or the JNI failure. The exception
/// is cleared: the program must never see an exception our call raised.
fn java_call<R>(
    jni: Jni<'_>,
    call: impl FnOnce(&mut jni::JNIEnv<'_>) -> jni::errors::Result<R>,
) -> Result<R, String> {
    let mut env = jni.env();
    let r = env.with_local_frame(16, |env| -> jni::errors::Result<Result<R, String>> {
        let r = call(env);
        if !env.exception_check().unwrap_or(false) {
            return Ok(r.map_err(|e| e.to_string()));
        }
        let thrown = env.exception_occurred()?;
        env.exception_clear()?;
        let text = env
            .call_method(&thrown, "toString", "()Ljava/lang/String;", &[])
            .and_then(|v| v.l())
            .and_then(|s| env.get_string(&s.into()).map(String::from))
            .unwrap_or_else(|_| "an exception".into());
        clear(env);
        Ok(Err(text))
    });
    clear(&mut env);
    r.unwrap_or_else(|e| Err(e.to_string()))
}

/// What a thread dump says of a thread that the program cannot fake,
/// read from fields of `java.lang.Thread` itself in one go.
#[derive(Clone, Copy, Debug, Default)]
pub struct ThreadKeys {
    /// The Java thread ID (`tid`: what `getId()` returns and the VM prints
    /// after `#`). From the field, since a subclass may override `getId()`
    /// (before JDK 19 it is not final) or declare a field of the same name.
    pub id: Option<i64>,
    /// The address of the VM's own structure for the thread (`eetop`,
    /// HotSpot's `JavaThread*`), printed as `tid=0x...`: unlike the name,
    /// the program cannot change it. `None` for a thread not started or
    /// ended (0), or a VM without the field.
    pub address: Option<u64>,
}

pub fn thread_keys(jni: Jni<'_>, thread: Obj<'_>) -> ThreadKeys {
    if thread.is_null() {
        return ThreadKeys::default();
    }
    in_frame(jni, 4, |env| {
        let class = env.find_class("java/lang/Thread").ok()?;
        let mut long = |name: &str| -> Option<i64> {
            let field = env.get_field_id(&class, name, "J").ok()?;
            env.get_field_unchecked(
                jobj(thread),
                field,
                jni::signature::ReturnType::Primitive(jni::signature::Primitive::Long),
            )
            .ok()?
            .j()
            .ok()
        };
        Some(ThreadKeys {
            id: long("tid"),
            address: long("eetop").map(|v| v as u64).filter(|&v| v != 0),
        })
    })
    .unwrap_or_default()
}

/// The VM's thread dump as `jcmd PID Thread.print` prints it, asked
/// in-process through the platform MBean server's diagnostic command
/// MBean (`com.sun.management:type=DiagnosticCommand`, operation
/// `threadPrint`, in module jdk.management): one header line per thread
/// with its name, Java ID and native (Linux) thread ID. `Err` carries the
/// Java exception (a runtime without jdk.management, a security manager
/// that refuses) or the reason.
pub fn thread_dump(jni: Jni<'_>) -> Result<String, String> {
    java_call(jni, |env| {
        let server = env
            .call_static_method(
                "java/lang/management/ManagementFactory",
                "getPlatformMBeanServer",
                "()Ljavax/management/MBeanServer;",
                &[],
            )?
            .l()?;
        if server.is_null() {
            return Err(jni::errors::Error::NullPtr("MBeanServer"));
        }
        let object_name = env.new_string("com.sun.management:type=DiagnosticCommand")?;
        let name = env.new_object(
            "javax/management/ObjectName",
            "(Ljava/lang/String;)V",
            &[JValue::Object(&object_name)],
        )?;
        let op = env.new_string("threadPrint")?;
        let string_class = env.find_class("java/lang/String")?;
        let no_options = env.new_object_array(0, &string_class, JObject::null())?;
        let params = env.new_object_array(1, "java/lang/Object", &no_options)?;
        let sig_text = env.new_string("[Ljava.lang.String;")?;
        let signature = env.new_object_array(1, &string_class, &sig_text)?;
        let out = env
            .call_method(
                &server,
                "invoke",
                "(Ljavax/management/ObjectName;Ljava/lang/String;[Ljava/lang/Object;[Ljava/lang/String;)Ljava/lang/Object;",
                &[
                    JValue::Object(&name),
                    JValue::Object(&op),
                    JValue::Object(&params),
                    JValue::Object(&signature),
                ],
            )?
            .l()?;
        if out.is_null() || !env.is_instance_of(&out, &string_class)? {
            return Err(jni::errors::Error::NullPtr("threadPrint's answer"));
        }
        let text: String = env.get_string(&out.into())?.into();
        Ok(text)
    })
}
