//! `stop-latency.cbor` (spec/STOP-LATENCY-V1.md): measured beside the pipeline by `jouleclaw
//! run`, checked by `receipts verify DIR` and `report`.
//!
//! Memory: the meter holds at most `MAX_BARGE_INS` records and one 32-byte hash per receipt;
//! the checks read `receipts.jsonl` one line at a time (each at most a receipt's 64 KiB) and
//! `stop-latency.cbor` up to its own bound.

use std::io::{BufRead as _, BufReader, Read as _};
use std::path::Path;

use jouleclaw_stack::jcr1::cose::{PublicKey, SoftwareSigner, ValidKey};
use jouleclaw_stack::jcr1::{Limits, StreamWindowReceipt, decode_receipt};
use jouleclaw_stack::pipeline::{ClosedWindow, TickOutcome};
use jouleclaw_stack::store::layout::{Input, open_input};
use jouleclaw_stack::store::writer::{StagedFile as Staged, check_destination};
use jouleclaw_stack::stream::{StreamSpec, Tick};
use jouleclaw_stop_latency::{self as sl, MAX_SIGNED_BYTES, StopLatencyDocument, StopLatencyMeter};

use crate::Failure;
use crate::out::{say, tell};

/// The file beside the receipts.
pub(crate) const FILE: &str = jouleclaw_stack::store::layout::STOP_LATENCY_CBOR;

/// The meter of a run and the receipts' content hashes, in window order.
pub(crate) struct RunMeter {
    meter: StopLatencyMeter,
    hashes: Vec<[u8; 32]>,
    signer: SoftwareSigner,
}

impl RunMeter {
    /// A meter that signs with a copy of `signer`.
    pub(crate) fn new(signer: &SoftwareSigner) -> Result<Self, Failure> {
        let signer = copy_signer(signer)?;
        Ok(Self {
            meter: StopLatencyMeter::new(),
            hashes: Vec::new(),
            signer,
        })
    }

    /// One pushed tick (`tick` as pushed) and its outcome: the window it closed, the tick, and
    /// the ticks the stages produced from it, in that order.
    pub(crate) fn push(&mut self, p: Pushed<'_>) -> Result<(), Failure> {
        if let Some(w) = &p.outcome.closed {
            self.closed(w);
        }
        let refused = |e: sl::StopLatencyError| Failure::Refused(format!("{}: {e}", e.code()));
        self.meter
            .observe(p.tick, p.outcome.direction)
            .map_err(refused)?;
        for report in &p.outcome.stages {
            for produced in report.result.iter().flatten() {
                if let Some(c) = p.spec.channel(produced.tick.channel_id) {
                    self.meter
                        .observe(&produced.tick, c.direction)
                        .map_err(refused)?;
                }
            }
        }
        Ok(())
    }

    /// A window closed outside a push (the last one).
    pub(crate) fn closed(&mut self, w: &ClosedWindow) {
        self.hashes.push(*w.content_hash.as_bytes());
    }

    /// Ends the stream: signs the document and stages `stop-latency.cbor` in `dir` (renamed
    /// into place by [`Staged::commit`]). Returns the staged file, its BLAKE3, and the document.
    pub(crate) fn finish(
        mut self,
        to: Destination<'_>,
    ) -> Result<(Staged, blake3::Hash, StopLatencyDocument, [u8; 32]), Failure> {
        self.meter.finish();
        let fail = |e: sl::StopLatencyError| Failure::Refused(format!("{FILE}: {}: {e}", e.code()));
        let doc = StopLatencyDocument::new(
            to.steward,
            to.stream_id,
            self.meter.barge_ins(),
            &self.hashes,
        )
        .map_err(fail)?;
        let signed = sl::sign(&self.signer, &doc).map_err(fail)?;
        let (staged, hash, digest) = to.stage(FILE, &signed.cose_sign1)?;
        Ok((staged, hash, doc, digest))
    }
}

/// One line of text about a document: barge-ins, p50, p95, max.
pub(crate) fn describe(doc: &StopLatencyDocument) -> String {
    let late = doc
        .barge_ins
        .iter()
        .filter(|b| !b.within_deadline())
        .count();
    let vantage = match &doc.vantage {
        None => String::new(),
        Some(v) => format!(
            " (times as {}; {})",
            v.point.as_str(),
            match v.excluded_buffer_ns {
                Some(n) => format!("{} buffered after that not included", ms(n)),
                None => "the buffer after that unknown".to_owned(),
            }
        ),
    };
    match doc.summary() {
        None => format!("stop latency: no barge-in{vantage}"),
        Some((p50, p95, max)) => {
            format!(
                "stop latency over {} barge-ins: p50 {}, p95 {}, max {}; {late} past the {} ms deadline",
                doc.barge_ins.len(),
                ms(p50),
                ms(p95),
                ms(max),
                sl::DEADLINE_NS / 1_000_000
            ) + &vantage
        }
    }
}

