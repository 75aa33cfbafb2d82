//! The heap analyser behind the Heap tab: `GET /api/session/ID/heap/QUERY`
//! (docs/ui.md, "Heap analyser"). The index of one dump of a session is
//! built once, in the background, from the file the session reads (a file
//! given on the command line: saved beside it as `hprof-rs heap` does) or
//! from the session's recording (an upload, an agent's or a launched
//! program's stream: indexed without saving, the recording being an
//! unlinked file). Until it is ready every query answers 202 with the
//! build's progress; then the answers are `heap_json`'s, the mapping the
//! command line's `--json` uses.
//!
//! Bounded: at most [`PER_SESSION`] indexes per session (the oldest goes),
//! one build at a time in the whole UI (the others wait their turn), list
//! lengths capped as every other route's.

use super::heap_json as hj;
use super::http::Request;
use super::sessions::{Recording, MAX_RECORDING};
use super::{lock, Shared, Ui};
use hprof_analysis::heap::{self, CacheMode, ClassOrder, Heap, Progress, QueryError};
use serde_json::{json, Value};
use std::io::Read;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Indexes kept per session; asking for another drops the oldest.
pub const PER_SESSION: usize = 2;
/// Rows per answer.
const MAX_LIMIT: u64 = 10_000;
/// References and referrers listed for one object.
const MAX_LINKS: u64 = 1_000;

/// One build at a time: an index build takes memory in proportion to
/// the dump's objects, and two at once would double the peak.
static BUILDING: Mutex<()> = Mutex::new(());

/// The indexes of one session's dumps.
#[derive(Default)]
pub struct Indexes {
    /// (dump number, its build), oldest first.
    jobs: Vec<(u32, Arc<Job>)>,
}

/// One index: its build's progress, then the heap or why not.
pub struct Job {
    stage: Mutex<String>,
    total: AtomicU64,
    done: AtomicU64,
    result: OnceLock<Result<Arc<Heap>, String>>,
    /// The session's complete dumps when the build began: a failed build
    /// is tried again only once the stream brought another dump.
    dumps_seen: u32,
}

impl Progress for Job {
    fn stage(&self, name: &str, total: u64) {
        *lock(&self.stage) = name.to_string();
        self.total.store(total, Ordering::Relaxed);
        self.done.store(0, Ordering::Relaxed);
    }

    fn advance(&self, done: u64) {
        let total = self.total.load(Ordering::Relaxed);
        self.done.store(done.min(total), Ordering::Relaxed);
    }
}

impl Job {
    fn new(dumps_seen: u32) -> Job {
        Job {
            dumps_seen,
            stage: Mutex::new("starting".into()),
            total: AtomicU64::new(0),
            done: AtomicU64::new(0),
            result: OnceLock::new(),
        }
    }

    /// The page's view of the build.
    fn status(&self, dump: u32) -> Value {
        match self.result.get() {
            None => json!({
                "state": "building", "dump": dump, "stage": *lock(&self.stage),
                "done": self.done.load(Ordering::Relaxed),
                "total": self.total.load(Ordering::Relaxed),
            }),
            Some(Err(e)) => json!({"state": "failed", "dump": dump, "error": e}),
            Some(Ok(h)) => {
                let m = h.meta();
                json!({
                    "state": "ready", "dump": dump, "objects": m.objects,
                    "references": m.references, "shallow": m.total_shallow,
                    "classes": m.classes.len(), "size_model": m.model.describe(),
                    "warnings": m.warnings, "sites": !m.sites.is_empty(),
                })
            }
        }
    }
}

/// The file to index: its path, whether an index may be saved beside it,
/// and what must stay open while it is read.
struct Source {
    path: PathBuf,
    mode: CacheMode,
    _keep: Option<Arc<Recording>>,
}

/// A file session reads its file; other sessions their recording: once
/// the stream ended, the recording itself; while it is live, a copy of
/// what was read to the end of its last complete record (a record being
/// received would read as a cut-short file).
fn source(h: &Shared) -> Result<Source, String> {
    if let Some(p) = &h.path {
        return Ok(Source {
            path: p.clone(),
            mode: CacheMode::Save,
            _keep: None,
        });
    }
    let rec = h
        .recording()
        .ok_or("this session's stream was not recorded: no dump to index")?;
    if rec.stopped() {
        return Err("the recording of this stream stopped (size limit or full disk): its dumps cannot be indexed".into());
    }
    let (live, read) = {
        let g = lock(&h.data);
        (g.state == hprof_analysis::session::State::Live, g.bytes)
    };
    let rec = if live {
        let mut magic = [0u8; 2];
        let gzip =
            rec.reader().read_exact(&mut magic).is_ok() && magic == hprof_core::reader::GZIP_MAGIC;
        if gzip {
            return Err("a gzip stream is indexed once it has ended".into());
        }
        let copy = Arc::new(
            Recording::create(MAX_RECORDING).map_err(|e| format!("cannot copy the stream: {e}"))?,
        );
        let mut r = rec.reader().take(read);
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = r
                .read(&mut buf)
                .map_err(|e| format!("cannot copy the stream: {e}"))?;
            if n == 0 {
                break;
            }
            copy.append(&buf[..n]);
        }
        if copy.stopped() || copy.len() != read {
            return Err("cannot copy the stream (full disk?)".into());
        }
        copy
    } else {
        rec
    };
    Ok(Source {
        path: rec.proc_path(),
        mode: CacheMode::NoCache,
        _keep: Some(rec),
    })
}

