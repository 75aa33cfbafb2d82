//! The end of a heap dump, written after the walk: the objects the walk
//! could not lay out, then every CLASS DUMP, superclasses first.
//!
//! Objects of classes loaded after the dump's context was built (or not
//! prepared when it was) reach this point as values kept by JVMTI field
//! index. The caller describes those classes once the walk is over (by
//! then every class with an object in the heap is prepared) and hands an
//! extended context; the values are then placed exactly as the walk places
//! them (`walk::put_id`, `walk::put_prim`). CLASS DUMPs come last in every
//! dump, so the text format keeps its order: objects, then classes.

use super::layout::{ClassKind, Slot};
use super::walk::{
    put_id, put_prim, Batch, BatchSink, ClassInfo, DumpContext, LateObject, LateValue, Leftovers,
    MirrorFacts, Rec, WalkStats, BATCH_BYTES,
};
use crate::format::BasicType;
use std::collections::HashSet;

/// Write the leftover objects (`classes[i]` is the class serial of
/// `left.objects[i]`, `None` when it could not be found), then a CLASS DUMP
/// for every class of `ctx`, superclasses first. `before` is the context
/// the walk used: for the classes it laid out completely the statics the
/// walk placed are used as they are; the others' come from the values kept
/// by index. Counts go to `stats`.
pub fn write<S: BatchSink>(
    left: Leftovers,
    classes: &[Option<u32>],
    before: &DumpContext,
    ctx: &DumpContext,
    prim_arrays: bool,
    sink: &mut S,
    stats: &mut WalkStats,
) {
    let mut out = Out {
        batch: Batch::default(),
        sink,
    };
    for (o, class) in left.objects.iter().zip(classes) {
        match class.and_then(|s| ctx.class(s)) {
            Some(c) => object(&mut out.batch, o, c, ctx, prim_arrays, stats),
            None => stats.late_lost += 1,
        }
        out.maybe_hand_over();
    }
    let mut mirrors = left.mirrors;
    let mut done = HashSet::new();
    for c in ctx.classes.iter().flatten() {
        let mut chain = vec![c.serial];
        let mut cur = c;
        while let Some(s) = cur.super_serial {
            match ctx.class(s) {
                Some(sup) if !done.contains(&s) && !chain.contains(&s) => {
                    chain.push(s);
                    cur = sup;
                }
                _ => break,
            }
        }
        for &s in chain.iter().rev() {
            if done.insert(s) {
                let facts = mirrors.remove(&s).unwrap_or_default();
                let laid_out = before.class(s).is_some_and(|b| !b.layout.incomplete);
                class(&mut out.batch, s, facts, laid_out, ctx, stats);
                out.maybe_hand_over();
            }
        }
    }
    out.hand_over();
}

struct Out<'s, S: BatchSink> {
    batch: Batch,
    sink: &'s mut S,
}

impl<S: BatchSink> Out<'_, S> {
    fn maybe_hand_over(&mut self) {
        if self.batch.weight() >= BATCH_BYTES {
            self.hand_over();
        }
    }

    fn hand_over(&mut self) {
        if !self.batch.recs.is_empty() {
            let b = std::mem::take(&mut self.batch);
            self.batch = self.sink.submit(b);
        }
    }
}

/// Place a value kept by index at its slot; false if the layout has no
/// slot of its type there.
fn place(bytes: &mut [u8], at: usize, slot: Slot, v: LateValue, ids: usize) -> bool {
    match (slot, v) {
        (
            Slot::Instance {
                offset,
                ty: BasicType::Object,
            }
            | Slot::Static {
                offset,
                ty: BasicType::Object,
            },
            LateValue::Ref(id),
        ) => {
            put_id(&mut bytes[at + offset as usize..], id, ids);
            true
        }
        (Slot::Instance { offset, ty } | Slot::Static { offset, ty }, LateValue::Prim(p)) => {
            put_prim(&mut bytes[at + offset as usize..], ty, p)
        }
        _ => false,
    }
}

fn miss(incomplete: bool, stats: &mut WalkStats) {
    if incomplete {
        stats.unprepared_values += 1;
    } else {
        stats.mismatched_fields += 1;
    }
}

fn object(
    batch: &mut Batch,
    o: &LateObject,
    c: &ClassInfo,
    ctx: &DumpContext,
    prim_arrays: bool,
    stats: &mut WalkStats,
) {
    let ids = ctx.id_size as usize;
    let rec = match c.kind {
        ClassKind::Instance | ClassKind::Interface => {
            let at = batch.bytes.len();
            batch.bytes.resize(at + c.layout.instance_size as usize, 0);
            for &(index, v) in &o.values {
                let slot = c.layout.slot(index);
                if !matches!(slot, Slot::Instance { .. })
                    || !place(&mut batch.bytes, at, slot, v, ids)
                {
                    miss(c.layout.incomplete, stats);
                }
            }
            stats.instances += 1;
            Rec::Instance {
                obj: o.obj,
                size: o.size,
                trace: o.trace,
                class: c.serial,
                at,
            }
        }
        ClassKind::ObjArray => {
            let top = o
                .values
                .iter()
                .map(|&(i, _)| i as usize + 1)
                .max()
                .unwrap_or(0);
            let len = top.max(o.length.unwrap_or(0) as usize);
            let at = batch.ids.len();
            batch.ids.resize(at + len, 0);
            for &(i, v) in &o.values {
                if let LateValue::Ref(id) = v {
                    batch.ids[at + i as usize] = id;
                }
            }
            stats.obj_arrays += 1;
            Rec::ObjArray {
                obj: o.obj,
                size: o.size,
                trace: o.trace,
                class: c.serial,
                at,
                len,
            }
        }
        ClassKind::PrimArray(ty) => {
            let at = batch.bytes.len();
            if let Some((_, data)) = &o.prims {
                batch.bytes.extend_from_slice(data);
            }
            stats.prim_arrays += 1;
            Rec::PrimArray {
                obj: o.obj,
                size: o.size,
                trace: o.trace,
                ty,
                at,
                len: batch.bytes.len() - at,
                omitted: !prim_arrays,
            }
        }
    };
    batch.recs.push(rec);
}

fn class(
    batch: &mut Batch,
    serial: u32,
    facts: MirrorFacts,
    laid_out: bool,
    ctx: &DumpContext,
    stats: &mut WalkStats,
) {
    let Some(c) = ctx.class(serial) else { return };
    let ids = ctx.id_size as usize;
    let statics_at = batch.bytes.len();
    let n = c.layout.static_size as usize;
    if laid_out && facts.statics.len() == n {
        batch.bytes.extend_from_slice(&facts.statics);
    } else {
        batch.bytes.resize(statics_at + n, 0);
    }
    for &(index, v) in &facts.late_statics {
        let slot = c.layout.slot(index);
        if !matches!(slot, Slot::Static { .. })
            || !place(&mut batch.bytes, statics_at, slot, v, ids)
        {
            miss(c.layout.incomplete, stats);
        }
    }
    let cp_at = batch.cps.len();
    batch.cps.extend_from_slice(&facts.cp);
    batch.recs.push(Rec::Class {
        serial,
        statics_at,
        cp_at,
        cp_len: facts.cp.len(),
        loader: facts.loader,
        signers: facts.signers,
        domain: facts.domain,
    });
    stats.classes += 1;
}
