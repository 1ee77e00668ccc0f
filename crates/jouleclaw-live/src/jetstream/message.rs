//! The message format: one CBOR map per checkpoint batch, versions 2 (written) and 1 (still
//! read), and its content-derived message id.

use ciborium::Value;
use jouleclaw_jcr1::cose::cbor::Reader;

use crate::error::{LiveError, Result};
use crate::sink::SinkBatch;

/// The message format's version (`"v"`) the encoder writes: 2, the batch without inclusion
/// receipts ([`MESSAGE_KEYS`]). The decoder also reads version 1 ([`MESSAGE_VERSION_1`]).
pub const MESSAGE_VERSION: u64 = 2;

/// The first version of the message format: [`MESSAGE_KEYS_V1`], with one inclusion receipt
/// per receipt. Still read (journals and streams written before version 2), never written.
pub const MESSAGE_VERSION_1: u64 = 1;

/// Encodes a batch as the message body, version 2: a CBOR map with text keys `v` (2),
/// `stream_id`, `steward` (text), `seq` (uint), `final` (bool), `receipts` (array of bstr:
/// COSE_Sign1), `checkpoint` (bstr: COSE_Sign1), in that order ([`MESSAGE_KEYS`]); a final batch
/// adds the stream's signed documents after them, each when it carries it, in
/// [`DOCUMENT_KEYS`] order: `stop_latency` (`stop-latency/1`) then `interaction_metrics`
/// (`interaction-metrics/1`), each a bstr holding the COSE_Sign1 (`spec/LIVE.md` section 6.2).
/// A non-final batch with a document is refused (`malformed`): no decoder would take it.
pub fn encode_batch(batch: &SinkBatch) -> Result<Vec<u8>> {
    let documents = [&batch.stop_latency, &batch.interaction_metrics];
    if documents.iter().any(|d| d.is_some()) && !batch.is_final {
        return Err(LiveError::Malformed {
            place: "batch".into(),
            message: "a stream's documents travel only in the final batch".into(),
        });
    }
    let bstrs = |it: &mut dyn Iterator<Item = &Vec<u8>>| {
        Value::Array(it.map(|b| Value::Bytes(b.clone())).collect())
    };
    let map = Value::Map(vec![
        (
            Value::Text("v".into()),
            Value::Integer(MESSAGE_VERSION.into()),
        ),
        (
            Value::Text("stream_id".into()),
            Value::Text(batch.stream_id.clone()),
        ),
        (
            Value::Text("steward".into()),
            Value::Text(batch.steward.clone()),
        ),
        (Value::Text("seq".into()), Value::Integer(batch.seq.into())),
        (Value::Text("final".into()), Value::Bool(batch.is_final)),
        (
            Value::Text("receipts".into()),
            bstrs(&mut batch.receipts.iter().map(|r| &r.cose_sign1)),
        ),
        (
            Value::Text("checkpoint".into()),
            Value::Bytes(batch.checkpoint.clone()),
        ),
    ]);
    let map = match map {
        Value::Map(mut entries) => {
            for (key, doc) in DOCUMENT_KEYS.iter().zip(documents) {
                if let Some(doc) = doc {
                    entries.push((Value::Text((*key).into()), Value::Bytes(doc.clone())));
                }
            }
            Value::Map(entries)
        }
        map => map,
    };
    let mut out = Vec::new();
    ciborium::into_writer(&map, &mut out).map_err(|e| LiveError::Malformed {
        place: "batch".into(),
        message: e.to_string(),
    })?;
    Ok(out)
}

/// A message body decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedBatch {
    /// `v`: [`MESSAGE_VERSION_1`] or [`MESSAGE_VERSION`].
    pub version: u64,
    /// `stream_id`.
    pub stream_id: String,
    /// `steward`.
    pub steward: String,
    /// `seq`.
    pub seq: u64,
    /// `final`.
    pub is_final: bool,
    /// `receipts`.
    pub receipts: Vec<Vec<u8>>,
    /// `checkpoint`.
    pub checkpoint: Vec<u8>,
    /// `inclusion`: in a version-1 message (one inclusion receipt per receipt, which the audit
    /// checks); `None` in a version-2 message, which carries none.
    pub inclusion: Option<Vec<Vec<u8>>>,
    /// `stop_latency`, when the (final) batch carries it.
    pub stop_latency: Option<Vec<u8>>,
    /// `interaction_metrics`, when the (final) batch carries it.
    pub interaction_metrics: Option<Vec<u8>>,
}

