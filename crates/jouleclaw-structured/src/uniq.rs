//! `uniqueItems`: the elements of the open `uniqueItems: true` arrays, each kept as one
//! canonical text that is equal for values JSON Schema calls equal.
//!
//! A validator of a grammar with such an array keeps the document's bytes from the start of
//! the outermost open one (at most `max_document_bytes`). When an element ends (at the `,` or
//! `]` after it) its text is read into its canonical form and looked up among the array's
//! earlier elements (a hash set): a repeat is `duplicate_item`. Each array holds at most
//! `max_array_items` forms; a form is at most 5 bytes per byte of the element's text
//! (`""` and `1` are the worst), so the forms of one array are bounded by 5 x
//! `max_document_bytes`, and a byte of the document is in at most one form per open
//! `uniqueItems` array around it (at most `max_depth`).

use std::collections::HashSet;

use crate::decimal;

/// One open `uniqueItems` array.
#[derive(Debug, Clone)]
pub(crate) struct Open {
    /// The validator's stack depth with the array's frame on top.
    pub(crate) depth: usize,
    /// The document offset after the `[` or `,` before the element being read.
    pub(crate) from: u64,
    /// The canonical forms of the elements so far.
    seen: HashSet<Box<[u8]>>,
}

/// The document's bytes since the outermost open `uniqueItems` array began (or since the
/// chunk being read began), and the open arrays, innermost last.
#[derive(Debug, Clone, Default)]
pub(crate) struct Unique {
    /// Bytes of the document from offset `base` on.
    pub(crate) doc: Vec<u8>,
    pub(crate) base: u64,
    pub(crate) open: Vec<Open>,
}

impl Unique {
    /// An array opened with its `[` at document offset `at`, the stack `depth` deep.
    pub(crate) fn open(&mut self, depth: usize, at: u64) {
        self.open.push(Open {
            depth,
            from: at + 1,
            seen: HashSet::new(),
        });
    }

    /// The innermost open array, if its frame is the stack's top (`depth` deep).
    fn top(&mut self, depth: usize) -> Option<&mut Open> {
        self.open.last_mut().filter(|o| o.depth == depth)
    }

    /// The element of the array on top of a `depth`-deep stack ended before the `,` or `]`
    /// at document offset `at`: `Ok(work)` (the bytes of its text) when no earlier element
    /// equals it, `Err(())` when one does. `None` when that array is not a `uniqueItems` one.
    pub(crate) fn element(&mut self, depth: usize, at: u64) -> Option<Result<u64, ()>> {
        let base = self.base;
        let o = self.open.last_mut().filter(|o| o.depth == depth)?;
        let lo = usize::try_from(o.from.saturating_sub(base)).unwrap_or(usize::MAX);
        let hi = usize::try_from(at.saturating_sub(base)).unwrap_or(usize::MAX);
        let text = self.doc.get(lo..hi).unwrap_or_default();
        let mut form = Vec::with_capacity(text.len() + 4);
        Reader { t: text, i: 0 }.value(&mut form);
        o.from = at + 1;
        Some(if o.seen.insert(form.into_boxed_slice()) {
            Ok(text.len() as u64)
        } else {
            Err(())
        })
    }

    /// The array on top of a `depth`-deep stack closed.
    pub(crate) fn close(&mut self, depth: usize) {
        if self.top(depth).is_some() {
            self.open.pop();
        }
    }
}

/// A reader of one valid JSON value (the validator read it already) into its canonical form:
/// `n`, `t`, `f`; a number `d` + [`decimal::canonical`] + `;`; a string `"` + its decoded
/// UTF-8 length (4 bytes, little-endian) + those bytes; an array `[` + its elements + `]`; an
/// object `{` + its members sorted by key (key as a string, then the value) + `}`. Every form
/// ends where it says, so two forms are equal exactly when the values are.
struct Reader<'a> {
    t: &'a [u8],
    i: usize,
}

