//! HotSpot's dynamic attach mechanism on Linux, from the tool's side: the
//! JVM's attach listener serves requests on the Unix domain socket
//! `/tmp/.java_pid<PID>`, created on demand. See docs/attach.md.
//!
//! * Finding it: `<PID>` is the pid in the JVM's own pid namespace (the
//!   last `NSpid` of /proc/PID/status) and `/tmp` is the JVM's, reached
//!   through /proc/PID/root when it lives in a container.
//! * Starting it: a JVM creates the socket only when asked. The client
//!   creates an empty `.attach_pid<PID>` in the JVM's working directory
//!   (or its /tmp) and sends SIGQUIT; the JVM's SIGQUIT handler sees the
//!   file and starts its listener instead of printing a thread dump.
//!   SIGQUIT kills a process that has no handler for it, so it is sent
//!   only to a process whose /proc status says it catches SIGQUIT.
//! * Trusting it: the socket must belong to the JVM's user (root's
//!   attach too, unlike HotSpot's own client) and to our effective gid
//!   (unless we are root), and be closed to others; once connected, the
//!   process listening on it must be the JVM (its peer credentials), or
//!   nothing is sent. The trigger file is created exclusively, never
//!   through a link. The JVM in turn accepts only peers of its own uid or
//!   root.
//! * Talking: one request per connection. Protocol 1 (every JDK) sends
//!   `1\0<command>\0<arg>\0<arg>\0<arg>\0`: always three arguments (empty
//!   when absent), a command of at most 16 bytes, arguments of at most
//!   1024. Protocol 2 (JDK 24 and later; the `getversion` command answers
//!   `2`) sends `2\0<size>\0<command>\0<arg>\0...` with any number of
//!   arguments, `<size>` counting the bytes after its own NUL, at most
//!   256 KiB. Either way the answer is a status line (`<int>\n`) and then
//!   the command's output, up to the end of the stream; status 101 means
//!   the JVM did not understand the protocol version.
//! * Loading an agent: command `load` with arguments library, `true` (the
//!   library is a path, not a name to look up) and the option string.
//!   The JVM answers `0` and `return code: <n>` with n what
//!   `Agent_OnAttach` returned, or, when the library cannot be loaded,
//!   its loader's message: after status -1 up to JDK 17, after status 0
//!   from JDK 21 on.

use super::perfdata::{self, PerfData};
use super::procfs::{self, Status};
use super::sys;
use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub const V1_NAME_MAX: usize = 16;
pub const V1_ARG_MAX: usize = 1024;
pub const V1_ARG_COUNT: usize = 3;
pub const V2_REQUEST_MAX: usize = 256 << 10;
/// The status of an answer to a request in a protocol the JVM lacks.
pub const STATUS_BAD_VERSION: i32 = 101;
/// Most bytes of an answer kept (an agent load answers a line or two).
const REPLY_MAX: usize = 1 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    V1,
    V2,
}

impl Protocol {
    pub fn number(self) -> u32 {
        match self {
            Protocol::V1 => 1,
            Protocol::V2 => 2,
        }
    }
}

