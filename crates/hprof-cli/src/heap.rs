//! `hprof-rs heap FILE QUERY`: the heap analyser's answers (see
//! docs/heap-analyser.md) as readable text, or with `--json` as one JSON
//! document on stdout. The answers are `analysis::heap`'s plain types;
//! this module only renders them.

use std::io::IsTerminal;
use std::path::Path;
use std::time::Instant;

use hprof_ui::heap_json::{self as hj, hex};

use super::CliResult;
use crate::analysis::heap::{
    self as analysis, CacheMode, ClassOrder, Frame, GcPath, Heap, ObjectRow, Progress,
};
use crate::vocab::Value;

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Sort {
    Retained,
    Shallow,
    Instances,
    Name,
}

#[derive(Debug, clap::Subcommand)]
pub enum Query {
    /// Every class, also those without instances: instances, shallow and
    /// retained bytes, class loader.
    Classes {
        #[arg(long, value_enum, default_value = "retained")]
        sort: Sort,
        /// Only the first N rows.
        #[arg(long, value_name = "N")]
        top: Option<usize>,
    },
    /// A class's objects, biggest retained first.
    Instances {
        /// Class name (`java.lang.String`, `int[]`, `java/lang/String`) or class object ID.
        class: String,
        #[arg(long, default_value_t = 0)]
        offset: u64,
        #[arg(long, default_value_t = 25)]
        limit: u64,
    },
    /// One object: fields, statics, text, elements, references, referrers,
    /// allocation trace.
    Object {
        /// Object ID as in the dump (`0x…`).
        #[arg(value_parser = object_id)]
        id: u64,
        /// Most references and referrers listed.
        #[arg(long, default_value_t = 100)]
        limit: u64,
    },
    /// The shortest path from a GC root to an object.
    Path {
        #[arg(value_parser = object_id)]
        id: u64,
        /// No step through the referent of a weak, soft, final or phantom reference.
        #[arg(long)]
        exclude_weak: bool,
    },
    /// The biggest retainers: the top of the dominator tree.
    Dominators {
        #[arg(long, default_value_t = 25)]
        top: u64,
    },
    /// An object's children in the dominator tree, biggest first.
    Dominated {
        #[arg(value_parser = object_id)]
        id: u64,
        #[arg(long, default_value_t = 0)]
        offset: u64,
        #[arg(long, default_value_t = 25)]
        limit: u64,
    },
    /// Retained and shallow bytes per allocation site (dumps whose objects
    /// carry allocation traces: the agent's heap=all).
    Sites {
        #[arg(long, value_name = "N")]
        top: Option<usize>,
    },
    /// The objects allocated at one site (a trace serial of `sites`),
    /// biggest retained first.
    Site {
        trace: u32,
        #[arg(long, default_value_t = 0)]
        offset: u64,
        #[arg(long, default_value_t = 25)]
        limit: u64,
    },
    /// Per class, the change in instances, shallow and retained bytes from
    /// this dump to OTHER.
    Diff {
        other: String,
        /// Which dump of OTHER (default: the first).
        #[arg(long, value_name = "N", default_value_t = 1)]
        other_dump: u32,
        #[arg(long, value_name = "N")]
        top: Option<usize>,
    },
    /// Leak suspects: objects (and classes) retaining a large share of the
    /// heap, where their bytes accumulate, and what keeps them alive.
    Suspects {
        /// Smallest share of the heap, in percent.
        #[arg(long, default_value_t = 10.0, value_parser = percent)]
        threshold: f64,
    },
}

pub struct HeapArgs {
    pub file: String,
    pub dump: u32,
    pub json: bool,
    pub no_cache: bool,
    pub query: Query,
}

/// Draws the build's phases on stderr when it is a terminal; with
/// `HPROF_RS_HEAP_PHASES=1` in the environment, logs each phase's start
/// time and the process's memory (for bench/heap_analyser.py).
struct Bar {
    on: bool,
    log: bool,
    started: Instant,
    state: std::cell::RefCell<(String, u64, u64)>,
}

/// VmRSS and VmHWM of this process, in MiB.
fn rss_mib() -> (u64, u64) {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = |k: &str| {
        s.lines()
            .find_map(|l| l.strip_prefix(k))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or(0)
    };
    (kb("VmRSS:") >> 10, kb("VmHWM:") >> 10)
}

/// CPU seconds this process used so far (user + system).
fn cpu_seconds() -> f64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may hold spaces): state is 3rd.
    let rest = s.rsplit_once(')').map_or("", |p| p.1);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

impl Bar {
    fn new() -> Bar {
        let log = std::env::var_os("HPROF_RS_HEAP_PHASES").is_some_and(|v| v == "1");
        Bar {
            on: std::io::stderr().is_terminal() && !log && !hprof_analysis::progress::quiet(),
            log,
            started: Instant::now(),
            state: Default::default(),
        }
    }

