//! The one set-up sequence of a profiling session, for a VM that starts
//! (`Agent_OnLoad`) and for a running one (`Agent_OnAttach`): the JVMTI
//! version, the profiles and the capabilities they need, the output, the
//! writer thread, the session installed. What differs stays with the
//! callers: a failed load ends the JVM with the message, a failed attach
//! gives back what it took and tells the tool; the events enabled
//! afterwards (VM init and death at load, VM death and the profiles'
//! attach in a running VM).

use super::onload;
use super::Agent;
use crate::jvmti::Jvmti;
use crate::options::Options;
use crate::sink::writer::Writer;
use crate::vm::{output, Context};

/// Set a session up on `jvmti` with `opts` (`attached`: in a running VM).
/// On `Err` nothing it started is left running: the writer and the socket
/// side are stopped and closed (the caller disposes of `jvmti`).
pub(super) fn set_up(
    jvmti: Jvmti,
    opts: Options,
    attached: bool,
) -> Result<&'static Agent, String> {
    onload::check_version(jvmti)?;
    let profiles = crate::profile::list(&opts);
    onload::add_capabilities(jvmti, &profiles)?;
    let output = onload::open_output(&opts)?;
    let format = output::new_format(&opts, true);
    let net = output.net;
    let out = match Writer::spawn(output.sink, format) {
        Ok(w) => w,
        Err(e) => {
            net.stop();
            net.close();
            return Err(format!("cannot start the writer thread: {e}"));
        }
    };
    onload::register_exit_handler();
    let session = Agent::new(
        Context::new(jvmti, opts, out, attached),
        profiles,
        net,
        output.file,
    );
    super::install(session).map_err(|session| {
        session.net.stop();
        session.ctx.out.stop();
        session.net.close();
        format!(
            "this JVM has had {} profiling sessions, the most one process may have",
            super::MAX_SESSIONS
        )
    })
}