/// The bytes of one request.
pub fn encode_request(p: Protocol, command: &str, args: &[&str]) -> Result<Vec<u8>, String> {
    if let Some(s) = std::iter::once(&command)
        .chain(args)
        .find(|s| s.contains('\0'))
    {
        return Err(format!(
            "{s:?} contains a NUL byte, which the attach protocol cannot carry"
        ));
    }
    let mut body = Vec::new();
    body.extend_from_slice(command.as_bytes());
    body.push(0);
    match p {
        Protocol::V1 => {
            if command.len() > V1_NAME_MAX || args.len() > V1_ARG_COUNT {
                return Err(format!(
                    "attach protocol 1 cannot carry command {command:?} with {} arguments",
                    args.len()
                ));
            }
            if let Some(a) = args.iter().find(|a| a.len() > V1_ARG_MAX) {
                return Err(format!(
                    "an argument of {} bytes is longer than the {V1_ARG_MAX} that attach protocol 1 \
                     (JDK 23 and older) takes",
                    a.len()
                ));
            }
            for i in 0..V1_ARG_COUNT {
                body.extend_from_slice(args.get(i).map_or(&b""[..], |a| a.as_bytes()));
                body.push(0);
            }
            let mut req = b"1\0".to_vec();
            req.extend(body);
            Ok(req)
        }
        Protocol::V2 => {
            for a in args {
                body.extend_from_slice(a.as_bytes());
                body.push(0);
            }
            if body.len() > V2_REQUEST_MAX {
                return Err(format!(
                    "a request of {} bytes is longer than the {V2_REQUEST_MAX} that attach protocol 2 takes",
                    body.len()
                ));
            }
            let mut req = format!("2\0{}\0", body.len()).into_bytes();
            req.extend(body);
            Ok(req)
        }
    }
}

/// A JVM's answer: its status line and the output after it.
#[derive(Clone, Debug, PartialEq)]
pub struct Reply {
    pub status: i32,
    pub text: String,
    /// The JVM sent more than `REPLY_MAX` bytes; the rest was dropped.
    pub truncated: bool,
}

/// Parses an answer read up to the end of the stream.
pub fn parse_reply(bytes: &[u8]) -> Result<Reply, String> {
    if bytes.is_empty() {
        return Err("the JVM closed the connection without answering".into());
    }
    let (first, rest) = match bytes.iter().position(|&b| b == b'\n') {
        Some(i) => (&bytes[..i], &bytes[i + 1..]),
        None => (bytes, &b""[..]),
    };
    let first = String::from_utf8_lossy(first);
    let status = first.trim().parse::<i32>().map_err(|_| {
        let shown: String = first.chars().take(80).collect();
        format!("the JVM's answer does not start with a status number: {shown:?}")
    })?;
    Ok(Reply {
        status,
        text: String::from_utf8_lossy(rest).into_owned(),
        truncated: false,
    })
}

/// What an answer to `load` means.
#[derive(Clone, Debug, PartialEq)]
pub enum LoadOutcome {
    /// Agent_OnAttach returned 0.
    Started,
    /// The library was loaded and Agent_OnAttach returned this error.
    AgentFailed(i32),
    /// The JVM did not load the library (or refused the request); its
    /// message.
    NotLoaded(String),
}

pub fn interpret_load(r: &Reply) -> LoadOutcome {
    let text = r.text.trim();
    if r.status == STATUS_BAD_VERSION {
        return LoadOutcome::NotLoaded(format!(
            "the JVM does not speak this attach protocol version (status 101){}",
            if text.is_empty() {
                String::new()
            } else {
                format!(": {text}")
            }
        ));
    }
    if r.status != 0 {
        return LoadOutcome::NotLoaded(if text.is_empty() {
            format!("the JVM answered status {} without a message", r.status)
        } else {
            text.to_string()
        });
    }
    // JDK 9 and later write "return code: N"; a bare N is the older form.
    let code = text.strip_prefix("return code:").unwrap_or(text).trim();
    match code.parse::<i32>() {
        Ok(0) => LoadOutcome::Started,
        Ok(n) => LoadOutcome::AgentFailed(n),
        Err(_) if text.is_empty() => LoadOutcome::NotLoaded(
            "the JVM answered without saying whether the agent started".into(),
        ),
        Err(_) => LoadOutcome::NotLoaded(text.to_string()),
    }
}

/// A process to attach to, as inspected before any request.
#[derive(Debug)]
pub struct Target {
    pub pid: u32,
    pub status: Status,
    /// The target's /tmp as seen from here.
    pub tmp: PathBuf,
    pub socket: PathBuf,
    /// Its perfdata file, when it has one we can read.
    pub perf: Option<PerfData>,
}

