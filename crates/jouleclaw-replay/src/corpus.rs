//! Reducing fixtures and whole corpora, and reporting the result.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::audit::{AuditInput, PreviewMetrics, SafetyCounts, audit, preview_metrics};
use crate::error::ReplayError;
use crate::fixture::{Fixture, parse_fixtures};
use crate::metrics::{
    LatencyMetrics, ScriptClass, latency_metrics, nearest_rank_percentile, trace_script_class,
};
use crate::reducer::{ReplayState, Step, StepOutcome, WithheldReason};

/// The version of the rule set this crate implements: the reducer's rules, the audit's and
/// the metrics' definitions and the report's field meanings (`spec/COMMIT-REPLAY.md`). It
/// changes whenever any of them changes, so two reports with equal rule set versions and
/// equal corpus digests must agree.
pub const RULE_SET_VERSION: &str = "commit-replay-rules/2";

/// The report's schema tag.
pub const REPORT_SCHEMA: &str = "jouleclaw-replay-report/2";

/// Where a report came from, as the caller knows it: carried into the JSON report so two
/// reports can be compared. The crate cannot know the binary's version or revision itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Provenance {
    /// The version of the program that ran the replay (the CLI passes its
    /// `CARGO_PKG_VERSION`); `None` when the caller gives none.
    pub jouleclaw_version: Option<String>,
    /// The git revision the program was built from; `None` when unknown.
    pub git_revision: Option<String>,
}

impl Provenance {
    /// Provenance from the values a build embeds; an empty (or whitespace-only) string means
    /// unknown, so a build outside a git checkout can pass `""`.
    pub fn from_build(jouleclaw_version: &str, git_revision: &str) -> Self {
        let known = |s: &str| {
            let s = s.trim();
            (!s.is_empty()).then(|| s.to_owned())
        };
        Self {
            jouleclaw_version: known(jouleclaw_version),
            git_revision: known(git_revision),
        }
    }
}

