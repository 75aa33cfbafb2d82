//! Shallow sizes as the JVM counts them (`jmap -histo` bytes): object
//! header, fields as HotSpot lays them out, array header and elements,
//! alignment. A dump records none of this, so the size model is inferred
//! from the dump itself (docs/heap-analyser.md, "Shallow sizes"):
//!
//! * HotSpot's object IDs are addresses, and a live dump's objects sit next
//!   to each other, so the distance from one object to the next is the
//!   first one's size. Each candidate model (compressed references and
//!   class pointers or not, compact object headers, where array elements
//!   begin, the field layout of JDK 8-14 or of JDK 15+) predicts every
//!   size; the model whose predictions match the most distances is the
//!   VM's.
//! * Where IDs are not addresses (the agent's own dumps), the model is the
//!   JVM's default (compressed references and class pointers) with the
//!   field layout told by `java.lang.Class` itself: JDK 15 added its
//!   `classData` field (hidden classes) and its new field layout at once.

use crate::reader::BasicType;

/// How HotSpot lays out the instance fields of a class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FieldLayout {
    /// JDK 8-14: each class's fields after its superclass's (rounded up to
    /// a reference), grouped by size, one gap before the first `long`
    /// filled with smaller fields.
    Grouped,
    /// JDK 15+: fields sorted by size fill the smallest hole that fits,
    /// holes in superclasses included.
    #[default]
    Packed,
}

/// Object header and array geometry of one VM configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SizeModel {
    /// Bytes before the first field of an object.
    pub header: u32,
    /// Bytes of a reference field or element.
    pub reference: u32,
    /// Offset just past an array's length field.
    pub length_end: u32,
    /// Array elements begin at a multiple of 8 whatever their size (JDK
    /// 21 and earlier without compressed class pointers).
    pub word_aligned_base: bool,
    /// Object alignment.
    pub align: u32,
    pub layout: FieldLayout,
}

impl Default for SizeModel {
    /// HotSpot's default on 64 bits (heaps below 32 GiB): compressed
    /// references and class pointers, JDK 15+ field layout.
    fn default() -> Self {
        SizeModel {
            header: 12,
            reference: 4,
            length_end: 16,
            word_aligned_base: false,
            align: 8,
            layout: FieldLayout::Packed,
        }
    }
}

/// One class's part of an instance: its fields as the VM has them, and
/// the padding `@Contended` puts around them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Level {
    pub fields: Vec<BasicType>,
    /// Bytes of padding before the class's own fields (a `@Contended`
    /// class) and after them (`@Contended` fields or class).
    pub pad_before: u64,
    pub pad_after: u64,
    /// JDK 8-14 lay a few `java.lang` classes out references first,
    /// without filling gaps (their offsets were hard-coded in the VM).
    pub oops_first: bool,
}

/// `-XX:ContendedPaddingWidth`'s default.
const CONTENDED_PADDING: u64 = 128;

/// A class's fields as HotSpot lays them out, from what the dump lists
/// (`declared`: name and type): HotSpot adds fields of its own to a few
/// classes (javaClasses.hpp's injected fields), and pads the JDK's
/// `@Contended` fields and classes; the dump shows neither. Checked
/// against `jmap -histo` on JDK 11, 17, 21 and 25 (crates/hprof-e2e/tests/heap_analyser.rs).
pub fn vm_level(class: &str, declared: &[(&str, BasicType)]) -> Level {
    use BasicType::*;
    let has = |n: &str| declared.iter().any(|f| f.0 == n);
    let mut fields: Vec<BasicType> = declared.iter().map(|f| f.1).collect();
    let (mut pad_before, mut pad_after) = (0, 0);
    let injected: &[BasicType] = match class {
        "java.lang.ClassLoader" | "java.lang.Module" | "java.lang.invoke.MemberName" => &[Long],
        "java.lang.invoke.ResolvedMethodName" => &[Long, Object],
        "java.lang.invoke.MethodHandleNatives$CallSiteContext" => &[Long, Long],
        "java.lang.StackFrameInfo" => &[Short],
        "java.lang.InternalError" => &[Boolean],
        "java.lang.String" => &[Byte],
        // JDK 19+ (virtual threads): JVMTI state, transition count and
        // flag, JFR epoch.
        "java.lang.Thread" if has("holder") => &[Long, Int, Boolean, Short],
        _ => &[],
    };
    fields.extend_from_slice(injected);
    match class {
        // Up to JDK 18 the ThreadLocalRandom fields are a @Contended group.
        "java.lang.Thread" if has("threadLocalRandomSeed") && !has("holder") => {
            pad_after = 2 * CONTENDED_PADDING;
        }
        "java.util.concurrent.atomic.Striped64$Cell"
        | "java.util.concurrent.ConcurrentHashMap$CounterCell"
        | "java.util.concurrent.Exchanger$Node" => {
            pad_before = CONTENDED_PADDING;
            pad_after = CONTENDED_PADDING;
        }
        _ => {}
    }
    let oops_first = matches!(
        class,
        "java.lang.AssertionStatusDirectives"
            | "java.lang.Class"
            | "java.lang.ClassLoader"
            | "java.lang.ref.Reference"
            | "java.lang.ref.SoftReference"
            | "java.lang.StackTraceElement"
            | "java.lang.String"
            | "java.lang.Throwable"
            | "java.lang.Boolean"
            | "java.lang.Character"
            | "java.lang.Float"
            | "java.lang.Double"
            | "java.lang.Byte"
            | "java.lang.Short"
            | "java.lang.Integer"
            | "java.lang.Long"
    );
    Level {
        fields,
        pad_before,
        pad_after,
        oops_first,
    }
}

