//! Canonical JSON (JCR-1) writing primitives.
//!
//! JCR-1 is the RFC 8785 (JCS) subset fixed in `spec/ARCHITECTURE.md`: integers only, in
//! `[-(2^53-1), 2^53-1]`; strings escaped exactly as JCS escapes them; object keys sorted and
//! unique; no whitespace. These primitives write directly into a byte buffer. Callers write the
//! keys of each object in ascending byte order themselves; every encoder built on them is
//! cross-checked against an independent reference in tests.
//!
//! They live in the lowest crate of the stack because the window hash (this crate), the verdict
//! wire forms (`jouleclaw-stream-oracle`) and the receipts (`jouleclaw-jcr1`) all need the same
//! bytes.

/// The largest magnitude an integer may have in canonical JSON: `2^53 - 1`.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// An integer that canonical JSON cannot carry (its magnitude exceeds `2^53 - 1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnsafeInteger {
    /// The value that was refused, widened to `i128` so both signs fit.
    pub value: i128,
}

impl core::fmt::Display for UnsafeInteger {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "integer {} is outside +-(2^53-1)", self.value)
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends `s` as a canonical JSON string (with quotes).
///
/// `"` and `\` are escaped as `\"` and `\\`; U+0008, U+0009, U+000A, U+000C, U+000D use their
/// short forms; every other character below U+0020 is written as `\u00xx` with lowercase hex;
/// everything else (including `/`, DEL, U+2028/U+2029 and all non-ASCII) is written as literal
/// UTF-8.
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut i = 0;
    // Runs written as they are, found eight bytes at a time; each byte that ends one escaped.
    while let Some(rest) = bytes.get(i..) {
        let run = crate::json_scan::unescaped_run(rest);
        out.extend_from_slice(rest.get(..run).unwrap_or_default());
        i += run;
        let Some(&b) = bytes.get(i) else { break };
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x09 => out.extend_from_slice(b"\\t"),
            0x0a => out.extend_from_slice(b"\\n"),
            0x0c => out.extend_from_slice(b"\\f"),
            0x0d => out.extend_from_slice(b"\\r"),
            _ => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0x0f)],
            ]),
        }
        i += 1;
    }
    out.push(b'"');
}

/// Appends an unsigned integer, refusing values above [`MAX_SAFE_INTEGER`].
pub fn write_u64(out: &mut Vec<u8>, n: u64) -> Result<(), UnsafeInteger> {
    if n > MAX_SAFE_INTEGER {
        return Err(UnsafeInteger {
            value: i128::from(n),
        });
    }
    write_digits(out, n);
    Ok(())
}

/// Appends a signed integer, refusing magnitudes above [`MAX_SAFE_INTEGER`]. Zero is `0`, never
/// `-0`.
pub fn write_i64(out: &mut Vec<u8>, n: i64) -> Result<(), UnsafeInteger> {
    if n.unsigned_abs() > MAX_SAFE_INTEGER {
        return Err(UnsafeInteger {
            value: i128::from(n),
        });
    }
    if n < 0 {
        out.push(b'-');
    }
    write_digits(out, n.unsigned_abs());
    Ok(())
}