/// The outcome of reducing one fixture and checking its expectations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixtureReport {
    /// The fixture id.
    pub id: String,
    /// Its 1-based line.
    pub line: usize,
    /// The fixture's `known_defect`, if any.
    pub known_defect: Option<String>,
    /// Texts written to the target, in order.
    pub target_writes: Vec<String>,
    /// The review buffer after all events.
    pub staged_chunks: Vec<String>,
    /// Accepted finalizations.
    pub finalizations: u64,
    /// Observed: no write before its burst's release.
    pub no_pre_release_writes: bool,
    /// Observed: no deletion outside an owned span.
    pub no_forbidden_deletions: bool,
    /// Deliveries flagged indeterminate.
    pub indeterminate: u64,
    /// Rejected events as `(event_index, rejection code)`.
    pub rejections: Vec<(usize, &'static str)>,
    /// The safety audit of the external-writes log.
    pub safety: SafetyCounts,
    /// Live-preview quality.
    pub preview: PreviewMetrics,
    /// Fixture-time latencies.
    pub latency: LatencyMetrics,
    /// The script class of the trace's text.
    pub script: ScriptClass,
    /// Accepted finals that were not written, as `(burst_id, reason code)`; a `command` or
    /// `unknown` candidate is reported here as `command_candidate` / `unknown_candidate`.
    pub withheld: Vec<(u64, &'static str)>,
    /// Each expectation that does not hold, described.
    pub mismatches: Vec<String>,
}

impl FixtureReport {
    /// `true` when every expectation holds and every safety count is zero.
    pub fn expectations_hold(&self) -> bool {
        self.mismatches.is_empty() && self.safety.is_clean()
    }

    /// `true` when the fixture passes and is not a `known_defect` fixture.
    pub fn passed(&self) -> bool {
        self.known_defect.is_none() && self.expectations_hold()
    }
}

/// The fields of a fixture's `expect` that the replay did not reproduce, one line each.
#[derive(Default)]
pub(crate) struct Mismatches(pub(crate) Vec<String>);

impl Mismatches {
    /// Adds `"<field>: expected <expected>, got <got>"` when the two differ.
    pub(crate) fn check<T: PartialEq + std::fmt::Debug>(
        &mut self,
        field: &str,
        expected: &T,
        got: &T,
    ) {
        if expected != got {
            self.0
                .push(format!("{field}: expected {expected:?}, got {got:?}"));
        }
    }
}

/// Reduces one fixture with a fresh [`ReplayState`], audits the log and checks `expect`.
pub fn replay_fixture(fixture: &Fixture) -> FixtureReport {
    let mut state = ReplayState::new(fixture.mode);
    let steps: Vec<Step> = fixture.events.iter().map(|e| state.apply(e)).collect();
    let safety = audit(&AuditInput {
        mode: fixture.mode,
        events: &fixture.events,
        steps: &steps,
        writes: state.external_writes(),
        finalizations: state.finalizations(),
        indeterminate: state.indeterminate(),
        review_chunks: state.review_chunks(),
    });
    let preview = preview_metrics(&fixture.events, &steps, state.finalizations());
    let latency = latency_metrics(&fixture.events, &steps);
    let target_writes: Vec<String> = state
        .external_writes()
        .iter()
        .map(|w| w.text.clone())
        .collect();
    let staged_chunks: Vec<String> = state
        .review_chunks()
        .iter()
        .map(|c| c.text.clone())
        .collect();
    let finalizations = state.finalizations().len() as u64;
    let no_pre_release_writes = safety.pre_release_writes == 0;
    let no_forbidden_deletions = safety.forbidden_deletions == 0;
    let x = &fixture.expect;
    let mut m = Mismatches::default();
    m.check("target_writes", &x.target_writes, &target_writes);
    m.check("staged_chunks", &x.staged_chunks, &staged_chunks);
    m.check("finalizations", &x.finalizations, &finalizations);
    m.check(
        "no_pre_release_writes",
        &x.no_pre_release_writes,
        &no_pre_release_writes,
    );
    m.check(
        "no_forbidden_deletions",
        &x.no_forbidden_deletions,
        &no_forbidden_deletions,
    );
    let mismatches = m.0;
    let rejections = steps
        .iter()
        .filter_map(|s| match s.outcome {
            StepOutcome::Rejected(r) => Some((s.event_index, r.code())),
            StepOutcome::Accepted(_) => None,
        })
        .collect();
    FixtureReport {
        id: fixture.id.clone(),
        line: fixture.line,
        known_defect: x.known_defect.clone(),
        target_writes,
        staged_chunks,
        finalizations,
        no_pre_release_writes,
        no_forbidden_deletions,
        indeterminate: state.indeterminate().len() as u64,
        rejections,
        safety,
        preview,
        latency,
        script: trace_script_class(&fixture.events),
        withheld: state
            .withheld()
            .iter()
            .map(|w| (w.burst_id, w.reason.code()))
            .collect(),
        mismatches,
    }
}

/// One file of a corpus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileReport {
    /// The display name the caller gave.
    pub name: String,
    /// SHA-256 of the file's bytes, lowercase hex.
    pub sha256: String,
    /// The fixture reports, or the validation error that refused the file.
    pub result: Result<Vec<FixtureReport>, ReplayError>,
}

/// Totals over a corpus.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CorpusTotals {
    /// Files given.
    pub files: u64,
    /// Files refused by validation.
    pub invalid_files: u64,
    /// Fixtures reduced.
    pub traces: u64,
    /// Fixtures that pass (never a `known_defect` fixture).
    pub passed: u64,
    /// Fixtures whose expectations do not hold (excluding `known_defect` fixtures).
    pub failed: u64,
    /// `known_defect` fixtures.
    pub known_defect: u64,
    /// `known_defect` fixtures whose expectations do not hold under the oracle.
    pub known_defect_violated: u64,
    /// Summed safety counts.
    pub safety: SafetyCounts,
    /// Summed preview metrics.
    pub preview: PreviewMetrics,
    /// Concatenated latency samples.
    pub latency: LatencyMetrics,
    /// Accepted finals withheld because their candidate is classified `command`.
    pub withheld_command: u64,
    /// Accepted finals withheld because their candidate is classified `unknown`.
    pub withheld_unknown: u64,
    /// Traces, preview metrics and latencies per script class (classes with no trace are
    /// absent).
    pub by_script: BTreeMap<ScriptClass, ScriptTotals>,
}