fn align_up(n: u64, a: u64) -> u64 {
    n.div_ceil(a) * a
}

impl SizeModel {
    /// Every configuration the inference tries.
    pub fn candidates() -> Vec<SizeModel> {
        let base = SizeModel::default();
        let mut v = Vec::new();
        let geometries = [
            // compressed references and class pointers
            (12, 4, 16, false),
            // compressed class pointers only
            (12, 8, 16, false),
            // neither, JDK <= 21 and JDK 22+ array bases
            (16, 8, 20, true),
            (16, 8, 20, false),
            // compressed references without compressed class pointers
            (16, 4, 20, true),
            (16, 4, 20, false),
        ];
        for layout in [FieldLayout::Packed, FieldLayout::Grouped] {
            for &(header, reference, length_end, word_aligned_base) in &geometries {
                v.push(SizeModel {
                    header,
                    reference,
                    length_end,
                    word_aligned_base,
                    layout,
                    ..base
                });
            }
        }
        // Compact object headers (JDK 24+), with and without compressed
        // references.
        for reference in [4, 8] {
            v.push(SizeModel {
                header: 8,
                reference,
                length_end: 12,
                ..base
            });
        }
        v
    }

    /// A short description.
    pub fn describe(&self) -> String {
        let refs = if self.reference == 4 {
            "compressed references"
        } else {
            "64-bit references"
        };
        let headers = match self.header {
            8 => "compact object headers",
            12 => "compressed class pointers",
            _ => "64-bit class pointers",
        };
        let layout = match self.layout {
            FieldLayout::Packed => "JDK 15+ field layout",
            FieldLayout::Grouped => "JDK 8-14 field layout",
        };
        format!("{refs}, {headers}, {layout}")
    }

    fn field_size(&self, t: BasicType) -> u32 {
        match t {
            BasicType::Object => self.reference,
            t => t.size(0),
        }
    }

    /// Where the elements of an array with `element`-byte elements begin.
    pub fn array_base(&self, element: u32) -> u64 {
        let a = if self.word_aligned_base { 8 } else { element };
        align_up(u64::from(self.length_end), u64::from(a))
    }

    /// Shallow size of an array; `element` is `None` for references.
    pub fn array_size(&self, element: Option<BasicType>, length: u32) -> u64 {
        let e = element.map_or(self.reference, |t| t.size(0));
        align_up(
            self.array_base(e) + u64::from(length) * u64::from(e),
            u64::from(self.align),
        )
    }

