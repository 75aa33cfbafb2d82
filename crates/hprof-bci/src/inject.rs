//! The HPROF rewriter (docs/bci.md, docs/profiles.md §2): inserts calls to the Tracker
//! class at method entry, before returns, at the start of
//! `java.lang.Object.<init>` and after array allocations.

use std::collections::{BTreeMap, BTreeSet};

use crate::classfile::attributes::{Attribute, AttributeInfo, Code};
use crate::classfile::constant_pool::ConstantPool;
use crate::classfile::{
    ClassFile, ACC_ABSTRACT, ACC_INTERFACE, ACC_MODULE, ACC_NATIVE, ACC_STATIC,
};
use crate::code::instructions::{decode_all, is_return, op, Insn};
use crate::code::relocate::{relocate, Insertion, Relocation};
use crate::code::type_annotations::relocate_type_annotations;
use crate::code::typeflow::{frame_after, initial_locals};
use crate::errors::{BciError, Result};
use crate::stackmap::{compress, expand, Frame, VType};

/// The Tracker class of the original agent.
pub const DEFAULT_TRACKER_CLASS: &str = "com/sun/demo/jvmti/hprof/Tracker";
/// Tracker entry points (name, descriptor), docs/profiles.md §2.
pub const OBJECT_INIT: (&str, &str) = ("ObjectInit", "(Ljava/lang/Object;)V");
pub const NEW_ARRAY: (&str, &str) = ("NewArray", "(Ljava/lang/Object;)V");
pub const CALL_SITE: (&str, &str) = ("CallSite", "(II)V");
pub const RETURN_SITE: (&str, &str) = ("ReturnSite", "(II)V");

/// What to inject into one class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InjectConfig {
    /// Internal name of the Tracker class (e.g. [`DEFAULT_TRACKER_CLASS`]).
    pub tracker_class: String,
    /// The agent's class number passed to CallSite/ReturnSite.
    pub class_number: u32,
    /// cpu=times/old: CallSite at entry, ReturnSite before every return.
    pub call_sites: bool,
    /// heap=sites/dump: ObjectInit in `Object.<init>`, NewArray after
    /// newarray/anewarray/multianewarray.
    pub object_tracking: bool,
    /// The hook classified the class as a system class (docs/bci.md, "Skips"): trivial
    /// constructors/finalizers, `<clinit>` and `Thread.currentThread` are left alone.
    pub system_class: bool,
}

impl InjectConfig {
    pub fn new(tracker_class: &str, class_number: u32) -> Self {
        InjectConfig {
            tracker_class: tracker_class.to_string(),
            class_number,
            call_sites: false,
            object_tracking: false,
            system_class: false,
        }
    }
}

/// Why a whole class was left unchanged (docs/bci.md, "Skips").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClassSkip {
    /// Magic is not 0xCAFEBABE: the bytes are returned unchanged.
    NotAClassFile,
    /// The Tracker class itself.
    TrackerClass,
    /// ACC_INTERFACE (default/static interface methods are never instrumented).
    Interface,
    /// module-info.
    Module,
    /// Neither call sites nor object tracking requested.
    NothingRequested,
}

/// Why one method was not instrumented.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkipReason {
    /// The whole class was left alone (see [`InjectOutcome::class_skip`]).
    ClassSkipped,
    /// Abstract or native: no Code attribute.
    NoCode,
    /// System class: constructor whose code is a single `return`.
    TrivialSystemConstructor,
    /// System class: `finalize` whose code is a single `return`.
    TrivialSystemFinalize,
    /// System class: `<clinit>`.
    SystemClassInitializer,
    /// `java/lang/Thread.currentThread` (the Tracker calls it).
    ThreadCurrentThread,
    /// `java/lang/Object.<init>` never gets CallSite/ReturnSite.
    ObjectInitNotTimed,
    /// Nothing to inject (e.g. object tracking only and no array allocation).
    NothingToInject,
    /// The code would exceed 65535 bytes.
    TooLarge { new_length: usize },
    /// The method could not be rewritten safely (malformed code, a
    /// StackMapTable that could not be decoded or extended, ...).
    Unsupported(String),
}