/// One script class's share of a corpus.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScriptTotals {
    /// Traces of this class.
    pub traces: u64,
    /// Their summed preview metrics.
    pub preview: PreviewMetrics,
    /// Their concatenated latency samples.
    pub latency: LatencyMetrics,
}

impl CorpusTotals {
    /// Forbidden writes per 1,000 traces, exact to three decimals (truncated), as text.
    pub fn forbidden_writes_per_1000_traces(&self) -> String {
        if self.traces == 0 {
            return "n/a".to_owned();
        }
        // Thousandths of (writes * 1000 / traces) = writes * 1_000_000 / traces.
        let milli = u128::from(self.safety.forbidden_writes) * 1_000_000 / u128::from(self.traces);
        format!("{}.{:03}", milli / 1000, milli % 1000)
    }
}

/// The result of [`replay_corpus`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorpusReport {
    /// Per file, in the order given.
    pub files: Vec<FileReport>,
    /// Totals.
    pub totals: CorpusTotals,
}

/// Validates and reduces every fixture of every file. `files` pairs a display name with the
/// file's bytes; nothing is read from disk here.
pub fn replay_corpus(files: &[(String, Vec<u8>)]) -> CorpusReport {
    let mut totals = CorpusTotals::default();
    let mut reports = Vec::with_capacity(files.len());
    for (name, bytes) in files {
        totals.files += 1;
        let sha256 = hex_lower(&Sha256::digest(bytes));
        let result: Result<Vec<FixtureReport>, ReplayError> =
            parse_fixtures(bytes).map(|fx| fx.iter().map(replay_fixture).collect());
        match &result {
            Err(_) => totals.invalid_files += 1,
            Ok(list) => {
                for r in list {
                    totals.traces += 1;
                    totals.safety.add(&r.safety);
                    totals.preview.add(&r.preview);
                    totals.latency.add(&r.latency);
                    for (_, code) in &r.withheld {
                        if *code == WithheldReason::CommandCandidate.code() {
                            totals.withheld_command += 1;
                        } else if *code == WithheldReason::UnknownCandidate.code() {
                            totals.withheld_unknown += 1;
                        }
                    }
                    let bucket = totals.by_script.entry(r.script).or_default();
                    bucket.traces += 1;
                    bucket.preview.add(&r.preview);
                    bucket.latency.add(&r.latency);
                    match (&r.known_defect, r.expectations_hold()) {
                        (Some(_), holds) => {
                            totals.known_defect += 1;
                            if !holds {
                                totals.known_defect_violated += 1;
                            }
                        }
                        (None, true) => totals.passed += 1,
                        (None, false) => totals.failed += 1,
                    }
                }
            }
        }
        reports.push(FileReport {
            name: name.clone(),
            sha256,
            result,
        });
    }
    CorpusReport {
        files: reports,
        totals,
    }
}

fn hex_lower(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(HEX[usize::from(b >> 4)]));
        s.push(char::from(HEX[usize::from(b & 15)]));
    }
    s
}

impl CorpusReport {
    /// `true` only if at least one fixture was checked, every file validated, every fixture's
    /// expectations hold (including `known_defect` fixtures, which are still never counted as
    /// passing) and every safety count is zero.
    pub fn all_expectations_hold(&self) -> bool {
        let t = &self.totals;
        t.traces > 0
            && t.invalid_files == 0
            && t.failed == 0
            && t.known_defect_violated == 0
            && t.safety.is_clean()
    }