    fn done(&self) {
        if self.log {
            self.stage("done", 0);
        }
        if self.on && !self.state.borrow().0.is_empty() {
            eprintln!();
        }
    }
}

impl Progress for Bar {
    fn stage(&self, name: &str, total: u64) {
        if self.log {
            let (rss, peak) = rss_mib();
            eprintln!(
                "hprof-rs heap: phase {:.3} s cpu {:.2} s {name} (rss {rss} MiB, peak {peak} MiB)",
                self.started.elapsed().as_secs_f64(),
                cpu_seconds()
            );
        }
        if !self.on {
            return;
        }
        let mut s = self.state.borrow_mut();
        if !s.0.is_empty() {
            eprintln!();
        }
        *s = (name.to_string(), total, 0);
        eprint!(
            "\rhprof-rs heap: {name} ({:.1} s)",
            self.started.elapsed().as_secs_f64()
        );
    }

    fn advance(&self, done: u64) {
        if !self.on {
            return;
        }
        let s = self.state.borrow();
        if let Some(pct) = (done.min(s.1) * 100).checked_div(s.1) {
            eprint!(
                "\rhprof-rs heap: {} {pct:3}% ({:.1} s)",
                s.0,
                self.started.elapsed().as_secs_f64()
            );
        }
    }
}

fn open(file: &str, dump: u32, no_cache: bool) -> CliResult<Heap> {
    if file == "-" {
        return Err(
            "hprof-rs heap needs a file, not standard input: it reads the dump more \
                    than once (an index is built, then objects are read where they lie); save \
                    the stream to a file first"
                .into(),
        );
    }
    let bar = Bar::new();
    let mode = if no_cache {
        CacheMode::NoCache
    } else {
        CacheMode::Save
    };
    let (ix, how) = analysis::open(Path::new(file), dump.max(1), mode, &bar)?;
    bar.done();
    if how.built {
        let where_ = match &how.path {
            Some(p) => format!(
                "saved as {}",
                crate::terminal::safe(&p.display().to_string())
            ),
            None => "not saved".into(),
        };
        eprintln!(
            "hprof-rs heap: indexed {} objects, {} references in {:.1} s; index {where_}",
            ix.meta.objects,
            ix.meta.references,
            bar.started.elapsed().as_secs_f64()
        );
    }
    if let Some(n) = how.note {
        eprintln!("hprof-rs heap: {}", crate::terminal::safe(&n));
    }
    Heap::new(ix, Path::new(file)).map_err(|e| format!("cannot open {file}: {e}"))
}

