//! The auditor: a stream read back (a [`FileSink`](crate::FileSink) folder, a JetStream
//! read-back, the batches a sink was handed) is served to the one stream verifier of the stream
//! at rest (`jouleclaw_store::verify_stream`) through a small fetch interface
//! (`jouleclaw_store::source::StreamSource`: a [`DirSource`] for a folder, a [`HeldStream`]
//! for a stream held in memory), and [`audit_source`] adds what only the storage knows (the
//! verifier checks the signed documents and their binding to the receipts itself).

use std::path::Path;

use jouleclaw_jcr1::cose::ValidKey;
use jouleclaw_seal::verify_checkpoint;
use jouleclaw_store::source::{DirSource, Fetched, StreamSource};
use jouleclaw_store::{Completeness, verify_stream};

use crate::error::{LiveError, Result};
use crate::file::PARTIAL_SUFFIX;
use crate::sink::unescape_id;

/// One stream as read back: its receipts and checkpoints in stored order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamRecords {
    /// The stream id the storage names (folder or subject).
    pub stream_id: String,
    /// The receipts' COSE_Sign1 bytes, in order.
    pub receipts: Vec<Vec<u8>>,
    /// The checkpoints' COSE_Sign1 bytes, in order.
    pub seals: Vec<Vec<u8>>,
    /// Whether the storage marks the stream sealed (a renamed folder; a final batch).
    pub sealed: bool,
    /// Problems found while reading (unreadable or malformed items).
    pub read_problems: Vec<Problem>,
}

/// One problem of a stream's audit; shown as one line, `code: sentence` (with the file it
/// concerns first when it names one: `file: code: sentence`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// A stable code: the stream verifier's (`jouleclaw_store::Problem::code`), a signed
    /// document's verifier's or binding check's, or the storage's (`misplaced_stream`,
    /// `misplaced_steward`, `unsealed`, `malformed_name`, the read-back's).
    pub code: &'static str,
    /// The file it concerns, when the line names it before the code.
    pub file: Option<&'static str>,
    /// The sentence; untrusted text in it is escaped where it is made.
    pub message: String,
}

impl Problem {
    /// A problem of `code` with its sentence.
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            file: None,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(file) = self.file {
            write!(f, "{file}: ")?;
        }
        write!(f, "{}: {}", self.code, self.message)
    }
}

/// The verdict on one stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamAudit {
    /// The stream.
    pub stream_id: String,
    /// Receipts read.
    pub receipts: usize,
    /// Receipts a verified signature covers: their own (a window signature) or a verified
    /// checkpoint's (an inclusion receipt, read or derived).
    pub verified: usize,
    /// Checkpoints that verified.
    pub checkpoints: usize,
    /// Every problem, in the order found.
    pub problems: Vec<Problem>,
    /// What the stream verifier found of the call's signed documents themselves
    /// (`jouleclaw_store::DirReport::document_problems`, in its words): each is also among
    /// [`StreamAudit::problems`], unless the storage does not mark the stream sealed and it
    /// is a missing document's.
    pub document_problems: Vec<jouleclaw_store::Problem>,
}

impl StreamAudit {
    /// No problem at all: every receipt verified, the seals chain, the final seal covers
    /// exactly the receipts in order.
    pub fn is_complete(&self) -> bool {
        self.problems.is_empty()
    }

    /// Whether a problem starts with `prefix`: its code (`missing_window`), or its code and
    /// the start of its sentence.
    pub fn has_problem(&self, prefix: &str) -> bool {
        self.problems
            .iter()
            .any(|p| p.to_string().starts_with(prefix))
    }

    /// Every problem as its line.
    pub fn lines(&self) -> Vec<String> {
        self.problems.iter().map(ToString::to_string).collect()
    }
}