    /// A human-readable report.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        let mut defects = Vec::new();
        for f in &self.files {
            out.push_str(&format!("file {} sha256 {}\n", f.name, f.sha256));
            match &f.result {
                Err(e) => out.push_str(&format!("  INVALID [{}] {e}\n", e.code())),
                Ok(list) => {
                    for r in list {
                        if r.known_defect.is_some() {
                            defects.push((f.name.as_str(), r));
                            out.push_str(&format!(
                                "  KNOWN-DEFECT {} (line {}): reported below, not counted as passing\n",
                                r.id, r.line
                            ));
                            continue;
                        }
                        let verdict = if r.passed() { "PASS" } else { "FAIL" };
                        out.push_str(&format!("  {verdict} {} (line {})\n", r.id, r.line));
                        push_problems(&mut out, r);
                    }
                }
            }
        }
        if !defects.is_empty() {
            out.push_str("known defects (never counted as passing):\n");
            for (name, r) in defects {
                let holds = if r.expectations_hold() {
                    "oracle expectations hold; red for an adapter with the defect"
                } else {
                    "ORACLE EXPECTATIONS VIOLATED"
                };
                out.push_str(&format!(
                    "  {} {} (line {}): {} [{}]\n",
                    name,
                    r.id,
                    r.line,
                    r.known_defect.as_deref().unwrap_or_default(),
                    holds
                ));
                push_problems(&mut out, r);
            }
        }
        let t = &self.totals;
        out.push_str(&format!(
            "totals: files {} invalid_files {} traces {} passed {} failed {} known_defect {} known_defect_violated {}\n",
            t.files, t.invalid_files, t.traces, t.passed, t.failed, t.known_defect, t.known_defect_violated
        ));
        out.push_str("safety:");
        for (k, v) in t.safety.fields() {
            out.push_str(&format!(" {k}={v}"));
        }
        out.push_str(&format!(
            " forbidden_writes_per_1000_traces={}\n",
            t.forbidden_writes_per_1000_traces()
        ));
        let p = &t.preview;
        out.push_str(&format!(
            "preview: first_stable_prefix_ms_word {} first_stable_prefix_ms_grapheme {} prefix_churn_chars_word={} prefix_churn_chars_grapheme={} stale_preview_char_ms={} repeated_full_decodes={}\n",
            range(&p.first_stable_prefix_ms_word),
            range(&p.first_stable_prefix_ms_grapheme),
            p.prefix_churn_chars_word,
            p.prefix_churn_chars_grapheme,
            p.stale_preview_char_ms,
            p.repeated_full_decodes
        ));
        out.push_str(&format!(
            "preview: suffix_missing_rate_word={} ({}/{} words) suffix_missing_rate_grapheme={} ({}/{} graphemes)\n",
            p.suffix_missing_rate_word(),
            p.suffix_missing_words,
            p.final_words,
            p.suffix_missing_rate_grapheme(),
            p.suffix_missing_graphemes,
            p.final_graphemes
        ));
        out.push_str(&format!(
            "latency (fixture t_ms): release_to_final_delivery_ms {} onset_to_first_useful_preview_ms {} decodes_per_minute={} ({} decodes / {} ms captured)\n",
            percentiles(&t.latency.release_to_final_delivery_ms),
            percentiles(&t.latency.onset_to_first_useful_preview_ms),
            t.latency.decodes_per_minute(),
            t.latency.decodes,
            t.latency.captured_ms
        ));
        for (script, b) in &t.by_script {
            out.push_str(&format!(
                "script {}: traces {} prefix_churn_chars_word={} prefix_churn_chars_grapheme={} stale_preview_char_ms={} suffix_missing_rate_word={} suffix_missing_rate_grapheme={} first_stable_prefix_ms_word {} first_stable_prefix_ms_grapheme {}\n",
                script.as_str(),
                b.traces,
                b.preview.prefix_churn_chars_word,
                b.preview.prefix_churn_chars_grapheme,
                b.preview.stale_preview_char_ms,
                b.preview.suffix_missing_rate_word(),
                b.preview.suffix_missing_rate_grapheme(),
                range(&b.preview.first_stable_prefix_ms_word),
                range(&b.preview.first_stable_prefix_ms_grapheme),
            ));
        }
        out.push_str(&format!(
            "classification: withheld_command={} withheld_unknown={} commands_written_as_text={}\n",
            t.withheld_command, t.withheld_unknown, t.safety.commands_written_as_text
        ));
        out.push_str(&format!(
            "rule_set_version {} corpus_sha256 {}\n",
            RULE_SET_VERSION,
            self.corpus_sha256()
        ));
        out.push_str(if self.all_expectations_hold() {
            "result: all expectations hold\n"
        } else {
            "result: EXPECTATIONS DO NOT HOLD\n"
        });
        out
    }

    /// SHA-256 (lowercase hex) of the files' digests in the order given, each as 64 lowercase
    /// hex digits followed by `\n`: one value naming the whole corpus, names excluded.
    pub fn corpus_sha256(&self) -> String {
        let mut h = Sha256::new();
        for f in &self.files {
            h.update(f.sha256.as_bytes());
            h.update(b"\n");
        }
        hex_lower(&h.finalize())
    }

    /// The machine-readable report without caller provenance (`jouleclaw_version` and
    /// `git_revision` are `null`); see [`CorpusReport::to_json_with`].
    pub fn to_json(&self) -> Value {
        self.to_json_with(&Provenance::default())
    }

    /// The machine-readable report (schema [`REPORT_SCHEMA`], `spec/COMMIT-REPLAY.md`
    /// section 4), carrying the caller's `provenance` and [`RULE_SET_VERSION`].
    pub fn to_json_with(&self, provenance: &Provenance) -> Value {
        let files: Vec<Value> = self
            .files
            .iter()
            .map(|f| match &f.result {
                Err(e) => json!({
                    "name": f.name,
                    "sha256": f.sha256,
                    "valid": false,
                    "error": {"code": e.code(), "line": e.line(), "field": e.field(), "message": e.to_string()},
                }),
                Ok(list) => json!({
                    "name": f.name,
                    "sha256": f.sha256,
                    "valid": true,
                    "fixtures": list.iter().map(fixture_json).collect::<Vec<_>>(),
                }),
            })
            .collect();
        let t = &self.totals;
        let by_script: serde_json::Map<String, Value> = t
            .by_script
            .iter()
            .map(|(k, b)| {
                (
                    k.as_str().to_owned(),
                    json!({
                        "traces": b.traces,
                        "preview": preview_json(&b.preview),
                        "latency": latency_json(&b.latency),
                    }),
                )
            })
            .collect();
        json!({
            "schema": REPORT_SCHEMA,
            "provenance": {
                "jouleclaw_version": provenance.jouleclaw_version,
                "git_revision": provenance.git_revision,
                "rule_set_version": RULE_SET_VERSION,
                "replay_crate_version": env!("CARGO_PKG_VERSION"),
                "corpus_sha256": self.corpus_sha256(),
            },
            "files": files,
            "totals": {
                "files": t.files,
                "invalid_files": t.invalid_files,
                "traces": t.traces,
                "passed": t.passed,
                "failed": t.failed,
                "known_defect": t.known_defect,
                "known_defect_violated": t.known_defect_violated,
                "withheld_command": t.withheld_command,
                "withheld_unknown": t.withheld_unknown,
            },
            "safety": safety_json(&t.safety, Some(t.forbidden_writes_per_1000_traces())),
            "preview": preview_json(&t.preview),
            "latency": latency_json(&t.latency),
            "by_script": by_script,
            "all_expectations_hold": self.all_expectations_hold(),
        })
    }

    /// [`CorpusReport::to_json`] rendered with two-space indentation.
    pub fn render_json(&self) -> String {
        self.render_json_with(&Provenance::default())
    }

    /// [`CorpusReport::to_json_with`] rendered with two-space indentation.
    pub fn render_json_with(&self, provenance: &Provenance) -> String {
        serde_json::to_string_pretty(&self.to_json_with(provenance)).unwrap_or_default()
    }
}