/// A method of the class, in class-file order: its index is the method
/// number passed to CallSite/ReturnSite.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MethodInfo {
    pub name: String,
    pub descriptor: String,
    /// `None` when the method was instrumented.
    pub skipped: Option<SkipReason>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InjectOutcome {
    /// Internal class name ("" for a non-class file).
    pub class_name: String,
    /// The rewritten class, or `None` when nothing was injected (use the
    /// original bytes).
    pub new_bytes: Option<Vec<u8>>,
    /// Every method, in class-file order (index = method number).
    pub methods: Vec<MethodInfo>,
    /// Set when the whole class was left alone.
    pub class_skip: Option<ClassSkip>,
}

impl InjectOutcome {
    pub fn injected_methods(&self) -> usize {
        self.methods.iter().filter(|m| m.skipped.is_none()).count()
    }
    /// (method number, reason) of every method not instrumented.
    pub fn skipped_methods(&self) -> impl Iterator<Item = (usize, &SkipReason)> {
        self.methods
            .iter()
            .enumerate()
            .filter_map(|(i, m)| m.skipped.as_ref().map(|r| (i, r)))
    }
}

/// Constant-pool indices of the Tracker methods, added on first use.
#[derive(Default)]
struct TrackerRefs {
    refs: [Option<u16>; 4],
}

impl TrackerRefs {
    fn get(&mut self, cp: &mut ConstantPool, tracker: &str, which: usize) -> Result<u16> {
        if let Some(i) = self.refs[which] {
            return Ok(i);
        }
        let (name, desc) = [OBJECT_INIT, NEW_ARRAY, CALL_SITE, RETURN_SITE][which];
        let i = cp.add_methodref(tracker.as_bytes(), name.as_bytes(), desc.as_bytes())?;
        self.refs[which] = Some(i);
        Ok(i)
    }
}

/// Byte code pushing an int constant.
fn push_int(cp: &mut ConstantPool, v: i32) -> Result<Vec<u8>> {
    Ok(match v {
        -1..=5 => vec![(op::ICONST_0 as i32 + v) as u8],
        -128..=127 => vec![op::BIPUSH, v as u8],
        -32768..=32767 => {
            let [a, b] = (v as i16).to_be_bytes();
            vec![op::SIPUSH, a, b]
        }
        _ => {
            let i = cp.add_integer(v)?;
            if i <= 255 {
                vec![op::LDC, i as u8]
            } else {
                let [a, b] = i.to_be_bytes();
                vec![op::LDC_W, a, b]
            }
        }
    })
}

fn invokestatic(index: u16) -> [u8; 3] {
    let [a, b] = index.to_be_bytes();
    [op::INVOKESTATIC, a, b]
}

/// Rewrites one class file. See the module docs and docs/bci.md.
pub fn inject(class_bytes: &[u8], cfg: &InjectConfig) -> Result<InjectOutcome> {
    if class_bytes.len() < 4 || class_bytes[0..4] != [0xCA, 0xFE, 0xBA, 0xBE] {
        return Ok(InjectOutcome {
            class_name: String::new(),
            new_bytes: None,
            methods: vec![],
            class_skip: Some(ClassSkip::NotAClassFile),
        });
    }
    let mut cf = ClassFile::parse(class_bytes)?;
    let class_name = cf.name()?;
    let mut methods = Vec::with_capacity(cf.methods.len());
    for m in &cf.methods {
        methods.push(MethodInfo {
            name: cf.constant_pool.utf8_string(m.name_index)?,
            descriptor: cf.constant_pool.utf8_string(m.descriptor_index)?,
            skipped: None,
        });
    }
    let class_skip = if class_name == cfg.tracker_class {
        Some(ClassSkip::TrackerClass)
    } else if cf.access_flags & ACC_MODULE != 0 {
        Some(ClassSkip::Module)
    } else if cf.access_flags & ACC_INTERFACE != 0 {
        Some(ClassSkip::Interface)
    } else if !cfg.call_sites && !cfg.object_tracking {
        Some(ClassSkip::NothingRequested)
    } else {
        None
    };
    if class_skip.is_some() {
        methods
            .iter_mut()
            .for_each(|m| m.skipped = Some(SkipReason::ClassSkipped));
        return Ok(InjectOutcome {
            class_name,
            new_bytes: None,
            methods,
            class_skip,
        });
    }

    let is_object = class_name == "java/lang/Object" && cf.super_class == 0;
    let mut refs = TrackerRefs::default();
    let mut injected_any = false;
    for k in 0..cf.methods.len() {
        let reason = match method_skip(&cf, k, &methods[k], &class_name, is_object, cfg) {
            Some(r) => Some(r),
            None => match instrument_method(&mut cf, k, is_object, cfg, &mut refs) {
                Ok(true) => None,
                Ok(false) => Some(SkipReason::NothingToInject),
                Err(BciError::CodeTooLarge { new_length }) => {
                    Some(SkipReason::TooLarge { new_length })
                }
                Err(e) => Some(SkipReason::Unsupported(e.to_string())),
            },
        };
        injected_any |= reason.is_none();
        methods[k].skipped = reason;
    }
    let new_bytes = if injected_any {
        Some(cf.to_bytes())
    } else {
        None
    };
    Ok(InjectOutcome {
        class_name,
        new_bytes,
        methods,
        class_skip: None,
    })
}

