//! An escaped stream id has one spelling: `unescape_id` takes only what `escape_id` writes,
//! so no two folder names or subjects stand for one stream id.

#![allow(clippy::unwrap_used)]

use jouleclaw_live::{escape_id, unescape_id};

/// `%` must be followed by two upper-case hex digits. A sign is no hex digit: `%+A` (which
/// `u8::from_str_radix` reads as 10) is refused, so `call%+A` is not a second spelling of
/// the id `escape_id` writes as `call%0A`.
#[test]
fn a_sign_after_the_percent_is_no_hex_digit() {
    for token in ["call%+A", "call%+0", "%+F", "x%+9y"] {
        assert_eq!(unescape_id(token), None, "{token}");
    }
    // Accepted neighbour: the one spelling of the same id.
    assert_eq!(escape_id("call\n"), "call%0A");
    assert_eq!(unescape_id("call%0A").as_deref(), Some("call\n"));
    assert_eq!(unescape_id("x%09y").as_deref(), Some("x\ty"));
}

/// A stream folder named with such a spelling is `malformed_name`, as any name `escape_id`
/// cannot have written; the canonical name is not.
#[test]
fn a_folder_named_with_a_second_spelling_is_a_malformed_name() {
    use jouleclaw_jcr1::cose::Signer as _;
    let key = jouleclaw_jcr1::cose::SoftwareSigner::rfc8032_test_key().verifying_key();
    let dir = tempfile::tempdir().unwrap();
    let malformed = |name: &str| {
        let p = dir.path().join(name);
        std::fs::create_dir(&p).unwrap();
        let audit = jouleclaw_live::audit::audit_stream_dir(&p, &valid(&key)).unwrap();
        audit
            .lines()
            .iter()
            .any(|p| p.starts_with("malformed_name:"))
    };
    assert!(malformed("call%+A"));
    assert!(!malformed("call%0A"));
}

/// `key` checked once by the one key rule, as every caller of the auditor checks it.
fn valid(key: &jouleclaw_jcr1::cose::PublicKey) -> jouleclaw_jcr1::cose::ValidKey {
    jouleclaw_jcr1::cose::ValidKey::new(*key).unwrap()
}
