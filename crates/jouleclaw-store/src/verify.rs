//! The one verifier of a stream at rest (`spec/STREAM-AT-REST.md`, section 5): a directory
//! ([`verify_dir`]) or any [`StreamSource`] serving the layout's files ([`verify_stream`],
//! section 5.7).
//!
//! Every file is read once, front to back, one line or one CBOR item at a time; what is kept
//! is one [`ReceiptRecord`] per line of `receipts.jsonl` (about 56 bytes), the completeness
//! checker's entry per decodable line (its ids and hash), the verified checkpoints, and at most
//! [`MAX_NAMED_PROBLEMS`] named problems (the rest are counted). Lines and items past
//! [`MAX_RECEIPTS`] are not read.
//!
//! The call's signed documents ([`DOCUMENT_FILES`]) are verified and bound to the receipts
//! after them ([`DirReport::document_problems`]). Only when one of their files is there is what
//! that binding reads of the receipts kept ([`BoundReceipts`], not the decoded receipts): each
//! decodable line's [`ReceiptFacts`](jouleclaw_seal::call_document::ReceiptFacts) (its window
//! id, its verdict's kind and a yield's window, its conservation finding and its content hash:
//! [`BYTES`](jouleclaw_seal::call_document::ReceiptFacts::BYTES), 80 bytes, whatever the
//! line's size; at most [`MAX_RECEIPTS`] of them) and, once for the stream, the first
//! receipt's steward, stream id and id and the id of the first receipt of another stream or
//! steward (strings a receipt bounds to 4,096 bytes each). Each document is read once: up to
//! its own `MAX_SIGNED_BYTES` (+1, so that an over-long one is refused by its verifier), or,
//! when a `stream-seal/2` final seal commits to it, up to [`MAX_DOCUMENT_BYTES`] (+1) for its
//! digest, those bytes then kept for its own check; without one, the first receipt that
//! records a barge-in is all that is kept for the rule that asks for a `stop-latency.cbor`.

use std::collections::HashMap;
use std::io::{BufRead as _, BufReader, Read};
use std::path::Path;

use jouleclaw_interaction::InteractionDocument;
use jouleclaw_jcr1::cose::{self, PublicKey, SingleKey, ValidKey};
use jouleclaw_jcr1::{Jcr1Error, Limits, StreamWindowReceipt, decode_receipt};
use jouleclaw_seal::call_document::{BindingProblem, BoundReceipts};
use jouleclaw_seal::{
    DEFAULT_MAX_LEAVES, Frontier, ReceiptEntry, SealVerifier, SealedDocuments, check_stream,
    document_digest,
};

use crate::error::{Result, StoreError};
use jouleclaw_stop_latency::StopLatencyDocument;

use crate::layout::{
    self, DOCUMENT_FILES, INCLUSION_CBOR, INTERACTION_METRICS_CBOR, MAX_DOCUMENT_BYTES,
    MAX_SUMMARY_BYTES, RECEIPTS_CBOR, RECEIPTS_JSONL, SEALS_CBOR, SIGNER_PUB, STOP_LATENCY_CBOR,
    SUMMARY_JSON,
};
use crate::source::{DirSource, Fetched, StreamSource};
use crate::summary::{ConservationCounts, RunSummary, VerdictCounts};
use crate::text::escape_untrusted;

/// Problems named one by one in a [`DirReport`]; the rest are counted.
pub const MAX_NAMED_PROBLEMS: usize = 100;

/// The most receipts one directory holds (the most one stream's Merkle log holds,
/// `jouleclaw_seal::DEFAULT_MAX_LEAVES` = 2^20); as many checkpoints, inclusion receipts and
/// window signatures at most.
pub const MAX_RECEIPTS: u64 = DEFAULT_MAX_LEAVES;

/// How one line of `receipts.jsonl` fared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReceiptStatus {
    /// Its own COSE_Sign1 in `receipts.cbor` verified and signs exactly these bytes.
    Signed,
    /// No signature of its own, but its inclusion receipt (read from `inclusion.cbor`, or
    /// derived from `seals.cbor` and the lines when that file is not there) verified under a
    /// checkpoint's signature.
    Included,
    /// A receipt, but nothing signed covers it.
    Unproven,
    /// Not a receipt: the strict decoder's refusal code.
    Malformed(&'static str),
}

impl ReceiptStatus {
    /// Signed or included.
    pub fn is_verified(self) -> bool {
        matches!(self, Self::Signed | Self::Included)
    }

    /// A stable code: `signed`, `included`, `unproven`, `malformed`.
    pub fn code(self) -> &'static str {
        match self {
            Self::Signed => "signed",
            Self::Included => "included",
            Self::Unproven => "unproven",
            Self::Malformed(_) => "malformed",
        }
    }
}

/// One line of `receipts.jsonl`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReceiptRecord {
    /// The receipt's window id, if the line decodes.
    pub window_id: Option<u64>,
    /// BLAKE3 of the line's bytes (without its `\n`).
    pub content_hash: [u8; 32],
    /// What covers it.
    pub status: ReceiptStatus,
}

/// Whether the receipts are the whole stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completeness {
    /// Not sealed (neither `seals.cbor` nor `inclusion.cbor`): nothing signed says which
    /// windows the stream had, so completeness is unknown.
    Unknown,
    /// Sealed, and the final seal covers exactly these receipts, in order, with nothing else
    /// wrong in the directory.
    Complete,
    /// Sealed, and something is wrong (see the problems).
    Incomplete,
}

/// The answer, in one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Every receipt verified and the stream is complete.
    Complete,
    /// Every receipt verified, but the stream is not sealed: completeness is unknown.
    Unsealed,
    /// At least one problem.
    Failed,
}

impl Outcome {
    /// `complete`, `unsealed`, `failed`.
    pub fn code(self) -> &'static str {
        match self {
            Self::Complete => "complete",
            Self::Unsealed => "unsealed",
            Self::Failed => "failed",
        }
    }
}

/// One problem, with where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// A stable code (`spec/STREAM-AT-REST.md`, section 5.2, and the completeness codes of
    /// `spec/STREAM-SEAL.md`, section 6).
    pub code: &'static str,
    /// The file it concerns.
    pub file: &'static str,
    /// 0-based line of `receipts.jsonl` or item of a CBOR file, if it concerns one.
    pub index: Option<u64>,
    /// The window id concerned, if known.
    pub window_id: Option<u64>,
    /// A sentence; untrusted text in it is escaped ([`escape_untrusted`]).
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(i) = self.index {
            let what = if self.file == RECEIPTS_JSONL {
                "line"
            } else {
                "item"
            };
            // Lines are shown 1-based, items 0-based, as editors and CBOR tools count them.
            let shown = if self.file == RECEIPTS_JSONL {
                i + 1
            } else {
                i
            };
            write!(f, " {what} {shown}")?;
        }
        if let Some(w) = self.window_id {
            write!(f, " (window {w})")?;
        }
        write!(f, ": {}: {}", self.code, self.message)
    }
}

/// Sums over the decodable receipts of `receipts.jsonl` (saturating).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Decodable lines.
    pub receipts: u64,
    /// Sum of `tick_count`.
    pub ticks: u64,
    /// Sum of `inbound_bytes`.
    pub inbound_bytes: u64,
    /// Sum of `outbound_bytes`.
    pub outbound_bytes: u64,
    /// Sum of `joules_uj`.
    pub joules_uj: u64,
    /// Verdicts per kind.
    pub verdicts: VerdictCounts,
    /// Ledger findings per kind.
    pub conservation: ConservationCounts,
    /// The first receipt's window id.
    pub first_window: Option<u64>,
    /// The last receipt's window id.
    pub last_window: Option<u64>,
}

impl Totals {
    /// `last - first + 1 - receipts` (0 without receipts): what `summary.json` records.
    pub fn empty_windows(&self) -> u64 {
        match (self.first_window, self.last_window) {
            (Some(a), Some(b)) => b
                .saturating_sub(a)
                .saturating_add(1)
                .saturating_sub(self.receipts),
            _ => 0,
        }
    }

