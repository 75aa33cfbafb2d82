//! Meeting classes: serial numbers, mirror tags and LOAD CLASS records.

use super::Context;
use crate::format::model::LoadClass;
use crate::jvmti::{Jni, Obj};
use crate::tables::ids::{make_tag, split_tag, TagKind};
use crate::tables::ClassEntry;
use std::sync::Arc;

/// The class-table entry of `klass`, registering it on first sight with
/// `load_trace` as its load trace.
pub fn ensure(ctx: &Context, klass: Obj<'_>, load_trace: u32) -> Option<Arc<ClassEntry>> {
    if klass.is_null() {
        return None;
    }
    if let Some(e) = lookup(ctx, klass) {
        return Some(e);
    }
    let j = ctx.jvmti;
    let entry = ctx.tables.classes.with_registration(|table| {
        // Re-check under the registration lock: another thread may have
        // registered the class meanwhile.
        if let Some(e) = lookup(ctx, klass) {
            return Some(e);
        }
        let sig = j.class_signature(klass).ok()?;
        let source = j.source_file_name(klass).ok().flatten();
        let e = table.insert(sig, ctx.tables.objects.allocate_id(), load_trace, source);
        let tag = make_tag(TagKind::Class, e.serial as u64);
        ctx.tags.set_identity(ctx, klass, tag).ok()?;
        Some(e)
    })?;
    announce(ctx, &entry);
    Some(entry)
}

/// The serial of `klass`, registering the class on first sight (array
/// classes have no load event) with the system trace.
pub fn serial(ctx: &Context, klass: Obj<'_>) -> Option<u32> {
    if let Ok(tag) = ctx.jvmti.get_tag(klass) {
        if let Some((TagKind::Class, serial)) = split_tag(tag) {
            return Some(serial as u32);
        }
    }
    ensure(ctx, klass, ctx.system_trace()).map(|c| c.serial)
}

/// The serial of an already registered class, from its tag alone.
pub fn known_serial(ctx: &Context, klass: Obj<'_>) -> Option<u32> {
    match split_tag(ctx.jvmti.get_tag(klass).ok()?) {
        Some((TagKind::Class, s)) => Some(s as u32),
        _ => None,
    }
}

fn lookup(ctx: &Context, klass: Obj<'_>) -> Option<Arc<ClassEntry>> {
    ctx.tables.classes.get(known_serial(ctx, klass)?)
}

fn announce(ctx: &Context, e: &Arc<ClassEntry>) {
    let e = e.clone();
    let at = ctx.stamp();
    // Nobody waits for it: batched with others (the classes of start-up
    // do not wake the writer one by one).
    ctx.out.submit_batched(move |f, out| {
        let lc = LoadClass {
            class_serial: e.serial,
            class_obj_id: e.object_id as u64,
            trace_serial: e.load_trace,
            class_sig: &e.signature,
        };
        f.load_class(out, at, &lc)
    });
}

/// Register every class the VM has loaded (VM init, and before dumps so
/// array classes, which have no load event, are picked up).
pub fn refresh(ctx: &Context, jni: Jni<'_>) {
    let Ok(classes) = ctx.jvmti.loaded_classes(jni) else {
        return;
    };
    let trace = ctx.system_trace();
    for k in classes.iter() {
        let _ = ensure(ctx, k, trace);
    }
}
