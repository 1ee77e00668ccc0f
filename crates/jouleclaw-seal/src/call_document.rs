//! What the signed documents of a call (`stop-latency/1`, `interaction-metrics/1`, and every
//! later kind a final seal lists) share in their wire form: the strict decode (JCR-1 canonical
//! JSON under the kind's limits, then its schema rules) and the schema's field readers with
//! their stable codes (`null`, `wrong_type`, `negative_unsigned`, `unknown_field`,
//! `missing_field`, `bad_root`). The `receipts_root` they bind to is
//! [`crate::receipts_root`]; the binding checks every kind starts with (the stream, the window
//! count, the root: [`check_stream`]) are here too, over what they read of the receipts
//! ([`BoundReceipts`]: the stream's [`StreamIdentity`] once, and [`ReceiptFacts`] of
//! [`ReceiptFacts::BYTES`] (80) bytes a receipt, whatever its size), and their signature in
//! the one COSE profile ([`sign`], [`verify`]: `jouleclaw_jcr1::cose::document` with the
//! kind's content type, then the kind's decoder and the CWT claims against the document).

use jouleclaw_jcr1::cose::document::{self as profile, DocumentCoseCode};
use jouleclaw_jcr1::cose::{Signer, ValidKey};
pub use jouleclaw_jcr1::fields::{
    Code, array, fields, null_or_wrong, object, string, unsigned, unsigned_or_null,
};
use jouleclaw_jcr1::{Jcr1Error, Limits, StreamWindowReceipt, decode_canonical_value};
use jouleclaw_stream::WindowConservationFinding;
use jouleclaw_stream_oracle::WindowVerdict;
use serde_json::Value;

/// Strictly decodes one whole document: at most `limits.max_document_bytes`
/// (`document_too_large` at that offset), the canonical form under `limits` (the JCR-1 code at
/// its offset), then `schema` (its code at the input's length).
pub fn decode<T>(
    bytes: &[u8],
    limits: Limits,
    schema: impl FnOnce(&Value) -> Result<T, Code>,
) -> Result<T, (Code, u64)> {
    if bytes.len() > limits.max_document_bytes {
        return Err(("document_too_large", limits.max_document_bytes as u64));
    }
    let value = decode_canonical_value(bytes, limits).map_err(|r| (r.code.as_str(), r.offset))?;
    schema(&value).map_err(|code| (code, bytes.len() as u64))
}

/// A document kind, as its decoder's refusals name it.
pub trait DocumentKind: Copy + core::fmt::Debug + Eq + core::hash::Hash {
    /// The name in a refusal's message (`"stop-latency/1"`, `"interaction-metrics/1"`).
    const NAME: &'static str;
}

/// Why a kind's strict decoder refused ([`decode_kind`]): a stable code (a JCR-1 code or a
/// schema code of the kind) and the byte offset (the input length for schema rules).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Refusal<K> {
    /// The stable code.
    pub code: Code,
    /// Where, in bytes from the start of the document.
    pub offset: u64,
    kind: core::marker::PhantomData<K>,
}

impl<K> Refusal<K> {
    /// The refusal with `code` at `offset`.
    pub fn new(code: Code, offset: u64) -> Self {
        Self {
            code,
            offset,
            kind: core::marker::PhantomData,
        }
    }
}

impl<K> core::fmt::Debug for Refusal<K> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Refusal")
            .field("code", &self.code)
            .field("offset", &self.offset)
            .finish()
    }
}

impl<K: DocumentKind> core::fmt::Display for Refusal<K> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "{} refused ({}) at byte {}",
            K::NAME,
            self.code,
            self.offset
        )
    }
}

impl<K: DocumentKind> std::error::Error for Refusal<K> {}

/// [`decode`] with the refusal as the kind's [`Refusal`].
pub fn decode_kind<K, T>(
    bytes: &[u8],
    limits: Limits,
    schema: impl FnOnce(&Value) -> Result<T, Code>,
) -> Result<T, Refusal<K>> {
    decode(bytes, limits, schema).map_err(|(code, offset)| Refusal::new(code, offset))
}

/// A 32-byte hash in 64 lowercase hex digits (`bad_root` otherwise).
pub fn root_hex(s: &str) -> Result<[u8; 32], Code> {
    if s.len() != 64 || !s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err("bad_root");
    }
    let mut out = [0u8; 32];
    hex::decode_to_slice(s, &mut out).map_err(|_| "bad_root")?;
    Ok(out)
}

