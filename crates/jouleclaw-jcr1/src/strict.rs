//! The strict canonical-JSON state machine.
//!
//! One byte-at-a-time machine accepts exactly the JCR-1 canonical encoding of a JSON value
//! (`spec/ARCHITECTURE.md`): no whitespace, keys in RFC 8785 order and unique, integers only in
//! `[-(2^53-1), 2^53-1]` in shortest form, strings escaped exactly as RFC 8785 escapes them,
//! valid UTF-8 without surrogates. It reports structure to a [`Sink`] (the receipt schema or a
//! generic value builder), so whole-document and incremental decoding share every decision.
//! Memory is bounded by the [`Limits`]: one string buffer, one previous-key buffer per open
//! object, one frame per open container.

use crate::refusal::{Refusal, RefusalCode as C};
use jouleclaw_stream::json_scan::{PLAIN, plain_run};

/// Bounds the decoder enforces, each at its exact value (a document of exactly
/// `max_document_bytes` bytes is accepted; one more byte is refused).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest document, in bytes.
    pub max_document_bytes: usize,
    /// Deepest container nesting (the root object is depth 1).
    pub max_depth: usize,
    /// Longest string (keys included), in decoded UTF-8 bytes.
    pub max_string_bytes: usize,
    /// Most elements in one array.
    pub max_array_len: usize,
}

impl Limits {
    /// The limits for stream-window/1 receipts: 64 KiB documents, depth 3 (receipt, verdict,
    /// chain), 4,096-byte strings, 64-element arrays.
    pub const RECEIPT: Limits = Limits {
        max_document_bytes: 65_536,
        max_depth: 3,
        max_string_bytes: 4_096,
        max_array_len: 64,
    };

    /// Limits for generic canonical values: 1 MiB, depth 64, 64 KiB strings, 65,536 elements.
    pub const GENERIC: Limits = Limits {
        max_document_bytes: 1 << 20,
        max_depth: 64,
        max_string_bytes: 1 << 16,
        max_array_len: 1 << 16,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Self::RECEIPT
    }
}

/// The JSON type of a value, reported at its first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ValueType {
    Object,
    Array,
    String,
    Number,
    Bool,
    Null,
}

