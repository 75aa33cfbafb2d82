//! `hprof-rs ui` end to end, through its HTTP API: the tool is started,
//! real JVMs connect with the agent options it prints or are started from
//! its Launch API or attached to from its Attach API, files are opened and
//! uploaded, and the JSON the page
//! fetches is checked against what the fixtures make exactly knowable. The
//! security checks of every endpoint are checked too.

use crate::common;

use crate::ui_support;

use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};
use ui_support::{check_console, request, request_bytes, start_ui, start_ui_with};

const MINUTE: Duration = Duration::from_secs(60);

/// What a refused request looks like: a label, its target, its headers.
type Case<'a> = (&'a str, String, Vec<(&'a str, &'a str)>);

fn session_id(v: &Value, i: usize) -> u64 {
    v["sessions"][i]["id"].as_u64().unwrap()
}

fn agent_arg() -> String {
    format!("--agent={}", common::agent_path().display())
}

/// Every endpoint, old and new, refuses a request without the token, with
/// a wrong one, from a foreign Origin or naming another Host, before it
/// does anything.
#[test]
fn requests_without_the_token_or_from_elsewhere_are_refused() {
    let ui = start_ui(&[]);
    let p = ui.port;
    let tok = ui.token.clone();
    // The page, its script and its style sheet, each on its own route
    // (issue 28): nothing inline, so the policy allows no inline code.
    let page = request_bytes(p, "GET", &format!("/?token={tok}"), &[], b"");
    assert_eq!(page.status, 200);
    let csp = page.header("content-security-policy").unwrap_or("");
    assert!(
        csp.contains("script-src 'self'")
            && csp.contains("style-src 'self'")
            && !csp.contains("unsafe-inline"),
        "{csp}"
    );
    let html = page.text();
    assert!(html.contains("<title>hprof-rs</title>"), "{html}");
    assert!(
        html.contains(&format!("<script src=\"app.js?token={tok}\"></script>"))
            && html.contains(&format!(
                "<link rel=\"stylesheet\" href=\"style.css?token={tok}\">"
            )),
        "{html}"
    );
    assert!(
        !html.contains("<style") && !html.contains("<script>") && !html.contains("style=\""),
        "inline code or style in the page"
    );
    let script = request_bytes(p, "GET", &format!("/app.js?token={tok}"), &[], b"");
    assert_eq!(script.status, 200);
    assert!(script
        .header("content-type")
        .unwrap_or("")
        .starts_with("text/javascript"));
    assert!(script.text().contains("function drawFlame") && !script.text().contains("style=\""));
    let style = request_bytes(p, "GET", &format!("/style.css?token={tok}"), &[], b"");
    assert_eq!(style.status, 200);
    assert!(style
        .header("content-type")
        .unwrap_or("")
        .starts_with("text/css"));
    let endpoints: [(&str, &str); 26] = [
        ("GET", "/"),
        ("GET", "/app.js"),
        ("GET", "/style.css"),
        ("GET", "/api/sessions"),
        ("GET", "/api/attach"),
        ("POST", "/api/attach"),
        ("GET", "/api/events"),
        ("GET", "/api/launch"),
        ("POST", "/api/launch"),
        ("POST", "/api/upload"),
        ("GET", "/api/source"),
        ("GET", "/api/session/1/cpu"),
        ("GET", "/api/session/1/heap"),
        ("GET", "/api/session/1/monitors"),
        ("GET", "/api/session/1/download"),
        ("GET", "/api/session/1/pprof"),
        ("GET", "/api/session/1/flame.svg"),
        ("POST", "/api/session/1/tree"),
        ("POST", "/api/session/1/alloctree"),
        ("POST", "/api/session/1/mark"),
        ("POST", "/api/session/1/stop"),
        ("POST", "/api/session/1/close"),
        ("POST", "/api/session/1/command"),
        ("GET", "/api/session/1/sites"),
        ("GET", "/api/session/1/heap/classes"),
        ("GET", "/api/session/1/heap/object?id=0x1"),
    ];
    let foreign = format!("http://evil.example:{p}");
    let body = r#"{"command": "java -version", "options": ""}"#;
    for (method, path) in endpoints {
        let sep = if path.contains('?') { '&' } else { '?' };
        let cases: Vec<Case> = vec![
            ("no token", path.to_string(), vec![]),
            (
                "wrong token",
                format!("{path}{sep}token={}", "0".repeat(32)),
                vec![],
            ),
            (
                "token prefix",
                format!("{path}{sep}token={}", &tok[..16]),
                vec![],
            ),
            (
                "foreign Origin",
                format!("{path}{sep}token={tok}"),
                vec![("Origin", foreign.as_str())],
            ),
            (
                "null Origin",
                format!("{path}{sep}token={tok}"),
                vec![("Origin", "null")],
            ),
            (
                "DNS rebinding Host",
                format!("{path}{sep}token={tok}"),
                vec![("Host", "evil.example")],
            ),
        ];
        for (what, target, headers) in cases {
            let (st, _) = request(p, method, &target, &headers, body);
            assert_eq!(st, 403, "{method} {path}: {what}");
        }
    }
    // Nothing was started, uploaded or created by the refused requests.
    assert_eq!(
        ui.get_json("/api/sessions", "")["sessions"],
        Value::Array(vec![])
    );
    // The right token, Host and Origin pass.
    let origin = ui.origin();
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
    // Attach is available exactly when Launch is (the same agent library),
    // with the list of JVMs to choose from.
    let a = ui.get_json("/api/attach", "");
    assert_eq!(a["available"], ui.get_json("/api/launch", "")["available"]);
    assert!(a["jvms"].is_array(), "{a}");
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
    let cpu = ui.get_json(&format!("/api/session/{id}/cpu"), "limit=20");
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
        threads["threads"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "DestroyJavaVM"
                && t["endMs"].as_f64().unwrap() >= t["startMs"].as_f64().unwrap()),
        "{threads}"
    );
    let text = ui.console(id);
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
    // Marks on a file take its latest report: an end before a begin is
    // refused; with both on the same report nothing was allocated between.
    let mark = |m: &str| {
        ui.post(&format!("/api/session/{id}/mark"), "", m.as_bytes())
            .status
    };
    assert_eq!(mark("end"), 409);
    assert_eq!(mark("bogus"), 400);
    assert_eq!(mark("begin"), 200);
    assert_eq!(mark("end"), 200);
    let between = ui.get_json(&format!("/api/session/{id}/sites"), "between=1");
    assert_eq!(between["matched"], 0, "{between}");
    assert_eq!(mark("clear"), 200);
    // The tree by allocation stack: the Kept leaf under makeKept holds the
    // same exact counts.
    let open =
        serde_json::json!({"class": "AllocSites$Kept", "sort": "objects", "open": [], "limit": 50});
    let t = ui
        .post(
            &format!("/api/session/{id}/alloctree"),
            "",
            open.to_string().as_bytes(),
        )
        .json();
    assert_eq!(t["total"][1], 1000, "{t}");
    assert_eq!(t["total"][3], 1000, "{t}");
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
    let v = ui.wait_for("the agent to connect", MINUTE, |v| {
        v["sessions"][0]["commands"] == true
            && v["sessions"][0]["records"].as_u64().unwrap_or(0) >= 1
    });
    let id = session_id(&v, 0);
    let (st, r) = ui.command(id, "heap-summary");
    assert_eq!(st, 200, "{r}");
    let (st, r) = ui.command(id, "bogus");
    assert_eq!(st, 400, "a malformed command is refused: {r}");
    ui.wait_console(id, "HEAP SUMMARY  live", Duration::from_secs(30));
    // The commands above can be answered before the program's main method
    // has run at all (the agent connects at VM start, and a loaded machine
    // starts the JVM slowly): ask again until the answer covers enough
    // samples that the spinning method must lead. Each later CPU SAMPLES
    // section replaces the earlier one in the session.
    let start = Instant::now();
    let mut asked = None::<Instant>;
    loop {
        if asked.is_none_or(|t| t.elapsed() > Duration::from_millis(500)) {
            let (st, r) = ui.command(id, "cpu 0");
            assert_eq!(st, 200, "{r}");
            asked = Some(Instant::now());
        }
        let cpu = ui.get_json(&format!("/api/session/{id}/cpu"), "");
        if cpu["available"] == true && cpu["total"].as_u64().unwrap_or(0) >= 100 {
            assert_eq!(cpu["rows"][0]["method"], "WaitForSignal.busy", "{cpu}");
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(45),
            "no CPU SAMPLES answer with 100 samples: {cpu}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // A live session cannot be closed.
    assert_eq!(
        ui.post(&format!("/api/session/{id}/close"), "", b"").status,
        409
    );
    let (st, r) = ui.command(id, "exit");
    assert_eq!(st, 200, "{r}");
    let run = jvm.join().unwrap();
    assert!(!run.timed_out, "EXIT reached the agent and ended the JVM");
    ui.wait_for("the session to end", Duration::from_secs(30), |v| {
        v["sessions"][0]["state"] == "ended"
    });
    let (st, _) = ui.command(id, "gc");
    assert_eq!(st, 409, "an ended session takes no commands");
    // The whole stream was recorded: it reads back as the same records.
    let d = ui.get(&format!("/api/session/{id}/download"), "");
    assert_eq!(d.status, 200);
    assert_eq!(
        d.body.len() as u64,
        ui.session(id)["recorded"]["bytes"].as_u64().unwrap()
    );
    let parsed =
        hprof_core::reader::collect(hprof_core::reader::HprofReader::new(&d.body[..]).unwrap())
            .unwrap();
    assert_eq!(
        parsed.records.len() as u64,
        ui.session(id)["records"].as_u64().unwrap()
    );
    // Ended sessions can be closed.
    assert_eq!(
        ui.post(&format!("/api/session/{id}/close"), "", b"").status,
        200
    );
    assert_eq!(
        ui.get_json("/api/sessions", "")["sessions"],
        Value::Array(vec![])
    );
}

#[test]
fn a_malformed_agent_stream_ends_its_session_not_the_server() {
    let ui = start_ui(&[]);
    // A valid header, then a record whose length runs past the end.
    let mut sent = b"JAVA PROFILE 1.0.2\0".to_vec();
    sent.extend_from_slice(&8u32.to_be_bytes());
    sent.extend_from_slice(&[0; 8]);
    sent.extend_from_slice(&[0x01, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xf0, 1, 2]);
    ui.agent_connection().write_all(&sent).unwrap();
    let v = ui.wait_for("the session to fail", Duration::from_secs(30), |v| {
        v["sessions"][0]["state"] == "error"
    });
    assert!(
        v["sessions"][0]["error"]
            .as_str()
            .unwrap()
            .contains("truncated"),
        "{v}"
    );
    // What was received is downloadable exactly as it came, error or not.
    let id = session_id(&v, 0);
    let d = ui.get(&format!("/api/session/{id}/download"), "");
    assert_eq!(d.status, 200);
    assert_eq!(d.body, sent);
    assert_eq!(
        d.header("content-disposition"),
        Some(format!("attachment; filename=\"session-{id}.hprof\"").as_str())
    );
    // Garbage with no header at all.
    ui.agent_connection()
        .write_all(b"GET / HTTP/1.1\r\n\r\n")
        .unwrap();
    let v = ui.wait_for("the second session to fail", Duration::from_secs(30), |v| {
        v["sessions"][1]["state"] == "error"
    });
    assert_eq!(v["sessions"].as_array().unwrap().len(), 2);
    // A text stream whose monitor section is broken names its line.
    let mut s = ui.agent_connection();
    s.write_all(b"JAVA PROFILE 1.0.1, created now\nMONITOR TIME BEGIN (total = 4 ms) x\nrank   self\n   1 x\n")
        .unwrap();
    drop(s);
    let v = ui.wait_for("the text session to fail", Duration::from_secs(30), |v| {
        v["sessions"][2]["state"] == "error"
    });
    assert!(
        v["sessions"][2]["error"]
            .as_str()
            .unwrap()
            .starts_with("text stream line 4: malformed MONITOR TIME row"),
        "{v}"
    );
    // The server still answers.
    let (st, _) = request(ui.port, "GET", &format!("/?token={}", ui.token), &[], "");
    assert_eq!(st, 200);
}

/// Uploads: gzip read through, the Heap view's counts exact, the stream
/// downloaded byte for byte; garbage, oversized and cut uploads fail their
/// own session (or none), never the server.
#[test]
fn uploads_are_bounded_read_strictly_and_downloaded_exactly() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("ui_upload");
    let run = common::run_with_agent_bounded(
        &dir,
        "heap=dump,format=b,file=dump.hprof",
        "HoldObjects",
        &[],
        Duration::from_secs(120),
    );
    assert!(
        !run.timed_out && run.output.status.success(),
        "{}",
        common::stderr(&run.output)
    );
    let raw = std::fs::read(dir.join("dump.hprof")).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&raw).unwrap();
    let packed = gz.finish().unwrap();
    let ui = start_ui(&[]);
    let a = ui.post("/api/upload", "name=dump.hprof.gz", &packed);
    assert_eq!(a.status, 200, "{}", a.text());
    let id = a.json()["session"].as_u64().unwrap();
    ui.wait_for("the upload to be read", MINUTE, |v| {
        v["sessions"][0]["state"] != "live"
    });
    let s = ui.session(id);
    assert_eq!(s["state"], "ended", "{s}");
    assert_eq!(s["kind"], "upload");
    assert_eq!(s["source"], "dump.hprof.gz");
    // HoldObjects keeps 3000 HeldA, 700 HeldB and 50 HeldA[].
    let heap = ui.get_json(
        &format!("/api/session/{id}/heap"),
        "class=HoldObjects&limit=50",
    );
    let count = |name: &str| {
        heap["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["class"] == name)
            .map(|r| r["instances"].as_u64().unwrap())
    };
    assert_eq!(count("HoldObjects$HeldA"), Some(3000), "{heap}");
    assert_eq!(count("HoldObjects$HeldB"), Some(700));
    assert_eq!(count("HoldObjects$HeldA[]"), Some(50));
    assert_eq!(heap["dumps"], 1);
    // The same numbers as `hprof-rs histo` on the file.
    let histo = hprof_core::reader::histogram(
        hprof_core::reader::open_path(dir.join("dump.hprof")).unwrap(),
    )
    .unwrap();
    let all = ui.get_json(&format!("/api/session/{id}/heap"), "limit=10000");
    assert_eq!(all["classes"].as_u64().unwrap() as usize, histo.len());
    for (row, h) in all["rows"].as_array().unwrap().iter().zip(&histo) {
        assert_eq!(
            (
                row["class"].as_str().unwrap(),
                row["instances"].as_u64().unwrap(),
                row["bytes"].as_u64().unwrap()
            ),
            (h.class_name.as_str(), h.instances, h.shallow_bytes)
        );
    }
    // Downloaded exactly as uploaded (still gzipped).
    let d = ui.get(&format!("/api/session/{id}/download"), "");
    assert_eq!(d.status, 200);
    assert!(d.body == packed, "download differs from the upload");
    // Garbage: its session fails, with the reader's message.
    let bad = ui.post(
        "/api/upload",
        "name=junk.bin",
        b"JAVA PROFILE 1.0.2\0\0\0\0\x04garbage",
    );
    assert_eq!(bad.status, 200);
    let bad_id = bad.json()["session"].as_u64().unwrap();
    ui.wait_for("the bad upload to fail", MINUTE, |v| {
        v["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["id"] == bad_id && s["state"] == "error")
    });
    // Over the limit: refused before any byte is read, no session.
    let big = request_bytes(
        ui.port,
        "POST",
        &format!("/api/upload?token={}&name=big", ui.token),
        &[("Content-Length", "1073741825")],
        b"",
    );
    assert_eq!(big.status, 413, "{}", big.text());
    // Cut short: the client says 1000 bytes, sends 10 and closes.
    {
        let mut s = TcpStream::connect(("127.0.0.1", ui.port)).unwrap();
        write!(
            s,
            "POST /api/upload?token={}&name=cut HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: 1000\r\n\r\n0123456789",
            ui.token, ui.port
        )
        .unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        let mut answer = String::new();
        let _ = s.read_to_string(&mut answer);
        assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
        assert!(
            answer.contains("upload cut short: 10 of 1000 bytes"),
            "{answer}"
        );
    }
    let v = ui.get_json("/api/sessions", "");
    let states: Vec<(&str, &str)> = v["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["source"].as_str().unwrap(), s["state"].as_str().unwrap()))
        .collect();
    assert_eq!(
        states,
        [
            ("dump.hprof.gz", "ended"),
            ("junk.bin", "error"),
            ("cut", "error")
        ]
    );
}

#[test]
fn launch_checks_its_input_and_never_runs_a_shell() {
    let _only_jvm = common::exclusive();
    let ui = start_ui_with(&["--agent=/nonexistent/libhprof_rs.so"], &[]);
    let l = ui.get_json("/api/launch", "");
    assert_eq!(l["available"], false);
    assert!(
        l["message"]
            .as_str()
            .unwrap()
            .contains("no agent library at /nonexistent/libhprof_rs.so"),
        "{l}"
    );
    let body = serde_json::json!({"command": "java -version", "options": ""});
    assert_eq!(
        ui.post("/api/launch", "", body.to_string().as_bytes())
            .status,
        409
    );
    drop(ui);

    let ui = start_ui_with(&[&agent_arg()], &[]);
    assert_eq!(ui.get_json("/api/launch", "")["available"], true);
    let dir = common::scratch("ui_launch_input");
    let java = common::java().display().to_string();
    let classes = common::fixture_classes().display().to_string();
    let refused = |command: &str, options: &str, cwd: &str, why: &str| {
        let body = serde_json::json!({"command": command, "options": options, "cwd": cwd});
        let a = ui.post("/api/launch", "", body.to_string().as_bytes());
        assert_eq!(a.status, 400, "{command} {options}: {}", a.text());
        assert!(
            a.json()["error"].as_str().unwrap().contains(why),
            "{command} {options}: {}",
            a.text()
        );
    };
    refused("sh -c 'touch x'", "", "", "must start with java");
    refused("/bin/javaX -version", "", "", "must start with java");
    refused(&format!("{java} 'unterminated"), "", "", "unterminated");
    refused(
        &format!("{java} -version\ntouch x"),
        "",
        "",
        "control characters",
    );
    refused(
        &format!("{java} -agentpath:/x/libhprof_rs.so Hello"),
        "",
        "",
        "adds the agent itself",
    );
    refused(&format!("{java} Hello"), "file=/tmp/x", "", "set by the UI");
    refused(
        &format!("{java} Hello"),
        "net=evil.example:1",
        "",
        "set by the UI",
    );
    refused(&format!("{java} Hello"), "cpu=bogus", "", "profile options");
    refused(
        &format!("{java} Hello"),
        "monitor=y,format=b",
        "",
        "profile options",
    );
    refused(
        &format!("{java} Hello"),
        "cpu=samples, depth=4",
        "",
        "no spaces",
    );
    refused(
        &format!("{java} Hello"),
        "",
        "/nonexistent-dir",
        "does not exist",
    );
    assert!(ui.get_json("/api/sessions", "")["sessions"]
        .as_array()
        .unwrap()
        .is_empty());
    // Shell syntax is passed to java as plain arguments: nothing runs it.
    let cwd = dir.display().to_string();
    let command = format!(
        "{java} -cp '{classes}' Hello ; touch PWNED1 && touch PWNED2 $(touch PWNED3) `touch PWNED4` | touch PWNED5"
    );
    let body = serde_json::json!({"command": command, "options": "cpu=samples", "cwd": cwd});
    let a = ui.post("/api/launch", "", body.to_string().as_bytes());
    assert_eq!(a.status, 200, "{}", a.text());
    let id = a.json()["session"].as_u64().unwrap();
    let console = ui.wait_console(id, "program ended: exit status 0", MINUTE);
    assert!(console.contains("[stdout] hello"), "{console}");
    check_console(&console);
    let argv = ui.session(id)["process"]["argv"].clone();
    let argv: Vec<&str> = argv
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(
        argv[1].contains("=cpu=samples,net=127.0.0.1:") && argv[1].ends_with(",format=b"),
        "{argv:?}"
    );
    assert_eq!(
        &argv[4..],
        [
            "Hello", ";", "touch", "PWNED1", "&&", "touch", "PWNED2", "$(touch", "PWNED3)",
            "`touch", "PWNED4`", "|", "touch", "PWNED5"
        ]
    );
    let left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        left.iter().all(|f| !f.starts_with("PWNED")),
        "a shell ran: {left:?}"
    );
    ui.wait_for("the stream to end", MINUTE, |v| {
        v["sessions"][0]["state"] == "ended"
    });
}

/// A launched program: its output in the console, begin/end marks giving
/// exactly what it allocated in between, DUMP HEAP opening in the Heap
/// view with exact counts, and Stop killing it.
#[test]
fn a_launched_program_streams_marks_dumps_and_stops() {
    let _only_jvm = common::exclusive();
    let ui = start_ui_with(&[&agent_arg()], &[]);
    let dir = common::scratch("ui_launch");
    let command = format!(
        "{} -cp {} AllocPhases {}",
        common::java().display(),
        common::fixture_classes().display(),
        dir.display()
    );
    let id = ui.launch(&command, "heap=all,depth=8");
    ui.wait_console(id, "[stdout] phase1", MINUTE);
    let s = ui.session(id);
    assert_eq!(s["kind"], "launch");
    assert_eq!(s["process"]["running"], true);
    assert!(s["commands"] == true, "{s}");
    // Begin mark: the agent is asked for every site, and that report is
    // the mark.
    let m = ui.post(&format!("/api/session/{id}/mark"), "", b"begin");
    assert_eq!(m.status, 200, "{}", m.text());
    ui.wait_for("the begin mark", MINUTE, |_| {
        !ui.session(id)["marks"]["begin"].is_null()
    });
    std::fs::write(dir.join("go"), b"").unwrap();
    ui.wait_console(id, "[stdout] phase2", MINUTE);
    assert_eq!(
        ui.post(&format!("/api/session/{id}/mark"), "", b"end")
            .status,
        200
    );
    ui.wait_for("the end mark", MINUTE, |_| {
        !ui.session(id)["marks"]["end"].is_null()
    });
    let between = ui.get_json(
        &format!("/api/session/{id}/sites"),
        "between=1&class=AllocPhases%24&sort=objects",
    );
    let got: Vec<(String, u64, u64)> = between["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["class"].as_str().unwrap().to_string(),
                r["objects"].as_u64().unwrap(),
                r["liveObjects"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("AllocPhases$B".to_string(), 3000, 3000),
            // Phase 2 calls makeA from another line: a site of its own.
            ("AllocPhases$A".to_string(), 500, 500)
        ],
        "{between}"
    );
    assert_eq!(between["estimated"], false);
    assert!(between["rows"][0]["site"]
        .as_str()
        .unwrap()
        .starts_with("AllocPhases.makeB("));
    // Without the marks: everything since the start, in two sites.
    let all = ui.get_json(
        &format!("/api/session/{id}/sites"),
        "class=AllocPhases%24A&sort=objects",
    );
    assert_eq!(all["matched"], 2, "{all}");
    assert_eq!(all["rows"][0]["objects"], 1000);
    assert_eq!(all["sum"]["objects"], 1500);
    // DUMP HEAP: the dump opens in the Heap view.
    let (st, r) = ui.command(id, "heap-dump");
    assert_eq!(st, 200, "{r}");
    ui.wait_for("the heap dump", MINUTE, |_| {
        ui.get_json(&format!("/api/session/{id}/heap"), "")["available"] == true
    });
    let heap = ui.get_json(
        &format!("/api/session/{id}/heap"),
        "class=AllocPhases%24&sort=instances",
    );
    let rows: Vec<(&str, u64)> = heap["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["class"].as_str().unwrap(),
                r["instances"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [("AllocPhases$B", 3000), ("AllocPhases$A", 1500)],
        "{heap}"
    );
    // Stop kills the program; the session ends with it.
    let stop = ui.post(&format!("/api/session/{id}/stop"), "", b"");
    assert_eq!(stop.status, 200, "{}", stop.text());
    let console = ui.wait_console(id, "program ended: killed (signal 9)", MINUTE);
    check_console(&console);
    ui.wait_for("the session to end", MINUTE, |_| {
        ui.session(id)["state"] != "live"
    });
    let s = ui.session(id);
    assert_eq!(s["process"]["running"], false);
    assert_eq!(
        ui.post(&format!("/api/session/{id}/stop"), "", b"").status,
        409,
        "nothing left to stop"
    );
}

/// monitor=y streams text; the Monitors view has the fixture's exact
/// contended entries and waits.
#[test]
fn monitors_of_a_launched_program_come_from_its_text_stream() {
    let _only_jvm = common::exclusive();
    let ui = start_ui_with(&[&agent_arg()], &[]);
    let command = format!(
        "{} -cp {} Contention measure 4 5 20",
        common::java().display(),
        common::fixture_classes().display()
    );
    let id = ui.launch(&command, "monitor=y");
    let console = ui.wait_console(id, "program ended: exit status 0", Duration::from_secs(90));
    check_console(&console);
    ui.wait_for("the stream to end", MINUTE, |_| {
        ui.session(id)["state"] != "live"
    });
    let s = ui.session(id);
    assert_eq!(s["state"], "ended", "{s}");
    assert_eq!(s["text"], true);
    let entries: u64 = console
        .lines()
        .find_map(|l| l.strip_prefix("[stdout] contended_entries "))
        .expect("the fixture's count")
        .trim()
        .parse()
        .unwrap();
    assert_eq!(entries, 20);
    let m = ui.get_json(&format!("/api/session/{id}/monitors"), "");
    let hot: Vec<&Value> = m["time"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["class"] == "Contention$HotLock")
        .collect();
    assert_eq!(hot.len(), 1, "{m}");
    assert_eq!(hot[0]["count"], entries);
    assert!(
        hot[0]["stack"][0]
            .as_str()
            .unwrap()
            .starts_with("Contention.blockOnHot(Contention.java:"),
        "{m}"
    );
    assert!(m["time"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["class"] != "Contention$QuietLock"));
    // The waiter waits twice on its WaitBox: once with a 300 ms timeout.
    let wait = m["waits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["class"] == "Contention$WaitBox")
        .expect("WaitBox waits")
        .clone();
    assert_eq!(
        (
            wait["waits"].as_u64(),
            wait["timed"].as_u64(),
            wait["waited"].as_u64()
        ),
        (Some(2), Some(1), Some(2)),
        "{wait}"
    );
    assert!(wait["maxMs"].as_u64().unwrap() >= 300, "{wait}");
}

/// thread=y: the thread filter keeps one thread's samples; line
/// granularity splits a method into its lines with the same total; the
/// call tree, the SVG and the table agree.
#[test]
fn thread_filter_lines_call_tree_and_svg_agree() {
    let _only_jvm = common::exclusive();
    let ui = start_ui(&[]);
    let dir = common::scratch("ui_threads");
    let run = common::run_with_agent_bounded(
        &dir,
        &format!("cpu=samples,interval=2,thread=y,depth=16,{}", ui.agent_opts),
        "NamedThreads",
        &["600"],
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
    let id = session_id(&v, 0);
    let cpu = ui.get_json(&format!("/api/session/{id}/cpu"), "flame=0&limit=1000");
    let alpha = cpu["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "worker-alpha")
        .unwrap_or_else(|| panic!("worker-alpha in {}", cpu["threads"]))
        .clone();
    let serial = alpha["serial"].as_u64().unwrap();
    let only = ui.get_json(
        &format!("/api/session/{id}/cpu"),
        &format!("threads={serial}&flame=0&limit=1000"),
    );
    assert_eq!(only["kept"], alpha["samples"], "{only}");
    assert_eq!(only["rows"][0]["method"], "NamedThreads.spinAlpha");
    assert!(only["rows"].as_array().unwrap().iter().all(|r| {
        let m = r["method"].as_str().unwrap();
        !m.contains("spinBeta") && !m.contains("spinGamma")
    }));
    // Threads view: what worker-alpha was doing.
    let threads = ui.get_json(&format!("/api/session/{id}/threads"), "");
    let t = threads["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "worker-alpha")
        .unwrap()
        .clone();
    assert_eq!(t["samples"], alpha["samples"]);
    assert_eq!(t["top"][0]["method"], "NamedThreads.spinAlpha");
    // Method vs line granularity: the lines of spinAlpha add up to it.
    let self_of = |v: &Value, m: &str| -> u64 {
        v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["method"].as_str().unwrap().starts_with(m))
            .map(|r| r["self"].as_u64().unwrap())
            .sum()
    };
    let method = self_of(&cpu, "NamedThreads.spinAlpha");
    let lines = ui.get_json(
        &format!("/api/session/{id}/cpu"),
        "granularity=line&flame=0&limit=10000",
    );
    assert!(method > 0);
    assert_eq!(
        self_of(&lines, "NamedThreads.spinAlpha(NamedThreads.java:"),
        method,
        "{lines}"
    );
    // The call tree with the filter: the spin methods are its roots, with
    // the table's totals.
    let body = serde_json::json!({"filter": "NamedThreads.spin", "open": [], "limit": 50});
    let tree = ui
        .post(
            &format!("/api/session/{id}/tree"),
            "",
            body.to_string().as_bytes(),
        )
        .json();
    let filtered = ui.get_json(
        &format!("/api/session/{id}/cpu"),
        "filter=NamedThreads.spin&flame=0",
    );
    let node = tree["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["n"] == "NamedThreads.spinAlpha")
        .expect("spinAlpha at the root")
        .clone();
    let row = filtered["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["method"] == "NamedThreads.spinAlpha")
        .unwrap()
        .clone();
    assert_eq!(node["t"][0], row["total"]);
    assert_eq!(tree["kept"], filtered["kept"]);
    // The SVG export of the same filter.
    let svg = ui.get(
        &format!("/api/session/{id}/flame.svg"),
        "filter=NamedThreads.spin",
    );
    assert_eq!(svg.status, 200);
    assert_eq!(svg.header("content-type"), Some("image/svg+xml"));
    let text = svg.text();
    assert!(text.starts_with("<?xml") && text.contains("<svg"), "{text}");
    let label = format!("NamedThreads.spinAlpha ({} samples", row["total"]);
    assert!(text.contains(&label), "{label} not in the SVG");
    // pprof export: a gzip file (its contents are checked by go tool pprof
    // in crates/hprof-e2e/tests/ui_export.rs).
    let pb = ui.get(&format!("/api/session/{id}/pprof"), "");
    assert_eq!(pb.status, 200);
    assert!(pb.body.starts_with(&[0x1f, 0x8b]));
}

/// The page's event stream: the session list at once, then again within
/// a second of a change (a new agent connection).
#[test]
fn the_event_stream_pushes_session_changes() {
    let ui = start_ui(&[]);
    let mut s = TcpStream::connect(("127.0.0.1", ui.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET /api/events?token={} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n\r\n",
        ui.token, ui.port
    )
    .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let mut read_event = |got: &mut Vec<u8>| -> Value {
        loop {
            let text = String::from_utf8_lossy(got).to_string();
            if let Some(start) = text.find("event: sessions\ndata: ") {
                if let Some(end) = text[start..].find("\n\n") {
                    let data = &text[start + 22..start + end];
                    let v: Value = serde_json::from_str(data).unwrap();
                    got.drain(..start + end + 2);
                    return v;
                }
            }
            let n = s.read(&mut buf).expect("an event within 10 s");
            assert!(n > 0, "the event stream closed");
            got.extend_from_slice(&buf[..n]);
        }
    };
    let first = read_event(&mut got);
    assert_eq!(first["sessions"], Value::Array(vec![]));
    let start = Instant::now();
    let mut agent = ui.agent_connection();
    agent
        .write_all(b"JAVA PROFILE 1.0.2\0\0\0\0\x04\0\0\0\0\0\0\0\0")
        .unwrap();
    let next = read_event(&mut got);
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "pushed in {:?}",
        start.elapsed()
    );
    assert_eq!(next["sessions"].as_array().unwrap().len(), 1, "{next}");
    drop(agent);
    // The end of the stream is pushed too.
    loop {
        let v = read_event(&mut got);
        if v["sessions"][0]["state"] == "ended" {
            break;
        }
    }
}

#[test]
fn the_source_view_reads_only_under_its_directory() {
    let src = common::fixtures_src();
    let ui = start_ui_with(&["--source", src.to_str().unwrap()], &[]);
    let v = ui.get_json("/api/source", "class=CpuSplit&file=CpuSplit.java");
    assert_eq!(v["path"], "CpuSplit.java");
    let lines = v["lines"].as_array().unwrap();
    let want = std::fs::read_to_string(src.join("CpuSplit.java")).unwrap();
    assert_eq!(lines.len(), want.lines().count());
    assert!(lines
        .iter()
        .any(|l| l.as_str().unwrap().contains("static long work60(long x)")));
    for (params, status) in [
        ("class=x.Y&file=..%2FCargo.toml", 400),
        ("class=..&file=Cargo.toml", 400),
        ("class=a%2F..%2F..%2Fb.C&file=C.java", 400),
        ("class=Nope&file=Nope.java", 404),
        ("class=CpuSplit&file=%2Fetc%2Fpasswd", 400),
    ] {
        assert_eq!(ui.get("/api/source", params).status, status, "{params}");
    }
    drop(ui);
    let ui = start_ui(&[]);
    let a = ui.get("/api/source", "class=CpuSplit&file=CpuSplit.java");
    assert_eq!(a.status, 404);
    assert!(a.json()["error"].as_str().unwrap().contains("--source"));
}

/// Attach: the page lists the running JVM, the agent is loaded into it and
/// streams to a session of its own, counting from the attach; a pid that
/// is no JVM fails its session with the reason, a bad one is refused.
#[test]
fn attach_loads_the_agent_into_a_running_jvm_and_streams_to_a_session() {
    use std::io::BufRead;
    let _only_jvm = common::exclusive();
    let ui = start_ui_with(&[&agent_arg()], &[]);
    let dir = common::scratch("ui_attach");
    let mut java = Command::new(common::java())
        .current_dir(&dir)
        .arg("-cp")
        .arg(common::fixture_classes())
        .arg("AttachTarget")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            common::kill_and_reap(&mut self.0);
        }
    }
    let mut stdin = java.stdin.take().unwrap();
    let mut lines = std::io::BufReader::new(java.stdout.take().unwrap()).lines();
    let pid = java.id();
    let _java = Kill(java);
    assert_eq!(lines.next().unwrap().unwrap(), "ready");
    let mut ask = |cmd: &str| {
        writeln!(stdin, "{cmd}").unwrap();
        stdin.flush().unwrap();
        lines.next().unwrap().unwrap()
    };
    assert_eq!(
        ask("fresh 100"),
        "fresh 100",
        "before the attach: not counted"
    );

    let a = ui.get_json("/api/attach", "");
    assert_eq!(a["available"], true, "{a}");
    let me = a["jvms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["pid"] == pid)
        .unwrap_or_else(|| panic!("JVM {pid} not listed: {a}"));
    assert_eq!(me["command"], "AttachTarget", "{me}");
    assert_eq!(me["agent_loaded"], false, "{me}");

    let attach = |pid: &str, options: &str| {
        let body = serde_json::json!({"pid": pid, "options": options});
        ui.post("/api/attach", "", body.to_string().as_bytes())
    };
    let bad = attach("12ab", "heap=sites");
    assert_eq!(bad.status, 400, "{}", bad.text());
    let bad = attach(&pid.to_string(), "heap=sites,file=/tmp/x");
    assert_eq!(bad.status, 400, "{}", bad.text());
    assert!(bad.text().contains("set by the UI"), "{}", bad.text());

    let r = attach(&pid.to_string(), "heap=sites,depth=4");
    assert_eq!(r.status, 200, "{}", r.text());
    let id = r.json()["session"].as_u64().unwrap();
    ui.wait_console(id, "agent connected", MINUTE);
    ui.wait_console(id, &format!("the agent started in JVM {pid}"), MINUTE);
    let s = ui.session(id);
    assert_eq!(s["kind"], "attach", "{s}");
    assert_eq!(s["state"], "live", "{s}");
    assert_eq!(ask("fresh 300"), "fresh 300");
    let (st, r) = ui.command(id, "sites 0 0");
    assert_eq!(st, 200, "{r}");
    let rows = |v: &Value| -> Vec<(String, u64)> {
        v["rows"]
            .as_array()
            .map(|rows| {
                rows.iter()
                    .map(|r| {
                        (
                            r["site"].as_str().unwrap_or("").to_string(),
                            r["objects"].as_u64().unwrap_or(0),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let start = Instant::now();
    let sites = loop {
        let v = ui.get_json(
            &format!("/api/session/{id}/sites"),
            "class=AttachTarget%24Kept&sort=objects",
        );
        if !rows(&v).is_empty() {
            break v;
        }
        assert!(start.elapsed() < MINUTE, "no sites: {v}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let got = rows(&sites);
    assert_eq!(got.len(), 1, "{sites}");
    assert!(
        got[0].0.starts_with("AttachTarget.allocOnFreshThread("),
        "{sites}"
    );
    assert_eq!(got[0].1, 300, "only what followed the attach: {sites}");
    check_console(&ui.console(id));
    assert_eq!(ui.session(id)["attachedPid"], pid, "the page offers Stop");

    // A second attach while this profile runs: that session fails with the
    // agent's own reason (not only its return code).
    let r = attach(&pid.to_string(), "cpu=samples");
    assert_eq!(r.status, 200, "{}", r.text());
    let second = r.json()["session"].as_u64().unwrap();
    ui.wait_for("the refused attach", MINUTE, |_| {
        ui.session(second)["state"] != "live"
    });
    let console = ui.console(second);
    assert!(
        console.contains(&format!(
            "the agent did not start in JVM {pid}: hprof-rs is already profiling this JVM (attached "
        )),
        "{console}"
    );

    // Stop ends the profile in the JVM (its final report comes to the
    // session, then the agent closes), and the program runs on.
    let reports = ui.session(id)["sitesReports"].as_u64().unwrap();
    let r = ui.post(&format!("/api/session/{id}/stop"), "", b"");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.json()["stopped"],
        format!(
            "profiling stopped in JVM {pid}; the report went to the front-end; the program runs on"
        )
    );
    ui.wait_for("the stopped profile's end", MINUTE, |_| {
        ui.session(id)["state"] != "live"
    });
    let s = ui.session(id);
    assert_ne!(s["state"], "error", "{s}");
    assert_eq!(
        s["sitesReports"].as_u64().unwrap(),
        reports + 1,
        "the final report: {s}"
    );
    assert_eq!(ask("fresh 10"), "fresh 10", "the program runs on");
    // Nothing left to stop: the agent's refusal, as a conflict.
    let r = ui.post(&format!("/api/session/{id}/stop"), "", b"");
    assert_eq!(r.status, 409, "{}", r.text());
    assert!(
        r.text().contains("did not stop profiling in JVM ")
            && r.text()
                .contains(": stop: hprof-rs is not profiling this JVM"),
        "{}",
        r.text()
    );

    // A pid that is no JVM: the session fails with the tool's reason.
    let r = attach(&std::process::id().to_string(), "cpu=samples");
    assert_eq!(r.status, 200, "{}", r.text());
    let failed = r.json()["session"].as_u64().unwrap();
    let v = ui.wait_for("the failed attach", MINUTE, |_| {
        ui.session(failed)["state"] != "live"
    });
    let s = ui.session(failed);
    assert_eq!(s["state"], "error", "{s} {v}");
    let console = ui.console(failed);
    assert!(
        console.contains("is not a Java virtual machine"),
        "{console}"
    );
}

/// A file with two heap dumps (a SIGQUIT dump, then the exit dump, of a
/// program whose kept objects grew in between): `hprof-rs histo` and the
/// Heap view show either (issue 27 item 8), not only the last.
#[test]
fn every_heap_dump_of_a_file_can_be_chosen() {
    use std::io::BufRead;
    let _only_jvm = common::exclusive();
    let dir = common::scratch("ui_two_dumps");
    let mut java = Command::new(common::java())
        .current_dir(&dir)
        .arg(format!(
            "-agentpath:{}=heap=dump,format=b,file=two.hprof",
            common::agent_path().display()
        ))
        .arg("-cp")
        .arg(common::fixture_classes())
        .arg("AttachTarget")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = java.stdin.take().unwrap();
    let mut lines = std::io::BufReader::new(java.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "ready");
    // The answer to `cmd`, past what else the JVM printed (SIGQUIT makes
    // it print a thread dump on stdout too).
    let mut ask = |cmd: &str, answer: &str| {
        writeln!(stdin, "{cmd}").unwrap();
        stdin.flush().unwrap();
        lines
            .by_ref()
            .map(|l| l.unwrap())
            .find(|l| l == answer)
            .unwrap_or_else(|| panic!("no {answer:?} from the program"))
    };
    ask("fresh 1000", "fresh 1000");
    let file = dir.join("two.hprof");
    // SAFETY: the pid of our own running child.
    unsafe {
        libc::kill(java.id() as i32, libc::SIGQUIT);
    }
    common::wait_for_dumps(&file, 1);
    ask("fresh 3000", "fresh 3000");
    ask("exit", "bye");
    assert!(java.wait().unwrap().success());
    let file = file.to_str().unwrap();

    let kept = |text: &str| -> u64 {
        text.lines()
            .find(|l| l.ends_with(" AttachTarget$Kept"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no AttachTarget$Kept row in\n{text}"))
    };
    let histo = |args: &[&str]| {
        Command::new(env!("HPROF_RS_TOOL"))
            .arg("histo")
            .arg(file)
            .args(args)
            .output()
            .unwrap()
    };
    let last = histo(&[]);
    assert!(last.status.success());
    assert_eq!(kept(&common::stdout(&last)), 4000);
    assert_eq!(
        common::stderr(&last),
        format!("hprof-rs histo: dump 2 of 2 in {file} (--dump N for another)\n")
    );
    let first = histo(&["--dump", "1"]);
    assert!(first.status.success());
    assert_eq!(kept(&common::stdout(&first)), 1000);
    let none = histo(&["--dump", "3"]);
    assert_eq!(none.status.code(), Some(1));
    assert_eq!(
        common::stderr(&none),
        format!("hprof-rs: {file}: --dump 3: the file has 2 heap dumps\n")
    );

    let ui = start_ui(&[file]);
    ui.wait_for("the file read", MINUTE, |v| {
        v["sessions"][0]["state"] == "ended"
    });
    let kept_row = |v: &Value| {
        v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["class"] == "AttachTarget$Kept")
            .map(|r| r["instances"].as_u64().unwrap())
    };
    let v = ui.get_json("/api/session/1/heap", "limit=1000");
    assert_eq!(v["number"], 2, "{v}");
    assert_eq!(kept_row(&v), Some(4000));
    let numbers: Vec<u64> = v["kept"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["number"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers, [1, 2]);
    let v = ui.get_json("/api/session/1/heap", "dump=1&limit=1000");
    assert_eq!(v["number"], 1, "{v}");
    assert_eq!(kept_row(&v), Some(1000));
}

/// What the CPU and Threads views say of files they cannot show as
/// samples (issue 27 item 12): stacks cut by `depth` are named with the
/// flame graph and in its SVG; a text report's threads have no times (not
/// 0.0); a cpu=times report is said to be one, not "run with cpu=samples".
#[test]
fn the_views_say_what_a_file_holds() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("ui_says");
    let runs = [
        (
            "cut.hprof",
            "cpu=samples,interval=1,depth=3,format=b",
            "DeepStack",
            &["40", "800"][..],
        ),
        ("times.txt", "cpu=times", "CpuSplit", &["1"][..]),
        ("threads.txt", "cpu=samples", "NamedThreads", &[][..]),
    ];
    for (file, opts, main, args) in runs {
        let r = common::run_with_agent_bounded(
            &dir,
            &format!("{opts},file={file}"),
            main,
            args,
            Duration::from_secs(120),
        );
        assert!(
            r.output.status.success(),
            "{opts}: {}",
            common::stderr(&r.output)
        );
    }
    let path = |f: &str| dir.join(f).to_str().unwrap().to_string();
    let ui = start_ui(&[&path("cut.hprof"), &path("times.txt"), &path("threads.txt")]);
    ui.wait_for("the files read", MINUTE, |v| {
        (0..3).all(|i| v["sessions"][i]["state"] == "ended")
    });
    let id = |file: &str| -> u64 {
        let v = ui.get_json("/api/sessions", "");
        v["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["source"].as_str().unwrap().ends_with(file))
            .unwrap()["id"]
            .as_u64()
            .unwrap()
    };
    let cut = id("cut.hprof");
    let v = ui.get_json(&format!("/api/session/{cut}/cpu"), "");
    assert_eq!(
        v["notes"][0].as_str().unwrap_or(""),
        "stacks are cut at 3 frames (the agent's depth option, 4 by default), so their roots are missing; run the agent with depth=64 (or more) for a readable graph",
        "{v}"
    );
    let svg = ui.get(&format!("/api/session/{cut}/flame.svg"), "").text();
    assert!(svg.contains("stacks are cut at 3 frames"), "{svg}");

    let times = id("times.txt");
    let v = ui.get_json(&format!("/api/session/{times}/cpu"), "");
    assert_eq!(v["available"], false);
    assert_eq!(v["cpuTime"], 1, "{v}");

    let threads = id("threads.txt");
    let v = ui.get_json(&format!("/api/session/{threads}/threads"), "");
    let list = v["threads"].as_array().unwrap();
    let alpha = list
        .iter()
        .find(|t| t["name"] == "worker-alpha")
        .unwrap_or_else(|| panic!("{v}"));
    assert_eq!(alpha["startMs"], Value::Null, "text has no times: {alpha}");
    assert_eq!(alpha["endMs"], Value::Null, "{alpha}");
    assert_eq!(alpha["ended"], true, "{alpha}");
}

/// GET a heap analyser answer of session `id`, waiting while its index
/// is built (each wait answers 202 with the build's progress).
fn heap_answer(ui: &ui_support::UiProc, id: u64, query: &str, params: &str) -> (u16, Value) {
    let start = Instant::now();
    loop {
        let a = ui.get(&format!("/api/session/{id}/heap/{query}"), params);
        let v = a.json();
        if a.status != 202 {
            return (a.status, v);
        }
        assert_eq!(v["state"], "building", "{v}");
        assert!(v["stage"].is_string(), "{v}");
        assert!(v["done"].as_u64().unwrap() <= v["total"].as_u64().unwrap());
        assert!(start.elapsed() < MINUTE, "index not built: {v}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn heap_ok(ui: &ui_support::UiProc, id: u64, query: &str, params: &str) -> Value {
    let (st, v) = heap_answer(ui, id, query, params);
    assert_eq!(st, 200, "{query}?{params}: {v}");
    v
}

/// What the Heap tab's analyser says of HeapShapes (java-fixtures): the
/// known graph's exact counts and retained sizes, the path from a GC
/// root, weak references, paging bounds.
fn check_heap_shapes(ui: &ui_support::UiProc, id: u64) {
    let classes = heap_ok(
        ui,
        id,
        "classes",
        "filter=HeapShapes%24&sort=name&limit=100",
    );
    let count = |name: &str| {
        classes["classes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["class"] == name)
            .unwrap_or_else(|| panic!("no {name} in {classes}"))["instances"]
            .as_u64()
            .unwrap()
    };
    for (class, n) in common::heap_shapes::INSTANCES {
        assert_eq!(count(class), n, "{class}");
    }
    assert_eq!(
        classes["total"],
        common::heap_shapes::INSTANCES.len(),
        "{classes}"
    );
    // Sorted by name when asked.
    let names: Vec<&str> = classes["classes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["class"].as_str().unwrap())
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    // Sorted by retained size by default: the list's first Node retains
    // every Node.
    let top = heap_ok(ui, id, "classes", "filter=HeapShapes%24&limit=1");
    assert_eq!(top["classes"][0]["class"], "HeapShapes$Node", "{top}");
    assert_eq!(top["classes"][0]["retained"], 200_000 * 24);
    // Instances: paged, bounded, biggest retained first.
    let nodes = heap_ok(ui, id, "instances", "class=HeapShapes%24Node&limit=100000");
    assert_eq!(nodes["total"], 200_000);
    let objs = nodes["objects"].as_array().unwrap();
    assert_eq!(objs.len(), 10_000, "at most 10 000 rows an answer");
    assert_eq!(objs[0]["retained"], 200_000 * 24, "the list's head");
    assert_eq!(objs[1]["retained"], 199_999 * 24);
    let page = heap_ok(
        ui,
        id,
        "instances",
        "class=HeapShapes%24Node&offset=5&limit=2",
    );
    assert_eq!(page["objects"][0]["retained"], 199_995 * 24, "{page}");
    // The Owner retains its Leaf[10], the 10 Leafs and their byte[1000]s
    // (compressed references: 16 + 56 + 10 × 16 + 10 × 1016).
    let owners = heap_ok(ui, id, "instances", "class=HeapShapes%24Owner");
    let owner = owners["objects"][0]["id"].as_str().unwrap().to_string();
    assert_eq!(owners["objects"][0]["retained"], 10_392, "{owners}");
    let o = heap_ok(ui, id, "object", &format!("id={owner}"));
    assert_eq!(o["class"], "HeapShapes$Owner");
    assert_eq!(o["fields"][0]["name"], "leaves", "{o}");
    let leaves = o["fields"][0]["value"].as_str().unwrap().to_string();
    assert_eq!(o["references"][0]["id"], leaves.as_str());
    assert_eq!(o["referrers_total"], 1);
    assert_eq!(o["referrers"][0]["field"], "owner", "the static");
    assert_eq!(o["referrers"][0]["class"], "java.lang.Class");
    let dominated = heap_ok(ui, id, "dominated", &format!("id={leaves}"));
    assert_eq!(dominated["total"], 10);
    assert_eq!(dominated["retained"], 10_392 - 16);
    assert_eq!(dominated["objects"][0]["class"], "HeapShapes$Leaf");
    assert_eq!(dominated["objects"][0]["retained"], 16 + 1016);
    // The path from a GC root ends with the owner, through the static.
    let p = heap_ok(ui, id, "path", &format!("id={owner}"));
    let steps = p["path"].as_array().unwrap();
    assert_ne!(p["root_kind"], "unknown", "{p}");
    assert_eq!(steps.last().unwrap()["id"], owner.as_str());
    assert_eq!(steps.last().unwrap()["field"], "owner");
    assert!(steps[0]["field"].is_null());
    // One Kept is held by a static (and a WeakReference), the other only
    // by a SoftReference: with exclude_weak it has no path.
    let kept = heap_ok(ui, id, "instances", "class=HeapShapes%24Kept");
    let mut strong_paths = 0;
    for k in kept["objects"].as_array().unwrap() {
        let kid = format!("id={}", k["id"].as_str().unwrap());
        heap_ok(ui, id, "path", &kid);
        let (st, v) = heap_answer(ui, id, "path", &format!("{kid}&exclude_weak=1"));
        match st {
            200 => strong_paths += 1,
            409 => assert!(v["error"].as_str().unwrap().contains("only through"), "{v}"),
            _ => panic!("{st} {v}"),
        }
    }
    assert_eq!(strong_paths, 1);
    // Bad questions get clear errors.
    let (st, v) = heap_answer(ui, id, "object", "id=zzz");
    assert_eq!(st, 404, "{v}");
    assert!(v["error"].as_str().unwrap().contains("not an object ID"));
    let (st, v) = heap_answer(ui, id, "object", "id=0x1");
    assert_eq!(
        (st, v["error"].as_str()),
        (404, Some("no object 0x1 in the dump"))
    );
    let (st, v) = heap_answer(ui, id, "instances", "class=NoSuchClass");
    assert_eq!(st, 404, "{v}");
    let (st, _) = heap_answer(ui, id, "nonsense", "");
    assert_eq!(st, 404);
    let (st, _) = heap_answer(ui, id, "classes", "dump=0");
    assert_eq!(st, 400);
}

/// The Heap tab's analyser (issue 29 item 4) on the dump a live agent
/// session sends when asked (its recording indexed while the program still
/// runs) and on a `jcmd GC.heap_dump` of the same program opened as a file
/// (its index saved beside it, as `hprof-rs heap` saves it).
#[test]
fn the_heap_analyser_answers_on_a_live_stream_and_on_a_file() {
    let _only_jvm = common::exclusive();
    let ui = start_ui(&[]);
    let dir = common::scratch("ui_heap_analyser");
    let agent = format!(
        "-agentpath:{}=heap=dump,{}",
        common::agent_path().display(),
        ui.agent_opts
    );
    let java = ui_support::start_heap_shapes(&dir, &[agent]);
    ui.wait_for("the agent's session", MINUTE, |v| {
        v["sessions"][0]["commands"] == true
    });
    let (st, r) = ui.command(1, "dump");
    assert_eq!(st, 200, "{r}");
    let start = Instant::now();
    while ui.get_json("/api/session/1/heap", "")["available"] != true {
        assert!(start.elapsed() < MINUTE, "no dump in the session");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(ui.session(1)["state"], "live");
    check_heap_shapes(&ui, 1);
    // A dump the session does not have.
    let (st, v) = heap_answer(&ui, 1, "classes", "dump=2");
    assert_eq!(st, 422, "{v}");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("dump 2 was asked for"),
        "{v}"
    );

    let file = dir.join("heap.hprof");
    ui_support::jcmd_dump_and_end(java, &dir, &file);
    let ui2 = start_ui(&[file.to_str().unwrap()]);
    let first = ui2.get("/api/session/1/heap/classes", "");
    assert!(matches!(first.status, 200 | 202), "{}", first.text());
    check_heap_shapes(&ui2, 1);
    let status = heap_ok(&ui2, 1, "status", "");
    assert_eq!(status["state"], "ready");
    assert_eq!(status["dump"], 1);
    assert!(
        dir.join("heap.hprof.hprof-rs-index").is_file(),
        "the index is saved beside the file"
    );
    // HotSpot's dumps carry no allocation traces: said, not empty.
    let (st, v) = heap_answer(&ui2, 1, "sites", "");
    assert_eq!(st, 409, "{v}");
    assert!(v["error"]
        .as_str()
        .unwrap()
        .contains("no allocation traces"));
}

/// `heap/diff` (issue 29 item 4): per class, another session's dump minus
/// this one's (files named on the command line here: lists of 3 and 5
/// nodes), sorted, filtered, paged; the other's index is built as any.
#[test]
fn the_heap_analyser_diffs_dumps_of_two_sessions() {
    let dir = common::scratch("ui_heap_diff");
    let a = common::synth::write_list(&dir.join("a.hprof"), 3);
    let b = common::synth::write_list(&dir.join("b.hprof"), 5);
    let ui = start_ui(&[a.to_str().unwrap(), b.to_str().unwrap()]);
    let v = heap_ok(&ui, 1, "diff", "other=2&other_dump=1");
    assert_eq!(v["total"], 1, "{v}");
    assert_eq!(v["other"], serde_json::json!({"session": 2, "dump": 1}));
    assert_eq!(v["dump"], 1);
    let row = &v["classes"][0];
    assert_eq!(row["class"], "Node1");
    assert_eq!(row["instances"], 2);
    let shallow = row["shallow"].as_i64().unwrap();
    assert!(shallow > 0, "{v}");
    assert_eq!(row["retained"], shallow, "{v}");
    // The other way round: the same change, negative.
    let back = heap_ok(&ui, 2, "diff", "other=1&sort=instances");
    assert_eq!(back["classes"][0]["instances"], -2, "{back}");
    assert_eq!(back["classes"][0]["shallow"], -shallow, "{back}");
    // A dump against itself changes nothing; a filter, a page past the end.
    assert_eq!(heap_ok(&ui, 1, "diff", "")["total"], 0);
    assert_eq!(heap_ok(&ui, 1, "diff", "other=2&filter=Node0")["total"], 0);
    let past = heap_ok(&ui, 1, "diff", "other=2&offset=1");
    assert_eq!(past["classes"], serde_json::json!([]), "{past}");
    assert_eq!(past["total"], 1);
    // No such session, no such dump.
    let (st, e) = heap_answer(&ui, 1, "diff", "other=9");
    assert_eq!(st, 404, "{e}");
    let (st, e) = heap_answer(&ui, 1, "diff", "other=2&other_dump=0");
    assert_eq!(st, 400, "{e}");
    let (st, e) = heap_answer(&ui, 1, "diff", "other=2&other_dump=2");
    assert_eq!(st, 422, "{e}");
    assert_eq!(e["session"], 2, "{e}");
}