/// Looks at process `pid` and refuses early what cannot be attached to:
/// no such process, not ours to attach to, not a JVM.
pub fn inspect(pid: u32) -> Result<Target, String> {
    if pid == 0 {
        return Err("0 is not a process id".into());
    }
    let status = match procfs::status(pid) {
        Ok(s) => s,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(format!("no process with PID {pid}"))
        }
        Err(e) => return Err(format!("cannot read /proc/{pid}/status: {e}")),
    };
    let name = &status.name;
    if status.state == 'Z' {
        return Err(format!("process {pid} ({name}) has exited"));
    }
    let me = sys::euid();
    if me != 0 && status.euid != me {
        return Err(format!(
            "process {pid} ({name}) runs as uid {}, and you are uid {me}: a JVM accepts attach only \
             from its own effective user (or root)",
            status.euid
        ));
    }
    // Unreadable maps (a process we may not inspect) leave the question
    // open; the socket and signal checks below still apply.
    if let Ok(found) = procfs::maps_contain(pid, &["/libjvm.so"]) {
        if found == [false] {
            return Err(format!(
                "process {pid} ({name}) is not a Java virtual machine: it has no libjvm.so loaded"
            ));
        }
    }
    let tmp = procfs::target_tmp(pid);
    let socket = tmp.join(format!(".java_pid{}", status.ns_pid));
    let perf = perfdata::for_process(&tmp, status.ns_pid, status.euid);
    Ok(Target {
        pid,
        status,
        tmp,
        socket,
        perf,
    })
}

/// The attach trigger file, removed when dropped however the wait ended:
/// a file left behind would make the JVM start its listener at the next
/// SIGQUIT instead of printing the thread dump that was asked for. Only
/// the file this tool created is removed, through the directory it was
/// created in.
struct TriggerFile {
    dir: sys::Dir,
    name: String,
    id: sys::FileId,
}

impl Drop for TriggerFile {
    fn drop(&mut self) {
        let _ = self.dir.remove_if(&self.name, self.id);
    }
}

/// Creates `.attach_pid<NSPID>` in the JVM's working directory, else in
/// its /tmp (where its SIGQUIT handler looks). The name is created
/// exclusively and never through a link, so whatever the JVM's owner put
/// at that name (a link to a file of root's) is left alone and nothing is
/// created elsewhere; a root tool creates it in the working directory only
/// when that directory belongs to the JVM's user (it could create the
/// file there itself), not in a directory the JVM merely moved into.
fn create_trigger(t: &Target) -> Result<TriggerFile, String> {
    let name = format!(".attach_pid{}", t.status.ns_pid);
    let root_for_another = sys::euid() == 0 && t.status.euid != 0;
    let cwd = procfs::proc_dir(t.pid).join("cwd");
    let mut why = Vec::new();
    for (place, path) in [("working directory", cwd), ("/tmp", t.tmp.clone())] {
        let dir = match sys::Dir::open(&path) {
            Ok(d) => d,
            Err(e) => {
                why.push(format!("{place}: {e}"));
                continue;
            }
        };
        if root_for_another
            && place == "/tmp"
            && !shared_tmp(&dir)
            && !dir.owner_and_mode().is_ok_and(|(o, _)| o == t.status.euid)
        {
            why.push(format!(
                "{place}: not a shared /tmp (sticky and writable by all) nor the JVM's user's"
            ));
            continue;
        }
        if root_for_another && place == "working directory" {
            match dir.owner_and_mode() {
                Ok((owner, _)) if owner == t.status.euid => {}
                Ok((owner, _)) => {
                    why.push(format!(
                        "{place}: it belongs to uid {owner}, not to the JVM's user"
                    ));
                    continue;
                }
                Err(e) => {
                    why.push(format!("{place}: {e}"));
                    continue;
                }
            }
        }
        match dir.create_new(&name) {
            Ok(id) => return Ok(TriggerFile { dir, name, id }),
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => why.push(format!(
                "{place}: the name exists already (not used: it may be a link planted there)"
            )),
            Err(e) => why.push(format!("{place}: {e}")),
        }
    }
    Err(format!(
        "cannot create the attach trigger file {name} for process {}: {}",
        t.pid,
        why.join("; ")
    ))
}

