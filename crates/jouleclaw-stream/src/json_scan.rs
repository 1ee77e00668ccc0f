//! The JSON string scanning every strict decoder and canonical writer of the stack shares:
//! which bytes stand in a JSON string as themselves, and how long a run of them is, eight
//! bytes at a time. The receipts' strict decoder (`jouleclaw-jcr1`), the structured-output
//! validator and its schema reader (`jouleclaw-structured`) and the canonical string writer
//! ([`crate::canon::write_str`]) scan with these.

/// The bytes that stand for themselves inside a JSON string and are ASCII: 0x20-0x7F but `"`
/// and backslash. (Anything else is a quote, an escape, a control byte a decoder refuses, or
/// part of a UTF-8 sequence a decoder checks.)
pub const PLAIN: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0x20;
    while b < 0x80 {
        table[b] = b != b'"' as usize && b != b'\\' as usize;
        b += 1;
    }
    table
};

/// Length of the run of [`PLAIN`] bytes at the start of `s`.
#[inline]
pub fn plain_run(s: &[u8]) -> usize {
    run::<true>(s)
}

/// Length of the run at the start of `s` of bytes a canonical string writes as themselves:
/// none below 0x20, no `"`, no backslash (bytes from 0x80 up pass: JCR-1 writes non-ASCII as
/// UTF-8). In a well-formed JSON text, inside a string, this is the distance to the next `"`
/// or backslash.
#[inline]
pub fn unescaped_run(s: &[u8]) -> usize {
    run::<false>(s)
}

/// The two runs, eight bytes at a time. In a little-endian word, `special` flags the high bit
/// of every byte that ends the run: below 0x20 (`x - 0x20` borrows and the byte's high bit is
/// clear), `"` or backslash (the byte XOR it is zero), and, when `ASCII`, the high bit set. The
/// subtractions can also flag a byte *above* a flagged one (a borrow), never one below it, so the
/// lowest flag is exactly the first byte that ends the run. Fewer than eight bytes left go one at
/// a time.
#[inline(always)]
fn run<const ASCII: bool>(s: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut n = 0;
    for eight in s.chunks_exact(8) {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(eight);
        let word = u64::from_le_bytes(bytes);
        let quote = word ^ (ONES * u64::from(b'"'));
        let bslash = word ^ (ONES * u64::from(b'\\'));
        let mut special = (word.wrapping_sub(ONES * 0x20) & !word)
            | (quote.wrapping_sub(ONES) & !quote)
            | (bslash.wrapping_sub(ONES) & !bslash);
        if ASCII {
            special |= word;
        }
        special &= HIGH;
        if special != 0 {
            return n + (special.trailing_zeros() / 8) as usize;
        }
        n += 8;
    }
    let rest = s.get(n..).unwrap_or_default();
    n + rest
        .iter()
        .position(|&c| {
            if ASCII {
                !PLAIN[usize::from(c)]
            } else {
                c < 0x20 || c == b'"' || c == b'\\'
            }
        })
        .unwrap_or(rest.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ends_unescaped(c: u8) -> bool {
        c < 0x20 || c == b'"' || c == b'\\'
    }

    /// The rules the runs replace: one byte at a time.
    fn plain_bytewise(s: &[u8]) -> usize {
        s.iter()
            .position(|&c| !PLAIN[usize::from(c)])
            .unwrap_or(s.len())
    }

    fn unescaped_bytewise(s: &[u8]) -> usize {
        s.iter().position(|&c| ends_unescaped(c)).unwrap_or(s.len())
    }

    #[test]
    fn plain_is_printable_ascii_without_quote_and_backslash() {
        for b in 0..=255u8 {
            let expected = (0x20..=0x7f).contains(&b) && b != b'"' && b != b'\\';
            assert_eq!(PLAIN[usize::from(b)], expected, "{b:#04x}");
        }
    }

    #[test]
    fn the_runs_match_their_rules_for_every_byte_at_every_position() {
        for b in 0..=255u8 {
            for len in [1, 7, 8, 9, 15, 16, 17, 24] {
                for at in 0..len {
                    let mut s = vec![b'a'; len];
                    s[at] = b;
                    assert_eq!(plain_run(&s), plain_bytewise(&s), "{b:#04x} at {at}/{len}");
                    assert_eq!(
                        unescaped_run(&s),
                        unescaped_bytewise(&s),
                        "{b:#04x} at {at}/{len}"
                    );
                    // A second special byte after the first must not move the answer.
                    s.push(b'"');
                    assert_eq!(plain_run(&s), plain_bytewise(&s), "{b:#04x} at {at}/{len}+");
                    assert_eq!(
                        unescaped_run(&s),
                        unescaped_bytewise(&s),
                        "{b:#04x} at {at}/{len}+"
                    );
                }
            }
        }
    }

    proptest! {
        #[test]
        fn the_runs_match_their_rules(s in proptest::collection::vec(any::<u8>(), 0..40)) {
            prop_assert_eq!(plain_run(&s), plain_bytewise(&s));
            prop_assert_eq!(unescaped_run(&s), unescaped_bytewise(&s));
        }

        #[test]
        fn the_runs_match_their_rules_on_mostly_plain_input(
            s in proptest::collection::vec(prop_oneof![8 => 0x20u8..0x7f, 1 => any::<u8>()], 0..40)
        ) {
            prop_assert_eq!(plain_run(&s), plain_bytewise(&s));
            prop_assert_eq!(unescaped_run(&s), unescaped_bytewise(&s));
        }
    }
}