/// Runs one query; the text or JSON to print.
pub fn run(a: HeapArgs) -> CliResult<String> {
    let heap = open(&a.file, a.dump, a.no_cache)?;
    for w in &heap.meta().warnings {
        eprintln!(
            "hprof-rs heap: {}: {}",
            crate::terminal::safe(&a.file),
            crate::terminal::safe(w)
        );
    }
    let e = |e: analysis::QueryError| e.to_string();
    let (text, doc) = match a.query {
        Query::Classes { sort, top } => {
            let order = match sort {
                Sort::Retained => ClassOrder::Retained,
                Sort::Shallow => ClassOrder::Shallow,
                Sort::Instances => ClassOrder::Instances,
                Sort::Name => ClassOrder::Name,
            };
            let mut rows = heap.classes(order);
            rows.truncate(top.unwrap_or(usize::MAX));
            let mut t = format!(
                "{:>12} {:>14} {:>14}  class (id, loader)\n",
                "instances", "shallow", "retained"
            );
            for r in &rows {
                t.push_str(&format!(
                    "{:>12} {:>14} {:>14}  {} ({}, loader {})\n",
                    r.instances,
                    r.shallow,
                    r.retained,
                    r.class,
                    hex(r.id),
                    hex(r.loader)
                ));
            }
            t.push_str(&summary(&heap));
            (t, hj::classes(&heap, &rows))
        }
        Query::Instances {
            class,
            offset,
            limit,
        } => {
            let r = heap.instances(&class, offset, limit).map_err(e)?;
            let mut t = format!(
                "{} objects of {}, biggest retained first (from {offset}):\n",
                r.total, r.class
            );
            t.push_str(&rows_text(&r.objects));
            (t, hj::instances(&r))
        }
        Query::Object { id, limit } => {
            let r = heap.object(id, limit).map_err(e)?;
            (object_text(&r), hj::object(&r))
        }
        Query::Path { id, exclude_weak } => {
            let p = heap.path(id, exclude_weak).map_err(e)?;
            (path_text(&p), hj::path(&p))
        }
        Query::Dominators { top } => {
            let d = heap.dominated(None, 0, top).map_err(e)?;
            let mut t = format!(
                "The biggest retainers ({} objects at the top of the dominator tree; {} bytes in all):\n",
                d.total, d.retained
            );
            t.push_str(&rows_text(&d.objects));
            (t, hj::dominated(&d))
        }
        Query::Dominated { id, offset, limit } => {
            let d = heap.dominated(Some(id), offset, limit).map_err(e)?;
            let mut t = format!(
                "{} retains {} bytes; it dominates {} objects directly, biggest first (from {offset}):\n",
                hex(d.id.unwrap_or(0)),
                d.retained,
                d.total
            );
            t.push_str(&rows_text(&d.objects));
            (t, hj::dominated(&d))
        }
        Query::Sites { top } => {
            let mut sites = heap.sites().map_err(e)?;
            sites.truncate(top.unwrap_or(usize::MAX));
            let mut t = format!(
                "{:>12} {:>14} {:>14}  trace\n",
                "instances", "shallow", "retained"
            );
            for s in &sites {
                t.push_str(&format!(
                    "{:>12} {:>14} {:>14}  {}\n",
                    s.instances, s.shallow, s.retained, s.trace
                ));
                for f in &s.frames {
                    t.push_str(&format!("{:>44}  {}\n", "", frame_text(f)));
                }
            }
            (t, hj::sites(&sites))
        }
        Query::Site {
            trace,
            offset,
            limit,
        } => {
            let r = heap.site_objects(trace, offset, limit).map_err(e)?;
            let s = &r.site;
            let mut t = format!(
                "{} objects ({} shallow, {} retained bytes) allocated at trace {trace}:\n",
                s.instances, s.shallow, s.retained
            );
            for f in &s.frames {
                t.push_str(&format!("    {}\n", frame_text(f)));
            }
            t.push_str(&format!(
                "{} (from {offset}):\n",
                if r.by_retained {
                    "biggest retained first"
                } else {
                    "in the dump's order (too many to sort)"
                }
            ));
            t.push_str(&rows_text(&r.objects));
            (t, hj::site_objects(&r))
        }
        Query::Diff {
            other,
            other_dump,
            top,
        } => {
            let them = open(&other, other_dump, a.no_cache)?;
            let mut rows = heap.diff(&them);
            rows.truncate(top.unwrap_or(usize::MAX));
            let mut t = format!(
                "From {} to {other}:\n{:>12} {:>14} {:>14}  class\n",
                a.file, "instances", "shallow", "retained"
            );
            for r in &rows {
                t.push_str(&format!(
                    "{:>+12} {:>+14} {:>+14}  {}\n",
                    r.instances, r.shallow, r.retained, r.class
                ));
            }
            (t, hj::diff(&rows))
        }
        Query::Suspects { threshold } => {
            let s = heap.suspects(threshold / 100.0).map_err(e)?;
            let mut t = format!(
                "Leak suspects: objects and classes retaining at least {threshold}% of {} bytes\n",
                s.total
            );
            if s.objects.is_empty() && s.classes.is_empty() {
                t.push_str("none\n");
            }
            for o in &s.objects {
                t.push_str(&format!(
                    "\n{} {} retains {} bytes ({:.1}%)\n  accumulates in {} {} ({} bytes)\n",
                    hex(o.object.id),
                    shown(&o.object.class, &o.object.describes),
                    o.object.retained,
                    o.share * 100.0,
                    hex(o.accumulation.id),
                    shown(&o.accumulation.class, &o.accumulation.describes),
                    o.accumulation.retained
                ));
                if let Some(p) = &o.path {
                    t.push_str("  kept alive by:\n");
                    for line in path_text(p).lines() {
                        t.push_str(&format!("  {line}\n"));
                    }
                }
            }
            for c in &s.classes {
                t.push_str(&format!(
                    "\n{} instances of {} retain {} bytes ({:.1}%)\n",
                    c.instances,
                    c.class,
                    c.retained,
                    c.share * 100.0
                ));
            }
            (t, hj::suspects(&s))
        }
    };
    Ok(if a.json {
        let mut s = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?;
        s.push('\n');
        crate::terminal::json_safe(&s)
    } else {
        text
    })
}

/// An object ID argument (a usage error, found before the dump is read).
fn object_id(id: &str) -> Result<u64, String> {
    analysis::parse_id(id).ok_or_else(|| {
        "not an object ID: write it as the dump and this tool show it, e.g. 0x7f3a01c0 \
         (`hprof-rs heap FILE dominators` lists some)"
            .to_string()
    })
}

/// `--threshold`: a share of the heap in percent.
fn percent(s: &str) -> Result<f64, String> {
    s.parse::<f64>()
        .ok()
        .filter(|p| *p > 0.0 && *p <= 100.0)
        .ok_or_else(|| "a percentage above 0 and at most 100 is needed, e.g. 5".to_string())
}