/// Appends `n` in decimal without sign. Safe integers have at most 16 digits.
fn write_digits(out: &mut Vec<u8>, mut n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

/// Appends `bytes` as a JSON string of lowercase hex digits.
pub fn write_hex_str(out: &mut Vec<u8>, bytes: &[u8]) {
    out.reserve(bytes.len() * 2 + 2);
    out.push(b'"');
    for &b in bytes {
        out.push(HEX[usize::from(b >> 4)]);
        out.push(HEX[usize::from(b & 0x0f)]);
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: &str) -> String {
        let mut out = Vec::new();
        write_str(&mut out, x);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn escapes_follow_rfc8785() {
        assert_eq!(s("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(s("\u{8}\u{9}\n\u{c}\r"), r#""\b\t\n\f\r""#);
        assert_eq!(s("\u{0}\u{1f}\u{b}"), r#""\u0000\u001f\u000b""#);
        // `/`, DEL, U+2028 and non-ASCII stay literal.
        assert_eq!(s("/\u{7f}\u{2028}é😀"), "\"/\u{7f}\u{2028}é😀\"");
    }

    #[test]
    fn integers_at_and_past_the_bound() {
        let mut out = Vec::new();
        write_u64(&mut out, MAX_SAFE_INTEGER).unwrap();
        assert_eq!(out, b"9007199254740991");
        assert!(write_u64(&mut out, MAX_SAFE_INTEGER + 1).is_err());
        out.clear();
        write_i64(&mut out, -(MAX_SAFE_INTEGER as i64)).unwrap();
        assert_eq!(out, b"-9007199254740991");
        assert!(write_i64(&mut out, -(MAX_SAFE_INTEGER as i64) - 1).is_err());
        assert!(write_i64(&mut out, i64::MIN).is_err());
        out.clear();
        write_i64(&mut out, 0).unwrap();
        write_u64(&mut out, 0).unwrap();
        assert_eq!(out, b"00");
    }

    #[test]
    fn strings_match_serde_json_independent_escaper() {
        // serde_json escapes exactly the same set with the same short forms; it is an
        // independent implementation of the rule.
        for cp in (0u32..0x250).chain([0x2028, 0x2029, 0xfeff, 0x1f600]) {
            let Some(c) = char::from_u32(cp) else {
                continue;
            };
            let text = format!("x{c}y");
            assert_eq!(
                s(&text),
                serde_json::to_string(&text).unwrap(),
                "U+{cp:04X}"
            );
        }
    }

    #[test]
    fn hex_is_lowercase() {
        let mut out = Vec::new();
        write_hex_str(&mut out, &[0x00, 0xab, 0xff]);
        assert_eq!(out, b"\"00abff\"");
    }

    /// The rule the runs serve: every byte looked at alone, escaped as RFC 8785 escapes it.
    fn write_str_bytewise(out: &mut Vec<u8>, s: &str) {
        out.push(b'"');
        for &b in s.as_bytes() {
            match b {
                b'"' => out.extend_from_slice(b"\\\""),
                b'\\' => out.extend_from_slice(b"\\\\"),
                0x08 => out.extend_from_slice(b"\\b"),
                0x09 => out.extend_from_slice(b"\\t"),
                0x0a => out.extend_from_slice(b"\\n"),
                0x0c => out.extend_from_slice(b"\\f"),
                0x0d => out.extend_from_slice(b"\\r"),
                0..0x20 => out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
                _ => out.push(b),
            }
        }
        out.push(b'"');
    }

    fn both(x: &str) -> (Vec<u8>, Vec<u8>) {
        let (mut runs, mut bytewise) = (b"x".to_vec(), b"x".to_vec());
        write_str(&mut runs, x);
        write_str_bytewise(&mut bytewise, x);
        (runs, bytewise)
    }

    /// Every ASCII character and a few others, alone at every position of strings up to 19
    /// bytes long (across both eight-byte words and the tail), is written as the bytewise rule
    /// writes it.
    #[test]
    fn runs_write_what_the_bytewise_rule_writes() {
        let chars = (0u8..0x80).map(char::from).chain([
            '\u{80}',
            '\u{e9}',
            '\u{2028}',
            '\u{ffff}',
            '\u{10000}',
        ]);
        for c in chars {
            for len in 0..20 {
                for at in 0..=len {
                    let mut x: String = "a".repeat(at);
                    x.push(c);
                    x.push_str(&"b".repeat(len - at));
                    let (runs, bytewise) = both(&x);
                    assert_eq!(runs, bytewise, "{c:?} at {at} of {len}");
                }
            }
        }
        assert_eq!(both("a\"b\\c\u{1f}d").0, b"x\"a\\\"b\\\\c\\u001fd\"");
    }

    proptest::proptest! {
        #[test]
        fn runs_match_the_bytewise_rule(x in "\\PC*|[\\x00-\\x7f]{0,40}") {
            let (runs, bytewise) = both(&x);
            proptest::prop_assert_eq!(runs, bytewise);
        }
    }
}
