//! The auditor: reads receipts and seals back, verifies every signature on its own and checks
//! each stream's completeness against its final seal.

use std::path::Path;

use jouleclaw_jcr1::StreamWindowReceipt;
use jouleclaw_jcr1::cose::{self, PublicKey, SingleKey};
use jouleclaw_seal::{ReceiptEntry, SealVerifier, check_stream, verify_checkpoint};

use crate::error::{LiveError, Result};
use crate::file::{PARTIAL_SUFFIX, RECEIPTS_CBOR, SEALS_CBOR};
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
    pub read_problems: Vec<String>,
}

/// The verdict on one stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamAudit {
    /// The stream.
    pub stream_id: String,
    /// Receipts read.
    pub receipts: usize,
    /// Receipts whose signature and payload verified.
    pub verified: usize,
    /// Checkpoints read.
    pub checkpoints: usize,
    /// Every problem: `code: sentence`.
    pub problems: Vec<String>,
}

impl StreamAudit {
    /// No problem at all: every receipt verified, the seals chain, the final seal covers
    /// exactly the receipts in order.
    pub fn is_complete(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Verifies one stream: every receipt with `jouleclaw_jcr1::cose::verify` (strict Ed25519,
/// the receipt profile), every checkpoint with `verify_checkpoint`, then
/// `jouleclaw_seal::check_stream` over the verified receipts and checkpoints.
pub fn audit_stream(rec: &StreamRecords, key: &PublicKey) -> StreamAudit {
    audit_verified(rec, key).0
}

/// [`audit_stream`], and the receipts that verified with their content hashes, in order.
fn audit_verified(
    rec: &StreamRecords,
    key: &PublicKey,
) -> (StreamAudit, Vec<(StreamWindowReceipt, [u8; 32])>) {
    let resolver = SingleKey::new(*key);
    let mut problems = rec.read_problems.clone();
    let mut entries = Vec::with_capacity(rec.receipts.len());
    let mut verified = Vec::with_capacity(rec.receipts.len());
    for (i, bytes) in rec.receipts.iter().enumerate() {
        match cose::verify(bytes, &resolver) {
            Ok(v) => {
                entries.push(ReceiptEntry {
                    window_id: v.receipt.window_id,
                    content_hash: *v.content_hash.as_bytes(),
                    stream_id: v.receipt.stream_id.clone(),
                    steward: v.receipt.steward.clone(),
                });
                verified.push((v.receipt, *v.content_hash.as_bytes()));
            }
            Err(e) => problems.push(format!(
                "unverifiable_receipt: receipt {i} does not verify: {e}"
            )),
        }
    }
    let mut checkpoints = Vec::with_capacity(rec.seals.len());
    let mut seals = SealVerifier::new(*key);
    for (i, bytes) in rec.seals.iter().enumerate() {
        match seals.verify_checkpoint(bytes) {
            Ok(c) => checkpoints.push(c),
            Err(e) => problems.push(format!(
                "unverifiable_seal: checkpoint {i} does not verify: {e}"
            )),
        }
    }
    if let Some(last) = checkpoints.last()
        && last.seal.stream_id != rec.stream_id
    {
        problems.push(format!(
            "misplaced_stream: stored as {:?} but sealed as {:?}",
            rec.stream_id, last.seal.stream_id
        ));
    }
    let report = check_stream(&entries, &checkpoints);
    for p in &report.problems {
        problems.push(p.to_string());
    }
    if !rec.sealed {
        problems.push("unsealed: the storage does not mark the stream sealed".to_owned());
    }
    let audit = StreamAudit {
        stream_id: rec.stream_id.clone(),
        receipts: rec.receipts.len(),
        verified: entries.len(),
        checkpoints: rec.seals.len(),
        problems,
    };
    (audit, verified)
}

/// Checks a stream's signed `stop-latency/1` document against its verified receipts (in
/// window order, with their BLAKE3 content hashes), as `receipts verify DIR` does for
/// `stop-latency.cbor` (`spec/STOP-LATENCY-V1.md` section 7): the signature under `key`,
/// the document, and its binding (steward and stream, receipt count, root, every barge-in
/// window a yield and every yield listed). Without a document, a stream whose receipts record
/// a barge-in (a `yield`) is `stop_latency_missing`; one without is fine. Each problem is one
/// `code: sentence` line.
pub fn check_stop_latency(
    document: Option<&[u8]>,
    receipts: &[(StreamWindowReceipt, [u8; 32])],
    key: &PublicKey,
) -> Vec<String> {
    let root = document.and_then(|_| root_of(receipts));
    stop_latency_problems(document, receipts, key, root)
}

/// The RFC 9162 root over the receipts' content hashes in order, which both documents bind
/// (`receipts_root`); `None` past what a Merkle log holds (then `root_mismatch`).
fn root_of(receipts: &[(StreamWindowReceipt, [u8; 32])]) -> Option<[u8; 32]> {
    let hashes: Vec<[u8; 32]> = receipts.iter().map(|(_, h)| *h).collect();
    jouleclaw_stop_latency::receipts_root(&hashes).ok()
}

/// [`check_stop_latency`] with the receipts' root computed once by the caller ([`root_of`],
/// or the final seal's root of a complete directory).
fn stop_latency_problems(
    document: Option<&[u8]>,
    receipts: &[(StreamWindowReceipt, [u8; 32])],
    key: &PublicKey,
    root: Option<[u8; 32]>,
) -> Vec<String> {
    let Some(bytes) = document else {
        let plain: Vec<StreamWindowReceipt> = receipts.iter().map(|(r, _)| r.clone()).collect();
        return jouleclaw_stop_latency::missing(&plain)
            .map(|p| p.to_string())
            .into_iter()
            .collect();
    };
    // A key `ValidKey::new` refuses verifies no signature: `cose_bad_signature`.
    let verified = cose::ValidKey::new(*key)
        .map_err(|_| jouleclaw_stop_latency::CoseCode::BadSignature.into())
        .and_then(|key| jouleclaw_stop_latency::verify(bytes, &key));
    match verified {
        Err(e) => vec![format!(
            "{}: the stop-latency document does not verify: {e}",
            e.code()
        )],
        Ok(v) => jouleclaw_stop_latency::check_receipts_under_root(&v.document, receipts, root)
            .iter()
            .map(ToString::to_string)
            .collect(),
    }
}

/// Checks a stream's signed `interaction-metrics/1` document against its verified receipts (in
/// window order, with their BLAKE3 content hashes), as `receipts verify DIR` does for
/// `interaction-metrics.cbor` (`spec/INTERACTION-METRICS-V1.md` sections 6 and 7): the
/// signature under `key`, the document, and its binding (steward and stream, receipt count,
/// root, every event's window a receipt's). Without a document nothing is checked here: a
/// final seal that commits to one the stream does not hold is [`check_sealed_documents`]'s
/// `document_missing`. Each problem is one `code: sentence` line.
pub fn check_interaction_metrics(
    document: Option<&[u8]>,
    receipts: &[(StreamWindowReceipt, [u8; 32])],
    key: &PublicKey,
) -> Vec<String> {
    let root = document.and_then(|_| root_of(receipts));
    interaction_problems(document, receipts, key, root)
}

/// [`check_interaction_metrics`] with the receipts' root computed once by the caller.
fn interaction_problems(
    document: Option<&[u8]>,
    receipts: &[(StreamWindowReceipt, [u8; 32])],
    key: &PublicKey,
    root: Option<[u8; 32]>,
) -> Vec<String> {
    let Some(bytes) = document else {
        return Vec::new();
    };
    // A key `ValidKey::new` refuses verifies no signature: `cose_bad_signature`.
    let verified = cose::ValidKey::new(*key)
        .map_err(|_| jouleclaw_interaction::CoseCode::BadSignature.into())
        .and_then(|key| jouleclaw_interaction::verify(bytes, &key));
    match verified {
        Err(e) => vec![format!(
            "{}: the interaction-metrics document does not verify: {e}",
            e.code()
        )],
        Ok(v) => jouleclaw_interaction::check_receipts_under_root(&v.document, receipts, root)
            .iter()
            .map(|p| format!("{}: interaction-metrics/1: {}", p.code, p.detail))
            .collect(),
    }
}

fn split(bytes: &[u8], what: &str, problems: &mut Vec<String>) -> Vec<Vec<u8>> {
    match cose::split_cbor_sequence(bytes) {
        Ok(items) => items.into_iter().map(<[u8]>::to_vec).collect(),
        Err(i) => {
            problems.push(format!(
                "malformed_file: {what} is not a CBOR sequence from item {i} on"
            ));
            Vec::new()
        }
    }
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

/// Audits one stream folder of a [`FileSink`](crate::FileSink) with the one verifier of the
/// stream at rest (`jouleclaw_store::verify_dir`: bounded, streaming, inputs opened without
/// following symbolic links), adding what only the live layout knows: a folder still named
/// `.partial` is `unsealed`, a folder name that is not an escaped stream id is
/// `malformed_name`, and one that is not the receipts' stream id is `misplaced_stream`; then,
/// for a sealed folder (or one holding it), `stop-latency.cbor` as `receipts verify DIR` checks
/// it ([`check_stop_latency`]), and `interaction-metrics.cbor` when there
/// ([`check_interaction_metrics`]), each opened without following a symbolic link, a regular
/// file only, bounded (the final seal's commitment to both is `verify_dir`'s). At most `jouleclaw_store::MAX_NAMED_PROBLEMS` problems of the directory are
/// listed, then one `more_problems` line with the count of the rest.
pub fn audit_stream_dir(path: &Path, key: &PublicKey) -> Result<StreamAudit> {
    let (name, token, sealed) = folder_name(path)?;
    let unescaped = unescape_id(&token);
    let stream_id = unescaped.clone().unwrap_or_else(|| token.clone());
    let mut decoded: Vec<(u64, StreamWindowReceipt)> = Vec::new();
    let malformed = |e: jouleclaw_store::StoreError| LiveError::Malformed {
        place: path.display().to_string(),
        message: e.to_string(),
    };
    let report = jouleclaw_store::verify_dir(path, key, &mut |i, r| decoded.push((i, r.clone())))
        .map_err(malformed)?;
    let mut problems = Vec::new();
    if unescaped.is_none() {
        problems.push(format!(
            "malformed_name: \"{}\" is not an escaped stream id",
            jouleclaw_store::escape_untrusted(&name)
        ));
    }
    for p in &report.problems {
        problems.push(format!("{}: {p}", p.code));
    }
    let more = report
        .problem_count
        .saturating_sub(report.problems.len() as u64);
    if more > 0 {
        problems.push(format!(
            "more_problems: {more} more problems (only the first {} are named)",
            report.problems.len()
        ));
    }
    if let Some(id) = &report.stream_id
        && *id != stream_id
    {
        problems.push(format!(
            "misplaced_stream: stored as \"{}\" but the receipts are of \"{}\"",
            jouleclaw_store::escape_untrusted(&stream_id),
            jouleclaw_store::escape_untrusted(id)
        ));
    }
    if report.completeness == jouleclaw_store::Completeness::Unknown {
        problems
            .push("unsealed: no seals.cbor or inclusion.cbor: completeness is unknown".to_owned());
    } else if !sealed {
        problems.push("unsealed: the storage does not mark the stream sealed".to_owned());
    }
    // The documents, as `receipts verify DIR` checks them; written with the final batch, so
    // a folder still `.partial` (named unsealed above) is not asked for them.
    let stop_latency = read_document(
        path,
        crate::file::STOP_LATENCY_CBOR,
        jouleclaw_stop_latency::MAX_SIGNED_BYTES,
    )
    .map_err(malformed)?;
    let interaction = read_document(
        path,
        crate::file::INTERACTION_METRICS_CBOR,
        jouleclaw_interaction::MAX_SIGNED_BYTES,
    )
    .map_err(malformed)?;
    let receipts: Vec<(StreamWindowReceipt, [u8; 32])> = decoded
        .into_iter()
        .filter_map(|(i, r)| {
            let rec = report.receipts.get(usize::try_from(i).ok()?)?;
            Some((r, rec.content_hash))
        })
        .collect();
    // The root both documents bind: a complete directory's final seal covers exactly these
    // receipts, so its (verified) root is theirs; otherwise it is computed, once.
    let root = match report.final_root {
        Some(r)
            if report.completeness == jouleclaw_store::Completeness::Complete
                && report.final_tree_size == receipts.len() as u64 =>
        {
            Some(r)
        }
        _ if [&stop_latency, &interaction]
            .iter()
            .any(|d| matches!(d, DocumentFile::Bytes(_))) =>
        {
            root_of(&receipts)
        }
        _ => None,
    };
    type Check = fn(
        Option<&[u8]>,
        &[(StreamWindowReceipt, [u8; 32])],
        &PublicKey,
        Option<[u8; 32]>,
    ) -> Vec<String>;
    let checks: [(DocumentFile, Check); 2] = [
        (stop_latency, stop_latency_problems),
        (interaction, interaction_problems),
    ];
    for (doc, check) in checks {
        match doc {
            DocumentFile::Missing if !sealed => {}
            DocumentFile::Refused(p) => problems.push(p),
            DocumentFile::Missing => problems.extend(check(None, &receipts, key, root)),
            DocumentFile::Bytes(b) => problems.extend(check(Some(&b), &receipts, key, root)),
        }
    }
    Ok(StreamAudit {
        stream_id,
        receipts: report.receipts.len(),
        verified: report.verified(),
        checkpoints: usize::try_from(report.checkpoints).unwrap_or(usize::MAX),
        problems,
    })
}

/// A stream folder's signed document, as found.
enum DocumentFile {
    Missing,
    Bytes(Vec<u8>),
    /// Not read: not a regular file, or larger than a signed document may be.
    Refused(String),
}

/// Opens a document `file` of `dir` without following a symbolic link, a regular file only,
/// read up to `max` bytes.
fn read_document(dir: &Path, file: &str, max: usize) -> jouleclaw_store::Result<DocumentFile> {
    use jouleclaw_store::layout::{Input, open_input, read_bounded};
    let path = dir.join(file);
    Ok(match open_input(&path)? {
        Input::Missing => DocumentFile::Missing,
        Input::NotRegular(kind) => DocumentFile::Refused(format!(
            "not_regular_file: {file} is a {kind}, not a regular file; not read"
        )),
        Input::File(f) => match read_bounded(f, &path, max as u64)? {
            Some(b) => DocumentFile::Bytes(b),
            None => DocumentFile::Refused(format!(
                "cose_too_large: {file} holds more than {max} bytes"
            )),
        },
    })
}

/// Reads one stream folder of a [`FileSink`](crate::FileSink) whole, for [`audit_stream`].
/// Missing files are problems of the stream, not errors. It holds every item in memory:
/// [`audit_stream_dir`] checks a folder bounded and streaming, and is what `jouleclaw audit
/// --dir` uses.
pub fn read_stream_dir(path: &Path) -> Result<StreamRecords> {
    let (name, token, sealed) = folder_name(path)?;
    let mut rec = StreamRecords {
        stream_id: unescape_id(&token).unwrap_or_else(|| token.clone()),
        sealed,
        ..StreamRecords::default()
    };
    if unescape_id(&token).is_none() {
        rec.read_problems.push(format!(
            "malformed_name: {name:?} is not an escaped stream id"
        ));
    }
    for (file, seals) in [(RECEIPTS_CBOR, false), (SEALS_CBOR, true)] {
        // Not followed if a symbolic link, refused unless a regular file (spec/STREAM-AT-REST.md).
        let read = match jouleclaw_store::layout::open_input(&path.join(file)) {
            Ok(jouleclaw_store::layout::Input::File(mut f)) => {
                let mut bytes = Vec::new();
                std::io::Read::read_to_end(&mut f, &mut bytes)
                    .map(|_| bytes)
                    .map_err(|e| e.to_string())
            }
            Ok(jouleclaw_store::layout::Input::Missing) => Err("missing".to_owned()),
            Ok(jouleclaw_store::layout::Input::NotRegular(kind)) => {
                Err(format!("a {kind}, not a regular file; not read"))
            }
            Err(e) => Err(e.to_string()),
        };
        match read {
            Ok(bytes) => {
                let items = split(&bytes, file, &mut rec.read_problems);
                if seals {
                    rec.seals = items;
                } else {
                    rec.receipts = items;
                }
            }
            Err(e) => rec.read_problems.push(format!("missing_file: {file}: {e}")),
        }
    }
    Ok(rec)
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

/// Verifies one stream read from JetStream: [`audit_stream`]; then that the final seal
/// names the steward of the subject the stream was stored under (`misplaced_steward`), so that
/// two stewards' streams with one id stay two streams, each checked against its own seal; then
/// the inclusion receipts version-1 batches carry ([`check_inclusion`]); then the final seal's commitment to the
/// documents the final batch carries ([`check_sealed_documents`]); then, for a stream with a
/// final batch, its stop-latency document ([`check_stop_latency`]: verified when present,
/// required when a receipt records a barge-in) and its interaction-metrics document
/// ([`check_interaction_metrics`]: verified and bound when present); a stream without a final
/// batch is `unsealed` already.
pub fn audit_nats_stream(s: &crate::jetstream::NatsStream, key: &PublicKey) -> StreamAudit {
    let (mut audit, verified) = audit_verified(&s.records, key);
    if let Some(last) = s.records.seals.last()
        && let Ok(c) = verify_checkpoint(last, key)
        && c.seal.steward != s.steward
    {
        audit.problems.push(format!(
            "misplaced_steward: stored under steward {:?} but sealed by {:?}",
            s.steward, c.seal.steward
        ));
    }
    // Version-1 batches carry inclusion receipts, checked; version 2 carries none (each is
    // derivable from the checkpoints, which are verified) and none is asked for.
    if let Some(inclusion) = &s.inclusion {
        audit
            .problems
            .extend(check_inclusion(&s.records, inclusion, key));
    }
    let documents = StreamDocuments {
        stop_latency: s.stop_latency.as_deref(),
        interaction_metrics: s.interaction_metrics.as_deref(),
    };
    audit
        .problems
        .extend(check_sealed_documents(&s.records, documents, key));
    // The documents travel in the final batch: a stream without one is already `unsealed`,
    // and its missing document says nothing more.
    let root = (s.stop_latency.is_some() || s.interaction_metrics.is_some())
        .then(|| root_of(&verified))
        .flatten();
    if s.records.sealed || s.stop_latency.is_some() {
        audit.problems.extend(stop_latency_problems(
            s.stop_latency.as_deref(),
            &verified,
            key,
            root,
        ));
    }
    audit.problems.extend(interaction_problems(
        s.interaction_metrics.as_deref(),
        &verified,
        key,
        root,
    ));
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

/// A `stream-seal/2` final seal against the documents stored with it (`spec/STREAM-SEAL.md`
/// section 3.2), for each kind of `jouleclaw_store::layout::DOCUMENT_FILES` (the one table of
/// document kinds the stream verifier at rest uses too): the document the final batch carries
/// must hash to the digest the final seal commits to (`document_digest_mismatch`), be there
/// when listed (`document_missing`) and be listed when there (`document_not_sealed`); a kind
/// outside the table is `document_kind_unknown`. A final seal under `stream-seal/1` (a stream
/// stored before that version) commits to nothing: no problem.
pub fn check_sealed_documents(
    rec: &StreamRecords,
    documents: StreamDocuments<'_>,
    key: &PublicKey,
) -> Vec<String> {
    let Some(c) = rec
        .seals
        .last()
        .and_then(|last| verify_checkpoint(last, key).ok())
        .filter(|c| c.seal.is_final)
    else {
        return Vec::new();
    };
    let Some(docs) = &c.seal.documents else {
        return Vec::new();
    };
    let mut problems = Vec::new();
    let table = jouleclaw_store::layout::DOCUMENT_FILES;
    for kind in docs.keys() {
        if !table
            .iter()
            .any(|(_, kinds)| kinds.contains(&kind.as_str()))
        {
            problems.push(format!(
                "document_kind_unknown: the final seal commits to a {kind:?} document, a kind this verifier cannot check"
            ));
        }
    }
    for &(file, kinds) in table {
        let listed = kinds.iter().find_map(|k| docs.get(*k).map(|d| (*k, d)));
        let name = listed.map_or(kinds.first().copied().unwrap_or(file), |(k, _)| k);
        match (listed.map(|(_, d)| d), documents.get(file)) {
            (None, None) => {}
            (Some(_), None) => problems.push(format!(
                "document_missing: the final seal commits to a {name} document and the stream holds none"
            )),
            (None, Some(_)) => problems.push(format!(
                "document_not_sealed: the stream holds a {name} document the final seal (stream-seal/2) does not commit to"
            )),
            (Some(d), Some(b)) if jouleclaw_seal::document_digest(b) != *d => {
                problems.push(format!(
                    "document_digest_mismatch: the {name} document has SHA-256 {}, the final seal commits to {}",
                    hex::encode(jouleclaw_seal::document_digest(b)),
                    hex::encode(d)
                ))
            }
            (Some(_), Some(_)) => {}
        }
    }
    problems
}

/// Problem lines per stream [`check_inclusion`] reports; past it one line counts the rest.
pub const MAX_INCLUSION_PROBLEMS: usize = 20;

/// Checks the inclusion receipts stored beside a stream's receipts: one per receipt
/// (`missing_inclusion` otherwise), each an RFC 9942 receipt that verifies under `key` for
/// that receipt's content hash (BLAKE3 of its payload) at its position in the stream
/// (`unverifiable_inclusion`, `misplaced_inclusion`), in a seal of this stream. A receipt
/// whose own COSE does not parse is left to [`audit_stream`]'s `unverifiable_receipt`.
pub fn check_inclusion(rec: &StreamRecords, inclusion: &[Vec<u8>], key: &PublicKey) -> Vec<String> {
    let mut problems = Vec::new();
    if inclusion.len() != rec.receipts.len() {
        problems.push(format!(
            "missing_inclusion: {} inclusion receipts for {} receipts",
            inclusion.len(),
            rec.receipts.len()
        ));
    }
    let mut bad = 0usize;
    // One verifier for the stream: the inclusion receipts of a checkpoint share its
    // signature, checked once.
    let mut seals = SealVerifier::new(*key);
    for (i, (receipt, inc)) in rec.receipts.iter().zip(inclusion).enumerate() {
        let Some(payload) = cose_payload(receipt) else {
            continue;
        };
        let hash = *blake3::hash(&payload).as_bytes();
        let problem = match seals.verify_inclusion_receipt(inc, &hash) {
            Err(e) => Some(format!(
                "unverifiable_inclusion: inclusion receipt {i} does not verify: {e}"
            )),
            Ok(v) if v.leaf_index != i as u64 || v.seal.stream_id != rec.stream_id => {
                Some(format!(
                    "misplaced_inclusion: inclusion receipt {i} proves leaf {} of {:?}",
                    v.leaf_index, v.seal.stream_id
                ))
            }
            Ok(_) => None,
        };
        if let Some(p) = problem {
            bad += 1;
            if bad <= MAX_INCLUSION_PROBLEMS {
                problems.push(p);
            }
        }
    }
    if bad > MAX_INCLUSION_PROBLEMS {
        problems.push(format!(
            "unverifiable_inclusion: {} more inclusion receipts fail",
            bad - MAX_INCLUSION_PROBLEMS
        ));
    }
    problems
}

/// The payload of a tagged COSE_Sign1 (not verified here).
fn cose_payload(bytes: &[u8]) -> Option<Vec<u8>> {
    let v: ciborium::Value = ciborium::from_reader(bytes).ok()?;
    let ciborium::Value::Tag(18, inner) = v else {
        return None;
    };
    let ciborium::Value::Array(parts) = *inner else {
        return None;
    };
    match parts.get(2)? {
        ciborium::Value::Bytes(p) => Some(p.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::os::unix::ffi::OsStrExt as _;

    fn key() -> PublicKey {
        use jouleclaw_jcr1::cose::Signer as _;
        jouleclaw_jcr1::cose::SoftwareSigner::rfc8032_test_key().verifying_key()
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
        assert!(
            audit
                .problems
                .iter()
                .any(|p| p.starts_with("malformed_name:")),
            "{:?}",
            audit.problems
        );
        assert!(!audit.is_complete());
        assert!(read_stream_dir(&bad).unwrap().read_problems[0].starts_with("malformed_name:"));
        // Accepted neighbour: a UTF-8 escaped id is no malformed name (its files are missing).
        let audit = audit_stream_dir(&good, &key()).unwrap();
        assert_eq!(audit.stream_id, "call-1");
        assert!(
            !audit
                .problems
                .iter()
                .any(|p| p.starts_with("malformed_name:")),
            "{:?}",
            audit.problems
        );
    }
}
