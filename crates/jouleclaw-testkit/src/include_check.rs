//! No crate of the repository includes a file from outside its own folder: every
//! `include_str!`, `include_bytes!` and `include!` in a `.rs` file of `crates/*/`,
//! `bindings/*/` and `fuzz/` names a path inside that crate, so that the crate builds alone (a
//! packaged crate holds only its folder). Tests read the repository's shared files at run time
//! through [`crate::repo`] instead.

use std::path::{Component, Path, PathBuf};

const MACROS: [&str; 3] = ["include_str!(", "include_bytes!(", "include!("];

/// The folders of the repository's crates: each folder of `crates/` and `bindings/` with a
/// `Cargo.toml`, and `fuzz/`.
fn crate_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![root.join("fuzz")];
    for parent in ["crates", "bindings"] {
        let Ok(entries) = std::fs::read_dir(root.join(parent)) else {
            continue;
        };
        dirs.extend(entries.filter_map(|e| Some(e.ok()?.path())));
    }
    dirs.retain(|d| d.join("Cargo.toml").is_file());
    dirs.sort();
    dirs
}

/// The `.rs` files under `dir`, outside build outputs (`target/`).
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let p = entry.path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != "target") {
                rust_files(&p, out);
            }
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// `p` with its `.` and `..` components resolved without touching the file system.
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The first string literal of `s` after optional blanks (no escapes in include paths).
fn literal(s: &str) -> Option<&str> {
    let s = s.trim_start().strip_prefix('"')?;
    Some(&s[..s.find('"')?])
}

/// Each include of `text` (the file `file` of the crate at `crate_dir`) whose path leaves
/// the crate's folder, as `shown:line: the macro and the path`. A path is a string literal,
/// relative to the including file, or `concat!(env!("CARGO_MANIFEST_DIR"), "...")`, relative
/// to the crate; any other argument (such as a path under `OUT_DIR`) is not looked at.
fn leaving(crate_dir: &Path, file: &Path, shown: &Path, text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut at = 0;
    while let Some((i, m)) = MACROS
        .iter()
        .filter_map(|m| Some((at + text[at..].find(m)?, *m)))
        .min()
    {
        at = i + m.len();
        let line_start = text[..i].rfind('\n').map_or(0, |n| n + 1);
        if text[line_start..i].trim_start().starts_with("//") {
            continue;
        }
        let rest = &text[at..];
        let (written, target) = if let Some(lit) = literal(rest) {
            (format!("\"{lit}\""), file.parent().map(|d| d.join(lit)))
        } else {
            let args = rest.trim_start();
            let lit = args
                .strip_prefix("concat!(")
                .map(str::trim_start)
                .and_then(|a| a.strip_prefix("env!(\"CARGO_MANIFEST_DIR\")"))
                .and_then(|a| literal(a.trim_start().strip_prefix(',')?));
            (
                format!(
                    "concat!(env!(\"CARGO_MANIFEST_DIR\"), \"{}\")",
                    lit.unwrap_or("")
                ),
                lit.map(|lit| crate_dir.join(lit.trim_start_matches('/'))),
            )
        };
        if let Some(target) = target
            && !normalize(&target).starts_with(normalize(crate_dir))
        {
            let line = text[..i].matches('\n').count() + 1;
            found.push(format!("{}:{line}: {m}{written})", shown.display()));
        }
    }
    found
}

/// Every include of a `.rs` file of the repository at `root` whose path leaves its crate.
fn includes_leaving_their_crate(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for dir in crate_dirs(root) {
        let mut files = Vec::new();
        rust_files(&dir, &mut files);
        files.sort();
        for f in files {
            let text = std::fs::read_to_string(&f)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", f.display()));
            found.extend(leaving(&dir, &f, f.strip_prefix(root).unwrap_or(&f), &text));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_crate_includes_a_file_from_outside_its_folder() {
        let root = crate::repo::root().expect("this crate is inside the repository");
        let dirs = crate_dirs(root);
        assert!(
            dirs.len() >= 10 && dirs.contains(&root.join("crates/jouleclaw-testkit")),
            "{dirs:?}"
        );
        let found = includes_leaving_their_crate(root);
        assert!(
            found.is_empty(),
            "these includes leave their crate's folder (read the repository's shared files \
             through jouleclaw_testkit::repo instead):\n{}",
            found.join("\n")
        );
    }

    #[test]
    fn an_include_that_leaves_the_crate_is_found_and_one_inside_is_not() {
        let t = crate::TempDir::new("include-check");
        let c = t.path("crates/c");
        std::fs::create_dir_all(c.join("tests/it")).expect("folders");
        std::fs::write(c.join("Cargo.toml"), "[package]\n").expect("manifest");
        let inside = "const A: &str = include_str!(\"../../schemas/a.json\");\n\
            const B: &[u8] = include_bytes!(concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/data/b\"));\n\
            // const C: &str = include_str!(\"../../../../conformance/c.json\");\n";
        std::fs::write(c.join("tests/it/ok.rs"), inside).expect("file");
        assert_eq!(includes_leaving_their_crate(t.dir()), Vec::<String>::new());
        let outside = "fn f() {}\n\
            const A: &str = include_str!(\n    \"../../../../conformance/a.json\"\n);\n\
            const B: &[u8] = include_bytes!(concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/../../b\"));\n\
            include!(\"../../../x.rs\");\n";
        std::fs::write(c.join("tests/it/bad.rs"), outside).expect("file");
        let found = includes_leaving_their_crate(t.dir());
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(
            found[0].starts_with("crates/c/tests/it/bad.rs:2: include_str!("),
            "{found:?}"
        );
        assert!(
            found[1].starts_with("crates/c/tests/it/bad.rs:5: include_bytes!("),
            "{found:?}"
        );
        assert!(
            found[2].starts_with("crates/c/tests/it/bad.rs:6: include!("),
            "{found:?}"
        );
    }
}