/// Nanoseconds as milliseconds, exact.
pub(crate) fn ms(ns: u64) -> String {
    let (whole, frac) = (ns / 1_000_000, ns % 1_000_000);
    if frac == 0 {
        format!("{whole} ms")
    } else {
        let f = format!("{frac:06}");
        format!("{whole}.{} ms", f.trim_end_matches('0'))
    }
}

/// What checking a directory's document (`D`: stop-latency.cbor's, or another signed document
/// of the call) found.
#[derive(Debug, Clone)]
pub(crate) struct Evidence<D = StopLatencyDocument> {
    /// The verified document, if there is one.
    pub(crate) doc: Option<D>,
    /// Every problem, one line each (empty: verified and bound, or absent and not needed).
    pub(crate) problems: Vec<String>,
}

impl<D> Default for Evidence<D> {
    fn default() -> Self {
        Self {
            doc: None,
            problems: Vec::new(),
        }
    }
}

/// A copy of `signer` for a meter that signs its document at the end of the run.
pub(crate) fn copy_signer(signer: &SoftwareSigner) -> Result<SoftwareSigner, Failure> {
    SoftwareSigner::from_key_file_text(&signer.key_file_text())
        .map_err(|e| Failure::Usage(format!("signing key: {e}")))
}

/// One tick pushed through a run's pipeline, as the meters beside it see it.
#[derive(Clone, Copy)]
pub(crate) struct Pushed<'a> {
    /// The tick as pushed.
    pub(crate) tick: &'a Tick,
    /// Its outcome: the window it closed, the tick, and the ticks the stages produced from it,
    /// in that order.
    pub(crate) outcome: &'a TickOutcome,
    /// The stream's channels.
    pub(crate) spec: &'a StreamSpec,
}

/// Where a run's signed documents go, and whose they are.
#[derive(Clone, Copy)]
pub(crate) struct Destination<'a> {
    /// The run directory.
    pub(crate) dir: &'a Path,
    /// The run's input files, which an output must not replace.
    pub(crate) inputs: &'a [&'a Path],
    /// The steward the documents name.
    pub(crate) steward: &'a str,
    /// The stream the documents name.
    pub(crate) stream_id: &'a str,
}

impl Destination<'_> {
    /// Stages the signed document `cose_sign1` as `file` in the run directory (refused when it
    /// would replace an input; renamed into place by [`Staged::commit`]). Returns the staged
    /// file, its BLAKE3, and the document's digest the final seal commits to.
    pub(crate) fn stage(
        &self,
        file: &str,
        cose_sign1: &[u8],
    ) -> Result<(Staged, blake3::Hash, [u8; 32]), Failure> {
        check_destination(&self.dir.join(file), self.inputs)?;
        let mut staged = Staged::create(self.dir, file)?;
        staged.write(cose_sign1)?;
        let hash = staged.finish()?;
        let digest = jouleclaw_stack::seal::document_digest(cose_sign1);
        Ok((staged, hash, digest))
    }
}

/// Opens a folder's file as the stream verifier does (`open_input`: no symbolic link
/// followed, no FIFO blocked on, regular files only): `Ok(None)` when it is missing,
/// `Err(what it is)` when it is not a regular file.
fn open_in(path: &Path) -> Result<Result<Option<std::fs::File>, &'static str>, Failure> {
    Ok(match open_input(path).map_err(|e| Failure::io(path, e))? {
        Input::File(f) => Ok(Some(f)),
        Input::Missing => Ok(None),
        Input::NotRegular(what) => Err(what),
    })
}

/// A signed document of a call in a folder (`file` at `path`), opened as [`open_in`] opens it:
/// its bytes, read up to `max_bytes + 1` (one more than a signed document may have, so that the
/// verifier refuses an over-long one), `Ok(None)` when it is missing, `Err` with the
/// `not_regular_file` problem when it is not a regular file (not read).
pub(super) fn read_document(
    path: &Path,
    file: &str,
    max_bytes: usize,
) -> Result<Result<Option<Vec<u8>>, String>, Failure> {
    Ok(match open_in(path)? {
        Ok(Some(f)) => {
            let mut b = Vec::new();
            f.take(max_bytes as u64 + 1)
                .read_to_end(&mut b)
                .map_err(|e| Failure::io(path, e))?;
            Ok(Some(b))
        }
        Err(what) => Err(format!(
            "{file}: not_regular_file: a {what}, not a regular file; not read"
        )),
        Ok(None) => Ok(None),
    })
}