/// The class- and name-based skip rules of docs/bci.md ("Skips").
fn method_skip(
    cf: &ClassFile,
    k: usize,
    info: &MethodInfo,
    class_name: &str,
    is_object: bool,
    cfg: &InjectConfig,
) -> Option<SkipReason> {
    let m = &cf.methods[k];
    let code = match m.code() {
        Some(c) if m.access_flags & (ACC_ABSTRACT | ACC_NATIVE) == 0 => c,
        _ => return Some(SkipReason::NoCode),
    };
    let name = info.name.as_str();
    if cfg.system_class {
        if name == "<init>" && code.code.len() == 1 {
            return Some(SkipReason::TrivialSystemConstructor);
        }
        if name == "finalize" && code.code.len() == 1 {
            return Some(SkipReason::TrivialSystemFinalize);
        }
        if name == "<clinit>" {
            return Some(SkipReason::SystemClassInitializer);
        }
    }
    if class_name == "java/lang/Thread" && name == "currentThread" {
        return Some(SkipReason::ThreadCurrentThread);
    }
    if is_object && name == "<init>" && !cfg.object_tracking {
        return Some(SkipReason::ObjectInitNotTimed);
    }
    None
}

/// Instruments method `k` in place; `Ok(false)` if there was nothing to insert.
fn instrument_method(
    cf: &mut ClassFile,
    k: usize,
    is_object: bool,
    cfg: &InjectConfig,
    refs: &mut TrackerRefs,
) -> Result<bool> {
    let m = &cf.methods[k];
    let name = cf.constant_pool.utf8(m.name_index)?.to_vec();
    let descriptor = cf.constant_pool.utf8(m.descriptor_index)?.to_vec();
    let is_static = m.access_flags & ACC_STATIC != 0;
    let code = m.code().expect("checked by method_skip");
    let insns = decode_all(&code.code)?;

    let object_init = is_object && name == b"<init>";
    let timed = cfg.call_sites && !object_init;
    let arrays = cfg.object_tracking
        && insns
            .iter()
            .any(|i| matches!(i.opcode, op::NEWARRAY | op::ANEWARRAY | op::MULTIANEWARRAY));
    let object_init = object_init && cfg.object_tracking;
    if !timed && !arrays && !object_init {
        return Ok(false);
    }

    let cp = &mut cf.constant_pool;
    let tracker = cfg.tracker_class.as_str();
    let site = |cp: &mut ConstantPool, refs: &mut TrackerRefs, which: usize| -> Result<Vec<u8>> {
        let mut v = push_int(cp, cfg.class_number as i32)?;
        v.extend(push_int(cp, k as i32)?);
        v.extend(invokestatic(refs.get(cp, tracker, which)?));
        Ok(v)
    };
    let mut insertions: BTreeMap<u32, Insertion> = BTreeMap::new();
    if object_init {
        let mut v = vec![op::ALOAD_0];
        v.extend(invokestatic(refs.get(cp, tracker, 0)?));
        insertions.entry(0).or_default().skip.extend(v);
    }
    if timed {
        let entry = site(cp, refs, 2)?;
        insertions.entry(0).or_default().skip.extend(entry);
        let ret = site(cp, refs, 3)?;
        for i in insns.iter().filter(|i| is_return(i.opcode)) {
            insertions
                .entry(i.offset)
                .or_default()
                .land
                .extend_from_slice(&ret);
        }
    }
    if arrays {
        let mut after = vec![op::DUP];
        after.extend(invokestatic(refs.get(cp, tracker, 1)?));
        for (j, i) in insns.iter().enumerate() {
            if matches!(i.opcode, op::NEWARRAY | op::ANEWARRAY | op::MULTIANEWARRAY) {
                let next = insns.get(j + 1).ok_or_else(|| BciError::BadCode {
                    offset: i.offset,
                    msg: "array allocation at the end of the code".into(),
                })?;
                insertions
                    .entry(next.offset)
                    .or_default()
                    .skip
                    .extend_from_slice(&after);
            }
        }
    }
    let extra_stack = if timed { 2 } else { 1 };

    let ctx = MethodCtx {
        name: &name,
        descriptor: &descriptor,
        is_static,
        is_object,
        major: cf.major_version,
        this_class: cf.this_class,
    };
    let new_code = rewrite_code(
        &mut cf.constant_pool,
        code,
        &insns,
        &insertions,
        extra_stack,
        &ctx,
    )?;
    *cf.methods[k].code_mut().expect("has code") = new_code;
    Ok(true)
}

