//! Unit tests of the rewriter on synthetic class files.

use super::*;
use crate::classfile::attributes::{ExceptionEntry, LineNumber, LocalVariable};
use crate::classfile::ACC_STATIC;
use crate::stackmap::StackMapFrame;

const CNUM: u32 = 0x1000_0000;

fn code(bytes: &[u8], max_stack: u16, max_locals: u16) -> Code {
    Code {
        max_stack,
        max_locals,
        code: bytes.to_vec(),
        exception_table: vec![],
        attributes: vec![],
    }
}

fn sub_attr(cf: &mut ClassFile, name: &str, info: AttributeInfo) -> Attribute {
    Attribute {
        name_index: cf.constant_pool.add_utf8(name.as_bytes()).unwrap(),
        info,
    }
}

fn class_with(major: u16, name: &str, methods: Vec<(u16, &str, &str, Option<Code>)>) -> ClassFile {
    let mut cf = ClassFile::new(major, 0x21, name, Some("java/lang/Object")).unwrap();
    for (acc, n, d, c) in methods {
        cf.add_method(acc, n, d, c).unwrap();
    }
    cf
}

fn timing() -> InjectConfig {
    let mut c = InjectConfig::new("T/Tracker", CNUM);
    c.call_sites = true;
    c
}

fn run(cf: &ClassFile, cfg: &InjectConfig) -> (InjectOutcome, ClassFile) {
    let out = inject(&cf.to_bytes(), cfg).unwrap();
    let back = ClassFile::parse(out.new_bytes.as_deref().expect("rewritten")).unwrap();
    (out, back)
}

/// The injected `push cnum; push mnum; invokestatic which` sequence.
fn site(cf: &ClassFile, mnum: u8, which: &str) -> Vec<u8> {
    let cp = &cf.constant_pool;
    let int = cp
        .find(&crate::classfile::constant_pool::Constant::Integer(
            CNUM as i32,
        ))
        .unwrap();
    let mref = (1..cp.count() as u16)
        .find(|&i| {
            cp.member_ref(i)
                .map(|(c, n, _)| c == b"T/Tracker" && n == which.as_bytes())
                .unwrap_or(false)
        })
        .unwrap();
    let mut v = if int <= 255 {
        vec![op::LDC, int as u8]
    } else {
        vec![op::LDC_W, (int >> 8) as u8, int as u8]
    };
    v.push(op::ICONST_0 + mnum);
    v.extend(invokestatic(mref));
    v
}

