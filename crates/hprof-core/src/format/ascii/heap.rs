//! Text HEAP DUMP lines: ROOT, OBJ, ARR, CLS.

use super::printer::{pf, Printer};
use crate::format::ctime::ctime_of;
use crate::format::model::{
    ClassDump, HeapTotals, InstanceDump, InstanceValues, ObjArrayDump, PrimArrayDump, Root, Stamp,
};
use crate::format::names::{prim_array_name, render_class_name, ClassName};

pub fn begin(p: &mut Printer, out: &mut Vec<u8>, at: &Stamp, totals: &HeapTotals) {
    pf!(
        p,
        out,
        "HEAP DUMP BEGIN ({} objects, {} bytes) {}",
        totals.live_instances,
        totals.live_bytes,
        ctime_of(at)
    );
}

pub fn end(p: &mut Printer, out: &mut Vec<u8>) {
    pf!(p, out, "HEAP DUMP END\n");
}

pub fn root(p: &mut Printer, out: &mut Vec<u8>, root: &Root<'_>) {
    match *root {
        Root::Unknown { obj_id } => pf!(p, out, "ROOT {:x} (kind=<unknown>)\n", obj_id),
        Root::JniGlobal {
            obj_id,
            global_ref_id,
            trace_serial,
        } => pf!(
            p,
            out,
            "ROOT {:x} (kind=<JNI global ref>, id={:x}, trace={})\n",
            obj_id,
            global_ref_id,
            trace_serial
        ),
        Root::JniLocal {
            obj_id,
            thread_serial,
            frame_depth,
        } => pf!(
            p,
            out,
            "ROOT {:x} (kind=<JNI local ref>, thread={}, frame={})\n",
            obj_id,
            thread_serial,
            frame_depth
        ),
        Root::JavaFrame {
            obj_id,
            thread_serial,
            frame_depth,
        } => pf!(
            p,
            out,
            "ROOT {:x} (kind=<Java stack>, thread={}, frame={})\n",
            obj_id,
            thread_serial,
            frame_depth
        ),
        Root::NativeStack {
            obj_id,
            thread_serial,
        } => pf!(
            p,
            out,
            "ROOT {:x} (kind=<native stack>, thread={})\n",
            obj_id,
            thread_serial
        ),
        Root::StickyClass { obj_id, class_sig } => pf!(
            p,
            out,
            "ROOT {:x} (kind=<system class>, name={})\n",
            obj_id,
            render_class_name(class_sig)
        ),
        Root::ThreadBlock {
            obj_id,
            thread_serial,
        } => pf!(
            p,
            out,
            "ROOT {:x} (kind=<thread block>, thread={})\n",
            obj_id,
            thread_serial
        ),
        Root::MonitorUsed { obj_id } => pf!(p, out, "ROOT {:x} (kind=<busy monitor>)\n", obj_id),
        Root::ThreadObject {
            obj_id,
            thread_serial,
            trace_serial,
        } => pf!(
            p,
            out,
            "ROOT {:x} (kind=<thread>, id={}, trace={})\n",
            obj_id,
            thread_serial,
            trace_serial
        ),
    }
}

/// `\t<name>\t[\t]<id>`: names shorter than 8 bytes get a second TAB.
fn field_line(p: &mut Printer, out: &mut Vec<u8>, name: &str, id: u64) {
    let pad = if name.len() < 8 { "\t" } else { "" };
    pf!(p, out, "\t{}\t{}{:x}\n", name, pad, id);
}

pub fn instance(p: &mut Printer, out: &mut Vec<u8>, o: &InstanceDump<'_>) {
    pf!(
        p,
        out,
        "OBJ {:x} (sz={}, trace={}, class={}@{:x})\n",
        o.obj_id,
        o.size,
        o.trace_serial,
        ClassName(o.class_sig),
        o.class_id
    );
    match o.values {
        // Groups are own class first; text lists the superclass side first.
        InstanceValues::Fields(groups) => {
            for group in groups.iter().rev() {
                for f in group.iter() {
                    if let Some(id) = f.value.non_null_ref() {
                        field_line(p, out, f.name, id);
                    }
                }
            }
        }
        InstanceValues::Encoded { ref_fields, .. } => {
            for &(name, id) in ref_fields {
                if id != 0 {
                    field_line(p, out, name, id);
                }
            }
        }
    }
}

pub fn obj_array(p: &mut Printer, out: &mut Vec<u8>, a: &ObjArrayDump<'_>) {
    // Quirk kept: nelems is the highest non-null index + 1.
    let nelems = a
        .elements
        .iter()
        .rposition(|&e| e != 0)
        .map_or(0, |i| i + 1);
    pf!(
        p,
        out,
        "ARR {:x} (sz={}, trace={}, nelems={}, elem type={}@{:x})\n",
        a.obj_id,
        a.size,
        a.trace_serial,
        nelems,
        ClassName(a.array_class_sig),
        a.array_class_id
    );
    for (i, &e) in a.elements[..nelems].iter().enumerate() {
        if e != 0 {
            pf!(p, out, "\t[{}]\t\t{:x}\n", i, e);
        }
    }
}

pub fn prim_array(p: &mut Printer, out: &mut Vec<u8>, a: &PrimArrayDump<'_>) {
    let elem = a.elements.elem_type();
    // With contents: sz is the element byte count; without: the object size.
    let (sz, nelems) = if a.elements.is_omitted() {
        (a.size as u64, 0)
    } else {
        let n = a.elements.len();
        ((n * elem.size(4) as usize) as u64, n)
    };
    pf!(
        p,
        out,
        "ARR {:x} (sz={}, trace={}, nelems={}, elem type={})\n",
        a.obj_id,
        sz as u32,
        a.trace_serial,
        nelems as u32,
        prim_array_name(elem)
    );
}

pub fn class(p: &mut Printer, out: &mut Vec<u8>, c: &ClassDump<'_>) {
    pf!(
        p,
        out,
        "CLS {:x} (name={}, trace={})\n",
        c.class_id,
        render_class_name(c.class_sig),
        c.trace_serial
    );
    for (label, id) in [
        ("super", c.super_id),
        ("loader", c.loader_id),
        ("signers", c.signers_id),
        ("domain", c.protection_domain_id),
    ] {
        if id != 0 {
            pf!(p, out, "\t{}\t\t{:x}\n", label, id);
        }
    }
    for s in c.statics {
        if let Some(id) = s.value.non_null_ref() {
            pf!(p, out, "\tstatic {}\t{:x}\n", s.name, id);
        }
    }
    for e in c.constant_pool.iter().rev() {
        pf!(
            p,
            out,
            "\tconstant pool entry {}\t{:x}\n",
            e.index,
            e.obj_id
        );
    }
}
