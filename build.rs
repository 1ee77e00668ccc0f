//! Records the git revision the `jouleclaw` command was built from, when the source is a git
//! checkout (`JOULECLAW_GIT_REV`, empty otherwise), for `jouleclaw replay --json`'s provenance.

fn main() {
    let rev = if std::path::Path::new(".git").exists() {
        std::process::Command::new("git")
            .args(["rev-parse", "HEAD"])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .map(|s| s.trim().to_owned())
            .unwrap_or_default()
    } else {
        String::new()
    };
    println!("cargo:rustc-env=JOULECLAW_GIT_REV={rev}");
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/refs");
}
