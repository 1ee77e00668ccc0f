//! `jouleclaw report DIR [--pub PUB] [-o report.html]`: a call's windows as one self-contained
//! HTML page (spec/REPORT.md).
//!
//! Checking is the one verifier of the stream at rest (`jouleclaw_stack::store::verify_dir`);
//! this file gathers, while it reads, what the page draws, within fixed bounds: at most
//! [`MAX_COLUMNS`] timeline columns, [`MAX_TABLE_ROWS`] table rows and [`MAX_BARGE_INS`]
//! barge-in rows, whatever the directory holds; the interaction section draws and lists at most
//! `html::MAX_EVENTS_SHOWN` events. Drawing is `present/html.rs`.

use std::path::{Path, PathBuf};

use clap::Args;
use jouleclaw_stack::jcr1::StreamWindowReceipt;
use jouleclaw_stack::jcr1::cose::{self, PublicKey, Signer as _, SoftwareSigner};
use jouleclaw_stack::oracle::WindowVerdict;
use jouleclaw_stack::store::layout::{self, COMMIT_ORDER, Input, RECEIPTS_JSONL, SIGNER_PUB};
use jouleclaw_stack::store::{Completeness, DirReport, Outcome, ReceiptStatus, verify_dir};
use jouleclaw_stack::stream::{LedgerPolicy, WindowConservationFinding};

use crate::commands::stream_dir::{outcome_result, tell_problems, verdict_line};
use crate::out::{say, tell};
use crate::present::html;
use crate::{CmdResult, Failure};

/// Above this many receipts the timeline aggregates consecutive receipts into one column each
/// (spec/REPORT.md, "Scale").
pub(crate) const MAX_COLUMNS: usize = 1000;

/// Rows of the receipts table: the first this many receipts; the page says how many more
/// there are.
pub(crate) const MAX_TABLE_ROWS: usize = 1000;

/// Barge-in rows (late outbound bars and yields, each): the first this many.
pub(crate) const MAX_BARGE_INS: usize = 1000;

/// Arguments of `jouleclaw report`.
#[derive(Args, Debug)]
pub(crate) struct ReportArgs {
    /// A stream directory (`jouleclaw run --out`: receipts.jsonl, receipts.cbor, summary.json,
    /// signer.pub, and seals.cbor and inclusion.cbor when sealed).
    dir: PathBuf,
    /// The public key to verify with (default: DIR/signer.pub, which proves integrity, not
    /// origin).
    #[arg(long = "pub", value_name = "PUBFILE")]
    public: Option<PathBuf>,
    /// The HTML file to write (default: DIR/report.html); written to a new temporary file and
    /// renamed into place.
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    out: Option<PathBuf>,
    /// Exit 0 for a stream that is not sealed when every receipt verifies (its completeness
    /// is unknown, and the page says so either way).
    #[arg(long)]
    allow_unsealed: bool,
}

/// One receipt of the table.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    /// 0-based line of `receipts.jsonl`.
    pub(crate) line: u64,
    /// The receipt.
    pub(crate) receipt: StreamWindowReceipt,
    /// What covers it.
    pub(crate) status: ReceiptStatus,
}

/// One timeline column: one receipt, or (above [`MAX_COLUMNS`] receipts) several consecutive
/// ones.
#[derive(Debug, Clone)]
pub(crate) struct Col {
    pub(crate) first: u64,
    pub(crate) last: u64,
    /// Lines of receipts.jsonl it covers.
    pub(crate) first_line: u64,
    pub(crate) last_line: u64,
    pub(crate) receipts: u64,
    pub(crate) inbound: u64,
    pub(crate) outbound: u64,
    /// The highest-ranked verdict among the column's receipts (the first of that rank).
    pub(crate) verdict: WindowVerdict,
    /// The dominant finding (`WindowConservationFinding::dominate`).
    pub(crate) finding: WindowConservationFinding,
    /// Empty windows (no receipt) inside or just before the column.
    pub(crate) gap_before: u64,
    /// Rolling inbound and outbound over the ledger's window ring at the column's last window.
    pub(crate) rolling: Option<(u64, u64)>,
    pub(crate) all_verified: bool,
}

