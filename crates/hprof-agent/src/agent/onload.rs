//! The library's exported entry points: Agent_OnLoad (also reached through
//! `-Xrunhprof_rs`, which HotSpot converts to an agent when the library has
//! no JVM_OnLoad), Agent_OnAttach (`attach.rs` does the work) and
//! Agent_OnUnload; and the set-up both starts share.

use super::{attach, events};
use crate::diag;
use crate::jvmti::sys::{cap, event, jint, jvmtiCapabilities, JavaVM};
use crate::jvmti::Jvmti;
use crate::options::{self, Options, TokenSource};
use crate::sink::record::Recording;
use crate::sink::Sink;
use crate::vm::log;
use std::ffi::CStr;
use std::io::Write;
use std::os::raw::{c_char, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};

pub(super) const JNI_OK: jint = 0;
pub(super) const JNI_ERR: jint = -1;

/// # Safety
/// Called by the JVM with its JavaVM pointer and the option string.
#[no_mangle]
pub unsafe extern "system" fn Agent_OnLoad(
    vm: *mut JavaVM,
    options: *mut c_char,
    _reserved: *mut c_void,
) -> jint {
    crate::build_info::set(env!("HPROF_RS_BUILD"));
    // SAFETY: the VM passes a NUL-terminated option string, or null.
    let opts = unsafe { option_string(options) };
    let _agent_code = crate::jvmti::own_work::enter();
    match catch_unwind(AssertUnwindSafe(|| on_load(vm, &opts))) {
        Ok(rc) => rc,
        Err(_) => {
            diag::error("internal error during Agent_OnLoad; agent not loaded");
            JNI_ERR
        }
    }
}

/// Started in a running VM: `jcmd PID JVMTI.agent_load LIB OPTIONS` or
/// `hprof-rs attach PID OPTIONS` (docs/attach.md). Also how a session is
/// stopped: the option string `stop`. Runs on the JVM's attach listener
/// thread; whatever goes wrong is one `HPROF ERROR` line on the JVM's
/// standard error and a non-zero return (the `return code` of the JVM's
/// answer), never an exit or a crash of the program.
///
/// # Safety
/// Called by the JVM with its JavaVM pointer and the option string.
#[no_mangle]
pub unsafe extern "system" fn Agent_OnAttach(
    vm: *mut JavaVM,
    options: *mut c_char,
    _reserved: *mut c_void,
) -> jint {
    crate::build_info::set(env!("HPROF_RS_BUILD"));
    // SAFETY: the VM passes a NUL-terminated option string, or null.
    let opts = unsafe { option_string(options) };
    // What the attach allocates (thread objects, a thread dump, the
    // published outcome) is the agent's, never the program's; and this is
    // the JVM's attach listener, whose later work serves tools too.
    let _agent_code = crate::jvmti::own_work::enter();
    crate::jvmti::own_work::serve_tools_here();
    match catch_unwind(AssertUnwindSafe(|| attach::on_attach(vm, &opts))) {
        Ok(rc) => rc,
        Err(_) => {
            diag::rejected("internal error during Agent_OnAttach; profiling did not start");
            JNI_ERR
        }
    }
}

/// The option string the VM passed (empty when none).
///
/// # Safety
/// `options` is null or points to a NUL-terminated string.
unsafe fn option_string(options: *const c_char) -> String {
    if options.is_null() {
        return String::new();
    }
    // SAFETY: not null, and NUL-terminated (the caller's promise).
    unsafe { CStr::from_ptr(options) }
        .to_string_lossy()
        .into_owned()
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
        agent
            .ctx
            .out
            .flush_within(std::time::Duration::from_secs(2));
    });
}

static LOADED: AtomicBool = AtomicBool::new(false);

/// Register [`at_process_exit`] once per process (Agent_OnLoad, or the
/// first attach that starts profiling).
pub(super) fn register_exit_handler() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: registers a plain extern "C" function with no arguments,
        // as atexit expects; it catches panics and only touches agent state.
        if unsafe { libc::atexit(at_process_exit) } != 0 {
            diag::error(
                "cannot register the exit handler; output may be lost if the JVM ends without VM death",
            );
        }
    });
}

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
    for w in opts.cost_warnings() {
        diag::verbose(opts.verbose, &format!("HPROF WARNING: {w}\n"));
    }

    // SAFETY: vm is the JavaVM the JVM handed to Agent_OnLoad.
    let jvmti = match unsafe { Jvmti::from_vm(vm) } {
        Ok(j) => j,
        Err(rc) => startup_error(&format!(
            "Unable to access JVMTI Version 1 (0x{:x}), is your JDK a 5.0 or newer version? JNIEnv's GetEnv() returned {rc}",
            crate::jvmti::sys::JVMTI_VERSION_1_2
        )),
    };
    crate::jvmti::jni::set_vm(vm);
    let agent = match super::setup::set_up(jvmti, opts, false) {
        Ok(a) => a,
        Err(e) => startup_error(&e),
    };
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
pub(super) fn check_version(jvmti: Jvmti) -> Result<(), String> {
    let Ok(v) = jvmti.version() else {
        return Ok(());
    };
    let major = (v >> 16) & 0x0FFF;
    let minor = (v >> 8) & 0xFF;
    let micro = v & 0xFF;
    if major < 1 || (major == 1 && minor < 2) {
        return Err(format!(
            "This hprof native library will not work with this VM's version of JVMTI ({major}.{minor}.{micro}), it needs JVMTI 1.2."
        ));
    }
    Ok(())
}

