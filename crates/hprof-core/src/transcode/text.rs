//! Binary HPROF records as text: each record or heap sub-record read by
//! `crate::reader` goes through a [`ProfileFormat`] (the text serializer,
//! `format=a`), so it reads exactly like the agent's own text output.
//! Used by the tool's `print` and by the agent, which streams the VM's own
//! heap dump through here when the output is text (docs/heap_dump.md): one
//! sub-record at a time, never the whole dump.
//!
//! A heap sub-record needs the names of what it refers to: UTF8 strings and
//! LOAD CLASS records ([`Symbols`]) and, to name reference fields, the
//! class layouts from CLASS DUMPs ([`ClassLayouts`]). HotSpot writes all of
//! these before the objects, so one pass is enough for its dumps; the
//! agent's own dumps write CLASS DUMPs last, which is why `print` collects
//! the layouts in a first pass.

use super::symbols::{class_signature, Symbols};
use crate::format::{self as fmt, ProfileFormat, Stamp};
use crate::reader::{self as rd, ClassLayouts, HeapSubRecord, RootKind};
use rustc_hash::FxHashMap;
use std::sync::Arc;

pub fn signature_of_serial(syms: &Symbols, serial: u32) -> String {
    syms.class_name(serial)
        .map(class_signature)
        .unwrap_or_else(|| "L<unknown>;".into())
}

pub fn trace(
    f: &mut dyn ProfileFormat,
    buf: &mut Vec<u8>,
    at: Stamp,
    syms: &Symbols,
    t: &rd::Trace,
) {
    struct Owned {
        id: u64,
        class: String,
        serial: u32,
        method: String,
        sig: String,
        source: Option<String>,
        line: i32,
    }
    let frames: Vec<Owned> = t
        .frame_ids
        .iter()
        .map(|&id| match syms.frames.get(&id) {
            Some(fr) => Owned {
                id,
                class: signature_of_serial(syms, fr.class_serial),
                serial: fr.class_serial,
                method: syms.string(fr.method_name_id).unwrap_or("").to_string(),
                sig: syms.string(fr.signature_id).unwrap_or("").to_string(),
                source: syms.string(fr.source_file_id).map(str::to_string),
                line: fr.line,
            },
            None => Owned {
                id,
                class: "L<unknown>;".into(),
                serial: 0,
                method: String::new(),
                sig: String::new(),
                source: None,
                line: -1,
            },
        })
        .collect();
    let info = fmt::TraceInfo {
        serial: t.serial,
        thread_serial: None,
        phase: Default::default(),
        frames: frames
            .iter()
            .map(|o| fmt::FrameInfo {
                frame_id: o.id,
                class_sig: &o.class,
                class_serial: o.serial,
                method_name: &o.method,
                method_sig: &o.sig,
                source_file: o.source.as_deref(),
                line: o.line,
            })
            .collect(),
    };
    f.traces(buf, at, std::slice::from_ref(&info));
}

/// (class signature, method name) of a trace's top frame.
fn top_frame(syms: &Symbols, serial: u32) -> Option<(String, String)> {
    let t = syms.traces.get(&serial)?;
    let fr = syms.frames.get(t.frame_ids.first()?)?;
    Some((
        signature_of_serial(syms, fr.class_serial),
        syms.string(fr.method_name_id).unwrap_or("").to_string(),
    ))
}

pub fn cpu(
    f: &mut dyn ProfileFormat,
    buf: &mut Vec<u8>,
    at: Stamp,
    syms: &Symbols,
    cs: &rd::CpuSamples,
) {
    let tops: Vec<Option<(String, String)>> = cs
        .entries
        .iter()
        .map(|e| top_frame(syms, e.trace_serial))
        .collect();
    let report = fmt::CpuReport {
        title: fmt::CpuTitle::Samples,
        cutoff: 0.0,
        total: u64::from(cs.total),
        rows: cs
            .entries
            .iter()
            .zip(&tops)
            .map(|(e, top)| fmt::CpuRow {
                trace_serial: e.trace_serial,
                hits: e.count,
                cost: u64::from(e.count),
                top_frame: top.as_ref().map(|(c, m)| fmt::MethodRef {
                    class_sig: c,
                    method_name: m,
                    method_sig: "",
                }),
            })
            .collect(),
    };
    f.cpu(buf, at, &report);
}

