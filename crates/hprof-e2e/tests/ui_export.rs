//! `hprof-rs export FILE --pprof OUT`: the profile is read back by
//! `go tool pprof` (skipped with a message when Go is absent) and its
//! counts compared with the HPROF file's own records.

use crate::common;
use crate::ui_support;

use hprof_core::reader::{open_path, RecordBody};
use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

fn export(input: &Path) -> std::path::PathBuf {
    let out = input.with_extension("pb.gz");
    let mut cmd = Command::new(env!("HPROF_RS_TOOL"));
    cmd.arg("export").arg(input).arg("--pprof").arg(&out);
    let run = common::run_command_bounded(cmd, Duration::from_secs(60));
    assert!(
        !run.timed_out && run.output.status.success(),
        "export failed: {}",
        common::stderr(&run.output)
    );
    out
}

/// `go tool pprof -top` flat values by function name, or None without Go.
fn pprof_top(profile: &Path, sample_index: &str, extra: &[&str]) -> Option<HashMap<String, u64>> {
    if Command::new("go").arg("version").output().is_err() {
        eprintln!("SKIPPED: `go` is not installed (Debian: golang-go); the pprof profile was not checked by go tool pprof");
        return None;
    }
    let mut cmd = Command::new("go");
    cmd.args([
        "tool",
        "pprof",
        "-top",
        "-nodecount=1000",
        "-unit=B",
        "-nodefraction=0",
    ])
    .arg(format!("-sample_index={sample_index}"))
    .args(extra)
    .arg(profile)
    .env("HOME", profile.parent().unwrap());
    let run = common::run_command_bounded(cmd, Duration::from_secs(120));
    let out = common::stdout(&run.output);
    assert!(
        run.output.status.success(),
        "go tool pprof failed: {}{out}",
        common::stderr(&run.output)
    );
    // "      flat  flat%   sum%        cum   cum%" rows: flat, %, %, cum, %, name
    let mut m = HashMap::new();
    for l in out.lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        if w.len() == 6 && w[1].ends_with('%') {
            // -unit=B prints bytes as `208000B`
            if let Ok(flat) = w[0].trim_end_matches('B').parse::<u64>() {
                m.insert(w[5].to_string(), flat);
            }
        }
    }
    assert!(
        !m.is_empty() || out.contains("accounting for 0, 0%"),
        "no rows in: {out}"
    );
    Some(m)
}

/// Top-frame method -> samples of the last CPU SAMPLES record, straight
/// from the reader.
fn cpu_by_top_method(file: &Path) -> HashMap<String, u64> {
    let mut r = open_path(file).unwrap();
    let (mut strings, mut classes, mut frames, mut traces) = (
        HashMap::new(),
        HashMap::new(),
        HashMap::new(),
        HashMap::new(),
    );
    let mut last = None;
    while let Some(rec) = r.next_record().unwrap() {
        match rec.body {
            RecordBody::Utf8 { id, text } => {
                strings.insert(id, text);
            }
            RecordBody::LoadClass(c) => {
                classes.insert(c.class_serial, c.name_id);
            }
            RecordBody::Frame(f) => {
                frames.insert(f.id, f);
            }
            RecordBody::Trace(t) => {
                traces.insert(t.serial, t);
            }
            RecordBody::CpuSamples(c) => last = Some(c),
            _ => {}
        }
    }
    let mut m = HashMap::new();
    for e in last.expect("a CPU SAMPLES record").entries {
        let Some(&top) = traces[&e.trace_serial].frame_ids.first() else {
            continue;
        };
        let f = frames[&top];
        let name = format!(
            "{}.{}",
            strings[&classes[&f.class_serial]], strings[&f.method_name_id]
        );
        *m.entry(name).or_insert(0) += u64::from(e.count);
    }
    m
}

#[test]
fn pprof_export_has_the_same_cpu_counts_as_the_hprof_file() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("ui_export_cpu");
    let run = common::run_with_agent_bounded(
        &dir,
        "cpu=samples,interval=2,format=b,file=cpu.hprof",
        "CpuSplit",
        &["2"],
        Duration::from_secs(120),
    );
    assert!(
        !run.timed_out && run.output.status.success(),
        "{}",
        common::stderr(&run.output)
    );
    let file = dir.join("cpu.hprof");
    let expected = cpu_by_top_method(&file);
    assert!(expected["CpuSplit.work60"] > 100, "{expected:?}");
    let out = export(&file);
    let Some(top) = pprof_top(&out, "samples", &[]) else {
        return;
    };
    for m in ["CpuSplit.work60", "CpuSplit.work30", "CpuSplit.work10"] {
        assert_eq!(
            top.get(m),
            expected.get(m),
            "{m}: pprof {top:?} vs file {expected:?}"
        );
    }
}

