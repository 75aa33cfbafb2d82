//! What an index knows besides its per-object arrays: the classes (with
//! their fields, statics and totals), the GC roots, the allocation traces,
//! the size model, counts and warnings; and their encoding in the index
//! file (a small hand-written format: the index is read back only by this
//! module, and every length is checked against the bytes left).

use crate::reader::BasicType;
use crate::vocab::Value;

use super::sizes::SizeModel;

/// How a class's objects are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClassKind {
    Instance,
    ObjectArray,
    PrimitiveArray(BasicType),
}

#[derive(Debug, Clone, PartialEq)]
pub struct FieldDef {
    pub name: String,
    pub ty: BasicType,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StaticDef {
    pub name: String,
    pub value: Value,
}

/// One class of the dump (a CLASS DUMP, or a stand-in for objects whose
/// class the dump does not describe).
#[derive(Debug, Clone, PartialEq)]
pub struct ClassInfo {
    /// Class object ID (0 for a stand-in without one).
    pub id: u64,
    /// Java style: `java.lang.String`, `int[]`, `Outer$Inner`.
    pub name: String,
    pub kind: ClassKind,
    pub super_id: u64,
    pub loader_id: u64,
    /// Instance fields declared by this class, in dump order.
    pub fields: Vec<FieldDef>,
    pub statics: Vec<StaticDef>,
    /// Shallow size of an instance (instance classes).
    pub instance_size: u64,
    /// Number of the class object in the index, if the dump has it.
    pub object: Option<u32>,
    pub instances: u64,
    pub shallow: u64,
    /// Retained by the set of its instances (MAT's "retained heap" of a
    /// class: objects dominated by an instance no other instance dominates).
    pub retained: u64,
}

/// Why an object is where the dominator tree starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RootKind {
    /// A GC root sub-record of the dump; the value is its tag.
    Gc(u8),
    /// Reachable only through the referent of a soft, weak, phantom or
    /// final reference.
    Referent(RefKind),
    /// A class object kept by live instances of the class.
    ClassOfLiveInstances,
    /// Not reachable from any GC root.
    Unreachable,
}

/// The strength of a `java.lang.ref.Reference` subclass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RefKind {
    Soft,
    Weak,
    Final,
    Phantom,
}

impl RefKind {
    pub fn name(self) -> &'static str {
        match self {
            RefKind::Soft => "soft",
            RefKind::Weak => "weak",
            RefKind::Final => "final",
            RefKind::Phantom => "phantom",
        }
    }
}

impl RootKind {
    pub fn name(self) -> &'static str {
        use crate::vocab::sub_tag::*;
        match self {
            RootKind::Gc(t) => match t {
                ROOT_JNI_GLOBAL => "jni_global",
                ROOT_JNI_LOCAL => "jni_local",
                ROOT_JAVA_FRAME => "java_frame",
                ROOT_NATIVE_STACK => "native_stack",
                ROOT_STICKY_CLASS => "sticky_class",
                ROOT_THREAD_BLOCK => "thread_block",
                ROOT_MONITOR_USED => "monitor_used",
                ROOT_THREAD_OBJECT => "thread_object",
                _ => "unknown",
            },
            RootKind::Referent(RefKind::Soft) => "softly_reachable",
            RootKind::Referent(RefKind::Weak) => "weakly_reachable",
            RootKind::Referent(RefKind::Final) => "finalizer_reachable",
            RootKind::Referent(RefKind::Phantom) => "phantom_reachable",
            RootKind::ClassOfLiveInstances => "class_of_live_instances",
            RootKind::Unreachable => "unreachable",
        }
    }

    fn code(self) -> u16 {
        match self {
            RootKind::Gc(t) => u16::from(t),
            RootKind::Referent(k) => 0x100 + k as u16,
            RootKind::ClassOfLiveInstances => 0x200,
            RootKind::Unreachable => 0x201,
        }
    }

    fn from_code(c: u16) -> Option<RootKind> {
        Some(match c {
            0..=0xFF => RootKind::Gc(c as u8),
            0x100 => RootKind::Referent(RefKind::Soft),
            0x101 => RootKind::Referent(RefKind::Weak),
            0x102 => RootKind::Referent(RefKind::Final),
            0x103 => RootKind::Referent(RefKind::Phantom),
            0x200 => RootKind::ClassOfLiveInstances,
            0x201 => RootKind::Unreachable,
            _ => return None,
        })
    }
}

