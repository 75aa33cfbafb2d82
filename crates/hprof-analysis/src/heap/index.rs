//! Building an index from a dump, and reading one.
//!
//! Objects are numbered in file order ("object numbers"); the dominator
//! computation numbers them again in DFS preorder ("preorder numbers", 0
//! being the virtual root). Each phase keeps in memory only what it works
//! on and parks the rest in the index file, so the peak stays at a few
//! 4-byte words per object plus one per reference (docs/heap-analyser.md,
//! "Memory"):
//!
//! 1. `collect`: one pass over the dump.
//! 2. identifiers -> object numbers ([`IdMap`]); references become numbers
//!    (those naming no object of the dump are counted and dropped);
//!    the size model is inferred and each object's shallow size computed.
//! 3. references both ways, distances from the GC roots.
//! 4. preorder numbering, strong referrers in preorder, SEMI-NCA.
//! 5. retained sizes, the dominator tree's children biggest first, each
//!    class's instances biggest first, per-class and per-site totals.
//!
//! Sections (object numbers unless said):
//! IDS u64 identifier · OFFSETS u64 file offset of the sub-record · CLASS
//! u32 class number · LENGTH u32 array length · TRACE u32 trace serial ·
//! SHALLOW u32 shallow size / 8 · PERM u32 rank of identifier -> object ·
//! FWD/REV offsets and targets (flag [`WEAK`]) · PARENT_ALL, PARENT_STRONG
//! u32 referrer one step closer to a GC root (itself for a root, [`NONE`]
//! when none reaches it) · NUM u32 object -> preorder · ORDER u32
//! preorder -> object · IDOM u32 preorder -> preorder · RETAINED u64 per
//! preorder · DOM children per preorder · MEMBERS each class's objects
//! (preorder numbers), biggest retained first · ACCUMULATION u32 preorder
//! number where the bytes of each of the first [`SUSPECT_TOPS`] children
//! of the virtual root accumulate · META, IDENTITY bytes.

use std::fs::File;
use std::io;
use std::path::Path;

use rustc_hash::FxHashMap;

use crate::reader::BasicType;

use super::alloc::{filled, with_room};
use super::collect::{
    self, kind_of_name, Collected, Kind, RawClass, SEC_OFFSETS, SEC_TRACE, UNSET,
};
use super::csr::{Bits, Csr, WEAK};
use super::ids::{Directory, IdMap, NONE};
use super::meta::{
    ClassInfo, ClassKind, FieldDef, Meta, RefKind, RootEntry, RootKind, SiteInfo, StaticDef,
};
use super::sizes::{infer, vm_level, Level, SizeModel, SizeOracle, Spacing};
use super::store::{Reader, SectionId, Writer};
use super::{dominators, reach, retained, Progress};

pub const SEC_IDS: SectionId = 1;
pub const SEC_CLASS: SectionId = 3;
pub const SEC_LENGTH: SectionId = 4;
pub const SEC_SHALLOW: SectionId = 6;
pub const SEC_PERM: SectionId = 7;
pub const SEC_FWD_OFF: SectionId = 8;
pub const SEC_FWD_TGT: SectionId = 9;
pub const SEC_REV_OFF: SectionId = 10;
pub const SEC_REV_TGT: SectionId = 11;
pub const SEC_PARENT_ALL: SectionId = 12;
pub const SEC_PARENT_STRONG: SectionId = 13;
pub const SEC_NUM: SectionId = 14;
pub const SEC_ORDER: SectionId = 15;
pub const SEC_IDOM: SectionId = 16;
pub const SEC_RETAINED: SectionId = 17;
pub const SEC_DOM_OFF: SectionId = 18;
pub const SEC_DOM_TGT: SectionId = 19;
pub const SEC_MEMBERS_OFF: SectionId = 20;
pub const SEC_MEMBERS_TGT: SectionId = 21;
pub const SEC_ACCUMULATION: SectionId = 22;
pub const SEC_META: SectionId = 30;
pub const SEC_IDENTITY: SectionId = 31;

/// How many of the biggest retainers the `suspects` query considers
/// (those retaining a large share of the heap are among the first few).
pub const SUSPECT_TOPS: usize = 64;

fn io_err(path: &Path) -> impl Fn(io::Error) -> String + '_ {
    move |e| {
        if e.kind() == io::ErrorKind::OutOfMemory {
            format!(
                "{}: out of memory while indexing: {e} (the dump holds more than this process may allocate)",
                path.display()
            )
        } else {
            format!("index file: {e}")
        }
    }
}

