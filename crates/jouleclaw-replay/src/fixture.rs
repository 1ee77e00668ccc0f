//! Fixture schema v1: one JSON record per line (`spec/COMMIT-REPLAY.md` section 1).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::error::{ReplayError, Result};

/// How a burst is started and ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Activation {
    /// Physical hold: `hold_release` grants permission to finalize.
    Hold,
    /// Opted-in hands-free control: `handsfree_stop` grants permission to finalize.
    Handsfree,
}

impl Activation {
    /// `"hold"` or `"handsfree"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Hold => "hold",
            Self::Handsfree => "handsfree",
        }
    }
}

/// A fixture's `mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Mode {
    /// `mode.activation`.
    pub activation: Activation,
    /// `mode.staged`: finals go to a review buffer and are written only at `stage_commit`.
    pub staged: bool,
    /// `mode.streaming`: hypotheses arrive while the burst is open.
    pub streaming: bool,
}

/// The category of a `failure` event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureCategory {
    /// The decoder failed; the open burst ends without a final.
    Decode,
    /// The next injection attempt fails before any side effect.
    InjectBeforeEffect,
    /// The next injection attempt fails after some side effect may have happened.
    InjectAfterPartialEffect,
    /// The target disappeared.
    TargetLost,
}

impl FailureCategory {
    /// The schema's name for the category.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Decode => "decode",
            Self::InjectBeforeEffect => "inject_before_effect",
            Self::InjectAfterPartialEffect => "inject_after_partial_effect",
            Self::TargetLost => "target_lost",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "decode" => Self::Decode,
            "inject_before_effect" => Self::InjectBeforeEffect,
            "inject_after_partial_effect" => Self::InjectAfterPartialEffect,
            "target_lost" => Self::TargetLost,
            _ => return None,
        })
    }
}

/// How the authoritative final's candidate is classified (`final_decode.class`).
///
/// **Choice:** the source requires classification before writing but names no field; the
/// schema carries the classifier's verdict as data, so the oracle judges the policy, not a
/// classifier. An absent `class` is `dictation`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum CandidateClass {
    /// Dictated text: the only class that may be written as text.
    #[default]
    Dictation,
    /// A spoken command: never written as text.
    Command,
    /// The classifier could not decide: treated like a command, never written as text.
    Unknown,
}

impl CandidateClass {
    /// `"dictation"`, `"command"` or `"unknown"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Dictation => "dictation",
            Self::Command => "command",
            Self::Unknown => "unknown",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "dictation" => Self::Dictation,
            "command" => Self::Command,
            "unknown" => Self::Unknown,
            _ => return None,
        })
    }
}

/// A synthetic target description (`target` event).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TargetSnapshot {
    /// Abstract focus id.
    pub focus_id: String,
    /// Caret version; any change means the caret or selection moved.
    pub caret_version: u64,
    /// Whether the target accepts text.
    pub editable: bool,
}

/// What an event is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventKind {
    /// Begins a burst; synthetic audio descriptors only.
    HoldStart {
        /// Optional synthetic audio duration.
        duration_ms: Option<u64>,
        /// Optional synthetic energy band label.
        energy_band: Option<String>,
    },
    /// A full, provisional model hypothesis (not a delta).
    Hypothesis {
        /// The full hypothesis text.
        text: String,
        /// Optional decode id.
        decode_id: Option<String>,
    },
    /// A silence or thinking gap.
    Pause {
        /// Its length.
        duration_ms: u64,
    },
    /// Finalization permission for `activation = hold`.
    HoldRelease,
    /// Finalization permission for `activation = handsfree`.
    HandsfreeStop,
    /// The authoritative decode's full text.
    FinalDecode {
        /// The full text.
        text: String,
        /// Optional decode id (extension: lets a stale final be recognised).
        decode_id: Option<String>,
        /// The candidate's class (`dictation` when the field is absent).
        class: CandidateClass,
    },
    /// The target as it is now.
    Target(TargetSnapshot),
    /// Explicit user action: write the reviewed buffered chunks.
    StageCommit,
    /// Explicit user action: drop the reviewed buffered chunks.
    StageDiscard,
    /// A delayed partial arriving after a release or seal.
    LatePartial {
        /// The partial text.
        text: String,
        /// Optional decode id.
        decode_id: Option<String>,
    },
    /// A failure.
    Failure {
        /// Which failure.
        category: FailureCategory,
    },
}