    /// Shallow size of an instance whose class and superclasses have
    /// `chain` (`java.lang.Object` first).
    pub fn instance_size<'a>(&self, chain: impl IntoIterator<Item = &'a Level>) -> u64 {
        let end = match self.layout {
            FieldLayout::Grouped => self.grouped_end(chain),
            FieldLayout::Packed => self.packed_end(chain),
        };
        align_up(end, u64::from(self.align))
    }

    fn grouped_end<'a>(&self, chain: impl IntoIterator<Item = &'a Level>) -> u64 {
        let oop = u64::from(self.reference);
        let mut end = u64::from(self.header);
        for level in chain {
            let fields = &level.fields;
            end += level.pad_before;
            if fields.is_empty() {
                end += level.pad_after;
                continue;
            }
            let (mut longs, mut ints, mut shorts, mut bytes, mut oops) =
                (0u64, 0u64, 0u64, 0u64, 0u64);
            for &t in fields {
                match self.field_size(t) {
                    _ if t == BasicType::Object => oops += 1,
                    8 => longs += 1,
                    4 => ints += 1,
                    2 => shorts += 1,
                    _ => bytes += 1,
                }
            }
            let mut off = align_up(end, oop);
            if level.oops_first {
                off += oop * oops;
                if longs > 0 {
                    off = align_up(off, 8);
                }
                end = off + 8 * longs + 4 * ints + 2 * shorts + bytes + level.pad_after;
                continue;
            }
            if longs > 0 && !off.is_multiple_of(8) {
                // The gap before the first long takes what fits.
                let mut gap = 8 - off % 8;
                if ints > 0 && gap >= 4 {
                    ints -= 1;
                    gap -= 4;
                }
                while gap >= 2 && shorts > 0 {
                    shorts -= 1;
                    gap -= 2;
                }
                while gap > 0 && bytes > 0 {
                    bytes -= 1;
                    gap -= 1;
                }
                if gap >= oop && oops > 0 {
                    oops -= 1;
                }
                off = align_up(off, 8);
            }
            off += 8 * longs + 4 * ints + 2 * shorts + bytes;
            if oops > 0 {
                off = align_up(off, oop) + oop * oops;
            }
            end = off + level.pad_after;
            if level.pad_after > 0 {
                // Subclass fields start after the padded, aligned object.
                end = align_up(end, u64::from(self.align));
            }
        }
        end
    }

    fn packed_end<'a>(&self, chain: impl IntoIterator<Item = &'a Level>) -> u64 {
        // Empty slots below `end`: (offset, length), in address order.
        let mut holes: Vec<(u64, u64)> = Vec::new();
        let mut end = u64::from(self.header);
        let mut sizes: Vec<u64> = Vec::new();
        for level in chain {
            let fields = &level.fields;
            if level.pad_before > 0 {
                // A @Contended class's fields go after padding, in no hole.
                holes.clear();
                end += level.pad_before;
            }
            sizes.clear();
            let mut prims: Vec<u64> = fields
                .iter()
                .filter(|&&t| t != BasicType::Object)
                .map(|&t| u64::from(t.size(0)))
                .collect();
            prims.sort_unstable_by(|a, b| b.cmp(a));
            sizes.extend(prims);
            let oops = fields.iter().filter(|&&t| t == BasicType::Object).count();
            sizes.extend(std::iter::repeat_n(u64::from(self.reference), oops));
            for &size in &sizes {
                // The smallest hole that fits (the highest among equals).
                let mut best: Option<usize> = None;
                for (i, &(off, len)) in holes.iter().enumerate().rev() {
                    let pad = align_up(off, size) - off;
                    if len >= size + pad && best.is_none_or(|b| len < holes[b].1) {
                        best = Some(i);
                    }
                }
                match best {
                    Some(i) => {
                        let (off, len) = holes.remove(i);
                        let at = align_up(off, size);
                        let mut k = i;
                        if at > off {
                            holes.insert(k, (off, at - off));
                            k += 1;
                        }
                        if off + len > at + size {
                            holes.insert(k, (at + size, off + len - at - size));
                        }
                    }
                    None => {
                        let at = align_up(end, size);
                        if at > end {
                            holes.push((end, at - end));
                        }
                        end = at + size;
                    }
                }
            }
            if level.pad_after > 0 {
                // Padding is no hole for subclasses, which start after the
                // padded, aligned object.
                holes.clear();
                end = align_up(end + level.pad_after, u64::from(self.align));
            }
        }
        end
    }
}

impl SizeModel {
    pub(super) fn encode(&self, e: &mut super::meta::Enc) {
        e.u32(self.header);
        e.u32(self.reference);
        e.u32(self.length_end);
        e.u8(u8::from(self.word_aligned_base));
        e.u32(self.align);
        e.u8(match self.layout {
            FieldLayout::Grouped => 0,
            FieldLayout::Packed => 1,
        });
    }

    pub(super) fn decode(d: &mut super::meta::Dec<'_>) -> Result<SizeModel, String> {
        let m = SizeModel {
            header: d.u32()?,
            reference: d.u32()?,
            length_end: d.u32()?,
            word_aligned_base: d.u8()? != 0,
            align: d.u32()?,
            layout: if d.u8()? == 0 {
                FieldLayout::Grouped
            } else {
                FieldLayout::Packed
            },
        };
        let sane = [4, 8].contains(&m.reference)
            && (4..=32).contains(&m.header)
            && (4..=64).contains(&m.length_end)
            && m.align.is_power_of_two()
            && m.align <= 4096;
        if !sane {
            return Err(format!("size model {m:?}"));
        }
        Ok(m)
    }
}

