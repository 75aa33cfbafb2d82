//! `hprof-rs ui` end to end: the tool is started, real JVMs connect with the
//! agent options it prints, and the JSON the page fetches is checked, as
//! are the security checks every request passes.

#[allow(dead_code)]
mod common;

#[allow(dead_code)]
mod ui_support;

use std::io::Write;
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};
use ui_support::{request, start_ui};

#[test]
fn requests_without_the_token_or_from_elsewhere_are_refused() {
    let ui = start_ui(&[]);
    let p = ui.port;
    let tok = ui.token.clone();
    let ok = format!("/?token={tok}");
    let (st, page) = request(p, "GET", &ok, &[], "");
    assert_eq!(st, 200);
    assert!(
        page.contains("<title>hprof-rs</title>") && page.contains("function drawFlame"),
        "page with its script inlined"
    );
    assert!(!page.contains("/*SCRIPT*/"));
    let wrong = format!("/api/sessions?token={}", "0".repeat(32));
    let foreign = format!("http://evil.example:{p}");
    let cases: Vec<(&str, String, Vec<(&str, &str)>)> = vec![
        ("no token", "/".into(), vec![]),
        ("no token (api)", "/api/sessions".into(), vec![]),
        ("wrong token", wrong, vec![]),
        (
            "token prefix",
            format!("/api/sessions?token={}", &tok[..16]),
            vec![],
        ),
        (
            "foreign Origin",
            format!("/api/sessions?token={tok}"),
            vec![("Origin", foreign.as_str())],
        ),
        (
            "foreign Origin, same port",
            format!("/api/sessions?token={tok}"),
            vec![("Origin", "http://127.0.0.2")],
        ),
        (
            "DNS rebinding Host",
            format!("/api/sessions?token={tok}"),
            vec![("Host", "evil.example")],
        ),
    ];
    for (what, target, headers) in cases {
        let (st, _) = request(p, "GET", &target, &headers, "");
        assert_eq!(st, 403, "{what}");
    }
    // A command without the token does not reach the dispatcher either.
    let (st, _) = request(p, "POST", "/api/session/1/command", &[], "exit");
    assert_eq!(st, 403);
    // The right token, Host and Origin pass.
    let origin = format!("http://127.0.0.1:{p}");
    let (st, body) = request(
        p,
        "GET",
        &format!("/api/sessions?token={tok}"),
        &[("Origin", &origin)],
        "",
    );
    assert_eq!(st, 200, "{body}");
    let (st, body) = request(
        p,
        "GET",
        &format!("/api/sessions?token={tok}"),
        &[("Host", &format!("localhost:{p}"))],
        "",
    );
    assert_eq!(st, 200, "{body}");
    // Attach is announced as not available, not faked.
    let a = ui.get_json("/api/attach", "");
    assert_eq!(a["available"], false);
    assert!(a["message"].as_str().unwrap().contains("not available yet"));
}

fn session_id(v: &serde_json::Value, i: usize) -> u64 {
    v["sessions"][i]["id"].as_u64().unwrap()
}

#[test]
fn cpu_view_of_an_agent_session_puts_the_hot_method_on_top() {
    let _only_jvm = common::exclusive();
    let ui = start_ui(&[]);
    let dir = common::scratch("ui_cpu");
    let run = common::run_with_agent_bounded(
        &dir,
        &format!("cpu=samples,interval=2,{}", ui.agent_opts),
        "CpuSplit",
        &["3"],
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
    let s = &v["sessions"][0];
    assert_eq!(s["kind"], "listen");
    assert!(
        s["format"]
            .as_str()
            .unwrap()
            .starts_with("JAVA PROFILE 1.0."),
        "{s}"
    );
    let id = session_id(&v, 0);
    let cpu = ui.get_json(&format!("/api/session/{id}/cpu"), "top=20");
    assert_eq!(cpu["available"], true);
    assert_eq!(
        cpu["rows"][0]["method"], "CpuSplit.work60",
        "{}",
        cpu["rows"]
    );
    let pct = cpu["rows"][0]["selfPct"].as_f64().unwrap();
    assert!(
        pct > 40.0 && pct <= 100.0,
        "work60 holds about 60% of the work: {pct}"
    );
    // The flame graph's root holds every kept sample.
    assert_eq!(cpu["flame"]["v"], cpu["kept"]);
    // The thesis filter: excluding the class leaves none of its methods.
    let f = ui.get_json(&format!("/api/session/{id}/cpu"), "filter=!CpuSplit.");
    assert!(f["rows"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| !r["method"].as_str().unwrap().starts_with("CpuSplit.")));
    let threads = ui.get_json(&format!("/api/session/{id}/threads"), "");
    // Threads started after VM init have START and END THREAD records.
    assert!(
        threads
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "DestroyJavaVM"
                && t["endMs"].as_f64().unwrap() >= t["startMs"].as_f64().unwrap()),
        "{threads}"
    );
    let console = ui.get_json(&format!("/api/session/{id}/console"), "since=0");
    let text = console["lines"].to_string();
    assert!(
        text.contains("CPU SAMPLES") && text.contains("stream ended"),
        "{text}"
    );
}

