//! The library's exported entry points: Agent_OnLoad (also reached through
//! `-Xrunhprof_rs`, which HotSpot converts to an agent when the library has
//! no JVM_OnLoad), Agent_OnAttach and Agent_OnUnload.

use super::{events, Agent};
use crate::vm::{log, output, Context};
use crate::diag;
use crate::jvmti::sys::{cap, event, jint, jvmtiCapabilities, JavaVM};
use crate::jvmti::Jvmti;
use crate::options::{self, Options};
use crate::sink::{Sink, Writer};
use std::ffi::CStr;
use std::io::Write;
use std::os::raw::{c_char, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};

const JNI_OK: jint = 0;
const JNI_ERR: jint = -1;

/// # Safety
/// Called by the JVM with its JavaVM pointer and the option string.
#[no_mangle]
pub unsafe extern "system" fn Agent_OnLoad(
    vm: *mut JavaVM,
    options: *mut c_char,
    _reserved: *mut c_void,
) -> jint {
    let opts = if options.is_null() {
        String::new()
    } else {
        // SAFETY: the VM passes a NUL-terminated option string.
        unsafe { CStr::from_ptr(options) }
            .to_string_lossy()
            .into_owned()
    };
    match catch_unwind(AssertUnwindSafe(|| on_load(vm, &opts))) {
        Ok(rc) => rc,
        Err(_) => {
            diag::error("internal error during Agent_OnLoad; agent not loaded");
            JNI_ERR
        }
    }
}

/// Attaching to a running VM is not supported: the profiles depend on
/// events from VM start (thread and class tables, allocation tracking).
///
/// # Safety
/// Called by the JVM.
#[no_mangle]
pub unsafe extern "system" fn Agent_OnAttach(
    _vm: *mut JavaVM,
    _options: *mut c_char,
    _reserved: *mut c_void,
) -> jint {
    diag::error("hprof-rs cannot be attached to a running VM (not supported yet); start the JVM with -agentpath:");
    JNI_ERR
}

/// # Safety
/// Called by the JVM at unload; nothing is written here.
#[no_mangle]
pub unsafe extern "system" fn Agent_OnUnload(_vm: *mut JavaVM) {}

/// Runs when the process calls `exit()`. Normally VM death has written the
/// final report by then. A JVM whose heap is full when the program ends
/// (OutOfMemoryError thrown again while the launcher ends the main thread)
/// exits without VM death and without unloading agents; everything the
/// writer still buffered would be lost, the header included. So: say so,
/// and push out what was written (docs/options.md, "When the JVM ends
/// abnormally"). No JVMTI or JNI call is made here: the VM may be half gone.
extern "C" fn at_process_exit() {
    let _ = catch_unwind(|| {
        let Some(agent) = crate::agent::agent() else {
            return;
        };
        if agent.ctx.gate.is_closed() {
            return; // VM death ran
        }
        diag::error("the JVM is exiting without a VM death event (an OutOfMemoryError during shutdown, or exit from native code): the final report is not written; output written so far is kept");
        agent.ctx.out.flush_within(std::time::Duration::from_secs(2));
    });
}

static LOADED: AtomicBool = AtomicBool::new(false);

/// Option errors exit 1, or take the fatal path (exit 9 / abort) when
/// `errorexit=y` (`coredump=y`) was parsed before the bad option.
fn option_error(e: &options::OptionError) -> ! {
    diag::configure(e.errorexit, e.dump_core);
    diag::error(&e.to_string());
    std::process::exit(1)
}

/// Fail start-up the way the original did for set-up errors: message, exit 1.
#[track_caller]
fn startup_error(message: &str) -> ! {
    diag::error(message);
    std::process::exit(1)
}