/// Receives the structure of the document as the machine recognizes it. Any error refuses the
/// document at the current byte.
pub(crate) trait Sink {
    /// A value of type `ty` starts.
    fn begin(&mut self, ty: ValueType) -> Result<(), C>;
    /// An object key, already checked for order and uniqueness. The machine has checked it is
    /// UTF-8 (a sink that needs a `&str` converts it; that conversion cannot fail).
    fn key(&mut self, key: &[u8]) -> Result<(), C>;
    /// A complete string value, UTF-8 as for [`Sink::key`].
    fn string(&mut self, s: &[u8]) -> Result<(), C>;
    /// A complete integer.
    fn integer(&mut self, n: i64) -> Result<(), C>;
    /// `true` or `false`.
    fn boolean(&mut self, b: bool) -> Result<(), C>;
    /// `null`.
    fn null(&mut self) -> Result<(), C>;
    /// The current object closes.
    fn end_object(&mut self) -> Result<(), C>;
    /// The current array closes.
    fn end_array(&mut self) -> Result<(), C>;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Value,
    ArrayFirst,
    ObjectFirst,
    Key,
    Colon,
    After,
    Str,
    Num,
    Lit,
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Esc {
    None,
    Backslash,
    Hex { n: u8, v: u32, low: bool },
    ExpectBackslash,
    ExpectU,
}

#[derive(Debug, Clone, Copy)]
struct Frame {
    object: bool,
    count: usize,
    /// Where this frame's previous key starts in `Machine::keys` (it runs to the end while
    /// this is the innermost object).
    key_start: usize,
}

const MAX_SAFE: u64 = jouleclaw_stream::canon::MAX_SAFE_INTEGER;

/// RFC 8785 key order: UTF-16 code units. Up to the first byte where two UTF-8 strings differ
/// they share whole characters; when that byte is ASCII in both, it starts a character in both,
/// so the byte order is the code-unit order. A prefix sorts first in both orders. Only a
/// difference inside non-ASCII text needs the UTF-16 comparison.
fn key_order(x: &[u8], y: &[u8]) -> core::cmp::Ordering {
    match x.iter().zip(y).position(|(p, q)| p != q) {
        None => x.len().cmp(&y.len()),
        Some(i) if x[i] < 0x80 && y[i] < 0x80 => x[i].cmp(&y[i]),
        // Both keys passed the machine's UTF-8 checks, so both conversions succeed.
        Some(_) => match (core::str::from_utf8(x), core::str::from_utf8(y)) {
            (Ok(a), Ok(b)) => a.encode_utf16().cmp(b.encode_utf16()),
            _ => x.cmp(y),
        },
    }
}

/// The machine; `S` gives the structure meaning.
#[derive(Debug)]
pub(crate) struct Machine<S> {
    pub(crate) sink: S,
    limits: Limits,
    state: State,
    offset: u64,
    refused: Option<Refusal>,
    frames: Vec<Frame>,
    /// Previous key of every open object, outermost first, end to end (see `Frame::key_start`).
    keys: Vec<u8>,
    // String state.
    sbuf: Vec<u8>,
    is_key: bool,
    esc: Esc,
    utf8_need: u8,
    utf8_lo: u8,
    utf8_hi: u8,
    utf8_lead: u8,
    // Number state.
    neg: bool,
    digits: u8,
    first_zero: bool,
    value: u64,
    // Literal state.
    lit: &'static [u8],
    lit_pos: usize,
}

impl<S: Sink> Machine<S> {
    pub(crate) fn new(sink: S, limits: Limits) -> Self {
        Self {
            sink,
            limits,
            state: State::Value,
            offset: 0,
            refused: None,
            // Room for a typical document up front, so that decoding does not regrow them.
            frames: Vec::with_capacity(limits.max_depth.min(8)),
            keys: Vec::with_capacity(limits.max_string_bytes.min(64)),
            sbuf: Vec::with_capacity(limits.max_string_bytes.min(64)),
            is_key: false,
            esc: Esc::None,
            utf8_need: 0,
            utf8_lo: 0x80,
            utf8_hi: 0xbf,
            utf8_lead: 0,
            neg: false,
            digits: 0,
            first_zero: false,
            value: 0,
            lit: b"",
            lit_pos: 0,
        }
    }

    pub(crate) fn offset(&self) -> u64 {
        self.offset
    }

    pub(crate) fn refused(&self) -> Option<Refusal> {
        self.refused
    }

    /// Feeds bytes. Returns the refusal if the document is (or already was) refused.
    #[inline]
    pub(crate) fn push(&mut self, chunk: &[u8]) -> Result<(), Refusal> {
        // A byte-wise feed's commonest byte, without entering the full machine: one plain
        // byte inside a string with no UTF-8 sequence or escape open, below the document and
        // string limits. `push_chunk` would take exactly this path for it (`step` sends it to
        // `plain`, which appends it); anything else goes there.
        if let [b] = *chunk
            && self.state == State::Str
            && self.utf8_need == 0
            && self.esc == Esc::None
            && PLAIN[usize::from(b)]
            && self.refused.is_none()
            && self.offset < self.limits.max_document_bytes as u64
            && self.sbuf.len() < self.limits.max_string_bytes
        {
            self.sbuf.push(b);
            self.offset += 1;
            return Ok(());
        }
        self.push_chunk(chunk)
    }

