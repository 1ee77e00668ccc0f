//! Strict decoding: stream-window/1 receipts and generic canonical values.

use jouleclaw_stream::WindowConservationFinding;
use jouleclaw_stream_oracle::WindowVerdict;
use serde_json::Value;

use crate::receipt::{EnergyProvenance, StreamWindowReceipt};
use crate::refusal::{Refusal, RefusalCode as C};
use crate::schema::{
    CONSERVATION_VARIANTS, FieldDef, FieldType, RECEIPT_FIELDS, VERDICT_VARIANTS, VariantDef,
    receipt_field,
};
use crate::strict::{Limits, Machine, Sink, ValueType};
use crate::time::UtcSecond;

/// What [`ReceiptDecoder::push`] says about the bytes so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Nothing is wrong yet; more bytes (or [`ReceiptDecoder::finish`]) are needed. Carries no
    /// code, so it can never be mistaken for a refusal.
    Incomplete,
    /// Refused; every later call returns the same refusal.
    Refused(Refusal),
}

/// Incremental strict decoder of one stream-window/1 receipt.
///
/// `push` never accepts: bytes that complete a receipt only stop it refusing, because trailing
/// data may still arrive. Only `finish` (no more bytes) accepts. Accept and refuse, and the
/// refusal's code and offset, are the same however the input is split.
#[derive(Debug)]
pub struct ReceiptDecoder {
    machine: Machine<ReceiptSink>,
}

impl Default for ReceiptDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl ReceiptDecoder {
    /// A decoder with [`Limits::RECEIPT`].
    pub fn new() -> Self {
        Self::with_limits(Limits::RECEIPT)
    }

    /// A decoder with explicit limits.
    pub fn with_limits(limits: Limits) -> Self {
        Self {
            machine: Machine::new(ReceiptSink::default(), limits),
        }
    }

    /// Feeds the next chunk.
    pub fn push(&mut self, chunk: &[u8]) -> Progress {
        match self.machine.push(chunk) {
            Ok(()) => Progress::Incomplete,
            Err(r) => Progress::Refused(r),
        }
    }

    /// Declares the end of input: the receipt, or the refusal.
    pub fn finish(mut self) -> Result<StreamWindowReceipt, Refusal> {
        self.machine.finish()?;
        let offset = self.machine.offset();
        // A finished machine has closed the root object, which built the receipt.
        self.machine.sink.done.take().ok_or(Refusal {
            code: C::Truncated,
            offset,
        })
    }

    /// The refusal, if the decoder has refused.
    pub fn refusal(&self) -> Option<Refusal> {
        self.machine.refused()
    }
}

/// Strictly decodes a whole document (the same machine as [`ReceiptDecoder`]).
pub fn decode_receipt(bytes: &[u8]) -> Result<StreamWindowReceipt, Refusal> {
    let mut d = ReceiptDecoder::new();
    if let Progress::Refused(r) = d.push(bytes) {
        return Err(r);
    }
    d.finish()
}

/// Strictly decodes any canonical JSON value (not only receipts) under `limits`: the bytes
/// must be exactly the JCR-1 encoding of the value.
pub fn decode_canonical_value(bytes: &[u8], limits: Limits) -> Result<Value, Refusal> {
    let mut m = Machine::new(ValueSink::default(), limits);
    m.push(bytes)?;
    m.finish()?;
    m.sink.stack.pop().map(|(v, _)| v).ok_or(Refusal {
        code: C::Truncated,
        offset: bytes.len() as u64,
    })
}

/// A decoded value awaiting its place in the receipt.
#[derive(Debug)]
enum Val {
    Str(String),
    Uint(u64),
    List(Vec<String>),
    Time(UtcSecond),
    Hash(blake3::Hash),
    Prov(EnergyProvenance),
    Verdict(WindowVerdict),
    Cons(WindowConservationFinding),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Which {
    Verdict,
    Conservation,
}

impl Which {
    fn variants(self) -> &'static [VariantDef] {
        match self {
            Self::Verdict => VERDICT_VARIANTS,
            Self::Conservation => CONSERVATION_VARIANTS,
        }
    }
}

const KIND: FieldDef = FieldDef {
    name: "kind",
    ty: FieldType::Text { non_empty: true },
    doc: "variant tag",
};

#[derive(Debug)]
enum Level {
    Receipt {
        field: Option<usize>,
    },
    Variant {
        which: Which,
        field: Option<&'static FieldDef>,
    },
    List,
}