/// Builds the index of dump number `dump` of `path` into `file` (which it
/// completes; `identity` is stored as it is, for `cache.rs`).
pub fn build(
    path: &Path,
    dump: u32,
    file: File,
    identity: &[u8],
    progress: &dyn Progress,
) -> Result<File, String> {
    let io_err = io_err(path);
    let mut w = Writer::new(file).map_err(&io_err)?;
    let c = collect::collect(path, dump, &mut w, progress)?;
    let mut b = Builder::new(c, &mut w, progress).map_err(&io_err)?;
    b.run().map_err(&io_err)?;
    let Builder { meta, .. } = b;
    w.put::<u8>(SEC_META, &meta.encode()).map_err(&io_err)?;
    w.put::<u8>(SEC_IDENTITY, identity).map_err(&io_err)?;
    w.finish().map_err(&io_err)
}

/// The fields of a class and its superclasses as the VM lays them out,
/// `java.lang.Object` first; `None` when the chain is incomplete.
fn chain(
    classes: &[RawClass],
    by_id: &FxHashMap<u64, u32>,
    strings: &FxHashMap<u64, String>,
    c: u32,
) -> Option<Vec<Level>> {
    let mut out = Vec::new();
    let mut at = c;
    for _ in 0..=classes.len() {
        let rc = &classes[at as usize];
        let cd = rc.dump.as_ref()?;
        let declared: Vec<(&str, BasicType)> = cd
            .instance_fields
            .iter()
            .map(|f| (strings.get(&f.name_id).map_or("", String::as_str), f.ty))
            .collect();
        out.push(vm_level(&rc.name, &declared));
        if cd.super_class_id == 0 {
            out.reverse();
            return Some(out);
        }
        at = *by_id.get(&cd.super_class_id)?;
    }
    None
}

struct Builder<'a> {
    c: Collected,
    w: &'a mut Writer,
    progress: &'a dyn Progress,
    meta: Meta,
    kinds: Vec<ClassKind>,
    /// Per class: instance size under the chosen model.
    instance_size: Vec<u64>,
    /// Class of class objects.
    jlc: u32,
}

/// Instance sizes per class and model, for the inference.
struct Oracle<'a> {
    kinds: &'a [ClassKind],
    class_of: &'a [u32],
    length: &'a [u32],
    /// Per model, per class: instance size (`None`: chain incomplete).
    sizes: Vec<Vec<Option<u64>>>,
}

impl SizeOracle for Oracle<'_> {
    fn size(&self, m: &SizeModel, i: usize, obj: u32) -> Option<u64> {
        let c = *self.class_of.get(obj as usize)?;
        match self.kinds.get(c as usize)? {
            ClassKind::Instance => self.sizes[i][c as usize],
            ClassKind::ObjectArray => Some(m.array_size(None, self.length[obj as usize])),
            ClassKind::PrimitiveArray(t) => Some(m.array_size(Some(*t), self.length[obj as usize])),
        }
    }
}

fn class_kind(rc: &RawClass) -> ClassKind {
    let by_name = if rc.name.starts_with("<class ") {
        Kind::Unknown
    } else {
        kind_of_name(&rc.name)
    };
    match (by_name, rc.kind) {
        (Kind::PrimitiveArray(t), _) | (_, Kind::PrimitiveArray(t)) => ClassKind::PrimitiveArray(t),
        (Kind::ObjectArray, _) | (_, Kind::ObjectArray) => ClassKind::ObjectArray,
        _ => ClassKind::Instance,
    }
}

impl<'a> Builder<'a> {
    fn new(mut c: Collected, w: &'a mut Writer, progress: &'a dyn Progress) -> io::Result<Self> {
        let kinds = c.classes.iter().map(class_kind).collect();
        let meta = Meta {
            id_size: c.id_size,
            dump: c.dump,
            objects: c.class_of.len() as u64,
            frames: std::mem::take(&mut c.frames),
            traces: std::mem::take(&mut c.traces),
            warnings: std::mem::take(&mut c.warnings),
            ..Meta::default()
        };
        Ok(Builder {
            c,
            w,
            progress,
            meta,
            kinds,
            instance_size: Vec::new(),
            jlc: UNSET,
        })
    }

