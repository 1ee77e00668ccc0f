//! `jouleclaw report DIR [--pub PUB] [-o report.html]`: a call's windows as one self-contained
//! HTML page (spec/REPORT.md).
//!
//! Reading and checking (this file) is kept apart from drawing (`report/html.rs`): the page is
//! rendered from a [`Report`] that holds only what the files say and what verification found.

mod html;

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use clap::Args;
use jouleclaw_stack::jcr1::cose::{self, PublicKey, Signer as _, SingleKey, SoftwareSigner};
use jouleclaw_stack::jcr1::{StreamWindowReceipt, decode_receipt};
use jouleclaw_stack::oracle::WindowVerdict;
use jouleclaw_stack::stream::LedgerPolicy;

use crate::out::{say, tell};
use crate::{CmdResult, Failure};

/// Largest input file the report reads (each of `receipts.jsonl`, `receipts.cbor`,
/// `summary.json`, `signer.pub`, a `--pub` file): 64 MiB. It bounds memory; a larger file is a
/// usage error.
pub(crate) const MAX_INPUT_BYTES: u64 = 64 << 20;

/// Above this many receipts the timeline aggregates consecutive receipts into one column each
/// (spec/REPORT.md, "Scale").
pub(crate) const MAX_COLUMNS: usize = 1000;

/// Arguments of `jouleclaw report`.
#[derive(Args, Debug)]
pub(crate) struct ReportArgs {
    /// A `jouleclaw run --out` directory (receipts.jsonl, receipts.cbor, summary.json,
    /// signer.pub).
    dir: PathBuf,
    /// The public key to verify with (default: DIR/signer.pub, which proves integrity, not
    /// origin).
    #[arg(long = "pub", value_name = "PUBFILE")]
    public: Option<PathBuf>,
    /// The HTML file to write (default: DIR/report.html); written to a new temporary file and
    /// renamed into place.
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    out: Option<PathBuf>,
}

/// How one receipt fared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Status {
    /// The COSE_Sign1 verified and its payload is byte-identical to the JSON Lines copy.
    Verified,
    /// The COSE_Sign1 was refused (the code is `CoseRefusal::as_str`).
    Refused(String),
    /// The two files disagree about this receipt.
    Disagrees(String),
    /// No COSE_Sign1 of its own (a sealed run that signs only some windows), but its RFC 9942
    /// inclusion receipt verified under its checkpoint's signature.
    Included,
}

impl Status {
    pub(crate) fn is_ok(&self) -> bool {
        matches!(self, Self::Verified | Self::Included)
    }
}

/// One receipt: a line of `receipts.jsonl` and its signed copy in `receipts.cbor`, or either
/// alone.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    /// 0-based row number.
    pub(crate) index: usize,
    /// 0-based line of `receipts.jsonl`, if any.
    pub(crate) line: Option<usize>,
    /// 0-based item of `receipts.cbor` paired with it, if any.
    pub(crate) item: Option<usize>,
    /// The receipt shown: the verified one, else the JSON Lines copy if it decodes.
    pub(crate) receipt: Option<StreamWindowReceipt>,
    /// BLAKE3 of the receipt's canonical bytes (the verified payload, else the line), hex.
    pub(crate) content_hash: Option<String>,
    /// Verification status.
    pub(crate) status: Status,
}

/// Whether the stream's completeness could be checked (a section the seals will fill).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Completeness {
    /// No `seals.cbor` in DIR.
    NotSealed,
    /// `seals.cbor` is present and was checked (`problems` empty: complete).
    Checked(crate::stream::SealCheck),
}

/// What summary.json says, as far as the page uses it.
#[derive(Debug, Clone, Default)]
pub(crate) struct SummaryFacts {
    pub(crate) spec: Option<String>,
    pub(crate) trace: Option<String>,
    pub(crate) epoch: Option<String>,
    pub(crate) substrate_bytes: Option<u64>,
    pub(crate) oracle: Vec<String>,
}