/// One way a document and the receipts disagree.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BindingProblem {
    /// A stable code: [`STREAM_BINDING_CODES`] or the kind's own.
    pub code: &'static str,
    /// A readable sentence.
    pub detail: String,
}

impl core::fmt::Display for BindingProblem {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}: {}", self.code, self.detail)
    }
}

/// The codes of [`check_stream`], in the order it looks for them.
pub const STREAM_BINDING_CODES: &[&str] =
    &["stream_mismatch", "window_count_mismatch", "root_mismatch"];

/// What a document of a call states about its stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamBinding<'a> {
    /// The receipts' steward.
    pub steward: &'a str,
    /// The receipts' stream id.
    pub stream_id: &'a str,
    /// How many window receipts the stream has.
    pub window_count: u64,
    /// The RFC 9162 root over the receipts' content hashes.
    pub receipts_root: &'a [u8; 32],
}

/// A window verdict as the binding checks read it: its kind, and a yield's window (what a
/// [`WindowVerdict`] holds besides, its oracles' names and reasons, is not kept).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VerdictFact {
    /// [`WindowVerdict::Pass`].
    Pass,
    /// [`WindowVerdict::Fail`].
    Fail,
    /// [`WindowVerdict::Yield`].
    Yield {
        /// The id of the window the barge-in was seen in.
        seen_at: u64,
    },
    /// [`WindowVerdict::NeedMore`].
    NeedMore,
}

impl VerdictFact {
    /// The verdict's facts.
    pub fn of(v: &WindowVerdict) -> Self {
        match v {
            WindowVerdict::Pass { .. } => Self::Pass,
            WindowVerdict::Fail { .. } => Self::Fail,
            WindowVerdict::Yield { seen_at } => Self::Yield { seen_at: *seen_at },
            WindowVerdict::NeedMore { .. } => Self::NeedMore,
        }
    }

    /// The wire kind, [`WindowVerdict::kind_str`]'s: `"pass"`, `"fail"`, `"yield"` or
    /// `"need_more"`.
    pub fn kind_str(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::Fail => "fail",
            Self::Yield { .. } => "yield",
            Self::NeedMore => "need_more",
        }
    }
}

/// What the binding checks read of one window receipt: a fixed [`ReceiptFacts::BYTES`] bytes,
/// whatever the receipt's size (its steward and stream id are read once for the whole stream,
/// by [`StreamIdentity`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReceiptFacts {
    /// The window's index.
    pub window_id: u64,
    /// The verdict's kind and a yield's window.
    pub verdict: VerdictFact,
    /// The ledger's window summary (a `barge_in_ignored` finding is what the checks read).
    pub conservation: WindowConservationFinding,
    /// BLAKE3 of the receipt's canonical bytes (its line).
    pub content_hash: [u8; 32],
}

impl ReceiptFacts {
    /// The size of one record in memory, in bytes.
    pub const BYTES: usize = core::mem::size_of::<Self>();

    /// The facts of `receipt`, whose content hash is `content_hash`.
    pub fn of(receipt: &StreamWindowReceipt, content_hash: [u8; 32]) -> Self {
        Self {
            window_id: receipt.window_id,
            verdict: VerdictFact::of(&receipt.verdict),
            conservation: receipt.conservation,
            content_hash,
        }
    }
}

/// What `stream_mismatch` needs of a stream's receipts, read in order ([`StreamIdentity::add`]):
/// the first receipt's steward, stream id and id, and the id of the first receipt whose
/// steward or stream id differs from the first's. Bounded by a receipt's strings, whatever
/// the number of receipts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamIdentity {
    first: Option<FirstReceipt>,
    first_differing_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct FirstReceipt {
    steward: String,
    stream_id: String,
    id: String,
}