    fn run(&mut self) -> io::Result<()> {
        let n = self.c.class_of.len();
        self.progress.stage("mapping identifiers", 0);
        // java.lang.Class is the class of class objects.
        self.jlc = self
            .c
            .classes
            .iter()
            .position(|c| c.name == "java.lang.Class" && c.dump.is_some())
            .map_or(UNSET, |i| i as u32);
        for &(s, _) in &self.c.class_objects {
            self.c.class_of[s as usize] = self.jlc;
        }
        let (map, perm, duplicates) = IdMap::build(&self.c.keys)?;
        if duplicates > 0 {
            self.meta.warnings.push(format!(
                "{duplicates} object ID(s) appear twice: the first object of each is kept"
            ));
        }
        {
            let mut ids = self.w.sink::<u64>(SEC_IDS);
            for s in 0..n {
                ids.push(self.w, self.c.keys.get(s))?;
            }
            ids.finish(self.w)?;
        }
        self.meta.directory = Directory::build(perm.iter().map(|&s| self.c.keys.get(s as usize)));
        let find = |id: u64| map.rank(id).map(|r| perm[r as usize]);
        // GC roots in file order.
        let mut gc_roots: Vec<RootEntry> = Vec::new();
        let mut unknown_roots = 0u64;
        for &(id, tag) in &self.c.roots {
            match find(id) {
                Some(s) => gc_roots.push(RootEntry {
                    object: s,
                    kind: RootKind::Gc(tag),
                }),
                None => unknown_roots += 1,
            }
        }
        if unknown_roots > 0 {
            self.meta.warnings.push(format!(
                "{unknown_roots} GC root(s) name no object of the dump"
            ));
        }
        let root_objects: Vec<u32> = {
            let mut seen = Bits::new(n)?;
            let mut first = with_room(gc_roots.len(), "GC roots")?;
            for r in &gc_roots {
                if !seen.get(r.object) {
                    seen.set(r.object);
                    first.push(r.object);
                }
            }
            first
        };
        self.progress.stage("resolving references", 0);
        let (fwd, weak) = self.resolve(&find)?;
        drop(map);
        self.meta.references = fwd.targets.len() as u64;
        self.progress.stage("computing sizes", 0);
        self.sizes(&perm)?;
        self.w.put(SEC_PERM, &perm)?;
        drop(perm);
        self.c.keys = Default::default();
        self.w.put(SEC_CLASS, &self.c.class_of)?;
        self.w.put(SEC_LENGTH, &self.c.length)?;
        self.c.length = Vec::new();
        self.progress.stage("indexing references", 0);
        self.w.put(SEC_FWD_OFF, &fwd.offsets)?;
        self.w.put(SEC_FWD_TGT, &fwd.targets)?;
        {
            let rev = fwd.transpose()?;
            self.w.put(SEC_REV_OFF, &rev.offsets)?;
            self.w.put(SEC_REV_TGT, &rev.targets)?;
        }
        self.progress.stage("paths from GC roots", 0);
        for (sec, follow_weak) in [(SEC_PARENT_ALL, true), (SEC_PARENT_STRONG, false)] {
            let d = reach::shortest_parents(&fwd, &root_objects, follow_weak)?;
            self.w.put(sec, &d)?;
        }
        self.progress.stage("dominator tree", 0);
        let class_object: Vec<Option<u32>> = self.c.classes.iter().map(|c| c.object).collect();
        let numbering = reach::number(
            &fwd,
            &root_objects,
            reach::Hints {
                class_of: &self.c.class_of,
                class_object: &class_object,
                weak: &weak,
            },
        )?;
        drop((fwd, weak, class_object));
        // Parked until the retained sizes (SEC_CLASS holds it).
        self.c.class_of = Vec::new();
        let reach::Numbering {
            num,
            parent,
            from_root,
            added,
            strong_end,
        } = numbering;
        let mut roots = gc_roots;
        roots.extend(added);
        roots.sort_by_key(|r| (r.object, r.kind));
        roots.dedup();
        self.meta.roots = roots;
        self.w.put(SEC_NUM, &num)?;
        let preds = reach::preorder_preds(
            &self.w.reader()?,
            SEC_REV_OFF,
            SEC_REV_TGT,
            &num,
            strong_end,
        )?;
        drop(num);
        let idom = dominators::semi_nca(&preds, &from_root, parent)?;
        drop(preds);
        self.w.put(SEC_IDOM, &idom)?;
        self.progress.stage("retained sizes", 0);
        self.retained(idom)
    }