fn signal_quit(t: &Target) -> Result<(), String> {
    sys::send_signal(t.pid, libc::SIGQUIT).map_err(|e| match e.raw_os_error() {
        Some(libc::EPERM) => format!("no permission to send SIGQUIT to process {}: {e}", t.pid),
        Some(libc::ESRCH) => format!("process {} has exited", t.pid),
        _ => format!("cannot send SIGQUIT to process {}: {e}", t.pid),
    })
}

/// What is at the JVM's socket name before the listener is asked for.
enum AtSocketName {
    Nothing,
    /// Something to be vetted by [`checked_socket`] and [`check_peer`]: a
    /// socket someone listens on, another user's file, not a socket,
    /// something mounted over the name.
    InUse,
    /// A socket nobody listens on, of the JVM's user or ours: left by a
    /// process that exited without removing it (a JVM killed outright
    /// whose pid the kernel has since given to this one).
    LeftBehind {
        id: sys::FileId,
        owner: u32,
        /// The directory it was seen in, held open: it is removed there.
        dir: sys::Dir,
    },
    /// Another user's socket at a root JVM's name: not the JVM's (its
    /// socket is root's), and the JVM's listener can put its own in its
    /// place. Not connected to.
    Displaceable {
        id: sys::FileId,
    },
}

/// The name of the JVM's socket in its /tmp.
fn socket_name(t: &Target) -> &str {
    t.socket.file_name().and_then(|n| n.to_str()).unwrap_or("")
}

/// The JVM's /tmp, held open.
fn open_tmp(t: &Target) -> Result<sys::Dir, String> {
    sys::Dir::open(&t.tmp).map_err(|e| format!("cannot open {}: {e}", t.tmp.display()))
}

/// The JVM's socket name opened without following it, with its directory;
/// None when there is nothing at the name.
fn pin_socket(t: &Target) -> Result<Option<(sys::Dir, sys::Pinned)>, String> {
    let dir = open_tmp(t)?;
    match dir.pin(socket_name(t)) {
        Ok(Some(p)) => Ok(Some((dir, p))),
        Ok(None) => Ok(None),
        Err(e) => Err(format!(
            "cannot look at the attach socket {}: {e}",
            t.socket.display()
        )),
    }
}

/// How long a look at whether anything listens may wait for a listener's
/// full queue.
const PROBE_WAIT: Duration = Duration::from_secs(1);

fn at_socket_name(t: &Target) -> Result<AtSocketName, String> {
    let Some((dir, p)) = pin_socket(t)? else {
        return Ok(AtSocketName::Nothing);
    };
    let l = p.looked;
    if !l.is_socket() || l.mounted {
        return Ok(AtSocketName::InUse);
    }
    if l.uid != t.status.euid {
        if t.status.euid == 0 {
            return Ok(AtSocketName::Displaceable { id: l.id });
        }
        // Another user's socket is not even connected to: checked_socket
        // refuses it by its owner.
        if l.uid != sys::euid() {
            return Ok(AtSocketName::InUse);
        }
    }
    // Nothing is sent: a JVM's listener reads an empty request and goes
    // on. The connection is to the file looked at, not to whatever the
    // name leads to by now; whoever took it is checked at once.
    match p.connect(PROBE_WAIT) {
        Ok(s) => check_peer(t, &s).map(|()| AtSocketName::InUse),
        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => Ok(AtSocketName::LeftBehind {
            id: l.id,
            owner: l.uid,
            dir,
        }),
        Err(_) => Ok(AtSocketName::InUse),
    }
}

