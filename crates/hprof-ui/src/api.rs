//! The page and its JSON API (docs/ui.md, "JSON API"). Handlers here get
//! a request whose body (at most `http::MAX_BODY`) is already read and
//! whose token, Host and Origin were checked.

use super::http::{attachment, Request};
use super::views;
use super::{attach, launch, lock, source, Ui};
use crate::protocol::Command;
use hprof_analysis::session::cpu::CpuQuery;
use hprof_analysis::session::memory::Which;
use hprof_analysis::session::tree::Open;
use serde_json::{json, Value};

const PAGE: &str = include_str!("assets/index.html");
const SCRIPT: &str = include_str!("assets/app.js");
const STYLE: &str = include_str!("assets/style.css");

/// Rows per answer the page may ask for.
const MAX_LIMIT: usize = 10_000;

pub struct Reply {
    pub status: u16,
    pub ctype: &'static str,
    pub body: Vec<u8>,
    pub headers: Vec<(&'static str, String)>,
}

pub fn json_reply(status: u16, v: Value) -> Reply {
    Reply {
        status,
        ctype: "application/json",
        body: v.to_string().into_bytes(),
        headers: Vec::new(),
    }
}

fn error(status: u16, msg: impl Into<String>) -> Reply {
    json_reply(status, json!({"error": msg.into()}))
}

fn num(req: &Request, k: &str, d: usize) -> usize {
    req.param(k).and_then(|v| v.parse().ok()).unwrap_or(d)
}

/// `open` of a tree query: `[{"path": [names...], "limit": n}, ...]`;
/// malformed entries are skipped (at most 1000).
fn opens(v: &Value) -> Vec<Open> {
    v["open"]
        .as_array()
        .map(|a| {
            a.iter()
                .take(1000)
                .filter_map(|o| {
                    let path = o["path"]
                        .as_array()?
                        .iter()
                        .map(|n| n.as_str().map(str::to_string))
                        .collect::<Option<Vec<String>>>()?;
                    let limit = o["limit"].as_u64().unwrap_or(50).min(MAX_LIMIT as u64) as usize;
                    Some(Open { path, limit })
                })
                .collect()
        })
        .unwrap_or_default()
}

fn text_param<'a>(v: &'a Value, k: &str) -> &'a str {
    v[k].as_str().unwrap_or("")
}

/// The page and its assets are files of `assets/`, each on its own route,
/// so the Content-Security-Policy needs no `'unsafe-inline'`.
fn asset(ctype: &'static str, body: String) -> Reply {
    Reply {
        status: 200,
        ctype,
        body: body.into_bytes(),
        headers: Vec::new(),
    }
}

pub fn route(ui: &Ui, req: &Request) -> Reply {
    let parts: Vec<&str> = req.path.trim_matches('/').split('/').collect();
    match (req.method.as_str(), parts.as_slice()) {
        // The page names its script and style sheet with the request's
        // token (checked before any route: hex digits, safe in an
        // attribute), so every request of the page carries it.
        ("GET", [""]) => asset(
            "text/html; charset=utf-8",
            PAGE.replace("/*TOKEN*/", req.param("token").unwrap_or("")),
        ),
        ("GET", ["app.js"]) => asset("text/javascript; charset=utf-8", SCRIPT.to_string()),
        ("GET", ["style.css"]) => asset("text/css; charset=utf-8", STYLE.to_string()),
        ("GET", ["api", "sessions"]) => json_reply(200, sessions_json(ui)),
        ("GET", ["api", "attach"]) => json_reply(200, attach::info(ui)),
        ("POST", ["api", "attach"]) => {
            let v: Value = match serde_json::from_slice(&req.body) {
                Ok(v) => v,
                Err(e) => return error(400, format!("attach form: {e}")),
            };
            let pid = match &v["pid"] {
                Value::Number(n) => n.to_string(),
                other => other.as_str().unwrap_or("").to_string(),
            };
            match attach::start(ui, &pid, text_param(&v, "options")) {
                Ok(id) => json_reply(200, json!({"session": id})),
                Err((status, e)) => error(status, e),
            }
        }
        ("GET", ["api", "launch"]) => json_reply(200, launch::info(ui)),
        ("POST", ["api", "launch"]) => {
            let v: Value = match serde_json::from_slice(&req.body) {
                Ok(v) => v,
                Err(e) => return error(400, format!("launch form: {e}")),
            };
            match launch::start(
                ui,
                text_param(&v, "command"),
                text_param(&v, "options"),
                text_param(&v, "cwd"),
            ) {
                Ok(id) => json_reply(200, json!({"session": id})),
                Err((status, e)) => error(status, e),
            }
        }
        ("GET", ["api", "source"]) => match source::find(
            &ui.source_roots,
            req.param("class").unwrap_or(""),
            req.param("file").unwrap_or(""),
        ) {
            Ok(v) => json_reply(200, v),
            Err((status, e)) => error(status, e),
        },
        ("GET", ["api", "session", id, "heap", query]) => {
            let Some(h) = ui.session(id) else {
                return error(404, "no such session");
            };
            let (status, v) = super::analyser::answer(ui, &h, req, query);
            json_reply(status, v)
        }
        ("GET" | "POST", ["api", "session", id, what]) => {
            let Some(h) = ui.session(id) else {
                return error(404, "no such session");
            };
            session_route(ui, &h, req, what)
        }
        ("GET" | "POST", _) => error(404, "not found"),
        _ => error(405, "method not allowed"),
    }
}