/// The build of dump `dump` of the session, started if there is none.
fn job(h: &Shared, dump: u32) -> Arc<Job> {
    let dumps_seen = lock(&h.data).heap.complete;
    let mut ix = lock(&h.analyser);
    if let Some((_, j)) = ix.jobs.iter().find(|(d, _)| *d == dump) {
        if !matches!(j.result.get(), Some(Err(_))) || j.dumps_seen == dumps_seen {
            return j.clone();
        }
    }
    ix.jobs.retain(|(d, _)| *d != dump);
    if ix.jobs.len() >= PER_SESSION {
        ix.jobs.remove(0);
    }
    let j = Arc::new(Job::new(dumps_seen));
    ix.jobs.push((dump, j.clone()));
    drop(ix);
    let (job, h) = (j.clone(), h.clone());
    let started = std::thread::Builder::new()
        .name("ui-heap-index".into())
        .spawn(move || {
            let r = build(&h, dump, &job);
            let _ = job.result.set(r.map(Arc::new));
            lock(&h.data).version += 1;
        });
    if let Err(e) = started {
        let _ = j
            .result
            .set(Err(format!("cannot start the index build: {e}")));
    }
    j
}

fn build(h: &Shared, dump: u32, job: &Job) -> Result<Heap, String> {
    let src = source(h)?;
    let _turn = match BUILDING.try_lock() {
        Ok(g) => g,
        Err(_) => {
            job.stage("waiting for another index to be built", 0);
            lock(&BUILDING)
        }
    };
    let (ix, _) = heap::open(&src.path, dump, src.mode, job)?;
    let heap = Heap::new(ix, &src.path).map_err(|e| format!("cannot open the dump: {e}"))?;
    // The copy or recording stays open as long as the heap reads it: the
    // heap holds its own descriptor of the file.
    Ok(heap)
}

/// Which dump: `dump=N`, else the session's latest complete one, else 1.
fn dump_number(h: &Shared, req: &Request) -> Result<u32, String> {
    dump_number_of(h, req.param("dump"))
}

fn dump_number_of(h: &Shared, given: Option<&str>) -> Result<u32, String> {
    match given.filter(|d| !d.is_empty()) {
        Some(d) => d
            .parse::<u32>()
            .ok()
            .filter(|&n| n >= 1)
            .ok_or_else(|| format!("dump={d}: a dump number from 1")),
        None => Ok(lock(&h.data).heap.last().map_or(1, |d| d.number)),
    }
}

/// The index of dump `dump` of a session once it is built, else the
/// answer to give meanwhile (202 with the progress, 422 with the error).
fn ready(h: &Shared, dump: u32) -> Result<(Arc<Job>, Arc<Heap>), (u16, Value)> {
    let j = job(h, dump);
    let heap = match j.result.get() {
        Some(Ok(heap)) => heap.clone(),
        Some(Err(e)) => {
            return Err((
                422,
                json!({"error": e, "state": "failed", "dump": dump, "session": h.id}),
            ))
        }
        None => {
            let mut v = j.status(dump);
            v["session"] = json!(h.id);
            return Err((202, v));
        }
    };
    Ok((j, heap))
}

/// Status and body of a `heap/QUERY` request.
pub fn answer(ui: &Ui, h: &Shared, req: &Request, query: &str) -> (u16, Value) {
    let dump = match dump_number(h, req) {
        Ok(d) => d,
        Err(e) => return (400, json!({"error": e})),
    };
    if !matches!(
        query,
        "status"
            | "classes"
            | "instances"
            | "object"
            | "path"
            | "dominated"
            | "sites"
            | "site"
            | "suspects"
            | "diff"
    ) {
        return (404, json!({"error": format!("no heap query {query}")}));
    }
    // The other dump of a diff: a dump of any session (this one by
    // default), named by `other` (a session) and `other_dump`.
    let other = if query == "diff" {
        let o = match req.param("other") {
            None | Some("") => Some(h.clone()),
            Some(id) => ui.session(id),
        };
        let Some(o) = o else {
            return (404, json!({"error": "other: no such session"}));
        };
        let od = match dump_number_of(&o, req.param("other_dump")) {
            Ok(d) => d,
            Err(e) => return (400, json!({"error": format!("other_{e}")})),
        };
        Some((o, od))
    } else {
        None
    };
    let (j, heap) = match ready(h, dump) {
        Ok(r) => r,
        Err(reply) => return reply,
    };
    if query == "status" {
        return (200, j.status(dump));
    }
    let result = match &other {
        Some((o, od)) => match ready(o, *od) {
            Ok((_, them)) => diff(&heap, &them, req, o, *od),
            Err(reply) => return reply,
        },
        None => run(&heap, req, query),
    };
    match result {
        Ok(mut v) => {
            v["dump"] = json!(dump);
            (200, v)
        }
        Err(QueryError::NotFound(e)) => (404, json!({"error": e})),
        Err(QueryError::NoAnswer(e)) => (409, json!({"error": e})),
        Err(QueryError::Io(e)) => (500, json!({"error": e.to_string()})),
    }
}