/// Makes sure the JVM's attach socket exists, starting its listener when
/// it does not; waits at most `timeout`. Returns whether it was started;
/// `step` is told what was done on the way.
///
/// A socket nobody listens on at the JVM's name (left by a JVM killed
/// with the same pid, which kept HotSpot's own client from ever attaching
/// again) does not stop the start: the JVM's listener puts its socket in
/// its place when the old one is its user's, or when the JVM runs as root;
/// one of ours (root's, at another user's JVM, which the JVM could not
/// replace in the sticky /tmp) is removed first. Another user's is left
/// alone and refused.
pub fn start_listener(
    t: &Target,
    timeout: Duration,
    step: &mut dyn FnMut(String),
) -> Result<bool, String> {
    let at = at_socket_name(t)?;
    if matches!(at, AtSocketName::InUse) {
        return Ok(false);
    }
    let (pid, name) = (t.pid, &t.status.name);
    if t.perf.as_ref().and_then(PerfData::attachable) == Some(false) {
        return Err(format!(
            "JVM {pid} does not accept attach: it was started with -XX:+DisableAttachMechanism"
        ));
    }
    if t.status.ignores_quit == Some(true) || t.status.catches_quit == Some(false) {
        return Err(format!(
            "process {pid} ({name}) has no SIGQUIT handler, so its attach listener cannot be started \
             (a JVM run with -Xrs, one still starting, or not a JVM); no signal was sent"
        ));
    }
    let left = match at {
        AtSocketName::InUse | AtSocketName::Nothing => None,
        // Replaced by the JVM's socket, made before the old one goes:
        // another inode.
        AtSocketName::Displaceable { id } => Some(id),
        AtSocketName::LeftBehind { id, owner, .. } if owner == t.status.euid => Some(id),
        AtSocketName::LeftBehind { id, owner, dir } => {
            remove_left_socket(t, &dir, id)?;
            step(format!(
                "removed {}, a socket of uid {owner} that nothing listened on (left by an exited \
                 process)",
                t.socket.display()
            ));
            // Its inode number is free for the JVM's new socket.
            None
        }
    };
    let _trigger = create_trigger(t)?;
    signal_quit(t)?;
    let start = Instant::now();
    let mut resent = false;
    let mut step = Duration::from_millis(10);
    loop {
        if let Ok(Some((_, p))) = pin_socket(t) {
            if Some(p.looked.id) != left {
                // What came may be another user's file, put there in the
                // meantime: not said to be the JVM's.
                checked_socket(t)?;
                return Ok(true);
            }
        }
        let waited = start.elapsed();
        if waited >= timeout {
            return Err(format!(
                "JVM {pid} did not open its attach socket {} within {:.1} s of SIGQUIT (attach \
                 disabled with -XX:+DisableAttachMechanism, a JVM that is not responding, or not a \
                 HotSpot JVM)",
                t.socket.display(),
                timeout.as_secs_f64()
            ));
        }
        if !procfs::proc_dir(pid).exists() {
            return Err(format!(
                "process {pid} exited while its attach listener was starting"
            ));
        }
        // A JVM busy at the first signal gets a second one, as HotSpot's
        // own client does.
        if !resent && waited >= timeout / 2 {
            resent = true;
            signal_quit(t)?;
        }
        std::thread::sleep(step.min(timeout - waited));
        step = (step * 2).min(Duration::from_millis(200));
    }
}

/// A directory every user may create names in, each removing only their
/// own (sticky, writable by all): a real /tmp. A root tool removes or
/// creates names for another user's JVM only there (or in a directory of
/// the JVM's user), not in a directory of root's that the JVM's owner
/// mounted at their /tmp in a namespace of their own.
fn shared_tmp(dir: &sys::Dir) -> bool {
    dir.owner_and_mode()
        .is_ok_and(|(_, mode)| mode & 0o1002 == 0o1002)
}

