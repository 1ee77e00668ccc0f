//! What the generators of the stream-seal vector files share.
#![allow(dead_code, clippy::unwrap_used)]

use serde_json::Value;

pub const STREAM_ID: &str = "stream-demo";
pub const STEWARD: &str = "did:keri:EJ9testStewardAID000000000000000";
pub const ENTRY_PREFIX: &str = "jouleclaw stream-seal vector leaf ";

/// Asserts that `conformance/<name>` holds `built` (nothing in a crate built alone); `test`
/// is the test target that rewrites it under `JOULECLAW_REGEN_VECTORS=1`.
pub fn check_generated(name: &str, built: &str, test: &str) {
    jouleclaw_testkit::check_generated(
        jouleclaw_testkit::or_not_run!(jouleclaw_testkit::repo::path(&format!(
            "conformance/{name}"
        ))),
        built,
        &format!("run JOULECLAW_REGEN_VECTORS=1 cargo test -p jouleclaw-seal --test {test}"),
    );
}

/// `entry(i) = BLAKE3("jouleclaw stream-seal vector leaf " + decimal i)`.
pub fn entry(i: u64) -> [u8; 32] {
    *blake3::hash(format!("{ENTRY_PREFIX}{i}").as_bytes()).as_bytes()
}

/// Pretty JSON with a final newline, as the vector files are written.
pub fn pretty(v: &Value) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap();
    s.push('\n');
    s
}
