//! The JSON of each view, on the small sessions of
//! `hprof_analysis::session::testing`: the keys and values `app.js` reads.

use super::*;
use crate::reader::RecordBody;
use hprof_analysis::session::cpu::CpuQuery;
use hprof_analysis::session::memory::Which;
use hprof_analysis::session::testing::{
    cpu, from_text, report, sample_session, site, utf8, TEXT_REPORT,
};
use hprof_analysis::session::tree::Open;
use hprof_analysis::session::Kind;

fn q(filter: &str, threads: &str, gran: &str) -> CpuQuery {
    CpuQuery::from_params(filter, threads, gran)
}

#[test]
fn cpu_json_has_the_table_the_flame_graph_and_the_lost_samples() {
    let mut s = sample_session();
    let none = cpu::cpu(&s.cpu_view(&q("", "", ""), 0, 10, true));
    assert_eq!(
        none,
        json!({"available": false, "total": 0, "kept": 0, "rows": [], "methods": 0,
               "threads": [], "flame": {"n": "all", "v": 0, "c": []},
               "cpuTime": 0, "ended": false})
    );
    cpu(&mut s, &[(75, 1), (25, 2)]);
    utf8(
        &mut s,
        0xA000_0099,
        "CPU SAMPLES LOST 4 of 104 (3.85%): deoptimizing 1, unknown frame in Java 3",
    );
    let v = cpu::cpu(&s.cpu_view(&q("", "", ""), 1, 1, true));
    assert_eq!(v["available"], true);
    assert_eq!(
        (v["total"].as_u64(), v["kept"].as_u64()),
        (Some(100), Some(100))
    );
    assert_eq!(
        (v["methods"].as_u64(), v["offset"].as_u64()),
        (Some(3), Some(1))
    );
    assert_eq!(
        v["rows"],
        json!([{"rank": 2, "method": "java.io.X.read", "self": 25, "selfPct": 25.0,
                "total": 25, "totalPct": 25.0, "src": null}])
    );
    assert_eq!(
        v["threads"],
        json!([{"serial": 7, "name": "thread 7", "samples": 75},
               {"serial": 8, "name": "thread 8", "samples": 25}])
    );
    assert_eq!(
        v["lost"],
        json!({"lost": 4, "taken": 104, "pct": 4.0 * 100.0 / 104.0,
               "reasons": [["deoptimizing", 1], ["unknown frame in Java", 3]]})
    );
    assert_eq!(
        v["flame"],
        json!({"n": "all", "v": 100, "c": [{"n": "Main.main", "v": 100, "c": [
            {"n": "Main.hot", "v": 75, "c": []}, {"n": "java.io.X.read", "v": 25, "c": []}]}]})
    );
    assert_eq!(v["notes"], json!([]));
    let top = cpu::cpu(&s.cpu_view(&q("", "", ""), 0, 1, false));
    assert_eq!(top["rows"][0]["src"], json!(["Main", "Main.java", 9]));
    assert_eq!(top["flame"], Value::Null);
    let open = [Open {
        path: vec!["Main.main".into()],
        limit: 1,
    }];
    let t = cpu::cpu_tree(s.cpu_tree(&q("", "", ""), &open, 10).as_ref());
    assert_eq!(
        t,
        json!({"available": true, "kept": 100, "rows": [
            {"d": 0, "n": "Main.main", "t": [100], "s": [0], "k": 2, "o": true},
            {"d": 1, "n": "Main.hot", "t": [75], "s": [75], "k": 0, "o": false},
            {"d": 1, "more": 1, "shown": 1}]})
    );
    assert_eq!(cpu::cpu_tree(None), json!({"available": false, "rows": []}));
}

#[test]
fn memory_json_has_the_sites_the_marks_and_the_tree() {
    let mut s = sample_session();
    let none = memory::sites(&s.sites_view("", "bytes", 0, 10, false));
    assert_eq!(
        none,
        json!({"available": false, "rows": [], "matched": 0,
               "marks": {"begin": null, "end": null, "pending": null}})
    );
    report(&mut s, 0, vec![site(1, 1, 1000, 100), site(2, 2, 50, 5)]);
    s.mark(Which::Begin, false).unwrap();
    report(&mut s, 0, vec![site(1, 1, 1300, 130), site(2, 2, 50, 5)]);
    s.mark(Which::End, true).unwrap();
    let v = memory::sites(&s.sites_view("java", "bytes", 0, 10, false));
    assert_eq!(
        v,
        json!({
            "available": true, "estimated": false, "between": null,
            "totalLiveBytes": 1, "totalLiveObjects": 2, "totalBytes": 3, "totalObjects": 4,
            "sites": 2, "matched": 1,
            "sum": {"bytes": 50, "objects": 5, "liveBytes": 25, "liveObjects": 2},
            "offset": 0,
            "rows": [{"rank": 2, "class": "java.io.X", "trace": 2,
                      "site": "java.io.X.read(Native method)", "src": null,
                      "stack": ["java.io.X.read(Native method)", "Main.main(Main.java:5)"],
                      "bytes": 50, "objects": 5, "liveBytes": 25, "liveObjects": 2}],
            "marks": {"begin": {"report": 1, "atMs": 0.0}, "end": null, "pending": "end"},
        })
    );
    let v = memory::sites(&s.sites_view("", "bytes", 0, 1, true));
    assert_eq!(v["between"], json!({"begin": 1, "end": 0}));
    assert_eq!(v["rows"][0]["bytes"], 300);
    assert_eq!(v["rows"][0]["src"], json!(["Main", "Main.java", 9]));
    let t = memory::alloc_tree(s.alloc_tree_view("", "", "bytes", false, &[], 10).as_ref());
    assert_eq!(
        t,
        json!({"available": true, "estimated": false, "total": [1350, 135, 675, 67], "rows": [
            {"d": 0, "n": "Main.main", "t": [1350, 135, 675, 67], "s": [0, 0, 0, 0], "k": 2, "o": false}]})
    );
    assert_eq!(
        memory::alloc_tree(None),
        json!({"available": false, "rows": []})
    );
}

