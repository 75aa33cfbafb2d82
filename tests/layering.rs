//! The layering rule of docs/design.md ("Allowed imports"): a module of
//! `src/` uses only modules of a lower rank. The table and the list of
//! exceptions are read from that document, so the rule is written once.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const DESIGN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/design.md");
const SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src");

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

/// The top-level module a file belongs to (`src/agent/mod.rs` -> agent).
fn top_module(file: &Path) -> Option<String> {
    let rel = file.strip_prefix(SRC).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    match first {
        "lib.rs" => None,
        "bin" => Some("cli".into()), // the tool's entry point
        f => Some(f.trim_end_matches(".rs").to_string()),
    }
}

/// Every `crate::name` in code (comments removed), with its line number.
fn crate_paths(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(i) = rest.find("crate::") {
            let after = &rest[i + "crate::".len()..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if after.starts_with('{') {
                // `use crate::{a::X, b}`: every name opening a group item.
                let group = after[1..].split('}').next().unwrap_or("");
                for item in group.split(',') {
                    let head = item.trim().split("::").next().unwrap_or("").trim();
                    if !head.is_empty() {
                        out.push((n + 1, head.to_string()));
                    }
                }
            } else if !name.is_empty() {
                out.push((n + 1, name));
            }
            rest = after;
        }
    }
    out
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
    for module in ranks.keys() {
        if !seen_modules.contains(module) {
            violations.push(format!("{module}: in the table but not in src/"));
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
    let found =
        crate_paths("use crate::{agent::Agent, net};\nlet x = crate::tables::X; // crate::cli\n");
    let names: Vec<&str> = found.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(names, ["agent", "net", "tables"]);
}