/// What each candidate model predicts for one object.
pub trait SizeOracle {
    /// Size of object `obj` under `model`, `None` when it cannot say (a
    /// class object: its size depends on VM internals).
    fn size(&self, model: &SizeModel, model_index: usize, obj: u32) -> Option<u64>;
}

/// The chosen model and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inference {
    pub model: SizeModel,
    pub reason: String,
    /// The addresses confirmed it (so each class's own spacing can be
    /// trusted too: see [`Spacing`]).
    pub from_addresses: bool,
}

/// Chooses the model whose predictions match the most of `pairs` (an
/// object and the distance from its address to the next object's).
/// `packed_hint` says which field layout the JVM has when the addresses
/// decide nothing.
pub fn infer(pairs: &[(u32, u64)], oracle: &impl SizeOracle, packed_hint: bool) -> Inference {
    let candidates = SizeModel::candidates();
    let mut scores = vec![0u64; candidates.len()];
    let mut judged = 0u64;
    for &(obj, delta) in pairs {
        let mut any = false;
        for (i, m) in candidates.iter().enumerate() {
            if let Some(s) = oracle.size(m, i, obj) {
                any = true;
                if s == delta {
                    scores[i] += 1;
                }
            }
        }
        judged += u64::from(any);
    }
    let hinted = |m: &SizeModel| (m.layout == FieldLayout::Packed) == packed_hint;
    let best = (0..candidates.len())
        .max_by_key(|&i| (scores[i], hinted(&candidates[i]), u64::MAX - i as u64));
    let fallback = SizeModel {
        layout: if packed_hint {
            FieldLayout::Packed
        } else {
            FieldLayout::Grouped
        },
        ..SizeModel::default()
    };
    match best {
        // At least half of the objects must sit where the model says: a
        // dump whose IDs are not addresses matches by chance only.
        Some(i) if judged > 0 && scores[i] * 2 >= judged => Inference {
            model: candidates[i],
            reason: format!(
                "inferred from object addresses: {} of {} sampled objects end where the next begins",
                scores[i], judged
            ),
            from_addresses: true,
        },
        _ => Inference {
            model: fallback,
            reason: "object IDs are not addresses (or too few were sampled): HotSpot's default assumed"
                .into(),
            from_addresses: false,
        },
    }
}

/// The sizes of a class's instances as their addresses show them: the VM
/// adds fields no dump lists (`ClassLoader.loader_data`,
/// `Module.module_entry`, `MemberName.vmindex`, ...), so where objects sit
/// next to each other the most common distance from an instance to the
/// next object is its class's true size.
pub struct Spacing {
    /// Per class: (distance, times seen), a few distinct ones at most.
    tally: Vec<Vec<(u64, u32)>>,
}

impl Spacing {
    pub fn new(classes: usize) -> Spacing {
        Spacing {
            tally: vec![Vec::new(); classes],
        }
    }

    /// An instance of `class` laid out in `predicted` bytes, followed by
    /// the next object `distance` bytes further.
    #[inline]
    pub fn add(&mut self, class: usize, predicted: u64, distance: u64) {
        // Larger gaps are free space, not the object.
        if distance == 0 || distance > predicted + 512 {
            return;
        }
        let t = &mut self.tally[class];
        if let Some(e) = t.iter_mut().find(|e| e.0 == distance) {
            e.1 += 1;
        } else if t.len() < 8 {
            t.push((distance, 1));
        }
    }