    /// The machine over a chunk (see [`Machine::push`]).
    #[inline(never)]
    fn push_chunk(&mut self, chunk: &[u8]) -> Result<(), Refusal> {
        if let Some(r) = self.refused {
            return Err(r);
        }
        // The document limit, once per chunk: the bytes below it are processed without a
        // per-byte check; the first byte at the limit is refused at its own offset, exactly
        // where a per-byte check would refuse it.
        let avail = (self.limits.max_document_bytes as u64).saturating_sub(self.offset);
        let n = usize::try_from(avail).map_or(chunk.len(), |a| a.min(chunk.len()));
        let (body, over) = chunk.split_at(n);
        let mut i = 0;
        while i < body.len() {
            match self.step(body, i) {
                Ok(used) => {
                    i += used;
                    self.offset += used as u64;
                }
                Err(code) => return Err(self.refuse(code)),
            }
        }
        if !over.is_empty() {
            return Err(self.refuse(C::DocumentTooLarge));
        }
        Ok(())
    }

    fn refuse(&mut self, code: C) -> Refusal {
        let r = Refusal {
            code,
            offset: self.offset,
        };
        self.refused = Some(r);
        r
    }

    /// Declares the end of input.
    pub(crate) fn finish(&mut self) -> Result<(), Refusal> {
        if let Some(r) = self.refused {
            return Err(r);
        }
        let code = match self.state {
            State::Done => return Ok(()),
            State::Num if self.frames.is_empty() && self.digits > 0 => match self.end_number() {
                Ok(()) => return Ok(()),
                Err(c) => c,
            },
            State::Value if self.offset == 0 => C::EmptyInput,
            _ => C::Truncated,
        };
        let r = Refusal {
            code,
            offset: self.offset,
        };
        self.refused = Some(r);
        Err(r)
    }

    /// Processes the byte at `chunk[i]` (and, inside strings, the plain run that follows it).
    /// Returns how many bytes were consumed. `chunk` ends at or before the document limit.
    fn step(&mut self, chunk: &[u8], i: usize) -> Result<usize, C> {
        let b = chunk[i];
        match self.state {
            // The common string byte first: no UTF-8 sequence or escape open, `b` plain (the
            // same bytes `string_byte` sends to `plain`).
            State::Str if self.utf8_need == 0 && self.esc == Esc::None && PLAIN[usize::from(b)] => {
                self.plain(chunk, i)
            }
            State::Str => self.string_byte(chunk, i),
            State::Done => Err(C::TrailingBytes),
            State::Num => {
                if self.number_byte(b)? {
                    Ok(1)
                } else {
                    // The byte ends the number; process it in the state that follows.
                    self.end_number()?;
                    self.structural(b).map(|()| 1)
                }
            }
            State::Lit => {
                if b != self.lit[self.lit_pos] {
                    return Err(C::Syntax);
                }
                self.lit_pos += 1;
                if self.lit_pos == self.lit.len() {
                    match self.lit {
                        b"true" => self.sink.boolean(true)?,
                        b"false" => self.sink.boolean(false)?,
                        _ => self.sink.null()?,
                    }
                    self.complete_value();
                }
                Ok(1)
            }
            _ => self.structural(b).map(|()| 1),
        }
    }

    fn structural(&mut self, b: u8) -> Result<(), C> {
        if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
            return Err(if self.state == State::Done {
                C::TrailingBytes
            } else {
                C::Whitespace
            });
        }
        match self.state {
            State::Value => self.value_start(b),
            State::ArrayFirst => {
                if b == b']' {
                    self.close(false)
                } else {
                    self.value_start(b)
                }
            }
            State::ObjectFirst => match b {
                b'}' => self.close(true),
                b'"' => self.open_string(true),
                _ => Err(C::Syntax),
            },
            State::Key => match b {
                b'"' => self.open_string(true),
                _ => Err(C::Syntax),
            },
            State::Colon => match b {
                b':' => {
                    self.state = State::Value;
                    Ok(())
                }
                _ => Err(C::Syntax),
            },
            State::After => match (b, self.frames.last().map(|f| f.object)) {
                (b',', Some(true)) => {
                    self.state = State::Key;
                    Ok(())
                }
                (b',', Some(false)) => {
                    self.state = State::Value;
                    Ok(())
                }
                (b'}', Some(true)) => self.close(true),
                (b']', Some(false)) => self.close(false),
                _ => Err(C::Syntax),
            },
            State::Done => Err(C::TrailingBytes),
            State::Str | State::Num | State::Lit => Err(C::Syntax),
        }
    }