/// [`audit_source`] over a stream held in memory, whose reading cannot fail, stored under
/// `steward` when the storage names one.
fn audit_held(
    mut held: HeldStream<'_>,
    rec: &StreamRecords,
    steward: Option<&str>,
    key: &ValidKey,
) -> StreamAudit {
    let stored = Stored {
        stream_id: rec.stream_id.clone(),
        steward: steward.map(str::to_owned),
        sealed: rec.sealed,
        problems: rec.read_problems.clone(),
    };
    let receipts = rec.receipts.len();
    audit_source(&mut held, key, stored).unwrap_or_else(|e| StreamAudit {
        stream_id: rec.stream_id.clone(),
        receipts,
        verified: 0,
        checkpoints: rec.seals.len(),
        problems: vec![Problem::new("unreadable", e.to_string())],
        document_problems: Vec::new(),
    })
}

/// A stream folder's name, its escaped id and whether it is sealed (not `.partial`). A name
/// that is not UTF-8 is read with U+FFFD for its invalid bytes: no escaped stream id holds
/// that character, so the folder is audited and reported `malformed_name`, and one such folder
/// does not stop the audit of the others.
fn folder_name(path: &Path) -> Result<(String, String, bool)> {
    let name = path
        .file_name()
        .ok_or_else(|| LiveError::Malformed {
            place: path.display().to_string(),
            message: "not a stream folder name".to_owned(),
        })?
        .to_string_lossy()
        .into_owned();
    Ok(match name.strip_suffix(PARTIAL_SUFFIX) {
        Some(t) => {
            let token = t.to_owned();
            (name, token, false)
        }
        None => (name.clone(), name, true),
    })
}

/// Audits one stream folder of a [`FileSink`](crate::FileSink) ([`audit_source`] over a
/// [`DirSource`]: bounded, streaming, inputs opened without following symbolic links), adding
/// what only the live layout knows: a folder still named `.partial` is `unsealed`, a folder
/// name that is not an escaped stream id is `malformed_name`. Errors when `path` is not a
/// directory or cannot be read.
pub fn audit_stream_dir(path: &Path, key: &ValidKey) -> Result<StreamAudit> {
    let (name, token, sealed) = folder_name(path)?;
    let unescaped = unescape_id(&token);
    let mut problems = Vec::new();
    if unescaped.is_none() {
        problems.push(Problem::new(
            "malformed_name",
            format!(
                "\"{}\" is not an escaped stream id",
                jouleclaw_store::escape_untrusted(&name)
            ),
        ));
    }
    let stored = Stored {
        stream_id: unescaped.unwrap_or(token),
        steward: None,
        sealed,
        problems,
    };
    let malformed = |e: jouleclaw_store::StoreError| LiveError::Malformed {
        place: path.display().to_string(),
        message: e.to_string(),
    };
    let mut dir = DirSource::open(path).map_err(malformed)?;
    audit_source(&mut dir, key, stored).map_err(malformed)
}

/// What the storage says of a stream beside its files: the id it is stored under, whether it
/// marks it sealed (a folder renamed from `.partial`; a final batch), and the problems found
/// while reading it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// The stream id the storage names (folder or subject).
    pub stream_id: String,
    /// The steward the storage names, if it names one (a subject's; a folder names none).
    pub steward: Option<String>,
    /// Whether the storage marks the stream sealed.
    pub sealed: bool,
    /// Problems found while reading, listed first.
    pub problems: Vec<Problem>,
}