/// Removes the socket `id` of ours at the JVM's socket name in `dir`, and
/// only it.
fn remove_left_socket(t: &Target, dir: &sys::Dir, id: sys::FileId) -> Result<(), String> {
    let cannot = |e: &dyn std::fmt::Display| {
        format!(
            "cannot remove {}, a socket of yours that nothing listens on, which keeps JVM {} \
             from opening its attach socket: {e}",
            t.socket.display(),
            t.pid
        )
    };
    if !shared_tmp(dir) {
        return Err(cannot(
            &"its directory is not a shared /tmp (sticky and writable by all), so nothing is \
              removed there",
        ));
    }
    match dir.remove_if(socket_name(t), id) {
        Ok(true) => Ok(()),
        Ok(false) => Err(cannot(&"another file took its place")),
        Err(e) => Err(cannot(&e)),
    }
}

/// Whether the attach socket at `t.socket` may be used: a socket that
/// belongs to the JVM's user, closed to group and others. HotSpot's own
/// client checks that it is ours (same effective uid and gid) and closed
/// to others, but lets root use anyone's: root would then send its option
/// string (a `token=` with it) to whatever another user put at that name
/// before the JVM made its socket. Here the owner must be the JVM's user,
/// for root too; who answers on it is checked once connected
/// ([`check_peer`]).
pub fn check_socket(t: &Target) -> Result<(), String> {
    checked_socket(t).map(|_| ())
}

/// [`check_socket`], keeping the file looked at: a connection goes to it,
/// not to whatever the name holds by then (a link or a mount put there
/// since, leading to another socket).
fn checked_socket(t: &Target) -> Result<sys::Pinned, String> {
    let path = &t.socket;
    let Some((_, p)) = pin_socket(t)? else {
        return Err(format!(
            "cannot look at the attach socket {}: {}",
            path.display(),
            io::Error::from_raw_os_error(libc::ENOENT)
        ));
    };
    let m = p.looked;
    if !m.is_socket() {
        return Err(format!(
            "{} is not a socket; refusing to use it",
            path.display()
        ));
    }
    if m.mounted {
        return Err(format!(
            "refusing the attach socket {}: something is mounted over it, so it is not a socket \
             the JVM made (nothing was sent to it)",
            path.display()
        ));
    }
    if m.uid != t.status.euid {
        return Err(format!(
            "refusing the attach socket {}: it belongs to uid {}, and JVM {} runs as uid {} \
             (another user's socket at the JVM's name; nothing was sent to it)",
            path.display(),
            m.uid,
            t.pid,
            t.status.euid
        ));
    }
    let (uid, gid) = (sys::euid(), sys::egid());
    if uid != 0 && m.gid != gid {
        return Err(format!(
            "refusing the attach socket {}: its group is {}, and yours is {gid}",
            path.display(),
            m.gid
        ));
    }
    if m.mode & 0o066 != 0 {
        return Err(format!(
            "refusing the attach socket {}: other users may use it (mode {:03o})",
            path.display(),
            m.mode & 0o777
        ));
    }
    Ok(p)
}

/// The process at the other end of a connection to the attach socket must
/// be the JVM itself (the kernel's record of who listens, not the file's
/// owner, which could have been swapped between the check and the
/// connect). Nothing is sent before this holds.
fn check_peer(t: &Target, s: &UnixStream) -> Result<(), String> {
    let p = sys::peer(s).map_err(|e| {
        format!(
            "cannot tell who listens on {}: {e}; nothing was sent to it",
            t.socket.display()
        )
    })?;
    if p.pid != t.pid || p.uid != t.status.euid {
        return Err(format!(
            "refusing the attach socket {}: the process listening on it is pid {} (uid {}), not \
             JVM {} (uid {}); nothing was sent to it",
            t.socket.display(),
            p.pid,
            p.uid,
            t.pid,
            t.status.euid
        ));
    }
    Ok(())
}