/// The keys of a version-2 message body ([`MESSAGE_VERSION`]), in order; a final batch may
/// add [`DOCUMENT_KEYS`] after them.
pub const MESSAGE_KEYS: [&str; 7] = [
    "v",
    "stream_id",
    "steward",
    "seq",
    "final",
    "receipts",
    "checkpoint",
];

/// The keys of a version-1 message body ([`MESSAGE_VERSION_1`]), in order: [`MESSAGE_KEYS`]
/// then `inclusion` (array of bstr); a final batch may add [`DOCUMENT_KEYS`] after them.
pub const MESSAGE_KEYS_V1: [&str; 8] = [
    "v",
    "stream_id",
    "steward",
    "seq",
    "final",
    "receipts",
    "checkpoint",
    INCLUSION_KEY,
];

/// The key of a version-1 message holding its inclusion receipts.
pub const INCLUSION_KEY: &str = "inclusion";

/// The optional key of a final batch holding its signed `stop-latency/1` document.
pub const STOP_LATENCY_KEY: &str = "stop_latency";

/// The optional key of a final batch holding its signed `interaction-metrics/1` document.
pub const INTERACTION_METRICS_KEY: &str = "interaction_metrics";

/// The optional keys of a final batch after [`MESSAGE_KEYS`], each present or not, in this
/// order: the stream's signed documents.
pub const DOCUMENT_KEYS: [&str; 2] = [STOP_LATENCY_KEY, INTERACTION_METRICS_KEY];