#[derive(Debug, Default)]
struct ReceiptSink {
    stack: Vec<Level>,
    slots: [Option<Val>; RECEIPT_FIELDS.len()],
    kind: Option<&'static VariantDef>,
    vals: Vec<(&'static str, Val)>,
    list: Vec<String>,
    done: Option<StreamWindowReceipt>,
}

fn json_type(ty: FieldType) -> ValueType {
    match ty {
        FieldType::Uint => ValueType::Number,
        FieldType::Verdict | FieldType::Conservation => ValueType::Object,
        FieldType::NameList => ValueType::Array,
        _ => ValueType::String,
    }
}

/// A string the machine handed over: it has checked the bytes are UTF-8, so this cannot fail
/// (the refusal is the one the machine would give).
fn text(s: &[u8]) -> Result<&str, C> {
    core::str::from_utf8(s).map_err(|_| C::InvalidUtf8)
}

fn expect(got: ValueType, want: ValueType) -> Result<(), C> {
    match got {
        _ if got == want => Ok(()),
        ValueType::Null => Err(C::Null),
        _ => Err(C::WrongType),
    }
}

/// `id == receipt_id(stream_id, window_id)`, without building the expected id.
pub(crate) fn is_receipt_id(id: &str, stream_id: &str, window_id: u64) -> bool {
    let Some(digits) = id
        .strip_prefix(stream_id)
        .and_then(|rest| rest.strip_prefix(':'))
    else {
        return false;
    };
    // `{window_id:04}`: the decimal digits, zero-padded to at least four.
    let mut buf = [b'0'; 20];
    let mut i = buf.len();
    let mut n = window_id;
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    digits.as_bytes() == &buf[i.min(buf.len() - 4)..]
}

/// The digest of exactly 64 lowercase hex digits, checked and decoded in one pass.
fn is_hex64(b: &[u8]) -> Option<blake3::Hash> {
    if b.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    // Every digit is looked up; any byte that is not one sets the high bit of `bad`.
    let mut bad = 0u8;
    for (o, pair) in out.iter_mut().zip(b.chunks_exact(2)) {
        let (hi, lo) = (HEX[usize::from(pair[0])], HEX[usize::from(pair[1])]);
        bad |= hi | lo;
        *o = (hi << 4) | (lo & 0x0f);
    }
    (bad & 0x80 == 0).then(|| blake3::Hash::from_bytes(out))
}

/// Lowercase hex digit values; 0xff for every other byte.
const HEX: [u8; 256] = {
    let mut t = [0xff; 256];
    let mut c = 0;
    while c < 256 {
        t[c] = match lower_hex_digit(c as u8) {
            Some(d) => d,
            None => 0xff,
        };
        c += 1;
    }
    t
};

const fn lower_hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

impl ReceiptSink {
    /// The field the value now starting belongs to.
    fn current(&self) -> Result<Option<&'static FieldDef>, C> {
        match self.stack.last() {
            None => Ok(None),
            Some(Level::Receipt { field: Some(i) }) => Ok(Some(&RECEIPT_FIELDS[*i])),
            Some(Level::Variant { field: Some(d), .. }) => Ok(Some(d)),
            Some(Level::List) => Ok(None),
            // A value without a key cannot start inside an object.
            _ => Err(C::Syntax),
        }
    }

    fn store(&mut self, v: Val) {
        match self.stack.last() {
            Some(Level::Receipt { field: Some(i) }) => self.slots[*i] = Some(v),
            Some(Level::Variant { field: Some(d), .. }) => self.vals.push((d.name, v)),
            _ => {}
        }
    }

