//! Every class of the running JDK's module image must parse, write back byte
//! for byte, and survive `inject` without a panic.

#[path = "bci_support.rs"]
mod support;

use hprof_rs::bci::classfile::attributes::AttributeInfo;
use hprof_rs::bci::classfile::ClassFile;

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
    println!("round-trip: {total} JDK classes, {} failures", failures.len());
    println!("  {codes} Code attributes parsed ({stackmaps} with StackMapTable), {raw_codes} left raw");
    for f in failures.iter().take(20) {
        println!("  {f}");
    }
    assert!(total > 10_000, "expected a full JDK image, got {total} classes");
    assert!(failures.is_empty());
    assert_eq!(raw_codes, 0, "every JDK Code attribute must decode");
}
