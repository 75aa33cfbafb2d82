//! The walls between the crates (docs/design.md, "Code map"), read from
//! `cargo metadata`: the tool never reaches into the agent, the agent never
//! carries the tool, `hprof-core` pulls in neither `jni`, `clap` nor
//! `serde_json`, only `hprof-jvmti` links the `jni` crate, only the UI and
//! the command line speak JSON, and the tool's model has no `unsafe`.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

const AGENT_SIDE: [&str; 3] = ["hprof-agent", "hprof-jvmti", "hprof-bci"];
const TOOL: [&str; 4] = ["hprof-analysis", "hprof-attach", "hprof-ui", "hprof-cli"];

/// Package name -> names of its normal (not dev, not build) dependencies.
fn normal_deps() -> BTreeMap<String, BTreeSet<String>> {
    let cargo = option_env!("CARGO").unwrap_or("cargo");
    let out = std::process::Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--offline"])
        .args(["--filter-platform", env!("HPROF_TARGET")])
        .current_dir(env!("HPROF_REPO"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).unwrap();
    let name_of: BTreeMap<&str, &str> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap()))
        .collect();
    let mut deps = BTreeMap::new();
    for node in meta["resolve"]["nodes"].as_array().unwrap() {
        let name = name_of[node["id"].as_str().unwrap()].to_string();
        let normal: BTreeSet<String> = node["deps"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| {
                d["dep_kinds"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|k| k["kind"].is_null())
            })
            .map(|d| name_of[d["pkg"].as_str().unwrap()].to_string())
            .collect();
        deps.insert(name, normal);
    }
    deps
}

/// Everything `root` pulls in through normal dependencies.
fn reach(deps: &BTreeMap<String, BTreeSet<String>>, root: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![root.to_string()];
    while let Some(p) = todo.pop() {
        for d in deps.get(&p).into_iter().flatten() {
            if seen.insert(d.clone()) {
                todo.push(d.clone());
            }
        }
    }
    seen
}

#[test]
fn crates_depend_only_through_their_walls() {
    let deps = normal_deps();
    for p in TOOL.iter().chain(&AGENT_SIDE).chain(&["hprof-core"]) {
        assert!(deps.contains_key(*p), "{p} is not in the workspace");
    }
    let broken = walls_broken(&deps);
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

/// The check sees a wall broken two steps away and a forbidden library.
#[test]
fn the_check_fails_on_a_broken_wall() {
    let graph = |edges: &[(&str, &str)]| {
        let mut m: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in edges {
            m.entry(a.to_string()).or_default().insert(b.to_string());
        }
        m
    };
    let fine = graph(&[
        ("hprof-ui", "hprof-core"),
        ("hprof-agent", "hprof-jvmti"),
        ("hprof-jvmti", "jni"),
    ]);
    assert!(walls_broken(&fine).is_empty());
    let bad = graph(&[
        ("hprof-ui", "hprof-analysis"),
        ("hprof-analysis", "hprof-jvmti"),
        ("hprof-core", "serde_json"),
    ]);
    let said = walls_broken(&bad);
    assert!(
        said.contains(&"tool crate hprof-ui depends on hprof-jvmti".to_string()),
        "{said:?}"
    );
    assert!(said.contains(&"tool crate hprof-analysis depends on hprof-jvmti".to_string()));
    assert!(said.contains(&"hprof-core pulls in serde_json".to_string()));
    assert!(said.contains(&"hprof-core speaks JSON; only hprof-ui and hprof-cli may".to_string()));
}

fn walls_broken(deps: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut broken = Vec::new();
    for tool in TOOL {
        let r = reach(deps, tool);
        for a in AGENT_SIDE.iter().filter(|a| r.contains(**a)) {
            broken.push(format!("tool crate {tool} depends on {a}"));
        }
    }
    for agent in AGENT_SIDE {
        let r = reach(deps, agent);
        for t in TOOL.iter().filter(|t| r.contains(**t)) {
            broken.push(format!("agent crate {agent} depends on {t}"));
        }
    }
    let core = reach(deps, "hprof-core");
    for forbidden in ["jni", "clap", "serde_json"] {
        if core.contains(forbidden) {
            broken.push(format!("hprof-core pulls in {forbidden}"));
        }
    }
    if core.iter().any(|d| d.starts_with("hprof-")) {
        broken.push(format!(
            "hprof-core depends on another hprof crate: {core:?}"
        ));
    }
    for (pkg, direct) in deps {
        if direct.contains("jni") && pkg != "hprof-jvmti" && pkg != "jvmti-floor" {
            broken.push(format!("{pkg} links the jni crate; only hprof-jvmti may"));
        }
        if direct.contains("serde_json") && pkg != "hprof-ui" && pkg != "hprof-cli" {
            broken.push(format!(
                "{pkg} speaks JSON; only hprof-ui and hprof-cli may"
            ));
        }
    }
    broken
}

#[test]
fn the_tools_model_has_no_unsafe_code() {
    let lib = std::fs::read_to_string(concat!(
        env!("HPROF_REPO"),
        "/crates/hprof-analysis/src/lib.rs"
    ))
    .unwrap();
    assert!(
        lib.contains("#![forbid(unsafe_code)]"),
        "hprof-analysis must forbid unsafe code"
    );
}

/// What in a source line means file I/O or printing.
const IO_OR_PRINT: [&str; 8] = [
    "std::fs",
    "File::",
    "OpenOptions",
    "println!",
    "print!",
    "eprint",
    "diag::",
    "std::process",
];

/// Lines of `src` (a file's text) that do file I/O or print, outside its
/// `#[cfg(test)]` part (assumed to be last, as in this workspace) and
/// outside comments.
fn io_lines(src: &str) -> Vec<String> {
    let code = src.split("#[cfg(test)]").next().unwrap_or("");
    code.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("//"))
        .filter(|l| IO_OR_PRINT.iter().any(|w| l.contains(w)))
        .map(str::to_string)
        .collect()
}

/// docs/design.md, "Code map": the format writes into the buffer it is
/// given; files (a 1.0.1 dump's scratch file) and messages are its
/// caller's, through `Scratch`/`ScratchSource`.
#[test]
fn the_format_does_no_file_io_and_prints_nothing() {
    let root = std::path::Path::new(env!("HPROF_REPO")).join("crates/hprof-core/src/format");
    let mut dirs = vec![root];
    let mut found = Vec::new();
    let mut files = 0;
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs")
                && p.file_name().is_some_and(|n| n != "tests.rs")
            {
                files += 1;
                let src = std::fs::read_to_string(&p).unwrap();
                for l in io_lines(&src) {
                    found.push(format!("{}: {l}", p.display()));
                }
            }
        }
    }
    assert!(
        files >= 10,
        "the format's sources were not found ({files} files)"
    );
    assert!(
        found.is_empty(),
        "file I/O or printing in the format:\n{}",
        found.join("\n")
    );
    // The check sees what it looks for.
    assert_eq!(
        io_lines("use std::fs::File;\nfn f() { crate::diag::error(\"x\") }\n// println!\n").len(),
        2
    );
}