/// Builds the columns one receipt at a time (rolling sums over the ledger's ring).
struct Columns {
    per: u64,
    seen: u64,
    cols: Vec<Col>,
    ring: u64,
    window: std::collections::VecDeque<(u64, u64, u64)>,
    rin: u64,
    rout: u64,
    prev: Option<u64>,
    ascending: bool,
}

impl Columns {
    fn new(expected: u64, policy: &LedgerPolicy) -> Self {
        Self {
            per: expected.div_ceil(MAX_COLUMNS as u64).max(1),
            seen: 0,
            cols: Vec::new(),
            ring: u64::from(policy.window_count),
            window: std::collections::VecDeque::new(),
            rin: 0,
            rout: 0,
            prev: None,
            ascending: true,
        }
    }

    fn push(&mut self, line: u64, r: &StreamWindowReceipt) {
        let gap = match self.prev {
            Some(p) if r.window_id > p => r.window_id - p - 1,
            Some(_) => {
                self.ascending = false;
                0
            }
            None => 0,
        };
        self.prev = Some(r.window_id);
        let rolling = if self.ascending {
            self.window
                .push_back((r.window_id, r.inbound_bytes, r.outbound_bytes));
            self.rin = self.rin.saturating_add(r.inbound_bytes);
            self.rout = self.rout.saturating_add(r.outbound_bytes);
            while let Some(&(w, a, b)) = self.window.front() {
                if w.saturating_add(self.ring) <= r.window_id {
                    self.rin = self.rin.saturating_sub(a);
                    self.rout = self.rout.saturating_sub(b);
                    self.window.pop_front();
                } else {
                    break;
                }
            }
            Some((self.rin, self.rout))
        } else {
            None
        };
        // A count that changed since it was taken never makes more than MAX_COLUMNS columns.
        let start = self.seen.is_multiple_of(self.per) && self.cols.len() < MAX_COLUMNS;
        self.seen += 1;
        match self.cols.last_mut() {
            Some(c) if !start => {
                c.last = r.window_id;
                c.last_line = line;
                c.receipts += 1;
                c.inbound = c.inbound.saturating_add(r.inbound_bytes);
                c.outbound = c.outbound.saturating_add(r.outbound_bytes);
                if r.verdict.rank() > c.verdict.rank() {
                    c.verdict = r.verdict.clone();
                }
                c.finding = c.finding.dominate(r.conservation);
                c.gap_before = c.gap_before.saturating_add(gap);
                c.rolling = match (c.rolling, rolling) {
                    (Some((a, b)), Some((x, y))) => Some((a.max(x), b.max(y))),
                    _ => None,
                };
            }
            _ => self.cols.push(Col {
                first: r.window_id,
                last: r.window_id,
                first_line: line,
                last_line: line,
                receipts: 1,
                inbound: r.inbound_bytes,
                outbound: r.outbound_bytes,
                verdict: r.verdict.clone(),
                finding: r.conservation,
                gap_before: gap,
                rolling,
                all_verified: false,
            }),
        }
    }

    fn finish(mut self, store: &DirReport) -> (Vec<Col>, u64) {
        for c in &mut self.cols {
            if !self.ascending {
                c.rolling = None;
            }
            let (a, b) = (c.first_line as usize, c.last_line as usize);
            c.all_verified = store
                .receipts
                .get(a..=b)
                .is_some_and(|rs| rs.iter().all(|r| r.status.is_verified()));
        }
        (self.cols, self.per)
    }
}

/// What the page shows.
#[derive(Debug, Clone)]
pub(crate) struct Report {
    pub(crate) public_key_hex: String,
    pub(crate) kid_hex: String,
    pub(crate) key_source: String,
    pub(crate) test_key: bool,
    /// The verifier's answer.
    pub(crate) store: DirReport,
    /// The first [`MAX_TABLE_ROWS`] receipts.
    pub(crate) rows: Vec<Row>,
    pub(crate) cols: Vec<Col>,
    /// Receipts per column.
    pub(crate) per: u64,
    /// Late outbound after a barge-in: (window, barge-in ns, outbound ns), the first
    /// [`MAX_BARGE_INS`].
    pub(crate) late: Vec<(u64, u64, u64)>,
    /// Yields: (window, seen_at, ignored), the first [`MAX_BARGE_INS`].
    pub(crate) yields: Vec<(u64, u64, bool)>,
    /// Late outbounds and yields beyond the bound.
    pub(crate) barge_ins_more: u64,
    pub(crate) policy: LedgerPolicy,
    /// Whether an unsealed stream is accepted (the exit status; the page is the same).
    pub(crate) allow_unsealed: bool,
}

