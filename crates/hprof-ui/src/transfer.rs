//! Files in and out of the page: uploads (streamed into a recording, then
//! read like any stream) and downloads of a session's stream exactly as
//! it was received.

use super::http::{self, attachment, body_reader, Request};
use super::{lock, Ui};
use hprof_analysis::session::feed::feed;
use hprof_analysis::session::Kind;
use serde_json::json;
use std::io::{Read, Write};
use std::net::TcpStream;

/// Largest upload accepted.
pub const MAX_UPLOAD: u64 = 1 << 30;

fn answer(stream: &mut TcpStream, status: u16, v: serde_json::Value) {
    let _ = http::respond(stream, status, "application/json", v.to_string().as_bytes());
}

/// A display name for an upload: its file name, reduced to what is safe
/// to show and to put in a download's name.
fn upload_name(req: &Request) -> String {
    let raw = req.param("name").unwrap_or("upload");
    let base = raw.rsplit(['/', '\\']).next().unwrap_or(raw);
    let clean: String = base.chars().filter(|c| !c.is_control()).take(200).collect();
    if clean.is_empty() {
        "upload".into()
    } else {
        clean
    }
}

/// `POST /api/upload?name=FILE`, the file as the body: a new session that
/// reads it. Refused over [`MAX_UPLOAD`] before any byte is read.
pub fn upload(ui: &Ui, req: &Request, stream: &mut TcpStream) {
    if req.content_length == 0 {
        return answer(stream, 400, json!({"error": "empty upload"}));
    }
    if req.content_length > MAX_UPLOAD {
        return answer(
            stream,
            413,
            json!({"error": format!("the file is over {} MiB, the upload limit", MAX_UPLOAD >> 20)}),
        );
    }
    let name = upload_name(req);
    let h = match ui.new_session(Kind::Upload, name, None) {
        Ok(h) => h,
        Err(e) => return answer(stream, 503, json!({"error": e})),
    };
    let Some(rec) = h.recording() else {
        lock(&h.data).fail("cannot store the upload (no temporary file)".into());
        return answer(
            stream,
            500,
            json!({"error": "cannot store the upload", "session": h.id}),
        );
    };
    let mut body = body_reader(req, stream);
    let mut buf = vec![0u8; 1 << 16];
    let mut got = 0u64;
    let cut = loop {
        match body.read(&mut buf) {
            Ok(0) => break got < req.content_length,
            Ok(n) => {
                rec.append(&buf[..n]);
                got += n as u64;
            }
            Err(_) => break true,
        }
    };
    drop(body);
    if cut || rec.stopped() {
        let why = if cut {
            format!(
                "upload cut short: {got} of {} bytes arrived",
                req.content_length
            )
        } else {
            "the upload could not be stored (disk full?)".to_string()
        };
        lock(&h.data).fail(why.clone());
        return answer(stream, 400, json!({"error": why, "session": h.id}));
    }
    let id = h.id;
    let reader_of = h.clone();
    let spawned = std::thread::Builder::new()
        .name("ui-upload".into())
        .spawn(move || {
            feed(
                &reader_of.data,
                &mut std::io::BufReader::with_capacity(1 << 16, rec.reader()),
            )
        });
    if spawned.is_err() {
        lock(&h.data).fail("cannot start reading the upload".into());
    }
    answer(stream, 200, json!({"session": id, "bytes": got}));
}

/// `GET /api/session/ID/download`: the stream exactly as received (a
/// file named on the command line: the file).
pub fn download(ui: &Ui, id: &str, stream: &mut TcpStream) {
    let Some(h) = ui.session(id) else {
        return answer(stream, 404, json!({"error": "no such session"}));
    };
    let (kind, text, source) = {
        let g = lock(&h.data);
        (g.kind, g.text, g.source.clone())
    };
    let ext = if text { "txt" } else { "hprof" };
    let name = match kind {
        Kind::File | Kind::Upload => source.rsplit('/').next().unwrap_or("session").to_string(),
        _ => format!("session-{}.{ext}", h.id),
    };
    let (len, mut reader): (u64, Box<dyn Read>) = if let Some(p) = &h.path {
        match std::fs::File::open(p).and_then(|f| Ok((f.metadata()?.len(), f))) {
            Ok((len, f)) => (len, Box::new(f)),
            Err(e) => {
                return answer(
                    stream,
                    409,
                    json!({"error": format!("cannot read {}: {e}", p.display())}),
                )
            }
        }
    } else if let Some(rec) = h.recording() {
        if rec.stopped() {
            return answer(
                stream,
                409,
                json!({"error": format!("the recording stopped at {} bytes (size limit or disk full): it is not the whole stream", rec.len())}),
            );
        }
        let r = rec.reader();
        (rec.len(), Box::new(r))
    } else {
        return answer(
            stream,
            409,
            json!({"error": "this session's stream was not recorded"}),
        );
    };
    let headers = [attachment(&name)];
    if http::write_head(stream, 200, "application/octet-stream", Some(len), &headers).is_err() {
        return;
    }
    // Exactly `len` bytes, even if a file grows meanwhile.
    let _ = std::io::copy(&mut (&mut reader).take(len), stream);
    let _ = stream.flush();
}