    fn value_start(&mut self, b: u8) -> Result<(), C> {
        let ty = match b {
            b'{' => ValueType::Object,
            b'[' => ValueType::Array,
            b'"' => ValueType::String,
            b'-' | b'0'..=b'9' => ValueType::Number,
            b't' | b'f' => ValueType::Bool,
            b'n' => ValueType::Null,
            b'+' => return Err(C::NumberPlus),
            0xef if self.offset == 0 => return Err(C::Bom),
            _ => return Err(C::Syntax),
        };
        if let Some(f) = self.frames.last_mut()
            && !f.object
        {
            if f.count >= self.limits.max_array_len {
                return Err(C::ArrayTooLong);
            }
            f.count += 1;
        }
        let container = matches!(ty, ValueType::Object | ValueType::Array);
        if container && self.frames.len() >= self.limits.max_depth {
            return Err(C::DepthExceeded);
        }
        self.sink.begin(ty)?;
        match ty {
            ValueType::Object | ValueType::Array => {
                let object = ty == ValueType::Object;
                self.frames.push(Frame {
                    object,
                    count: 0,
                    key_start: self.keys.len(),
                });
                if object {
                    self.state = State::ObjectFirst;
                } else {
                    self.state = State::ArrayFirst;
                }
                Ok(())
            }
            ValueType::String => self.open_string(false),
            ValueType::Number => {
                self.neg = b == b'-';
                self.digits = 0;
                self.first_zero = false;
                self.value = 0;
                self.state = State::Num;
                if !self.neg {
                    self.number_byte(b)?;
                }
                Ok(())
            }
            ValueType::Bool | ValueType::Null => {
                self.lit = match b {
                    b't' => b"true",
                    b'f' => b"false",
                    _ => b"null",
                };
                self.lit_pos = 1;
                self.state = State::Lit;
                Ok(())
            }
        }
    }

    fn close(&mut self, object: bool) -> Result<(), C> {
        if object {
            self.sink.end_object()?;
        } else {
            self.sink.end_array()?;
        }
        if let Some(f) = self.frames.pop() {
            self.keys.truncate(f.key_start);
        }
        self.complete_value();
        Ok(())
    }

    fn complete_value(&mut self) {
        self.state = if self.frames.is_empty() {
            State::Done
        } else {
            State::After
        };
    }

    /// Consumes `b` as part of a number; `Ok(false)` when `b` cannot continue it.
    fn number_byte(&mut self, b: u8) -> Result<bool, C> {
        match b {
            b'0'..=b'9' => {
                let d = u64::from(b - b'0');
                if self.digits == 0 {
                    if self.neg && d == 0 {
                        return Err(C::NumberNegativeZero);
                    }
                    self.first_zero = d == 0;
                } else if self.first_zero {
                    return Err(C::NumberLeadingZero);
                }
                // At most 16 digits reach here: MAX_SAFE has 16, so value * 10 + d fits u64.
                self.value = self.value * 10 + d;
                self.digits += 1;
                if self.value > MAX_SAFE {
                    return Err(C::IntegerOutOfRange);
                }
                Ok(true)
            }
            b'.' if self.digits > 0 => Err(C::NumberFraction),
            b'e' | b'E' if self.digits > 0 => Err(C::NumberExponent),
            _ if self.digits == 0 => Err(C::Syntax),
            _ => Ok(false),
        }
    }