fn on_load(vm: *mut JavaVM, cmdline: &str) -> jint {
    if LOADED.swap(true, Ordering::SeqCst) {
        diag::fatal("Cannot load this JVM TI agent twice, check your java command line for duplicate hprof options.");
    }
    if options::is_help_request(cmdline) {
        let mut out = std::io::stdout();
        let _ = out.write_all(options::help_text().as_bytes());
        let _ = out.flush();
        std::process::exit(0);
    }
    let combined = options::combine_with_env(
        cmdline,
        std::env::var("_JAVA_HPROF_OPTIONS").ok().as_deref(),
    );
    let opts = match options::parse(&combined) {
        Ok(o) => o,
        Err(e) => option_error(&e),
    };
    diag::configure(opts.errorexit, opts.dumps_core());

    // SAFETY: vm is the JavaVM the JVM handed to Agent_OnLoad.
    let jvmti = match unsafe { Jvmti::from_vm(vm) } {
        Ok(j) => j,
        Err(rc) => startup_error(&format!(
            "Unable to access JVMTI Version 1 (0x{:x}), is your JDK a 5.0 or newer version? JNIEnv's GetEnv() returned {rc}",
            crate::jvmti::sys::JVMTI_VERSION_1_2
        )),
    };
    crate::jvmti::jni::set_vm(vm);
    check_version(jvmti);
    let profiles = crate::profile::list(&opts);
    add_capabilities(jvmti, &opts, &profiles);

    let (sink, output_file) = open_output(&opts);
    let command_socket = sink.try_clone_socket();
    let format = output::new_format(&opts, true);
    let out = match Writer::spawn(sink, format) {
        Ok(w) => w,
        Err(e) => startup_error(&format!("cannot start the writer thread: {e}")),
    };
    // SAFETY: registers a plain extern "C" function with no arguments, as
    // atexit expects; it catches panics and only touches agent state.
    if unsafe { libc::atexit(at_process_exit) } != 0 {
        diag::error(
            "cannot register the exit handler; output may be lost if the JVM ends without VM death",
        );
    }
    let agent = super::install(Agent::new(
        Context::new(jvmti, opts, out),
        profiles,
        crate::net::NetState::new(command_socket),
        output_file,
    ));
    if let Err(e) = crate::jvmti::callbacks::install(jvmti, &events::Handler) {
        startup_error(&format!("cannot set JVMTI event callbacks: {e}"));
    }
    for ev in [event::VM_INIT, event::VM_DEATH] {
        if let Err(e) = jvmti.set_event_mode(true, ev) {
            startup_error(&format!("cannot enable JVMTI events: {e}"));
        }
    }
    for p in &agent.profiles {
        p.on_load(&agent.ctx);
    }
    if agent.ctx.opts.pause {
        log::pause_for_debugger();
    }
    log::log(&agent.ctx, "Agent_OnLoad done");
    JNI_OK
}

/// The original demanded JVMTI major version 1 and so fails on every JDK
/// since 9 (whose JVMTI major is the feature version). We need 1.2 or later.
fn check_version(jvmti: Jvmti) {
    let Ok(v) = jvmti.version() else { return };
    let major = (v >> 16) & 0x0FFF;
    let minor = (v >> 8) & 0xFF;
    let micro = v & 0xFF;
    if major < 1 || (major == 1 && minor < 2) {
        startup_error(&format!(
            "This hprof native library will not work with this VM's version of JVMTI ({major}.{minor}.{micro}), it needs JVMTI 1.2."
        ));
    }
}

fn add_capabilities(jvmti: Jvmti, opts: &Options, profiles: &[Box<dyn crate::profile::Profile>]) {
    let Ok(potential) = jvmti.potential_capabilities() else {
        startup_error("Unable to get potential JVMTI capabilities.");
    };
    let mut need = jvmtiCapabilities::default();
    for c in [
        cap::CAN_TAG_OBJECTS,
        cap::CAN_GENERATE_GARBAGE_COLLECTION_EVENTS,
    ] {
        need.set(c);
    }
    let _ = opts;
    // Nice to have: frames print <Unknown Source>/Unknown line without them.
    for c in [cap::CAN_GET_SOURCE_FILE_NAME, cap::CAN_GET_LINE_NUMBERS] {
        if potential.has(c) {
            need.set(c);
        }
    }
    for p in profiles {
        if let Err(e) = p.capabilities(&potential, &mut need) {
            startup_error(&e);
        }
    }
    if jvmti.add_capabilities(&need).is_err() {
        startup_error("Unable to get necessary JVMTI capabilities.");
    }
}

fn open_output(opts: &Options) -> (Sink, Option<std::path::PathBuf>) {
    if let Some(net) = &opts.net {
        return match Sink::connect(&net.host, net.port) {
            Ok(s) => (s, None),
            Err(_) => startup_error(&format!("can't connect to {}:{}", net.host, net.port)),
        };
    }
    let name = opts.output_file_name(std::process::id(), |p| std::path::Path::new(p).exists());
    // Heap dumps hold the program's data: their files are private.
    match Sink::create_file(std::path::Path::new(&name), opts.heap_dump) {
        Ok(s) => (s, Some(name.into())),
        Err(e) => startup_error(&format!("can't create profile file: {name} ({e})")),
    }
}