/// An object where the dominator tree starts (a GC root, or one of the
/// entries the analyser adds: see docs/heap-analyser.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RootEntry {
    pub object: u32,
    pub kind: RootKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameInfo {
    pub method: String,
    pub signature: String,
    pub source: String,
    pub class: String,
    /// > 0 line; 0 none; -1 unknown; -2 compiled; -3 native.
    pub line: i32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceInfo {
    pub serial: u32,
    /// Indexes into [`Meta::frames`], top of stack first.
    pub frames: Vec<u32>,
}

/// Bytes per allocation site (a trace of the dump's objects).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteInfo {
    pub trace: u32,
    pub instances: u64,
    pub shallow: u64,
    /// Retained by the set of the site's objects.
    pub retained: u64,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Meta {
    pub id_size: u32,
    /// Which dump of the file (1 = the first).
    pub dump: u32,
    pub objects: u64,
    pub references: u64,
    /// References to identifiers that are no object of the dump.
    pub dangling: u64,
    /// Shallow bytes of every object.
    pub total_shallow: u64,
    pub model: SizeModel,
    /// Why the size model was chosen.
    pub model_reason: String,
    pub classes: Vec<ClassInfo>,
    /// Sorted by object.
    pub roots: Vec<RootEntry>,
    pub frames: Vec<FrameInfo>,
    /// Sorted by serial.
    pub traces: Vec<TraceInfo>,
    /// Empty when the dump's objects carry no allocation trace.
    pub sites: Vec<SiteInfo>,
    /// The identifier directory (see `ids::Directory`).
    pub directory: super::ids::Directory,
    /// Things the reader noticed and worked around.
    pub warnings: Vec<String>,
}

impl Meta {
    /// The root entries of one object.
    pub fn roots_of(&self, object: u32) -> &[RootEntry] {
        let start = self.roots.partition_point(|r| r.object < object);
        let end = self.roots.partition_point(|r| r.object <= object);
        &self.roots[start..end]
    }

    pub fn trace(&self, serial: u32) -> Option<&TraceInfo> {
        self.traces
            .binary_search_by_key(&serial, |t| t.serial)
            .ok()
            .map(|i| &self.traces[i])
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut e = Enc(Vec::new());
        e.u32(self.id_size);
        e.u32(self.dump);
        e.u64(self.objects);
        e.u64(self.references);
        e.u64(self.dangling);
        e.u64(self.total_shallow);
        self.model.encode(&mut e);
        e.str(&self.model_reason);
        e.u32(self.classes.len() as u32);
        for c in &self.classes {
            e.u64(c.id);
            e.str(&c.name);
            match c.kind {
                ClassKind::Instance => e.u8(0),
                ClassKind::ObjectArray => e.u8(1),
                ClassKind::PrimitiveArray(t) => {
                    e.u8(2);
                    e.u8(t.code());
                }
            }
            e.u64(c.super_id);
            e.u64(c.loader_id);
            e.u32(c.fields.len() as u32);
            for f in &c.fields {
                e.str(&f.name);
                e.u8(f.ty.code());
            }
            e.u32(c.statics.len() as u32);
            for s in &c.statics {
                e.str(&s.name);
                e.value(s.value);
            }
            e.u64(c.instance_size);
            e.u32(c.object.unwrap_or(u32::MAX));
            e.u64(c.instances);
            e.u64(c.shallow);
            e.u64(c.retained);
        }
        e.u32(self.roots.len() as u32);
        for r in &self.roots {
            e.u32(r.object);
            e.u16(r.kind.code());
        }
        e.u32(self.frames.len() as u32);
        for f in &self.frames {
            e.str(&f.method);
            e.str(&f.signature);
            e.str(&f.source);
            e.str(&f.class);
            e.u32(f.line as u32);
        }
        e.u32(self.traces.len() as u32);
        for t in &self.traces {
            e.u32(t.serial);
            e.u32(t.frames.len() as u32);
            for &f in &t.frames {
                e.u32(f);
            }
        }
        e.u32(self.sites.len() as u32);
        for s in &self.sites {
            e.u32(s.trace);
            e.u64(s.instances);
            e.u64(s.shallow);
            e.u64(s.retained);
        }
        e.u64(self.directory.min);
        e.u32(self.directory.shift);
        e.u32(self.directory.starts.len() as u32);
        for &s in &self.directory.starts {
            e.u32(s);
        }
        e.u32(self.warnings.len() as u32);
        for w in &self.warnings {
            e.str(w);
        }
        e.0
    }

    pub fn decode(b: &[u8]) -> Result<Meta, String> {
        let mut d = Dec { b, at: 0 };
        let mut m = Meta {
            id_size: d.u32()?,
            dump: d.u32()?,
            objects: d.u64()?,
            references: d.u64()?,
            dangling: d.u64()?,
            total_shallow: d.u64()?,
            model: SizeModel::decode(&mut d)?,
            model_reason: d.str()?,
            ..Meta::default()
        };
        for _ in 0..d.count(40)? {
            let id = d.u64()?;
            let name = d.str()?;
            let kind = match d.u8()? {
                0 => ClassKind::Instance,
                1 => ClassKind::ObjectArray,
                2 => ClassKind::PrimitiveArray(d.basic_type()?),
                k => return Err(format!("class kind {k}")),
            };
            let super_id = d.u64()?;
            let loader_id = d.u64()?;
            let mut fields = Vec::new();
            for _ in 0..d.count(5)? {
                fields.push(FieldDef {
                    name: d.str()?,
                    ty: d.basic_type()?,
                });
            }
            let mut statics = Vec::new();
            for _ in 0..d.count(6)? {
                statics.push(StaticDef {
                    name: d.str()?,
                    value: d.value()?,
                });
            }
            let instance_size = d.u64()?;
            let object = Some(d.u32()?).filter(|&o| o != u32::MAX);
            m.classes.push(ClassInfo {
                id,
                name,
                kind,
                super_id,
                loader_id,
                fields,
                statics,
                instance_size,
                object,
                instances: d.u64()?,
                shallow: d.u64()?,
                retained: d.u64()?,
            });
        }
        for _ in 0..d.count(6)? {
            let object = d.u32()?;
            let code = d.u16()?;
            let kind = RootKind::from_code(code).ok_or(format!("root kind {code}"))?;
            m.roots.push(RootEntry { object, kind });
        }
        for _ in 0..d.count(20)? {
            m.frames.push(FrameInfo {
                method: d.str()?,
                signature: d.str()?,
                source: d.str()?,
                class: d.str()?,
                line: d.u32()? as i32,
            });
        }
        for _ in 0..d.count(8)? {
            let serial = d.u32()?;
            let mut frames = Vec::new();
            for _ in 0..d.count(4)? {
                frames.push(d.u32()?);
            }
            m.traces.push(TraceInfo { serial, frames });
        }
        for _ in 0..d.count(28)? {
            m.sites.push(SiteInfo {
                trace: d.u32()?,
                instances: d.u64()?,
                shallow: d.u64()?,
                retained: d.u64()?,
            });
        }
        m.directory.min = d.u64()?;
        m.directory.shift = d.u32()?;
        for _ in 0..d.count(4)? {
            m.directory.starts.push(d.u32()?);
        }
        for _ in 0..d.count(4)? {
            m.warnings.push(d.str()?);
        }
        if d.at != b.len() {
            return Err(format!("{} bytes after the metadata", b.len() - d.at));
        }
        Ok(m)
    }
}

pub(super) struct Enc(pub Vec<u8>);

impl Enc {
    pub fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn str(&mut self, s: &str) {
        self.u32(s.len() as u32);
        self.0.extend_from_slice(s.as_bytes());
    }
    fn value(&mut self, v: Value) {
        let ty = v.basic_type();
        self.u8(ty.code());
        let bits = match v {
            Value::Object(id) => id,
            Value::Boolean(b) => u64::from(b),
            Value::Char(c) => u64::from(c),
            Value::Float(f) => u64::from(f.to_bits()),
            Value::Double(d) => d.to_bits(),
            Value::Byte(b) => b as u8 as u64,
            Value::Short(s) => s as u16 as u64,
            Value::Int(i) => i as u32 as u64,
            Value::Long(l) => l as u64,
        };
        self.u64(bits);
    }
}

pub(super) struct Dec<'a> {
    b: &'a [u8],
    at: usize,
}