/// Sends one request and reads the whole answer, waiting at most
/// `timeout` for it.
pub fn execute(
    t: &Target,
    p: Protocol,
    command: &str,
    args: &[&str],
    timeout: Duration,
) -> Result<Reply, String> {
    let request = encode_request(p, command, args)?;
    let pid = t.pid;
    let socket = checked_socket(t)?;
    let mut s = socket.connect(timeout).map_err(|e| match e.kind() {
        io::ErrorKind::ConnectionRefused => format!(
            "nothing listens on {} (a socket left by a JVM that has exited?)",
            t.socket.display()
        ),
        io::ErrorKind::WouldBlock => format!(
            "{} took no connection within {:.1} s (a listener whose queue is full)",
            t.socket.display(),
            timeout.as_secs_f64()
        ),
        _ => format!("cannot connect to {}: {e}", t.socket.display()),
    })?;
    check_peer(t, &s)?;
    let deadline = Instant::now() + timeout;
    let timed_out = || {
        format!(
            "JVM {pid} did not answer `{command}` within {:.1} s",
            timeout.as_secs_f64()
        )
    };
    s.set_write_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    s.write_all(&request).map_err(|e| match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => timed_out(),
        _ => format!("cannot send `{command}` to JVM {pid}: {e}"),
    })?;
    let mut answer = Vec::new();
    let mut buf = [0u8; 8192];
    let mut truncated = false;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(timed_out());
        }
        s.set_read_timeout(Some(left)).map_err(|e| e.to_string())?;
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let room = REPLY_MAX - answer.len();
                answer.extend_from_slice(&buf[..n.min(room)]);
                truncated |= n > room;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(timed_out())
            }
            // The JVM closing first after answering reads as a reset.
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset && !answer.is_empty() => break,
            Err(e) => return Err(format!("reading the answer of JVM {pid}: {e}")),
        }
    }
    let mut reply = parse_reply(&answer).map_err(|e| format!("JVM {pid}: {e}"))?;
    reply.truncated = truncated;
    Ok(reply)
}