struct MethodCtx<'a> {
    name: &'a [u8],
    descriptor: &'a [u8],
    is_static: bool,
    is_object: bool,
    major: u16,
    this_class: u16,
}

/// Produces the relocated Code attribute with all offset tables rewritten.
fn rewrite_code(
    cp: &mut ConstantPool,
    code: &Code,
    insns: &[Insn],
    insertions: &BTreeMap<u32, Insertion>,
    extra_stack: u16,
    ctx: &MethodCtx,
) -> Result<Code> {
    let r = relocate(&code.code, insns, insertions)?;
    let map16 = |o: u16| -> Result<u16> { Ok(r.map(o as u32)? as u16) };
    // Offset 0 keeps meaning "from the start" for line and local tables, so
    // the entry code belongs to the first line and to parameter scopes.
    let map_start = |o: u16| -> Result<u16> {
        if o == 0 {
            Ok(0)
        } else {
            map16(o)
        }
    };

    let mut exception_table = Vec::with_capacity(code.exception_table.len());
    for e in &code.exception_table {
        let mut n = *e;
        n.start_pc = map16(e.start_pc)?;
        n.end_pc = map16(e.end_pc)?;
        n.handler_pc = map16(e.handler_pc)?;
        exception_table.push(n);
    }

    let mut attributes = Vec::with_capacity(code.attributes.len() + 1);
    let mut had_stackmap = false;
    for a in &code.attributes {
        let name = cp.utf8(a.name_index).unwrap_or(b"").to_vec();
        let info = match &a.info {
            AttributeInfo::LineNumberTable(v) => {
                let mut out = v.clone();
                for l in &mut out {
                    l.start_pc = map_start(l.start_pc)?;
                }
                AttributeInfo::LineNumberTable(out)
            }
            AttributeInfo::LocalVariableTable(v) | AttributeInfo::LocalVariableTypeTable(v) => {
                let mut out = v.clone();
                for l in &mut out {
                    let start = map_start(l.start_pc)?;
                    let end = r.map(l.start_pc as u32 + l.length as u32)?;
                    l.start_pc = start;
                    l.length = (end - start as u32) as u16;
                }
                if matches!(a.info, AttributeInfo::LocalVariableTable(_)) {
                    AttributeInfo::LocalVariableTable(out)
                } else {
                    AttributeInfo::LocalVariableTypeTable(out)
                }
            }
            AttributeInfo::StackMapTable(frames) => {
                had_stackmap = true;
                AttributeInfo::StackMapTable(rewrite_frames(
                    cp,
                    code,
                    insns,
                    &r,
                    Some(frames),
                    ctx,
                )?)
            }
            AttributeInfo::Raw(_) if name == b"StackMapTable" || name == b"StackMap" => {
                return Err(BciError::BadStackMap(format!(
                    "{} attribute not decodable",
                    String::from_utf8_lossy(&name)
                )))
            }
            AttributeInfo::Raw(body)
                if name == b"RuntimeVisibleTypeAnnotations"
                    || name == b"RuntimeInvisibleTypeAnnotations" =>
            {
                AttributeInfo::Raw(relocate_type_annotations(body, &r)?)
            }
            other => other.clone(),
        };
        attributes.push(Attribute {
            name_index: a.name_index,
            info,
        });
    }
    if !had_stackmap && ctx.major >= 50 {
        let frames = rewrite_frames(cp, code, insns, &r, None, ctx)?;
        if !frames.is_empty() {
            let name_index = cp.add_utf8(b"StackMapTable")?;
            attributes.push(Attribute {
                name_index,
                info: AttributeInfo::StackMapTable(frames),
            });
        }
    }
    Ok(Code {
        max_stack: code.max_stack.saturating_add(extra_stack),
        max_locals: code.max_locals,
        code: r.code.clone(),
        exception_table,
        attributes,
    })
}