impl StreamIdentity {
    /// No receipt yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The identity of `receipts`, in order.
    pub fn of<'a>(receipts: impl IntoIterator<Item = &'a StreamWindowReceipt>) -> Self {
        let mut s = Self::new();
        for r in receipts {
            s.add(r);
        }
        s
    }

    /// Reads the next receipt.
    pub fn add(&mut self, r: &StreamWindowReceipt) {
        match &self.first {
            None => {
                self.first = Some(FirstReceipt {
                    steward: r.steward.clone(),
                    stream_id: r.stream_id.clone(),
                    id: r.id(),
                });
            }
            Some(f) => {
                if self.first_differing_id.is_none()
                    && (r.steward != f.steward || r.stream_id != f.stream_id)
                {
                    self.first_differing_id = Some(r.id());
                }
            }
        }
    }

    /// The id of the first receipt read whose steward is not `steward` or whose stream id is
    /// not `stream_id`, `None` when every one is of that stream.
    pub fn first_not_of(&self, steward: &str, stream_id: &str) -> Option<&str> {
        let f = self.first.as_ref()?;
        if f.steward != steward || f.stream_id != stream_id {
            Some(&f.id)
        } else {
            self.first_differing_id.as_deref()
        }
    }
}

/// The receipts of a stream as the binding checks read them, in window order: their
/// [`StreamIdentity`] and each one's [`ReceiptFacts`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BoundReceipts {
    /// Who and which stream the receipts are of.
    pub identity: StreamIdentity,
    /// Each receipt's facts, in order.
    pub facts: Vec<ReceiptFacts>,
}

impl BoundReceipts {
    /// No receipt yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads the next receipt, whose content hash is `content_hash`.
    pub fn push(&mut self, receipt: &StreamWindowReceipt, content_hash: [u8; 32]) {
        self.identity.add(receipt);
        self.facts.push(ReceiptFacts::of(receipt, content_hash));
    }

    /// The projection of `receipts` (each with its content hash), in order.
    pub fn of(receipts: &[(StreamWindowReceipt, [u8; 32])]) -> Self {
        let mut out = Self {
            identity: StreamIdentity::new(),
            facts: Vec::with_capacity(receipts.len()),
        };
        for (r, h) in receipts {
            out.push(r, *h);
        }
        out
    }

    /// The RFC 9162 root over the receipts' content hashes in order ([`crate::receipts_root`]),
    /// `None` past what a Merkle log holds.
    pub fn root(&self) -> Option<[u8; 32]> {
        let hashes: Vec<[u8; 32]> = self.facts.iter().map(|f| f.content_hash).collect();
        crate::receipts_root(&hashes).ok()
    }
}

/// The RFC 9162 root over `receipts`' content hashes in order ([`crate::receipts_root`]),
/// `None` past what a Merkle log holds.
pub fn root_of(receipts: &[(StreamWindowReceipt, [u8; 32])]) -> Option<[u8; 32]> {
    let hashes: Vec<[u8; 32]> = receipts.iter().map(|(_, h)| *h).collect();
    crate::receipts_root(&hashes).ok()
}

/// The binding checks every kind starts with, in order: every receipt of the document's
/// stream (`stream_mismatch`, the first that is not), the window count
/// (`window_count_mismatch`), and `root` (the root over exactly `receipts`' content hashes in
/// order, `None` when there is none) equal to the document's (`root_mismatch`).
pub fn check_stream(
    doc: StreamBinding<'_>,
    receipts: &BoundReceipts,
    root: Option<[u8; 32]>,
) -> Vec<BindingProblem> {
    let mut out = Vec::new();
    let mut p = |code: &'static str, detail: String| out.push(BindingProblem { code, detail });
    let count = receipts.facts.len();
    if let Some(id) = receipts.identity.first_not_of(doc.steward, doc.stream_id) {
        p(
            "stream_mismatch",
            format!(
                "the document is for {}/{}, receipt {id} is not",
                doc.steward, doc.stream_id,
            ),
        );
    }
    if doc.window_count != count as u64 {
        p(
            "window_count_mismatch",
            format!(
                "the document counts {} window receipts, there are {count}",
                doc.window_count,
            ),
        );
    }
    match root {
        Some(root) if root == *doc.receipts_root => {}
        _ => p(
            "root_mismatch",
            format!(
                "the document's receipts_root {} is not the root over the {count} receipts",
                hex::encode(doc.receipts_root),
            ),
        ),
    }
    out
}

/// A document of a call as its binding to the receipts sees it: what it states about its
/// stream ([`check_stream`]'s checks, every kind's first) and the checks of its own kind after
/// them ([`check_bound_under_root`]).
pub trait BoundDocument {
    /// What the document states about its stream.
    fn stream_binding(&self) -> StreamBinding<'_>;