pub fn sites(
    f: &mut dyn ProfileFormat,
    buf: &mut Vec<u8>,
    at: Stamp,
    syms: &Symbols,
    s: &rd::AllocSites,
) {
    let sigs: Vec<String> = s
        .sites
        .iter()
        .map(|site| match rd::BasicType::from_code(site.array_type) {
            Some(t) if t != rd::BasicType::Object => {
                class_signature(&format!("{}[]", t.java_name()))
            }
            _ => signature_of_serial(syms, site.class_serial),
        })
        .collect();
    let report = fmt::SitesReport {
        flags: s.flags,
        cutoff: 0.0,
        totals: fmt::HeapTotals {
            live_bytes: s.total_live_bytes,
            live_instances: s.total_live_instances,
            alloc_bytes: s.total_bytes_allocated,
            alloc_instances: s.total_instances_allocated,
        },
        rows: s
            .sites
            .iter()
            .zip(&sigs)
            .map(|(site, sig)| fmt::SiteRow {
                class_sig: sig,
                class_serial: site.class_serial,
                trace_serial: site.trace_serial,
                live_bytes: site.live_bytes,
                live_instances: site.live_instances,
                alloc_bytes: site.bytes_allocated,
                alloc_instances: site.instances_allocated,
            })
            .collect(),
    };
    f.sites(buf, at, &report);
}

pub fn basic_type(t: rd::BasicType) -> fmt::BasicType {
    match t {
        rd::BasicType::Object => fmt::BasicType::Object,
        rd::BasicType::Boolean => fmt::BasicType::Boolean,
        rd::BasicType::Char => fmt::BasicType::Char,
        rd::BasicType::Float => fmt::BasicType::Float,
        rd::BasicType::Double => fmt::BasicType::Double,
        rd::BasicType::Byte => fmt::BasicType::Byte,
        rd::BasicType::Short => fmt::BasicType::Short,
        rd::BasicType::Int => fmt::BasicType::Int,
        rd::BasicType::Long => fmt::BasicType::Long,
    }
}

pub fn value(v: rd::Value) -> fmt::Value {
    match v {
        rd::Value::Object(x) => fmt::Value::Object(x),
        rd::Value::Boolean(x) => fmt::Value::Boolean(x),
        rd::Value::Char(x) => fmt::Value::Char(x),
        rd::Value::Float(x) => fmt::Value::Float(x),
        rd::Value::Double(x) => fmt::Value::Double(x),
        rd::Value::Byte(x) => fmt::Value::Byte(x),
        rd::Value::Short(x) => fmt::Value::Short(x),
        rd::Value::Int(x) => fmt::Value::Int(x),
        rd::Value::Long(x) => fmt::Value::Long(x),
    }
}

/// What [`heap_sub`] keeps from one sub-record to the next: each class's
/// signature and where its instances hold references, worked out once per
/// class instead of once per object (a heap dump has millions of objects
/// of a few thousand classes).
#[derive(Default)]
pub struct HeapNames {
    sigs: FxHashMap<u64, Box<str>>,
    plans: FxHashMap<u64, Arc<RefPlan>>,
    /// An empty vector whose allocation is lent to each object's fields.
    spare: Vec<(&'static str, u64)>,
}

/// The reference fields of a class's instances, in text order
/// (superclass side first), with their byte offsets in the values.
struct RefPlan {
    values_len: usize,
    refs: Vec<(usize, Box<str>)>,
}

impl HeapNames {
    /// The class's signature (cached once its name is known).
    fn signature(&mut self, syms: &Symbols, id: u64) -> std::borrow::Cow<'_, str> {
        use std::borrow::Cow;
        if let std::collections::hash_map::Entry::Vacant(e) = self.sigs.entry(id) {
            match syms.class_name_by_id(id) {
                Some(n) => {
                    e.insert(class_signature(n).into_boxed_str());
                }
                None => return Cow::Owned(format!("Lclass@{id:x};")),
            }
        }
        Cow::Borrowed(self.sigs.get(&id).map_or("", |s| s))
    }