/// Decodes a message body of version 2 (written by [`encode_batch`]) or version 1 (with
/// `inclusion`, written before); refuses anything else: an unknown version
/// ([`LiveError::UnknownMessageVersion`]), other keys, another order, `inclusion` in a
/// version-2 message, a document that is not a byte string or is in a batch that is not final.
///
/// The body is read in the message's one shape, head by head with the profile's CBOR reader
/// ([`jouleclaw_jcr1::cose::cbor::Reader`]: definite lengths, shortest-form heads, as the
/// encoder writes them), never decoded into generic values: decoding costs no more than the
/// decoded batch (the body's strings copied out, one `Vec` a receipt and inclusion receipt),
/// and a value of another type is refused where it stands, unread. Refused too (`malformed`):
/// heads not in their shortest form, indefinite lengths, and bytes after the map. `v` is read
/// first: any other version is refused as soon as it is read.
pub fn decode_batch(body: &[u8]) -> Result<DecodedBatch> {
    let bad = |m: &str| LiveError::Malformed {
        place: "message".into(),
        message: m.to_owned(),
    };
    let mut r = Reader::new(body);
    let Some(entries) = r.head(5) else {
        return Err(bad("not a CBOR map (definite length, shortest-form head)"));
    };
    // `v` first: it says which keys follow.
    if entries == 0 || r.string(3) != Some(b"v".as_slice()) {
        return Err(bad("unexpected keys: v is not the first key"));
    }
    let version = r.head(0).ok_or_else(|| bad("v not an unsigned integer"))?;
    let expected: &[&str] = match version {
        MESSAGE_VERSION => &MESSAGE_KEYS,
        MESSAGE_VERSION_1 => &MESSAGE_KEYS_V1,
        version => return Err(LiveError::UnknownMessageVersion { version }),
    };
    // The version's keys, then a subsequence of DOCUMENT_KEYS.
    let inclusion_in_v2 =
        || bad("inclusion in a version 2 message (version 2 carries no inclusion receipts)");
    let documents_at = expected.len() as u64;
    if entries < documents_at {
        return Err(bad("unexpected keys"));
    }
    let key = |r: &mut Reader<'_>, want: &str| -> Result<()> {
        match r.string(3) {
            Some(k) if k == want.as_bytes() => Ok(()),
            Some(k) if version == MESSAGE_VERSION && k == INCLUSION_KEY.as_bytes() => {
                Err(inclusion_in_v2())
            }
            _ => Err(bad("unexpected keys")),
        }
    };
    let text = |r: &mut Reader<'_>, name: &str| -> Result<String> {
        r.string(3)
            .and_then(|t| std::str::from_utf8(t).ok())
            .map(str::to_owned)
            .ok_or_else(|| bad(&format!("{name} not a text string")))
    };
    let bytes = |r: &mut Reader<'_>, name: &str| -> Result<Vec<u8>> {
        r.string(2)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| bad(&format!("{name} not a byte string")))
    };
    let bytes_list = |r: &mut Reader<'_>, name: &str| -> Result<Vec<Vec<u8>>> {
        let n = r
            .head(4)
            .ok_or_else(|| bad(&format!("{name} not an array")))?;
        // Every item takes at least one byte of the body: the declared length never
        // reserves more than the body holds.
        let mut out = Vec::with_capacity(usize::try_from(n).unwrap_or(0).min(r.rest().len()));
        for _ in 0..n {
            out.push(bytes(r, &format!("an item of {name}"))?);
        }
        Ok(out)
    };
    key(&mut r, "stream_id")?;
    let stream_id = text(&mut r, "stream_id")?;
    key(&mut r, "steward")?;
    let steward = text(&mut r, "steward")?;
    key(&mut r, "seq")?;
    let seq = r
        .head(0)
        .ok_or_else(|| bad("seq not an unsigned integer"))?;
    key(&mut r, "final")?;
    let is_final = match r.rest().first() {
        Some(0xf4) => false,
        Some(0xf5) => true,
        _ => return Err(bad("final not a bool")),
    };
    r.take(1).ok_or_else(|| bad("final not a bool"))?;
    key(&mut r, "receipts")?;
    let receipts = bytes_list(&mut r, "receipts")?;
    key(&mut r, "checkpoint")?;
    let checkpoint = bytes(&mut r, "checkpoint")?;
    let inclusion = if version == MESSAGE_VERSION_1 {
        key(&mut r, INCLUSION_KEY)?;
        Some(bytes_list(&mut r, INCLUSION_KEY)?)
    } else {
        None
    };
    // Each document key at most once, in DOCUMENT_KEYS order: a slot is taken only after
    // the ones before it.
    let mut documents: [(&str, Option<Vec<u8>>); 2] = DOCUMENT_KEYS.map(|k| (k, None));
    let mut slots = documents.iter_mut();
    for _ in documents_at..entries {
        let k = r.string(3);
        if version == MESSAGE_VERSION && k == Some(INCLUSION_KEY.as_bytes()) {
            return Err(inclusion_in_v2());
        }
        let Some((name, slot)) = slots.find(|(d, _)| Some(d.as_bytes()) == k) else {
            return Err(bad("unexpected keys"));
        };
        if !is_final {
            return Err(bad(&format!("{name} in a batch that is not final")));
        }
        *slot = Some(bytes(&mut r, name)?);
    }
    if !r.is_empty() {
        return Err(bad("bytes after the message's map"));
    }
    let [(_, stop_latency), (_, interaction_metrics)] = documents;
    Ok(DecodedBatch {
        version,
        stream_id,
        steward,
        seq,
        is_final,
        receipts,
        checkpoint,
        inclusion,
        stop_latency,
        interaction_metrics,
    })
}