    /// The kind's own binding checks, after [`check_stream`]'s, over each receipt's facts in
    /// window order: each problem pushed to `out`, in the order the kind looks for them.
    fn check_kind(&self, receipts: &[ReceiptFacts], out: &mut Vec<BindingProblem>);
}

/// Checks a verified document against the stream's receipts, in window order, with their
/// BLAKE3 content hashes: [`check_stream`], then the kind's own checks. Empty: bound. The
/// receipts are read as [`BoundReceipts`] ([`check_bound_under_root`] takes those directly).
pub fn check_receipts<D: BoundDocument>(
    doc: &D,
    receipts: &[(StreamWindowReceipt, [u8; 32])],
) -> Vec<BindingProblem> {
    let bound = BoundReceipts::of(receipts);
    let root = bound.root();
    check_bound_under_root(doc, &bound, root)
}

/// [`check_receipts`] with the receipts' root already known: `root` is the RFC 9162 root over
/// exactly `receipts`' content hashes in order ([`root_of`]; a caller that verified a seal over
/// these receipts holds it already), `None` when there is none (more receipts than a Merkle log
/// holds: `root_mismatch`). A root over other receipts makes the answer meaningless.
pub fn check_receipts_under_root<D: BoundDocument>(
    doc: &D,
    receipts: &[(StreamWindowReceipt, [u8; 32])],
    root: Option<[u8; 32]>,
) -> Vec<BindingProblem> {
    check_bound_under_root(doc, &BoundReceipts::of(receipts), root)
}

/// [`check_receipts_under_root`] over the receipts' [`BoundReceipts`] (what a verifier reading
/// a long stream keeps: [`ReceiptFacts::BYTES`] bytes a receipt). `root` is the RFC 9162 root
/// over exactly their content hashes in order ([`BoundReceipts::root`]), `None` when there is
/// none.
pub fn check_bound_under_root<D: BoundDocument>(
    doc: &D,
    receipts: &BoundReceipts,
    root: Option<[u8; 32]>,
) -> Vec<BindingProblem> {
    let mut out = check_stream(doc.stream_binding(), receipts, root);
    doc.check_kind(&receipts.facts, &mut out);
    out
}

/// A signed document of a call and the bytes a verifier in another language may want.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signed<D> {
    /// The document.
    pub document: D,
    /// Its canonical bytes (the payload).
    pub payload: Vec<u8>,
    /// BLAKE3 of the payload.
    pub content_hash: [u8; 32],
    /// The serialized protected header.
    pub protected: Vec<u8>,
    /// `Sig_structure` bytes that were signed.
    pub to_be_signed: Vec<u8>,
    /// The tagged COSE_Sign1.
    pub cose_sign1: Vec<u8>,
}

/// Signs `document`, whose canonical bytes are `payload`, in the one COSE profile under
/// `content_type`, with CWT `iss` `steward` and `sub` `subject`. The signer's refusal passes
/// through.
pub fn sign<D>(
    signer: &dyn Signer,
    content_type: &str,
    steward: &str,
    subject: &str,
    document: D,
    payload: Vec<u8>,
) -> Result<Signed<D>, Jcr1Error> {
    let d = profile::sign(signer, content_type, steward, subject, payload)?;
    Ok(Signed {
        document,
        content_hash: *blake3::hash(&d.payload).as_bytes(),
        payload: d.payload,
        protected: d.protected,
        to_be_signed: d.to_be_signed,
        cose_sign1: d.cose_sign1,
    })
}

/// Why [`verify`] refused a signed document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifyRefusal<R> {
    /// The profile (or the CWT claims: `cose_iss_mismatch`, `cose_sub_mismatch`).
    Cose(DocumentCoseCode),
    /// The kind's decoder refused the payload.
    Payload(R),
}