    /// The size most instances of `class` show, when a majority of at
    /// least two agrees (one object may sit before free space).
    pub fn size(&self, class: usize) -> Option<u64> {
        let t = &self.tally[class];
        let total: u32 = t.iter().map(|e| e.1).sum();
        let best = t.iter().max_by_key(|e| (e.1, std::cmp::Reverse(e.0)))?;
        (best.1 >= 2 && best.1 * 2 > total).then_some(best.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use BasicType::*;

    #[test]
    fn spacing_finds_the_size_most_instances_show() {
        let mut s = Spacing::new(2);
        for d in [104, 104, 104, 96, 4096, 104] {
            s.add(0, 96, d);
        }
        assert_eq!(s.size(0), Some(104));
        s.add(1, 24, 24);
        s.add(1, 24, 32);
        assert_eq!(s.size(1), None, "no majority");
        let mut one = Spacing::new(1);
        one.add(0, 16, 32);
        assert_eq!(one.size(0), None, "one object proves nothing");
    }

    fn size(m: &SizeModel, chain: &[&[BasicType]]) -> u64 {
        let levels: Vec<Level> = chain
            .iter()
            .map(|f| Level {
                fields: f.to_vec(),
                ..Level::default()
            })
            .collect();
        m.instance_size(&levels)
    }

    #[test]
    fn instance_sizes_follow_each_field_layout() {
        let packed = SizeModel::default();
        let grouped = SizeModel {
            layout: FieldLayout::Grouped,
            ..packed
        };
        let object: &[BasicType] = &[];
        // java.lang.Object: the header, aligned.
        assert_eq!(size(&packed, &[object]), 16);
        // Integer: 12 + 4.
        assert_eq!(size(&packed, &[object, &[Int]]), 16);
        assert_eq!(size(&grouped, &[object, &[Int]]), 16);
        // Long: the long goes to 16, the gap at 12 stays empty.
        assert_eq!(size(&packed, &[object, &[Long]]), 24);
        assert_eq!(size(&grouped, &[object, &[Long]]), 24);
        // A subclass's int fills the super's gap only in the packed layout.
        assert_eq!(size(&packed, &[object, &[Long], &[Int]]), 24);
        assert_eq!(size(&grouped, &[object, &[Long], &[Int]]), 32);
        // Byte after byte across classes: packed 16, grouped 24.
        assert_eq!(size(&packed, &[object, &[Byte], &[Byte]]), 16);
        assert_eq!(size(&grouped, &[object, &[Byte], &[Byte]]), 24);
        // String (JDK 13+): byte[] value, byte coder, int hash, boolean hashIsZero.
        let string: &[BasicType] = &[Object, Byte, Int, Boolean];
        assert_eq!(size(&packed, &[object, string]), 24);
        assert_eq!(size(&grouped, &[object, string]), 24);
        // HashMap$Node: int hash, key, value, next.
        assert_eq!(size(&packed, &[object, &[Int, Object, Object, Object]]), 32);
        // Without compressed references: 16-byte header, 8-byte references.
        let wide = SizeModel {
            header: 16,
            reference: 8,
            length_end: 20,
            word_aligned_base: true,
            ..packed
        };
        assert_eq!(size(&wide, &[object, &[Int, Object, Object, Object]]), 48);
        // Gap filling by a reference in the grouped layout.
        assert_eq!(size(&grouped, &[object, &[Long, Object]]), 24);
    }

    #[test]
    fn array_sizes_follow_the_header_geometry() {
        let m = SizeModel::default();
        assert_eq!(m.array_size(Some(Int), 0), 16);
        assert_eq!(m.array_size(Some(Byte), 3), 24);
        assert_eq!(m.array_size(Some(Long), 3), 40);
        assert_eq!(m.array_size(None, 5), 40);
        let old = SizeModel {
            header: 16,
            reference: 8,
            length_end: 20,
            word_aligned_base: true,
            ..m
        };
        assert_eq!(old.array_size(Some(Byte), 3), 32);
        let new = SizeModel {
            word_aligned_base: false,
            ..old
        };
        assert_eq!(new.array_size(Some(Byte), 3), 24);
        assert_eq!(new.array_size(Some(Long), 1), 32);
        let compact = SizeModel {
            header: 8,
            length_end: 12,
            ..m
        };
        assert_eq!(compact.array_size(Some(Int), 1), 16);
        assert_eq!(compact.array_size(None, 1), 16);
        assert_eq!(compact.array_size(Some(Long), 1), 24);
    }

    struct Arrays(Vec<(Option<BasicType>, u32)>);
    impl SizeOracle for Arrays {
        fn size(&self, m: &SizeModel, _: usize, obj: u32) -> Option<u64> {
            let (t, n) = self.0[obj as usize];
            Some(m.array_size(t, n))
        }
    }

    #[test]
    fn inference_picks_the_model_the_addresses_agree_with() {
        let objs = Arrays(vec![(Some(Byte), 5), (None, 3), (Some(Long), 2), (None, 7)]);
        let truth = SizeModel {
            header: 16,
            reference: 8,
            length_end: 20,
            word_aligned_base: true,
            ..SizeModel::default()
        };
        let pairs: Vec<(u32, u64)> = (0..4)
            .map(|i| (i, objs.size(&truth, 0, i).unwrap()))
            .collect();
        let i = infer(&pairs, &objs, true);
        let m = i.model;
        assert_eq!(
            (m.header, m.reference, m.word_aligned_base),
            (16, 8, true),
            "{}",
            i.reason
        );
        assert!(i.from_addresses);
        // Distances that match nothing: the default, with the hinted layout.
        let junk: Vec<(u32, u64)> = (0..4).map(|i| (i, 1)).collect();
        let i = infer(&junk, &objs, false);
        assert!(!i.from_addresses);
        assert_eq!(
            i.model,
            SizeModel {
                layout: FieldLayout::Grouped,
                ..SizeModel::default()
            }
        );
    }
}