impl EventKind {
    /// The schema's `kind` string.
    pub fn name(&self) -> &'static str {
        match self {
            Self::HoldStart { .. } => "hold_start",
            Self::Hypothesis { .. } => "hypothesis",
            Self::Pause { .. } => "pause",
            Self::HoldRelease => "hold_release",
            Self::HandsfreeStop => "handsfree_stop",
            Self::FinalDecode { .. } => "final_decode",
            Self::Target(_) => "target",
            Self::StageCommit => "stage_commit",
            Self::StageDiscard => "stage_discard",
            Self::LatePartial { .. } => "late_partial",
            Self::Failure { .. } => "failure",
        }
    }
}

/// One event of a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Integer milliseconds; events are sorted by `(t_ms, array order)`.
    pub t_ms: u64,
    /// What happened.
    pub kind: EventKind,
}

/// A fixture's `expect` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expect {
    /// The external strings written to the target, in order.
    pub target_writes: Vec<String>,
    /// The review buffer after all events.
    pub staged_chunks: Vec<String>,
    /// Accepted finalizations.
    pub finalizations: u64,
    /// Whether no write happens before its burst's release or stop.
    pub no_pre_release_writes: bool,
    /// Whether no deletion touches text outside an owned, known-safe span.
    pub no_forbidden_deletions: bool,
    /// A known defect of some implementation this trace demonstrates; such fixtures are
    /// reported separately and never counted as passing.
    pub known_defect: Option<String>,
}

/// One fixture record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fixture {
    /// 1-based line in its file.
    pub line: usize,
    /// Unique id within its file.
    pub id: String,
    /// Human description.
    pub description: String,
    /// The mode.
    pub mode: Mode,
    /// The events, monotonic in `t_ms`.
    pub events: Vec<Event>,
    /// The expectations.
    pub expect: Expect,
}

/// Largest integer a fixture may carry: `2^53 - 1`.
const MAX_INT: u64 = jouleclaw_stream::canon::MAX_SAFE_INTEGER;

/// Parses a JSONL fixture file. Blank (whitespace-only) lines are skipped; every other line
/// must be one fixture record. Stops at the first error, which names the line and the field.
pub fn parse_fixtures(bytes: &[u8]) -> Result<Vec<Fixture>> {
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            let valid = &bytes[..e.valid_up_to()];
            let line = 1 + valid.iter().filter(|&&b| b == b'\n').count();
            return Err(ReplayError::InvalidUtf8 { line });
        }
    };
    let mut out: Vec<Fixture> = Vec::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for (i, raw) in text.split('\n').enumerate() {
        let line = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let fixture = parse_record(raw, line)?;
        if let Some(&first_line) = seen.get(&fixture.id) {
            return Err(ReplayError::DuplicateId {
                line,
                field: "id".to_owned(),
                id: fixture.id,
                first_line,
            });
        }
        seen.insert(fixture.id.clone(), line);
        out.push(fixture);
    }
    if out.is_empty() {
        return Err(ReplayError::NoRecords);
    }
    Ok(out)
}

/// Parses one fixture record (one line, without its newline) found on `line`.
pub fn parse_record(raw: &str, line: usize) -> Result<Fixture> {
    let value: Value = serde_json::from_str(raw).map_err(|e| ReplayError::InvalidJson {
        line,
        detail: e.to_string(),
    })?;
    if let Some(field) = duplicate_key(raw, "") {
        return Err(ReplayError::DuplicateField { line, field });
    }
    let p = Parser { line };
    let obj = p.object(&value, "record")?;
    p.only(
        obj,
        "",
        &["id", "description", "mode", "events", "expect"],
        &[],
    )?;
    let id = p.string(p.req(obj, "", "id")?, "id")?;
    let description = p.string(p.req(obj, "", "description")?, "description")?;
    let mode = p.mode(p.req(obj, "", "mode")?)?;
    let events = p.events(p.req(obj, "", "events")?)?;
    let expect = p.expect(p.req(obj, "", "expect")?)?;
    Ok(Fixture {
        line,
        id,
        description,
        mode,
        events,
        expect,
    })
}