impl Reader<'_> {
    fn peek(&self) -> u8 {
        self.t.get(self.i).copied().unwrap_or(0)
    }

    fn ws(&mut self) {
        while matches!(self.peek(), b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn value(&mut self, out: &mut Vec<u8>) {
        self.ws();
        match self.peek() {
            b'n' | b't' | b'f' => {
                let b = self.peek();
                out.push(b);
                self.i += if b == b'f' { 5 } else { 4 };
            }
            b'"' => {
                let s = self.string();
                put_str(out, &s);
            }
            b'[' => {
                self.i += 1;
                out.push(b'[');
                self.ws();
                if self.peek() == b']' {
                    self.i += 1;
                } else {
                    loop {
                        self.value(out);
                        self.ws();
                        let b = self.peek();
                        self.i += 1;
                        if b != b',' {
                            break;
                        }
                    }
                }
                out.push(b']');
            }
            b'{' => {
                self.i += 1;
                let mut members: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
                self.ws();
                if self.peek() == b'}' {
                    self.i += 1;
                } else {
                    loop {
                        self.ws();
                        let k = self.string();
                        self.ws();
                        self.i += 1; // the colon
                        let mut v = Vec::new();
                        self.value(&mut v);
                        members.push((k, v));
                        self.ws();
                        let b = self.peek();
                        self.i += 1;
                        if b != b',' {
                            break;
                        }
                    }
                }
                members.sort_unstable_by(|a, b| a.0.cmp(&b.0));
                out.push(b'{');
                for (k, v) in &members {
                    put_str(out, k);
                    out.extend_from_slice(v);
                }
                out.push(b'}');
            }
            _ => {
                let start = self.i;
                while matches!(self.peek(), b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
                    self.i += 1;
                }
                out.push(b'd');
                decimal::canonical(self.t.get(start..self.i).unwrap_or_default(), out);
                out.push(b';');
            }
        }
    }

    /// The decoded bytes of the string at the reader (its opening quote), past its close.
    fn string(&mut self) -> Vec<u8> {
        let mut s = Vec::new();
        self.i += 1;
        while let Some(&b) = self.t.get(self.i) {
            self.i += 1;
            match b {
                b'"' => break,
                b'\\' => {
                    let e = self.peek();
                    self.i += 1;
                    match e {
                        b'b' => s.push(0x08),
                        b'f' => s.push(0x0c),
                        b'n' => s.push(b'\n'),
                        b'r' => s.push(b'\r'),
                        b't' => s.push(b'\t'),
                        b'u' => {
                            let mut cp = self.hex4();
                            if (0xd800..0xdc00).contains(&cp) && self.t.get(self.i) == Some(&b'\\')
                            {
                                self.i += 2;
                                let lo = self.hex4();
                                cp = 0x10000
                                    + ((cp - 0xd800) << 10)
                                    + (lo.wrapping_sub(0xdc00) & 0x3ff);
                            }
                            let c = char::from_u32(cp).unwrap_or(char::REPLACEMENT_CHARACTER);
                            let mut buf = [0u8; 4];
                            s.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                        }
                        other => s.push(other),
                    }
                }
                other => s.push(other),
            }
        }
        s
    }

    fn hex4(&mut self) -> u32 {
        let mut v = 0;
        for _ in 0..4 {
            let d = char::from(self.peek()).to_digit(16).unwrap_or(0);
            v = v * 16 + d;
            self.i += 1;
        }
        v
    }
}

fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    // A string of the document is shorter than `max_document_bytes` (below 2^53); its length
    // fits 4 bytes up to 4 GiB, past any document a validator reads.
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(t: &str) -> Vec<u8> {
        let mut out = Vec::new();
        Reader {
            t: t.as_bytes(),
            i: 0,
        }
        .value(&mut out);
        out
    }

    #[test]
    fn values_json_schema_calls_equal_have_one_form() {
        for (a, b) in [
            (
                r#"{"a":1,"b":[true,null]}"#,
                r#" { "b" : [ true , null ] , "a" : 1.0 } "#,
            ),
            (r#""é""#, r#""\u00e9""#),
            (r#""😀""#, r#""\ud83d\ude00""#),
            (r#""a\"b\\c/""#, r#""a\u0022b\\c\/""#),
            ("[1,2]", "[1e0,20e-1]"),
            ("-0", "0"),
            ("{}", "{ }"),
        ] {
            assert_eq!(form(a), form(b), "{a} vs {b}");
        }
        for (a, b) in [
            ("[1,2]", "[2,1]"),
            ("1", "true"),
            ("0", "false"),
            ("null", r#""null""#),
            (r#"{"a":1}"#, r#"{"a":1,"b":1}"#),
            (r#"["ab"]"#, r#"["a","b"]"#),
            (r#"{"a":"b"}"#, r#"{"ab":""}"#),
            ("[[]]", "[]"),
            ("[]", "{}"),
            ("1", "1.0000000000000000000001"),
        ] {
            assert_ne!(form(a), form(b), "{a} vs {b}");
        }
    }
}