    fn build_variant(&mut self, which: Which) -> Result<Val, C> {
        let def = self.kind.ok_or(C::MissingField)?;
        for (name, _) in &self.vals {
            if !def.fields.iter().any(|d| d.name == *name) {
                return Err(C::UnknownField);
            }
        }
        if self.vals.len() != def.fields.len() {
            return Err(C::MissingField);
        }
        let mut vals = core::mem::take(&mut self.vals);
        let mut take_str = |name: &str| -> String {
            vals.iter_mut()
                .find(|(n, _)| *n == name)
                .and_then(|(_, v)| match v {
                    Val::Str(s) => Some(core::mem::take(s)),
                    _ => None,
                })
                .unwrap_or_default()
        };
        let uint = |vals: &[(&str, Val)], name: &str| -> u64 {
            vals.iter()
                .find_map(|(n, v)| match v {
                    Val::Uint(x) if *n == name => Some(*x),
                    _ => None,
                })
                .unwrap_or(0)
        };
        Ok(match (which, def.kind) {
            (Which::Verdict, "pass") => {
                let chain = vals
                    .iter_mut()
                    .find_map(|(_, v)| match v {
                        Val::List(l) => Some(core::mem::take(l)),
                        _ => None,
                    })
                    .unwrap_or_default();
                Val::Verdict(WindowVerdict::Pass { chain })
            }
            (Which::Verdict, "yield") => Val::Verdict(WindowVerdict::Yield {
                seen_at: uint(&vals, "seen_at"),
            }),
            (Which::Verdict, kind) => {
                let oracle = take_str("oracle");
                let reason = take_str("reason");
                Val::Verdict(if kind == "fail" {
                    WindowVerdict::Fail { oracle, reason }
                } else {
                    WindowVerdict::NeedMore { oracle, reason }
                })
            }
            (Which::Conservation, "conforming") => Val::Cons(WindowConservationFinding::Conforming),
            (Which::Conservation, "hallucination") => {
                Val::Cons(WindowConservationFinding::Hallucination {
                    unaccounted: uint(&vals, "unaccounted"),
                })
            }
            (Which::Conservation, _) => Val::Cons(WindowConservationFinding::BargeInIgnored {
                barge_in_ts_ns: uint(&vals, "barge_in_ts_ns"),
                outbound_ts_ns: uint(&vals, "outbound_ts_ns"),
            }),
        })
    }

    fn build_receipt(&mut self) -> Result<StreamWindowReceipt, C> {
        if self.slots.iter().any(Option::is_none) {
            return Err(C::MissingField);
        }
        // Numbers and the id are read where they lie, the other slots taken; a refusal leaves
        // the machine refused for good.
        let uint = |v: &Option<Val>| match v {
            Some(Val::Uint(x)) => *x,
            _ => 0,
        };
        fn str_at(v: &Option<Val>) -> &str {
            match v {
                Some(Val::Str(x)) => x.as_str(),
                _ => "",
            }
        }
        let window_id = uint(&self.slots[13]);
        if !is_receipt_id(str_at(&self.slots[3]), str_at(&self.slots[9]), window_id) {
            return Err(C::IdMismatch);
        }
        let (tick_count, inbound_bytes, outbound_bytes, joules_uj) = (
            uint(&self.slots[10]),
            uint(&self.slots[4]),
            uint(&self.slots[7]),
            uint(&self.slots[6]),
        );
        let slots = &mut self.slots;
        let mut text = |i: usize| match &mut slots[i] {
            Some(Val::Str(x)) => core::mem::take(x),
            _ => String::new(),
        };
        let (steward, stream_id) = (text(8), text(9));
        let mut take = |i: usize| slots[i].take().unwrap_or(Val::Uint(0));
        let (Val::Time(closed_at), Val::Cons(conservation), Val::Prov(energy_provenance)) =
            (take(0), take(1), take(2))
        else {
            return Err(C::WrongType);
        };
        let (Val::Verdict(verdict), Val::Hash(window_hash)) = (take(11), take(12)) else {
            return Err(C::WrongType);
        };
        Ok(StreamWindowReceipt {
            closed_at,
            steward,
            stream_id,
            window_id,
            window_hash,
            tick_count,
            inbound_bytes,
            outbound_bytes,
            joules_uj,
            energy_provenance,
            verdict,
            conservation,
        })
    }
}

impl Sink for ReceiptSink {
    fn begin(&mut self, ty: ValueType) -> Result<(), C> {
        if self.done.is_some() {
            return Err(C::TrailingBytes);
        }
        let Some(def) = self.current()? else {
            return match self.stack.last() {
                Some(Level::List) => expect(ty, ValueType::String),
                _ => {
                    expect(ty, ValueType::Object)?;
                    self.stack.push(Level::Receipt { field: None });
                    Ok(())
                }
            };
        };
        expect(ty, json_type(def.ty))?;
        match def.ty {
            FieldType::Verdict | FieldType::Conservation => {
                let which = if def.ty == FieldType::Verdict {
                    Which::Verdict
                } else {
                    Which::Conservation
                };
                self.kind = None;
                self.vals.clear();
                self.stack.push(Level::Variant { which, field: None });
            }
            FieldType::NameList => {
                self.list.clear();
                self.stack.push(Level::List);
            }
            _ => {}
        }
        Ok(())
    }