    /// The reference plan of `class_id`: `None` when its layout chain is
    /// incomplete (no fields are then named, as before any CLASS DUMP).
    /// Plans with a field name not defined yet are not kept.
    fn plan(
        &mut self,
        syms: &Symbols,
        layouts: &ClassLayouts,
        class_id: u64,
    ) -> Option<Arc<RefPlan>> {
        if let Some(p) = self.plans.get(&class_id) {
            return Some(p.clone());
        }
        let fields = layouts.all_fields(class_id).ok()?;
        let id_size = layouts.id_size();
        let mut groups: Vec<Vec<(usize, Box<str>)>> = Vec::new();
        let (mut at, mut last_class, mut complete) = (0usize, None, true);
        for (cls, f) in fields {
            if last_class != Some(cls) {
                groups.push(Vec::new());
                last_class = Some(cls);
            }
            if f.ty == rd::BasicType::Object {
                let name = match syms.string(f.name_id) {
                    Some(n) => n,
                    None => {
                        complete = false;
                        "<unknown field>"
                    }
                };
                if let Some(g) = groups.last_mut() {
                    g.push((at, name.into()));
                }
            }
            at += f.ty.size(id_size) as usize;
        }
        let plan = Arc::new(RefPlan {
            values_len: at,
            refs: groups.into_iter().rev().flatten().collect(),
        });
        if complete {
            self.plans.insert(class_id, plan.clone());
        }
        Some(plan)
    }
}

/// Reference field `at` of an instance's values.
fn ref_at(bytes: &[u8], at: usize, id_size: u32) -> u64 {
    match bytes.get(at..at + id_size as usize) {
        Some(b) => b.iter().fold(0u64, |acc, &x| (acc << 8) | u64::from(x)),
        None => 0,
    }
}