#[test]
fn pprof_export_has_the_exact_allocation_counts_of_the_sites() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("ui_export_sites");
    let run = common::run_with_agent_bounded(
        &dir,
        "heap=sites,cutoff=0,depth=4,format=b,file=sites.hprof",
        "AllocSites",
        &[],
        Duration::from_secs(120),
    );
    assert!(
        !run.timed_out && run.output.status.success(),
        "{}",
        common::stderr(&run.output)
    );
    let out = export(&dir.join("sites.hprof"));
    // Each site carries its class as the label `class`; the allocating
    // method is the leaf. Counts as documented by the fixture.
    let site = |index: &str, class: &str| {
        let focus = format!("-tagfocus=class=^{}$", class.replace(['$', '[', ']'], "."));
        pprof_top(&out, index, &[&focus]).map(|m| m.get(class_method(class)).copied())
    };
    let Some(kept) = site("alloc_objects", "AllocSites$Kept") else {
        return;
    };
    assert_eq!(kept, Some(1000));
    assert_eq!(
        site("inuse_objects", "AllocSites$Kept").unwrap(),
        Some(1000)
    );
    assert_eq!(
        site("alloc_objects", "AllocSites$Dropped").unwrap(),
        Some(2000)
    );
    assert_eq!(
        site("inuse_objects", "AllocSites$Dropped").unwrap(),
        None,
        "nothing live"
    );
    assert_eq!(site("alloc_objects", "int[]").unwrap(), Some(500));
    assert_eq!(site("inuse_objects", "int[]").unwrap(), Some(250));
    assert_eq!(
        site("alloc_space", "int[]").unwrap(),
        Some(500 * (16 + 400))
    );
    assert_eq!(
        site("alloc_objects", "AllocSites$Item").unwrap(),
        Some(20_000)
    );
}

fn class_method(class: &str) -> &'static str {
    match class {
        "AllocSites$Kept" => "AllocSites.makeKept",
        "AllocSites$Dropped" => "AllocSites.makeDropped",
        "int[]" => "AllocSites.makeInts",
        "AllocSites$Item" => "AllocSites.work",
        _ => unreachable!(),
    }
}

/// The page's "Export pprof" button (`GET /api/session/ID/pprof`) on a
/// live agent session: go tool pprof reads the same self samples per
/// method as the CPU view shows.
#[test]
fn the_export_button_gives_go_tool_pprof_the_cpu_view_counts() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("ui_export_button");
    let ui = ui_support::start_ui(&[]);
    let run = common::run_with_agent_bounded(
        &dir,
        &format!("cpu=samples,interval=2,{}", ui.agent_opts),
        "CpuSplit",
        &["2"],
        Duration::from_secs(120),
    );
    assert!(
        !run.timed_out && run.output.status.success(),
        "{}",
        common::stderr(&run.output)
    );
    let v = ui.wait_for("the session to end", Duration::from_secs(30), |v| {
        v["sessions"][0]["state"] == "ended"
    });
    let id = v["sessions"][0]["id"].as_u64().unwrap();
    let a = ui.get(&format!("/api/session/{id}/pprof"), "");
    assert_eq!(a.status, 200);
    assert_eq!(
        a.header("content-disposition"),
        Some(format!("attachment; filename=\"session-{id}.pb.gz\"").as_str())
    );
    let out = dir.join("button.pb.gz");
    std::fs::write(&out, &a.body).unwrap();
    let cpu = ui.get_json(&format!("/api/session/{id}/cpu"), "flame=0&limit=1000");
    let Some(top) = pprof_top(&out, "samples", &[]) else {
        return;
    };
    for r in cpu["rows"].as_array().unwrap() {
        let m = r["method"].as_str().unwrap();
        if m.starts_with("CpuSplit.work") {
            assert_eq!(
                top.get(m).copied(),
                r["self"].as_u64(),
                "{m}: pprof {top:?}"
            );
        }
    }
}