/// Counts over the receipts shown.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub(crate) receipts: u64,
    pub(crate) ticks: u64,
    pub(crate) inbound_bytes: u64,
    pub(crate) outbound_bytes: u64,
    pub(crate) joules_uj: u64,
    /// pass, need_more, yield, fail.
    pub(crate) verdicts: [u64; 4],
    /// conforming, hallucination, barge_in_ignored.
    pub(crate) conservation: [u64; 3],
    pub(crate) first_window: Option<u64>,
    pub(crate) last_window: Option<u64>,
    pub(crate) empty_windows: u64,
}

/// Everything the page shows.
#[derive(Debug, Clone)]
pub(crate) struct Report {
    pub(crate) stream_id: String,
    pub(crate) steward: String,
    pub(crate) public_key_hex: String,
    pub(crate) kid_hex: String,
    pub(crate) key_source: String,
    pub(crate) test_key: bool,
    pub(crate) rows: Vec<Row>,
    /// Problems that concern the files as a whole (not one receipt).
    pub(crate) disagreements: Vec<String>,
    pub(crate) summary: SummaryFacts,
    pub(crate) counts: Counts,
    pub(crate) completeness: Completeness,
    pub(crate) policy: LedgerPolicy,
}

impl Report {
    pub(crate) fn verified(&self) -> usize {
        self.rows.iter().filter(|r| r.status.is_ok()).count()
    }

    /// True when every receipt verified and nothing disagrees.
    pub(crate) fn all_ok(&self) -> bool {
        let complete = match &self.completeness {
            Completeness::NotSealed => true,
            Completeness::Checked(check) => check.problems.is_empty(),
        };
        !self.rows.is_empty()
            && self.verified() == self.rows.len()
            && self.disagreements.is_empty()
            && complete
    }
}

/// Reads a whole file, refusing one above [`MAX_INPUT_BYTES`] without reading it all.
fn read_bounded(path: &Path) -> Result<Vec<u8>, Failure> {
    use std::io::Read as _;
    let file = std::fs::File::open(path).map_err(|e| Failure::io(path, e))?;
    let mut bytes = Vec::new();
    file.take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Failure::io(path, e))?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(Failure::Usage(format!(
            "{}: larger than {MAX_INPUT_BYTES} bytes; too large for a report",
            path.display()
        )));
    }
    Ok(bytes)
}

fn read_key(path: &Path) -> Result<PublicKey, Failure> {
    let bytes = read_bounded(path)?;
    let text = String::from_utf8(bytes).map_err(|e| Failure::io(path, e))?;
    cose::parse_public_key_text(&text).map_err(|e| Failure::io(path, e))
}

/// The lines of `receipts.jsonl`: every line ends in `\n`; bytes after the last `\n` are one
/// more (unterminated) line, reported as a disagreement.
fn split_lines(bytes: &[u8]) -> (Vec<&[u8]>, bool) {
    let mut lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    let unterminated = match lines.last() {
        Some([]) => {
            lines.pop();
            false
        }
        Some(_) => true,
        None => false,
    };
    (lines, unterminated)
}

fn verdict_index(v: &WindowVerdict) -> usize {
    usize::from(v.rank()).min(3)
}

