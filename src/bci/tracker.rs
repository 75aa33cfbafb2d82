//! Builds the Tracker class (profiles.md §2.1) as class-file bytes, so the
//! agent can embed it (JDK 9+ no longer ships one, §12) and put it on the
//! boot class path under any internal name.
//!
//! ```text
//! public class <name> {
//!     private static int engaged;                       // 0 until the agent sets 0xFFFF
//!     public static void ObjectInit(Object o)  { if (engaged != 0) nativeObjectInit(Thread.currentThread(), o); }
//!     public static void NewArray(Object o)    { if (engaged != 0) nativeNewArray(Thread.currentThread(), o); }
//!     public static void CallSite(int c, int m)   { if (engaged != 0) nativeCallSite(Thread.currentThread(), c, m); }
//!     public static void ReturnSite(int c, int m) { if (engaged != 0) nativeReturnSite(Thread.currentThread(), c, m); }
//!     private static native void nativeObjectInit(Object thread, Object o);   // and the other three
//! }
//! ```

use crate::bci::classfile::attributes::{Attribute, AttributeInfo, Code};
use crate::bci::classfile::ClassFile;
use crate::bci::code::instructions::op;
use crate::bci::errors::Result;
use crate::bci::inject::{CALL_SITE, NEW_ARRAY, OBJECT_INIT, RETURN_SITE};
use crate::bci::stackmap::StackMapFrame;

/// Name of the static int field the agent flips with SetStaticIntField.
pub const ENGAGED_FIELD: &str = "engaged";

/// An entry point: (name, descriptor), native name, native descriptor, argument loads.
type Entry = (
    (&'static str, &'static str),
    &'static str,
    &'static str,
    &'static [u8],
);

const ENTRIES: [Entry; 4] = [
    (
        OBJECT_INIT,
        "nativeObjectInit",
        "(Ljava/lang/Object;Ljava/lang/Object;)V",
        &[op::ALOAD_0],
    ),
    (
        NEW_ARRAY,
        "nativeNewArray",
        "(Ljava/lang/Object;Ljava/lang/Object;)V",
        &[op::ALOAD_0],
    ),
    (
        CALL_SITE,
        "nativeCallSite",
        "(Ljava/lang/Object;II)V",
        &[0x1a, 0x1b],
    ),
    (
        RETURN_SITE,
        "nativeReturnSite",
        "(Ljava/lang/Object;II)V",
        &[0x1a, 0x1b],
    ),
];

/// Class-file bytes (version 52) of a Tracker class named `internal_name`
/// (e.g. `com/sun/demo/jvmti/hprof/Tracker`).
pub fn tracker_class_bytes(internal_name: &str) -> Result<Vec<u8>> {
    const PUBLIC_STATIC: u16 = 0x0009;
    const PRIVATE_STATIC: u16 = 0x000A;
    const PRIVATE_STATIC_NATIVE: u16 = 0x010A;
    let mut cf = ClassFile::new(52, 0x0021, internal_name, Some("java/lang/Object"))?;
    cf.add_field(PRIVATE_STATIC, ENGAGED_FIELD, "I")?;
    let name = internal_name.as_bytes();
    let engaged = {
        let class_index = cf.constant_pool.find_class(name).expect("this class");
        let nat = cf
            .constant_pool
            .add_name_and_type(ENGAGED_FIELD.as_bytes(), b"I")?;
        cf.constant_pool
            .add(crate::bci::classfile::constant_pool::Constant::Fieldref {
                class_index,
                name_and_type_index: nat,
            })?
    };
    let current_thread = cf.constant_pool.add_methodref(
        b"java/lang/Thread",
        b"currentThread",
        b"()Ljava/lang/Thread;",
    )?;
    let stack_map = cf.constant_pool.add_utf8(b"StackMapTable")?;
    for ((entry, entry_desc), native, native_desc, loads) in ENTRIES {
        let native_ref =
            cf.constant_pool
                .add_methodref(name, native.as_bytes(), native_desc.as_bytes())?;
        // 0 getstatic engaged; 3 ifeq -> return; 6 invokestatic currentThread;
        // 9 loads; invokestatic native; return
        let ret = 9 + loads.len() as u16 + 3;
        let mut code = vec![0xb2];
        code.extend(engaged.to_be_bytes());
        code.push(op::IFEQ);
        code.extend((ret as i16 - 3).to_be_bytes());
        code.push(op::INVOKESTATIC);
        code.extend(current_thread.to_be_bytes());
        code.extend_from_slice(loads);
        code.push(op::INVOKESTATIC);
        code.extend(native_ref.to_be_bytes());
        code.push(op::RETURN);
        let frame = StackMapFrame::Same {
            offset_delta: ret as u8,
        };
        let code = Code {
            max_stack: 1 + loads.len() as u16,
            max_locals: loads.len() as u16,
            code,
            exception_table: vec![],
            attributes: vec![Attribute {
                name_index: stack_map,
                info: AttributeInfo::StackMapTable(vec![frame]),
            }],
        };
        cf.add_method(PUBLIC_STATIC, entry, entry_desc, Some(code))?;
        cf.add_method(PRIVATE_STATIC_NATIVE, native, native_desc, None)?;
    }
    Ok(cf.to_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bci::{inject, ClassSkip, InjectConfig};

    #[test]
    fn tracker_parses_and_is_never_instrumented() {
        let name = crate::bci::DEFAULT_TRACKER_CLASS;
        let bytes = tracker_class_bytes(name).unwrap();
        let cf = ClassFile::parse(&bytes).unwrap();
        assert_eq!(cf.name().unwrap(), name);
        let names: Vec<String> = cf
            .methods
            .iter()
            .map(|m| cf.constant_pool.utf8_string(m.name_index).unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "ObjectInit",
                "nativeObjectInit",
                "NewArray",
                "nativeNewArray",
                "CallSite",
                "nativeCallSite",
                "ReturnSite",
                "nativeReturnSite"
            ]
        );
        let mut cfg = InjectConfig::new(name, 1);
        cfg.call_sites = true;
        assert_eq!(
            inject(&bytes, &cfg).unwrap().class_skip,
            Some(ClassSkip::TrackerClass)
        );
    }
}