/// The one audit of a stream at rest, wherever it is read from: the stream verifier
/// ([`jouleclaw_store::verify_stream`]: every receipt, window signature, checkpoint and
/// inclusion receipt, completeness against the final seal, the final seal's commitment to the
/// signed documents, the signed documents themselves (verified under the key and bound to the
/// receipts, a missing one named when required), and, from a directory, `signer.pub` and
/// `summary.json`), then what the storage knows: `misplaced_stream` when the receipts are of
/// another stream than the one it is stored as, `misplaced_steward` when they are of another
/// steward than the one it is stored under (when the storage names one), `unsealed` when the
/// stream has no seal or the storage does not mark it sealed. At most
/// `jouleclaw_store::MAX_NAMED_PROBLEMS` problems of the verifier are listed, then one
/// `more_problems` line with the count of the rest; the signed documents' problems follow the
/// storage's (the first `jouleclaw_store::MAX_NAMED_PROBLEMS` of each document, then one
/// `more_problems` line with the count of the rest). The documents are written with the final batch, so a stream the storage does not
/// mark sealed (named `unsealed`) is not asked for them: the verifier's
/// `stop_latency_missing` and `interaction_metrics_missing` are left out of its problems
/// (they stay in [`StreamAudit::document_problems`]).
///
/// `key` is checked once by the caller ([`ValidKey::new`]), for every stream it audits.
///
/// Errors only when the source cannot be read.
pub fn audit_source<S: StreamSource>(
    src: &mut S,
    key: &ValidKey,
    stored: Stored,
) -> jouleclaw_store::Result<StreamAudit> {
    let Stored {
        stream_id,
        steward,
        sealed,
        mut problems,
    } = stored;
    let report = verify_stream(src, key, &mut |_, _| {})?;
    for p in &report.problems {
        problems.push(Problem::new(p.code, p.to_string()));
    }
    let more = report
        .problem_count
        .saturating_sub(report.problems.len() as u64);
    if more > 0 {
        problems.push(Problem::new(
            "more_problems",
            format!(
                "{more} more problems (only the first {} are named)",
                report.problems.len()
            ),
        ));
    }
    if let Some(id) = &report.stream_id
        && *id != stream_id
    {
        problems.push(Problem::new(
            "misplaced_stream",
            format!(
                "stored as \"{}\" but the receipts are of \"{}\"",
                jouleclaw_store::escape_untrusted(&stream_id),
                jouleclaw_store::escape_untrusted(id)
            ),
        ));
    }
    if let (Some(stored), Some(found)) = (&steward, &report.steward)
        && stored != found
    {
        problems.push(Problem::new(
            "misplaced_steward",
            format!(
                "stored under steward \"{}\" but the receipts are of \"{}\"",
                jouleclaw_store::escape_untrusted(stored),
                jouleclaw_store::escape_untrusted(found)
            ),
        ));
    }
    if report.completeness == Completeness::Unknown {
        problems.push(Problem::new(
            "unsealed",
            "no seals.cbor or inclusion.cbor: completeness is unknown",
        ));
    } else if !sealed {
        problems.push(Problem::new(
            "unsealed",
            "the storage does not mark the stream sealed",
        ));
    }
    for p in &report.document_problems {
        if !sealed && MISSING_DOCUMENT_CODES.contains(&p.code) {
            continue;
        }
        problems.push(document_problem(p));
    }
    let unnamed = report
        .document_problem_count()
        .saturating_sub(report.document_problems.len() as u64);
    if unnamed > 0 {
        problems.push(Problem::new(
            "more_problems",
            format!(
                "{unnamed} more problems of the signed documents (only the first {} of each are named)",
                jouleclaw_store::MAX_NAMED_PROBLEMS
            ),
        ));
    }
    Ok(StreamAudit {
        stream_id,
        receipts: report.receipts.len(),
        verified: report.verified(),
        checkpoints: usize::try_from(report.checkpoints).unwrap_or(usize::MAX),
        problems,
        document_problems: report.document_problems,
    })
}

/// The codes of a signed document that is missing when required, which a stream the storage
/// does not mark sealed is not asked for ([`audit_source`]); every other code of a document
/// (`barge_in_window_missing`, `event_window_missing` among them) is named whatever the storage
/// says.
const MISSING_DOCUMENT_CODES: [&str; 2] = ["stop_latency_missing", "interaction_metrics_missing"];