#[test]
fn memory_view_of_a_file_given_on_the_command_line_has_exact_counts() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("ui_sites");
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
    let file = dir.join("sites.hprof");
    let ui = start_ui(&[file.to_str().unwrap()]);
    let v = ui.wait_for("the file to be read", Duration::from_secs(30), |v| {
        v["sessions"][0]["state"] == "ended"
    });
    assert_eq!(v["sessions"][0]["kind"], "file");
    let id = session_id(&v, 0);
    let kept = ui.get_json(
        &format!("/api/session/{id}/sites"),
        "class=AllocSites%24Kept",
    );
    assert_eq!(kept["estimated"], false);
    assert_eq!(kept["matched"], 1, "{kept}");
    let row = &kept["rows"][0];
    assert_eq!(row["objects"], 1000);
    assert_eq!(row["liveObjects"], 1000);
    assert!(
        row["site"]
            .as_str()
            .unwrap()
            .starts_with("AllocSites.makeKept("),
        "{row}"
    );
    let items = ui.get_json(
        &format!("/api/session/{id}/sites"),
        "class=AllocSites%24Item",
    );
    let rows = items["rows"].as_array().unwrap();
    let rows = rows.iter().filter(|r| r["class"] == "AllocSites$Item");
    let (objs, live): (u64, u64) = rows.fold((0, 0), |a, r| {
        (
            a.0 + r["objects"].as_u64().unwrap(),
            a.1 + r["liveObjects"].as_u64().unwrap(),
        )
    });
    assert_eq!((objs, live), (20_000, 400), "{items}");
    // Paging: two rows at a time, by allocated bytes; the 4 MiB arrays lead.
    let page = ui.get_json(
        &format!("/api/session/{id}/sites"),
        "sort=bytes&offset=0&limit=2",
    );
    assert_eq!(page["rows"].as_array().unwrap().len(), 2);
    assert_eq!(page["rows"][0]["class"], "byte[]");
    assert_eq!(page["rows"][0]["objects"], 3);
}

#[test]
fn commands_from_the_api_reach_the_agent_and_its_answer_shows() {
    let _only_jvm = common::exclusive();
    let ui = start_ui(&[]);
    let dir = common::scratch("ui_cmd");
    let marker = dir.join("never");
    let agent = format!(
        "-agentpath:{}=cpu=samples,heap=sites,{}",
        common::agent_path().display(),
        ui.agent_opts
    );
    let mut cmd = Command::new(common::java());
    cmd.current_dir(&dir)
        .arg(&agent)
        .arg("-cp")
        .arg(common::fixture_classes())
        .arg("WaitForSignal")
        .arg(marker.to_str().unwrap())
        .arg("60");
    // The JVM is ended by the EXIT command below; the bound kills it if not.
    let jvm = std::thread::spawn(move || common::run_command_bounded(cmd, Duration::from_secs(90)));
    let v = ui.wait_for("the agent to connect", Duration::from_secs(60), |v| {
        v["sessions"][0]["commands"] == true
            && v["sessions"][0]["records"].as_u64().unwrap_or(0) >= 1
    });
    let id = session_id(&v, 0);
    let (st, r) = ui.command(id, "heap-summary");
    assert_eq!(st, 200, "{r}");
    let (st, r) = ui.command(id, "bogus");
    assert_eq!(st, 400, "a malformed command is refused: {r}");
    let start = Instant::now();
    loop {
        let c = ui.get_json(&format!("/api/session/{id}/console"), "since=0");
        if c["lines"].to_string().contains("HEAP SUMMARY  live") {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no HEAP SUMMARY answer: {c}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    ui.command(id, "cpu");
    let start = Instant::now();
    loop {
        let cpu = ui.get_json(&format!("/api/session/{id}/cpu"), "");
        if cpu["available"] == true {
            assert_eq!(cpu["rows"][0]["method"], "WaitForSignal.busy", "{cpu}");
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no CPU SAMPLES answer"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let (st, r) = ui.command(id, "exit");
    assert_eq!(st, 200, "{r}");
    let run = jvm.join().unwrap();
    assert!(!run.timed_out, "EXIT reached the agent and ended the JVM");
    ui.wait_for("the session to end", Duration::from_secs(30), |v| {
        v["sessions"][0]["state"] == "ended"
    });
    let (st, _) = ui.command(id, "gc");
    assert_eq!(st, 409, "an ended session takes no commands");
}

#[test]
fn a_malformed_agent_stream_ends_its_session_not_the_server() {
    let ui = start_ui(&[]);
    let addr = ui
        .agent_opts
        .trim_start_matches("net=")
        .trim_end_matches(",format=b")
        .to_string();
    {
        let mut s = TcpStream::connect(&addr).unwrap();
        // A valid header, then a record whose length runs past the end.
        let mut b = b"JAVA PROFILE 1.0.2\0".to_vec();
        b.extend_from_slice(&8u32.to_be_bytes());
        b.extend_from_slice(&[0; 8]);
        b.extend_from_slice(&[0x01, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xf0, 1, 2]);
        s.write_all(&b).unwrap();
    }
    let v = ui.wait_for("the session to fail", Duration::from_secs(30), |v| {
        v["sessions"][0]["state"] == "error"
    });
    assert!(v["sessions"][0]["error"].as_str().unwrap().len() > 5, "{v}");
    // Garbage with no header at all.
    TcpStream::connect(&addr)
        .unwrap()
        .write_all(b"GET / HTTP/1.1\r\n\r\n")
        .unwrap();
    let v = ui.wait_for("the second session to fail", Duration::from_secs(30), |v| {
        v["sessions"][1]["state"] == "error"
    });
    assert_eq!(v["sessions"].as_array().unwrap().len(), 2);
    // The server still answers.
    let (st, _) = request(ui.port, "GET", &format!("/?token={}", ui.token), &[], "");
    assert_eq!(st, 200);
}