pub fn heap_sub(
    f: &mut dyn ProfileFormat,
    buf: &mut Vec<u8>,
    syms: &Symbols,
    layouts: &ClassLayouts,
    names: &mut HeapNames,
    id_size: u32,
    sub: &HeapSubRecord,
) {
    let name = |id: u64| syms.string(id).unwrap_or("<unknown field>");
    match sub {
        HeapSubRecord::Root(root) => {
            let obj_id = root.object_id;
            let sticky;
            let m = match root.kind {
                RootKind::Unknown => fmt::Root::Unknown { obj_id },
                RootKind::JniGlobal { jni_global_ref_id } => fmt::Root::JniGlobal {
                    obj_id,
                    global_ref_id: jni_global_ref_id,
                    trace_serial: 0,
                },
                RootKind::JniLocal {
                    thread_serial,
                    frame_depth,
                } => fmt::Root::JniLocal {
                    obj_id,
                    thread_serial,
                    frame_depth: frame_depth as i32,
                },
                RootKind::JavaFrame {
                    thread_serial,
                    frame_depth,
                } => fmt::Root::JavaFrame {
                    obj_id,
                    thread_serial,
                    frame_depth: frame_depth as i32,
                },
                RootKind::NativeStack { thread_serial } => fmt::Root::NativeStack {
                    obj_id,
                    thread_serial,
                },
                RootKind::StickyClass => {
                    sticky = names.signature(syms, obj_id).into_owned();
                    fmt::Root::StickyClass {
                        obj_id,
                        class_sig: &sticky,
                    }
                }
                RootKind::ThreadBlock { thread_serial } => fmt::Root::ThreadBlock {
                    obj_id,
                    thread_serial,
                },
                RootKind::MonitorUsed => fmt::Root::MonitorUsed { obj_id },
                RootKind::ThreadObject {
                    thread_serial,
                    trace_serial,
                } => fmt::Root::ThreadObject {
                    obj_id,
                    thread_serial,
                    trace_serial,
                },
            };
            f.heap_root(buf, &m);
        }
        HeapSubRecord::ClassDump(cd) => {
            // Layouts may change with a class dump: plans are made anew.
            names.plans.clear();
            let sig = names.signature(syms, cd.class_id);
            let cp: Vec<fmt::ConstantPoolEntry> = cd
                .constant_pool
                .iter()
                .map(|e| fmt::ConstantPoolEntry {
                    index: e.index,
                    obj_id: e.value.as_object_id().unwrap_or(0),
                })
                .collect();
            let statics: Vec<fmt::NamedValue<'_>> = cd
                .static_fields
                .iter()
                .map(|s| fmt::NamedValue {
                    name: name(s.name_id),
                    value: value(s.value),
                })
                .collect();
            let fields: Vec<fmt::FieldDecl<'_>> = cd
                .instance_fields
                .iter()
                .map(|d| fmt::FieldDecl {
                    name: name(d.name_id),
                    ty: basic_type(d.ty),
                })
                .collect();
            f.heap_class(
                buf,
                &fmt::ClassDump {
                    class_id: cd.class_id,
                    class_sig: &sig,
                    trace_serial: cd.trace_serial,
                    super_id: cd.super_class_id,
                    loader_id: cd.class_loader_id,
                    signers_id: cd.signers_id,
                    protection_domain_id: cd.protection_domain_id,
                    instance_size: cd.instance_size,
                    constant_pool: &cp,
                    statics: &statics,
                    instance_fields: &fields,
                },
            );
        }
        HeapSubRecord::InstanceDump(i) => {
            let bytes = i.values.as_deref().unwrap_or(&[]);
            let plan = names.plan(syms, layouts, i.class_id);
            // The spare vector's allocation, holding names of `plan`: an
            // empty map to another lifetime reuses it (in-place collect).
            #[allow(clippy::unnecessary_filter_map)]
            let mut refs: Vec<(&str, u64)> = std::mem::take(&mut names.spare)
                .into_iter()
                .filter_map(|_| None)
                .collect();
            if let Some(p) = plan.as_deref().filter(|p| p.values_len == bytes.len()) {
                refs.extend(
                    p.refs
                        .iter()
                        .map(|(at, name)| (&**name, ref_at(bytes, *at, layouts.id_size()))),
                );
            }
            let sig = names.signature(syms, i.class_id);
            f.heap_instance(
                buf,
                &fmt::InstanceDump {
                    obj_id: i.object_id,
                    size: i.values_len,
                    trace_serial: i.trace_serial,
                    class_id: i.class_id,
                    class_sig: &sig,
                    values: fmt::InstanceValues::Encoded {
                        bytes,
                        ref_fields: &refs,
                    },
                },
            );
            drop(sig);
            refs.clear();
            #[allow(clippy::unnecessary_filter_map)]
            let spare = refs.into_iter().filter_map(|_| None).collect();
            names.spare = spare;
        }
        HeapSubRecord::ObjectArrayDump(a) => {
            let sig = names.signature(syms, a.array_class_id);
            let elements = a.elements.as_deref().unwrap_or(&[]);
            f.heap_obj_array(
                buf,
                &fmt::ObjArrayDump {
                    obj_id: a.array_id,
                    size: a.length.saturating_mul(id_size),
                    trace_serial: a.trace_serial,
                    array_class_id: a.array_class_id,
                    array_class_sig: &sig,
                    elements,
                },
            );
        }
        HeapSubRecord::PrimitiveArrayDump(a) => {
            let ty = basic_type(a.element_type);
            // Text prints the count, never the values: read or not.
            let elements = match a.data.as_deref() {
                Some(data) => fmt::PrimElements::BigEndian(ty, data),
                None => fmt::PrimElements::Counted(ty, a.length as usize),
            };
            f.heap_prim_array(
                buf,
                &fmt::PrimArrayDump {
                    obj_id: a.array_id,
                    size: a.data_len() as u32,
                    trace_serial: a.trace_serial,
                    elements,
                },
            );
        }
    }
}