    /// References as object numbers, those naming no object dropped;
    /// referent ones flagged, with their positions and kinds.
    fn resolve(
        &mut self,
        find: &impl Fn(u64) -> Option<u32>,
    ) -> io::Result<(Csr, Vec<(u32, RefKind)>)> {
        let keys = std::mem::take(&mut self.c.fwd_keys);
        let mut offsets = std::mem::take(&mut self.c.fwd_offsets);
        let weak_in = std::mem::take(&mut self.c.weak);
        let mut wi = 0;
        let mut targets = keys.map_into_u32(|i, id| {
            let flag = if wi < weak_in.len() && weak_in[wi].0 as usize == i {
                wi += 1;
                WEAK
            } else {
                0
            };
            find(id).map_or(NONE, |t| t | flag)
        })?;
        let mut weak_out = with_room(weak_in.len(), "referents")?;
        let mut wi = 0;
        let (mut out, mut read) = (0usize, 0usize);
        // The object holding the most of them, and how many hold any: the
        // warning names it, so a user can look at what holds them.
        let (mut top, mut holders) = (None::<(usize, u32)>, 0u64);
        for s in 0..offsets.len() - 1 {
            let end = offsets[s + 1] as usize;
            let kept_before = out;
            let read_before = read;
            while read < end {
                let t = targets[read];
                let was_weak = wi < weak_in.len() && weak_in[wi].0 as usize == read;
                if t != NONE {
                    if was_weak {
                        weak_out.push((out as u32, weak_in[wi].1));
                    }
                    targets[out] = t;
                    out += 1;
                }
                wi += usize::from(was_weak);
                read += 1;
            }
            let dropped = (read - read_before) - (out - kept_before);
            if dropped > 0 {
                holders += 1;
                if top.is_none_or(|(d, _)| dropped > d) {
                    top = Some((dropped, s as u32));
                }
            }
            offsets[s + 1] = out as u32;
        }
        targets.truncate(out);
        targets.shrink_to_fit();
        let dangling = (read - out) as u64;
        self.meta.dangling = dangling;
        if let Some((most, s)) = top {
            self.meta.warnings.push(dangling_warning(
                dangling,
                holders,
                most,
                self.c.keys.get(s as usize),
                self.class_name(s),
            ));
        }
        Ok((Csr { offsets, targets }, weak_out))
    }