/// Builds the report from the files in `dir`, verifying with `key`.
fn build(dir: &Path, key: PublicKey, key_source: String) -> Result<Report, Failure> {
    let jsonl_path = dir.join("receipts.jsonl");
    let cbor_path = dir.join("receipts.cbor");
    let summary_path = dir.join("summary.json");
    let jsonl = read_bounded(&jsonl_path)?;
    let cbor = read_bounded(&cbor_path)?;
    let summary_bytes = read_bounded(&summary_path)?;
    let summary: serde_json::Value = serde_json::from_slice(&summary_bytes)
        .map_err(|e| Failure::io(&summary_path, format!("not JSON: {e}")))?;

    let mut disagreements = Vec::new();
    let (lines, unterminated) = split_lines(&jsonl);
    if unterminated {
        disagreements.push("receipts.jsonl: the last line has no line end".to_owned());
    }
    let items = match cose::split_cbor_sequence(&cbor) {
        Ok(items) => items,
        Err(index) => {
            disagreements.push(format!(
                "receipts.cbor: item {index} is not well-formed CBOR; the sequence cannot be \
                 split, so no receipt in it is checked"
            ));
            Vec::new()
        }
    };
    let same_count = lines.len() == items.len();
    let sealed = dir.join("seals.cbor").exists();
    // A sealed run may sign only some windows on their own (`--window-signatures`); the others
    // are checked through their inclusion receipts below.
    if !same_count && !sealed {
        disagreements.push(format!(
            "receipts.jsonl has {} lines but receipts.cbor {} receipts (lines are matched to \
             their signed copies by content hash)",
            lines.len(),
            items.len()
        ));
    }

    let resolver = SingleKey::new(key);
    // Each item on its own: every receipt gets its own status.
    let verified: Vec<_> = items
        .iter()
        .map(|item| cose::verify(item, &resolver))
        .collect();
    let mut by_hash: HashMap<String, usize> = HashMap::new();
    for (k, v) in verified.iter().enumerate() {
        if let Ok(v) = v
            && let Some(first) = by_hash.insert(v.content_hash.to_hex().to_string(), k)
        {
            disagreements.push(format!(
                "receipts.cbor items {first} and {k} sign the same receipt"
            ));
        }
    }
    let mut used = vec![false; items.len()];
    let mut rows = Vec::with_capacity(lines.len());
    for (index, line) in lines.iter().enumerate() {
        let hash = blake3::hash(line).to_hex().to_string();
        let decoded = decode_receipt(line);
        // The verified item holding exactly these bytes, wherever it is in the sequence.
        let matched = by_hash.get(&hash).copied().filter(|&k| !used[k]);
        if let Some(k) = matched
            && let Some(Ok(v)) = verified.get(k)
        {
            used[k] = true;
            rows.push(Row {
                index,
                line: Some(index),
                item: Some(k),
                receipt: Some(v.receipt.clone()),
                content_hash: Some(hash),
                status: Status::Verified,
            });
            continue;
        }
        // No verified item holds these bytes: with equal counts, the item at the same position
        // is this line's signed copy.
        let positional = if same_count && !used[index] {
            verified.get(index)
        } else {
            None
        };
        let status = match (positional, &decoded) {
            (Some(Err(c)), _) => Status::Refused(c.as_str().to_owned()),
            (_, Err(r)) => Status::Disagrees(format!(
                "receipts.jsonl line {} refused: {}",
                index + 1,
                r.code.as_str()
            )),
            (Some(Ok(_)), Ok(_)) => Status::Disagrees(format!(
                "receipts.jsonl line {} is another receipt than receipts.cbor item {index}",
                index + 1
            )),
            (None, Ok(_)) if sealed => Status::Disagrees(
                "no COSE_Sign1 of its own in receipts.cbor and no inclusion receipt that proves \
                 it"
                .to_owned(),
            ),
            (None, Ok(_)) => Status::Disagrees("no signed copy in receipts.cbor".to_owned()),
        };
        let item = positional.map(|_| index);
        if let Some(k) = item {
            used[k] = true;
        }
        let shown = decoded.ok();
        let content_hash = shown.as_ref().map(|_| hash);
        rows.push(Row {
            index,
            line: Some(index),
            item,
            receipt: shown,
            content_hash,
            status,
        });
    }
    // Items that belong to no line: shown, never drawn or counted.
    for (k, v) in verified.iter().enumerate().filter(|(k, _)| !used[*k]) {
        let (content_hash, status) = match v {
            Ok(v) => (
                Some(v.content_hash.to_hex().to_string()),
                Status::Disagrees(format!(
                    "receipts.cbor item {k} (window {}) is in no line of receipts.jsonl",
                    v.receipt.window_id
                )),
            ),
            Err(c) => (None, Status::Refused(c.as_str().to_owned())),
        };
        rows.push(Row {
            index: rows.len(),
            line: None,
            item: Some(k),
            receipt: None,
            content_hash,
            status,
        });
    }
    if rows.is_empty() {
        disagreements.push("no receipts in receipts.jsonl or receipts.cbor".to_owned());
    }

    // One stream, one steward, ascending window ids.
    let first = rows.iter().find_map(|r| r.receipt.as_ref());
    let stream_id = first.map(|r| r.stream_id.clone()).unwrap_or_default();
    let steward = first.map(|r| r.steward.clone()).unwrap_or_default();
    let mut last_id: Option<u64> = None;
    let mut counts = Counts::default();
    for r in rows.iter().filter_map(|r| r.receipt.as_ref()) {
        if r.stream_id != stream_id || r.steward != steward {
            disagreements.push(format!(
                "window {}: another stream or steward than the first receipt's",
                r.window_id
            ));
        }
        if let Some(prev) = last_id
            && r.window_id <= prev
        {
            disagreements.push(format!(
                "window {} follows window {prev}: window ids must ascend",
                r.window_id
            ));
        }
        if let Some(prev) = last_id
            && r.window_id > prev
        {
            counts.empty_windows = counts.empty_windows.saturating_add(r.window_id - prev - 1);
        }
        last_id = Some(r.window_id);
        counts.receipts += 1;
        counts.ticks = counts.ticks.saturating_add(r.tick_count);
        counts.inbound_bytes = counts.inbound_bytes.saturating_add(r.inbound_bytes);
        counts.outbound_bytes = counts.outbound_bytes.saturating_add(r.outbound_bytes);
        counts.joules_uj = counts.joules_uj.saturating_add(r.joules_uj);
        counts.verdicts[verdict_index(&r.verdict)] += 1;
        counts.conservation[usize::from(r.conservation.rank()).min(2)] += 1;
        counts.first_window.get_or_insert(r.window_id);
        counts.last_window = Some(r.window_id);
    }

    let facts = check_summary(
        &summary,
        &counts,
        &stream_id,
        &steward,
        &key,
        dir,
        &[("receipts.jsonl", &jsonl), ("receipts.cbor", &cbor)],
        &mut disagreements,
    );

    let completeness = match std::fs::symlink_metadata(dir.join("seals.cbor")) {
        Ok(_) => {
            let entries: Vec<jouleclaw_stack::seal::ReceiptEntry> = lines
                .iter()
                .filter_map(|line| {
                    decode_receipt(line)
                        .ok()
                        .map(|r| jouleclaw_stack::seal::ReceiptEntry {
                            window_id: r.window_id,
                            content_hash: *blake3::hash(line).as_bytes(),
                            stream_id: r.stream_id,
                            steward: r.steward,
                        })
                })
                .collect();
            let check = crate::stream::check_seals(key, dir, &entries)?;
            // A receipt without a signature of its own is verified through its checkpoint.
            for row in &mut rows {
                if let (Some(i), Status::Disagrees(_), None) = (row.line, &row.status, row.item)
                    && entries.len() == lines.len()
                    && check.included.get(i) == Some(&true)
                {
                    row.status = Status::Included;
                }
            }
            Completeness::Checked(check)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Completeness::NotSealed,
        Err(e) => return Err(Failure::io(&dir.join("seals.cbor"), e)),
    };

    Ok(Report {
        stream_id,
        steward,
        public_key_hex: hex::encode(key.as_bytes()),
        kid_hex: hex::encode(cose::kid(&key)),
        key_source,
        test_key: key == SoftwareSigner::rfc8032_test_key().verifying_key(),
        rows,
        disagreements,
        summary: facts,
        counts,
        completeness,
        policy: LedgerPolicy::default(),
    })
}

/// Compares summary.json with the receipts and the files; records every difference.
#[allow(clippy::too_many_arguments)]
fn check_summary(
    summary: &serde_json::Value,
    counts: &Counts,
    stream_id: &str,
    steward: &str,
    key: &PublicKey,
    dir: &Path,
    files: &[(&str, &[u8])],
    disagreements: &mut Vec<String>,
) -> SummaryFacts {
    let mut differ = |what: &str, says: String, found: String| {
        disagreements.push(format!(
            "summary.json: {what} is {says}, the receipts give {found}"
        ));
    };
    let s = |k: &str| summary.get(k).and_then(|v| v.as_str()).map(str::to_owned);
    let u = |v: Option<&serde_json::Value>| v.and_then(serde_json::Value::as_u64);
    if counts.receipts > 0 {
        if s("stream_id").as_deref() != Some(stream_id) {
            differ(
                "stream_id",
                format!("{:?}", s("stream_id")),
                format!("{stream_id:?}"),
            );
        }
        if s("steward").as_deref() != Some(steward) {
            differ(
                "steward",
                format!("{:?}", s("steward")),
                format!("{steward:?}"),
            );
        }
    }
    let numbers: [(&str, Option<u64>, u64); 5] = [
        ("receipts", u(summary.get("receipts")), counts.receipts),
        ("ticks", u(summary.get("ticks")), counts.ticks),
        (
            "inbound_bytes",
            u(summary.get("inbound_bytes")),
            counts.inbound_bytes,
        ),
        (
            "outbound_bytes",
            u(summary.get("outbound_bytes")),
            counts.outbound_bytes,
        ),
        (
            "empty_windows",
            u(summary.get("empty_windows")),
            counts.empty_windows,
        ),
    ];
    for (name, says, found) in numbers {
        if says != Some(found) {
            differ(name, opt(says), found.to_string());
        }
    }
    let kinds = [("pass", 0), ("need_more", 1), ("yield", 2), ("fail", 3)];
    for (k, i) in kinds {
        let says = u(summary.pointer(&format!("/verdicts/{k}")));
        if says != Some(counts.verdicts[i]) {
            differ(
                &format!("verdicts.{k}"),
                opt(says),
                counts.verdicts[i].to_string(),
            );
        }
    }
    for (k, i) in [
        ("conforming", 0),
        ("hallucination", 1),
        ("barge_in_ignored", 2),
    ] {
        let says = u(summary.pointer(&format!("/conservation/{k}")));
        if says != Some(counts.conservation[i]) {
            differ(
                &format!("conservation.{k}"),
                opt(says),
                counts.conservation[i].to_string(),
            );
        }
    }
    let kid_hex = hex::encode(cose::kid(key));
    let says_kid = summary.pointer("/signer/kid").and_then(|v| v.as_str());
    if says_kid != Some(kid_hex.as_str()) {
        disagreements.push(format!(
            "summary.json: signer.kid is {says_kid:?}, the verifying key's kid is {kid_hex}"
        ));
    }
    for (name, bytes) in files {
        let says = summary
            .pointer(&format!("/outputs/{name}"))
            .and_then(|v| v.as_str());
        let found = blake3::hash(bytes).to_hex().to_string();
        if says != Some(found.as_str()) {
            disagreements.push(format!(
                "summary.json: outputs.{name} is {says:?}, the file's BLAKE3 is {found}"
            ));
        }
    }
    // signer.pub is checked against the summary when it exists (with --pub it may not).
    if let Ok(bytes) = read_bounded(&dir.join("signer.pub")) {
        let says = summary
            .pointer("/outputs/signer.pub")
            .and_then(|v| v.as_str());
        let found = blake3::hash(&bytes).to_hex().to_string();
        if says != Some(found.as_str()) {
            disagreements.push(format!(
                "summary.json: outputs.signer.pub is {says:?}, the file's BLAKE3 is {found}"
            ));
        }
    }
    SummaryFacts {
        spec: s("spec"),
        trace: s("trace"),
        epoch: s("epoch"),
        substrate_bytes: u(summary.get("substrate_bytes")),
        oracle: summary
            .get("oracle")
            .and_then(|v| v.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default(),
    }
}

fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "missing".to_owned(), |v| v.to_string())
}