/// Reads `receipts.jsonl` of `dir` (each line decoded; an undecodable line is skipped here,
/// the receipts check names it) with each line's content hash; a missing file holds none (the
/// stream verifier names it).
pub(super) fn receipts(dir: &Path) -> Result<Vec<(StreamWindowReceipt, [u8; 32])>, Failure> {
    let path = dir.join(jouleclaw_stack::store::layout::RECEIPTS_JSONL);
    let file = match open_in(&path)? {
        Ok(Some(f)) => f,
        // The stream verifier names a missing file or one that is not a regular file (it
        // is not read); here it holds no receipt.
        Ok(None) | Err(_) => return Ok(Vec::new()),
    };
    let mut reader = BufReader::new(file);
    let max = Limits::RECEIPT.max_document_bytes as u64;
    let mut out = Vec::new();
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = (&mut reader)
            .take(max + 2)
            .read_until(b'\n', &mut line)
            .map_err(|e| Failure::io(&path, e))?;
        if n == 0 {
            return Ok(out);
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        if let Ok(r) = decode_receipt(&line) {
            out.push((r, *blake3::hash(&line).as_bytes()));
        }
        if out.len() as u64 > jouleclaw_stack::seal::DEFAULT_MAX_LEAVES {
            return Err(Failure::Refused(format!(
                "{}: more receipts than one stream's log holds",
                path.display()
            )));
        }
    }
}

/// Whether `summary.json` of `dir` (read up to 1 MiB) lists `file` among its outputs.
pub(super) fn summary_lists(dir: &Path, file: &str) -> bool {
    open_in(&dir.join(jouleclaw_stack::store::layout::SUMMARY_JSON))
        .ok()
        .and_then(|f| f.ok().flatten())
        .and_then(|f| {
            let mut text = String::new();
            f.take(1 << 20).read_to_string(&mut text).ok()?;
            serde_json::from_str::<serde_json::Value>(&text).ok()
        })
        .is_some_and(|v| v["outputs"].get(file).is_some())
}

/// Verifies `dir/stop-latency.cbor` under `key` and checks its binding to `receipts.jsonl`
/// (spec/STOP-LATENCY-V1.md section 7): signature, document, receipt count and root, every
/// barge-in window a yield and every yield listed. A missing file is a problem when a receipt
/// records a barge-in or summary.json lists the file.
pub(crate) fn check(key: &PublicKey, dir: &Path) -> Result<Evidence, Failure> {
    let receipts = receipts(dir)?;
    let path = dir.join(FILE);
    let mut ev = Evidence::default();
    let bytes = match read_document(&path, FILE, MAX_SIGNED_BYTES)? {
        Ok(Some(b)) => b,
        Err(problem) => {
            ev.problems.push(problem);
            return Ok(ev);
        }
        Ok(None) => {
            let plain: Vec<StreamWindowReceipt> = receipts.into_iter().map(|(r, _)| r).collect();
            if let Some(p) = sl::missing(&plain) {
                ev.problems.push(format!("{FILE}: {p}"));
            } else if summary_lists(dir, FILE) {
                ev.problems.push(format!(
                    "{FILE}: stop_latency_missing: summary.json lists it and it is gone"
                ));
            }
            return Ok(ev);
        }
    };
    // The key file reader accepted the key as `ValidKey::new` does: this check cannot refuse it.
    let key = ValidKey::new(*key).map_err(|e| Failure::Usage(format!("public key: {e}")))?;
    match sl::verify(&bytes, &key) {
        Err(e) => ev.problems.push(format!("{FILE}: {}: {e}", e.code())),
        Ok(v) => {
            for p in sl::check_receipts(&v.document, &receipts) {
                ev.problems.push(format!("{FILE}: {p}"));
            }
            ev.doc = Some(v.document);
        }
    }
    Ok(ev)
}

/// `receipts verify DIR`'s part: prints the finding and returns the number of problems.
pub(crate) fn verify_dir(key: &PublicKey, dir: &Path) -> Result<usize, Failure> {
    let ev = check(key, dir)?;
    let described = ev.doc.as_ref().map(describe);
    Ok(tell_finding(
        FILE,
        &ev.problems,
        described,
        "absent (no receipt records a barge-in)",
    ))
}

/// Prints what checking a signed document of a call (`file`) found, as `receipts verify DIR`
/// does for every kind: each problem, then, when there is none, the verified document
/// (`described`) or `absent`. Returns the number of problems.
pub(super) fn tell_finding(
    file: &str,
    problems: &[String],
    described: Option<String>,
    absent: &str,
) -> usize {
    for p in problems {
        // A problem quotes the receipts' own text (stream ids): shown, never obeyed.
        tell!("{}", crate::out::untrusted(p));
    }
    match (described, problems.is_empty()) {
        (Some(d), true) => say!("{file}: verified and bound to the receipts; {d}"),
        (None, true) => say!("{file}: {absent}"),
        _ => {}
    }
    problems.len()
}