fn num(req: &Request, k: &str, d: u64, max: u64) -> u64 {
    req.param(k)
        .and_then(|v| v.parse().ok())
        .unwrap_or(d)
        .min(max)
}

fn id(req: &Request) -> Result<u64, QueryError> {
    let s = req.param("id").unwrap_or("");
    heap::parse_id(s).ok_or_else(|| {
        QueryError::NotFound(format!(
            "not an object ID: {s:?} (write it as in the dump, 0x…)"
        ))
    })
}

fn run(heap: &Heap, req: &Request, query: &str) -> Result<Value, QueryError> {
    let offset = num(req, "offset", 0, u64::MAX);
    let limit = num(req, "limit", 100, MAX_LIMIT);
    Ok(match query {
        "classes" => {
            let order = match req.param("sort").unwrap_or("retained") {
                "shallow" => ClassOrder::Shallow,
                "instances" => ClassOrder::Instances,
                "name" => ClassOrder::Name,
                _ => ClassOrder::Retained,
            };
            let filter = req.param("filter").unwrap_or("");
            let all: Vec<_> = heap
                .classes(order)
                .into_iter()
                .filter(|r| filter.is_empty() || r.class.contains(filter))
                .collect();
            let total = all.len();
            let page: Vec<_> = all
                .into_iter()
                .skip(offset as usize)
                .take(limit as usize)
                .collect();
            let mut v = hj::classes(heap, &page);
            v["total"] = json!(total);
            v["offset"] = json!(offset);
            v
        }
        "instances" => {
            let mut v =
                hj::instances(&heap.instances(req.param("class").unwrap_or(""), offset, limit)?);
            v["offset"] = json!(offset);
            v
        }
        "object" => hj::object(&heap.object(id(req)?, num(req, "limit", 100, MAX_LINKS))?),
        "path" => hj::path(&heap.path(id(req)?, req.param("exclude_weak") == Some("1"))?),
        "dominated" => {
            let who = match req.param("id") {
                None | Some("") => None,
                Some(_) => Some(id(req)?),
            };
            let mut v = hj::dominated(&heap.dominated(who, offset, limit)?);
            v["offset"] = json!(offset);
            v
        }
        "sites" => {
            let mut s = heap.sites()?;
            s.truncate(limit as usize);
            hj::sites(&s)
        }
        "site" => {
            let trace = req
                .param("trace")
                .and_then(|t| t.parse::<u32>().ok())
                .ok_or_else(|| QueryError::NotFound("trace=N: a trace serial".into()))?;
            let mut v = hj::site_objects(&heap.site_objects(trace, offset, limit)?);
            v["offset"] = json!(offset);
            v
        }
        "suspects" => {
            let pct = req
                .param("threshold")
                .and_then(|t| t.parse::<f64>().ok())
                .filter(|t| t.is_finite() && *t > 0.0 && *t <= 100.0)
                .unwrap_or(10.0);
            hj::suspects(&heap.suspects(pct / 100.0)?)
        }
        _ => unreachable!("checked in answer"),
    })
}

/// `diff`: per class, the other dump minus this one; sorted by the size of
/// the change in `sort` (retained, shallow, instances) or by name.
fn diff(
    heap: &Heap,
    them: &Heap,
    req: &Request,
    other: &Shared,
    other_dump: u32,
) -> Result<Value, QueryError> {
    let offset = num(req, "offset", 0, u64::MAX);
    let limit = num(req, "limit", 100, MAX_LIMIT);
    let mut rows = heap.diff(them);
    let sort = req.param("sort").unwrap_or("retained");
    let key = |r: &heap::DiffRow| match sort {
        "shallow" => r.shallow.unsigned_abs(),
        "instances" => r.instances.unsigned_abs(),
        "name" => 0,
        _ => r.retained.unsigned_abs(),
    };
    rows.sort_by(|a, b| key(b).cmp(&key(a)).then_with(|| a.class.cmp(&b.class)));
    let filter = req.param("filter").unwrap_or("");
    rows.retain(|r| filter.is_empty() || r.class.contains(filter));
    let total = rows.len();
    let page: Vec<_> = rows
        .into_iter()
        .skip(offset.min(usize::MAX as u64) as usize)
        .take(limit as usize)
        .collect();
    let mut v = hj::diff(&page);
    v["total"] = json!(total);
    v["offset"] = json!(offset);
    v["other"] = json!({"session": other.id, "dump": other_dump});
    Ok(v)
}
