//! The profile's exact bytes: protected header, Sig_structure, envelope, and the two readers
//! (the direct one for the deterministic encoding, the general one that names every refusal).

use coset::cbor::value::Value;
use coset::{CoseSign1, Header, HeaderBuilder, Label, TaggedCborSerializable, iana};

use super::cbor::Reader;
pub(super) use super::document::sig_structure;
use super::{CONTENT_TYPE, CWT_CLAIMS_LABEL, document};
use crate::error::CoseRefusal;

/// The profile's protected header for a receipt.
pub fn protected_header(steward: &str, receipt_id: &str, kid: &[u8; 32]) -> Header {
    HeaderBuilder::new()
        .algorithm(iana::Algorithm::EdDSA)
        .content_type(CONTENT_TYPE.to_owned())
        .key_id(kid.to_vec())
        .value(
            CWT_CLAIMS_LABEL,
            Value::Map(vec![
                (Value::from(1), Value::Text(steward.to_owned())),
                (Value::from(2), Value::Text(receipt_id.to_owned())),
            ]),
        )
        .build()
}

/// The profile's protected header bytes: what coset writes for [`protected_header`].
pub(super) fn protected_bytes(steward: &str, receipt_id: &str, kid: &[u8; 32]) -> Vec<u8> {
    document::protected_bytes(CONTENT_TYPE, steward, receipt_id, kid)
}

/// The tagged COSE_Sign1 with an empty unprotected header; a detached payload is `nil`.
pub(super) fn envelope(protected: &[u8], payload: Option<&[u8]>, signature: &[u8]) -> Vec<u8> {
    document::envelope_with(protected, &[0xa0], payload, signature)
}

pub(super) fn classify_envelope(bytes: &[u8]) -> core::result::Result<(), CoseRefusal> {
    match bytes.first() {
        Some(0xd2) => Ok(()),
        Some(0x84) => Err(CoseRefusal::Untagged),
        Some(b) if b >> 5 == 6 => Err(CoseRefusal::WrongTag),
        _ => Err(CoseRefusal::MalformedCbor),
    }
}

/// The profile's fields of a COSE_Sign1 that passed every envelope and header check.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Parts {
    pub(super) protected: Vec<u8>,
    pub(super) payload: Vec<u8>,
    pub(super) signature: Vec<u8>,
    pub(super) kid: [u8; 32],
    pub(super) iss: String,
    pub(super) sub: String,
}

/// Reads the profile's deterministic encoding directly. `Some` only when `bytes` is exactly
/// `envelope(protected_bytes(iss, sub, kid), payload, signature)` with UTF-8 `iss`/`sub` and an
/// attached payload: an input on which every check of [`parse_general`] passes with these same
/// values. Anything else returns `None` and goes through [`parse_general`], which names the
/// refusal.
pub(super) fn read_profile(bytes: &[u8]) -> Option<PartsRef<'_>> {
    let mut c = Reader::new(bytes);
    c.lit(&[0xd2, 0x84])?; // tag 18, array(4)
    let protected = c.string(2)?;
    c.lit(&[0xa0])?; // unprotected: empty map
    let payload = c.string(2)?;
    let signature = c.string(2)?;
    if !c.is_empty() {
        return None;
    }
    let mut h = Reader::new(protected);
    h.lit(&[0xa4, 0x01, 0x27, 0x03])?; // map(4), alg: EdDSA, content type
    if h.string(3)? != CONTENT_TYPE.as_bytes() {
        return None;
    }
    h.lit(&[0x04])?;
    let kid: [u8; 32] = h.string(2)?.try_into().ok()?;
    h.lit(&[0x0f, 0xa2, 0x01])?; // CWT claims: map(2), iss
    let iss = core::str::from_utf8(h.string(3)?).ok()?;
    h.lit(&[0x02])?; // sub
    let sub = core::str::from_utf8(h.string(3)?).ok()?;
    if !h.is_empty() {
        return None;
    }
    // Shortest-form heads throughout (the reader takes no other), so the envelope is what
    // `envelope` writes for these parts; the protected header must be what the writer produces.
    if protected_bytes(iss, sub, &kid) != protected {
        return None;
    }
    Some(PartsRef {
        protected,
        payload,
        signature,
        kid,
        iss,
        sub,
    })
}

/// [`Parts`] borrowed from the input: what [`read_profile`] finds, without copying the payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PartsRef<'a> {
    pub(super) protected: &'a [u8],
    pub(super) payload: &'a [u8],
    pub(super) signature: &'a [u8],
    pub(super) kid: [u8; 32],
    pub(super) iss: &'a str,
    pub(super) sub: &'a str,
}

impl Parts {
    /// The borrowed view.
    pub(super) fn as_ref(&self) -> PartsRef<'_> {
        PartsRef {
            protected: &self.protected,
            payload: &self.payload,
            signature: &self.signature,
            kid: self.kid,
            iss: &self.iss,
            sub: &self.sub,
        }
    }
}