    /// Chooses the size model, then writes every object's shallow size and
    /// each class's instance count and bytes.
    fn sizes(&mut self, perm: &[u32]) -> io::Result<()> {
        let classes = &self.c.classes;
        let by_id: FxHashMap<u64, u32> = classes
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.dump.as_ref().map(|d| (d.class_id, i as u32)))
            .collect();
        let chains: Vec<Option<Vec<Level>>> = (0..classes.len() as u32)
            .map(|c| chain(classes, &by_id, &self.c.strings, c))
            .collect();
        let candidates = SizeModel::candidates();
        let per_model = |m: &SizeModel| -> Vec<Option<u64>> {
            chains
                .iter()
                .map(|ch| ch.as_ref().map(|ch| m.instance_size(ch)))
                .collect()
        };
        let mut is_class_object = Bits::new(self.c.class_of.len())?;
        for &(s, _) in &self.c.class_objects {
            is_class_object.set(s);
        }
        // Neighbours in address order, a million at most.
        let step = (perm.len() / 1_000_000).max(1);
        let pairs: Vec<(u32, u64)> = (0..perm.len().saturating_sub(1))
            .step_by(step)
            .filter(|&r| !is_class_object.get(perm[r]))
            .map(|r| {
                let (a, b) = (perm[r], perm[r + 1]);
                (a, self.c.keys.get(b as usize) - self.c.keys.get(a as usize))
            })
            .collect();
        let packed_hint = self.class_has_field("java.lang.Class", "classData");
        let oracle = Oracle {
            kinds: &self.kinds,
            class_of: &self.c.class_of,
            length: &self.c.length,
            sizes: candidates.iter().map(per_model).collect(),
        };
        let inference = infer(&pairs, &oracle, packed_hint);
        drop(oracle);
        let model = inference.model;
        // Instances of a class without a complete chain: the header.
        self.instance_size = per_model(&model)
            .into_iter()
            .map(|s| s.unwrap_or(u64::from(model.header).next_multiple_of(8)))
            .collect();
        self.meta.model = model;
        self.meta.model_reason = inference.reason;
        if inference.from_addresses {
            self.measure_spacing(perm, &is_class_object);
        }
        let jlc_size = self
            .instance_size
            .get(self.jlc as usize)
            .copied()
            .unwrap_or(16);
        let classes = &self.c.classes;
        let mut class_count = vec![0u64; classes.len()];
        let mut class_bytes = vec![0u64; classes.len()];
        let mut total = 0u64;
        let mut shallow = self.w.sink::<u32>(SEC_SHALLOW);
        let mut objects_of_class = self.c.class_objects.iter().peekable();
        for (s, &c) in self.c.class_of.iter().enumerate() {
            let size = match objects_of_class.peek() {
                Some(&&(o, described)) if o as usize == s => {
                    objects_of_class.next();
                    mirror_size(&model, jlc_size, &self.c.classes[described as usize])
                }
                _ => match self.kinds.get(c as usize) {
                    Some(ClassKind::Instance) => self.instance_size[c as usize],
                    Some(ClassKind::ObjectArray) => model.array_size(None, self.c.length[s]),
                    Some(ClassKind::PrimitiveArray(t)) => {
                        model.array_size(Some(*t), self.c.length[s])
                    }
                    None => 0,
                },
            };
            if let Some(i) = (c as usize).checked_sub(0).filter(|&i| i < classes.len()) {
                class_count[i] += 1;
                class_bytes[i] += size;
            }
            total += size;
            shallow.push(self.w, u32::try_from(size / 8).unwrap_or(u32::MAX))?;
        }
        shallow.finish(self.w)?;
        self.meta.total_shallow = total;
        self.meta.classes = self
            .c
            .classes
            .iter()
            .enumerate()
            .map(|(i, rc)| self.class_info(rc, i, class_count[i], class_bytes[i]))
            .collect();
        Ok(())
    }

    /// Instance sizes from the spacing of each class's objects (see
    /// [`Spacing`]), where it differs from the layout.
    fn measure_spacing(&mut self, perm: &[u32], is_class_object: &Bits) {
        let mut spacing = Spacing::new(self.c.classes.len());
        for r in 0..perm.len().saturating_sub(1) {
            let s = perm[r] as usize;
            let c = self.c.class_of[s] as usize;
            if is_class_object.get(s as u32) || self.kinds.get(c) != Some(&ClassKind::Instance) {
                continue;
            }
            let d = self.c.keys.get(perm[r + 1] as usize) - self.c.keys.get(s);
            spacing.add(c, self.instance_size[c], d);
        }
        let mut changed = Vec::new();
        for (c, size) in self.instance_size.iter_mut().enumerate() {
            if let Some(m) = spacing.size(c).filter(|&m| m != *size) {
                changed.push(self.c.classes[c].name.clone());
                *size = m;
            }
        }
        if !changed.is_empty() {
            changed.sort();
            self.meta.model_reason.push_str(&format!(
                "; {} class(es) sized by the spacing of their objects (fields the VM adds): {}",
                changed.len(),
                changed.join(", ")
            ));
        }
    }

    fn name(&self, id: u64) -> String {
        self.c
            .strings
            .get(&id)
            .cloned()
            .unwrap_or_else(|| format!("<name 0x{id:x}>"))
    }

    fn class_has_field(&self, class: &str, field: &str) -> bool {
        self.c.classes.iter().any(|c| {
            c.name == class
                && c.dump.as_ref().is_some_and(|d| {
                    d.instance_fields
                        .iter()
                        .any(|f| self.c.strings.get(&f.name_id).is_some_and(|n| n == field))
                })
        })
    }

    fn class_info(&self, rc: &RawClass, i: usize, instances: u64, shallow: u64) -> ClassInfo {
        let d = rc.dump.as_ref();
        ClassInfo {
            id: d.map_or(0, |d| d.class_id),
            name: rc.name.clone(),
            kind: self.kinds[i],
            super_id: d.map_or(0, |d| d.super_class_id),
            loader_id: d.map_or(0, |d| d.class_loader_id),
            fields: d.map_or_else(Vec::new, |d| {
                d.instance_fields
                    .iter()
                    .map(|f| FieldDef {
                        name: self.name(f.name_id),
                        ty: f.ty,
                    })
                    .collect()
            }),
            statics: d.map_or_else(Vec::new, |d| {
                d.static_fields
                    .iter()
                    .map(|f| StaticDef {
                        name: self.name(f.name_id),
                        value: f.value,
                    })
                    .collect()
            }),
            instance_size: if self.kinds[i] == ClassKind::Instance {
                self.instance_size[i]
            } else {
                0
            },
            object: rc.object,
            instances,
            shallow,
            retained: 0,
        }
    }

    /// Retained sizes, the dominator tree's rows, class members, and the
    /// per-class and per-site totals (see the module notes for the order,
    /// which keeps few arrays alive at once).
    fn retained(&mut self, idom: Vec<u32>) -> io::Result<()> {
        let r = self.w.reader()?;
        let num: Vec<u32> = r.all(SEC_NUM)?;
        let n = num.len();
        let mut ret = filled(n + 1, 0u64, "retained sizes")?;
        r.for_each::<u32>(SEC_SHALLOW, |first, run| {
            for (i, &sh) in run.iter().enumerate() {
                ret[num[first as usize + i] as usize] = u64::from(sh) * 8;
            }
        })?;
        if self.c.has_traces {
            self.site_counts(&r)?;
        }
        retained::retained(&idom, &mut ret);
        {
            let mut order = filled(n + 1, 0u32, "preorder numbers")?;
            for (s, &k) in num.iter().enumerate() {
                order[k as usize] = s as u32;
            }
            order[0] = NONE;
            self.w.put(SEC_ORDER, &order)?;
        }
        let classes = self.meta.classes.len();
        let mut class_k = filled(n + 1, NONE, "objects' classes")?;
        r.for_each::<u32>(SEC_CLASS, |first, run| {
            for (i, &c) in run.iter().enumerate() {
                if (c as usize) < classes {
                    class_k[num[first as usize + i] as usize] = c;
                }
            }
        })?;
        let site_k = if self.c.has_traces {
            let site: FxHashMap<u32, u32> = self
                .meta
                .sites
                .iter()
                .enumerate()
                .map(|(i, s)| (s.trace, i as u32))
                .collect();
            let mut v = filled(n + 1, NONE, "objects' allocation sites")?;
            r.for_each::<u32>(SEC_TRACE, |first, run| {
                for (i, t) in run.iter().enumerate() {
                    v[num[first as usize + i] as usize] = site.get(t).copied().unwrap_or(NONE);
                }
            })?;
            Some(v)
        } else {
            None
        };
        drop(num);
        let tree = retained::children(&idom, &ret)?;
        drop(idom);
        self.w.put(SEC_DOM_OFF, &tree.offsets)?;
        self.w.put(SEC_DOM_TGT, &tree.targets)?;
        self.w.put(
            SEC_ACCUMULATION,
            &retained::accumulation_points(&tree, &ret, SUSPECT_TOPS),
        )?;
        let by_class = retained::set_retained(&tree, &ret, &class_k, classes)?;
        for (c, v) in self.meta.classes.iter_mut().zip(by_class) {
            c.retained = v;
        }
        if let Some(site_k) = site_k {
            let by_site = retained::set_retained(&tree, &ret, &site_k, self.meta.sites.len())?;
            for (s, v) in self.meta.sites.iter_mut().zip(by_site) {
                s.retained = v;
            }
        }
        drop(tree);
        let members = retained::by_retained(&class_k, classes, &ret)?;
        drop(class_k);
        self.w.put(SEC_MEMBERS_OFF, &members.offsets)?;
        self.w.put(SEC_MEMBERS_TGT, &members.targets)?;
        drop(members);
        self.w.put(SEC_RETAINED, &ret)?;
        Ok(())
    }

    /// Instances and shallow bytes per allocation trace.
    fn site_counts(&mut self, r: &Reader) -> io::Result<()> {
        let trace: Vec<u32> = r.all(SEC_TRACE)?;
        let mut by: FxHashMap<u32, (u64, u64)> = FxHashMap::default();
        r.for_each::<u32>(SEC_SHALLOW, |first, run| {
            for (i, &sh) in run.iter().enumerate() {
                let e = by.entry(trace[first as usize + i]).or_default();
                e.0 += 1;
                e.1 += u64::from(sh) * 8;
            }
        })?;
        let mut sites: Vec<SiteInfo> = by
            .into_iter()
            .map(|(trace, (instances, shallow))| SiteInfo {
                trace,
                instances,
                shallow,
                retained: 0,
            })
            .collect();
        sites.sort_by_key(|s| s.trace);
        self.meta.sites = sites;
        Ok(())
    }

    /// Java-style name of object `s`'s class ("?" when it has none).
    fn class_name(&self, s: u32) -> &str {
        self.c
            .class_of
            .get(s as usize)
            .and_then(|&c| self.c.classes.get(c as usize))
            .map_or("?", |c| c.name.as_str())
    }
}

