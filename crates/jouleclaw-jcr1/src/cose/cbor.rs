//! The CBOR heads the COSE profile writes and reads: shortest form only (RFC 8949 section
//! 4.2.1), definite lengths only. One writer ([`head`], [`int`], [`string`]) and one reader
//! ([`Reader`]) for every structure of the profile (receipts, documents, the seal's envelope
//! and its RFC 9942 proofs).

use coset::cbor::value::Value;

/// Appends a head of major type `major` with argument `n`, in its shortest form.
pub fn head(out: &mut Vec<u8>, major: u8, n: u64) {
    let m = major << 5;
    if n < 24 {
        out.push(m | n as u8);
    } else if n <= 0xff {
        out.extend_from_slice(&[m | 24, n as u8]);
    } else if n <= 0xffff {
        out.push(m | 25);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else if n <= 0xffff_ffff {
        out.push(m | 26);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    } else {
        out.push(m | 27);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

/// Appends an integer (major type 0 for `v >= 0`, 1 otherwise).
pub fn int(out: &mut Vec<u8>, v: i64) {
    if v >= 0 {
        head(out, 0, v.unsigned_abs());
    } else {
        head(out, 1, (-1 - v).unsigned_abs());
    }
}

/// Appends a byte string (`major` 2) or text string (`major` 3).
pub fn string(out: &mut Vec<u8>, major: u8, b: &[u8]) {
    head(out, major, b.len() as u64);
    out.extend_from_slice(b);
}

/// A reader of CBOR heads over a byte slice: every method returns `None`, and may have
/// consumed part of the input, when the next bytes are not what it reads. Heads are taken in
/// their shortest form only, so what a reader parses re-encodes to exactly its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    /// A reader at the start of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { rest: bytes }
    }

    /// What is left to read.
    pub fn rest(&self) -> &'a [u8] {
        self.rest
    }

    /// `true` when everything has been read.
    pub fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    /// The literal bytes `lit` next.
    pub fn lit(&mut self, lit: &[u8]) -> Option<()> {
        self.rest = self.rest.strip_prefix(lit)?;
        Some(())
    }

    /// The next `n` bytes.
    pub fn take(&mut self, n: u64) -> Option<&'a [u8]> {
        let (taken, rest) = self.rest.split_at_checked(usize::try_from(n).ok()?)?;
        self.rest = rest;
        Some(taken)
    }

    /// The argument of a head of major type `major` in its shortest form.
    pub fn head(&mut self, major: u8) -> Option<u64> {
        let (&first, rest) = self.rest.split_first()?;
        if first >> 5 != major {
            return None;
        }
        let (n, rest) = match first & 0x1f {
            n @ 0..=23 => (u64::from(n), rest),
            n @ 24..=27 => {
                let (arg, rest) = rest.split_at_checked(1usize << (n - 24))?;
                (
                    arg.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b)),
                    rest,
                )
            }
            _ => return None,
        };
        let shortest = match first & 0x1f {
            24 => n >= 24,
            25 => n > 0xff,
            26 => n > 0xffff,
            27 => n > 0xffff_ffff,
            _ => true,
        };
        if !shortest {
            return None;
        }
        self.rest = rest;
        Some(n)
    }

    /// The contents of a byte string (`major` 2) or text string (`major` 3).
    pub fn string(&mut self, major: u8) -> Option<&'a [u8]> {
        let n = self.head(major)?;
        self.take(n)
    }
}

/// The one well-formed CBOR data item that is all of `bytes` (the general reader behind the
/// profile's refusals), `None` for anything else.
pub fn read_value(bytes: &[u8]) -> Option<Value> {
    let mut r: &[u8] = bytes;
    let v: Value = coset::cbor::de::from_reader(&mut r).ok()?;
    r.is_empty().then_some(v)
}