fn frames_of(c: &Code) -> Vec<StackMapFrame> {
    c.attributes
        .iter()
        .find_map(|a| match &a.info {
            AttributeInfo::StackMapTable(f) => Some(f.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

#[test]
fn entry_and_return_sites_with_all_tables() {
    // static int m(int): 0 iload_0; 1 ifeq +5 -> 6; 4 iconst_1; 5 ireturn; 6 iconst_0; 7 ireturn
    let mut c = code(&[0x1a, 0x99, 0x00, 0x05, 0x04, 0xac, 0x03, 0xac], 1, 1);
    let mut cf = class_with(52, "A", vec![]);
    c.exception_table.push(ExceptionEntry {
        start_pc: 0,
        end_pc: 5,
        handler_pc: 6,
        catch_type: 0,
    });
    c.attributes.push(sub_attr(
        &mut cf,
        "StackMapTable",
        AttributeInfo::StackMapTable(vec![StackMapFrame::Same { offset_delta: 6 }]),
    ));
    c.attributes.push(sub_attr(
        &mut cf,
        "LineNumberTable",
        AttributeInfo::LineNumberTable(vec![
            LineNumber {
                start_pc: 0,
                line_number: 10,
            },
            LineNumber {
                start_pc: 4,
                line_number: 11,
            },
            LineNumber {
                start_pc: 6,
                line_number: 12,
            },
        ]),
    ));
    let lv = LocalVariable {
        start_pc: 0,
        length: 8,
        name_index: 1,
        descriptor_index: 1,
        index: 0,
    };
    let lv2 = LocalVariable {
        start_pc: 4,
        length: 2,
        name_index: 1,
        descriptor_index: 1,
        index: 0,
    };
    c.attributes.push(sub_attr(
        &mut cf,
        "LocalVariableTable",
        AttributeInfo::LocalVariableTable(vec![lv, lv2]),
    ));
    cf.add_method(ACC_STATIC, "m", "(I)I", Some(c)).unwrap();

    let (out, back) = run(&cf, &timing());
    assert_eq!(out.injected_methods(), 1);
    assert_eq!(out.methods[0].name, "m");
    let nc = back.methods[0].code().unwrap();
    let entry = site(&back, 0, "CallSite");
    let ret = site(&back, 0, "ReturnSite");
    let l = entry.len() as u16;
    let r = ret.len() as u16;
    let mut want = entry.clone();
    want.extend([0x1a, 0x99]);
    // ifeq now skips iconst_1, ReturnSite, ireturn and lands on iconst_0
    want.extend((5 + r as i16).to_be_bytes());
    want.push(0x04);
    want.extend(&ret);
    want.push(0xac);
    want.push(0x03);
    want.extend(&ret);
    want.push(0xac);
    assert_eq!(nc.code, want);
    assert_eq!(nc.max_stack, 3);
    assert_eq!(nc.max_locals, 1);
    // handler lands on iconst_0; the range ends where ReturnSite of the first return begins
    assert_eq!(
        nc.exception_table[0],
        ExceptionEntry {
            start_pc: l,
            end_pc: l + 5,
            handler_pc: l + 6 + r,
            catch_type: 0
        }
    );
    assert_eq!(
        frames_of(nc),
        vec![StackMapFrame::Same {
            offset_delta: (l + 6 + r) as u8
        }]
    );
    for a in &nc.attributes {
        match &a.info {
            AttributeInfo::LineNumberTable(v) => {
                let pcs: Vec<u16> = v.iter().map(|x| x.start_pc).collect();
                assert_eq!(
                    pcs,
                    vec![0, l + 4, l + 6 + r],
                    "line 10 keeps offset 0, covering the entry call"
                );
            }
            AttributeInfo::LocalVariableTable(v) => {
                assert_eq!((v[0].start_pc, v[0].length), (0, nc.code.len() as u16));
                assert_eq!((v[1].start_pc, v[1].length), (l + 4, 1 + r + 1));
            }
            _ => {}
        }
    }
}

#[test]
fn loop_to_offset_zero_does_not_reenter_call_site() {
    // static void m(int): 0 iload_0; 1 ifle +9 -> 10; 4 iinc 0 -1; 7 goto -7 -> 0; 10 return
    let mut c = code(
        &[
            0x1a, 0x9e, 0x00, 0x09, 0x84, 0x00, 0xff, 0xa7, 0xff, 0xf9, 0xb1,
        ],
        1,
        1,
    );
    let mut cf = class_with(52, "A", vec![]);
    let frames = vec![
        StackMapFrame::Same { offset_delta: 0 },
        StackMapFrame::Same { offset_delta: 9 },
    ];
    c.attributes.push(sub_attr(
        &mut cf,
        "StackMapTable",
        AttributeInfo::StackMapTable(frames),
    ));
    cf.add_method(ACC_STATIC, "m", "(I)V", Some(c.clone()))
        .unwrap();
    let (_, back) = run(&cf, &timing());
    let nc = back.methods[0].code().unwrap();
    let l = site(&back, 0, "CallSite").len() as i32;
    let goto_at = l as usize + 7;
    assert_eq!(nc.code[goto_at], op::GOTO);
    let d = i16::from_be_bytes([nc.code[goto_at + 1], nc.code[goto_at + 2]]) as i32;
    assert_eq!(
        goto_at as i32 + d,
        l,
        "the loop jumps to the original first instruction"
    );
    // the explicit frame at 0 moved with it
    let f = frames_of(nc);
    assert_eq!(
        f[0],
        StackMapFrame::Same {
            offset_delta: l as u8
        }
    );

    // Same method without the explicit frame at 0 (as the initial frame
    // covered it): the rewriter must add one at the moved offset.
    let mut cf2 = class_with(52, "A", vec![]);
    let mut c2 = c.clone();
    c2.attributes.clear();
    c2.attributes.push(sub_attr(
        &mut cf2,
        "StackMapTable",
        AttributeInfo::StackMapTable(vec![StackMapFrame::Same { offset_delta: 10 }]),
    ));
    cf2.add_method(ACC_STATIC, "m", "(I)V", Some(c2)).unwrap();
    let (_, back2) = run(&cf2, &timing());
    let f2 = frames_of(back2.methods[0].code().unwrap());
    assert_eq!(f2.len(), 2);
    assert_eq!(
        f2[0],
        StackMapFrame::Same {
            offset_delta: l as u8
        }
    );
}

#[test]
fn uninitialized_offsets_follow_the_new_instruction() {
    // static Object m(int): 0 new A; 3 dup; 4 iload_0; 5 ifeq +7 -> 12; 8 iconst_1; 9 goto +4 -> 13;
    // 12 iconst_2; 13 invokespecial A.<init>(I)V; 16 areturn
    let mut cf = class_with(52, "A", vec![]);
    let a = cf.this_class;
    let init = cf
        .constant_pool
        .add_methodref(b"A", b"<init>", b"(I)V")
        .unwrap();
    let [ah, al] = a.to_be_bytes();
    let [ih, il] = init.to_be_bytes();
    let mut c = code(
        &[
            0xbb, ah, al, 0x59, 0x1a, 0x99, 0x00, 0x07, 0x04, 0xa7, 0x00, 0x04, 0x05, 0xb7, ih, il,
            0xb0,
        ],
        4,
        1,
    );
    let u = VType::Uninitialized(0);
    let frames = vec![
        StackMapFrame::Full {
            offset_delta: 12,
            locals: vec![VType::Integer],
            stack: vec![u, u],
        },
        StackMapFrame::Full {
            offset_delta: 0,
            locals: vec![VType::Integer],
            stack: vec![u, u, VType::Integer],
        },
    ];
    c.attributes.push(sub_attr(
        &mut cf,
        "StackMapTable",
        AttributeInfo::StackMapTable(frames),
    ));
    cf.add_method(ACC_STATIC, "m", "(I)Ljava/lang/Object;", Some(c))
        .unwrap();
    let (_, back) = run(&cf, &timing());
    let nc = back.methods[0].code().unwrap();
    let l = site(&back, 0, "CallSite").len() as u16;
    assert_eq!(nc.code[l as usize], 0xbb);
    let nu = VType::Uninitialized(l);
    let f = frames_of(nc);
    assert_eq!(
        f[0],
        StackMapFrame::Full {
            offset_delta: l + 12,
            locals: vec![VType::Integer],
            stack: vec![nu, nu]
        }
    );
    assert!(matches!(&f[1], StackMapFrame::Full { offset_delta: 0, stack, .. } if stack[0] == nu));
}

#[test]
fn object_init_and_new_array() {
    // java/lang/Object: <init> is `return`; m() allocates an int[] and returns it.
    let mut cf = ClassFile::new(52, 0x21, "java/lang/Object", None).unwrap();
    cf.add_method(0x1, "<init>", "()V", Some(code(&[0xb1], 0, 1)))
        .unwrap();
    cf.add_method(
        0x1,
        "m",
        "()Ljava/lang/Object;",
        Some(code(&[0x04, 0xbc, 10, 0xb0], 1, 1)),
    )
    .unwrap();
    let mut cfg = InjectConfig::new("T/Tracker", CNUM);
    cfg.object_tracking = true;
    let (out, back) = run(&cf, &cfg);
    assert_eq!(out.injected_methods(), 2);
    let init = back.methods[0].code().unwrap();
    assert_eq!(init.code[0], op::ALOAD_0);
    assert_eq!(init.code[1], op::INVOKESTATIC);
    assert_eq!(
        back.constant_pool
            .member_ref(u16::from_be_bytes([init.code[2], init.code[3]]))
            .unwrap()
            .1,
        b"ObjectInit"
    );
    assert_eq!(init.code[4], 0xb1);
    assert_eq!(init.max_stack, 1);
    let m = back.methods[1].code().unwrap();
    assert_eq!(&m.code[0..3], &[0x04, 0xbc, 10]);
    assert_eq!(m.code[3], op::DUP);
    assert_eq!(
        back.constant_pool
            .member_ref(u16::from_be_bytes([m.code[5], m.code[6]]))
            .unwrap()
            .1,
        b"NewArray"
    );
    assert_eq!(m.code[7], 0xb0);
    assert_eq!(m.max_stack, 2);

    // With timing only, Object.<init> is never timed.
    let (out, _) = run(&cf, &timing());
    assert_eq!(out.methods[0].skipped, Some(SkipReason::ObjectInitNotTimed));
    assert_eq!(out.methods[1].skipped, None);
}

#[test]
fn class_and_method_skips() {
    let mut cfg = timing();
    cfg.system_class = true;
    let cf = class_with(
        52,
        "java/lang/Thread",
        vec![
            (0x1, "<init>", "()V", Some(code(&[0xb1], 0, 1))),
            (0x4, "finalize", "()V", Some(code(&[0xb1], 0, 1))),
            (ACC_STATIC, "<clinit>", "()V", Some(code(&[0xb1], 0, 0))),
            (
                ACC_STATIC,
                "currentThread",
                "()Ljava/lang/Thread;",
                Some(code(&[0x01, 0xb0], 1, 0)),
            ),
            (ACC_STATIC | 0x100, "nat", "()V", None),
            (0x1, "<init>", "(I)V", Some(code(&[0x00, 0xb1], 0, 2))),
        ],
    );
    let out = inject(&cf.to_bytes(), &cfg).unwrap();
    let reasons: Vec<_> = out.methods.iter().map(|m| m.skipped.clone()).collect();
    assert_eq!(
        reasons,
        vec![
            Some(SkipReason::TrivialSystemConstructor),
            Some(SkipReason::TrivialSystemFinalize),
            Some(SkipReason::SystemClassInitializer),
            Some(SkipReason::ThreadCurrentThread),
            Some(SkipReason::NoCode),
            None,
        ]
    );
    // Not a system class: trivial constructors and <clinit> are instrumented.
    let out = inject(&cf.to_bytes(), &timing()).unwrap();
    assert_eq!(out.injected_methods(), 4);

    let mut iface = class_with(52, "I", vec![(0x1, "d", "()V", Some(code(&[0xb1], 0, 1)))]);
    iface.access_flags |= ACC_INTERFACE;
    let out = inject(&iface.to_bytes(), &timing()).unwrap();
    assert_eq!(
        (out.class_skip, out.new_bytes),
        (Some(ClassSkip::Interface), None)
    );
    let tracker = class_with(
        52,
        "T/Tracker",
        vec![(ACC_STATIC, "x", "()V", Some(code(&[0xb1], 0, 0)))],
    );
    assert_eq!(
        inject(&tracker.to_bytes(), &timing()).unwrap().class_skip,
        Some(ClassSkip::TrackerClass)
    );
    let plain = class_with(
        52,
        "P",
        vec![(ACC_STATIC, "x", "()V", Some(code(&[0xb1], 0, 0)))],
    );
    let out = inject(&plain.to_bytes(), &InjectConfig::new("T/Tracker", 1)).unwrap();
    assert_eq!(out.class_skip, Some(ClassSkip::NothingRequested));
    let mut cfg = InjectConfig::new("T/Tracker", 1);
    cfg.object_tracking = true;
    let out = inject(&plain.to_bytes(), &cfg).unwrap();
    assert_eq!(
        (out.methods[0].skipped.clone(), out.new_bytes),
        (Some(SkipReason::NothingToInject), None)
    );
    let out = inject(b"\x7fELF....", &timing()).unwrap();
    assert_eq!(out.class_skip, Some(ClassSkip::NotAClassFile));
    assert!(inject(&[0xCA, 0xFE, 0xBA, 0xBE, 0, 0], &timing()).is_err());
}

#[test]
fn int_pushes_use_the_shortest_form() {
    let mut cp = ConstantPool::new();
    assert_eq!(push_int(&mut cp, 3).unwrap(), vec![0x06]);
    assert_eq!(push_int(&mut cp, -1).unwrap(), vec![0x02]);
    assert_eq!(push_int(&mut cp, 100).unwrap(), vec![op::BIPUSH, 100]);
    assert_eq!(
        push_int(&mut cp, 1000).unwrap(),
        vec![op::SIPUSH, 0x03, 0xe8]
    );
    assert_eq!(push_int(&mut cp, CNUM as i32).unwrap(), vec![op::LDC, 1]);
    for i in 0..300 {
        cp.add_integer(i + 1_000_000).unwrap();
    }
    assert_eq!(
        push_int(&mut cp, 0x2000_0000).unwrap(),
        vec![op::LDC_W, 0x01, 0x2e]
    );
}

#[test]
fn method_numbers_and_too_large_methods() {
    let mut big = vec![0x00; 65530];
    big.push(0xb1);
    let cf = class_with(
        52,
        "A",
        vec![
            (ACC_STATIC, "a", "()V", Some(code(&[0xb1], 0, 0))),
            (ACC_STATIC, "big", "()V", Some(code(&big, 0, 0))),
            (ACC_STATIC, "c", "()V", Some(code(&[0xb1], 0, 0))),
        ],
    );
    let (out, back) = run(&cf, &timing());
    assert!(matches!(
        out.methods[1].skipped,
        Some(SkipReason::TooLarge { .. })
    ));
    assert_eq!(
        back.methods[1].code().unwrap().code,
        big,
        "skipped methods are left unchanged"
    );
    let c = &back.methods[2].code().unwrap().code;
    assert_eq!(
        c[2],
        op::ICONST_0 + 2,
        "method number is the index in the methods array"
    );
}

#[test]
fn old_class_files_need_no_frames() {
    // version 49 with a far conditional branch: widened, no StackMapTable added
    let mut body = vec![0x03, 0x99];
    body.extend(32762i16.to_be_bytes()); // to the third return
    body.resize(32761, 0x00);
    body.extend([0xb1, 0xb1, 0xb1]);
    let cf = class_with(
        49,
        "A",
        vec![(ACC_STATIC, "m", "()V", Some(code(&body, 1, 0)))],
    );
    let (_, back) = run(&cf, &timing());
    let nc = back.methods[0].code().unwrap();
    assert!(nc.attributes.is_empty());
    assert!(nc
        .code
        .windows(4)
        .any(|w| w == [0x9a, 0x00, 0x08, op::GOTO_W]));
}