    fn end_number(&mut self) -> Result<(), C> {
        // `value <= MAX_SAFE < i64::MAX`, so the conversion is exact.
        let v = i64::try_from(self.value).map_err(|_| C::IntegerOutOfRange)?;
        self.sink.integer(if self.neg { -v } else { v })?;
        self.complete_value();
        Ok(())
    }

    fn open_string(&mut self, is_key: bool) -> Result<(), C> {
        self.is_key = is_key;
        self.sbuf.clear();
        self.esc = Esc::None;
        self.utf8_need = 0;
        self.state = State::Str;
        Ok(())
    }

    fn push_str_byte(&mut self, b: u8) -> Result<(), C> {
        if self.sbuf.len() >= self.limits.max_string_bytes {
            return Err(C::StringTooLong);
        }
        self.sbuf.push(b);
        Ok(())
    }

    fn string_byte(&mut self, chunk: &[u8], i: usize) -> Result<usize, C> {
        let b = chunk[i];
        if self.utf8_need > 0 {
            if b < self.utf8_lo || b > self.utf8_hi {
                return Err(match (self.utf8_lead, (0x80..=0xbf).contains(&b)) {
                    (0xe0 | 0xf0, true) if b < self.utf8_lo => C::OverlongUtf8,
                    (0xed, true) => C::LoneSurrogate,
                    _ => C::InvalidUtf8,
                });
            }
            self.push_str_byte(b)?;
            self.utf8_need -= 1;
            self.utf8_lo = 0x80;
            self.utf8_hi = 0xbf;
            self.utf8_lead = 0;
            return Ok(1);
        }
        match self.esc {
            Esc::None => {}
            Esc::Backslash => {
                let out = match b {
                    b'"' => b'"',
                    b'\\' => b'\\',
                    b'b' => 0x08,
                    b'f' => 0x0c,
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'/' => return Err(C::EscapeSolidus),
                    b'u' => {
                        self.esc = Esc::Hex {
                            n: 0,
                            v: 0,
                            low: false,
                        };
                        return Ok(1);
                    }
                    _ => return Err(C::EscapeInvalid),
                };
                self.esc = Esc::None;
                self.push_str_byte(out)?;
                return Ok(1);
            }
            Esc::Hex { n, v, low } => {
                let d = match b {
                    b'0'..=b'9' => b - b'0',
                    b'a'..=b'f' => b - b'a' + 10,
                    b'A'..=b'F' => return Err(C::EscapeUppercaseHex),
                    _ => return Err(C::EscapeInvalid),
                };
                let v = v * 16 + u32::from(d);
                if n < 3 {
                    self.esc = Esc::Hex { n: n + 1, v, low };
                    return Ok(1);
                }
                return match v {
                    _ if low && (0xdc00..=0xdfff).contains(&v) => Err(C::EscapeNotNeeded),
                    _ if low => Err(C::LoneSurrogate),
                    0x08 | 0x09 | 0x0a | 0x0c | 0x0d | 0x22 | 0x5c => {
                        Err(C::EscapeShortFormAvailable)
                    }
                    0x00..=0x1f => {
                        self.esc = Esc::None;
                        // `v < 0x20`, so the cast is exact.
                        self.push_str_byte(v as u8)?;
                        Ok(1)
                    }
                    0xd800..=0xdbff => {
                        self.esc = Esc::ExpectBackslash;
                        Ok(1)
                    }
                    0xdc00..=0xdfff => Err(C::LoneSurrogate),
                    _ => Err(C::EscapeNotNeeded),
                };
            }
            Esc::ExpectBackslash => {
                return if b == b'\\' {
                    self.esc = Esc::ExpectU;
                    Ok(1)
                } else {
                    Err(C::LoneSurrogate)
                };
            }
            Esc::ExpectU => {
                return if b == b'u' {
                    self.esc = Esc::Hex {
                        n: 0,
                        v: 0,
                        low: true,
                    };
                    Ok(1)
                } else {
                    Err(C::LoneSurrogate)
                };
            }
        }
        match b {
            b'"' => {
                self.end_string()?;
                Ok(1)
            }
            b'\\' => {
                self.esc = Esc::Backslash;
                Ok(1)
            }
            0x00..=0x1f => Err(C::RawControlChar),
            0x20..=0x7f => self.plain(chunk, i),
            0x80..=0xbf => Err(C::InvalidUtf8),
            0xc0 | 0xc1 => Err(C::OverlongUtf8),
            _ => {
                let (need, lo, hi) = match b {
                    0xc2..=0xdf => (1, 0x80, 0xbf),
                    0xe0 => (2, 0xa0, 0xbf),
                    0xed => (2, 0x80, 0x9f),
                    0xe1..=0xef => (2, 0x80, 0xbf),
                    0xf0 => (3, 0x90, 0xbf),
                    0xf1..=0xf3 => (3, 0x80, 0xbf),
                    0xf4 => (3, 0x80, 0x8f),
                    _ => return Err(C::InvalidUtf8),
                };
                self.push_str_byte(b)?;
                self.utf8_need = need;
                self.utf8_lo = lo;
                self.utf8_hi = hi;
                self.utf8_lead = b;
                Ok(1)
            }
        }
    }