/// The stream verifier's finding `p` on a signed document, in the auditor's words: a file that
/// is not a regular file, one larger than its kind's signed bound, a document that does not
/// verify (its verifier's code), a missing document, or a binding problem (the kind's binding code; an `interaction-metrics/1` one
/// says so).
fn document_problem(p: &jouleclaw_store::Problem) -> Problem {
    let interaction = p.file == crate::file::INTERACTION_METRICS_CBOR;
    let (what, binding, max) = if interaction {
        (
            "interaction-metrics",
            jouleclaw_interaction::BINDING_CODES,
            jouleclaw_interaction::MAX_SIGNED_BYTES,
        )
    } else {
        (
            "stop-latency",
            jouleclaw_stop_latency::BINDING_CODES,
            jouleclaw_stop_latency::MAX_SIGNED_BYTES,
        )
    };
    let message = if p.code == "not_regular_file" {
        format!("{} is {}", p.file, p.message)
    } else if p.code == "cose_too_large" {
        format!("{} holds more than {max} bytes", p.file)
    } else if MISSING_DOCUMENT_CODES.contains(&p.code)
        || (binding.contains(&p.code) && !interaction)
    {
        p.message.clone()
    } else if binding.contains(&p.code) {
        format!("interaction-metrics/1: {}", p.message)
    } else {
        format!("the {what} document does not verify: {}", p.message)
    };
    Problem::new(p.code, message)
}

/// The stream folders under a [`FileSink`](crate::FileSink)'s folder, sorted by name.
pub fn stream_dirs(dir: &Path) -> Result<Vec<std::path::PathBuf>> {
    let read = std::fs::read_dir(dir).map_err(|e| LiveError::io(&dir.display().to_string(), &e))?;
    let mut out = Vec::new();
    for entry in read {
        let entry = entry.map_err(|e| LiveError::io(&dir.display().to_string(), &e))?;
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            out.push(entry.path());
        }
    }
    out.sort();
    Ok(out)
}

/// Verifies one stream read from JetStream: [`audit_source`] over a [`HeldStream`] of what
/// its batches carry (receipts, checkpoints, the inclusion receipts version-1 batches carry,
/// the final batch's documents), the storage marking it sealed when a final batch was read;
/// problems found while reading come first; receipts of another steward than the subject's
/// are `misplaced_steward`, sealed or not. Then that the final seal names the steward of the
/// subject the stream was stored under (`misplaced_steward`), so that two stewards' streams
/// with one id stay two streams, each checked against its own seal.
pub fn audit_nats_stream(s: &crate::jetstream::NatsStream, key: &ValidKey) -> StreamAudit {
    let held = HeldStream {
        label: &s.subject,
        receipts: &s.records.receipts,
        seals: &s.records.seals,
        inclusion: s.inclusion.as_deref(),
        documents: StreamDocuments {
            stop_latency: s.stop_latency.as_deref(),
            interaction_metrics: s.interaction_metrics.as_deref(),
        },
    };
    let mut audit = audit_held(held, &s.records, Some(&s.steward), key);
    if let Some(last) = s.records.seals.last()
        && let Ok(c) = verify_checkpoint(last, key.verifying_key())
        && c.seal.steward != s.steward
    {
        audit.problems.push(Problem::new(
            "misplaced_steward",
            format!(
                "stored under steward {:?} but sealed by {:?}",
                s.steward, c.seal.steward
            ),
        ));
    }
    audit
}

/// A stream's signed documents as its storage holds them (a JetStream final batch's).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamDocuments<'a> {
    /// The `stop-latency/1` (or `/2`) COSE_Sign1 (`stop-latency.cbor`).
    pub stop_latency: Option<&'a [u8]>,
    /// The `interaction-metrics/1` COSE_Sign1 (`interaction-metrics.cbor`).
    pub interaction_metrics: Option<&'a [u8]>,
}

impl<'a> StreamDocuments<'a> {
    /// The document stored under `file` (a name of `jouleclaw_store::layout::DOCUMENT_FILES`).
    fn get(&self, file: &str) -> Option<&'a [u8]> {
        match file {
            crate::file::STOP_LATENCY_CBOR => self.stop_latency,
            crate::file::INTERACTION_METRICS_CBOR => self.interaction_metrics,
            _ => None,
        }
    }
}