/// Parses one event object (as carried by a replay marker); `line` is reported in errors and
/// `at` is the field path prefix (for example `events[3]`).
pub(crate) fn parse_event(value: &Value, line: usize, at: &str) -> Result<Event> {
    Parser { line }.event(value, at)
}

/// One open JSON container while scanning for duplicate keys.
enum Frame {
    Object {
        keys: BTreeSet<String>,
        key: String,
        expect_key: bool,
    },
    Array {
        index: usize,
    },
}

/// The field path (under `prefix`) of the first object key that occurs twice in the same
/// object of `raw`, which must already be known to be one valid JSON document.
///
/// `serde_json` keeps the last of two equal keys silently, so a duplicate would let a typo or
/// an edit weaken a fixture without a trace; the schema refuses it instead. Keys are compared
/// after unescaping (`"id"` and `"\u0069d"` are the same key).
pub(crate) fn duplicate_key(raw: &str, prefix: &str) -> Option<String> {
    let bytes = raw.as_bytes();
    let mut stack: Vec<Frame> = Vec::new();
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'"' => {
                let start = i;
                i += 1;
                while let Some(&c) = bytes.get(i) {
                    match c {
                        b'\\' => i += 2,
                        b'"' => break,
                        _ => i += 1,
                    }
                }
                if let Some(Frame::Object {
                    keys,
                    key,
                    expect_key,
                }) = stack.last_mut()
                    && *expect_key
                {
                    let literal = raw.get(start..(i + 1).min(raw.len())).unwrap_or_default();
                    let name = serde_json::from_str::<String>(literal)
                        .unwrap_or_else(|_| literal.to_owned());
                    *expect_key = false;
                    if !keys.insert(name.clone()) {
                        *key = name;
                        return Some(frame_path(&stack, prefix));
                    }
                    *key = name;
                }
            }
            b'{' => stack.push(Frame::Object {
                keys: BTreeSet::new(),
                key: String::new(),
                expect_key: true,
            }),
            b'[' => stack.push(Frame::Array { index: 0 }),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => match stack.last_mut() {
                Some(Frame::Object { expect_key, .. }) => *expect_key = true,
                Some(Frame::Array { index }) => *index += 1,
                None => {}
            },
            _ => {}
        }
        i += 1;
    }
    None
}

fn frame_path(stack: &[Frame], prefix: &str) -> String {
    let mut path = prefix.to_owned();
    for frame in stack {
        match frame {
            Frame::Object { key, .. } => path = join(&path, key),
            Frame::Array { index } => path.push_str(&format!("[{index}]")),
        }
    }
    path
}

struct Parser {
    line: usize,
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_owned()
    } else {
        format!("{prefix}.{key}")
    }
}

impl Parser {
    fn wrong(&self, field: &str, expected: &'static str) -> ReplayError {
        ReplayError::WrongType {
            line: self.line,
            field: field.to_owned(),
            expected,
        }
    }