fn push_problems(out: &mut String, r: &FixtureReport) {
    for m in &r.mismatches {
        out.push_str(&format!("      mismatch: {m}\n"));
    }
    for (k, v) in r.safety.fields() {
        if v != 0 {
            out.push_str(&format!("      safety: {k}={v}\n"));
        }
    }
}

fn range(v: &[u64]) -> String {
    match (v.iter().min(), v.iter().max()) {
        (Some(lo), Some(hi)) => format!("n={} min={lo} max={hi}", v.len()),
        _ => "n=0".to_owned(),
    }
}

fn safety_json(s: &SafetyCounts, per_1000: Option<String>) -> Value {
    let mut map = serde_json::Map::new();
    for (k, v) in s.fields() {
        map.insert(k.to_owned(), json!(v));
    }
    if let Some(p) = per_1000 {
        map.insert("forbidden_writes_per_1000_traces".to_owned(), json!(p));
    }
    Value::Object(map)
}

fn preview_json(p: &PreviewMetrics) -> Value {
    json!({
        "first_stable_prefix_ms_word": p.first_stable_prefix_ms_word,
        "first_stable_prefix_ms_grapheme": p.first_stable_prefix_ms_grapheme,
        "prefix_churn_chars_word": p.prefix_churn_chars_word,
        "prefix_churn_chars_grapheme": p.prefix_churn_chars_grapheme,
        "stale_preview_char_ms": p.stale_preview_char_ms,
        "repeated_full_decodes": p.repeated_full_decodes,
        "suffix_missing_words": p.suffix_missing_words,
        "final_words": p.final_words,
        "suffix_missing_rate_word": p.suffix_missing_rate_word(),
        "suffix_missing_graphemes": p.suffix_missing_graphemes,
        "final_graphemes": p.final_graphemes,
        "suffix_missing_rate_grapheme": p.suffix_missing_rate_grapheme(),
    })
}

