//! The questions an index answers, as plain types (the command line and
//! the UI render them): classes, a class's instances, one object, the path
//! from a GC root, the dominator tree, allocation sites, the difference
//! between two dumps, leak suspects.

use std::fmt;
use std::io;
use std::path::Path;

use rustc_hash::FxHashMap;

use crate::reader::{java_class_name, ArrayKind, BasicType};
use crate::vocab::Value;

use super::csr::WEAK;
use super::ids::NONE;
use super::index::{HeapIndex, SUSPECT_TOPS};
use super::meta::{ClassInfo, ClassKind, RootKind};
use super::records::{Dump, Record, Want};

#[derive(Debug)]
pub enum QueryError {
    /// No object, class or trace by that name.
    NotFound(String),
    /// The question has no answer for this dump (say why).
    NoAnswer(String),
    Io(io::Error),
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueryError::NotFound(s) | QueryError::NoAnswer(s) => f.write_str(s),
            QueryError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl From<io::Error> for QueryError {
    fn from(e: io::Error) -> Self {
        QueryError::Io(e)
    }
}

pub type QueryResult<T> = Result<T, QueryError>;

/// One row of `classes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassRow {
    pub class: String,
    pub id: u64,
    pub instances: u64,
    pub shallow: u64,
    pub retained: u64,
    /// Class loader object (0: the boot loader).
    pub loader: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClassOrder {
    Retained,
    Shallow,
    Instances,
    Name,
}

/// An object in a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectRow {
    pub id: u64,
    pub class: String,
    /// For a class object (a `java.lang.Class`): the class it stands for.
    pub describes: Option<String>,
    pub shallow: u64,
    pub retained: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instances {
    pub class: String,
    pub total: u64,
    pub objects: Vec<ObjectRow>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    pub ty: BasicType,
    pub value: Value,
}

/// A reference from or to an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The field (`[i]` for an array element, `<superclass>` and the like
    /// for a class's own references) through which the reference goes.
    pub field: String,
    pub id: u64,
    pub class: String,
    /// For a class object (a `java.lang.Class`): the class it stands for.
    pub describes: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassRef {
    pub id: u64,
    pub class: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub method: String,
    pub class: String,
    pub signature: String,
    pub source: String,
    pub line: i32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ObjectInfo {
    pub id: u64,
    pub class: String,
    /// For a class object (a `java.lang.Class`): the class it stands for.
    pub describes: Option<String>,
    pub class_id: u64,
    /// `instance`, `object array`, `primitive array` or `class`.
    pub kind: &'static str,
    pub shallow: u64,
    pub retained: u64,
    /// Immediate dominator (`None`: nothing but the GC roots).
    pub dominator: Option<u64>,
    /// Why the object is an entry point of the heap, if it is.
    pub gc_roots: Vec<String>,
    pub fields: Vec<Field>,
    /// A class object's static fields.
    pub statics: Option<Vec<Field>>,
    /// A class object's superclasses, nearest first.
    pub superclasses: Option<Vec<ClassRef>>,
    /// A `java.lang.String`'s text.
    pub text: Option<String>,
    pub length: Option<u32>,
    /// An array's first elements.
    pub elements: Option<Vec<Value>>,
    pub references: Vec<Link>,
    pub references_total: u64,
    pub referrers: Vec<Link>,
    pub referrers_total: u64,
    /// Allocation frames, when the dump has them.
    pub trace: Option<Vec<Frame>>,
    /// The serial of that trace (the site's key in `sites` and `site`).
    pub trace_serial: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathStep {
    pub id: u64,
    pub class: String,
    /// For a class object (a `java.lang.Class`): the class it stands for.
    pub describes: Option<String>,
    /// The field of the previous step that refers to this object (`None`
    /// for the root).
    pub field: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GcPath {
    pub root_kind: String,
    /// From the GC root to the object.
    pub path: Vec<PathStep>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dominated {
    /// The dominator (`None`: the top of the tree, above the GC roots).
    pub id: Option<u64>,
    pub retained: u64,
    pub total: u64,
    pub objects: Vec<ObjectRow>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    pub trace: u32,
    pub frames: Vec<Frame>,
    pub instances: u64,
    pub shallow: u64,
    pub retained: u64,
}

/// The objects allocated at one site (`site TRACE`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteObjects {
    pub site: Site,
    /// Whether `objects` is biggest retained first; a site of more than
    /// [`SITE_SORTED`] objects is listed in the dump's order instead (its
    /// retained sizes would take a read each to sort).
    pub by_retained: bool,
    pub objects: Vec<ObjectRow>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffRow {
    pub class: String,
    pub instances: i64,
    pub shallow: i64,
    pub retained: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Suspect {
    pub object: ObjectRow,
    /// Share of all shallow bytes it retains (0..1).
    pub share: f64,
    /// Where the retained bytes spread out: the object below it, down the
    /// biggest child while that child keeps most of the bytes.
    pub accumulation: ObjectRow,
    pub path: Option<GcPath>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ClassSuspect {
    pub class: String,
    pub instances: u64,
    pub retained: u64,
    pub share: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Suspects {
    pub total: u64,
    pub threshold: f64,
    pub objects: Vec<Suspect>,
    pub classes: Vec<ClassSuspect>,
}

/// How many array elements `object` shows.
pub const ELEMENTS_SHOWN: u64 = 32;
/// Most objects of one allocation site sorted by retained size.
pub const SITE_SORTED: u64 = 50_000;
/// Longest string text shown (characters).
const TEXT_MAX: u64 = 64 << 10;
/// Array elements scanned for a referrer's index.
const SCAN_ELEMENTS: u64 = 1 << 20;

/// An index and its dump, ready for questions.
pub struct Heap {
    pub ix: HeapIndex,
    dump: Dump,
    class_by_id: FxHashMap<u64, u32>,
    /// Class object -> the class it describes.
    described: FxHashMap<u32, u32>,
    /// The last `suspects` answer and its threshold's bits: its walks down
    /// the dominator tree take a read per level, so a page asking again
    /// (back, forward) is answered from here.
    last_suspects: std::sync::Mutex<Option<(u64, Suspects)>>,
}

impl Heap {
    pub fn new(ix: HeapIndex, dump_path: &Path) -> io::Result<Heap> {
        let dump = Dump::open(dump_path, ix.meta.id_size)?;
        let mut class_by_id = FxHashMap::default();
        let mut described = FxHashMap::default();
        for (i, c) in ix.meta.classes.iter().enumerate() {
            if c.id != 0 {
                class_by_id.entry(c.id).or_insert(i as u32);
            }
            if let Some(o) = c.object {
                described.insert(o, i as u32);
            }
        }
        Ok(Heap {
            ix,
            dump,
            class_by_id,
            described,
            last_suspects: std::sync::Mutex::new(None),
        })
    }

    pub fn meta(&self) -> &super::meta::Meta {
        &self.ix.meta
    }

    fn class(&self, c: u32) -> Option<&ClassInfo> {
        self.ix.meta.classes.get(c as usize)
    }

    fn class_name_of(&self, s: u32) -> io::Result<String> {
        Ok(match self.ix.class_of(s)? {
            Some(c) => c.name.clone(),
            None => "<unknown class>".into(),
        })
    }

    /// The class a class object stands for (`None` for other objects):
    /// a path through statics names the class that holds them.
    fn describes(&self, s: u32) -> Option<String> {
        let c = *self.described.get(&s)?;
        self.class(c).map(|c| c.name.clone())
    }

    fn row(&self, s: u32) -> io::Result<ObjectRow> {
        Ok(ObjectRow {
            id: self.ix.id(s)?,
            class: self.class_name_of(s)?,
            describes: self.describes(s),
            shallow: self.ix.shallow(s)?,
            retained: self.ix.retained(s)?,
        })
    }

    /// The object with this identifier.
    pub fn object_number(&self, id: u64) -> QueryResult<u32> {
        self.ix
            .find(id)?
            .ok_or_else(|| QueryError::NotFound(format!("no object 0x{id:x} in the dump")))
    }

    /// Classes matching a name (Java or internal spelling) or a class ID.
    pub fn find_class(&self, name: &str) -> QueryResult<u32> {
        if let Some(id) = parse_id(name) {
            if let Some(&c) = self.class_by_id.get(&id) {
                return Ok(c);
            }
        }
        let want = java_class_name(name);
        self.ix
            .meta
            .classes
            .iter()
            .enumerate()
            .filter(|(_, c)| c.name == want)
            .max_by_key(|(_, c)| (c.instances, c.retained))
            .map(|(i, _)| i as u32)
            .ok_or_else(|| QueryError::NotFound(format!("no class {want} in the dump")))
    }

    pub fn classes(&self, order: ClassOrder) -> Vec<ClassRow> {
        let mut rows: Vec<ClassRow> = self
            .ix
            .meta
            .classes
            .iter()
            .map(|c| ClassRow {
                class: c.name.clone(),
                id: c.id,
                instances: c.instances,
                shallow: c.shallow,
                retained: c.retained,
                loader: c.loader_id,
            })
            .collect();
        rows.sort_by(|a, b| {
            let key = |r: &ClassRow| match order {
                ClassOrder::Retained => r.retained,
                ClassOrder::Shallow => r.shallow,
                ClassOrder::Instances => r.instances,
                ClassOrder::Name => 0,
            };
            key(b)
                .cmp(&key(a))
                .then_with(|| a.class.cmp(&b.class))
                .then(a.id.cmp(&b.id))
        });
        rows
    }

    pub fn instances(&self, class: &str, offset: u64, limit: u64) -> QueryResult<Instances> {
        let c = self.find_class(class)?;
        let (total, objects) = self.ix.members(c, offset, limit)?;
        Ok(Instances {
            class: self.class(c).map(|c| c.name.clone()).unwrap_or_default(),
            total,
            objects: objects
                .into_iter()
                .map(|s| self.row(s))
                .collect::<io::Result<_>>()?,
        })
    }

    /// Bytes of an instance's values: its class's fields and its
    /// superclasses', as the dump writes them.
    fn values_len(&self, class: u32) -> u64 {
        let id_size = self.ix.meta.id_size;
        let mut n = 0u64;
        self.chain(class, |c| {
            n += c
                .fields
                .iter()
                .map(|f| u64::from(f.ty.size(id_size)))
                .sum::<u64>();
        });
        n
    }

    /// Visits a class and its superclasses (stops at a missing one).
    fn chain(&self, class: u32, mut f: impl FnMut(&ClassInfo)) {
        let mut c = Some(class);
        for _ in 0..=self.ix.meta.classes.len() {
            let Some(ci) = c.and_then(|c| self.class(c)) else {
                return;
            };
            f(ci);
            c = self
                .class_by_id
                .get(&ci.super_id)
                .copied()
                .filter(|_| ci.super_id != 0);
        }
    }

    fn decode_fields(&self, class: u32, values: &[u8]) -> Vec<Field> {
        let id_size = self.ix.meta.id_size;
        let mut out = Vec::new();
        let mut at = 0usize;
        self.chain(class, |c| {
            for f in &c.fields {
                let n = f.ty.size(id_size) as usize;
                if let Some(b) = values.get(at..at + n) {
                    out.push(Field {
                        name: f.name.clone(),
                        ty: f.ty,
                        value: Value::decode(f.ty, b),
                    });
                }
                at += n;
            }
        });
        out
    }

    /// What to read of object `s` to see `elements` array elements.
    fn want(&self, s: u32, elements: u64) -> io::Result<Want> {
        let c = self.ix.class_number(s)?;
        let payload = match self.class(c).map(|c| c.kind) {
            Some(ClassKind::Instance) | None => self.values_len(c),
            Some(ClassKind::ObjectArray) => {
                u64::from(self.ix.length(s)?).min(elements) * u64::from(self.ix.meta.id_size)
            }
            Some(ClassKind::PrimitiveArray(t)) => {
                u64::from(self.ix.length(s)?).min(elements) * u64::from(t.size(0))
            }
        };
        Ok(Want {
            offset: self.ix.dump_offset(s)?,
            payload,
        })
    }

    /// The fields through which `from` refers to `to` (its identifier).
    fn fields_to(&self, from: u32, record: Option<&Record>, to: u64) -> String {
        if let Some(&c) = self.described.get(&from) {
            return self.class_fields_to(c, to);
        }
        let names: Vec<String> = match record {
            Some(Record::Instance { values, .. }) => {
                let c = self.ix.class_number(from).unwrap_or(NONE);
                self.decode_fields(c, values)
                    .into_iter()
                    .filter(|f| f.value == Value::Object(to))
                    .map(|f| f.name)
                    .collect()
            }
            Some(Record::Array { elements, .. }) => elements
                .iter()
                .enumerate()
                .filter(|(_, v)| **v == Value::Object(to))
                .map(|(i, _)| format!("[{i}]"))
                .collect(),
            None => Vec::new(),
        };
        if names.is_empty() {
            "?".into()
        } else {
            names.join(", ")
        }
    }

    fn class_fields_to(&self, c: u32, to: u64) -> String {
        let Some(ci) = self.class(c) else {
            return "?".into();
        };
        let mut names: Vec<String> = ci
            .statics
            .iter()
            .filter(|f| f.value == Value::Object(to))
            .map(|f| f.name.clone())
            .collect();
        if ci.super_id == to {
            names.push("<superclass>".into());
        }
        if ci.loader_id == to {
            names.push("<class loader>".into());
        }
        if names.is_empty() {
            "<class>".into()
        } else {
            names.join(", ")
        }
    }

    fn frames(&self, serial: u32) -> Option<Vec<Frame>> {
        let t = self.ix.meta.trace(serial)?;
        if t.frames.is_empty() {
            return None;
        }
        Some(
            t.frames
                .iter()
                .filter_map(|&f| self.ix.meta.frames.get(f as usize))
                .map(|f| Frame {
                    method: f.method.clone(),
                    class: f.class.clone(),
                    signature: f.signature.clone(),
                    source: f.source.clone(),
                    line: f.line,
                })
                .collect(),
        )
    }

    /// Everything about one object; at most `limit` references and
    /// referrers listed.
    pub fn object(&self, id: u64, limit: u64) -> QueryResult<ObjectInfo> {
        let s = self.object_number(id)?;
        let ix = &self.ix;
        let class_no = ix.class_number(s)?;
        let class = self.class(class_no);
        let described = self.described.get(&s).copied();
        let kind = match (described, class.map(|c| c.kind)) {
            (Some(_), _) => "class",
            (None, Some(ClassKind::ObjectArray)) => "object array",
            (None, Some(ClassKind::PrimitiveArray(_))) => "primitive array",
            _ => "instance",
        };
        let (refs_total, ref_targets) = ix.references(s, 0, limit)?;
        let (referrers_total, referrer_objs) = ix.referrers(s, 0, limit)?;
        // One read of the dump for the object and its referrers.
        let mut wants = Vec::new();
        let own = if described.is_none() {
            let elements = match class.map(|c| c.kind) {
                Some(ClassKind::ObjectArray) => ELEMENTS_SHOWN.max(limit),
                _ => ELEMENTS_SHOWN,
            };
            wants.push(self.want(s, elements)?);
            Some(0)
        } else {
            None
        };
        let first_referrer = wants.len();
        for &p in &referrer_objs {
            let p = p & !WEAK;
            if !self.described.contains_key(&p) {
                wants.push(self.want(p, SCAN_ELEMENTS)?);
            } else {
                wants.push(Want {
                    offset: u64::MAX,
                    payload: 0,
                });
            }
        }
        let records = self.read_records(&wants)?;
        let own_record = own.and_then(|i| records[i].as_ref());
        let serial = ix.trace_serial(s)?;
        let trace = self.frames(serial);
        let mut info = ObjectInfo {
            id,
            class: class.map_or_else(|| "<unknown class>".into(), |c| c.name.clone()),
            describes: self.describes(s),
            class_id: class.map_or(0, |c| c.id),
            kind,
            shallow: ix.shallow(s)?,
            retained: ix.retained(s)?,
            dominator: match ix.dominator(s)? {
                Some(d) => Some(ix.id(d)?),
                None => None,
            },
            gc_roots: ix
                .meta
                .roots_of(s)
                .iter()
                .map(|r| r.kind.name().to_string())
                .collect(),
            fields: Vec::new(),
            statics: None,
            superclasses: None,
            text: None,
            length: None,
            elements: None,
            references: Vec::new(),
            references_total: refs_total,
            referrers: Vec::new(),
            referrers_total,
            trace_serial: trace.as_ref().map(|_| serial),
            trace,
        };
        match own_record {
            Some(Record::Instance { values, .. }) => {
                info.fields = self.decode_fields(class_no, values);
                if info.class == "java.lang.String" {
                    info.text = self.string_text(&info.fields)?;
                }
            }
            Some(Record::Array {
                length, elements, ..
            }) => {
                info.length = Some(*length);
                info.elements = Some(
                    elements
                        .iter()
                        .take(ELEMENTS_SHOWN as usize)
                        .copied()
                        .collect(),
                );
            }
            None => {}
        }
        if let Some(c) = described.and_then(|c| self.class(c)) {
            info.statics = Some(
                c.statics
                    .iter()
                    .map(|f| Field {
                        name: f.name.clone(),
                        ty: f.value.basic_type(),
                        value: f.value,
                    })
                    .collect(),
            );
            let mut supers = Vec::new();
            let mut sup = c.super_id;
            for _ in 0..self.ix.meta.classes.len() {
                let Some(&sc) = self.class_by_id.get(&sup).filter(|_| sup != 0) else {
                    break;
                };
                let sci = &self.ix.meta.classes[sc as usize];
                supers.push(ClassRef {
                    id: sci.id,
                    class: sci.name.clone(),
                });
                sup = sci.super_id;
            }
            info.superclasses = Some(supers);
        }
        for &t in &ref_targets {
            let t = t & !WEAK;
            let tid = ix.id(t)?;
            info.references.push(Link {
                field: self.fields_to(s, own_record, tid),
                id: tid,
                class: self.class_name_of(t)?,
                describes: self.describes(t),
            });
        }
        for (i, &p) in referrer_objs.iter().enumerate() {
            let p = p & !WEAK;
            info.referrers.push(Link {
                field: self.fields_to(p, records[first_referrer + i].as_ref(), id),
                id: ix.id(p)?,
                class: self.class_name_of(p)?,
                describes: self.describes(p),
            });
        }
        Ok(info)
    }

    /// Reads records, `None` where the want is a placeholder.
    fn read_records(&self, wants: &[Want]) -> io::Result<Vec<Option<Record>>> {
        let real: Vec<Want> = wants
            .iter()
            .copied()
            .filter(|w| w.offset != u64::MAX)
            .collect();
        let mut read = self.dump.read(&real)?.into_iter();
        Ok(wants
            .iter()
            .map(|w| {
                if w.offset == u64::MAX {
                    None
                } else {
                    read.next()
                }
            })
            .collect())
    }

    /// The text of a `java.lang.String` from its fields: `value` is a
    /// `char[]` (JDK 8) or a `byte[]` with `coder` 0 (Latin-1) or 1 (UTF-16
    /// in the VM's byte order, little-endian on the platforms HotSpot
    /// dumps come from).
    fn string_text(&self, fields: &[Field]) -> io::Result<Option<String>> {
        let get = |n: &str| fields.iter().find(|f| f.name == n).map(|f| f.value);
        let Some(Value::Object(vid)) = get("value") else {
            return Ok(None);
        };
        let Some(a) = self.ix.find(vid)? else {
            return Ok(None);
        };
        let coder = get("coder").and_then(|v| v.as_i64());
        let rec = self.dump.read(&[self.want(a, TEXT_MAX)?])?.pop();
        let Some(Record::Array {
            kind: ArrayKind::Primitives(t),
            length,
            elements,
        }) = rec
        else {
            return Ok(None);
        };
        let mut text = match (t, coder) {
            (BasicType::Char, _) => {
                let units: Vec<u16> = elements
                    .iter()
                    .filter_map(|v| match v {
                        Value::Char(c) => Some(*c),
                        _ => None,
                    })
                    .collect();
                String::from_utf16_lossy(&units)
            }
            (BasicType::Byte, Some(1)) => {
                let bytes: Vec<u8> = elements
                    .iter()
                    .filter_map(|v| v.as_i64())
                    .map(|b| b as u8)
                    .collect();
                let units: Vec<u16> = bytes
                    .chunks_exact(2)
                    .map(|p| u16::from_le_bytes([p[0], p[1]]))
                    .collect();
                String::from_utf16_lossy(&units)
            }
            (BasicType::Byte, _) => elements
                .iter()
                .filter_map(|v| v.as_i64())
                .map(|b| char::from(b as u8))
                .collect(),
            _ => return Ok(None),
        };
        if u64::from(length) > TEXT_MAX {
            text.push('…');
        }
        Ok(Some(text))
    }

    /// The shortest path from a GC root to the object; with
    /// `exclude_weak`, through strong references only.
    pub fn path(&self, id: u64, exclude_weak: bool) -> QueryResult<GcPath> {
        let s = self.object_number(id)?;
        self.path_of(s, exclude_weak)
    }

    fn path_of(&self, s: u32, exclude_weak: bool) -> QueryResult<GcPath> {
        let ix = &self.ix;
        if ix.parent(s, exclude_weak)?.is_none() {
            let any = ix.parent(s, false)?;
            return Err(QueryError::NoAnswer(if exclude_weak && any.is_some() {
                format!(
                    "0x{:x} is reachable only through the referent of a soft, weak, final or phantom reference (try without --exclude-weak)",
                    ix.id(s)?
                )
            } else {
                format!("0x{:x} is not reachable from any GC root", ix.id(s)?)
            }));
        }
        // Saved at index build: each object's referrer one step closer.
        let mut chain = vec![s];
        let mut cur = s;
        loop {
            let Some(p) = ix.parent(cur, exclude_weak)? else {
                return Err(QueryError::Io(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "damaged index: a shortest path that ends nowhere",
                )));
            };
            if p == cur {
                break;
            }
            if chain.len() as u64 > ix.meta.objects {
                return Err(QueryError::Io(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "damaged index: a shortest path in a loop",
                )));
            }
            chain.push(p);
            cur = p;
        }
        chain.reverse();
        let root = *chain.first().expect("the object itself");
        let root_kind = ix
            .meta
            .roots_of(root)
            .iter()
            .map(|r| r.kind)
            .find(|k| matches!(k, RootKind::Gc(_)))
            .map_or("unknown", |k| k.name())
            .to_string();
        // Field names: each step's record, read in one go.
        let wants: Vec<Want> = chain[..chain.len() - 1]
            .iter()
            .map(|&p| {
                if self.described.contains_key(&p) {
                    Ok(Want {
                        offset: u64::MAX,
                        payload: 0,
                    })
                } else {
                    self.want(p, SCAN_ELEMENTS)
                }
            })
            .collect::<io::Result<_>>()?;
        let records = self.read_records(&wants)?;
        let mut path = Vec::with_capacity(chain.len());
        for (i, &v) in chain.iter().enumerate() {
            let vid = ix.id(v)?;
            path.push(PathStep {
                id: vid,
                class: self.class_name_of(v)?,
                describes: self.describes(v),
                field: if i == 0 {
                    None
                } else {
                    Some(self.fields_to(chain[i - 1], records[i - 1].as_ref(), vid))
                },
            });
        }
        Ok(GcPath { root_kind, path })
    }

    /// The children of an object in the dominator tree (`None`: the top
    /// level), biggest retained first.
    pub fn dominated(&self, id: Option<u64>, offset: u64, limit: u64) -> QueryResult<Dominated> {
        let s = id.map(|i| self.object_number(i)).transpose()?;
        let (total, objs) = self.ix.dominated(s, offset, limit)?;
        Ok(Dominated {
            id,
            retained: match s {
                Some(s) => self.ix.retained(s)?,
                None => self.ix.meta.total_shallow,
            },
            total,
            objects: objs
                .into_iter()
                .map(|o| self.row(o))
                .collect::<io::Result<_>>()?,
        })
    }

    pub fn sites(&self) -> QueryResult<Vec<Site>> {
        if self.ix.meta.sites.is_empty() {
            return Err(QueryError::NoAnswer(
                "this dump's objects carry no allocation traces: HotSpot's dumps (jcmd GC.heap_dump, the agent's heap=dump) record none; the agent records them with heap=all (or heap=dump with heap=sites)".into(),
            ));
        }
        let mut v: Vec<Site> = self
            .ix
            .meta
            .sites
            .iter()
            .map(|s| Site {
                trace: s.trace,
                frames: self.frames(s.trace).unwrap_or_default(),
                instances: s.instances,
                shallow: s.shallow,
                retained: s.retained,
            })
            .collect();
        v.sort_by(|a, b| b.retained.cmp(&a.retained).then(a.trace.cmp(&b.trace)));
        Ok(v)
    }

    /// The objects allocated at the site of trace `trace`: one pass over
    /// the objects' trace serials, then their rows.
    pub fn site_objects(&self, trace: u32, offset: u64, limit: u64) -> QueryResult<SiteObjects> {
        let info = self.ix.meta.sites.iter().find(|s| s.trace == trace);
        let Some(info) = info else {
            let _ = self.sites()?;
            return Err(QueryError::NotFound(format!(
                "no allocation site of trace {trace} in the dump"
            )));
        };
        let by_retained = info.instances <= SITE_SORTED;
        let mut matched: Vec<u32> = Vec::new();
        let keep = if by_retained {
            u64::MAX
        } else {
            offset.saturating_add(limit)
        };
        self.ix.each_trace(|first, run| {
            for (i, &t) in run.iter().enumerate() {
                if t == trace && (matched.len() as u64) < keep {
                    matched.push((first + i as u64) as u32);
                }
            }
        })?;
        let picked: Vec<u32> = if by_retained {
            let mut keyed = Vec::with_capacity(matched.len());
            for s in matched {
                keyed.push((self.ix.retained(s)?, s));
            }
            keyed.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            keyed
                .into_iter()
                .skip(offset.min(usize::MAX as u64) as usize)
                .take(limit.min(usize::MAX as u64) as usize)
                .map(|(_, s)| s)
                .collect()
        } else {
            matched
                .into_iter()
                .skip(offset.min(usize::MAX as u64) as usize)
                .collect()
        };
        Ok(SiteObjects {
            site: Site {
                trace,
                frames: self.frames(trace).unwrap_or_default(),
                instances: info.instances,
                shallow: info.shallow,
                retained: info.retained,
            },
            by_retained,
            objects: picked
                .into_iter()
                .map(|s| self.row(s))
                .collect::<io::Result<_>>()?,
        })
    }

    /// Per class name, `other` minus this dump.
    pub fn diff(&self, other: &Heap) -> Vec<DiffRow> {
        let mut by: FxHashMap<&str, [i64; 3]> = FxHashMap::default();
        for (sign, h) in [(-1i64, self), (1, other)] {
            for c in &h.ix.meta.classes {
                let e = by.entry(c.name.as_str()).or_default();
                e[0] += sign * c.instances as i64;
                e[1] += sign * c.shallow as i64;
                e[2] += sign * c.retained as i64;
            }
        }
        let mut rows: Vec<DiffRow> = by
            .into_iter()
            .filter(|(_, d)| d.iter().any(|&x| x != 0))
            .map(|(class, d)| DiffRow {
                class: class.to_string(),
                instances: d[0],
                shallow: d[1],
                retained: d[2],
            })
            .collect();
        rows.sort_by(|a, b| {
            b.retained
                .unsigned_abs()
                .cmp(&a.retained.unsigned_abs())
                .then(b.shallow.unsigned_abs().cmp(&a.shallow.unsigned_abs()))
                .then_with(|| a.class.cmp(&b.class))
        });
        rows
    }

    /// Objects retaining at least `threshold` of the heap (and classes
    /// whose instances together do), each with where its bytes accumulate
    /// and the path that keeps it alive.
    pub fn suspects(&self, threshold: f64) -> QueryResult<Suspects> {
        let memo = |m: std::sync::MutexGuard<'_, Option<(u64, Suspects)>>| {
            m.as_ref()
                .filter(|(t, _)| *t == threshold.to_bits())
                .map(|(_, s)| s.clone())
        };
        if let Some(s) = memo(self.last_suspects.lock().unwrap_or_else(|e| e.into_inner())) {
            return Ok(s);
        }
        let s = self.find_suspects(threshold)?;
        *self.last_suspects.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((threshold.to_bits(), s.clone()));
        Ok(s)
    }

    fn find_suspects(&self, threshold: f64) -> QueryResult<Suspects> {
        let total = self.ix.meta.total_shallow.max(1);
        let big = |r: u64| r as f64 >= threshold * total as f64;
        let mut objects = Vec::new();
        let (_, top) = self.ix.dominated(None, 0, SUSPECT_TOPS as u64)?;
        let points = self.ix.accumulation_points()?;
        for (i, s) in top.into_iter().enumerate() {
            let row = self.row(s)?;
            if !big(row.retained) {
                break;
            }
            // Found at index build: the walk down a linked list's chain
            // of dominators is as long as the list.
            let acc = points.get(i).copied().flatten().ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    "damaged index: accumulation points",
                )
            })?;
            objects.push(Suspect {
                share: row.retained as f64 / total as f64,
                accumulation: self.row(acc)?,
                path: self.path_of(s, false).ok(),
                object: row,
            });
        }
        let mut classes: Vec<ClassSuspect> = self
            .ix
            .meta
            .classes
            .iter()
            .filter(|c| big(c.retained) && c.instances > 1)
            .map(|c| ClassSuspect {
                class: c.name.clone(),
                instances: c.instances,
                retained: c.retained,
                share: c.retained as f64 / total as f64,
            })
            .collect();
        classes.sort_by_key(|c| std::cmp::Reverse(c.retained));
        Ok(Suspects {
            total,
            threshold,
            objects,
            classes,
        })
    }
}

/// `0x1f`, `1f` with letters, or decimal.
pub fn parse_id(s: &str) -> Option<u64> {
    let t = s.trim();
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        return u64::from_str_radix(h, 16).ok();
    }
    if t.chars().all(|c| c.is_ascii_digit()) {
        return t.parse().ok();
    }
    None
}
