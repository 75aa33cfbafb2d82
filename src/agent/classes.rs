//! Meeting classes: serial numbers, mirror tags and LOAD CLASS records.

use super::Agent;
use crate::format::model::LoadClass;
use crate::jvmti::sys::jclass;
use crate::tables::ids::{make_tag, split_tag, TagKind};
use crate::tables::ClassEntry;
use std::sync::Arc;

/// The class-table entry of `klass`, registering it on first sight with
/// `load_trace` as its load trace.
pub fn ensure(agent: &Agent, klass: jclass, load_trace: u32) -> Option<Arc<ClassEntry>> {
    if klass.is_null() {
        return None;
    }
    let j = agent.jvmti;
    if let Some(e) = lookup(agent, klass) {
        return Some(e);
    }
    let entry = agent.tables.classes.with_registration(|table| {
        // Re-check under the registration lock: another thread may have
        // registered the class meanwhile.
        if let Some(e) = lookup(agent, klass) {
            return Some(e);
        }
        let sig = j.class_signature(klass).ok()?;
        let source = j.source_file_name(klass).ok().flatten();
        let e = table.insert(sig, agent.tables.objects.allocate_id(), load_trace, source);
        let tag = make_tag(TagKind::Class, e.serial as u64);
        crate::profile::alloc_sites::retag(agent, klass, tag).ok()?;
        crate::profile::heap_dump::tag_new_class(klass, tag);
        Some(e)
    })?;
    announce(agent, &entry);
    Some(entry)
}

fn lookup(agent: &Agent, klass: jclass) -> Option<Arc<ClassEntry>> {
    match split_tag(agent.jvmti.get_tag(klass).ok()?) {
        Some((TagKind::Class, serial)) => agent.tables.classes.get(serial as u32),
        _ => None,
    }
}

fn announce(agent: &Agent, e: &Arc<ClassEntry>) {
    let e = e.clone();
    let at = agent.stamp();
    agent.out.submit(move |f, out| {
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
pub fn refresh(agent: &Agent, jni: *mut crate::jvmti::sys::JNIEnv) {
    let Ok(classes) = agent.jvmti.loaded_classes() else {
        return;
    };
    let trace = agent.system_trace();
    for &k in classes.iter() {
        let _ = ensure(agent, k, trace);
        crate::jvmti::jni::delete_local_ref(jni, k);
    }
}