/// The warning for references to IDs that are no object of the dump,
/// naming the object that holds the most of them (docs/heap-analyser.md,
/// "References to objects the dump left out").
fn dangling_warning(dangling: u64, holders: u64, most: usize, id: u64, class: &str) -> String {
    let held = if holders == 1 {
        "all held by".to_string()
    } else {
        format!("held by {holders} objects, {most} of them by")
    };
    format!(
        "{dangling} reference(s) to IDs that are no object of the dump (left out; {held} {id:#x}, a {class})"
    )
}

/// A class object's size: HotSpot keeps a class's static fields in its
/// `java.lang.Class` instance, after the fields of `java.lang.Class`
/// (whose injected VM fields the dump does not list: an estimate).
fn mirror_size(model: &SizeModel, class_instance: u64, described: &RawClass) -> u64 {
    let statics: u64 = described.dump.as_ref().map_or(0, |d| {
        d.static_fields
            .iter()
            .map(|f| match f.value.basic_type() {
                BasicType::Object => u64::from(model.reference),
                t => u64::from(t.size(0)),
            })
            .sum()
    });
    (class_instance + statics).next_multiple_of(u64::from(model.align))
}

/// An index opened for queries: its metadata in memory, every per-object
/// array read on demand.
pub struct HeapIndex {
    pub meta: Meta,
    r: Reader,
}