/// The capabilities of the vm floor and of every profile. At an attach the
/// VM offers fewer (those it grants only at start-up are missing): a
/// profile that cannot do without one refuses here, before anything runs.
pub(super) fn add_capabilities(
    jvmti: Jvmti,
    profiles: &[Box<dyn crate::profile::Profile>],
) -> Result<(), String> {
    let potential = jvmti
        .potential_capabilities()
        .map_err(|_| "Unable to get potential JVMTI capabilities.".to_string())?;
    let mut need = jvmtiCapabilities::default();
    for c in [
        cap::CAN_TAG_OBJECTS,
        cap::CAN_GENERATE_GARBAGE_COLLECTION_EVENTS,
    ] {
        need.set(c);
    }
    // Nice to have: frames print <Unknown Source>/Unknown line without them.
    for c in [cap::CAN_GET_SOURCE_FILE_NAME, cap::CAN_GET_LINE_NUMBERS] {
        if potential.has(c) {
            need.set(c);
        }
    }
    for p in profiles {
        p.capabilities(&potential, &mut need)?;
    }
    jvmti
        .add_capabilities(&need)
        .map_err(|_| "Unable to get necessary JVMTI capabilities.".to_string())
}

/// Where the output goes, and the socket side of it.
pub(super) struct Output {
    pub sink: Sink,
    /// The output file (check_output reads it at the end).
    pub file: Option<std::path::PathBuf>,
    pub net: crate::net::NetState,
}

/// Open the output: a file, a connection to a front-end (`net=`), or a
/// listening port with a recording (`listen=`). `Err` is the message.
pub(super) fn open_output(opts: &Options) -> Result<Output, String> {
    if let Some(net) = &opts.net {
        // Read before connecting: a missing token file refuses the start
        // without the front-end seeing a half-open connection.
        let token = read_token(opts)?;
        let mut sink = Sink::connect(&net.host, net.port)
            .map_err(|_| format!("can't connect to {}:{}", net.host, net.port))?;
        if let Some(secret) = token {
            // The front-end's proof that this is the agent it expects: the
            // secret and a newline before the stream (docs/socket-protocol.md).
            let mut line = secret;
            line.push(b'\n');
            sink.write_all_bounded(&line)
                .map_err(|e| format!("can't send the token to {}:{} ({e})", net.host, net.port))?;
        }
        let socket = sink.try_clone_socket();
        return Ok(Output {
            sink,
            file: None,
            net: crate::net::NetState::new(socket),
        });
    }
    let name = opts.output_file_name(std::process::id(), |p| std::path::Path::new(p).exists());
    let Some(listen) = &opts.listen else {
        // Heap dumps hold the program's data: their files are private.
        let (sink, name) = match Sink::create_file(std::path::Path::new(&name), opts.heap_dump) {
            // Another JVM given the same file= writes it: this one takes
            // the force=n name rather than write over it.
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                let own = options::unique_file_name(&name, opts.format, std::process::id());
                diag::warning(&format!(
                    "{name} is the output of another process that is still running (two JVMs given the same file=): this one writes {own}"
                ));
                let sink = Sink::create_file(std::path::Path::new(&own), opts.heap_dump)
                    .map_err(|e| format!("can't create profile file: {own} ({e})"))?;
                (sink, own)
            }
            r => (
                r.map_err(|e| format!("can't create profile file: {name} ({e})"))?,
                name,
            ),
        };
        return Ok(Output {
            sink,
            file: Some(name.into()),
            net: crate::net::NetState::new(None),
        });
    };
    let token = read_token(opts)?;
    // The port first: a refused start must not have emptied the file.
    let listener = std::net::TcpListener::bind((listen.host.as_str(), listen.port))
        .map_err(|e| format!("cannot listen on {}:{}: {e}", listen.host, listen.port))?;
    let recording = if opts.file.is_some() {
        Recording::in_file(std::path::Path::new(&name), opts.heap_dump)
            .map_err(|e| format!("can't create profile file: {name} ({e})"))?
    } else {
        Recording::private_in(&std::env::temp_dir()).map_err(|e| {
            format!(
                "cannot create the recording of the stream in {}: {e}",
                std::env::temp_dir().display()
            )
        })?
    };
    let bound = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| format!("{}:{}", listen.host, listen.port));
    if !listen.is_loopback() {
        diag::warning(&format!(
            "listening on {bound}, which other machines may reach: whoever connects{} reads the \
             profile and controls the profiler, and can end the program (docs/socket-protocol.md)",
            if token.is_some() {
                " with the token"
            } else {
                " (no token=)"
            }
        ));
    }
    let acceptor = crate::net::acceptor::Acceptor::start(listener, token)
        .map_err(|e| format!("cannot start accepting front-ends: {e}"))?;
    diag::verbose(
        opts.verbose,
        &format!("HPROF: waiting for front-ends on {bound}\n"),
    );
    Ok(Output {
        sink: Sink::Recorded(recording.clone()),
        file: opts.file.is_some().then(|| name.into()),
        net: crate::net::NetState::listening(crate::net::Listening {
            acceptor,
            recording,
        }),
    })
}

/// The secret of `token=` or the first line of `tokenfile=`'s file.
fn read_token(opts: &Options) -> Result<Option<Vec<u8>>, String> {
    match &opts.token {
        None => Ok(None),
        Some(TokenSource::Inline(t)) => Ok(Some(t.as_bytes().to_vec())),
        Some(TokenSource::File(path)) => {
            let text = std::fs::read(path)
                .map_err(|e| format!("cannot read the token file {path}: {e}"))?;
            let line = text.split(|&b| b == b'\n').next().unwrap_or_default();
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.is_empty() {
                return Err(format!("the token file {path} has an empty first line"));
            }
            Ok(Some(line.to_vec()))
        }
    }
}
