//! The repository's shared files, read at run time instead of included from outside a crate's
//! folder: the conformance vectors and traces (`conformance/`, which the other languages'
//! verifiers read too), the golden receipts (`examples/golden/`) and the committed fuzz seed
//! corpora (`fuzz/corpus/`).
//!
//! The repository's root is the nearest folder above the running test's crate
//! (`CARGO_MANIFEST_DIR`) that holds `conformance/` and the workspace's `Cargo.toml` naming
//! that crate as a member. Inside the repository every shared file a test reads must be there:
//! an absent one fails the test. A crate built alone (a packaged crate) has no such root; then
//! [`file()`], [`bytes`] and [`path`] print
//! `not run: <file> is not beside this crate (a packaged crate)` to standard error and give
//! `None`, and the test returns without checking anything:
//!
//! ```no_run
//! let Some(text) = jouleclaw_testkit::repo::file("conformance/stream-window-vectors.json") else {
//!     return;
//! };
//! assert!(text.starts_with('{'));
//! ```
//!
//! or, in a test (a function returning `()`), with [`or_not_run!`](crate::or_not_run):
//!
//! ```no_run
//! use jouleclaw_testkit::{or_not_run, repo};
//! let text = or_not_run!(repo::file("conformance/stream-window-vectors.json"));
//! assert!(text.starts_with('{'));
//! ```

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The repository's root above `crate_dir`: the nearest ancestor that holds a `conformance/`
/// folder and a `Cargo.toml` with a `[workspace]` of which `crate_dir` is the root package or
/// a member listed by its relative path.
pub fn root_above(crate_dir: &Path) -> Option<PathBuf> {
    crate_dir.ancestors().find_map(|dir| {
        if !dir.join("conformance").is_dir() {
            return None;
        }
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).ok()?;
        if !manifest.contains("[workspace]") {
            return None;
        }
        let rel = crate_dir.strip_prefix(dir).ok()?;
        let member = rel.to_str()?.replace('\\', "/");
        (member.is_empty() || manifest.contains(&format!("\"{member}\""))).then(|| dir.into())
    })
}

/// The repository's root, found once per process from the running test's crate folder
/// (`CARGO_MANIFEST_DIR` as Cargo sets it when it runs a test, else this crate's folder at
/// build time).
pub fn root() -> Option<&'static Path> {
    static ROOT: OnceLock<Option<PathBuf>> = OnceLock::new();
    ROOT.get_or_init(|| {
        let crate_dir = std::env::var_os("CARGO_MANIFEST_DIR")
            .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
        root_above(&crate_dir)
    })
    .as_deref()
}

/// The path of the repository's file or folder `rel` (a `/`-separated path from the root,
/// such as `conformance/replay`), there or not (a generator may write it); `None`, after the
/// "not run" line on standard error, when the crate is not inside the repository.
pub fn path(rel: &str) -> Option<PathBuf> {
    let Some(root) = root() else {
        eprintln!("not run: {rel} is not beside this crate (a packaged crate)");
        return None;
    };
    Some(root.join(rel))
}

/// The bytes of the repository's file `rel`, as [`path`] finds it; panics when the repository
/// is found but the file cannot be read (a test that names a file that is not there fails).
#[track_caller]
pub fn bytes(rel: &str) -> Option<Vec<u8>> {
    let p = path(rel)?;
    Some(std::fs::read(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display())))
}

/// The text of the repository's file `rel`, as [`path`] finds it; panics when the repository
/// is found but the file cannot be read as text.
#[track_caller]
pub fn file(rel: &str) -> Option<String> {
    let p = path(rel)?;
    Some(std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display())))
}

/// The value of an `Option` of the repository's shared files (from [`file()`], [`bytes`],
/// [`path`] or a test's helper built on them), or a `return` from the enclosing test when it
/// is `None` (a crate built alone; the "not run" line is already printed).
#[macro_export]
macro_rules! or_not_run {
    ($shared:expr) => {
        match $shared {
            ::core::option::Option::Some(v) => v,
            ::core::option::Option::None => return,
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_repository_root_is_found_here_and_holds_the_shared_files() {
        let root = root().expect("this crate is inside the repository");
        assert!(root.join("conformance").is_dir(), "{}", root.display());
        assert_eq!(
            root.join("crates/jouleclaw-testkit"),
            Path::new(env!("CARGO_MANIFEST_DIR"))
        );
        let seed = file("conformance/stream-window-vectors.json").expect("the root is found");
        assert!(seed.trim_start().starts_with('{'), "{seed}");
        assert!(
            bytes("conformance/stream-window-vectors.json").is_some_and(|b| b == seed.as_bytes())
        );
        for dir in [
            "conformance/replay",
            "conformance/traces",
            "examples/golden",
            "fuzz/corpus",
        ] {
            assert!(path(dir).is_some_and(|p| p.is_dir()), "{dir}");
        }
    }

    #[test]
    fn or_not_run_gives_the_value_or_returns() {
        fn first(v: Option<u8>, seen: &mut Vec<u8>) {
            seen.push(crate::or_not_run!(v));
        }
        let mut seen = Vec::new();
        first(Some(7), &mut seen);
        first(None, &mut seen);
        assert_eq!(seen, [7]);
    }

    #[test]
    fn a_file_the_repository_does_not_hold_fails_the_test() {
        let absent = std::panic::catch_unwind(|| file("conformance/no-such-file.json"));
        assert!(absent.is_err());
    }

    #[test]
    fn a_crate_outside_the_repository_or_not_a_member_has_no_root() {
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        let root = root_above(here).expect("inside the repository");
        assert_eq!(root_above(&root), Some(root.clone()));
        // A packaged copy under the repository's own folders is no member of its workspace.
        assert_eq!(
            root_above(&root.join("target/package/jouleclaw-seal-0.1.0")),
            None
        );
        assert_eq!(root_above(&root.join("crates/not-a-member")), None);
        let t = crate::TempDir::new("repo-root");
        assert_eq!(root_above(t.dir()), None);
    }
}