    fn key(&mut self, key: &[u8]) -> Result<(), C> {
        match self.stack.last_mut() {
            Some(Level::Receipt { field }) => {
                // Keys arrive in ascending order, so a canonical receipt's next key is the next
                // row of the sorted table; anything else falls back to the full search.
                let from = field.map_or(0, |i| i + 1);
                let next = RECEIPT_FIELDS
                    .get(from..)
                    .and_then(|rest| rest.iter().position(|d| d.name.as_bytes() == key))
                    .map(|p| from + p);
                let i = match next {
                    Some(i) => i,
                    None => receipt_field(text(key)?).ok_or(C::UnknownField)?.0,
                };
                *field = Some(i);
            }
            Some(Level::Variant { which, field }) => {
                *field = Some(if key == b"kind" {
                    &KIND
                } else {
                    which
                        .variants()
                        .iter()
                        .flat_map(|v| v.fields)
                        .find(|d| d.name.as_bytes() == key)
                        .ok_or(C::UnknownField)?
                });
            }
            _ => return Err(C::Syntax),
        }
        Ok(())
    }

    fn string(&mut self, s: &[u8]) -> Result<(), C> {
        if let Some(Level::List) = self.stack.last() {
            if s.is_empty() {
                return Err(C::EmptyString);
            }
            self.list.push(text(s)?.to_owned());
            return Ok(());
        }
        let def = self.current()?.ok_or(C::WrongType)?;
        let val = match def.ty {
            FieldType::Const(c) => {
                if s != c.as_bytes() {
                    return Err(C::WrongSchema);
                }
                Val::Str(String::new())
            }
            FieldType::Text { non_empty } if def.name == "kind" => {
                let Some(Level::Variant { which, .. }) = self.stack.last() else {
                    return Err(C::Syntax);
                };
                let which = *which;
                debug_assert!(non_empty);
                self.kind = Some(
                    which
                        .variants()
                        .iter()
                        .find(|v| v.kind.as_bytes() == s)
                        .ok_or(match which {
                            Which::Verdict => C::UnknownVerdictKind,
                            Which::Conservation => C::UnknownConservationKind,
                        })?,
                );
                return Ok(());
            }
            FieldType::Text { non_empty } => {
                if non_empty && s.is_empty() {
                    return Err(C::EmptyString);
                }
                Val::Str(text(s)?.to_owned())
            }
            FieldType::ReceiptId => Val::Str(text(s)?.to_owned()),
            FieldType::DateTime => Val::Time(UtcSecond::parse(text(s)?).ok_or(C::BadClosedAt)?),
            FieldType::Hex64 => Val::Hash(is_hex64(s).ok_or(C::BadWindowHash)?),
            FieldType::OneOf(_) => {
                Val::Prov(EnergyProvenance::from_wire(text(s)?).ok_or(C::UnknownEnergyProvenance)?)
            }
            _ => return Err(C::WrongType),
        };
        self.store(val);
        Ok(())
    }

    fn integer(&mut self, n: i64) -> Result<(), C> {
        let n = u64::try_from(n).map_err(|_| C::NegativeUnsigned)?;
        self.store(Val::Uint(n));
        Ok(())
    }

    fn boolean(&mut self, _: bool) -> Result<(), C> {
        Err(C::WrongType)
    }

    fn null(&mut self) -> Result<(), C> {
        Err(C::Null)
    }

    fn end_object(&mut self) -> Result<(), C> {
        match self.stack.pop() {
            Some(Level::Variant { which, .. }) => {
                let v = self.build_variant(which)?;
                self.store(v);
                Ok(())
            }
            Some(Level::Receipt { .. }) => {
                let r = self.build_receipt()?;
                self.done = Some(r);
                Ok(())
            }
            _ => Err(C::Syntax),
        }
    }

    fn end_array(&mut self) -> Result<(), C> {
        match self.stack.pop() {
            Some(Level::List) => {
                if self.list.is_empty() {
                    return Err(C::EmptyChain);
                }
                let l = core::mem::take(&mut self.list);
                self.store(Val::List(l));
                Ok(())
            }
            _ => Err(C::Syntax),
        }
    }
}