/// Refuses a destination that is a symlink, a directory or one of the inputs.
fn check_destination(dest: &Path, inputs: &[PathBuf]) -> Result<(), Failure> {
    use std::os::unix::fs::MetadataExt as _;
    let meta = match std::fs::symlink_metadata(dest) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Failure::io(dest, e)),
    };
    if meta.file_type().is_symlink() {
        return Err(Failure::Usage(format!(
            "{}: is a symbolic link; refusing to replace it",
            dest.display()
        )));
    }
    if meta.is_dir() {
        return Err(Failure::Usage(format!(
            "{}: is a directory",
            dest.display()
        )));
    }
    let same = inputs
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .any(|m| m.dev() == meta.dev() && m.ino() == meta.ino());
    if same {
        return Err(Failure::Usage(format!(
            "{}: is one of the report's inputs; refusing to replace it",
            dest.display()
        )));
    }
    Ok(())
}

/// Writes `bytes` to a new temporary file beside `dest` and renames it into place.
fn write_new_then_rename(dest: &Path, bytes: &[u8], inputs: &[PathBuf]) -> Result<(), Failure> {
    check_destination(dest, inputs)?;
    let name = dest
        .file_name()
        .ok_or_else(|| Failure::Usage(format!("{}: not a file name", dest.display())))?;
    let parent = match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    let tmp = parent.join(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(|e| Failure::io(&tmp, e))?;
    let written = file
        .write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| Failure::io(&tmp, e))
        .and_then(|()| check_destination(dest, inputs))
        .and_then(|()| std::fs::rename(&tmp, dest).map_err(|e| Failure::io(dest, e)));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// `jouleclaw report`.
pub(crate) fn report(args: &ReportArgs) -> CmdResult {
    let dir = &args.dir;
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(Failure::Usage(format!(
                "{}: not a directory",
                dir.display()
            )));
        }
        Err(e) => return Err(Failure::io(dir, e)),
    }
    let dir_pub = dir.join("signer.pub");
    let (key, key_source) = match &args.public {
        Some(p) => (read_key(p)?, format!("--pub {}", p.display())),
        None => (
            read_key(&dir_pub)?,
            "signer.pub in the report's directory (integrity only: whoever wrote the \
             directory chose this key)"
                .to_owned(),
        ),
    };
    let mut report = build(dir, key, key_source)?;
    if args.public.is_some()
        && let Ok(k) = read_key(&dir_pub)
        && k != key
    {
        report
            .disagreements
            .push("signer.pub in the directory is not the --pub key".to_owned());
    }
    let page = html::render(&report);
    let dest = args.out.clone().unwrap_or_else(|| dir.join("report.html"));
    let mut inputs: Vec<PathBuf> = [
        "receipts.jsonl",
        "receipts.cbor",
        "summary.json",
        "signer.pub",
    ]
    .iter()
    .map(|n| dir.join(n))
    .collect();
    inputs.push(dir.join("seals.cbor"));
    inputs.extend(args.public.clone());
    write_new_then_rename(&dest, page.as_bytes(), &inputs)?;

    let verified = report.verified();
    say!(
        "{verified} of {} receipts verified; wrote {}",
        report.rows.len(),
        dest.display()
    );
    if report.test_key {
        tell!("WARNING: the receipts are signed with the published RFC 8032 test key.");
    }
    for d in &report.disagreements {
        tell!("{d}");
    }
    for r in report.rows.iter().filter(|r| !r.status.is_ok()) {
        tell!("{}: {}", html::place(r), html::status_text(&r.status));
    }
    if let Completeness::Checked(check) = &report.completeness {
        for p in &check.problems {
            tell!("{p}");
        }
    }
    if report.all_ok() {
        Ok(())
    } else {
        Err(Failure::Refused(format!(
            "{verified} of {} receipts verified, {} disagreement(s) between the files{}",
            report.rows.len(),
            report.disagreements.len(),
            match &report.completeness {
                Completeness::Checked(c) if !c.problems.is_empty() => {
                    format!(
                        ", the stream is not complete ({} problems)",
                        c.problems.len()
                    )
                }
                _ => String::new(),
            }
        )))
    }
}