    fn object<'a>(&self, v: &'a Value, field: &str) -> Result<&'a Map<String, Value>> {
        v.as_object().ok_or_else(|| self.wrong(field, "an object"))
    }

    /// Refuses keys outside `required` and `optional`.
    fn only(
        &self,
        obj: &Map<String, Value>,
        prefix: &str,
        required: &[&str],
        optional: &[&str],
    ) -> Result<()> {
        for key in obj.keys() {
            if !required.contains(&key.as_str()) && !optional.contains(&key.as_str()) {
                return Err(ReplayError::UnknownField {
                    line: self.line,
                    field: join(prefix, key),
                });
            }
        }
        for key in required {
            if !obj.contains_key(*key) {
                return Err(ReplayError::MissingField {
                    line: self.line,
                    field: join(prefix, key),
                });
            }
        }
        Ok(())
    }

    fn req<'a>(&self, obj: &'a Map<String, Value>, prefix: &str, key: &str) -> Result<&'a Value> {
        obj.get(key).ok_or_else(|| ReplayError::MissingField {
            line: self.line,
            field: join(prefix, key),
        })
    }

    fn string(&self, v: &Value, field: &str) -> Result<String> {
        v.as_str()
            .map(str::to_owned)
            .ok_or_else(|| self.wrong(field, "a string"))
    }

    fn boolean(&self, v: &Value, field: &str) -> Result<bool> {
        v.as_bool().ok_or_else(|| self.wrong(field, "a boolean"))
    }

    fn uint(&self, v: &Value, field: &str) -> Result<u64> {
        match v.as_u64() {
            Some(n) if n <= MAX_INT => Ok(n),
            _ => Err(self.wrong(field, "an integer in [0, 2^53-1]")),
        }
    }

    fn strings(&self, v: &Value, field: &str) -> Result<Vec<String>> {
        let arr = v
            .as_array()
            .ok_or_else(|| self.wrong(field, "an array of strings"))?;
        arr.iter()
            .enumerate()
            .map(|(i, s)| self.string(s, &format!("{field}[{i}]")))
            .collect()
    }

    fn opt_string(
        &self,
        obj: &Map<String, Value>,
        prefix: &str,
        key: &str,
    ) -> Result<Option<String>> {
        obj.get(key)
            .map(|v| self.string(v, &join(prefix, key)))
            .transpose()
    }

    fn mode(&self, v: &Value) -> Result<Mode> {
        let obj = self.object(v, "mode")?;
        self.only(obj, "mode", &["activation", "staged", "streaming"], &[])?;
        let act = self.string(self.req(obj, "mode", "activation")?, "mode.activation")?;
        let activation = match act.as_str() {
            "hold" => Activation::Hold,
            "handsfree" => Activation::Handsfree,
            _ => {
                return Err(ReplayError::UnknownActivation {
                    line: self.line,
                    field: "mode.activation".to_owned(),
                    activation: act,
                });
            }
        };
        Ok(Mode {
            activation,
            staged: self.boolean(self.req(obj, "mode", "staged")?, "mode.staged")?,
            streaming: self.boolean(self.req(obj, "mode", "streaming")?, "mode.streaming")?,
        })
    }

    fn events(&self, v: &Value) -> Result<Vec<Event>> {
        let arr = v
            .as_array()
            .ok_or_else(|| self.wrong("events", "an array of event objects"))?;
        let mut out: Vec<Event> = Vec::with_capacity(arr.len());
        for (i, ev) in arr.iter().enumerate() {
            let at = format!("events[{i}]");
            let event = self.event(ev, &at)?;
            if let Some(prev) = out.last()
                && event.t_ms < prev.t_ms
            {
                return Err(ReplayError::NonMonotonicTime {
                    line: self.line,
                    field: format!("{at}.t_ms"),
                    t_ms: event.t_ms,
                    previous_ms: prev.t_ms,
                });
            }
            out.push(event);
        }
        Ok(out)
    }

    fn event(&self, v: &Value, at: &str) -> Result<Event> {
        let obj = self.object(v, at)?;
        let t_ms = self.uint(self.req(obj, at, "t_ms")?, &join(at, "t_ms"))?;
        let kind_field = join(at, "kind");
        let kind_name = self.string(self.req(obj, at, "kind")?, &kind_field)?;
        let base = ["t_ms", "kind"];
        let with = |extra: &[&'static str]| -> Vec<&'static str> {
            base.iter().chain(extra.iter()).copied().collect()
        };
        let kind = match kind_name.as_str() {
            "hold_start" => {
                self.only(obj, at, &base, &["duration_ms", "energy_band"])?;
                EventKind::HoldStart {
                    duration_ms: obj
                        .get("duration_ms")
                        .map(|d| self.uint(d, &join(at, "duration_ms")))
                        .transpose()?,
                    energy_band: self.opt_string(obj, at, "energy_band")?,
                }
            }
            "hypothesis" | "late_partial" => {
                self.only(obj, at, &with(&["text"]), &["decode_id"])?;
                let text = self.string(self.req(obj, at, "text")?, &join(at, "text"))?;
                let decode_id = self.opt_string(obj, at, "decode_id")?;
                match kind_name.as_str() {
                    "hypothesis" => EventKind::Hypothesis { text, decode_id },
                    _ => EventKind::LatePartial { text, decode_id },
                }
            }
            "final_decode" => {
                self.only(obj, at, &with(&["text"]), &["decode_id", "class"])?;
                let text = self.string(self.req(obj, at, "text")?, &join(at, "text"))?;
                let decode_id = self.opt_string(obj, at, "decode_id")?;
                let field = join(at, "class");
                let class = match self.opt_string(obj, at, "class")? {
                    None => CandidateClass::Dictation,
                    Some(name) => match CandidateClass::parse(&name) {
                        Some(class) => class,
                        None => {
                            return Err(ReplayError::UnknownClass {
                                line: self.line,
                                field,
                                class: name,
                            });
                        }
                    },
                };
                EventKind::FinalDecode {
                    text,
                    decode_id,
                    class,
                }
            }
            "pause" => {
                self.only(obj, at, &with(&["duration_ms"]), &[])?;
                EventKind::Pause {
                    duration_ms: self
                        .uint(self.req(obj, at, "duration_ms")?, &join(at, "duration_ms"))?,
                }
            }
            "hold_release" | "handsfree_stop" | "stage_commit" | "stage_discard" => {
                self.only(obj, at, &base, &[])?;
                match kind_name.as_str() {
                    "hold_release" => EventKind::HoldRelease,
                    "handsfree_stop" => EventKind::HandsfreeStop,
                    "stage_commit" => EventKind::StageCommit,
                    _ => EventKind::StageDiscard,
                }
            }
            "target" => {
                self.only(
                    obj,
                    at,
                    &with(&["focus_id", "caret_version", "editable"]),
                    &[],
                )?;
                EventKind::Target(TargetSnapshot {
                    focus_id: self.string(self.req(obj, at, "focus_id")?, &join(at, "focus_id"))?,
                    caret_version: self.uint(
                        self.req(obj, at, "caret_version")?,
                        &join(at, "caret_version"),
                    )?,
                    editable: self
                        .boolean(self.req(obj, at, "editable")?, &join(at, "editable"))?,
                })
            }
            "failure" => {
                self.only(obj, at, &with(&["category"]), &[])?;
                let field = join(at, "category");
                let category = self.string(self.req(obj, at, "category")?, &field)?;
                match FailureCategory::parse(&category) {
                    Some(category) => EventKind::Failure { category },
                    None => {
                        return Err(ReplayError::UnknownCategory {
                            line: self.line,
                            field,
                            category,
                        });
                    }
                }
            }
            _ => {
                return Err(ReplayError::UnknownKind {
                    line: self.line,
                    field: kind_field,
                    kind: kind_name,
                });
            }
        };
        Ok(Event { t_ms, kind })
    }

    fn expect(&self, v: &Value) -> Result<Expect> {
        let obj = self.object(v, "expect")?;
        let p = "expect";
        self.only(
            obj,
            p,
            &[
                "target_writes",
                "staged_chunks",
                "finalizations",
                "no_pre_release_writes",
                "no_forbidden_deletions",
            ],
            &["known_defect"],
        )?;
        Ok(Expect {
            target_writes: self
                .strings(self.req(obj, p, "target_writes")?, "expect.target_writes")?,
            staged_chunks: self
                .strings(self.req(obj, p, "staged_chunks")?, "expect.staged_chunks")?,
            finalizations: self.uint(self.req(obj, p, "finalizations")?, "expect.finalizations")?,
            no_pre_release_writes: self.boolean(
                self.req(obj, p, "no_pre_release_writes")?,
                "expect.no_pre_release_writes",
            )?,
            no_forbidden_deletions: self.boolean(
                self.req(obj, p, "no_forbidden_deletions")?,
                "expect.no_forbidden_deletions",
            )?,
            known_defect: self.opt_string(obj, p, "known_defect")?,
        })
    }
}