/// Builds a `serde_json::Value`; the bool marks an object whose next value needs a key.
#[derive(Debug, Default)]
struct ValueSink {
    stack: Vec<(Value, Option<String>)>,
}

impl ValueSink {
    fn put(&mut self, v: Value) {
        match self.stack.last_mut() {
            Some((Value::Array(a), _)) => a.push(v),
            Some((Value::Object(m), key)) => {
                if let Some(k) = key.take() {
                    m.insert(k, v);
                }
            }
            _ => self.stack.push((v, None)),
        }
    }

    fn close(&mut self) {
        if let Some((v, _)) = self.stack.pop() {
            self.put(v);
        }
    }
}

impl Sink for ValueSink {
    fn begin(&mut self, ty: ValueType) -> Result<(), C> {
        match ty {
            ValueType::Object => self.stack.push((Value::Object(Default::default()), None)),
            ValueType::Array => self.stack.push((Value::Array(Vec::new()), None)),
            _ => {}
        }
        Ok(())
    }
    fn key(&mut self, key: &[u8]) -> Result<(), C> {
        let key = text(key)?;
        if let Some((_, k)) = self.stack.last_mut() {
            *k = Some(key.to_owned());
        }
        Ok(())
    }
    fn string(&mut self, s: &[u8]) -> Result<(), C> {
        self.put(Value::String(text(s)?.to_owned()));
        Ok(())
    }
    fn integer(&mut self, n: i64) -> Result<(), C> {
        self.put(Value::from(n));
        Ok(())
    }
    fn boolean(&mut self, b: bool) -> Result<(), C> {
        self.put(Value::Bool(b));
        Ok(())
    }
    fn null(&mut self) -> Result<(), C> {
        self.put(Value::Null);
        Ok(())
    }
    fn end_object(&mut self) -> Result<(), C> {
        self.close();
        Ok(())
    }
    fn end_array(&mut self) -> Result<(), C> {
        self.close();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::receipt::receipt_id;

    #[test]
    fn is_receipt_id_agrees_with_receipt_id() {
        for w in [
            0,
            1,
            7,
            999,
            1000,
            9999,
            10_000,
            123_456,
            (1 << 53) - 1,
            u64::MAX,
        ] {
            for s in ["stream-demo", "s", "a:b", "\u{e9}"] {
                let id = receipt_id(s, w);
                assert!(is_receipt_id(&id, s, w), "{id}");
                assert!(!is_receipt_id(&id, s, w.wrapping_add(1)), "{id}");
                assert!(!is_receipt_id(&format!("{id}0"), s, w), "{id}0");
                assert!(!is_receipt_id(&format!("{s}-{w:04}"), s, w));
                assert!(!is_receipt_id(&format!("{s}:{w}"), s, w) || w >= 1000);
            }
        }
        assert!(!is_receipt_id("stream-demo:01", "stream-demo", 1));
        assert!(!is_receipt_id("other:0001", "stream-demo", 1));
    }

    #[test]
    fn is_hex64_accepts_exactly_64_lowercase_hex_digits() {
        let h = blake3::hash(b"x");
        let hex = h.to_hex();
        assert_eq!(is_hex64(hex.as_bytes()), Some(h));
        let all = "0123456789abcdef".repeat(4);
        assert_eq!(
            is_hex64(all.as_bytes()).map(|h| *h.as_bytes()),
            Some(
                [0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef]
                    .repeat(4)
                    .try_into()
                    .unwrap()
            )
        );
        assert_eq!(is_hex64(&hex.as_bytes()[..63]), None);
        assert_eq!(is_hex64(format!("{}0", hex.as_str()).as_bytes()), None);
        for bad in [b'A', b'F', b'g', b'/', b':', b'`', b' '] {
            for at in [0, 1, 62, 63] {
                let mut s = all.clone().into_bytes();
                s[at] = bad;
                assert_eq!(is_hex64(&s), None, "{s:?}");
            }
        }
        // Every byte value in every position of a pair, against the digit rule.
        for c in 0..=255u8 {
            for at in [0, 1] {
                let mut s = all.clone().into_bytes();
                s[at] = c;
                let expected = lower_hex_digit(c).is_some();
                assert_eq!(is_hex64(&s).is_some(), expected, "{c:#04x} at {at}");
            }
        }
    }
}