fn bad(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("damaged index: {what}"))
}

impl HeapIndex {
    /// Opens a complete index file; returns it and its stored identity.
    pub fn open(file: File) -> io::Result<(HeapIndex, Vec<u8>)> {
        let r = Reader::open(file)?;
        let identity = r.all::<u8>(SEC_IDENTITY)?;
        let meta = Meta::decode(&r.all::<u8>(SEC_META)?).map_err(|e| bad(&e))?;
        let n = meta.objects;
        for (sec, len) in [
            (SEC_IDS, n),
            (SEC_OFFSETS, n),
            (SEC_CLASS, n),
            (SEC_LENGTH, n),
            (SEC_TRACE, n),
            (SEC_SHALLOW, n),
            (SEC_FWD_OFF, n + 1),
            (SEC_REV_OFF, n + 1),
            (SEC_PARENT_ALL, n),
            (SEC_PARENT_STRONG, n),
            (SEC_NUM, n),
            (SEC_ORDER, n + 1),
            (SEC_IDOM, n + 1),
            (SEC_RETAINED, n + 1),
            (SEC_DOM_OFF, n + 2),
            (SEC_MEMBERS_OFF, meta.classes.len() as u64 + 1),
        ] {
            if r.len(sec) != len {
                return Err(bad(&format!(
                    "section {sec} holds {} entries, not {len}",
                    r.len(sec)
                )));
            }
        }
        if r.len(SEC_PERM) > n {
            return Err(bad("identifier ranks"));
        }
        if r.len(SEC_ACCUMULATION) > SUSPECT_TOPS as u64 {
            return Err(bad("accumulation points"));
        }
        Ok((HeapIndex { meta, r }, identity))
    }

    pub fn objects(&self) -> u32 {
        self.meta.objects as u32
    }

    fn object(&self, v: u32, what: &str) -> io::Result<u32> {
        if u64::from(v) < self.meta.objects {
            Ok(v)
        } else {
            Err(bad(what))
        }
    }

    /// The object with identifier `id`, if any.
    pub fn find(&self, id: u64) -> io::Result<Option<u32>> {
        let Some(range) = self.meta.directory.bucket(id) else {
            return Ok(None);
        };
        if u64::from(range.end) > self.r.len(SEC_PERM) {
            return Err(bad("identifier directory"));
        }
        let perm: Vec<u32> = self.r.range(
            SEC_PERM,
            u64::from(range.start),
            u64::from(range.end - range.start),
        )?;
        let (mut lo, mut hi) = (0usize, perm.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            let s = self.object(perm[mid], "identifier ranks")?;
            let v = self.id(s)?;
            match v.cmp(&id) {
                std::cmp::Ordering::Equal => return Ok(Some(s)),
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
            }
        }
        Ok(None)
    }

    pub fn id(&self, s: u32) -> io::Result<u64> {
        self.r.get(SEC_IDS, u64::from(s))
    }

    pub fn class_of(&self, s: u32) -> io::Result<Option<&ClassInfo>> {
        let c: u32 = self.r.get(SEC_CLASS, u64::from(s))?;
        Ok(self.meta.classes.get(c as usize))
    }

    pub fn class_number(&self, s: u32) -> io::Result<u32> {
        self.r.get(SEC_CLASS, u64::from(s))
    }

    pub fn length(&self, s: u32) -> io::Result<u32> {
        self.r.get(SEC_LENGTH, u64::from(s))
    }

    pub fn shallow(&self, s: u32) -> io::Result<u64> {
        Ok(u64::from(self.r.get::<u32>(SEC_SHALLOW, u64::from(s))?) * 8)
    }

    pub fn dump_offset(&self, s: u32) -> io::Result<u64> {
        self.r.get(SEC_OFFSETS, u64::from(s))
    }

    pub fn trace_serial(&self, s: u32) -> io::Result<u32> {
        self.r.get(SEC_TRACE, u64::from(s))
    }

    /// Calls `f` with runs of the objects' allocation trace serials and
    /// the object number of each run's first.
    pub fn each_trace(&self, f: impl FnMut(u64, &[u32])) -> io::Result<()> {
        self.r.for_each::<u32>(SEC_TRACE, f)
    }