#[test]
fn monitors_threads_and_console_json_from_a_text_report() {
    let (mut s, res) = from_text(TEXT_REPORT);
    res.unwrap();
    let m = monitors::monitors(&s.monitors_view());
    assert_eq!(m["note"], Value::Null);
    assert_eq!(
        (m["text"].as_bool(), m["timeSections"].as_u64()),
        (Some(true), Some(1))
    );
    assert_eq!(
        m["time"]["rows"][0],
        json!({"rank": 1, "class": "Contention$HotLock", "pct": 75.0, "timeMs": 30.0,
               "count": 12, "trace": 300001, "thread": "worker, \"one\"",
               "stack": ["Contention.blockOnHot(Contention.java:47)",
                         "Contention.lambda$main$0(Contention.java:80)"]})
    );
    assert_eq!(m["time"]["totalMs"], 40);
    assert_eq!(
        m["waits"],
        json!([{"class": "Contention$WaitBox", "waits": 1, "timed": 1, "waited": 1,
                "waitedMs": 301, "maxMs": 301}])
    );
    assert_eq!(
        m["recent"][0],
        json!({"kind": "WAITED", "class": "Contention$WaitBox", "thread": "worker, \"one\"", "ms": 301})
    );
    assert_eq!(
        (m["dumps"].as_u64(), m["waitEvents"].as_u64()),
        (Some(1), Some(2))
    );
    assert_eq!(
        m["dump"]["monitors"],
        json!([{"class": "Contention$HotLock", "owner": "thread 200001", "entryCount": 1,
                "waitingToEnter": ["worker, \"one\""], "waitingToBeNotified": []}])
    );
    assert_eq!(m["dump"]["threads"][0]["status"], "MW");
    assert_eq!(m["dump"]["threads"][0]["name"], "worker, \"one\"");
    let t = threads::threads(&s.threads_view());
    assert_eq!(t["perThreadSamples"], true);
    assert_eq!(
        t["threads"][0],
        json!({"serial": 200002, "objectId": 0x5000_0150u64, "name": "worker, \"one\"",
               "group": "main", "startMs": null, "endMs": null, "ended": true,
               "samples": 9, "top": [{"method": "Contention.blockOnHot", "samples": 9}]})
    );
    let c = threads::console(&s.console_view(0));
    assert_eq!(c["lines"][0], json!([1, s.console_view(0).lines[0].1]));
    assert_eq!(c["last"], s.console_last());
    let sum = summary(&s);
    assert_eq!(sum["format"], "text (format=a)");
    assert_eq!(sum["consoleLast"], s.console_last());
    assert_eq!(
        sum["marks"],
        json!({"begin": null, "end": null, "pending": null})
    );
    s.fail("bad".into());
    let sum = summary(&s);
    assert_eq!(
        (sum["state"].as_str(), sum["error"].as_str()),
        (Some("error"), Some("bad"))
    );
    assert_eq!(sum["kind"], "listen");
    assert_eq!(sum["process"], Value::Null);
}

#[test]
fn a_binary_session_has_a_monitors_note_and_no_heap_dump() {
    let mut s = hprof_analysis::session::Session::new(1, Kind::File, "x".into());
    let m = monitors::monitors(&s.monitors_view());
    assert!(m["note"].as_str().unwrap().contains("format=a"));
    assert_eq!(m["time"], Value::Null);
    assert_eq!(m["dump"], Value::Null);
    let h = heap::heap(&s.heap_view(Some(2), "", "bytes", 0, 10));
    assert_eq!(
        h,
        json!({"available": false, "reading": false, "dumps": 0, "kept": [], "gone": false})
    );
    s.apply(0, "HEAP DUMP", RecordBody::HeapDumpStart { segment: false })
        .unwrap();
    let d = s.heap.take_building();
    s.heap.put_back(d, false);
    let h = heap::heap(&s.heap_view(None, "", "bytes", 0, 10));
    assert_eq!(
        h,
        json!({"available": true, "reading": false, "dumps": 1,
               "kept": [{"number": 1, "atMs": 0.0, "objects": 0}],
               "number": 1, "atMs": 0.0, "roots": 0, "classDumps": 0, "objects": 0,
               "instances": 0, "bytes": 0, "classes": 0, "matched": 0, "offset": 0, "rows": []})
    );
}
