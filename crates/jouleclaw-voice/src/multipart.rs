//! The `multipart/form-data` body of an `/inference` request.
//!
//! This is a body format, not HTTP: the HTTP exchange itself is hyper's.

use crate::error::{Result, VoiceError};

/// The multipart boundary tried first. The WAV is searched for it; when present, a boundary
/// derived from the BLAKE3 hash of the WAV is chosen instead.
pub const FIXED_BOUNDARY: &str = "jouleclaw-voice-7b3e51c0a94d26f8";

/// How many boundaries are tried before giving up.
const MAX_BOUNDARY_CANDIDATES: u32 = 16;

/// A built body and the boundary that separates its parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MultipartBody {
    pub(crate) boundary: String,
    pub(crate) body: Vec<u8>,
}

impl MultipartBody {
    /// The `Content-Type` header value for this body.
    pub(crate) fn content_type(&self) -> String {
        format!("multipart/form-data; boundary={}", self.boundary)
    }
}

/// Candidate `n`: the fixed boundary first, then boundaries derived from the BLAKE3 hash of the
/// payload and `n` (a payload cannot be built to contain a boundary derived from its own hash).
fn candidate(n: u32, wav: &[u8]) -> String {
    if n == 0 {
        return FIXED_BOUNDARY.to_owned();
    }
    let mut h = blake3::Hasher::new();
    h.update(wav);
    h.update(&n.to_le_bytes());
    let hex = h.finalize().to_hex();
    format!("jouleclaw-voice-{}", &hex.as_str()[..32])
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

/// The first boundary candidate that occurs nowhere in `wav`.
pub(crate) fn choose_boundary(wav: &[u8]) -> Result<String> {
    first_absent(wav, (0..MAX_BOUNDARY_CANDIDATES).map(|n| candidate(n, wav)))
}

fn first_absent(wav: &[u8], mut candidates: impl Iterator<Item = String>) -> Result<String> {
    candidates
        .find(|b| !contains(wav, b.as_bytes()))
        .ok_or(VoiceError::BoundaryExhausted)
}

/// The `/inference` form: `file` (the WAV, `audio/wav`) and `response_format=json`, with a
/// boundary searched for in the WAV and re-chosen if present.
pub(crate) fn inference_form(wav: &[u8]) -> Result<MultipartBody> {
    let boundary = choose_boundary(wav)?;
    let mut body = Vec::with_capacity(wav.len().saturating_add(512));
    body.extend_from_slice(b"--");
    body.extend_from_slice(boundary.as_bytes());
    body.extend_from_slice(
        b"\r\nContent-Disposition: form-data; name=\"file\"; filename=\"audio.wav\"\r\n\
          Content-Type: audio/wav\r\n\r\n",
    );
    body.extend_from_slice(wav);
    body.extend_from_slice(b"\r\n--");
    body.extend_from_slice(boundary.as_bytes());
    body.extend_from_slice(
        b"\r\nContent-Disposition: form-data; name=\"response_format\"\r\n\r\njson\r\n--",
    );
    body.extend_from_slice(boundary.as_bytes());
    body.extend_from_slice(b"--\r\n");
    Ok(MultipartBody { boundary, body })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_boundary_is_kept_when_absent_and_replaced_when_present() {
        assert_eq!(choose_boundary(b"plain audio").unwrap(), FIXED_BOUNDARY);
        let mut wav = b"xx".to_vec();
        wav.extend_from_slice(FIXED_BOUNDARY.as_bytes());
        let b = choose_boundary(&wav).unwrap();
        assert_ne!(b, FIXED_BOUNDARY);
        assert!(!contains(&wav, b.as_bytes()));
        // Deterministic: the same payload gets the same boundary.
        assert_eq!(choose_boundary(&wav).unwrap(), b);
    }

    #[test]
    fn every_candidate_present_is_a_typed_error() {
        let some = || ["alpha".to_owned(), "beta".to_owned()].into_iter();
        assert_eq!(
            first_absent(b"..alpha..beta..", some()).unwrap_err(),
            VoiceError::BoundaryExhausted
        );
        assert_eq!(first_absent(b"..alpha..bet..", some()).unwrap(), "beta");
        // The real candidates are distinct and valid boundaries (at most 70 characters).
        let all: std::collections::BTreeSet<String> = (0..MAX_BOUNDARY_CANDIDATES)
            .map(|n| candidate(n, b"x"))
            .collect();
        assert_eq!(all.len(), MAX_BOUNDARY_CANDIDATES as usize);
        assert!(all.iter().all(|c| c.len() <= 70));
    }

    #[test]
    fn form_has_both_fields_and_closes() {
        let form = inference_form(b"RIFFdata").unwrap();
        let text = String::from_utf8(form.body.clone()).unwrap();
        let b = &form.boundary;
        assert_eq!(
            text,
            format!(
                "--{b}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"audio.wav\"\r\n\
                 Content-Type: audio/wav\r\n\r\nRIFFdata\r\n--{b}\r\n\
                 Content-Disposition: form-data; name=\"response_format\"\r\n\r\njson\r\n--{b}--\r\n"
            )
        );
        assert_eq!(
            form.content_type(),
            format!("multipart/form-data; boundary={b}")
        );
    }
}