/// The newest protocol both sides speak: asks `getversion` (which JVMs
/// before JDK 24 do not know, and answer with an error).
pub fn negotiate(t: &Target, timeout: Duration) -> Result<Protocol, String> {
    let r = execute(t, Protocol::V1, "getversion", &[], timeout)?;
    let version = r
        .text
        .split_whitespace()
        .next()
        .and_then(|v| v.parse::<u32>().ok());
    Ok(if r.status == 0 && version.is_some_and(|v| v >= 2) {
        Protocol::V2
    } else {
        Protocol::V1
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn version_1_requests_always_carry_three_arguments() {
        assert_eq!(
            encode_request(Protocol::V1, "load", &["/a/lib.so", "true", "x=1"]).unwrap(),
            b"1\0load\0/a/lib.so\0true\0x=1\0"
        );
        assert_eq!(
            encode_request(Protocol::V1, "getversion", &[]).unwrap(),
            b"1\0getversion\0\0\0\0"
        );
        let long = "o".repeat(V1_ARG_MAX + 1);
        let e = encode_request(Protocol::V1, "load", &["l", "true", &long]).unwrap_err();
        assert!(e.contains("1025 bytes"), "{e}");
        assert!(encode_request(Protocol::V1, "load", &["l", "true", &long[1..]]).is_ok());
        assert!(encode_request(Protocol::V1, "a_command_too_long", &[]).is_err());
        assert!(encode_request(Protocol::V1, "c", &["1", "2", "3", "4"]).is_err());
    }

    #[test]
    fn version_2_requests_count_their_bytes() {
        assert_eq!(
            encode_request(Protocol::V2, "load", &["/a/lib.so", "true", ""]).unwrap(),
            b"2\x0021\0load\0/a/lib.so\0true\0\0"
        );
        let long = "o".repeat(5000);
        let req = encode_request(Protocol::V2, "load", &["l", "true", &long]).unwrap();
        assert!(req.starts_with(b"2\x005013\0load\0"));
        let huge = "o".repeat(V2_REQUEST_MAX);
        assert!(encode_request(Protocol::V2, "load", &[&huge]).is_err());
    }

    #[test]
    fn nul_bytes_are_refused() {
        assert!(encode_request(Protocol::V1, "load", &["a\0b"]).is_err());
        assert!(encode_request(Protocol::V2, "lo\0ad", &[]).is_err());
    }

    #[test]
    fn answers_to_load_on_each_jdk() {
        let r = |b: &[u8]| parse_reply(b).unwrap();
        // JDK 11-25, Agent_OnAttach returned 0 or -1.
        assert_eq!(
            interpret_load(&r(b"0\nreturn code: 0\n")),
            LoadOutcome::Started
        );
        assert_eq!(
            interpret_load(&r(b"0\nreturn code: -1\n")),
            LoadOutcome::AgentFailed(-1)
        );
        // Older form: the bare code.
        assert_eq!(interpret_load(&r(b"0\n-1\n")), LoadOutcome::AgentFailed(-1));
        // Library not found: JDK 11 and 17, then JDK 21 and later.
        let msg = "/x.so was not loaded.\n/x.so: cannot open shared object file: No such file or directory";
        assert_eq!(
            interpret_load(&r(format!("-1\n{msg}\n").as_bytes())),
            LoadOutcome::NotLoaded(msg.into())
        );
        assert_eq!(
            interpret_load(&r(format!("0\n{msg}\n").as_bytes())),
            LoadOutcome::NotLoaded(msg.into())
        );
        assert!(
            matches!(interpret_load(&r(b"101\n")), LoadOutcome::NotLoaded(m) if m.contains("101"))
        );
        assert!(matches!(
            interpret_load(&r(b"0\n")),
            LoadOutcome::NotLoaded(_)
        ));
    }

    /// A target that is this process, its socket at `socket`.
    fn this_process(socket: &Path) -> Target {
        let pid = std::process::id();
        Target {
            pid,
            status: procfs::status(pid).unwrap(),
            tmp: socket.parent().unwrap().to_path_buf(),
            socket: socket.to_path_buf(),
            perf: None,
        }
    }

    #[test]
    fn only_a_private_socket_of_the_jvms_user_is_used() {
        let dir =
            std::env::temp_dir().join(format!("hprof-rs-socket-check-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(".java_pid1");
        let mut t = this_process(&path);
        std::fs::write(&path, b"").unwrap();
        let e = check_socket(&t).unwrap_err();
        assert!(e.ends_with("is not a socket; refusing to use it"), "{e}");
        std::fs::remove_file(&path).unwrap();
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        let e = check_socket(&t).unwrap_err();
        assert!(e.ends_with("other users may use it (mode 666)"), "{e}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(check_socket(&t), Ok(()));
        // A JVM of another user: this socket is not its (whoever we are).
        let me = t.status.euid;
        t.status.euid = me.wrapping_add(1);
        let e = check_socket(&t).unwrap_err();
        assert_eq!(
            e,
            format!(
                "refusing the attach socket {}: it belongs to uid {me}, and JVM {} runs as uid {} \
                 (another user's socket at the JVM's name; nothing was sent to it)",
                path.display(),
                t.pid,
                me.wrapping_add(1)
            )
        );
        // Connected: the listener must be the JVM's process.
        t.status.euid = me;
        let s = UnixStream::connect(&path).unwrap();
        let _accepted = listener.accept().unwrap();
        assert_eq!(check_peer(&t, &s), Ok(()));
        t.pid = 1;
        let e = check_peer(&t, &s).unwrap_err();
        assert!(
            e.ends_with(&format!(
                "the process listening on it is pid {} (uid {me}), not JVM 1 (uid {me}); nothing \
                 was sent to it",
                std::process::id()
            )),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn malformed_answers_are_errors() {
        assert!(parse_reply(b"").is_err());
        assert!(parse_reply(b"Operation not recognized\n").is_err());
        assert_eq!(
            parse_reply(b"-1").unwrap(),
            Reply {
                status: -1,
                text: String::new(),
                truncated: false
            }
        );
    }
}