/// Every session's summary, with what the page may do with it.
pub fn sessions_list(ui: &Ui) -> Vec<Value> {
    ui.all()
        .iter()
        .map(|h| {
            let commands = ui.takes_commands(h);
            let recorded = h
                .recording()
                .map(|r| json!({"bytes": r.len(), "stopped": r.stopped()}));
            let mut v = views::summary(&lock(&h.data));
            v["commands"] = json!(commands);
            v["recorded"] = recorded.unwrap_or(Value::Null);
            v["download"] = json!(h.path.is_some() || h.recording().is_some());
            v
        })
        .collect()
}

fn sessions_json(ui: &Ui) -> Value {
    let list = sessions_list(ui);
    let opts = ui.agents_port_options();
    json!({
        "sessions": list,
        "agentOptions": opts,
        // Monitor data is text only: the same address without format=b.
        "textAgentOptions": opts.trim_end_matches(",format=b"),
        "sources": !ui.source_roots.is_empty(),
    })
}

fn session_route(ui: &Ui, h: &super::Shared, req: &Request, what: &str) -> Reply {
    let body: Value = if req.method == "POST" && what != "command" && what != "mark" {
        match serde_json::from_slice(&req.body) {
            Ok(v) => v,
            Err(_) if req.body.is_empty() => Value::Null,
            Err(e) => return error(400, format!("request body: {e}")),
        }
    } else {
        Value::Null
    };
    let p = |k: &str| req.param(k).unwrap_or("");
    let cpu_q = || CpuQuery::from_params(p("filter"), p("threads"), p("granularity"));
    let limit = num(req, "limit", 100).min(MAX_LIMIT);
    match (req.method.as_str(), what) {
        ("GET", "cpu") => {
            let v =
                lock(&h.data).cpu_view(&cpu_q(), num(req, "offset", 0), limit, p("flame") != "0");
            json_reply(200, views::cpu::cpu(&v))
        }
        ("GET", "sites") => {
            let v = lock(&h.data).sites_view(
                p("class"),
                p("sort"),
                num(req, "offset", 0),
                limit,
                p("between") == "1",
            );
            json_reply(200, views::memory::sites(&v))
        }
        ("GET", "heap") => {
            let v = lock(&h.data).heap_view(
                req.param("dump").and_then(|d| d.parse().ok()),
                p("class"),
                p("sort"),
                num(req, "offset", 0),
                limit,
            );
            json_reply(200, views::heap::heap(&v))
        }
        ("GET", "threads") => {
            let v = lock(&h.data).threads_view();
            json_reply(200, views::threads::threads(&v))
        }
        ("GET", "monitors") => {
            let v = lock(&h.data).monitors_view();
            json_reply(200, views::monitors::monitors(&v))
        }
        ("GET", "console") => {
            let v = lock(&h.data).console_view(num(req, "since", 0) as u64);
            json_reply(200, views::threads::console(&v))
        }
        ("GET", "summary") => json_reply(200, views::summary(&lock(&h.data))),
        ("POST", "tree") => {
            let q = CpuQuery::from_params(
                text_param(&body, "filter"),
                text_param(&body, "threads"),
                text_param(&body, "granularity"),
            );
            let limit = body["limit"].as_u64().unwrap_or(50).min(MAX_LIMIT as u64) as usize;
            let v = lock(&h.data).cpu_tree(&q, &opens(&body), limit);
            json_reply(200, views::cpu::cpu_tree(v.as_ref()))
        }
        ("POST", "alloctree") => {
            let limit = body["limit"].as_u64().unwrap_or(50).min(MAX_LIMIT as u64) as usize;
            let v = lock(&h.data).alloc_tree_view(
                text_param(&body, "class"),
                text_param(&body, "filter"),
                text_param(&body, "sort"),
                body["between"].as_bool().unwrap_or(false),
                &opens(&body),
                limit,
            );
            json_reply(200, views::memory::alloc_tree(v.as_ref()))
        }
        ("POST", "command") => {
            let Ok(text) = std::str::from_utf8(&req.body) else {
                return error(400, "command is not UTF-8");
            };
            let cmd: Command = match text.parse() {
                Ok(c) => c,
                Err(e) => return error(400, e),
            };
            match ui.send(h, cmd) {
                Ok(()) => json_reply(200, json!({"sent": cmd.to_string()})),
                Err(e) => error(409, e),
            }
        }
        ("POST", "mark") => mark(ui, h, &req.body),
        ("POST", "stop") => match if lock(&h.data).attached_pid.is_some() {
            attach::stop(ui, h)
        } else {
            launch::stop(h)
        } {
            Ok(m) => json_reply(200, json!({"stopped": m})),
            Err(e) => error(409, e),
        },
        ("POST", "close") => match ui.close(h) {
            Ok(()) => json_reply(200, json!({"closed": h.id})),
            Err(e) => error(409, e),
        },
        ("GET", "pprof") => {
            let raw = match hprof_analysis::pprof::encode(&lock(&h.data)) {
                Ok(r) => r,
                Err(e) => return error(409, e),
            };
            match hprof_analysis::pprof::gzip(&raw) {
                Ok(gz) => Reply {
                    status: 200,
                    ctype: "application/octet-stream",
                    body: gz,
                    headers: vec![attachment(&format!("session-{}.pb.gz", h.id))],
                },
                Err(e) => error(500, e),
            }
        }
        ("GET", "flame.svg") => {
            let q = cpu_q();
            let mut title = format!("CPU samples of session {}", h.id);
            if !q.filter.is_empty() {
                title += &format!(", methods {}", p("filter"));
            }
            if !q.threads.is_empty() {
                title += &format!(", threads {:?}", q.threads);
            }
            let Some(svg) = lock(&h.data).cpu_svg(&q, &title) else {
                return error(409, "no CPU SAMPLES in this session yet");
            };
            // `view=1`: shown in the page's frame, its script allowed by
            // its hash; otherwise the download.
            let headers = if p("view") == "1" {
                flame_view_headers()
            } else {
                vec![attachment(&format!("session-{}-flame.svg", h.id))]
            };
            Reply {
                status: 200,
                ctype: "image/svg+xml",
                body: svg.into_bytes(),
                headers,
            }
        }
        _ => error(404, "no such view"),
    }
}