/// A stream held in memory (read back from JetStream, or handed over by a sink), served to
/// the stream verifier under the at-rest layout's names (`spec/LIVE.md` section 7):
/// `receipts.cbor` is its receipts' COSE_Sign1 in order; `receipts.jsonl` their payloads, one a
/// line (an empty line for an item that is not a COSE_Sign1 in the profile's envelope with
/// a payload, or whose payload holds a line end: line `i` is always receipt `i`; the envelope
/// is walked, not decoded, so serving an item costs no more than its payload); `seals.cbor` its checkpoints
/// (missing when it has none); `inclusion.cbor` the inclusion receipts version-1 batches
/// carry (missing when none is carried); the signed documents by file name; nothing else. Each
/// file is produced as it is read, item by item, without copying the stream.
#[derive(Debug, Clone, Copy)]
pub struct HeldStream<'a> {
    /// How the stream is named in an error (its subject or id).
    pub label: &'a str,
    /// The receipts' COSE_Sign1 bytes, in order.
    pub receipts: &'a [Vec<u8>],
    /// The checkpoints' COSE_Sign1 bytes, in order.
    pub seals: &'a [Vec<u8>],
    /// The inclusion receipts stored beside the receipts, if any.
    pub inclusion: Option<&'a [Vec<u8>]>,
    /// The signed documents.
    pub documents: StreamDocuments<'a>,
}

impl<'a> HeldStream<'a> {
    fn file(&self, name: &str) -> Option<HeldReader<'a>> {
        let items = |items: &'a [Vec<u8>], lines: bool| HeldReader {
            items: items.iter(),
            lines,
            cur: std::borrow::Cow::Borrowed(&[]),
            pos: 0,
        };
        match name {
            crate::file::RECEIPTS_JSONL => Some(items(self.receipts, true)),
            crate::file::RECEIPTS_CBOR => Some(items(self.receipts, false)),
            crate::file::SEALS_CBOR => (!self.seals.is_empty()).then(|| items(self.seals, false)),
            crate::file::INCLUSION_CBOR => self.inclusion.map(|i| items(i, false)),
            _ => self.documents.get(name).map(|d| HeldReader {
                items: [].iter(),
                lines: false,
                cur: std::borrow::Cow::Borrowed(d),
                pos: 0,
            }),
        }
    }
}

impl<'a> StreamSource for HeldStream<'a> {
    type Reader = HeldReader<'a>;

    fn fetch(&mut self, name: &'static str) -> jouleclaw_store::Result<Fetched<HeldReader<'a>>> {
        Ok(self.file(name).map_or(Fetched::Missing, Fetched::Found))
    }

    fn exists(&mut self, name: &'static str) -> jouleclaw_store::Result<bool> {
        Ok(self.file(name).is_some())
    }

    fn place(&self, name: &str) -> std::path::PathBuf {
        std::path::Path::new(self.label).join(name)
    }
}

/// One file of a [`HeldStream`], read item by item.
#[derive(Debug)]
pub struct HeldReader<'a> {
    items: std::slice::Iter<'a, Vec<u8>>,
    /// Each item's payload and a line end, rather than the item.
    lines: bool,
    cur: std::borrow::Cow<'a, [u8]>,
    pos: usize,
}

impl std::io::Read for HeldReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.pos >= self.cur.len() {
            let Some(item) = self.items.next() else {
                return Ok(0);
            };
            self.pos = 0;
            self.cur = if self.lines {
                let mut line = cose_payload(item)
                    .filter(|p| !p.contains(&b'\n'))
                    .unwrap_or_default();
                line.push(b'\n');
                std::borrow::Cow::Owned(line)
            } else {
                std::borrow::Cow::Borrowed(item.as_slice())
            };
        }
        let rest = self.cur.get(self.pos..).unwrap_or_default();
        let n = rest.len().min(buf.len());
        buf[..n].copy_from_slice(&rest[..n]);
        self.pos += n;
        Ok(n)
    }
}