fn summary(h: &Heap) -> String {
    let m = h.meta();
    format!(
        "{} objects, {} bytes, {} references; sizes: {} ({})\n",
        m.objects,
        m.total_shallow,
        m.references,
        m.model.describe(),
        m.model_reason
    )
}

fn rows_text(rows: &[ObjectRow]) -> String {
    let mut t = format!("{:>20} {:>12} {:>14}  class\n", "id", "shallow", "retained");
    for r in rows {
        t.push_str(&format!(
            "{:>20} {:>12} {:>14}  {}\n",
            hex(r.id),
            r.shallow,
            r.retained,
            shown(&r.class, &r.describes)
        ));
    }
    t
}

fn value_text(v: &Value) -> String {
    match *v {
        Value::Object(0) => "null".into(),
        Value::Object(id) => hex(id),
        Value::Boolean(b) => b.to_string(),
        Value::Char(c) => format!("'{}'", String::from_utf16_lossy(&[c])),
        Value::Float(f) => f.to_string(),
        Value::Double(d) => d.to_string(),
        other => other.as_i64().unwrap_or_default().to_string(),
    }
}

fn frame_text(f: &Frame) -> String {
    let line = match f.line {
        l if l > 0 => format!("{}:{l}", f.source),
        -2 => "compiled method".into(),
        -3 => "native method".into(),
        _ if !f.source.is_empty() => f.source.clone(),
        _ => "unknown source".into(),
    };
    format!("{}.{} ({line})", f.class, f.method)
}

/// An object's class as the text shows it: a class object as the class it
/// stands for (`class java.util.HashMap`), as MAT names them.
fn shown(class: &str, describes: &Option<String>) -> String {
    match describes {
        Some(d) => format!("class {d}"),
        None => class.to_string(),
    }
}

fn object_text(r: &analysis::ObjectInfo) -> String {
    let mut t = format!(
        "{} {} ({})\n  shallow {} bytes, retained {} bytes, dominator {}\n",
        hex(r.id),
        shown(&r.class, &r.describes),
        r.kind,
        r.shallow,
        r.retained,
        r.dominator.map_or("none (a GC root's own)".into(), hex)
    );
    if !r.gc_roots.is_empty() {
        t.push_str(&format!("  GC root: {}\n", r.gc_roots.join(", ")));
    }
    if let Some(s) = &r.superclasses {
        let names: Vec<&str> = s.iter().map(|c| c.class.as_str()).collect();
        t.push_str(&format!("  superclasses: {}\n", names.join(" < ")));
    }
    if let Some(text) = &r.text {
        t.push_str(&format!("  text: {text:?}\n"));
    }
    if let Some(n) = r.length {
        t.push_str(&format!("  length {n}"));
        if let Some(e) = &r.elements {
            let shown: Vec<String> = e.iter().map(value_text).collect();
            t.push_str(&format!(
                ": [{}{}]",
                shown.join(", "),
                if (n as usize) > e.len() { ", …" } else { "" }
            ));
        }
        t.push('\n');
    }
    for (title, fs) in [("fields", Some(&r.fields)), ("statics", r.statics.as_ref())] {
        if let Some(fs) = fs.filter(|f| !f.is_empty()) {
            t.push_str(&format!("  {title}:\n"));
            for f in fs {
                t.push_str(&format!(
                    "    {} {} = {}\n",
                    f.ty.java_name(),
                    f.name,
                    value_text(&f.value)
                ));
            }
        }
    }
    t.push_str(&format!("  references ({}):\n", r.references_total));
    for l in &r.references {
        let class = shown(&l.class, &l.describes);
        t.push_str(&format!("    {} -> {} {class}\n", l.field, hex(l.id)));
    }
    t.push_str(&format!("  referrers ({}):\n", r.referrers_total));
    for l in &r.referrers {
        let class = shown(&l.class, &l.describes);
        t.push_str(&format!("    {} {class} .{}\n", hex(l.id), l.field));
    }
    match &r.trace {
        Some(frames) => {
            t.push_str("  allocated at:\n");
            for f in frames {
                t.push_str(&format!("    {}\n", frame_text(f)));
            }
        }
        None => t.push_str("  allocation trace: none in this dump\n"),
    }
    t
}

fn path_text(p: &GcPath) -> String {
    let mut t = format!("GC root ({}):\n", p.root_kind);
    for (i, s) in p.path.iter().enumerate() {
        let via = s
            .field
            .as_ref()
            .map_or(String::new(), |f| format!(".{f} -> "));
        t.push_str(&format!(
            "{:indent$}{via}{} {}\n",
            "",
            hex(s.id),
            shown(&s.class, &s.describes),
            indent = 2 + 2 * i.min(20)
        ));
    }
    t
}
