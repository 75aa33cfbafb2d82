//! The heap analyser's answers (`hprof_analysis::heap`'s plain types) as
//! JSON: one mapping for `hprof-rs heap --json` and the page's
//! `/api/session/ID/heap/QUERY` (docs/heap-analyser.md). Object IDs are
//! written as in the dump, `"0x…"`.

use hprof_analysis::heap::DiffRow;
use hprof_analysis::heap::{
    ClassRow, Dominated, Field, Frame, GcPath, Heap, Instances, Link, ObjectInfo, ObjectRow, Site,
    SiteObjects, Suspects,
};
use hprof_core::vocab::Value;
use serde_json::{json, Value as Json};

pub fn hex(id: u64) -> String {
    format!("0x{id:x}")
}

/// A reference: `null` for 0.
pub fn id_or_null(id: u64) -> Json {
    if id == 0 {
        Json::Null
    } else {
        Json::String(hex(id))
    }
}

/// `classes`: the dump's totals and its rows.
pub fn classes(heap: &Heap, rows: &[ClassRow]) -> Json {
    json!({
        "objects": heap.meta().objects,
        "shallow": heap.meta().total_shallow,
        "size_model": heap.meta().model.describe(),
        "classes": rows.iter().map(|r| json!({
            "class": r.class, "id": hex(r.id), "instances": r.instances,
            "shallow": r.shallow, "retained": r.retained, "loader": id_or_null(r.loader),
        })).collect::<Vec<_>>(),
    })
}

pub fn instances(r: &Instances) -> Json {
    json!({"class": r.class, "total": r.total, "objects": rows(&r.objects)})
}

/// `dominators` (the top of the tree, `id` null) and `dominated ID`.
pub fn dominated(d: &Dominated) -> Json {
    json!({
        "id": d.id.map(hex), "retained": d.retained, "total": d.total,
        "objects": rows(&d.objects),
    })
}

fn site(s: &Site) -> Json {
    json!({
        "trace": s.trace, "frames": frames(&s.frames), "instances": s.instances,
        "shallow": s.shallow, "retained": s.retained,
    })
}

pub fn sites(sites: &[Site]) -> Json {
    json!({"sites": sites.iter().map(site).collect::<Vec<_>>()})
}

/// `site TRACE`: the site and (a page of) its objects.
pub fn site_objects(s: &SiteObjects) -> Json {
    json!({"site": site(&s.site), "by_retained": s.by_retained, "objects": rows(&s.objects)})
}

pub fn diff(rows: &[DiffRow]) -> Json {
    json!({"classes": rows.iter().map(|r| json!({
        "class": r.class, "instances": r.instances, "shallow": r.shallow, "retained": r.retained,
    })).collect::<Vec<_>>()})
}

pub fn suspects(s: &Suspects) -> Json {
    json!({
        "total": s.total,
        "threshold": s.threshold,
        "suspects": s.objects.iter().map(|o| with_describes(json!({
            "id": hex(o.object.id), "class": o.object.class, "shallow": o.object.shallow,
            "retained": o.object.retained, "share": o.share,
            "accumulation": row(&o.accumulation),
            "path": o.path.as_ref().map(path),
        }), &o.object.describes)).collect::<Vec<_>>(),
        "classes": s.classes.iter().map(|c| json!({
            "class": c.class, "instances": c.instances, "retained": c.retained, "share": c.share,
        })).collect::<Vec<_>>(),
    })
}

pub fn row(r: &ObjectRow) -> Json {
    let j =
        json!({"id": hex(r.id), "class": r.class, "shallow": r.shallow, "retained": r.retained});
    with_describes(j, &r.describes)
}

/// `describes` (the class a class object stands for) only where it is one.
fn with_describes(mut j: Json, describes: &Option<String>) -> Json {
    if let (Some(d), Some(o)) = (describes, j.as_object_mut()) {
        o.insert("describes".into(), json!(d));
    }
    j
}

pub fn rows(rows: &[ObjectRow]) -> Vec<Json> {
    rows.iter().map(row).collect()
}

pub fn value(v: &Value) -> Json {
    match *v {
        Value::Object(id) => id_or_null(id),
        Value::Boolean(b) => json!(b),
        Value::Char(c) => json!(String::from_utf16_lossy(&[c])),
        Value::Float(f) => finite(f64::from(f)),
        Value::Double(d) => finite(d),
        other => json!(other.as_i64()),
    }
}

fn finite(x: f64) -> Json {
    if x.is_finite() {
        json!(x)
    } else {
        json!(x.to_string())
    }
}

fn fields(fs: &[Field]) -> Vec<Json> {
    fs.iter()
        .map(|f| json!({"name": f.name, "type": f.ty.java_name(), "value": value(&f.value)}))
        .collect()
}

fn links(ls: &[Link], referrers: bool) -> Vec<Json> {
    ls.iter()
        .map(|l| {
            let j = if referrers {
                json!({"id": hex(l.id), "class": l.class, "field": l.field})
            } else {
                json!({"field": l.field, "id": hex(l.id), "class": l.class})
            };
            with_describes(j, &l.describes)
        })
        .collect()
}

pub fn frames(fs: &[Frame]) -> Vec<Json> {
    fs.iter()
        .map(|f| {
            json!({"class": f.class, "method": f.method, "signature": f.signature,
                   "source": f.source, "line": f.line})
        })
        .collect()
}

pub fn object(r: &ObjectInfo) -> Json {
    let mut j = json!({
        "id": hex(r.id),
        "class": r.class,
        "class_id": id_or_null(r.class_id),
        "kind": r.kind,
        "shallow": r.shallow,
        "retained": r.retained,
        "dominator": r.dominator.map(hex),
        "gc_roots": r.gc_roots,
        "fields": fields(&r.fields),
        "references": links(&r.references, false),
        "references_total": r.references_total,
        "referrers": links(&r.referrers, true),
        "referrers_total": r.referrers_total,
        "trace": r.trace.as_ref().map(|f| frames(f)),
        "trace_serial": r.trace_serial,
    });
    let o = j.as_object_mut().expect("an object");
    if let Some(s) = &r.statics {
        o.insert("statics".into(), json!(fields(s)));
    }
    if let Some(s) = &r.superclasses {
        o.insert(
            "superclasses".into(),
            json!(s
                .iter()
                .map(|c| json!({"id": hex(c.id), "class": c.class}))
                .collect::<Vec<_>>()),
        );
    }
    if let Some(t) = &r.text {
        o.insert("text".into(), json!(t));
    }
    if let Some(n) = r.length {
        o.insert("length".into(), json!(n));
    }
    if let Some(e) = &r.elements {
        o.insert(
            "elements".into(),
            json!(e.iter().map(value).collect::<Vec<_>>()),
        );
    }
    with_describes(j, &r.describes)
}

pub fn path(p: &GcPath) -> Json {
    json!({
        "root_kind": p.root_kind,
        "path": p.path.iter().map(|s| with_describes(json!({"id": hex(s.id), "class": s.class, "field": s.field}), &s.describes)).collect::<Vec<_>>(),
    })
}