    fn add(&mut self, r: &StreamWindowReceipt) {
        self.receipts = self.receipts.saturating_add(1);
        self.ticks = self.ticks.saturating_add(r.tick_count);
        self.inbound_bytes = self.inbound_bytes.saturating_add(r.inbound_bytes);
        self.outbound_bytes = self.outbound_bytes.saturating_add(r.outbound_bytes);
        self.joules_uj = self.joules_uj.saturating_add(r.joules_uj);
        let v = &mut self.verdicts;
        let slot = match r.verdict.rank() {
            0 => &mut v.pass,
            1 => &mut v.need_more,
            2 => &mut v.yields,
            _ => &mut v.fail,
        };
        *slot = slot.saturating_add(1);
        let c = &mut self.conservation;
        let slot = match r.conservation.rank() {
            0 => &mut c.conforming,
            1 => &mut c.hallucination,
            _ => &mut c.barge_in_ignored,
        };
        *slot = slot.saturating_add(1);
        self.first_window.get_or_insert(r.window_id);
        self.last_window = Some(r.window_id);
    }
}

/// What [`verify_dir`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirReport {
    /// One record per line of `receipts.jsonl`, in order.
    pub receipts: Vec<ReceiptRecord>,
    /// The first decodable receipt's stream id.
    pub stream_id: Option<String>,
    /// The first decodable receipt's steward.
    pub steward: Option<String>,
    /// Items in `receipts.cbor`.
    pub window_signature_items: u64,
    /// Of them, verified and matched to a line.
    pub window_signatures: u64,
    /// Whether `seals.cbor` or `inclusion.cbor` is there (both signed documents).
    pub sealed: bool,
    /// Checkpoints that verified.
    pub checkpoints: u64,
    /// The last verified checkpoint's tree size.
    pub final_tree_size: u64,
    /// The last verified checkpoint's root. When the directory is
    /// [`Completeness::Complete`] it is the RFC 9162 root over every line's content hash in
    /// order (the final seal covers exactly these receipts), which a document's binding check
    /// may take instead of computing it again.
    pub final_root: Option<[u8; 32]>,
    /// Inclusion receipts that verified and prove their line.
    pub inclusion_receipts: u64,
    /// Whether the inclusion receipts were derived from `seals.cbor` and the lines (a sealed
    /// directory without `inclusion.cbor`, layout `stream-at-rest/2`) rather than read.
    pub inclusion_derived: bool,
    /// Whether the receipts are the whole stream.
    pub completeness: Completeness,
    /// The first [`MAX_NAMED_PROBLEMS`] problems, in the order found.
    pub problems: Vec<Problem>,
    /// Every problem, named or not.
    pub problem_count: u64,
    /// Sums over the decodable receipts.
    pub totals: Totals,
    /// `summary.json`, if present and well-formed.
    pub summary: Option<RunSummary>,
    /// BLAKE3 (hex) of each file read whole, by name.
    pub file_hashes: Vec<(&'static str, String)>,
    /// What the last verified checkpoint, when it is the final seal, commits to beside the
    /// receipts: `Some` for a `stream-seal/2` final seal (each document's digest was checked
    /// against its file), `None` without a final seal or with a `stream-seal/1` one (whose
    /// documents are not sealed).
    pub sealed_documents: Option<SealedDocuments>,
    /// `stop-latency.cbor`, when it verified under the key (its binding problems, if any, are
    /// in [`DirReport::document_problems`]).
    pub stop_latency: Option<StopLatencyDocument>,
    /// `interaction-metrics.cbor`, when it verified under the key (its binding problems, if
    /// any, are in [`DirReport::document_problems`]).
    pub interaction: Option<InteractionDocument>,
    /// What checking the call's signed documents themselves found (`spec/STREAM-AT-REST.md`
    /// section 5.1 step 9), in [`DOCUMENT_FILES`] order, each with the document's file name:
    /// a document that is not a regular file, does not verify under the key (its verifier's
    /// code), is not bound to the receipts (the binding codes of `spec/STOP-LATENCY-V1.md` and
    /// `spec/INTERACTION-METRICS-V1.md` section 7), or is missing when required
    /// (`stop_latency_missing`, `interaction_metrics_missing`). The first
    /// [`MAX_NAMED_PROBLEMS`] of each document file are named, every one is counted
    /// ([`DirReport::document_problem_count_of`]): a document's binding can find one problem
    /// per receipt, and the receipts need no key to write. They are not in
    /// [`DirReport::problems`] nor counted in [`DirReport::problem_count`], and do not change
    /// [`DirReport::completeness`] (which is about the receipts and their seals); they make
    /// the [`DirReport::outcome`] [`Outcome::Failed`].
    pub document_problems: Vec<Problem>,
    /// Each document file with findings and how many it has, named or not, in
    /// [`DOCUMENT_FILES`] order.
    pub document_problem_counts: Vec<(&'static str, u64)>,
}

impl DirReport {
    /// The answer in one word: [`DirReport::receipts_outcome`], and [`Outcome::Failed`] when a
    /// signed document has a problem ([`DirReport::document_problems`]).
    pub fn outcome(&self) -> Outcome {
        if self.document_problems.is_empty() {
            self.receipts_outcome()
        } else {
            Outcome::Failed
        }
    }

    /// The answer for the receipts and their seals alone (every problem of
    /// [`DirReport::problems`], the signed documents' own checks left out).
    pub fn receipts_outcome(&self) -> Outcome {
        match (self.problem_count, self.completeness) {
            (0, Completeness::Complete) => Outcome::Complete,
            (0, Completeness::Unknown) => Outcome::Unsealed,
            _ => Outcome::Failed,
        }
    }

    /// The signed documents' problems about `file` (one of [`DOCUMENT_FILES`]).
    pub fn document_problems_of<'a>(&'a self, file: &'a str) -> impl Iterator<Item = &'a Problem> {
        self.document_problems
            .iter()
            .filter(move |p| p.file == file)
    }

    /// How many findings the signed document `file` has, named in
    /// [`DirReport::document_problems`] or not.
    pub fn document_problem_count_of(&self, file: &str) -> u64 {
        self.document_problem_counts
            .iter()
            .filter(|(f, _)| *f == file)
            .map(|(_, n)| *n)
            .sum()
    }

    /// How many findings the signed documents have, named or not.
    pub fn document_problem_count(&self) -> u64 {
        self.document_problem_counts
            .iter()
            .fold(0u64, |a, (_, n)| a.saturating_add(*n))
    }

    /// Receipts signed or included.
    pub fn verified(&self) -> usize {
        self.receipts
            .iter()
            .filter(|r| r.status.is_verified())
            .count()
    }

    /// Line `i`'s record.
    fn record(&self, i: u64) -> Option<ReceiptRecord> {
        usize::try_from(i)
            .ok()
            .and_then(|k| self.receipts.get(k))
            .copied()
    }

    /// Line `i`'s inclusion receipt verified: counted, and the line *included* unless it is
    /// signed.
    fn included(&mut self, i: u64) {
        self.inclusion_receipts += 1;
        if let Some(r) = usize::try_from(i)
            .ok()
            .and_then(|k| self.receipts.get_mut(k))
            && r.status == ReceiptStatus::Unproven
        {
            r.status = ReceiptStatus::Included;
        }
    }

    fn problem(
        &mut self,
        code: &'static str,
        file: &'static str,
        index: Option<u64>,
        window_id: Option<u64>,
        message: String,
    ) {
        self.problem_count = self.problem_count.saturating_add(1);
        if self.problems.len() < MAX_NAMED_PROBLEMS {
            self.problems.push(Problem {
                code,
                file,
                index,
                window_id,
                message,
            });
        }
    }
}

/// A reader that hashes what passes through it.
struct Hashing<R> {
    inner: R,
    hasher: blake3::Hasher,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

/// Opens the source's `name`; records `missing_file` (when `required`) or `not_regular_file`.
fn open<S: StreamSource>(
    report: &mut DirReport,
    src: &mut S,
    name: &'static str,
    required: bool,
) -> Result<Option<S::Reader>> {
    match src.fetch(name)? {
        Fetched::Found(f) => Ok(Some(f)),
        Fetched::Missing => {
            if required {
                report.problem(
                    "missing_file",
                    name,
                    None,
                    None,
                    format!("{name} is missing"),
                );
            }
            Ok(None)
        }
        Fetched::NotRegular(kind) => {
            report.problem(
                "not_regular_file",
                name,
                None,
                None,
                format!("{name} is a {kind}, not a regular file; it is not read"),
            );
            Ok(None)
        }
    }
}

/// Verifies the stream directory `dir` under `key` (`spec/STREAM-AT-REST.md`, section 5; the
/// key checked once by the caller, [`ValidKey::new`]):
/// every line of `receipts.jsonl` strictly decoded; every window signature of `receipts.cbor`
/// verified and matched to a later line; when sealed, every checkpoint of `seals.cbor`, every
/// inclusion receipt of `inclusion.cbor` against its line, and the completeness check of
/// `spec/STREAM-SEAL.md` section 6, and the final seal's commitment to the signed documents;
/// `summary.json` and `signer.pub`, when present, against the files and the key; then the
/// call's signed documents themselves (section 5.1 step 9: verified under the key, bound to the
/// receipts, a missing one named when required; [`DirReport::document_problems`]).
/// `each_receipt` sees every decodable line (its 0-based index and the receipt), in order, as
/// it is read.
///
/// Errors only when `dir` is not a directory or a file cannot be read; everything else is a
/// [`Problem`] in the report.
pub fn verify_dir(
    dir: &Path,
    key: &ValidKey,
    each_receipt: &mut dyn FnMut(u64, &StreamWindowReceipt),
) -> Result<DirReport> {
    verify_stream(&mut DirSource::open(dir)?, key, each_receipt)
}

/// [`verify_dir`] over any [`StreamSource`]: the one verifier of a stream at rest, whether it
/// is a directory ([`DirSource`]) or a stream read back from elsewhere and served under the
/// layout's file names (`spec/STREAM-AT-REST.md` section 5.7). The checks, the problems and
/// their codes are [`verify_dir`]'s.
///
/// Errors only when the source cannot be read; everything else is a [`Problem`] in the
/// report.
pub fn verify_stream<S: StreamSource>(
    src: &mut S,
    key: &ValidKey,
    each_receipt: &mut dyn FnMut(u64, &StreamWindowReceipt),
) -> Result<DirReport> {
    let public = key.verifying_key();
    let mut report = DirReport {
        receipts: Vec::new(),
        stream_id: None,
        steward: None,
        window_signature_items: 0,
        window_signatures: 0,
        sealed: false,
        checkpoints: 0,
        final_tree_size: 0,
        final_root: None,
        inclusion_receipts: 0,
        inclusion_derived: false,
        completeness: Completeness::Unknown,
        problems: Vec::new(),
        problem_count: 0,
        totals: Totals::default(),
        summary: None,
        file_hashes: Vec::new(),
        sealed_documents: None,
        stop_latency: None,
        interaction: None,
        document_problems: Vec::new(),
        document_problem_counts: Vec::new(),
    };
    let mut entries: Vec<ReceiptEntry> = Vec::new();
    // Which line each entry is.
    let mut entry_line: Vec<u64> = Vec::new();
    // What the binding checks read of the receipts (the stream's identity once, a few bytes a
    // receipt) is kept only when a document is there to bind them; otherwise the first that
    // records a barge-in is all the missing-document rule needs.
    let mut keep = false;
    for (file, _) in DOCUMENT_FILES {
        keep |= src.exists(file)?;
    }
    let mut kept = BoundReceipts::new();
    // The signed documents as the final seal's check read them, so that each is read once.
    let mut read_documents: Vec<(&'static str, DocumentBytes)> = Vec::new();
    let mut barge_in: Option<BindingProblem> = None;
    read_lines(
        &mut report,
        src,
        &mut entries,
        &mut entry_line,
        &mut |i, r, content_hash| {
            if barge_in.is_none() {
                barge_in = jouleclaw_stop_latency::missing(std::slice::from_ref(r));
            }
            if keep {
                kept.push(r, content_hash);
            }
            each_receipt(i, r);
        },
    )?;
    read_window_signatures(&mut report, src, public, &entries, &entry_line)?;

    let seals_there = src.exists(SEALS_CBOR)?;
    let inclusion_there = src.exists(INCLUSION_CBOR)?;
    report.sealed = seals_there || inclusion_there;
    if report.sealed {
        if !seals_there {
            report.problem(
                "missing_file",
                SEALS_CBOR,
                None,
                None,
                "seals.cbor is missing beside inclusion.cbor: the stream was sealed".to_owned(),
            );
        }
        let checkpoints = read_seals(&mut report, src, public, &entries)?;
        let stream = check_stream(&entries, &checkpoints);
        if inclusion_there {
            read_inclusion(&mut report, src, public)?;
        } else {
            // The completeness check computed every checkpoint's root over the decodable lines
            // in order; when it found nothing wrong and every line decodes, those are the lines
            // the derived proofs start from, so their roots are known to be the checkpoints'.
            let roots_checked =
                stream.problems.is_empty() && entries.len() == report.receipts.len();
            derive_inclusion(&mut report, &checkpoints, roots_checked);
        }
        for p in &stream.problems {
            let j = p.to_json();
            let line = j
                .get("index")
                .and_then(serde_json::Value::as_u64)
                .and_then(|i| entry_line.get(usize::try_from(i).ok()?).copied());
            let window_id = j.get("window_id").and_then(serde_json::Value::as_u64);
            let file = if line.is_some() {
                RECEIPTS_JSONL
            } else {
                SEALS_CBOR
            };
            let text = p.to_string();
            let text = text
                .strip_prefix(p.code())
                .and_then(|t| t.strip_prefix(": "))
                .unwrap_or(&text);
            report.problem(
                p.code(),
                file,
                line,
                window_id,
                escape_untrusted(text).into_owned(),
            );
        }
        report.checkpoints = checkpoints.len() as u64;
        report.final_tree_size = checkpoints.last().map_or(0, |c| c.seal.tree_size);
        report.final_root = checkpoints.last().map(|c| c.seal.root);
        if let Some(docs) = checkpoints
            .last()
            .filter(|c| c.seal.is_final)
            .and_then(|c| c.seal.documents.clone())
        {
            read_documents = check_sealed_documents(&mut report, src, &docs)?;
            report.sealed_documents = Some(docs);
        }
    }
    // A line nothing signed covers.
    let unproven: Vec<(u64, Option<u64>)> = report
        .receipts
        .iter()
        .enumerate()
        .filter(|(_, r)| r.status == ReceiptStatus::Unproven)
        .map(|(i, r)| (i as u64, r.window_id))
        .collect();
    for (i, w) in unproven {
        report.problem(
            "unproven_receipt",
            RECEIPTS_JSONL,
            Some(i),
            w,
            if report.sealed {
                "neither a window signature nor an inclusion receipt covers it".to_owned()
            } else {
                "no window signature covers it and the stream is not sealed".to_owned()
            },
        );
    }
    if report.receipts.is_empty() && report.problem_count == 0 {
        report.problem(
            "no_receipts",
            RECEIPTS_JSONL,
            None,
            None,
            "no receipts in receipts.jsonl".to_owned(),
        );
    }
    check_signer(&mut report, src, public)?;
    let listed = check_summary(&mut report, src, public)?;
    report.completeness = match (report.sealed, report.problem_count) {
        (false, _) => Completeness::Unknown,
        (true, 0) => Completeness::Complete,
        (true, _) => Completeness::Incomplete,
    };
    check_documents(
        &mut report,
        src,
        key,
        &kept,
        barge_in,
        read_documents,
        &listed,
    )?;
    Ok(report)
}

/// One finding of the signed documents' checks: counted, and named when `file` has fewer than
/// [`MAX_NAMED_PROBLEMS`] named.
fn document_problem(report: &mut DirReport, file: &'static str, code: &'static str, msg: &str) {
    let count = match report
        .document_problem_counts
        .iter_mut()
        .find(|(f, _)| *f == file)
    {
        Some((_, n)) => n,
        None => {
            report.document_problem_counts.push((file, 0));
            match report.document_problem_counts.last_mut() {
                Some((_, n)) => n,
                None => return,
            }
        }
    };
    *count = count.saturating_add(1);
    if *count > MAX_NAMED_PROBLEMS as u64 {
        return;
    }
    report.document_problems.push(Problem {
        code,
        file,
        index: None,
        window_id: None,
        message: escape_untrusted(msg).into_owned(),
    });
}

/// What reading one signed document found.
enum DocumentBytes {
    /// Not there.
    Missing,
    /// Its first bytes, up to the bound it was read with.
    Read(Vec<u8>),
    /// Not a regular file (what it is); not read.
    NotRegular(&'static str),
}

/// Reads the document `file` (a regular file only) up to `max + 1` bytes, so that an over-long
/// one can be told.
fn fetch_document<S: StreamSource>(
    src: &mut S,
    file: &'static str,
    max: u64,
) -> Result<DocumentBytes> {
    Ok(match src.fetch(file)? {
        Fetched::Missing => DocumentBytes::Missing,
        Fetched::NotRegular(what) => DocumentBytes::NotRegular(what),
        Fetched::Found(f) => {
            let mut bytes = Vec::new();
            f.take(max.saturating_add(1))
                .read_to_end(&mut bytes)
                .map_err(|e| StoreError::io(src.place(file), e))?;
            DocumentBytes::Read(bytes)
        }
    })
}

/// The document `file` for its own check: the bytes the final seal's check read (`read`), or
/// else read now; at most `max + 1` bytes of it (so that the kind's verifier refuses an
/// over-long one). `None`, with `not_regular_file` recorded, when it is not a regular file.
fn read_document<S: StreamSource>(
    report: &mut DirReport,
    src: &mut S,
    file: &'static str,
    max: usize,
    read: &mut Vec<(&'static str, DocumentBytes)>,
) -> Result<Option<DocumentBytes>> {
    let got = match read.iter().position(|(f, _)| *f == file) {
        Some(i) => read.swap_remove(i).1,
        None => fetch_document(src, file, max as u64)?,
    };
    Ok(match got {
        DocumentBytes::NotRegular(what) => {
            document_problem(
                report,
                file,
                "not_regular_file",
                &format!("a {what}, not a regular file; not read"),
            );
            None
        }
        DocumentBytes::Read(mut bytes) => {
            bytes.truncate(max.saturating_add(1));
            Some(DocumentBytes::Read(bytes))
        }
        DocumentBytes::Missing => Some(DocumentBytes::Missing),
    })
}

/// The call's signed documents (`spec/STREAM-AT-REST.md` section 5.1 step 9), each checked as
/// its spec says: `stop-latency.cbor` (`spec/STOP-LATENCY-V1.md` section 7) and
/// `interaction-metrics.cbor` (`spec/INTERACTION-METRICS-V1.md` section 7) verified under
/// `key`, then bound to `receipts` (what the binding reads of every decodable line, in order;
/// empty when no document file is there) under their root: the final seal's when the stream is
/// complete and it seals exactly these receipts, else computed once. A missing
/// `stop-latency.cbor` is `stop_latency_missing` when a receipt records a barge-in
/// (`barge_in`, the first) or `summary.json` lists it (`listed`: the document files its
/// `outputs` names, as [`check_summary`] read it); a missing `interaction-metrics.cbor` is
/// `interaction_metrics_missing` when `summary.json` lists it. `read`: what the final seal's
/// check read of each document file, taken instead of reading the file again.
fn check_documents<S: StreamSource>(
    report: &mut DirReport,
    src: &mut S,
    key: &ValidKey,
    receipts: &BoundReceipts,
    barge_in: Option<BindingProblem>,
    mut read: Vec<(&'static str, DocumentBytes)>,
    listed: &[&'static str],
) -> Result<()> {
    let mut root: Option<Option<[u8; 32]>> = None;
    let mut root_of_receipts = |report: &DirReport| {
        *root.get_or_insert_with(|| match report.final_root {
            Some(r)
                if report.completeness == Completeness::Complete
                    && report.final_tree_size == receipts.facts.len() as u64 =>
            {
                Some(r)
            }
            _ => receipts.root(),
        })
    };
    let bind = |report: &mut DirReport, file: &'static str, problems: Vec<BindingProblem>| {
        for p in problems {
            document_problem(report, file, p.code, &p.detail);
        }
    };

    let file = STOP_LATENCY_CBOR;
    match read_document(
        report,
        src,
        file,
        jouleclaw_stop_latency::MAX_SIGNED_BYTES,
        &mut read,
    )? {
        None | Some(DocumentBytes::NotRegular(_)) => {}
        Some(DocumentBytes::Missing) => {
            if let Some(p) = barge_in {
                bind(report, file, vec![p]);
            } else if listed.contains(&file) {
                document_problem(
                    report,
                    file,
                    "stop_latency_missing",
                    "summary.json lists it and it is gone",
                );
            }
        }
        Some(DocumentBytes::Read(bytes)) => match jouleclaw_stop_latency::verify(&bytes, key) {
            Err(e) => document_problem(report, file, e.code(), &e.to_string()),
            Ok(v) => {
                let root = root_of_receipts(report);
                let found =
                    jouleclaw_stop_latency::check_bound_under_root(&v.document, receipts, root);
                bind(report, file, found);
                report.stop_latency = Some(v.document);
            }
        },
    }

    let file = INTERACTION_METRICS_CBOR;
    match read_document(
        report,
        src,
        file,
        jouleclaw_interaction::MAX_SIGNED_BYTES,
        &mut read,
    )? {
        None | Some(DocumentBytes::NotRegular(_)) => {}
        Some(DocumentBytes::Missing) => {
            if let Some(p) = jouleclaw_interaction::missing(listed.contains(&file)) {
                bind(report, file, vec![p]);
            }
        }
        Some(DocumentBytes::Read(bytes)) => match jouleclaw_interaction::verify(&bytes, key) {
            Err(e) => document_problem(report, file, e.code(), &e.to_string()),
            Ok(v) => {
                let root = root_of_receipts(report);
                let found =
                    jouleclaw_interaction::check_bound_under_root(&v.document, receipts, root);
                bind(report, file, found);
                report.interaction = Some(v.document);
            }
        },
    }
    Ok(())
}

/// A `stream-seal/2` final seal against the directory (`spec/STREAM-SEAL.md` section 3.2):
/// each listed document's file is there and hashes to its digest; a document file there whose
/// kind the seal does not list, or a listed kind this verifier has no file name for, is a
/// problem. Returns what it read of each document file, for the document's own check to take
/// the same bytes (each file is read once).
fn check_sealed_documents<S: StreamSource>(
    report: &mut DirReport,
    src: &mut S,
    docs: &SealedDocuments,
) -> Result<Vec<(&'static str, DocumentBytes)>> {
    let mut read = Vec::new();
    for kind in docs.keys() {
        if !DOCUMENT_FILES
            .iter()
            .any(|(_, kinds)| kinds.contains(&kind.as_str()))
        {
            report.problem(
                "document_kind_unknown",
                SEALS_CBOR,
                None,
                None,
                format!(
                    "the final seal commits to a {} document, a kind this verifier cannot check",
                    escape_untrusted(kind)
                ),
            );
        }
    }
    for &(file, kinds) in DOCUMENT_FILES {
        if kinds.iter().filter(|k| docs.contains_key(**k)).count() > 1 {
            report.problem(
                "document_kind_mismatch",
                SEALS_CBOR,
                None,
                None,
                format!("the final seal commits to {file} under more than one kind"),
            );
            continue;
        }
        let listed = kinds.iter().find_map(|k| docs.get(*k).map(|d| (*k, d)));
        let kind = listed.map_or(kinds.first().copied().unwrap_or(file), |(k, _)| k);
        let listed = listed.map(|(_, d)| d);
        let got = fetch_document(src, file, MAX_DOCUMENT_BYTES)?;
        let bytes = match &got {
            DocumentBytes::Missing => None,
            DocumentBytes::NotRegular(what) => {
                report.problem(
                    "not_regular_file",
                    file,
                    None,
                    None,
                    format!("{file} is a {what}, not a regular file"),
                );
                read.push((file, got));
                continue;
            }
            DocumentBytes::Read(b) if b.len() as u64 > MAX_DOCUMENT_BYTES => {
                report.problem(
                    "document_digest_mismatch",
                    file,
                    None,
                    None,
                    format!("{file} holds more than {MAX_DOCUMENT_BYTES} bytes"),
                );
                read.push((file, got));
                continue;
            }
            DocumentBytes::Read(b) => Some(b),
        };
        match (listed, bytes) {
            (None, None) => {}
            (Some(_), None) => report.problem(
                "document_missing",
                file,
                None,
                None,
                format!("the final seal commits to a {kind} document and {file} is not there"),
            ),
            (None, Some(_)) => report.problem(
                "document_not_sealed",
                file,
                None,
                None,
                format!(
                    "{file} is there and the final seal (stream-seal/2) does not commit to a {kind} document"
                ),
            ),
            (Some(digest), Some(b)) if document_digest(b) != *digest => report.problem(
                "document_digest_mismatch",
                file,
                None,
                None,
                format!(
                    "{file} has SHA-256 {}, the final seal commits to {}: it changed after sealing",
                    hex::encode(document_digest(b)),
                    hex::encode(digest)
                ),
            ),
            (Some(_), Some(_)) => {}
        }
        read.push((file, got));
    }
    Ok(read)
}

fn read_lines<S: StreamSource>(
    report: &mut DirReport,
    src: &mut S,
    entries: &mut Vec<ReceiptEntry>,
    entry_line: &mut Vec<u64>,
    each_receipt: &mut dyn FnMut(u64, &StreamWindowReceipt, [u8; 32]),
) -> Result<()> {
    let path = src.place(RECEIPTS_JSONL);
    let Some(file) = open(report, src, RECEIPTS_JSONL, true)? else {
        return Ok(());
    };
    let mut reader = BufReader::new(Hashing {
        inner: file,
        hasher: blake3::Hasher::new(),
    });
    let max = Limits::RECEIPT.max_document_bytes as u64;
    let mut line = Vec::new();
    let mut last_window: Option<u64> = None;
    loop {
        line.clear();
        let n = (&mut reader)
            .take(max + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| StoreError::io(&path, e))?;
        if n == 0 {
            break;
        }
        let index = report.receipts.len() as u64;
        if index >= MAX_RECEIPTS {
            report.problem(
                "too_many_receipts",
                RECEIPTS_JSONL,
                Some(index),
                None,
                format!("more than {MAX_RECEIPTS} lines; the rest is not read"),
            );
            return Ok(());
        }
        if line.last() != Some(&b'\n') {
            let long = line.len() as u64 > max;
            report.problem(
                if long {
                    "line_too_long"
                } else {
                    "unterminated_line"
                },
                RECEIPTS_JSONL,
                Some(index),
                None,
                if long {
                    format!("longer than a receipt ({max} bytes); the rest is not read")
                } else {
                    "the last line has no line end".to_owned()
                },
            );
            if long {
                return Ok(());
            }
        } else {
            line.pop();
        }
        let content_hash = *blake3::hash(&line).as_bytes();
        match decode_receipt(&line) {
            Err(r) => {
                report.problem(
                    "malformed_line",
                    RECEIPTS_JSONL,
                    Some(index),
                    None,
                    format!("not a receipt: {} at byte {}", r.code.as_str(), r.offset),
                );
                report.receipts.push(ReceiptRecord {
                    window_id: None,
                    content_hash,
                    status: ReceiptStatus::Malformed(r.code.as_str()),
                });
            }
            Ok(receipt) => {
                each_receipt(index, &receipt, content_hash);
                report.totals.add(&receipt);
                let w = receipt.window_id;
                match (&report.stream_id, &report.steward) {
                    (Some(s), Some(t)) if *s != receipt.stream_id || *t != receipt.steward => {
                        let msg = format!(
                            "stream \"{}\", steward \"{}\": another stream or steward than line 1's",
                            escape_untrusted(&receipt.stream_id),
                            escape_untrusted(&receipt.steward)
                        );
                        report.problem("mixed_stream", RECEIPTS_JSONL, Some(index), Some(w), msg);
                    }
                    (None, _) | (_, None) => {
                        report.stream_id = Some(receipt.stream_id.clone());
                        report.steward = Some(receipt.steward.clone());
                    }
                    _ => {}
                }
                if let Some(prev) = last_window
                    && w <= prev
                {
                    report.problem(
                        "window_not_ascending",
                        RECEIPTS_JSONL,
                        Some(index),
                        Some(w),
                        format!("follows window {prev}: window ids must ascend"),
                    );
                }
                last_window = Some(w);
                report.receipts.push(ReceiptRecord {
                    window_id: Some(w),
                    content_hash,
                    status: ReceiptStatus::Unproven,
                });
                entries.push(ReceiptEntry {
                    window_id: w,
                    content_hash,
                    stream_id: receipt.stream_id,
                    steward: receipt.steward,
                });
                entry_line.push(index);
            }
        }
    }
    let hash = reader.into_inner().hasher.finalize();
    report
        .file_hashes
        .push((RECEIPTS_JSONL, hash.to_hex().to_string()));
    Ok(())
}

/// The decodable lines by content hash, for matching window signatures to them.
struct LineIndex<'a> {
    /// The decodable lines, in order.
    entries: &'a [ReceiptEntry],
    /// Where each content hash occurs among `entries`, in order; built at the first lookup the
    /// next entry does not answer (a window signature out of step with the lines), so a
    /// directory whose signatures follow its lines builds none.
    at: Option<HashMap<[u8; 32], Vec<usize>>>,
}

impl LineIndex<'_> {
    /// The first entry at or after `from` whose content hash is `hash`: one comparison when it
    /// is the entry at `from`, else one lookup (never a scan).
    fn first_from(&mut self, hash: &[u8; 32], from: usize) -> Option<usize> {
        if self.entries.get(from)?.content_hash == *hash {
            return Some(from);
        }
        let entries = self.entries;
        let at = self.at.get_or_insert_with(|| {
            let mut at: HashMap<[u8; 32], Vec<usize>> = HashMap::with_capacity(entries.len());
            for (k, e) in entries.iter().enumerate() {
                at.entry(e.content_hash).or_default().push(k);
            }
            at
        });
        let idx = at.get(hash)?;
        idx.get(idx.partition_point(|&k| k < from)).copied()
    }
}

/// Every window signature of `receipts.cbor`, matched to the lines. `entries` are the
/// decodable lines (`entry_line` says which line each is): a signed payload with one's content
/// hash is that line's bytes, so it is not decoded again (`cose::verify_known`).
fn read_window_signatures<S: StreamSource>(
    report: &mut DirReport,
    src: &mut S,
    key: &PublicKey,
    entries: &[ReceiptEntry],
    entry_line: &[u64],
) -> Result<()> {
    let path = src.place(RECEIPTS_CBOR);
    let Some(file) = open(report, src, RECEIPTS_CBOR, true)? else {
        return Ok(());
    };
    let mut lines = LineIndex { entries, at: None };
    let resolver = SingleKey::new(*key);
    // The first decodable line (its entry) after the previous match.
    let mut next_entry = 0usize;
    let mut index = 0u64;
    for item in cose::SequenceReader::new(file) {
        if index >= MAX_RECEIPTS {
            report.problem(
                "too_many_items",
                RECEIPTS_CBOR,
                Some(index),
                None,
                format!("more than {MAX_RECEIPTS} items; the rest is not read"),
            );
            return Ok(());
        }
        let verified = match item {
            Ok(bytes) => cose::verify_known(&bytes, &resolver, |hash: &blake3::Hash| {
                let e = entries.get(lines.first_from(hash.as_bytes(), next_entry).or_else(
                    // Any line with these bytes: the same bytes decode to the same receipt.
                    || lines.first_from(hash.as_bytes(), 0),
                )?)?;
                Some(cose::KnownReceipt {
                    steward: &e.steward,
                    stream_id: &e.stream_id,
                    window_id: e.window_id,
                })
            }),
            Err(Jcr1Error::Cose(c)) => Err(c),
            Err(_) => {
                return Err(StoreError::io(
                    &path,
                    std::io::Error::other("reading the CBOR sequence failed"),
                ));
            }
        };
        // A refused item (not a COSE_Sign1, or bytes that are not well-formed CBOR, after which
        // the reader ends the sequence) is one problem; the next item follows if there is one.
        match verified {
            Err(c) => report.problem(
                "refused_signature",
                RECEIPTS_CBOR,
                Some(index),
                None,
                format!("{}: {c}", c.as_str()),
            ),
            Ok(v) => {
                let found = lines
                    .first_from(v.content_hash().as_bytes(), next_entry)
                    .and_then(|k| Some((k, entry_line.get(k)?)));
                match found {
                    Some((k, &j)) => {
                        next_entry = k + 1;
                        report.window_signatures += 1;
                        if let Some(r) = usize::try_from(j)
                            .ok()
                            .and_then(|j| report.receipts.get_mut(j))
                        {
                            r.status = ReceiptStatus::Signed;
                        }
                    }
                    None => report.problem(
                        "unmatched_signature",
                        RECEIPTS_CBOR,
                        Some(index),
                        Some(v.window_id()),
                        "signs a receipt that is not a later line of receipts.jsonl".to_owned(),
                    ),
                }
            }
        }
        index += 1;
    }
    report.window_signature_items = index;
    Ok(())
}

/// What to do with one item of a seals or inclusion sequence.
enum Step {
    /// A well-formed item to verify.
    Item(Vec<u8>),
    /// Refused from its framing (recorded); the next item follows, if the reader can delimit
    /// one (after bytes that are not well-formed CBOR it ends the sequence).
    Skip,
}

/// Records a framing refusal of item `i` of `file` as `refused_code`.
fn step<S: StreamSource>(
    report: &mut DirReport,
    src: &S,
    file: &'static str,
    refused_code: &'static str,
    i: u64,
    item: core::result::Result<Vec<u8>, Jcr1Error>,
) -> Result<Step> {
    match item {
        Ok(b) => Ok(Step::Item(b)),
        Err(Jcr1Error::Cose(c)) => {
            report.problem(
                refused_code,
                file,
                Some(i),
                None,
                format!("{}: {c}", c.as_str()),
            );
            Ok(Step::Skip)
        }
        Err(_) => Err(StoreError::io(
            src.place(file),
            std::io::Error::other("reading the CBOR sequence failed"),
        )),
    }
}

fn read_seals<S: StreamSource>(
    report: &mut DirReport,
    src: &mut S,
    key: &PublicKey,
    entries: &[ReceiptEntry],
) -> Result<Vec<jouleclaw_seal::Checkpoint>> {
    let mut checkpoints = Vec::new();
    let Some(file) = open(report, src, SEALS_CBOR, false)? else {
        return Ok(checkpoints);
    };
    let mut verifier = SealVerifier::new(*key);
    let limit = (entries.len() as u64).saturating_add(1).min(MAX_RECEIPTS);
    for (i, item) in cose::SequenceReader::new(file).enumerate() {
        let i = i as u64;
        if i >= limit {
            report.problem(
                "too_many_checkpoints",
                SEALS_CBOR,
                Some(i),
                None,
                "more checkpoints than receipts; the rest is not read".to_owned(),
            );
            break;
        }
        let bytes = match step(report, src, SEALS_CBOR, "refused_seal", i, item)? {
            Step::Item(b) => b,
            Step::Skip => continue,
        };
        match verifier.verify_checkpoint(&bytes) {
            Ok(c) => checkpoints.push(c),
            Err(e) => report.problem(
                "refused_seal",
                SEALS_CBOR,
                Some(i),
                None,
                format!("{}: {}", e.code(), escape_untrusted(&e.to_string())),
            ),
        }
    }
    Ok(checkpoints)
}

fn read_inclusion<S: StreamSource>(
    report: &mut DirReport,
    src: &mut S,
    key: &PublicKey,
) -> Result<()> {
    let Some(file) = open(report, src, INCLUSION_CBOR, true)? else {
        return Ok(());
    };
    let mut verifier = SealVerifier::new(*key);
    let lines = report.receipts.len() as u64;
    let mut count = 0u64;
    for (i, item) in cose::SequenceReader::new(file).enumerate() {
        let i = i as u64;
        count = i + 1;
        if i >= lines {
            report.problem(
                "inclusion_count",
                INCLUSION_CBOR,
                Some(i),
                None,
                format!("more inclusion receipts than the {lines} lines; the rest is not read"),
            );
            return Ok(());
        }
        let bytes = match step(report, src, INCLUSION_CBOR, "refused_inclusion", i, item)? {
            Step::Item(b) => b,
            Step::Skip => continue,
        };
        let Some(record) = report.record(i) else {
            continue;
        };
        match verifier.verify_inclusion_receipt(&bytes, &record.content_hash) {
            Ok(v) if v.leaf_index == i => report.included(i),
            Ok(v) => report.problem(
                "inclusion_wrong_leaf",
                INCLUSION_CBOR,
                Some(i),
                record.window_id,
                format!("proves the line at leaf {}, not {i}", v.leaf_index),
            ),
            Err(e) => report.problem(
                "refused_inclusion",
                INCLUSION_CBOR,
                Some(i),
                record.window_id,
                format!("does not prove line {}: {}", i + 1, e.code()),
            ),
        }
    }
    if count < lines {
        report.problem(
            "inclusion_count",
            INCLUSION_CBOR,
            None,
            None,
            format!("{count} inclusion receipts for {lines} lines"),
        );
    }
    Ok(())
}

/// A sealed directory without `inclusion.cbor` (`spec/STREAM-AT-REST.md` section 5.1 step 3,
/// layout `stream-at-rest/2`): each line's inclusion proof is derived from the lines and checked
/// against the first verified checkpoint that seals its leaf. The receipt it stands for is that
/// checkpoint's protected header and signature around the derived proof; the signature was
/// verified over the checkpoint's root with [`read_seals`], so the proof leading from the
/// line's leaf to that root is what is left to check.
///
/// The proofs are derived from the lines themselves, so the one leading from leaf `i` to the
/// root over `n` lines leads to the root of the tree of those `n` lines, whichever `i`: every
/// line a checkpoint newly seals is proven exactly when that root is the checkpoint's. The root
/// is computed once per checkpoint, on a frontier the lines are appended to in order (one leaf
/// hash and one node hash a line amortized, and O(log n) for each root), instead of one path
/// of O(log n) hashes derived and walked per line; the verdicts and their messages are the
/// same.
///
/// `roots_checked`: `check_stream` found no problem over `checkpoints` and every line decodes.
/// It then appended the same content hashes, in the same order, to a frontier of its own and
/// found each checkpoint's root there (every checkpoint seals at most the lines: the final one
/// seals exactly them and none is larger), so the roots are not computed a second time.
fn derive_inclusion(
    report: &mut DirReport,
    checkpoints: &[jouleclaw_seal::Checkpoint],
    roots_checked: bool,
) {
    report.inclusion_derived = true;
    let lines = report.receipts.len() as u64;
    let mut frontier = Frontier::new();
    let mut covered = 0u64;
    for c in checkpoints {
        let n = c.seal.tree_size;
        if n <= covered {
            continue;
        }
        let proved = if n > lines {
            Err(format!(
                "the checkpoint that seals it covers {n} receipts and receipts.jsonl has \
                 {lines} lines"
            ))
        } else if roots_checked {
            Ok(())
        } else {
            while frontier.size() < n {
                let Some(record) = report.record(frontier.size()) else {
                    break;
                };
                // At most MAX_RECEIPTS lines are read, so the frontier never refuses.
                let _ = frontier.append(&record.content_hash);
            }
            (frontier.root() == c.seal.root)
                .then_some(())
                .ok_or_else(|| {
                    format!(
                        "proof_root_mismatch: the lines do not lead to the root of the \
                     checkpoint over {n} receipts"
                    )
                })
        };
        for i in covered..n.min(lines) {
            let Some(record) = report.record(i) else {
                continue;
            };
            match &proved {
                Ok(()) => report.included(i),
                Err(why) => report.problem(
                    "derived_inclusion_failed",
                    RECEIPTS_JSONL,
                    Some(i),
                    record.window_id,
                    format!("the inclusion proof derived for it does not verify: {why}"),
                ),
            }
        }
        covered = n;
    }
    for i in covered..lines {
        let window_id = report.record(i).and_then(|r| r.window_id);
        report.problem(
            "receipt_not_sealed",
            RECEIPTS_JSONL,
            Some(i),
            window_id,
            format!(
                "no verified checkpoint seals leaf {i} (the last seals {covered} receipts), so \
                 no inclusion receipt can be derived for it"
            ),
        );
    }
}

fn check_signer<S: StreamSource>(
    report: &mut DirReport,
    src: &mut S,
    key: &PublicKey,
) -> Result<()> {
    let path = src.place(SIGNER_PUB);
    let Some(file) = open(report, src, SIGNER_PUB, false)? else {
        return Ok(());
    };
    let bytes = layout::read_bounded(file, &path, cose::MAX_KEY_FILE_BYTES)?;
    let parsed = bytes
        .as_deref()
        .and_then(|b| std::str::from_utf8(b).ok())
        .map(cose::parse_public_key_text);
    match parsed {
        Some(Ok(k)) if k == *key => {
            if let Some(b) = &bytes {
                report
                    .file_hashes
                    .push((SIGNER_PUB, blake3::hash(b).to_hex().to_string()));
            }
        }
        Some(Ok(_)) => report.problem(
            "signer_mismatch",
            SIGNER_PUB,
            None,
            None,
            "signer.pub is not the verifying key".to_owned(),
        ),
        _ => report.problem(
            "signer_malformed",
            SIGNER_PUB,
            None,
            None,
            "signer.pub is not a public key file".to_owned(),
        ),
    }
    Ok(())
}

/// BLAKE3 (hex) of a CBOR file, read again in bounded chunks (the sequence readers do not
/// expose their hash); `None` when it is not there or not a regular file.
fn hash_file<S: StreamSource>(src: &mut S, name: &'static str) -> Result<Option<String>> {
    let Fetched::Found(file) = src.fetch(name)? else {
        return Ok(None);
    };
    let mut h = Hashing {
        inner: file,
        hasher: blake3::Hasher::new(),
    };
    std::io::copy(&mut h, &mut std::io::sink()).map_err(|e| StoreError::io(src.place(name), e))?;
    Ok(Some(h.hasher.finalize().to_hex().to_string()))
}

/// `summary.json`, when present, against the files and the key (section 5.1 step 7). Returns
/// the signed documents its `outputs` names (it read up to [`MAX_SUMMARY_BYTES`] and parsed as
/// JSON, a well-formed run summary or not), so that the file is read once.
fn check_summary<S: StreamSource>(
    report: &mut DirReport,
    src: &mut S,
    key: &PublicKey,
) -> Result<Vec<&'static str>> {
    let path = src.place(SUMMARY_JSON);
    let Some(file) = open(report, src, SUMMARY_JSON, false)? else {
        return Ok(Vec::new());
    };
    let Some(bytes) = layout::read_bounded(file, &path, MAX_SUMMARY_BYTES)? else {
        report.problem(
            "summary_malformed",
            SUMMARY_JSON,
            None,
            None,
            format!("larger than {MAX_SUMMARY_BYTES} bytes"),
        );
        return Ok(Vec::new());
    };
    // The signed documents its `outputs` names, whether or not it is a well-formed run summary.
    let listed: Vec<&'static str> = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .map(|v| {
            DOCUMENT_FILES
                .iter()
                .map(|(f, _)| *f)
                .filter(|f| v["outputs"].get(f).is_some())
                .collect()
        })
        .unwrap_or_default();
    let summary = match RunSummary::parse(&bytes) {
        Ok(s) => s,
        Err(e) => {
            report.problem(
                "summary_malformed",
                SUMMARY_JSON,
                None,
                None,
                format!("not a run summary: {e}"),
            );
            return Ok(listed);
        }
    };
    let t = report.totals;
    let mut differ: Vec<String> = Vec::new();
    let mut num = |what: &str, says: u64, found: u64| {
        if says != found {
            differ.push(format!("{what} is {says}, the receipts give {found}"));
        }
    };
    num("receipts", summary.receipts, t.receipts);
    num("ticks", summary.ticks, t.ticks);
    num("inbound_bytes", summary.inbound_bytes, t.inbound_bytes);
    num("outbound_bytes", summary.outbound_bytes, t.outbound_bytes);
    num("empty_windows", summary.empty_windows, t.empty_windows());
    num("verdicts.pass", summary.verdicts.pass, t.verdicts.pass);
    num(
        "verdicts.need_more",
        summary.verdicts.need_more,
        t.verdicts.need_more,
    );
    num("verdicts.yield", summary.verdicts.yields, t.verdicts.yields);
    num("verdicts.fail", summary.verdicts.fail, t.verdicts.fail);
    num(
        "conservation.conforming",
        summary.conservation.conforming,
        t.conservation.conforming,
    );
    num(
        "conservation.hallucination",
        summary.conservation.hallucination,
        t.conservation.hallucination,
    );
    num(
        "conservation.barge_in_ignored",
        summary.conservation.barge_in_ignored,
        t.conservation.barge_in_ignored,
    );
    if t.receipts > 0 {
        if report.stream_id.as_deref() != Some(summary.stream_id.as_str()) {
            differ.push(format!(
                "stream_id is \"{}\", the receipts' is \"{}\"",
                escape_untrusted(&summary.stream_id),
                escape_untrusted(report.stream_id.as_deref().unwrap_or_default())
            ));
        }
        if report.steward.as_deref() != Some(summary.steward.as_str()) {
            differ.push(format!(
                "steward is \"{}\", the receipts' is \"{}\"",
                escape_untrusted(&summary.steward),
                escape_untrusted(report.steward.as_deref().unwrap_or_default())
            ));
        }
    }
    let kid = hex::encode(cose::kid(key));
    if summary.signer.kid != kid {
        differ.push(format!(
            "signer.kid is \"{}\", the verifying key's kid is {kid}",
            escape_untrusted(&summary.signer.kid)
        ));
    }
    // Every stream file there is named in `outputs` with its hash, and every one named is there.
    let mut hashes: Vec<(&'static str, Option<String>)> = Vec::new();
    for name in [RECEIPTS_JSONL, SIGNER_PUB] {
        let known = report
            .file_hashes
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, h)| h.clone());
        hashes.push((name, known));
    }
    for name in [RECEIPTS_CBOR, SEALS_CBOR, INCLUSION_CBOR] {
        hashes.push((name, hash_file(src, name)?));
    }
    for (name, found) in hashes {
        let says = summary.outputs.get(name);
        match (says, found) {
            (None, None) => {}
            // signer.pub may be left out when the key is given otherwise.
            (Some(_), None) if name == SIGNER_PUB => {}
            (Some(s), Some(f)) if *s == f => {}
            (s, f) => differ.push(format!(
                "outputs.{name} is {}, the file's BLAKE3 is {}",
                s.map_or_else(
                    || "missing".to_owned(),
                    |s| format!("\"{}\"", escape_untrusted(s))
                ),
                f.unwrap_or_else(|| "(no file)".to_owned())
            )),
        }
    }
    for d in differ {
        report.problem("summary_mismatch", SUMMARY_JSON, None, None, d);
    }
    report.summary = Some(summary);
    Ok(listed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use jouleclaw_jcr1::cose::{Signer as _, SoftwareSigner};
    use jouleclaw_seal::StreamSealer;

    /// A canonical receipt (window 0 of `examples/golden/tool-call.receipts.jsonl`).
    const LINE: &[u8] = br#"{"closed_at":"2026-06-05T00:00:00Z","conservation":{"kind":"conforming"},"energy_provenance":"Estimator","id":"stream-demo:0000","inbound_bytes":6400,"jc_receipt":"stream-window/1","joules_uj":180,"outbound_bytes":0,"steward":"did:keri:EJ9testStewardAID000000000000000","stream_id":"stream-demo","tick_count":2,"verdict":{"chain":["always-pass-stream","barge-in-detector","per-tick:utf8-text","structured:04d0f386107113a0"],"kind":"pass"},"window_hash":"97e995c87971d6691105b6eb69a2862ab9dcfa15e1091926f94936396fac5f03","window_id":0}"#;

    /// A sealed directory of `n` receipts (a checkpoint every 4, the last final), without
    /// window signatures and without `inclusion.cbor` (layout `stream-at-rest/2`); its lines
    /// and the key.
    fn sealed_dir(name: &str, n: u64) -> (std::path::PathBuf, Vec<Vec<u8>>, ValidKey) {
        let dir = std::env::temp_dir().join(format!("jc-store-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let signer = SoftwareSigner::rfc8032_test_key();
        let base = decode_receipt(LINE).unwrap();
        let mut sealer = StreamSealer::new(&base.stream_id, &base.steward, MAX_RECEIPTS)
            .without_inclusion_receipts();
        let (mut lines, mut seals) = (Vec::new(), Vec::new());
        for w in 0..n {
            let r = StreamWindowReceipt {
                window_id: w,
                ..base.clone()
            };
            let line = r.encode().unwrap();
            sealer
                .append(w, blake3::hash(&line).as_bytes(), r.closed_at)
                .unwrap();
            lines.push(line);
            if w % 4 == 3 || w + 1 == n {
                let batch = sealer.checkpoint(&signer, w + 1 == n).unwrap();
                seals.extend(batch.checkpoint.cose_sign1);
            }
        }
        write_lines(&dir, &lines);
        std::fs::write(dir.join(RECEIPTS_CBOR), b"").unwrap();
        std::fs::write(dir.join(SEALS_CBOR), seals).unwrap();
        (dir, lines, ValidKey::new(signer.verifying_key()).unwrap())
    }

    fn write_lines(dir: &Path, lines: &[Vec<u8>]) {
        let mut jsonl = Vec::new();
        for l in lines {
            jsonl.extend_from_slice(l);
            jsonl.push(b'\n');
        }
        std::fs::write(dir.join(RECEIPTS_JSONL), jsonl).unwrap();
    }

    fn codes(r: &DirReport) -> Vec<&'static str> {
        r.problems.iter().map(|p| p.code).collect()
    }

    /// The derived inclusion takes the checkpoints' roots from the completeness check only when
    /// that check found nothing and every line decodes: a line that is not a receipt, or a
    /// receipt edited in place, still fails the derived proofs of the lines its checkpoint
    /// seals. Either half of the condition removed loses one of the two.
    #[test]
    fn derived_inclusion_fails_beside_a_malformed_line_and_an_edited_one() {
        let (dir, lines, key) = sealed_dir("derived", 10);
        let intact = verify_dir(&dir, &key, &mut |_, _| {}).unwrap();
        assert_eq!(intact.outcome(), Outcome::Complete, "{:?}", intact.problems);
        assert!(intact.inclusion_derived);
        assert_eq!(intact.inclusion_receipts, 10);
        assert_eq!(intact.verified(), 10);

        // A line that is not a receipt, after line 1: the decodable lines are still exactly
        // what the seals cover (the completeness check finds nothing), but the derived proofs
        // start from every line, so the first checkpoint's do not lead to its root.
        let mut with_junk = lines.clone();
        with_junk.insert(1, b"not a receipt".to_vec());
        write_lines(&dir, &with_junk);
        let r = verify_dir(&dir, &key, &mut |_, _| {}).unwrap();
        let found = codes(&r);
        assert!(found.contains(&"malformed_line"), "{found:?}");
        assert!(found.contains(&"derived_inclusion_failed"), "{found:?}");
        assert_eq!(r.outcome(), Outcome::Failed);

        // Window 2 edited in place (still a receipt): the completeness check finds the root
        // mismatch, and the derived proofs fail for every line, as every checkpoint seals it.
        let mut edited = lines.clone();
        let r2 = StreamWindowReceipt {
            joules_uj: 1,
            ..decode_receipt(&lines[2]).unwrap()
        };
        edited[2] = r2.encode().unwrap();
        write_lines(&dir, &edited);
        let r = verify_dir(&dir, &key, &mut |_, _| {}).unwrap();
        let found = codes(&r);
        assert!(found.contains(&"root_mismatch"), "{found:?}");
        let failed: Vec<u64> = r
            .problems
            .iter()
            .filter(|p| p.code == "derived_inclusion_failed")
            .filter_map(|p| p.index)
            .collect();
        assert_eq!(failed, (0..10).collect::<Vec<u64>>(), "{found:?}");
        assert_eq!(r.inclusion_receipts, 0);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Folders whose lines are each a valid receipt of the key but are not the sealed list:
    /// two lines swapped, a line after the final seal, a line of another stream, a line
    /// repeated. The completeness check finds each, so the derived inclusion does not take its
    /// roots as given: no line outside what the seals cover is counted as included, and no
    /// folder is complete. The intact folder is the accepted neighbour.
    #[test]
    fn derived_inclusion_never_counts_a_line_the_seals_do_not_cover_in_that_place() {
        let (dir, lines, key) = sealed_dir("derived-order", 10);
        let intact = verify_dir(&dir, &key, &mut |_, _| {}).unwrap();
        assert_eq!(intact.outcome(), Outcome::Complete, "{:?}", intact.problems);
        assert_eq!(intact.verified(), 10);
        let line = |w: u64, stream: Option<&str>| {
            let base = decode_receipt(&lines[0]).unwrap();
            StreamWindowReceipt {
                window_id: w,
                stream_id: stream.map_or(base.stream_id.clone(), str::to_owned),
                ..base
            }
            .encode()
            .unwrap()
        };
        let mut swapped = lines.clone();
        swapped.swap(1, 2);
        let mut after_final = lines.clone();
        after_final.push(line(10, None));
        let mut foreign = lines.clone();
        foreign[5] = line(5, Some("another-stream"));
        let mut repeated = lines.clone();
        repeated.insert(3, lines[2].clone());
        for (case, folder, expect) in [
            ("swapped", swapped, "window_not_ascending"),
            ("after the final seal", after_final, "receipt_not_sealed"),
            ("another stream", foreign, "mixed_stream"),
            ("repeated", repeated, "window_not_ascending"),
        ] {
            write_lines(&dir, &folder);
            let r = verify_dir(&dir, &key, &mut |_, _| {}).unwrap();
            let found = codes(&r);
            assert!(found.contains(&expect), "{case}: {found:?}");
            assert_eq!(r.outcome(), Outcome::Failed, "{case}: {found:?}");
            assert!(r.verified() < folder.len(), "{case}: {}", r.verified());
            // Every line counted as included is where the seals put it.
            for (i, l) in folder.iter().enumerate() {
                if matches!(r.receipts[i].status, ReceiptStatus::Included) {
                    assert_eq!(l, &lines[i], "{case}: line {i} counted as included");
                }
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