    /// Preorder number of an object.
    pub fn preorder(&self, s: u32) -> io::Result<u32> {
        self.r.get(SEC_NUM, u64::from(s))
    }

    /// The object of a preorder number (`None` for the virtual root).
    pub fn object_at(&self, k: u32) -> io::Result<Option<u32>> {
        let s: u32 = self.r.get(SEC_ORDER, u64::from(k))?;
        if s == NONE {
            return Ok(None);
        }
        self.object(s, "preorder").map(Some)
    }

    pub fn retained(&self, s: u32) -> io::Result<u64> {
        let k = self.preorder(s)?;
        self.r.get(SEC_RETAINED, u64::from(k))
    }

    /// Immediate dominator of an object (`None`: the virtual root).
    pub fn dominator(&self, s: u32) -> io::Result<Option<u32>> {
        let k = self.preorder(s)?;
        let d: u32 = self.r.get(SEC_IDOM, u64::from(k))?;
        self.object_at(d)
    }

    fn row(
        &self,
        off: SectionId,
        tgt: SectionId,
        v: u64,
        skip: u64,
        limit: u64,
    ) -> io::Result<(u64, Vec<u32>)> {
        let a: u32 = self.r.get(off, v)?;
        let b: u32 = self.r.get(off, v + 1)?;
        if b < a || u64::from(b) > self.r.len(tgt) {
            return Err(bad("adjacency offsets"));
        }
        let total = u64::from(b - a);
        let from = u64::from(a) + skip.min(total);
        let count = limit.min(u64::from(b) - from);
        Ok((total, self.r.range(tgt, from, count)?))
    }

    /// Where the bytes of each of the first [`SUSPECT_TOPS`] biggest
    /// retainers accumulate (`retained::accumulation_points`), in the
    /// order of [`HeapIndex::dominated`]`(None, ..)`.
    pub fn accumulation_points(&self) -> io::Result<Vec<Option<u32>>> {
        let ks: Vec<u32> = self.r.all(SEC_ACCUMULATION)?;
        ks.into_iter().map(|k| self.object_at(k)).collect()
    }

    /// Dominator tree children of an object (`None`: of the virtual root),
    /// biggest retained first: how many, and objects `skip..skip+limit`.
    pub fn dominated(&self, s: Option<u32>, skip: u64, limit: u64) -> io::Result<(u64, Vec<u32>)> {
        let k = match s {
            Some(s) => self.preorder(s)?,
            None => 0,
        };
        let (total, ks) = self.row(SEC_DOM_OFF, SEC_DOM_TGT, u64::from(k), skip, limit)?;
        let mut out = Vec::with_capacity(ks.len());
        for k in ks {
            out.push(self.object_at(k)?.ok_or_else(|| bad("dominator tree"))?);
        }
        Ok((total, out))
    }

    /// Objects of a class, biggest retained first.
    pub fn members(&self, class: u32, skip: u64, limit: u64) -> io::Result<(u64, Vec<u32>)> {
        let (total, ks) = self.row(
            SEC_MEMBERS_OFF,
            SEC_MEMBERS_TGT,
            u64::from(class),
            skip,
            limit,
        )?;
        let mut out = Vec::with_capacity(ks.len());
        for k in ks {
            out.push(self.object_at(k)?.ok_or_else(|| bad("class members"))?);
        }
        Ok((total, out))
    }

    /// Objects referring to `s` (flag [`WEAK`] for referent references).
    pub fn referrers(&self, s: u32, skip: u64, limit: u64) -> io::Result<(u64, Vec<u32>)> {
        self.row(SEC_REV_OFF, SEC_REV_TGT, u64::from(s), skip, limit)
    }

    /// Objects `s` refers to (flag [`WEAK`] for referent references).
    pub fn references(&self, s: u32, skip: u64, limit: u64) -> io::Result<(u64, Vec<u32>)> {
        self.row(SEC_FWD_OFF, SEC_FWD_TGT, u64::from(s), skip, limit)
    }

    /// The referrer one step closer to the nearest GC root, over every
    /// reference or strong ones only: `Some(s)` for a root, `None` when
    /// no root reaches it.
    pub fn parent(&self, s: u32, strong: bool) -> io::Result<Option<u32>> {
        let sec = if strong {
            SEC_PARENT_STRONG
        } else {
            SEC_PARENT_ALL
        };
        let p: u32 = self.r.get(sec, u64::from(s))?;
        if p == NONE {
            return Ok(None);
        }
        self.object(p, "shortest paths").map(Some)
    }
}