/// Moves every frame to its new offset and adds the frames the new code
/// needs: after each widened conditional branch, and at the original offset
/// 0 when entry code now precedes a branch target there.
fn rewrite_frames(
    cp: &mut ConstantPool,
    code: &Code,
    insns: &[Insn],
    r: &Relocation,
    frames: Option<&Vec<crate::stackmap::StackMapFrame>>,
    ctx: &MethodCtx,
) -> Result<Vec<crate::stackmap::StackMapFrame>> {
    let initial = initial_locals(
        cp,
        ctx.this_class,
        ctx.is_object,
        ctx.name,
        ctx.descriptor,
        ctx.is_static,
    )?;
    let mut expanded = match frames {
        Some(f) => expand(f, &initial)?,
        None => vec![],
    };
    let mut added: Vec<Frame> = Vec::new();
    if ctx.major >= 50 {
        let have: BTreeSet<u32> = expanded.iter().map(|f| f.offset).collect();
        let entry_moved = r.map(0)? != 0;
        let zero_is_target = insns.iter().any(|i| i.targets().contains(&0))
            || code.exception_table.iter().any(|e| e.handler_pc == 0);
        if entry_moved && zero_is_target && !have.contains(&0) {
            added.push(Frame {
                offset: 0,
                locals: initial.clone(),
                stack: vec![],
            });
        }
        let index_of: BTreeMap<u32, usize> = insns
            .iter()
            .enumerate()
            .map(|(k, i)| (i.offset, k))
            .collect();
        for &p in &r.widened_conditionals {
            let k = index_of[&p];
            let next = p + insns[k].len;
            if !have.contains(&next) {
                added.push(frame_after(
                    &code.code,
                    insns,
                    k,
                    &expanded,
                    &initial,
                    cp,
                    ctx.this_class,
                )?);
            }
        }
    }
    if expanded.is_empty() && added.is_empty() {
        return Ok(vec![]);
    }
    expanded.extend(added);
    expanded.sort_by_key(|f| f.offset);
    let remap = |v: &mut VType| -> Result<()> {
        if let VType::Uninitialized(at) = v {
            *at = r.insn_pos(*at as u32)? as u16;
        }
        Ok(())
    };
    for f in &mut expanded {
        f.offset = r.map(f.offset)?;
        f.locals.iter_mut().try_for_each(remap)?;
        f.stack.iter_mut().try_for_each(remap)?;
    }
    let mut initial_moved = initial;
    initial_moved.iter_mut().try_for_each(remap)?;
    compress(&expanded, &initial_moved)
}

#[cfg(test)]
#[path = "inject_tests.rs"]
mod tests;