/// Begin/end marks: on a session that takes commands the agent is asked
/// for a fresh ALLOC SITES report (cutoff 0, every site) and that report
/// becomes the mark; otherwise the latest report does.
fn mark(ui: &Ui, h: &super::Shared, body: &[u8]) -> Reply {
    let which = match body {
        b"begin" => Which::Begin,
        b"end" => Which::End,
        b"clear" => {
            let mut g = lock(&h.data);
            g.marks.clear();
            g.version += 1;
            g.log("marks cleared".into());
            return json_reply(
                200,
                json!({"marks": views::memory::marks(&g.marks.summary())}),
            );
        }
        _ => return error(400, "mark: begin, end or clear"),
    };
    if which == Which::End && lock(&h.data).marks.begin.is_none() {
        return error(409, "no begin mark yet");
    }
    if ui.takes_commands(h) {
        // Set the mark before sending: the report may arrive at once.
        if let Err(e) = lock(&h.data).mark(which, true) {
            return error(409, e);
        }
        let cmd = Command::AllocSites {
            flags: 0,
            cutoff: 0.0,
        };
        if let Err(e) = ui.send(h, cmd) {
            lock(&h.data).marks.pending = None;
            return error(409, e);
        }
    } else {
        // Each lock() is its own statement: the guard is dropped before the
        // next one (a second lock of the same mutex in one expression
        // would wait for itself).
        let marked = lock(&h.data).mark(which, false);
        if let Err(e) = marked {
            return error(409, e);
        }
    }
    let g = lock(&h.data);
    json_reply(
        200,
        json!({"marks": views::memory::marks(&g.marks.summary())}),
    )
}

/// Headers of the flame graph shown in the page: the document's own script
/// (zoom and search, `hprof_analysis::flame::svg::SCRIPT`) allowed by its
/// SHA-256, nothing else runs or loads, and only the page may frame it.
fn flame_view_headers() -> Vec<(&'static str, String)> {
    static CSP: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let csp = CSP.get_or_init(|| {
        use base64::Engine;
        use sha2::Digest;
        let digest = sha2::Sha256::digest(hprof_analysis::flame::svg::SCRIPT.as_bytes());
        format!(
            "default-src 'none'; script-src 'sha256-{}'; frame-ancestors 'self'",
            base64::engine::general_purpose::STANDARD.encode(digest)
        )
    });
    vec![
        ("Content-Security-Policy", csp.clone()),
        ("X-Frame-Options", "SAMEORIGIN".to_string()),
    ]
}