/// Verifies a signed document under `key` in this order: the one COSE profile with the kind's
/// `content_type` and size bound (`jouleclaw_jcr1::cose::document::verify`: envelope,
/// headers, kid, `verify_strict`), the kind's strict `decode` of the payload, then CWT `iss`
/// against `claims`' steward and `sub` against its subject. The key is checked once, where the
/// caller made the [`ValidKey`], not here.
pub fn verify<D, R>(
    bytes: &[u8],
    key: &ValidKey,
    content_type: &str,
    max_bytes: usize,
    decode: impl FnOnce(&[u8]) -> Result<D, R>,
    claims: impl FnOnce(&D) -> (&str, String),
) -> Result<Signed<D>, VerifyRefusal<R>> {
    let v = profile::verify(bytes, key, content_type, max_bytes).map_err(VerifyRefusal::Cose)?;
    let document = decode(&v.payload).map_err(VerifyRefusal::Payload)?;
    let (steward, subject) = claims(&document);
    if v.iss != steward {
        return Err(VerifyRefusal::Cose(DocumentCoseCode::IssMismatch));
    }
    if v.sub != subject {
        return Err(VerifyRefusal::Cose(DocumentCoseCode::SubMismatch));
    }
    Ok(Signed {
        document,
        content_hash: *blake3::hash(&v.payload).as_bytes(),
        payload: v.payload,
        protected: v.protected,
        to_be_signed: v.to_be_signed,
        cose_sign1: bytes.to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A canonical receipt (window 0 of `examples/golden/tool-call.receipts.jsonl`).
    const LINE: &[u8] = br#"{"closed_at":"2026-06-05T00:00:00Z","conservation":{"kind":"conforming"},"energy_provenance":"Estimator","id":"stream-demo:0000","inbound_bytes":6400,"jc_receipt":"stream-window/1","joules_uj":180,"outbound_bytes":0,"steward":"did:keri:EJ9testStewardAID000000000000000","stream_id":"stream-demo","tick_count":2,"verdict":{"chain":["always-pass-stream","barge-in-detector","per-tick:utf8-text","structured:04d0f386107113a0"],"kind":"pass"},"window_hash":"97e995c87971d6691105b6eb69a2862ab9dcfa15e1091926f94936396fac5f03","window_id":0}"#;

    /// The stream identity names the receipt a scan of every receipt names (the first whose
    /// steward or stream id is not the document's), wherever the first difference is and
    /// whatever the document states.
    #[test]
    fn the_stream_identity_names_the_first_receipt_not_of_the_documents_stream() {
        let base = jouleclaw_jcr1::decode_receipt(LINE).unwrap();
        let (s, t) = (base.steward.clone(), base.stream_id.clone());
        let at = |w: u64, steward: &str, stream: &str| StreamWindowReceipt {
            window_id: w,
            steward: steward.to_owned(),
            stream_id: stream.to_owned(),
            ..base.clone()
        };
        let streams: Vec<Vec<StreamWindowReceipt>> = vec![
            vec![],
            vec![at(0, &s, &t), at(1, &s, &t), at(2, &s, &t)],
            vec![at(0, &s, &t), at(1, &s, "other"), at(2, "x", &t)],
            vec![at(0, &s, "other"), at(1, &s, &t), at(2, &s, "other")],
            vec![at(0, "x", &t), at(1, "x", &t), at(2, &s, &t)],
            vec![at(0, &s, &t), at(1, &s, &t), at(2, "x", "other")],
        ];
        let docs = [
            (s.as_str(), t.as_str()),
            (&s, "other"),
            ("x", &t),
            ("x", "y"),
        ];
        let mut named = 0;
        for rs in &streams {
            let identity = StreamIdentity::of(rs);
            for (steward, stream) in docs {
                let scan = rs
                    .iter()
                    .find(|r| r.steward != steward || r.stream_id != stream)
                    .map(StreamWindowReceipt::id);
                assert_eq!(
                    identity.first_not_of(steward, stream),
                    scan.as_deref(),
                    "{steward}/{stream} over {:?}",
                    rs.iter()
                        .map(|r| (&r.steward, &r.stream_id))
                        .collect::<Vec<_>>()
                );
                named += usize::from(scan.is_some());
            }
        }
        // Both answers occur: a receipt named, and none.
        assert!(named > 0 && named < streams.len() * docs.len());
        assert_eq!(
            StreamIdentity::of(&streams[2]).first_not_of(&s, &t),
            Some("other:0001")
        );
        assert_eq!(StreamIdentity::of(&streams[1]).first_not_of(&s, &t), None);
    }

    /// A receipt's facts are a fixed few bytes, and keep what the checks read of the verdict.
    #[test]
    fn a_receipts_facts_are_a_few_bytes_and_keep_the_verdicts_kind() {
        assert_eq!(ReceiptFacts::BYTES, 80);
        for v in [
            WindowVerdict::pass_by("a"),
            WindowVerdict::fail("o", "r"),
            WindowVerdict::Yield { seen_at: 7 },
            WindowVerdict::NeedMore {
                oracle: "o".into(),
                reason: "r".into(),
            },
        ] {
            assert_eq!(VerdictFact::of(&v).kind_str(), v.kind_str());
        }
        assert_eq!(
            VerdictFact::of(&WindowVerdict::Yield { seen_at: 7 }),
            VerdictFact::Yield { seen_at: 7 }
        );
        let base = jouleclaw_jcr1::decode_receipt(LINE).unwrap();
        let mut bound = BoundReceipts::new();
        bound.push(&base, [9; 32]);
        assert_eq!(
            bound.facts,
            [ReceiptFacts {
                window_id: 0,
                verdict: VerdictFact::Pass,
                conservation: WindowConservationFinding::Conforming,
                content_hash: [9; 32],
            }]
        );
        assert_eq!(bound, BoundReceipts::of(&[(base, [9; 32])]));
        assert_eq!(bound.root(), crate::receipts_root(&[[9; 32]]).ok());
    }

    #[test]
    fn readers_name_the_refusal() {
        assert_eq!(string(&json!(null)), Err("null"));
        assert_eq!(string(&json!(1)), Err("wrong_type"));
        assert_eq!(string(&json!("a")), Ok("a"));
        assert_eq!(unsigned(&json!(-1)), Err("negative_unsigned"));
        assert_eq!(unsigned(&json!("1")), Err("wrong_type"));
        assert_eq!(unsigned(&json!(7)), Ok(7));
        assert_eq!(unsigned_or_null(&json!(null)), Ok(None));
        assert_eq!(unsigned_or_null(&json!(true)), Err("wrong_type"));
        assert_eq!(array(&json!({})), Err("wrong_type"));
        let m = json!({"a": 1, "b": 2});
        let m = object(&m).unwrap();
        assert_eq!(fields(m, &["a", "b"]), Ok(()));
        assert_eq!(fields(m, &["a"]), Err("unknown_field"));
        assert_eq!(fields(m, &["a", "b", "c"]), Err("missing_field"));
    }

    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    struct Kind;

    impl DocumentKind for Kind {
        const NAME: &'static str = "test-kind/1";
    }

    #[test]
    fn a_refusal_names_its_kind_code_and_offset() {
        let limits = Limits {
            max_document_bytes: 16,
            max_depth: 2,
            max_string_bytes: 16,
            max_array_len: 4,
        };
        let r =
            decode_kind::<Kind, _>(br#"{"a":null}"#, limits, |v| unsigned(&v["a"])).unwrap_err();
        assert_eq!((r.code, r.offset), ("null", 10));
        assert_eq!(r.to_string(), "test-kind/1 refused (null) at byte 10");
        assert_eq!(format!("{r:?}"), r#"Refusal { code: "null", offset: 10 }"#);
        assert_eq!(r, Refusal::<Kind>::new("null", 10));
        assert_eq!(
            decode_kind::<Kind, _>(br#"{"a":1}"#, limits, |v| unsigned(&v["a"])),
            Ok(1)
        );
    }

    #[test]
    fn roots_are_lowercase_hex_of_32_bytes() {
        let good = "ab".repeat(32);
        assert_eq!(root_hex(&good), Ok([0xab; 32]));
        assert_eq!(root_hex(&"AB".repeat(32)), Err("bad_root"));
        assert_eq!(root_hex(&good[..62]), Err("bad_root"));
    }

    #[test]
    fn decode_refuses_in_order() {
        let limits = Limits {
            max_document_bytes: 16,
            max_depth: 2,
            max_string_bytes: 16,
            max_array_len: 4,
        };
        let ok = |v: &Value| unsigned(&v["a"]);
        assert_eq!(decode(br#"{"a":1}"#, limits, ok), Ok(1));
        assert_eq!(
            decode(br#"{"a":1,"b":"0123456789"}"#, limits, ok),
            Err(("document_too_large", 16))
        );
        assert!(matches!(decode(br#"{"a" :1}"#, limits, ok), Err((c, _)) if c != "null"));
        assert_eq!(decode(br#"{"a":null}"#, limits, ok), Err(("null", 10)));
    }
}