/// The content-derived message id: lower-case hex BLAKE3 of the body.
pub fn message_id(body: &[u8]) -> String {
    blake3::hash(body).to_hex().to_string()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A version-2 body (stream `s`, steward `st`, not final, checkpoint `h'00'`) with the raw
    /// CBOR of `v`, `seq` and `receipts`, and `tail` after the map.
    fn body(v: &[u8], seq: &[u8], receipts: &[u8], tail: &[u8]) -> Vec<u8> {
        let mut b = vec![0xa7];
        let text = |b: &mut Vec<u8>, t: &str| {
            jouleclaw_jcr1::cose::cbor::string(b, 3, t.as_bytes());
        };
        text(&mut b, "v");
        b.extend_from_slice(v);
        text(&mut b, "stream_id");
        text(&mut b, "s");
        text(&mut b, "steward");
        text(&mut b, "st");
        text(&mut b, "seq");
        b.extend_from_slice(seq);
        text(&mut b, "final");
        b.push(0xf4);
        text(&mut b, "receipts");
        b.extend_from_slice(receipts);
        text(&mut b, "checkpoint");
        b.extend_from_slice(&[0x41, 0x00]);
        b.extend_from_slice(tail);
        b
    }

    fn refusal(body: &[u8]) -> String {
        let e = decode_batch(body).unwrap_err();
        assert_eq!(e.code(), "malformed", "{e}");
        e.to_string()
    }

    #[test]
    fn the_neighbour_in_the_encoders_form_decodes() {
        let d = decode_batch(&body(&[0x02], &[0x18, 24], &[0x81, 0x41, 7], &[])).unwrap();
        assert_eq!(d.seq, 24);
        assert_eq!(d.receipts, vec![vec![7]]);
        assert_eq!(d.checkpoint, vec![0]);
    }

    #[test]
    fn bytes_after_the_map_are_refused() {
        let m = refusal(&body(&[0x02], &[0x00], &[0x80], &[0x00]));
        assert!(m.contains("bytes after the message's map"), "{m}");
    }

    #[test]
    fn heads_not_in_their_shortest_form_are_refused() {
        // seq 0 in a one-byte argument; v 2 in a two-byte argument.
        refusal(&body(&[0x02], &[0x18, 0x00], &[0x80], &[]));
        refusal(&body(&[0x19, 0x00, 0x02], &[0x00], &[0x80], &[]));
        // The receipts' array length and a receipt's length in a one-byte argument.
        refusal(&body(&[0x02], &[0x00], &[0x98, 0x01, 0x41, 7], &[]));
        refusal(&body(&[0x02], &[0x00], &[0x81, 0x58, 0x01, 7], &[]));
    }

    #[test]
    fn indefinite_lengths_and_tagged_integers_are_refused() {
        // An indefinite-length array of receipts, an indefinite-length receipt.
        refusal(&body(&[0x02], &[0x00], &[0x9f, 0x41, 7, 0xff], &[]));
        refusal(&body(&[0x02], &[0x00], &[0x81, 0x5f, 0x41, 7, 0xff], &[]));
        // seq 5 as a tag-2 bignum.
        let m = refusal(&body(&[0x02], &[0xc2, 0x41, 0x05], &[0x80], &[]));
        assert!(m.contains("seq not an unsigned integer"), "{m}");
        // An indefinite-length map.
        let mut b = body(&[0x02], &[0x00], &[0x80], &[0xff]);
        b[0] = 0xbf;
        refusal(&b);
    }

    #[test]
    fn a_declared_length_the_body_does_not_hold_is_refused_without_reserving_it() {
        // 2^60 receipts declared in a nine-byte head, one present.
        let m = refusal(&body(
            &[0x02],
            &[0x00],
            &[0x9b, 0x10, 0, 0, 0, 0, 0, 0, 0, 0x41, 7],
            &[],
        ));
        assert!(m.contains("an item of receipts not a byte string"), "{m}");
        // 2^60 map entries.
        let mut b = body(&[0x02], &[0x00], &[0x80], &[]);
        b.splice(0..1, [0xbb, 0x10, 0, 0, 0, 0, 0, 0, 0]);
        refusal(&b);
    }

    #[test]
    fn an_unknown_version_is_refused_as_soon_as_it_is_read() {
        let e = decode_batch(&body(&[0x03], &[0x00], &[0x80], &[0xff, 0xff])).unwrap_err();
        assert_eq!(e, LiveError::UnknownMessageVersion { version: 3 });
    }
}