impl Dec<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        let s = self
            .b
            .get(self.at..self.at.saturating_add(n))
            .ok_or_else(|| format!("metadata cut short at byte {}", self.at))?;
        self.at += n;
        Ok(s)
    }
    pub fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    pub fn u16(&mut self) -> Result<u16, String> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().unwrap()))
    }
    pub fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    pub fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    /// A count of items of at least `min_size` bytes each, checked against
    /// the bytes left (no huge allocation from a damaged count).
    fn count(&mut self, min_size: usize) -> Result<u32, String> {
        let n = self.u32()?;
        if (n as usize).saturating_mul(min_size) > self.b.len() - self.at {
            return Err(format!(
                "count {n} at byte {} exceeds the metadata",
                self.at
            ));
        }
        Ok(n)
    }
    fn str(&mut self) -> Result<String, String> {
        let n = self.count(1)? as usize;
        String::from_utf8(self.take(n)?.to_vec()).map_err(|_| "a name is not UTF-8".into())
    }
    fn basic_type(&mut self) -> Result<BasicType, String> {
        let c = self.u8()?;
        BasicType::from_code(c).ok_or_else(|| format!("basic type {c}"))
    }
    fn value(&mut self) -> Result<Value, String> {
        let ty = self.basic_type()?;
        let bits = self.u64()?;
        let size = ty.size(8) as usize;
        Ok(Value::decode(ty, &bits.to_be_bytes()[8 - size..]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_round_trips_and_damage_is_an_error() {
        let mut m = Meta {
            id_size: 8,
            dump: 2,
            objects: 10,
            model_reason: "inferred".into(),
            ..Meta::default()
        };
        m.classes.push(ClassInfo {
            id: 0x1000,
            name: "java.lang.String".into(),
            kind: ClassKind::Instance,
            super_id: 0x900,
            loader_id: 0,
            fields: vec![FieldDef {
                name: "value".into(),
                ty: BasicType::Object,
            }],
            statics: vec![
                StaticDef {
                    name: "x".into(),
                    value: Value::Double(-2.25),
                },
                StaticDef {
                    name: "y".into(),
                    value: Value::Short(-3),
                },
            ],
            instance_size: 24,
            object: Some(3),
            instances: 5,
            shallow: 120,
            retained: 400,
        });
        m.roots.push(RootEntry {
            object: 3,
            kind: RootKind::Referent(RefKind::Phantom),
        });
        m.frames.push(FrameInfo {
            method: "main".into(),
            signature: "()V".into(),
            source: "A.java".into(),
            class: "A".into(),
            line: -3,
        });
        m.traces.push(TraceInfo {
            serial: 7,
            frames: vec![0],
        });
        m.directory.starts = vec![0, 1, 2];
        m.warnings.push("w".into());
        let b = m.encode();
        assert_eq!(Meta::decode(&b).unwrap(), m);
        for cut in [0, 1, b.len() / 2, b.len() - 1] {
            assert!(Meta::decode(&b[..cut]).is_err());
        }
        let mut longer = b.clone();
        longer.push(0);
        assert!(Meta::decode(&longer).is_err());
    }
}