/// Whether one of the call's signed documents is inside its final seal (spec/REPORT.md,
/// section 4b).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DocSeal {
    /// A verified `stream-seal/2` final seal commits to the file's digest under this kind,
    /// and the file matches it.
    Sealed(&'static str),
    /// No verified final seal commits to it: why, in words.
    NotSealed(&'static str),
}

/// What covers `file` (one of [`layout::DOCUMENT_FILES`]): the verifier's
/// `sealed_documents` (set only from a verified final seal) and its `document_*` problems.
pub(crate) fn doc_seal(store: &DirReport, file: &str) -> DocSeal {
    if store
        .problems
        .iter()
        .any(|p| p.file == file && p.code.starts_with("document_"))
    {
        return DocSeal::NotSealed(
            "the file is not what the final seal commits to (see the problems above)",
        );
    }
    let kinds = layout::DOCUMENT_FILES
        .iter()
        .find(|(f, _)| *f == file)
        .map_or(&[][..], |(_, k)| *k);
    match (&store.sealed_documents, store.completeness) {
        (Some(docs), _) => kinds.iter().find(|k| docs.contains_key(**k)).map_or(
            DocSeal::NotSealed("the final seal (stream-seal/2) does not commit to it"),
            |k| DocSeal::Sealed(k),
        ),
        (None, Completeness::Complete) => DocSeal::NotSealed(
            "the final seal is stream-seal/1 (a run sealed before stream-seal/2), which commits \
             to the receipts only; the document is checked against the receipts only",
        ),
        (None, Completeness::Unknown) => DocSeal::NotSealed("the stream is not sealed"),
        (None, Completeness::Incomplete) => {
            DocSeal::NotSealed("no final seal verified (see the problems above)")
        }
    }
}

impl Report {
    pub(crate) fn stream_id(&self) -> &str {
        self.store.stream_id.as_deref().unwrap_or_default()
    }

    pub(crate) fn steward(&self) -> &str {
        self.store.steward.as_deref().unwrap_or_default()
    }
}

/// Lines of `receipts.jsonl` (a first pass counting line ends, so the timeline knows how many
/// receipts a column takes before it draws one); 0 when it is not a readable regular file.
fn count_lines(dir: &Path) -> Result<u64, Failure> {
    use std::io::Read as _;
    let path = dir.join(RECEIPTS_JSONL);
    let Input::File(mut f) = layout::open_input(&path)? else {
        return Ok(0);
    };
    let mut buf = vec![0u8; 1 << 16];
    let mut n = 0u64;
    loop {
        let k = f.read(&mut buf).map_err(|e| Failure::io(&path, e))?;
        if k == 0 {
            return Ok(n);
        }
        n += buf[..k].iter().filter(|&&b| b == b'\n').count() as u64;
    }
}

/// Reads DIR/signer.pub: not followed if it is a symbolic link, refused unless a regular file.
pub(crate) fn read_dir_key(dir: &Path) -> Result<PublicKey, Failure> {
    let path = dir.join(SIGNER_PUB);
    let file = match layout::open_input(&path)? {
        Input::File(f) => f,
        Input::Missing => return Err(Failure::io(&path, "missing (give --pub PUBFILE)")),
        Input::NotRegular(kind) => {
            return Err(Failure::Usage(format!(
                "{}: is a {kind}, not a regular file; not read",
                path.display()
            )));
        }
    };
    let bytes = layout::read_bounded(file, &path, cose::MAX_KEY_FILE_BYTES)?
        .ok_or_else(|| Failure::io(&path, "longer than a public key file"))?;
    let text = std::str::from_utf8(&bytes).map_err(|e| Failure::io(&path, e))?;
    cose::parse_public_key_text(text).map_err(|e| Failure::io(&path, e))
}

/// Builds the report from the files in `dir`, verifying with `key`.
fn build(
    dir: &Path,
    key: PublicKey,
    key_source: String,
    allow_unsealed: bool,
) -> Result<Report, Failure> {
    let policy = LedgerPolicy::default();
    let mut columns = Columns::new(count_lines(dir)?, &policy);
    let mut rows: Vec<Row> = Vec::new();
    let mut late = Vec::new();
    let mut yields = Vec::new();
    let mut barge_ins_more = 0u64;
    let valid = crate::keys::valid_key(&key)?;
    let store = verify_dir(dir, &valid, &mut |line, r| {
        columns.push(line, r);
        if rows.len() < MAX_TABLE_ROWS {
            rows.push(Row {
                line,
                receipt: r.clone(),
                status: ReceiptStatus::Unproven,
            });
        }
        if let WindowConservationFinding::BargeInIgnored {
            barge_in_ts_ns,
            outbound_ts_ns,
        } = r.conservation
        {
            if late.len() < MAX_BARGE_INS {
                late.push((r.window_id, barge_in_ts_ns, outbound_ts_ns));
            } else {
                barge_ins_more += 1;
            }
        }
        if let WindowVerdict::Yield { seen_at } = r.verdict {
            let ignored = matches!(
                r.conservation,
                WindowConservationFinding::BargeInIgnored { .. }
            );
            if yields.len() < MAX_BARGE_INS {
                yields.push((r.window_id, seen_at, ignored));
            } else {
                barge_ins_more += 1;
            }
        }
    })?;
    for row in &mut rows {
        if let Some(r) = store.receipts.get(row.line as usize) {
            row.status = r.status;
        }
    }
    let (cols, per) = columns.finish(&store);
    Ok(Report {
        public_key_hex: hex::encode(key.as_bytes()),
        kid_hex: hex::encode(cose::kid(&key)),
        key_source,
        test_key: key == SoftwareSigner::rfc8032_test_key().verifying_key(),
        store,
        rows,
        cols,
        per,
        late,
        yields,
        barge_ins_more,
        policy,
        allow_unsealed,
    })
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
    let (key, key_source) = match &args.public {
        Some(p) => (
            crate::keys::read_public_key(p)?,
            format!("--pub {}", p.display()),
        ),
        None => (
            read_dir_key(dir)?,
            "signer.pub in the report's directory (integrity only: whoever wrote the \
             directory chose this key)"
                .to_owned(),
        ),
    };
    let report = build(dir, key, key_source, args.allow_unsealed)?;
    let page = html::render(&report);
    let dest = args.out.clone().unwrap_or_else(|| dir.join("report.html"));
    // Never written over: the run's files and its signed documents.
    let mut inputs: Vec<PathBuf> = COMMIT_ORDER
        .iter()
        .copied()
        .chain(
            jouleclaw_stack::store::layout::DOCUMENT_FILES
                .iter()
                .map(|(file, _)| *file),
        )
        .map(|n| dir.join(n))
        .collect();
    inputs.extend(args.public.clone());
    let input_refs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    jouleclaw_stack::store::writer::write_output(&dest, page.as_bytes(), &input_refs)?;

    say!(
        "{} of {} receipts verified; wrote {}",
        report.store.verified(),
        report.store.receipts.len(),
        dest.display()
    );
    if report.test_key {
        tell!("WARNING: the receipts are signed with the published RFC 8032 test key.");
    }
    tell_problems(&report.store);
    // The signed documents' own problems (stop-latency.cbor's, then interaction-metrics.cbor's).
    for p in &report.store.document_problems {
        tell!("{}", crate::out::untrusted(&p.to_string()));
    }
    for (file, _) in jouleclaw_stack::store::layout::DOCUMENT_FILES {
        crate::commands::stream_dir::tell_document_more(&report.store, file);
    }
    let line = verdict_line(&report.store);
    if report.store.receipts_outcome() == Outcome::Complete {
        say!("{line}");
    } else {
        tell!("{line}");
    }
    for file in [
        crate::commands::stop_latency::FILE,
        crate::commands::interaction::FILE,
    ] {
        let n = report.store.document_problem_count_of(file);
        if n > 0 {
            return Err(Failure::Refused(format!("{file}: {n} problems")));
        }
    }
    outcome_result(&report.store, args.allow_unsealed)
}