/// Every envelope and header check, in order, on coset's parse of any input.
pub(super) fn parse_general(bytes: &[u8]) -> core::result::Result<Parts, CoseRefusal> {
    classify_envelope(bytes)?;
    let sign1 = CoseSign1::from_tagged_slice(bytes).map_err(|_| CoseRefusal::MalformedCbor)?;
    let u = &sign1.unprotected;
    if u.alg.is_some() {
        return Err(CoseRefusal::AlgUnprotected);
    }
    if !u.key_id.is_empty() {
        return Err(CoseRefusal::KidUnprotected);
    }
    if !u.is_empty() {
        return Err(CoseRefusal::UnprotectedNotEmpty);
    }
    let p = &sign1.protected.header;
    if !p.crit.is_empty() {
        return Err(CoseRefusal::CritPresent);
    }
    match &p.alg {
        None => return Err(CoseRefusal::AlgMissing),
        Some(coset::Algorithm::Assigned(iana::Algorithm::EdDSA)) => {}
        Some(_) => return Err(CoseRefusal::AlgNotEdDsa),
    }
    if !p.iv.is_empty()
        || !p.partial_iv.is_empty()
        || !p.counter_signatures.is_empty()
        || p.rest
            .iter()
            .any(|(l, _)| *l != Label::Int(CWT_CLAIMS_LABEL))
    {
        return Err(CoseRefusal::UnknownProtectedLabel);
    }
    if p.content_type != Some(coset::ContentType::Text(CONTENT_TYPE.to_owned())) {
        return Err(CoseRefusal::ContentTypeMismatch);
    }
    let kid: [u8; 32] = p
        .key_id
        .as_slice()
        .try_into()
        .map_err(|_| CoseRefusal::BadKid)?;
    let (iss, sub) = cwt_claims(p).ok_or(CoseRefusal::BadCwtClaims)?;
    // The received protected bytes must be exactly what the profile produces for these values
    // (label order, integer and length encodings, no duplicates).
    let canonical = protected_bytes(&iss, &sub, &kid);
    let Some(protected) = sign1.protected.original_data.as_deref() else {
        return Err(CoseRefusal::ProtectedNotCanonical);
    };
    if protected != canonical.as_slice() {
        return Err(CoseRefusal::ProtectedNotCanonical);
    }
    // The deterministic encoding of the parts (the received protected bytes, every other length
    // in its shortest form): the input must already be exactly that.
    let expected = envelope(protected, sign1.payload.as_deref(), &sign1.signature);
    if expected != bytes {
        return Err(CoseRefusal::EnvelopeNotCanonical);
    }
    let protected = protected.to_vec();
    let Some(payload) = sign1.payload else {
        return Err(CoseRefusal::PayloadDetached);
    };
    Ok(Parts {
        protected,
        payload,
        signature: sign1.signature,
        kid,
        iss,
        sub,
    })
}

fn cwt_claims(h: &Header) -> Option<(String, String)> {
    let (_, v) = h
        .rest
        .iter()
        .find(|(l, _)| *l == Label::Int(CWT_CLAIMS_LABEL))?;
    let Value::Map(m) = v else { return None };
    match m.as_slice() {
        [(k1, Value::Text(iss)), (k2, Value::Text(sub))]
            if *k1 == Value::from(1) && *k2 == Value::from(2) =>
        {
            Some((iss.clone(), sub.clone()))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cose::cbor;
    use crate::cose::sign::tests::receipt;
    use crate::cose::{SoftwareSigner, sign_receipt};

    /// The direct reader may only take inputs the general path accepts, with the same fields.
    #[test]
    fn read_profile_agrees_with_the_general_path_on_every_mutation() {
        let signer = SoftwareSigner::rfc8032_test_key();
        let r = receipt(
            "did:keri:EJ9testStewardAID000000000000000",
            "stream-demo",
            7,
        );
        let good = sign_receipt(&signer, &r).unwrap().cose_sign1;
        let parts = read_profile(&good).unwrap();
        assert_eq!(Ok(parts), parse_general(&good).as_ref().map(Parts::as_ref));
        assert_eq!(parts.payload, r.encode().unwrap().as_slice());
        assert_eq!(
            (parts.iss, parts.sub),
            (
                "did:keri:EJ9testStewardAID000000000000000",
                "stream-demo:0007"
            )
        );

        let mut inputs = vec![Vec::new(), good[..good.len() - 1].to_vec()];
        for i in 0..good.len() {
            for v in [
                0x00, 0x01, 0x18, 0x40, 0x58, 0x59, 0x5f, 0x60, 0x78, 0x7f, 0xa0, 0xf6, 0xff,
            ] {
                let mut m = good.clone();
                m[i] = v;
                inputs.push(m);
            }
            let mut m = good.clone();
            m[i] ^= 0x80;
            inputs.push(m);
            let mut m = good.clone();
            m.insert(i, 0x00);
            inputs.push(m);
        }
        // Long-form heads around the payload and the protected header.
        let protected = parts.protected.to_vec();
        let mut long = vec![0xd2, 0x84, 0x59];
        long.extend_from_slice(&(protected.len() as u16).to_be_bytes());
        long.extend_from_slice(&protected);
        long.push(0xa0);
        cbor::string(&mut long, 2, parts.payload);
        cbor::string(&mut long, 2, parts.signature);
        inputs.push(long);

        let mut taken = 0;
        for m in &inputs {
            if let Some(fast) = read_profile(m) {
                assert_eq!(
                    Ok(fast),
                    parse_general(m).as_ref().map(Parts::as_ref),
                    "{}",
                    hex::encode(m)
                );
                taken += 1;
            }
        }
        // Payload-byte mutations keep the structure; everything else falls back.
        assert!(taken > 0 && taken < inputs.len());
    }

    #[test]
    fn detached_envelope_matches_coset() {
        let protected = protected_bytes("did:example:s", "s:0001", &[7; 32]);
        let sign1 = CoseSign1 {
            protected: coset::ProtectedHeader {
                original_data: Some(protected.clone()),
                header: protected_header("did:example:s", "s:0001", &[7; 32]),
            },
            unprotected: Header::default(),
            payload: None,
            signature: vec![1; 64],
        };
        assert_eq!(
            envelope(&protected, None, &[1; 64]),
            sign1.to_tagged_vec().unwrap()
        );
    }
}
