//! Every class of the running JDK's module image must parse, write back byte
//! for byte, and survive `inject` without a panic.

use crate::bci_support as support;

use hprof_bci::classfile::attributes::AttributeInfo;
use hprof_bci::classfile::ClassFile;

#[test]
fn every_jdk_class_round_trips_byte_identically() {
    let mut total = 0usize;
    let mut failures = Vec::new();
    let (mut codes, mut raw_codes, mut stackmaps) = (0usize, 0usize, 0usize);
    support::for_each_jdk_class(|name, bytes| {
        total += 1;
        match ClassFile::parse(bytes) {
            Err(e) => failures.push(format!("{name}: parse: {e}")),
            Ok(cf) => {
                for m in &cf.methods {
                    for a in &m.attributes {
                        let n = cf.constant_pool.utf8(a.name_index).unwrap_or(b"");
                        match &a.info {
                            AttributeInfo::Code(c) => {
                                codes += 1;
                                stackmaps += c
                                    .attributes
                                    .iter()
                                    .filter(|s| matches!(s.info, AttributeInfo::StackMapTable(_)))
                                    .count();
                            }
                            AttributeInfo::Raw(_) if n == b"Code" => raw_codes += 1,
                            _ => {}
                        }
                    }
                }
                let out = cf.to_bytes();
                if out != bytes {
                    failures.push(format!("{name}: written bytes differ"));
                } else if ClassFile::parse(&out).as_ref() != Ok(&cf) {
                    failures.push(format!("{name}: parse(write(parse(x))) != parse(x)"));
                }
            }
        }
    });
    println!(
        "round-trip: {total} JDK classes, {} failures",
        failures.len()
    );
    println!(
        "  {codes} Code attributes parsed ({stackmaps} with StackMapTable), {raw_codes} left raw"
    );
    for f in failures.iter().take(20) {
        println!("  {f}");
    }
    assert!(
        total > 10_000,
        "expected a full JDK image, got {total} classes"
    );
    assert!(failures.is_empty());
    assert_eq!(raw_codes, 0, "every JDK Code attribute must decode");
}

#[test]
fn every_jdk_class_can_be_injected() {
    use hprof_bci::{inject, InjectConfig, SkipReason};
    use std::collections::BTreeMap;
    let mut cfg = InjectConfig::new("hprof/test/Tracker", 0x1000_0000);
    cfg.call_sites = true;
    cfg.object_tracking = true;
    let (mut classes, mut rewritten, mut methods, mut injected) = (0usize, 0usize, 0usize, 0usize);
    let mut class_skips: BTreeMap<String, usize> = BTreeMap::new();
    let mut method_skips: BTreeMap<String, usize> = BTreeMap::new();
    let mut failures = Vec::new();
    support::for_each_jdk_class(|name, bytes| {
        classes += 1;
        cfg.class_number = 0x1000_0000 + classes as u32;
        match inject(bytes, &cfg) {
            Err(e) => failures.push(format!("{name}: {e}")),
            Ok(out) => {
                if let Some(s) = &out.class_skip {
                    *class_skips.entry(format!("{s:?}")).or_default() += 1;
                }
                methods += out.methods.len();
                injected += out.injected_methods();
                for (_, r) in out.skipped_methods() {
                    let key = match r {
                        SkipReason::Unsupported(m) => {
                            failures.push(format!("{name}: {m}"));
                            "Unsupported".to_string()
                        }
                        SkipReason::TooLarge { .. } => "TooLarge".to_string(),
                        other => format!("{other:?}"),
                    };
                    *method_skips.entry(key).or_default() += 1;
                }
                if let Some(b) = out.new_bytes {
                    rewritten += 1;
                    if let Err(e) = ClassFile::parse(&b) {
                        failures.push(format!("{name}: rewritten class does not parse: {e}"));
                    }
                }
            }
        }
    });
    println!("inject: {classes} classes, {rewritten} rewritten, {methods} methods, {injected} instrumented");
    println!("  class skips: {class_skips:?}");
    println!("  method skips: {method_skips:?}");
    for f in failures.iter().take(20) {
        println!("  {f}");
    }
    assert!(rewritten > 10_000);
    assert!(failures.is_empty(), "{} failures", failures.len());
}
