//! Checks the hand-written / generated JVMTI bindings against the real
//! `jvmti.h` of the installed JDK: a C probe compiled with the system C
//! compiler prints slot positions, struct sizes and offsets, enum values and
//! capability bit positions, and each is compared with the Rust side.

use hprof_jvmti::sys::*;
use std::collections::HashMap;
use std::mem::{offset_of, size_of};
use std::path::PathBuf;
use std::process::Command;

use crate::common;

fn probe() -> HashMap<String, i64> {
    let include = common::jdk_home().join("include");
    assert!(
        include.join("jvmti.h").exists(),
        "no jvmti.h under {}",
        include.display()
    );
    let mut c = String::from("#include <stdio.h>\n#include <stddef.h>\n#include <string.h>\n#include <jvmti.h>\nint main(void){\n");
    for (_, name) in FUNCTION_SLOTS.iter().filter(|(_, n)| *n != "RESERVED") {
        c += &format!("printf(\"slot.{name} %zu\\n\", offsetof(struct jvmtiInterface_1_, {name})/sizeof(void*)+1);\n");
    }
    for (i, name) in EVENT_CALLBACK_FIELDS.iter().enumerate() {
        let _ = i;
        c += &format!("printf(\"event.{name} %zu\\n\", offsetof(jvmtiEventCallbacks, {name})/sizeof(void*));\n");
    }
    for (_, name) in cap::ALL {
        c += &format!(
            "{{ jvmtiCapabilities k; unsigned int w[4]; memset(&k,0,sizeof k); k.{name}=1; memcpy(w,&k,sizeof w);\n\
              int b=-1; for(int i=0;i<128;i++) if (w[i/32]>>(i%32)&1) b=i; printf(\"cap.{name} %d\\n\", b); }}\n"
        );
    }
    for s in [
        "jvmtiCapabilities",
        "jvmtiEventCallbacks",
        "jvmtiThreadInfo",
        "jvmtiThreadGroupInfo",
        "jvmtiFrameInfo",
        "jvmtiStackInfo",
        "jvmtiHeapCallbacks",
        "jvmtiHeapReferenceInfo",
        "jvmtiHeapReferenceInfoStackLocal",
        "jvmtiHeapReferenceInfoJniLocal",
        "jvmtiClassDefinition",
        "jvmtiMonitorUsage",
        "jvmtiLineNumberEntry",
        "jvmtiLocalVariableEntry",
        "jvmtiTimerInfo",
        "jvmtiMonitorStackDepthInfo",
        "jvmtiInterface_1",
    ] {
        c += &format!("printf(\"size.{s} %zu\\n\", sizeof({s}));\n");
    }
    for (s, f) in [
        ("jvmtiStackInfo", "frame_buffer"),
        ("jvmtiStackInfo", "frame_count"),
        ("jvmtiThreadInfo", "thread_group"),
        ("jvmtiThreadInfo", "context_class_loader"),
        ("jvmtiHeapReferenceInfoStackLocal", "slot"),
        ("jvmtiHeapReferenceInfoStackLocal", "method"),
        ("jvmtiHeapCallbacks", "array_primitive_value_callback"),
        ("jvmtiMonitorUsage", "notify_waiters"),
        ("jvmtiTimerInfo", "reserved1"),
    ] {
        c += &format!("printf(\"offset.{s}.{f} %zu\\n\", offsetof({s}, {f}));\n");
    }
    for e in [
        "JVMTI_EVENT_VM_INIT",
        "JVMTI_EVENT_VM_DEATH",
        "JVMTI_EVENT_THREAD_START",
        "JVMTI_EVENT_THREAD_END",
        "JVMTI_EVENT_CLASS_FILE_LOAD_HOOK",
        "JVMTI_EVENT_CLASS_LOAD",
        "JVMTI_EVENT_CLASS_PREPARE",
        "JVMTI_EVENT_EXCEPTION_CATCH",
        "JVMTI_EVENT_DATA_DUMP_REQUEST",
        "JVMTI_EVENT_MONITOR_WAIT",
        "JVMTI_EVENT_MONITOR_WAITED",
        "JVMTI_EVENT_MONITOR_CONTENDED_ENTER",
        "JVMTI_EVENT_MONITOR_CONTENDED_ENTERED",
        "JVMTI_EVENT_GARBAGE_COLLECTION_START",
        "JVMTI_EVENT_GARBAGE_COLLECTION_FINISH",
        "JVMTI_EVENT_OBJECT_FREE",
        "JVMTI_EVENT_VM_OBJECT_ALLOC",
        "JVMTI_EVENT_SAMPLED_OBJECT_ALLOC",
        "JVMTI_HEAP_REFERENCE_STACK_LOCAL",
        "JVMTI_HEAP_REFERENCE_OTHER",
        "JVMTI_PRIMITIVE_TYPE_BOOLEAN",
        "JVMTI_PRIMITIVE_TYPE_DOUBLE",
        "JVMTI_THREAD_STATE_RUNNABLE",
        "JVMTI_THREAD_STATE_SUSPENDED",
        "JVMTI_THREAD_STATE_INTERRUPTED",
        "JVMTI_THREAD_STATE_BLOCKED_ON_MONITOR_ENTER",
        "JVMTI_PHASE_LIVE",
        "JVMTI_ERROR_ABSENT_INFORMATION",
        "JVMTI_ERROR_WRONG_PHASE",
        "JVMTI_VERSION_11",
    ] {
        c += &format!("printf(\"enum.{e} %ld\\n\", (long){e});\n");
    }
    c += "return 0; }\n";

    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("jvmti_abi");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("probe.c"), c).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(cc)
        .arg("-I")
        .arg(&include)
        .arg("-I")
        .arg(include.join("linux"))
        .arg("-o")
        .arg(dir.join("probe"))
        .arg(dir.join("probe.c"))
        .output()
        .expect("run the C compiler");
    assert!(
        out.status.success(),
        "probe did not compile: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(dir.join("probe")).output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (k, v) = l.split_once(' ').unwrap();
            (k.to_string(), v.parse().unwrap())
        })
        .collect()
}

