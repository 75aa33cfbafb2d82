//! Server-sent events: the page keeps one `GET /api/events` open and gets
//! the session list whenever a session changes (new records, console
//! lines, state), at most every [`TICK`], and a comment every
//! [`KEEPALIVE`] otherwise. The page then fetches only the view it shows,
//! and only when its session changed, instead of polling every view on a
//! timer.

use super::http;
use super::{lock, Ui};
use serde_json::json;
use std::io::Write;
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// How often changes are looked for (and so the most events per second).
pub const TICK: Duration = Duration::from_millis(250);
/// A comment line when nothing changed, so a closed page is noticed.
pub const KEEPALIVE: Duration = Duration::from_secs(15);
/// Event streams open at once (one per open page).
pub const MAX_STREAMS: usize = 16;

/// A fingerprint of every session's state: changes when any changes.
fn fingerprint(ui: &Ui) -> Vec<(u32, u64, bool)> {
    ui.all()
        .iter()
        .map(|h| {
            let commands = ui.takes_commands(h);
            (h.id, lock(&h.data).version, commands)
        })
        .collect()
}

pub fn serve(ui: &Ui, stream: &mut TcpStream) {
    if ui.streams.fetch_add(1, Ordering::SeqCst) >= MAX_STREAMS {
        ui.streams.fetch_sub(1, Ordering::SeqCst);
        let _ = http::respond(stream, 503, "text/plain", b"too many event streams open");
        return;
    }
    let _ = stream.set_write_timeout(Some(Duration::from_secs(10)));
    let _ = run(ui, stream);
    ui.streams.fetch_sub(1, Ordering::SeqCst);
}

fn run(ui: &Ui, stream: &mut TcpStream) -> std::io::Result<()> {
    http::write_head(stream, 200, "text/event-stream", None, &[])?;
    // The browser reconnects by itself after this many ms if cut.
    stream.write_all(b"retry: 1000\n\n")?;
    let mut last = None;
    let mut quiet_since = Instant::now();
    loop {
        let now = fingerprint(ui);
        if last.as_ref() != Some(&now) {
            let v = json!({"sessions": super::api::sessions_list(ui)});
            stream.write_all(format!("event: sessions\ndata: {v}\n\n").as_bytes())?;
            stream.flush()?;
            last = Some(now);
            quiet_since = Instant::now();
        } else if quiet_since.elapsed() >= KEEPALIVE {
            stream.write_all(b": keep-alive\n\n")?;
            stream.flush()?;
            quiet_since = Instant::now();
        }
        std::thread::sleep(TICK);
    }
}