    /// The run of plain bytes that starts with `chunk[i]` (plain: printable ASCII without `"`
    /// and `\\`). `chunk` ends at or before the document limit, so the run does too.
    #[inline(always)]
    fn plain(&mut self, chunk: &[u8], i: usize) -> Result<usize, C> {
        // A chunk that ends here (a byte-wise feed) needs no scan.
        let run = if i + 1 == chunk.len() {
            1
        } else {
            plain_run(&chunk[i..])
        };
        let room = self.limits.max_string_bytes - self.sbuf.len();
        if run > room {
            // Consume up to the limit; the next byte is refused at its own offset.
            self.sbuf.extend_from_slice(&chunk[i..i + room]);
            return if room == 0 {
                Err(C::StringTooLong)
            } else {
                Ok(room)
            };
        }
        if run == 1 {
            // One byte at a time (a byte-wise feed): skip the slice copy.
            self.sbuf.push(chunk[i]);
        } else {
            self.sbuf.extend_from_slice(&chunk[i..i + run]);
        }
        Ok(run.max(1))
    }

    fn end_string(&mut self) -> Result<(), C> {
        // The bytes passed the machine's UTF-8 checks (lead bytes, continuation ranges, no
        // surrogates; escapes add only ASCII), so they are handed over without re-validation.
        let s = &self.sbuf[..];
        if self.is_key {
            let Some(frame) = self.frames.last_mut() else {
                return Err(C::Syntax);
            };
            if frame.count > 0 {
                let prev = self.keys.get(frame.key_start..).unwrap_or_default();
                match key_order(prev, s) {
                    core::cmp::Ordering::Less => {}
                    core::cmp::Ordering::Equal => return Err(C::DuplicateKey),
                    core::cmp::Ordering::Greater => return Err(C::UnsortedKeys),
                }
            }
            frame.count += 1;
            self.keys.truncate(frame.key_start);
            self.keys.extend_from_slice(s);
            self.sink.key(s)?;
            self.state = State::Colon;
        } else {
            self.sink.string(s)?;
            self.complete_value();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn utf16_order(a: &str, b: &str) -> core::cmp::Ordering {
        a.encode_utf16().cmp(b.encode_utf16())
    }

    #[test]
    fn key_order_is_utf16_order_where_it_differs_from_byte_order() {
        // U+FF61 (3 UTF-8 bytes, one unit 0xFF61) vs U+1F600 (4 bytes, surrogates 0xD83D..):
        // bytes say U+FF61 first, UTF-16 says U+1F600 first.
        for (a, b) in [
            ("\u{ff61}", "\u{1f600}"),
            ("a\u{ff61}", "a\u{1f600}"),
            ("kind", "kinds"),
            ("kind", "kind"),
            ("a", "\u{e9}"),
            ("\u{e9}", "\u{e8}z"),
            ("", "a"),
        ] {
            let (x, y) = (a.as_bytes(), b.as_bytes());
            assert_eq!(key_order(x, y), utf16_order(a, b), "{a:?} {b:?}");
            assert_eq!(key_order(y, x), utf16_order(b, a), "{b:?} {a:?}");
        }
    }

    /// Checks the machine's claim that every key and string it hands over is UTF-8: the
    /// conversion the sinks no longer repeat would have refused at exactly this point.
    #[derive(Debug, Default)]
    struct Utf8Sink {
        strings: usize,
    }

    impl Utf8Sink {
        fn check(&mut self, s: &[u8]) -> Result<(), C> {
            assert!(core::str::from_utf8(s).is_ok(), "{s:?}");
            self.strings += 1;
            Ok(())
        }
    }

    impl Sink for Utf8Sink {
        fn begin(&mut self, _: ValueType) -> Result<(), C> {
            Ok(())
        }
        fn key(&mut self, key: &[u8]) -> Result<(), C> {
            self.check(key)
        }
        fn string(&mut self, s: &[u8]) -> Result<(), C> {
            self.check(s)
        }
        fn integer(&mut self, _: i64) -> Result<(), C> {
            Ok(())
        }
        fn boolean(&mut self, _: bool) -> Result<(), C> {
            Ok(())
        }
        fn null(&mut self) -> Result<(), C> {
            Ok(())
        }
        fn end_object(&mut self) -> Result<(), C> {
            Ok(())
        }
        fn end_array(&mut self) -> Result<(), C> {
            Ok(())
        }
    }

    /// Runs `doc` whole and byte-wise; returns how many strings reached the sink.
    fn utf8_checked(doc: &[u8]) -> usize {
        let mut m = Machine::new(Utf8Sink::default(), Limits::GENERIC);
        let _ = m.push(doc).and_then(|()| m.finish());
        let mut b = Machine::new(Utf8Sink::default(), Limits::GENERIC);
        for c in doc.chunks(1) {
            if b.push(c).is_err() {
                break;
            }
        }
        assert_eq!(m.sink.strings, b.sink.strings);
        m.sink.strings
    }

    #[test]
    fn strings_handed_to_the_sink_are_utf8() {
        for (s, reach) in [
            (&br#"\u0000\u001f\n\\\"x"#[..], 2),
            ("\u{e9}\u{ff61}\u{1f600}".as_bytes(), 2),
            (br"\ud83d\ude00", 0),
            (b"\x7f\xdf\xbf\xef\xbf\xbf\xf4\x8f\xbf\xbf", 2),
            (b"\xed\xa0\x80", 0),
            (b"\xf4\x90\x80\x80", 0),
            (b"\xe0\x80\x80", 0),
            (b"\xc3", 0),
            (b"\xc3\"", 0),
        ] {
            let mut doc = b"{\"".to_vec();
            doc.extend_from_slice(s);
            doc.extend_from_slice(b"\":\"");
            doc.extend_from_slice(s);
            doc.extend_from_slice(b"\"}");
            assert_eq!(utf8_checked(&doc), reach, "{s:?}");
        }
        assert_eq!(utf8_checked("{\"\u{e9}\":[\"\u{1f600}\"]}".as_bytes()), 2);
    }

    /// Feeds `doc` in the given pieces, then finishes.
    fn run(doc: &[u8], limits: Limits, cuts: &[usize]) -> Result<(), Refusal> {
        let mut m = Machine::new(Utf8Sink::default(), limits);
        let mut at = 0;
        for &c in cuts.iter().chain([doc.len()].iter()) {
            m.push(&doc[at..c])?;
            at = c;
        }
        m.finish()
    }

    /// The rule the once-per-chunk document limit replaces: every byte at or past the limit is
    /// refused with `DocumentTooLarge` at its offset, unless an earlier byte was refused.
    fn document_limit_rule(doc: &[u8], limits: Limits) -> Result<(), Refusal> {
        let unlimited = Limits {
            max_document_bytes: usize::MAX,
            ..limits
        };
        let k = doc.len().min(limits.max_document_bytes);
        let mut m = Machine::new(Utf8Sink::default(), unlimited);
        m.push(&doc[..k])?;
        if doc.len() > k {
            return Err(Refusal {
                code: C::DocumentTooLarge,
                offset: k as u64,
            });
        }
        m.finish()
    }

    #[test]
    fn document_limit_is_the_per_byte_rule_at_every_limit_and_split() {
        for doc in [
            &br#"{"a":"plain text that runs on","b":[1,-20,{"c":"\u00e9x\n"}],"d":true}"#[..],
            "[\"\u{e9}\u{1f600}abcdefghijklmnop\",null,123456789]".as_bytes(),
            b"12345",
            b"\"abc\" ",
        ] {
            for (max, strings) in (0..=doc.len() + 1).flat_map(|m| [(m, 8), (m, 64)]) {
                let limits = Limits {
                    max_document_bytes: max,
                    max_string_bytes: strings,
                    ..Limits::GENERIC
                };
                let want = document_limit_rule(doc, limits);
                assert_eq!(run(doc, limits, &[]), want, "limit {max}");
                let bytewise: Vec<usize> = (1..doc.len()).collect();
                assert_eq!(run(doc, limits, &bytewise), want, "limit {max} byte-wise");
                // The single-byte shortcut in `push` against the full machine, byte by byte.
                let mut fast = Machine::new(Utf8Sink::default(), limits);
                let mut full = Machine::new(Utf8Sink::default(), limits);
                for c in doc.chunks(1) {
                    assert_eq!(fast.push(c), full.push_chunk(c), "limit {max}");
                    assert_eq!(fast.offset, full.offset);
                    assert_eq!(fast.sbuf, full.sbuf);
                    assert_eq!(fast.state, full.state);
                }
                assert_eq!(fast.finish(), full.finish());
                assert_eq!(fast.finish(), want);
                for cut in 0..=doc.len() {
                    assert_eq!(run(doc, limits, &[cut]), want, "limit {max} cut {cut}");
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn strings_handed_to_the_sink_are_utf8_for_any_bytes(
            s in proptest::collection::vec(
                prop_oneof![
                    4 => 0x20u8..0x7f,
                    1 => any::<u8>(),
                    1 => Just(b'\\'),
                    1 => prop_oneof![Just(0xedu8), Just(0xf0), Just(0xf4), Just(0xe0)],
                ],
                0..24,
            ),
        ) {
            let mut doc = b"[\"".to_vec();
            doc.extend_from_slice(&s);
            doc.extend_from_slice(b"\",{\"");
            doc.extend_from_slice(&s);
            doc.extend_from_slice(b"\":1}]");
            utf8_checked(&doc);
        }

        #[test]
        fn key_order_matches_utf16_order(
            prefix in "[a-z\u{e9}\u{ff61}\u{1f600}]{0,3}",
            a in "[a-z_\u{80}-\u{7ff}\u{e000}-\u{ffff}\u{10000}-\u{10ffff}]{0,4}",
            b in "[a-z_\u{80}-\u{7ff}\u{e000}-\u{ffff}\u{10000}-\u{10ffff}]{0,4}",
        ) {
            let (a, b) = (format!("{prefix}{a}"), format!("{prefix}{b}"));
            prop_assert_eq!(key_order(a.as_bytes(), b.as_bytes()), utf16_order(&a, &b));
        }
    }
}
