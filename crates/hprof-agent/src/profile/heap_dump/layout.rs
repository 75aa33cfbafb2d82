//! Class layouts for the heap dump: which JVMTI field index names which
//! field, and where its value goes in an INSTANCE DUMP (or in the class's
//! static values).
//!
//! JVMTI numbers the fields of an object's class C across the type
//! hierarchy (FollowReferences, `jvmtiHeapReferenceInfoField`): first come
//! the fields of every interface C implements (directly, through its
//! superclasses or through superinterfaces, each interface once), then the
//! fields of java.lang.Object, of each superclass down the chain, and of C
//! itself, each class's in GetClassFields order — static and instance
//! fields alike. For an interface I: the fields of its superinterfaces,
//! then I's own. Static field references of C use the same numbering.
//!
//! INSTANCE DUMP values are C's instance fields first, then its
//! superclass's, up to java.lang.Object; references at the stream's ID
//! size, primitives at their natural size.

use crate::format::BasicType;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// What kind of class a class entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClassKind {
    Instance,
    Interface,
    ObjArray,
    PrimArray(BasicType),
}

impl ClassKind {
    /// From a JVM class signature (`[I`, `[[I`, `[Ljava/lang/String;`, `LFoo;`).
    pub fn from_signature(sig: &str, is_interface: bool) -> Self {
        let b = sig.as_bytes();
        if b.first() == Some(&b'[') {
            match b.get(1).copied().and_then(BasicType::from_sig_char) {
                Some(BasicType::Object) | None => ClassKind::ObjArray,
                Some(t) => ClassKind::PrimArray(t),
            }
        } else if is_interface {
            ClassKind::Interface
        } else {
            ClassKind::Instance
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldDesc {
    pub name: Arc<str>,
    pub ty: BasicType,
    pub is_static: bool,
}

/// A class as the VM describes it (fetched once per class, before a walk).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassDesc {
    pub serial: u32,
    pub kind: ClassKind,
    pub super_serial: Option<u32>,
    /// Direct superinterfaces.
    pub interfaces: Vec<u32>,
    /// Declared fields in GetClassFields order; `None` = not prepared.
    pub fields: Option<Vec<FieldDesc>>,
}

/// Where a JVMTI field index lands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// Not a field of this class that the dump keeps (another class's
    /// static, or beyond the list).
    None,
    /// Byte offset in the INSTANCE DUMP values.
    Instance { offset: u32, ty: BasicType },
    /// Byte offset in the class's static values.
    Static { offset: u32, ty: BasicType },
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Layout {
    /// JVMTI index of `slots[0]`.
    pub base: i32,
    pub slots: Vec<Slot>,
    /// Byte count of the INSTANCE DUMP values (0 for arrays, interfaces).
    pub instance_size: u32,
    /// Statics declared by this class: name, type, offset in the static
    /// values (declaration order).
    pub statics: Vec<(Arc<str>, BasicType, u32)>,
    pub static_size: u32,
    /// Instance fields declared by this class (supers excluded).
    pub own_fields: Vec<(Arc<str>, BasicType)>,
    /// Reference instance fields of the class and its supers in JVMTI index
    /// order (superclass side first): the text format's field-line order.
    pub ref_fields: Vec<(Arc<str>, u32)>,
    /// The class (or an ancestor) was not prepared: fields unknown.
    pub incomplete: bool,
}

impl Layout {
    #[inline]
    pub fn slot(&self, index: i32) -> Slot {
        match index.checked_sub(self.base) {
            Some(i) if i >= 0 => self.slots.get(i as usize).copied().unwrap_or(Slot::None),
            _ => Slot::None,
        }
    }
}

/// Compute the layout of `serial` from the descriptions of all classes.
pub fn compute(serial: u32, descs: &HashMap<u32, ClassDesc>, id_size: u8) -> Layout {
    let Some(c) = descs.get(&serial) else {
        return Layout::default();
    };
    let mut layout = Layout::default();
    if matches!(c.kind, ClassKind::ObjArray | ClassKind::PrimArray(_)) {
        return layout;
    }
    // Superclass chain, C first.
    let mut chain = vec![c];
    if c.kind != ClassKind::Interface {
        let mut seen = HashSet::from([c.serial]);
        let mut cur = c;
        while let Some(s) = cur.super_serial {
            let Some(d) = descs.get(&s) else { break };
            if !seen.insert(s) {
                break;
            }
            chain.push(d);
            cur = d;
        }
    }
    // Interfaces implemented by anything in the chain (for an interface:
    // its superinterfaces), each once.
    let mut ifaces = HashSet::new();
    let mut stack: Vec<u32> = chain
        .iter()
        .flat_map(|k| k.interfaces.iter().copied())
        .collect();
    while let Some(i) = stack.pop() {
        if ifaces.insert(i) {
            if let Some(d) = descs.get(&i) {
                stack.extend(d.interfaces.iter().copied());
            }
        }
    }
    let iface_fields: usize = ifaces
        .iter()
        .filter_map(|i| descs.get(i))
        .map(|d| d.fields.as_ref().map_or(0, Vec::len))
        .sum();
    layout.base = iface_fields as i32;
    layout.incomplete = chain.iter().any(|k| k.fields.is_none());

    // Instance value offsets: C's fields first, then the super's, ...
    let mut offsets: Vec<Vec<Option<u32>>> = Vec::with_capacity(chain.len());
    let mut off = 0u32;
    for k in &chain {
        let fields = k.fields.as_deref().unwrap_or(&[]);
        offsets.push(
            fields
                .iter()
                .map(|f| {
                    (!f.is_static).then(|| {
                        let o = off;
                        off += f.ty.size(id_size as u32);
                        o
                    })
                })
                .collect(),
        );
    }
    layout.instance_size = off;

    // JVMTI indices: root of the chain first, C last.
    let mut static_off = 0u32;
    for (level, k) in chain.iter().enumerate().rev() {
        let fields = k.fields.as_deref().unwrap_or(&[]);
        for (pos, f) in fields.iter().enumerate() {
            let slot = match offsets[level][pos] {
                Some(offset) => {
                    if f.ty == BasicType::Object {
                        layout.ref_fields.push((f.name.clone(), offset));
                    }
                    if level == 0 {
                        layout.own_fields.push((f.name.clone(), f.ty));
                    }
                    Slot::Instance { offset, ty: f.ty }
                }
                None if level == 0 => {
                    let o = static_off;
                    static_off += f.ty.size(id_size as u32);
                    layout.statics.push((f.name.clone(), f.ty, o));
                    Slot::Static {
                        offset: o,
                        ty: f.ty,
                    }
                }
                None => Slot::None,
            };
            layout.slots.push(slot);
        }
    }
    layout.static_size = static_off;
    layout
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(name: &str, sig: u8, is_static: bool) -> FieldDesc {
        FieldDesc {
            name: name.into(),
            ty: BasicType::from_sig_char(sig).unwrap(),
            is_static,
        }
    }

    fn desc(
        serial: u32,
        kind: ClassKind,
        sup: Option<u32>,
        ifs: &[u32],
        fields: Vec<FieldDesc>,
    ) -> ClassDesc {
        ClassDesc {
            serial,
            kind,
            super_serial: sup,
            interfaces: ifs.to_vec(),
            fields: Some(fields),
        }
    }

    /// interface I { int K = 1; }  interface J extends I { int L = 2, M = 3; }
    /// class A implements I { static Object sa; long x; Object r; }
    /// class B extends A implements J { int y; static int sb; Object q; }
    fn world() -> HashMap<u32, ClassDesc> {
        let mut m = HashMap::new();
        m.insert(1, desc(1, ClassKind::Instance, None, &[], vec![]));
        m.insert(
            10,
            desc(
                10,
                ClassKind::Interface,
                None,
                &[],
                vec![f("K", b'I', true)],
            ),
        );
        m.insert(
            11,
            desc(
                11,
                ClassKind::Interface,
                None,
                &[10],
                vec![f("L", b'I', true), f("M", b'I', true)],
            ),
        );
        m.insert(
            2,
            desc(
                2,
                ClassKind::Instance,
                Some(1),
                &[10],
                vec![
                    f("sa", b'L', true),
                    f("x", b'J', false),
                    f("r", b'L', false),
                ],
            ),
        );
        m.insert(
            3,
            desc(
                3,
                ClassKind::Instance,
                Some(2),
                &[11],
                vec![
                    f("y", b'I', false),
                    f("sb", b'I', true),
                    f("q", b'L', false),
                ],
            ),
        );
        m
    }

    #[test]
    fn indices_count_interfaces_once_then_supers_then_own() {
        let w = world();
        let b = compute(3, &w, 4);
        // Interfaces I (1 field) and J (2 fields) come first: base 3.
        assert_eq!(b.base, 3);
        // A's fields get 3,4,5; B's 6,7,8.
        assert_eq!(b.slot(3), Slot::None, "A's static is not B's");
        // Values: B's own (y:int @0, q:ref @4), then A's (x:long @8, r:ref @16).
        assert_eq!(
            b.slot(4),
            Slot::Instance {
                offset: 8,
                ty: BasicType::Long
            }
        );
        assert_eq!(
            b.slot(5),
            Slot::Instance {
                offset: 16,
                ty: BasicType::Object
            }
        );
        assert_eq!(
            b.slot(6),
            Slot::Instance {
                offset: 0,
                ty: BasicType::Int
            }
        );
        assert_eq!(
            b.slot(7),
            Slot::Static {
                offset: 0,
                ty: BasicType::Int
            }
        );
        assert_eq!(
            b.slot(8),
            Slot::Instance {
                offset: 4,
                ty: BasicType::Object
            }
        );
        assert_eq!(b.slot(9), Slot::None);
        assert_eq!(b.slot(2), Slot::None);
        assert_eq!(b.instance_size, 20);
        assert_eq!(
            b.own_fields.iter().map(|(n, _)| &**n).collect::<Vec<_>>(),
            ["y", "q"]
        );
        // Text order: superclass side first.
        assert_eq!(
            b.ref_fields
                .iter()
                .map(|(n, o)| (&**n, *o))
                .collect::<Vec<_>>(),
            [("r", 16), ("q", 4)]
        );
        assert_eq!(b.statics.len(), 1);

        let a = compute(2, &w, 8);
        assert_eq!(a.base, 1);
        assert_eq!(
            a.slot(1),
            Slot::Static {
                offset: 0,
                ty: BasicType::Object
            }
        );
        assert_eq!(a.static_size, 8);
        assert_eq!(
            a.slot(2),
            Slot::Instance {
                offset: 0,
                ty: BasicType::Long
            }
        );
        assert_eq!(
            a.slot(3),
            Slot::Instance {
                offset: 8,
                ty: BasicType::Object
            }
        );
        assert_eq!(a.instance_size, 16);
    }

    #[test]
    fn interfaces_number_after_their_superinterfaces() {
        let w = world();
        let j = compute(11, &w, 4);
        assert_eq!(j.base, 1);
        assert_eq!(
            j.slot(1),
            Slot::Static {
                offset: 0,
                ty: BasicType::Int
            }
        );
        assert_eq!(
            j.slot(2),
            Slot::Static {
                offset: 4,
                ty: BasicType::Int
            }
        );
        assert_eq!(j.instance_size, 0);
    }

    #[test]
    fn unprepared_and_array_classes() {
        let mut w = world();
        w.get_mut(&2).unwrap().fields = None;
        let b = compute(3, &w, 4);
        assert!(b.incomplete);
        assert_eq!(
            b.slot(3),
            Slot::Instance {
                offset: 0,
                ty: BasicType::Int
            }
        );
        w.insert(
            20,
            desc(
                20,
                ClassKind::from_signature("[I", false),
                Some(1),
                &[],
                vec![],
            ),
        );
        assert_eq!(w[&20].kind, ClassKind::PrimArray(BasicType::Int));
        assert_eq!(ClassKind::from_signature("[[I", false), ClassKind::ObjArray);
        assert_eq!(
            ClassKind::from_signature("[LFoo;", false),
            ClassKind::ObjArray
        );
        assert_eq!(compute(20, &w, 4), Layout::default());
    }
}