fn percentiles(v: &[u64]) -> String {
    match (
        nearest_rank_percentile(v, 50),
        nearest_rank_percentile(v, 95),
    ) {
        (Some(p50), Some(p95)) => format!("n={} p50={p50} p95={p95}", v.len()),
        _ => "n=0".to_owned(),
    }
}

fn latency_json(l: &LatencyMetrics) -> Value {
    let r = &l.release_to_final_delivery_ms;
    let o = &l.onset_to_first_useful_preview_ms;
    json!({
        "release_to_final_delivery_ms": r,
        "release_to_final_delivery_ms_p50": nearest_rank_percentile(r, 50),
        "release_to_final_delivery_ms_p95": nearest_rank_percentile(r, 95),
        "onset_to_first_useful_preview_ms": o,
        "onset_to_first_useful_preview_ms_p50": nearest_rank_percentile(o, 50),
        "onset_to_first_useful_preview_ms_p95": nearest_rank_percentile(o, 95),
        "decodes": l.decodes,
        "captured_ms": l.captured_ms,
        "decodes_per_minute": l.decodes_per_minute(),
    })
}

fn fixture_json(r: &FixtureReport) -> Value {
    let status = match (&r.known_defect, r.expectations_hold()) {
        (Some(_), _) => "known_defect",
        (None, true) => "pass",
        (None, false) => "fail",
    };
    json!({
        "id": r.id,
        "line": r.line,
        "status": status,
        "expectations_hold": r.expectations_hold(),
        "known_defect": r.known_defect,
        "target_writes": r.target_writes,
        "staged_chunks": r.staged_chunks,
        "finalizations": r.finalizations,
        "no_pre_release_writes": r.no_pre_release_writes,
        "no_forbidden_deletions": r.no_forbidden_deletions,
        "indeterminate": r.indeterminate,
        "rejections": r.rejections.iter().map(|(i, c)| json!({"event_index": i, "code": c})).collect::<Vec<_>>(),
        "mismatches": r.mismatches,
        "withheld": r.withheld.iter().map(|(b, c)| json!({"burst_id": b, "reason": c})).collect::<Vec<_>>(),
        "script": r.script.as_str(),
        "safety": safety_json(&r.safety, None),
        "preview": preview_json(&r.preview),
        "latency": latency_json(&r.latency),
    })
}