#[test]
fn bindings_match_installed_jvmti_h() {
    let p = probe();
    // Function table: every named slot sits where jvmti.h puts it, and the
    // Rust struct has one pointer-sized field per slot in the same order.
    for (slot, name) in FUNCTION_SLOTS.iter().filter(|(_, n)| *n != "RESERVED") {
        assert_eq!(p[&format!("slot.{name}")], *slot as i64, "slot of {name}");
    }
    assert_eq!(
        size_of::<jvmtiInterface_1>(),
        FUNCTION_SLOTS.len() * size_of::<usize>()
    );
    assert_eq!(
        p["size.jvmtiInterface_1"] as usize,
        size_of::<jvmtiInterface_1>()
    );
    assert_eq!(
        offset_of!(jvmtiInterface_1, SetHeapSamplingInterval) / 8 + 1,
        156
    );
    assert_eq!(
        offset_of!(jvmtiInterface_1, GetThreadListStackTraces) / 8 + 1,
        101
    );
    assert_eq!(offset_of!(jvmtiInterface_1, RunAgentThread) / 8 + 1, 12);
    assert_eq!(offset_of!(jvmtiInterface_1, FollowReferences) / 8 + 1, 115);

    for (i, name) in EVENT_CALLBACK_FIELDS.iter().enumerate() {
        assert_eq!(
            p[&format!("event.{name}")],
            i as i64,
            "callback slot of {name}"
        );
    }
    assert_eq!(offset_of!(jvmtiEventCallbacks, SampledObjectAlloc) / 8, 36);
    assert_eq!(offset_of!(jvmtiEventCallbacks, DataDumpRequest) / 8, 21);

    for (bit, name) in cap::ALL {
        assert_eq!(
            p[&format!("cap.{name}")],
            *bit as i64,
            "capability bit of {name}"
        );
    }
    assert_eq!(
        p["cap.can_generate_sampled_object_alloc_events"],
        cap::CAN_GENERATE_SAMPLED_OBJECT_ALLOC_EVENTS as i64
    );

    let sizes: &[(&str, usize)] = &[
        ("jvmtiCapabilities", size_of::<jvmtiCapabilities>()),
        ("jvmtiEventCallbacks", size_of::<jvmtiEventCallbacks>()),
        ("jvmtiThreadInfo", size_of::<jvmtiThreadInfo>()),
        ("jvmtiThreadGroupInfo", size_of::<jvmtiThreadGroupInfo>()),
        ("jvmtiFrameInfo", size_of::<jvmtiFrameInfo>()),
        ("jvmtiStackInfo", size_of::<jvmtiStackInfo>()),
        ("jvmtiHeapCallbacks", size_of::<jvmtiHeapCallbacks>()),
        (
            "jvmtiHeapReferenceInfo",
            size_of::<jvmtiHeapReferenceInfo>(),
        ),
        (
            "jvmtiHeapReferenceInfoStackLocal",
            size_of::<jvmtiHeapReferenceInfoStackLocal>(),
        ),
        (
            "jvmtiHeapReferenceInfoJniLocal",
            size_of::<jvmtiHeapReferenceInfoJniLocal>(),
        ),
        ("jvmtiClassDefinition", size_of::<jvmtiClassDefinition>()),
        ("jvmtiMonitorUsage", size_of::<jvmtiMonitorUsage>()),
        ("jvmtiLineNumberEntry", size_of::<jvmtiLineNumberEntry>()),
        (
            "jvmtiLocalVariableEntry",
            size_of::<jvmtiLocalVariableEntry>(),
        ),
        ("jvmtiTimerInfo", size_of::<jvmtiTimerInfo>()),
        (
            "jvmtiMonitorStackDepthInfo",
            size_of::<jvmtiMonitorStackDepthInfo>(),
        ),
    ];
    for (name, rust) in sizes {
        assert_eq!(p[&format!("size.{name}")] as usize, *rust, "size of {name}");
    }
    let offsets: &[(&str, usize)] = &[
        (
            "jvmtiStackInfo.frame_buffer",
            offset_of!(jvmtiStackInfo, frame_buffer),
        ),
        (
            "jvmtiStackInfo.frame_count",
            offset_of!(jvmtiStackInfo, frame_count),
        ),
        (
            "jvmtiThreadInfo.thread_group",
            offset_of!(jvmtiThreadInfo, thread_group),
        ),
        (
            "jvmtiThreadInfo.context_class_loader",
            offset_of!(jvmtiThreadInfo, context_class_loader),
        ),
        (
            "jvmtiHeapReferenceInfoStackLocal.slot",
            offset_of!(jvmtiHeapReferenceInfoStackLocal, slot),
        ),
        (
            "jvmtiHeapReferenceInfoStackLocal.method",
            offset_of!(jvmtiHeapReferenceInfoStackLocal, method),
        ),
        (
            "jvmtiHeapCallbacks.array_primitive_value_callback",
            offset_of!(jvmtiHeapCallbacks, array_primitive_value_callback),
        ),
        (
            "jvmtiMonitorUsage.notify_waiters",
            offset_of!(jvmtiMonitorUsage, notify_waiters),
        ),
        (
            "jvmtiTimerInfo.reserved1",
            offset_of!(jvmtiTimerInfo, reserved1),
        ),
    ];
    for (name, rust) in offsets {
        assert_eq!(
            p[&format!("offset.{name}")] as usize,
            *rust,
            "offset of {name}"
        );
    }

    let enums: &[(&str, i64)] = &[
        ("JVMTI_EVENT_VM_INIT", event::VM_INIT as i64),
        ("JVMTI_EVENT_VM_DEATH", event::VM_DEATH as i64),
        ("JVMTI_EVENT_THREAD_START", event::THREAD_START as i64),
        ("JVMTI_EVENT_THREAD_END", event::THREAD_END as i64),
        (
            "JVMTI_EVENT_CLASS_FILE_LOAD_HOOK",
            event::CLASS_FILE_LOAD_HOOK as i64,
        ),
        ("JVMTI_EVENT_CLASS_LOAD", event::CLASS_LOAD as i64),
        ("JVMTI_EVENT_CLASS_PREPARE", event::CLASS_PREPARE as i64),
        ("JVMTI_EVENT_EXCEPTION_CATCH", event::EXCEPTION_CATCH as i64),
        (
            "JVMTI_EVENT_DATA_DUMP_REQUEST",
            event::DATA_DUMP_REQUEST as i64,
        ),
        ("JVMTI_EVENT_MONITOR_WAIT", event::MONITOR_WAIT as i64),
        ("JVMTI_EVENT_MONITOR_WAITED", event::MONITOR_WAITED as i64),
        (
            "JVMTI_EVENT_MONITOR_CONTENDED_ENTER",
            event::MONITOR_CONTENDED_ENTER as i64,
        ),
        (
            "JVMTI_EVENT_MONITOR_CONTENDED_ENTERED",
            event::MONITOR_CONTENDED_ENTERED as i64,
        ),
        (
            "JVMTI_EVENT_GARBAGE_COLLECTION_START",
            event::GARBAGE_COLLECTION_START as i64,
        ),
        (
            "JVMTI_EVENT_GARBAGE_COLLECTION_FINISH",
            event::GARBAGE_COLLECTION_FINISH as i64,
        ),
        ("JVMTI_EVENT_OBJECT_FREE", event::OBJECT_FREE as i64),
        ("JVMTI_EVENT_VM_OBJECT_ALLOC", event::VM_OBJECT_ALLOC as i64),
        (
            "JVMTI_EVENT_SAMPLED_OBJECT_ALLOC",
            event::SAMPLED_OBJECT_ALLOC as i64,
        ),
        (
            "JVMTI_HEAP_REFERENCE_STACK_LOCAL",
            heap_ref::STACK_LOCAL as i64,
        ),
        ("JVMTI_HEAP_REFERENCE_OTHER", heap_ref::OTHER as i64),
        ("JVMTI_PRIMITIVE_TYPE_BOOLEAN", prim::BOOLEAN as i64),
        ("JVMTI_PRIMITIVE_TYPE_DOUBLE", prim::DOUBLE as i64),
        ("JVMTI_THREAD_STATE_RUNNABLE", thread_state::RUNNABLE as i64),
        (
            "JVMTI_THREAD_STATE_SUSPENDED",
            thread_state::SUSPENDED as i64,
        ),
        (
            "JVMTI_THREAD_STATE_INTERRUPTED",
            thread_state::INTERRUPTED as i64,
        ),
        (
            "JVMTI_THREAD_STATE_BLOCKED_ON_MONITOR_ENTER",
            thread_state::BLOCKED_ON_MONITOR_ENTER as i64,
        ),
        ("JVMTI_PHASE_LIVE", JVMTI_PHASE_LIVE as i64),
        (
            "JVMTI_ERROR_ABSENT_INFORMATION",
            error::ABSENT_INFORMATION as i64,
        ),
        ("JVMTI_ERROR_WRONG_PHASE", error::WRONG_PHASE as i64),
        ("JVMTI_VERSION_11", JVMTI_VERSION_11 as i64),
    ];
    for (name, rust) in enums {
        assert_eq!(p[&format!("enum.{name}")], *rust, "value of {name}");
    }
}

#[test]
fn generated_table_is_up_to_date_with_header() {
    // Re-run the generator against the installed header: a JDK that adds or
    // moves slots shows up here as a diff, not as a wrong call at run time.
    let header = common::jdk_home().join("include/jvmti.h");
    let out = Command::new("python3")
        .arg(concat!(
            env!("HPROF_REPO"),
            "/scripts/gen_jvmti_functions.py"
        ))
        .arg(&header)
        .output();
    let Ok(out) = out else {
        eprintln!("python3 not available; skipped");
        return;
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let committed = std::fs::read_to_string(concat!(
        env!("HPROF_REPO"),
        "/crates/hprof-jvmti/src/sys/functions.rs"
    ))
    .unwrap();
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        committed,
        "regenerate crates/hprof-jvmti/src/sys/functions.rs"
    );
}