/// The payload of a tagged COSE_Sign1 in the profile's envelope (`18([protected, {}, payload,
/// signature])`, shortest-form heads, nothing after it; not verified here). The envelope is
/// walked head by head, never decoded into values: an item of any shape costs no more than
/// its payload. Anything else (which the verifier refuses as a window signature too) has none.
fn cose_payload(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut r = jouleclaw_jcr1::cose::cbor::Reader::new(bytes);
    r.lit(&[0xd2, 0x84])?; // tag 18, array(4)
    r.string(2)?; // protected
    r.lit(&[0xa0])?; // unprotected: {}
    let payload = r.string(2)?;
    r.string(2)?; // signature
    r.is_empty().then(|| payload.to_vec())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::os::unix::ffi::OsStrExt as _;

    /// A canonical receipt (window 0 of `examples/golden/tool-call.receipts.jsonl`).
    const LINE: &[u8] = br#"{"closed_at":"2026-06-05T00:00:00Z","conservation":{"kind":"conforming"},"energy_provenance":"Estimator","id":"stream-demo:0000","inbound_bytes":6400,"jc_receipt":"stream-window/1","joules_uj":180,"outbound_bytes":0,"steward":"did:keri:EJ9testStewardAID000000000000000","stream_id":"stream-demo","tick_count":2,"verdict":{"chain":["always-pass-stream","barge-in-detector","per-tick:utf8-text","structured:04d0f386107113a0"],"kind":"pass"},"window_hash":"97e995c87971d6691105b6eb69a2862ab9dcfa15e1091926f94936396fac5f03","window_id":0}"#;

    fn key() -> ValidKey {
        use jouleclaw_jcr1::cose::Signer as _;
        ValidKey::new(jouleclaw_jcr1::cose::SoftwareSigner::rfc8032_test_key().verifying_key())
            .unwrap()
    }

    /// A key the one key rule refuses (here the identity, of small order) is refused once, by
    /// the caller, before any stream is audited; under an accepted key, signed documents that do
    /// not verify are named by their verifier's code, in the auditor's words.
    #[test]
    fn a_call_document_that_does_not_verify_is_named_in_the_auditors_words() {
        let identity = {
            let mut b = [0u8; 32];
            b[0] = 1;
            jouleclaw_jcr1::cose::PublicKey::from_bytes(&b).unwrap()
        };
        assert!(ValidKey::new(identity).is_err());
        let doc: &[u8] = b"not a COSE_Sign1";
        let mut held = HeldStream {
            label: "call-1",
            receipts: &[],
            seals: &[],
            inclusion: None,
            documents: StreamDocuments {
                stop_latency: Some(doc),
                interaction_metrics: Some(doc),
            },
        };
        let stored = Stored {
            stream_id: "call-1".to_owned(),
            steward: None,
            sealed: true,
            problems: Vec::new(),
        };
        let a = audit_source(&mut held, &key(), stored).unwrap();
        assert_eq!(a.document_problems.len(), 2, "{:?}", a.problems);
        for (p, what) in a
            .document_problems
            .iter()
            .zip(["stop-latency", "interaction-metrics"])
        {
            let line = format!("{}: the {what} document does not verify: ", p.code);
            assert!(a.has_problem(&line), "{line}: {:?}", a.problems);
        }
    }

    /// One folder whose name is not UTF-8 is a stream folder with a malformed name, audited and
    /// reported, not an error that stops the audit of every other folder.
    #[test]
    fn a_folder_name_that_is_not_utf8_is_a_malformed_name_not_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let bad = dir
            .path()
            .join(std::ffi::OsStr::from_bytes(b"call-\xff\xfe"));
        let good = dir.path().join("call-1");
        std::fs::create_dir(&bad).unwrap();
        std::fs::create_dir(&good).unwrap();
        let found = stream_dirs(dir.path()).unwrap();
        assert_eq!(found.len(), 2);
        let audit = audit_stream_dir(&bad, &key()).unwrap();
        assert_eq!(audit.stream_id, "call-\u{FFFD}\u{FFFD}");
        assert!(audit.has_problem("malformed_name:"), "{:?}", audit.problems);
        assert!(!audit.is_complete());
        // Accepted neighbour: a UTF-8 escaped id is no malformed name (its files are missing).
        let audit = audit_stream_dir(&good, &key()).unwrap();
        assert_eq!(audit.stream_id, "call-1");
        assert!(
            !audit.has_problem("malformed_name:"),
            "{:?}",
            audit.problems
        );
    }

    /// A held stream's `receipts.jsonl` is its receipts' payloads, one a line, line `i` always
    /// receipt `i`: an item that is not a COSE_Sign1, or whose payload holds a line end, is an
    /// empty line; `receipts.cbor` is the items as they are; `seals.cbor` is missing without a
    /// checkpoint.
    #[test]
    fn a_held_stream_serves_each_receipt_as_one_line_and_its_items_as_they_are() {
        use jouleclaw_jcr1::cose::SoftwareSigner;
        use std::io::Read as _;
        let signer = SoftwareSigner::rfc8032_test_key();
        let payload = b"{\"a\":1}";
        let receipt = jouleclaw_jcr1::decode_receipt(LINE).unwrap();
        let signed =
            jouleclaw_jcr1::cose::sign_payload(&signer, &receipt, payload.to_vec()).unwrap();
        let with_line_end =
            jouleclaw_jcr1::cose::sign_payload(&signer, &receipt, b"{}\n{}".to_vec()).unwrap();
        let receipts = vec![
            signed.cose_sign1.clone(),
            b"not cbor".to_vec(),
            with_line_end.cose_sign1.clone(),
        ];
        let mut held = HeldStream {
            label: "call-1",
            receipts: &receipts,
            seals: &[],
            inclusion: None,
            documents: StreamDocuments::default(),
        };
        let read = |held: &mut HeldStream<'_>, name: &'static str| {
            let Fetched::Found(mut r) = held.fetch(name).unwrap() else {
                return None;
            };
            let mut out = Vec::new();
            r.read_to_end(&mut out).unwrap();
            Some(out)
        };
        let mut want = payload.to_vec();
        want.extend_from_slice(b"\n\n\n");
        assert_eq!(read(&mut held, crate::file::RECEIPTS_JSONL), Some(want));
        assert_eq!(
            read(&mut held, crate::file::RECEIPTS_CBOR),
            Some(receipts.concat())
        );
        assert_eq!(read(&mut held, crate::file::SEALS_CBOR), None);
        assert!(!held.exists(crate::file::SEALS_CBOR).unwrap());
        let seals = vec![b"x".to_vec()];
        held.seals = &seals;
        assert_eq!(
            read(&mut held, crate::file::SEALS_CBOR),
            Some(b"x".to_vec())
        );
        assert!(held.exists(crate::file::SEALS_CBOR).unwrap());
    }

    /// For a stream the storage does not mark sealed, only a missing document's codes
    /// (`stop_latency_missing`, `interaction_metrics_missing`) are left out of the problems: a
    /// present document's binding problems whose codes also end in `_missing`
    /// (`barge_in_window_missing`, `event_window_missing`) are named like every other.
    #[test]
    fn only_a_missing_documents_codes_are_left_out_for_a_stream_not_marked_sealed() {
        use jouleclaw_jcr1::cose::SoftwareSigner;
        use jouleclaw_stop_latency::{BargeIn, EndedBy, StopLatencyDocument};
        let signer = SoftwareSigner::rfc8032_test_key();
        let pass = jouleclaw_jcr1::decode_receipt(LINE).unwrap();
        let mut barge = pass.clone();
        barge.window_id = 1;
        barge.verdict = jouleclaw_stream_oracle::WindowVerdict::Yield { seen_at: 1 };
        let sign = |r: &jouleclaw_jcr1::StreamWindowReceipt| {
            jouleclaw_jcr1::cose::sign_payload(&signer, r, r.encode().unwrap())
                .unwrap()
                .cose_sign1
        };
        let stored = |sealed: bool| Stored {
            stream_id: pass.stream_id.clone(),
            steward: None,
            sealed,
            problems: Vec::new(),
        };
        // A document bound to the one receipt, listing a barge-in in a window without one.
        let doc = StopLatencyDocument::new(
            &pass.steward,
            &pass.stream_id,
            &[BargeIn {
                window_id: 7,
                barge_in_ts_ns: 1_000,
                last_audio_ts_ns: None,
                audio_bytes: 0,
                late_audio_bytes: 0,
                ended_by: EndedBy::StreamEnd,
                end_ts_ns: None,
            }],
            &[*blake3::hash(LINE).as_bytes()],
        )
        .unwrap();
        let doc = jouleclaw_stop_latency::sign(&signer, &doc)
            .unwrap()
            .cose_sign1;
        let receipts = vec![sign(&pass)];
        fn held<'a>(receipts: &'a [Vec<u8>], doc: Option<&'a [u8]>) -> HeldStream<'a> {
            HeldStream {
                label: "stream-demo",
                receipts,
                seals: &[],
                inclusion: None,
                documents: StreamDocuments {
                    stop_latency: doc,
                    interaction_metrics: None,
                },
            }
        }
        for sealed in [false, true] {
            let a = audit_source(&mut held(&receipts, Some(&doc)), &key(), stored(sealed)).unwrap();
            assert!(
                a.document_problems
                    .iter()
                    .any(|p| p.code == "barge_in_window_missing"),
                "{:?}",
                a.document_problems
            );
            assert!(
                a.has_problem("barge_in_window_missing: "),
                "sealed {sealed}: {:?}",
                a.problems
            );
        }
        // Accepted neighbour: a receipt records a barge-in and there is no document; a stream
        // not marked sealed is not asked for it, a sealed one is.
        let receipts = vec![sign(&pass), sign(&barge)];
        for sealed in [false, true] {
            let a = audit_source(&mut held(&receipts, None), &key(), stored(sealed)).unwrap();
            assert!(
                a.document_problems
                    .iter()
                    .any(|p| p.code == "stop_latency_missing"),
                "{:?}",
                a.document_problems
            );
            assert_eq!(
                a.has_problem("stop_latency_missing: "),
                sealed,
                "{:?}",
                a.problems
            );
        }
    }

    /// A signed document's findings are named up to the verifier's bound, then one
    /// `more_problems` line counts the rest: here 150 receipts record a barge-in the call's
    /// document does not list.
    #[test]
    fn a_documents_findings_past_the_bound_are_counted_in_one_line() {
        use jouleclaw_jcr1::cose::SoftwareSigner;
        use jouleclaw_stop_latency::StopLatencyDocument;
        let signer = SoftwareSigner::rfc8032_test_key();
        let pass = jouleclaw_jcr1::decode_receipt(LINE).unwrap();
        let (mut receipts, mut hashes) = (Vec::new(), Vec::new());
        for w in 0..150 {
            let mut r = pass.clone();
            r.window_id = w;
            r.verdict = jouleclaw_stream_oracle::WindowVerdict::Yield { seen_at: w };
            let line = r.encode().unwrap();
            hashes.push(*blake3::hash(&line).as_bytes());
            receipts.push(
                jouleclaw_jcr1::cose::sign_payload(&signer, &r, line)
                    .unwrap()
                    .cose_sign1,
            );
        }
        let doc = StopLatencyDocument::new(&pass.steward, &pass.stream_id, &[], &hashes).unwrap();
        let doc = jouleclaw_stop_latency::sign(&signer, &doc)
            .unwrap()
            .cose_sign1;
        let mut held = HeldStream {
            label: "stream-demo",
            receipts: &receipts,
            seals: &[],
            inclusion: None,
            documents: StreamDocuments {
                stop_latency: Some(&doc),
                interaction_metrics: None,
            },
        };
        let stored = Stored {
            stream_id: pass.stream_id.clone(),
            steward: None,
            sealed: true,
            problems: Vec::new(),
        };
        let a = audit_source(&mut held, &key(), stored).unwrap();
        assert_eq!(
            a.document_problems.len(),
            jouleclaw_store::MAX_NAMED_PROBLEMS
        );
        let named = a
            .problems
            .iter()
            .filter(|p| p.code == "yield_unlisted")
            .count();
        assert_eq!(named, jouleclaw_store::MAX_NAMED_PROBLEMS);
        assert!(
            a.has_problem("more_problems: 50 more problems of the signed documents"),
            "{:?}",
            a.lines()
        );
    }
}