/// An integer value, whatever its major type.
pub fn int_of(v: &Value) -> Option<i128> {
    match v {
        Value::Integer(i) => Some(i128::from(*i)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_are_shortest_form_and_read_back() {
        for (n, want) in [
            (0u64, vec![0x40]),
            (23, vec![0x57]),
            (24, vec![0x58, 24]),
            (255, vec![0x58, 0xff]),
            (256, vec![0x59, 0x01, 0x00]),
            (65_535, vec![0x59, 0xff, 0xff]),
            (65_536, vec![0x5a, 0x00, 0x01, 0x00, 0x00]),
            (u64::from(u32::MAX), vec![0x5a, 0xff, 0xff, 0xff, 0xff]),
            (
                u64::from(u32::MAX) + 1,
                vec![0x5b, 0, 0, 0, 0x01, 0, 0, 0, 0],
            ),
        ] {
            let mut out = Vec::new();
            head(&mut out, 2, n);
            assert_eq!(out, want, "{n}");
            let mut r = Reader::new(&out);
            assert_eq!(r.head(2), Some(n));
            assert!(r.is_empty());
            assert_eq!(Reader::new(&out).head(3), None, "another major type");
        }
    }

    #[test]
    fn integers_take_their_major_type() {
        for (v, want) in [
            (0i64, vec![0x00]),
            (1, vec![0x01]),
            (-1, vec![0x20]),
            (-8, vec![0x27]),
            (395, vec![0x19, 0x01, 0x8b]),
            (-65_537, vec![0x3a, 0x00, 0x01, 0x00, 0x00]),
            (
                i64::MIN,
                vec![0x3b, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
            ),
        ] {
            let mut out = Vec::new();
            int(&mut out, v);
            assert_eq!(out, want, "{v}");
        }
    }

    #[test]
    fn read_value_takes_exactly_one_item() {
        assert_eq!(read_value(&[0x27]).as_ref().and_then(int_of), Some(-8));
        assert_eq!(read_value(&[0x27, 0x00]), None, "bytes after the item");
        assert_eq!(read_value(&[0x43, 1]), None, "a short string");
        assert_eq!(read_value(&[0x40]).as_ref().and_then(int_of), None);
    }

    #[test]
    fn read_value_refuses_declared_lengths_the_input_does_not_hold_without_allocating_them() {
        // An array, a map, a byte string and a text string declaring 2^60 items or bytes in a
        // 9-byte head: refused as short input, never allocated by the declared size (that would
        // abort the process). Deep nesting past the reader's limit is refused, not recursed.
        for major in [0x9bu8, 0xbb, 0x5b, 0x7b] {
            let item = [major, 0x10, 0, 0, 0, 0, 0, 0, 0];
            assert_eq!(read_value(&item), None, "{major:#04x}");
        }
        // Accepted neighbour: the same long head declaring the one item that follows (the
        // general reader takes any head; the profile's byte comparison refuses it later).
        assert!(read_value(&[0x9b, 0, 0, 0, 0, 0, 0, 0, 1, 0x00]).is_some());
        let deep = [vec![0x81u8; 100_000], vec![0x00]].concat();
        assert_eq!(read_value(&deep), None);
    }

    #[test]
    fn the_reader_refuses_longer_heads_and_short_input() {
        // 5 in a one-byte argument: not the shortest form.
        assert_eq!(Reader::new(&[0x58, 5, 0, 0, 0, 0, 0]).string(2), None);
        // 256 in a four-byte argument.
        assert_eq!(Reader::new(&[0x1a, 0, 0, 1, 0]).head(0), None);
        assert_eq!(Reader::new(&[0x19, 1, 0]).head(0), Some(256));
        // Indefinite length and reserved values.
        assert_eq!(Reader::new(&[0x5f]).head(2), None);
        assert_eq!(Reader::new(&[0x5c]).head(2), None);
        // A string longer than the input.
        assert_eq!(Reader::new(&[0x43, 1, 2]).string(2), None);
        let mut r = Reader::new(&[0x43, 1, 2, 3, 0xa0]);
        assert_eq!(r.string(2), Some(&[1u8, 2, 3][..]));
        assert_eq!(r.lit(&[0xa1]), None);
        assert_eq!(r.lit(&[0xa0]), Some(()));
        assert!(r.is_empty());
    }
}
