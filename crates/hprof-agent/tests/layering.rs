//! The layering rule of docs/design.md ("Allowed imports"): a module of the
//! agent crate (crates/hprof-agent/src) uses only modules of a lower rank.
//! The table and the list of exceptions are read from that document, so the
//! rule is written once. The crates below the agent (hprof-core, hprof-bci,
//! hprof-jvmti) are re-exported by its lib.rs under their module names and
//! have rank 0; which crate may depend on which is Cargo's wall, checked by
//! crates/hprof-e2e/tests/crate_walls.rs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const DESIGN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/design.md");
const SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
const LIB: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/lib.rs");

/// Lines between `<!-- {start} -->` and the next `<!-- end ... -->`.
fn block<'a>(doc: &'a str, start: &str) -> Vec<&'a str> {
    let open = format!("<!-- {start}");
    let mut lines = doc.lines().skip_while(|l| !l.starts_with(&open));
    assert!(
        lines.next().is_some(),
        "docs/design.md has no `{open}` block"
    );
    lines.take_while(|l| !l.starts_with("<!-- end")).collect()
}

fn ranks(doc: &str) -> BTreeMap<String, u32> {
    let mut ranks = BTreeMap::new();
    for line in block(doc, "layering table") {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let Some(rank) = cells.get(1).and_then(|c| c.parse::<u32>().ok()) else {
            continue; // header and separator rows
        };
        for module in cells[2].split(',').map(str::trim) {
            assert!(
                ranks.insert(module.to_string(), rank).is_none(),
                "{module} listed twice"
            );
        }
    }
    assert!(!ranks.is_empty(), "empty layering table");
    ranks
}

fn exceptions(doc: &str) -> BTreeSet<(String, String)> {
    block(doc, "layering exceptions")
        .into_iter()
        .filter_map(|l| l.trim().strip_prefix("- "))
        .map(|l| {
            let (a, b) = l.split_once("->").expect("`- from -> to`");
            (a.trim().to_string(), b.trim().to_string())
        })
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The top-level module a file belongs to (`crates/hprof-agent/src/agent/mod.rs` -> agent).
fn top_module(file: &Path) -> Option<String> {
    let rel = file.strip_prefix(SRC).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    match first {
        "lib.rs" => None,
        f => Some(f.trim_end_matches(".rs").to_string()),
    }
}

/// Every `crate::name` and `hprof_rs::name` in code (comments removed),
/// with its line number; `use crate::{a::X, b}` groups may span lines.
fn crate_paths(text: &str) -> Vec<(usize, String)> {
    let code: String = text
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let line_at = |i: usize| code[..i].matches('\n').count() + 1;
    let mut out = Vec::new();
    for prefix in ["crate::", "hprof_rs::"] {
        let mut from = 0;
        while let Some(i) = code[from..].find(prefix) {
            let at = from + i;
            from = at + prefix.len();
            // `my_crate::` is not `crate::`.
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let after = &code[from..];
            if let Some(group) = after.strip_prefix('{') {
                let group = group.split('}').next().unwrap_or("");
                let mut offset = from + 1;
                for item in group.split(',') {
                    let head = item.trim().split("::").next().unwrap_or("").trim();
                    if !head.is_empty() {
                        let pos = offset + item.find(head).unwrap_or(0);
                        out.push((line_at(pos), head.to_string()));
                    }
                    offset += item.len() + 1;
                }
            } else {
                let name: String = after
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    out.push((line_at(at), name));
                }
            }
        }
    }
    out.sort();
    out
}

/// The module names lib.rs re-exports from the crates below the agent.
fn reexported() -> BTreeSet<String> {
    let lib = std::fs::read_to_string(LIB).unwrap();
    let mut names = BTreeSet::new();
    for (i, _) in lib.match_indices("pub use ") {
        let rest = &lib[i + "pub use ".len()..];
        let rest = rest.split(';').next().unwrap_or("");
        if let Some((_, alias)) = rest.split_once(" as ") {
            names.insert(alias.trim().to_string());
        } else if let Some((_, group)) = rest.split_once('{') {
            for n in group.trim_end_matches('}').split(',') {
                names.insert(n.trim().to_string());
            }
        }
    }
    names.remove("");
    names
}

#[test]
fn modules_use_only_lower_layers() {
    let doc = std::fs::read_to_string(DESIGN).unwrap();
    let ranks = ranks(&doc);
    let allowed_up = exceptions(&doc);
    let mut files = Vec::new();
    rust_files(Path::new(SRC), &mut files);
    files.sort();

    let mut violations = Vec::new();
    let mut used_exceptions = BTreeSet::new();
    let mut seen_modules = BTreeSet::new();
    for file in &files {
        let Some(from) = top_module(file) else {
            continue;
        };
        seen_modules.insert(from.clone());
        let Some(&from_rank) = ranks.get(&from) else {
            violations.push(format!(
                "{from}: not in the layering table of docs/design.md"
            ));
            continue;
        };
        let text = std::fs::read_to_string(file).unwrap();
        for (line, to) in crate_paths(&text) {
            if to == from {
                continue;
            }
            let Some(&to_rank) = ranks.get(&to) else {
                violations.push(format!(
                    "{}:{line}: crate::{to} is not in the table",
                    file.display()
                ));
                continue;
            };
            if to_rank < from_rank {
                continue;
            }
            let arrow = (from.clone(), to.clone());
            if allowed_up.contains(&arrow) {
                used_exceptions.insert(arrow);
            } else {
                violations.push(format!(
                    "{}:{line}: {from} (rank {from_rank}) uses {to} (rank {to_rank})",
                    file.strip_prefix(SRC).unwrap().display()
                ));
            }
        }
    }
    let below = reexported();
    for module in ranks.keys() {
        if !seen_modules.contains(module) && !below.contains(module) {
            violations.push(format!(
                "{module}: in the table but neither in src/ nor re-exported by lib.rs"
            ));
        }
    }
    for module in &below {
        if ranks.get(module) != Some(&0) {
            violations.push(format!(
                "{module}: re-exported from a crate below the agent, so rank 0 in the table"
            ));
        }
    }
    for (a, b) in allowed_up.difference(&used_exceptions) {
        violations.push(format!(
            "exception `{a} -> {b}` is no longer needed: remove it from docs/design.md"
        ));
    }
    assert!(
        violations.is_empty(),
        "layering violations:\n{}",
        violations.join("\n")
    );
}

#[test]
fn the_scanner_sees_grouped_and_inline_paths() {
    let found = crate_paths(
        "use crate::{agent::Agent, net};\nlet x = crate::tables::X; // crate::cli\n\
         use crate::{\n    vm::Context,\n    report,\n};\nlet y = hprof_rs::sink::Job; my_crate::z;\n",
    );
    let got: Vec<(usize, &str)> = found.iter().map(|(l, n)| (*l, n.as_str())).collect();
    assert_eq!(
        got,
        [
            (1, "agent"),
            (1, "net"),
            (2, "tables"),
            (4, "vm"),
            (5, "report"),
            (7, "sink")
        ]
    );
}
