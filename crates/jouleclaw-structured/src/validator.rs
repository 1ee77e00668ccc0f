//! The streaming validator: one byte-driven machine generated from a [`Grammar`].

use std::sync::Arc;

use crate::bigint::{self, Big};
use crate::decimal;
use crate::error::{Refusal, RefusalCode};
use crate::frames::{ExtraKeys, Stack};
use crate::grammar::{Bits, Grammar, Kind, MAX_NUMBER_CHARS_CEILING, NONE, NodeId, Wide, bit};
use crate::pattern::{Pattern, Step};
use crate::uniq::Unique;
use jouleclaw_stream::json_scan::{PLAIN, plain_run};
use regex_automata::util::primitives::StateID;

/// Where a refusal's path points: the value being read, or the container that holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Value,
    Container,
}

type Failure = (RefusalCode, Level);

fn at_value(code: RefusalCode) -> Failure {
    (code, Level::Value)
}

fn at_container(code: RefusalCode) -> Failure {
    (code, Level::Container)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// A value of the node (the root, or an object member after its colon).
    Value(NodeId),
    /// The value of a `oneOf` tag.
    TagValue,
    ObjectFirst,
    ObjectKey,
    Colon,
    AfterValue,
    ArrayFirst,
    ArrayNext,
    String,
    Number,
    Literal,
    /// A value of a [`Kind::Parallel`] node, read by its branches' machines side by side.
    Fork,
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    None,
    Property(u16),
    Tag,
    /// A property no declared name matches (an open object's or a free-form object's): the
    /// index of its text in the validator's extra-key list.
    Extra(u32),
}

/// The stack of a new validator: no frame open (the inline slots hold a placeholder, written
/// as a constant so that a new validator stores it without building it first).
const EMPTY_STACK: Stack<Frame> = Stack::new(Frame {
    node: 0,
    is_object: false,
    seen: [0; 4],
    count: 0,
    key: Key::None,
});

#[derive(Debug, Clone, Copy)]
struct Frame {
    /// The object, `oneOf` (until its tag selects a branch) or array node.
    node: NodeId,
    is_object: bool,
    seen: Bits,
    /// Members (object) or elements (array) so far.
    count: u32,
    key: Key,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Key,
    /// A key of an object that allows other properties: buffered, matched at its close (no
    /// key can be refused before it ends, so no byte needs comparing).
    OpenKey,
    TagKey,
    TagValue,
    Value(NodeId),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Escape {
    None,
    Backslash,
    UnicodeHex,
    ExpectBackslash,
    ExpectLowU,
    LowSurrogateHex,
}

#[derive(Debug, Clone)]
struct StringState {
    target: Target,
    /// Characters so far (value strings).
    chars: u32,
    /// Decoded UTF-8 bytes so far.
    decoded_bytes: u32,
    /// The state of the node's member trie for the decoded prefix (keys: declared
    /// properties, ignoring which are present; tag values: branches; value strings: enum
    /// members): the members whose text still matches it.
    state: u32,
    constrained: bool,
    /// Object keys that may be other properties: the text so far is kept in the validator's
    /// extra-key arena (set once it leaves every declared name, or from the start when no
    /// name is declared); while unset, the text is the trie path to `state`.
    spill: bool,
    /// The string's `maxLength` (value strings; `u32::MAX` for keys and tags).
    max: u32,
    /// The string's `minLength` (value strings of a string node; 0 otherwise).
    min: u32,
    /// The state of the string's `pattern` automaton while no match is found yet (value
    /// strings with a `pattern`); `None` without a pattern or once it matched.
    pattern_state: Option<StateID>,
    escape: Escape,
    hex_value: u32,
    hex_digits: u8,
    high_surrogate: u32,
    continuation_left: u8,
    continuation_min: u8,
    continuation_max: u8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NumberPhase {
    Sign,
    Zero,
    Integer,
    Dot,
    Fraction,
    ExponentMark,
    ExponentSign,
    Exponent,
}

#[derive(Debug, Clone)]
struct NumberState {
    node: NodeId,
    is_integer: bool,
    /// An integer with plain `i64` bounds (no `enum`, no wide bound): `[lo, hi]`.
    plain_bounds: Option<(i64, i64)>,
    phase: NumberPhase,
    negative: bool,
    magnitude: u64,
    digits: u32,
    len: usize,
    text: [u8; MAX_NUMBER_CHARS_CEILING],
}

/// What the validator concludes, as [`StructuredValidator::status`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Valid so far; more bytes or `finish` may follow. Carries no code.
    Incomplete,
    /// `finish` accepted a complete document of the grammar's type.
    Accepted,
    /// Refused (sticky).
    Refused(Refusal),
}

/// Resources consumed so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    /// Document bytes consumed (a refused byte is not consumed).
    pub bytes: u64,
    /// Work units: one per byte consumed, plus one per key or enum member compared against a
    /// decoded string byte. At most `bytes x (1 + 256)`.
    pub work: u64,
}

/// The set of bytes the validator would accept next, and whether `finish` would accept now.
///
/// It is computed from the validator's own state and gives the caller no way to change it: a
/// constrained decoder masks its sampling with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExpectedNext {
    bytes: [u64; 4],
    finish: bool,
}

impl ExpectedNext {
    /// `true` when pushing `b` next would not be refused.
    pub fn allows(&self, b: u8) -> bool {
        self.bytes[usize::from(b) / 64] & (1 << (b % 64)) != 0
    }

    /// `true` when `finish` now would accept.
    pub fn can_finish(&self) -> bool {
        self.finish
    }

    /// How many byte values are allowed.
    pub fn count(&self) -> u32 {
        self.bytes.iter().map(|w| w.count_ones()).sum()
    }

    /// The allowed byte values, ascending.
    pub fn iter(&self) -> impl Iterator<Item = u8> + '_ {
        (0..=255u8).filter(|&b| self.allows(b))
    }
}

/// The streaming validator of a [`Grammar`]: push bytes in chunks of any size, then `finish`.
///
/// * [`StructuredValidator::push`] never accepts: `Ok(())` means the bytes so far are a prefix of
///   some valid document. It refuses at the first byte after which no valid document exists,
///   with a stable [`RefusalCode`] code, the byte offset and a JSON Pointer path.
/// * Refusals are sticky: every later `push` and `finish` return the same refusal.
/// * The outcome does not depend on how the bytes are split into chunks.
/// * Memory is bounded by the grammar (one frame per open container, at most the schema's
///   depth; a fixed number buffer), never by the input.
#[derive(Debug, Clone)]
pub struct StructuredValidator {
    grammar: Arc<Grammar>,
    /// How many plain bytes `push` may take one at a time without entering the machine: while
    /// inside an unconstrained value string with no escape or UTF-8 sequence open, the room
    /// left before its `maxLength` and the document limit; 0 otherwise. Set at the end of
    /// every chunk the machine processes, 0 once refused.
    plain_budget: u64,
    offset: u64,
    work: u64,
    refusal: Option<Refusal>,
    accepted: bool,
    cancel_reason: Option<String>,
    stack: Stack<Frame>,
    mode: Mode,
    string: StringState,
    number: NumberState,
    literal: &'static [u8],
    literal_pos: usize,
    /// Other properties of the open objects (stack depth, key text), innermost last, and the
    /// decoded text of the key being read in an object that allows them once it matches no
    /// declared name (bounded by `max_document_bytes`).
    extra: ExtraKeys,
    /// The branches' machines of the value being read side by side ([`Mode::Fork`]), in
    /// declaration order; a branch that refused is dropped. Empty otherwise (never nested).
    forks: Vec<StructuredValidator>,
    /// The refusal of the branch that lived longest, once every branch has refused: reported
    /// at its byte, with its path below the value's.
    fork_refusal: Option<Box<Refusal>>,
    /// Containers open around this machine's root (a branch's machine: the value's depth).
    depth_base: usize,
    /// The elements of the open `uniqueItems` arrays (`None` when the grammar has none).
    unique: Option<Box<Unique>>,
    /// The index in the chunk of the byte [`Self::structural`] reads.
    structural_index: usize,
}

/// How far a branch's machine got through the bytes it was given.
enum Run {
    /// It took them all; the value is still open.
    More,
    /// The value closed at this many bytes.
    Done(usize),
    /// It refused the byte at this index.
    Refused(usize),
}

fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

fn is_value_start(b: u8) -> bool {
    matches!(
        b,
        b'{' | b'[' | b'"' | b'-' | b'0'..=b'9' | b't' | b'f' | b'n'
    )
}

fn bits_any(b: &Bits) -> bool {
    b.iter().any(|w| *w != 0)
}

fn and_not(a: &Bits, b: &Bits) -> Bits {
    [a[0] & !b[0], a[1] & !b[1], a[2] & !b[2], a[3] & !b[3]]
}

/// Whether a magnitude with decimal prefix `prefix` (or exactly 0 when `zero`) can lie in
/// `[min_magnitude, max_magnitude]`.
fn prefix_can_reach(prefix: u64, zero: bool, min_magnitude: i128, max_magnitude: i128) -> bool {
    if min_magnitude > max_magnitude {
        return false;
    }
    if zero {
        return min_magnitude <= 0;
    }
    let (mut lo, mut span) = (i128::from(prefix), 1i128);
    while lo <= max_magnitude {
        if lo + span > min_magnitude {
            return true;
        }
        lo *= 10;
        span *= 10;
    }
    false
}

/// Whether the integer prefix (sign, digits so far as `magnitude`, `digits` of them, a lone `0`
/// when `zero`) can still become an allowed value.
fn integer_prefix_possible(
    lo: i64,
    hi: i64,
    allowed: Option<&[i64]>,
    negative: bool,
    magnitude: u64,
    digits: u32,
    zero: bool,
) -> bool {
    let consistent = |candidate: i64| -> bool {
        if candidate < lo || candidate > hi {
            return false;
        }
        if negative && candidate > 0 || !negative && candidate < 0 {
            return false;
        }
        if digits == 0 {
            return true;
        }
        let candidate_magnitude = candidate.unsigned_abs();
        if zero {
            return candidate_magnitude == 0;
        }
        let mut leading = candidate_magnitude;
        while leading > magnitude {
            leading /= 10;
        }
        leading == magnitude && candidate_magnitude != 0
    };
    if let Some(a) = allowed {
        return a.iter().any(|&candidate| consistent(candidate));
    }
    let (lo, hi) = (i128::from(lo), i128::from(hi));
    if digits == 0 {
        return negative && lo <= 0 && hi >= lo;
    }
    if negative {
        prefix_can_reach(magnitude, zero, (-hi).max(0), -lo)
    } else {
        prefix_can_reach(magnitude, zero, lo.max(0), hi)
    }
}

/// Marks declared property `i` present in object frame `frame` (a repeat is `duplicate_property`).
#[inline(always)]
fn take_declared(frame: &mut Frame, i: usize) -> Result<(), Failure> {
    let Some(word) = frame.seen.get_mut(i / 64) else {
        return Err(at_container(RefusalCode::Syntax));
    };
    let b = 1u64 << (i % 64);
    if *word & b != 0 {
        return Err(at_container(RefusalCode::DuplicateProperty));
    }
    *word |= b;
    frame.count += 1;
    // At most 256 properties.
    frame.key = Key::Property(i as u16);
    Ok(())
}

/// [`integer_prefix_possible`] for bounds beyond the `i64` fast path: `digits` typed so far
/// after the sign (`zero`: exactly `0`).
fn wide_prefix_possible(wide: &Wide, negative: bool, digits: &[u8], zero: bool) -> bool {
    let zero_ok = wide.lo.as_ref().is_none_or(|l| l.neg || l.mag == b"0")
        && wide.hi.as_ref().is_none_or(|h| !h.neg);
    if zero {
        return zero_ok;
    }
    // Magnitude range for the sign: [min_magnitude, max_magnitude] (`None`: unbounded), or empty.
    let (min_magnitude, max_magnitude): (Vec<u8>, Option<Vec<u8>>) = if negative {
        match (&wide.hi, &wide.lo) {
            (_, Some(l)) if !l.neg => return digits.is_empty() && zero_ok,
            (Some(h), l) => (
                if h.neg { h.mag.clone() } else { b"1".to_vec() },
                l.as_ref().map(|l| l.mag.clone()),
            ),
            (None, l) => (b"1".to_vec(), l.as_ref().map(|l| l.mag.clone())),
        }
    } else {
        match (&wide.lo, &wide.hi) {
            (_, Some(h)) if h.neg => return false,
            (Some(l), h) => (
                if l.neg { b"1".to_vec() } else { l.mag.clone() },
                h.as_ref().map(|h| h.mag.clone()),
            ),
            (None, h) => (b"1".to_vec(), h.as_ref().map(|h| h.mag.clone())),
        }
    };
    if digits.is_empty() {
        // Only the sign so far.
        return zero_ok
            || max_magnitude
                .as_ref()
                .is_none_or(|h| bigint::cmp_mag(&min_magnitude, h).is_le());
    }
    bigint::prefix_reaches(digits, &min_magnitude, max_magnitude.as_deref())
}

/// Whether the integer with sign `negative` and decimal digits `digits` (non-empty, no leading
/// zero but a lone `0`) lies within the wide bounds `wide`.
fn wide_contains(wide: &Wide, negative: bool, digits: &[u8]) -> bool {
    let negative = negative && digits != b"0";
    // The order of the integer against bound `b`.
    let cmp = |b: &Big| match (negative, b.neg) {
        (false, true) => core::cmp::Ordering::Greater,
        (true, false) => core::cmp::Ordering::Less,
        (false, false) => bigint::cmp_mag(digits, &b.mag),
        (true, true) => bigint::cmp_mag(&b.mag, digits),
    };
    wide.lo.as_ref().is_none_or(|l| cmp(l).is_ge())
        && wide.hi.as_ref().is_none_or(|h| cmp(h).is_le())
}

/// Writes the first `len` bytes of the key being read into `extra` as its pending text: the
/// key has followed trie `state` of the object in frame `frame` so far, so they are the prefix of
/// any declared name the state stands for.
fn spill_key(
    extra: &mut ExtraKeys,
    grammar: &Grammar,
    frame: Option<&Frame>,
    state: u32,
    len: u32,
) {
    if len == 0 {
        return;
    }
    let Some(frame) = frame else {
        return;
    };
    let Kind::Object { props, .. } = &grammar.nodes[frame.node as usize].kind else {
        return;
    };
    let set = grammar.tries.set(state);
    let member = (0..4)
        .find(|&w| set[w] != 0)
        .map(|w| w * 64 + set[w].trailing_zeros() as usize);
    if let Some(name) = member.and_then(|m| props.get(m)) {
        extra.extend(name.name.as_bytes().get(..len as usize).unwrap_or_default());
    }
}

const TRUE: &[u8] = b"true";
const FALSE: &[u8] = b"false";
const NULL: &[u8] = b"null";

impl StructuredValidator {
    /// A validator at the start of a document of `grammar`'s type.
    pub fn new(grammar: Arc<Grammar>) -> Self {
        let root = grammar.root;
        let grammar_unique = grammar.unique;
        Self {
            plain_budget: 0,
            grammar,
            offset: 0,
            work: 0,
            refusal: None,
            accepted: false,
            cancel_reason: None,
            stack: EMPTY_STACK,
            mode: Mode::Value(root),
            string: StringState {
                target: Target::Key,
                chars: 0,
                decoded_bytes: 0,
                state: NONE,
                constrained: false,
                spill: false,
                max: u32::MAX,
                min: 0,
                pattern_state: None,
                escape: Escape::None,
                hex_value: 0,
                hex_digits: 0,
                high_surrogate: 0,
                continuation_left: 0,
                continuation_min: 0x80,
                continuation_max: 0xbf,
            },
            number: NumberState {
                node: 0,
                is_integer: false,
                plain_bounds: None,
                phase: NumberPhase::Sign,
                negative: false,
                magnitude: 0,
                digits: 0,
                len: 0,
                text: [0; MAX_NUMBER_CHARS_CEILING],
            },
            literal: b"",
            literal_pos: 0,
            extra: ExtraKeys::default(),
            forks: Vec::new(),
            fork_refusal: None,
            depth_base: 0,
            unique: grammar_unique.then(Box::default),
            structural_index: 0,
        }
    }

    /// A branch's machine for a value of `node` opening under `depth_base` containers.
    fn branch(grammar: &Arc<Grammar>, node: NodeId, depth_base: usize) -> Self {
        let mut machine = Self::new(Arc::clone(grammar));
        machine.mode = Mode::Value(node);
        machine.depth_base = depth_base;
        machine
    }

    /// Steps through `chunk` until the value closes, a byte is refused, or the chunk ends.
    fn run_branch(&mut self, chunk: &[u8]) -> Run {
        self.keep_text(chunk);
        let mut i = 0;
        let mut out = Run::More;
        while i < chunk.len() {
            match self.step(chunk, i) {
                Ok(used) => {
                    i += used;
                    if self.mode == Mode::Done {
                        out = Run::Done(i);
                        break;
                    }
                }
                Err(failure) => {
                    self.offset += i as u64;
                    self.work += i as u64;
                    self.refuse(failure);
                    return Run::Refused(i);
                }
            }
        }
        self.offset += i as u64;
        self.work += i as u64;
        out
    }

    /// Keeps `bytes`, the next ones of the document, when the grammar has `uniqueItems`
    /// arrays; the bytes before them only while such an array is open.
    #[inline]
    fn keep_text(&mut self, bytes: &[u8]) {
        if let Some(unique) = self.unique.as_deref_mut() {
            if unique.open.is_empty() {
                unique.doc.clear();
                unique.base = self.offset;
            }
            unique.doc.extend_from_slice(bytes);
        }
    }

    /// The bytes from `chunk[i]` through the live branches of the value read side by side.
    fn fork_step(&mut self, chunk: &[u8], i: usize) -> Result<usize, Failure> {
        if self.forks.is_empty() {
            // Every branch refused at this byte (found on the step before).
            let code = self
                .fork_refusal
                .as_ref()
                .map_or(RefusalCode::Syntax, |refusal| refusal.code);
            return Err(at_value(code));
        }
        let rest = &chunk[i..];
        let (mut live, mut done, mut furthest) = (false, None, None::<usize>);
        let mut work = 0;
        for fork in &mut self.forks {
            let before = fork.work;
            match fork.run_branch(rest) {
                Run::More => live = true,
                Run::Done(end) => {
                    live = true;
                    done = Some(end);
                }
                Run::Refused(refused_at) => {
                    if furthest.is_none_or(|at| refused_at > at) {
                        furthest = Some(refused_at);
                        self.fork_refusal = fork.refusal.clone().map(Box::new);
                    }
                }
            }
            work += fork.work - before;
        }
        self.work += work;
        if live {
            self.fork_refusal = None;
            // The branches read the same bytes: every live one closes the value at one byte.
            if let Some(end) = done {
                self.forks.clear();
                self.complete_value();
                return Ok(end);
            }
            self.forks.retain(|fork| fork.refusal.is_none());
            return Ok(rest.len());
        }
        self.forks.clear();
        match furthest {
            // Consume up to the byte the last branch refused; the next step refuses it.
            Some(refused_at) if refused_at > 0 => Ok(refused_at),
            _ => {
                let code = self
                    .fork_refusal
                    .as_ref()
                    .map_or(RefusalCode::Syntax, |r| r.code);
                Err(at_value(code))
            }
        }
    }

    /// The grammar.
    pub fn grammar(&self) -> &Arc<Grammar> {
        &self.grammar
    }

    /// Where the validator stands.
    pub fn status(&self) -> Status {
        if self.accepted {
            Status::Accepted
        } else if let Some(refusal) = &self.refusal {
            Status::Refused(refusal.clone())
        } else {
            Status::Incomplete
        }
    }

    /// Bytes consumed and work done so far.
    pub fn usage(&self) -> Usage {
        Usage {
            bytes: self.offset,
            work: self.work,
        }
    }

    /// The reason given to [`StructuredValidator::cancel`], if the stream was cancelled.
    pub fn cancel_reason(&self) -> Option<&str> {
        self.cancel_reason.as_deref()
    }

    /// Refuses an in-progress stream with `cancelled` (sticky). A cancel after acceptance or
    /// after a refusal changes nothing.
    pub fn cancel(&mut self, reason: impl Into<String>) {
        if self.accepted || self.refusal.is_some() {
            return;
        }
        self.cancel_reason = Some(reason.into());
        self.refuse(at_value(RefusalCode::Cancelled));
    }

    /// Feeds the next bytes of the document. `Ok(())` means every byte so far can still be
    /// completed into a valid document; it never means accepted (only
    /// [`StructuredValidator::finish`] accepts). A refusal is sticky. After acceptance, a push is
    /// refused with `after_finish` and the acceptance stands.
    #[inline]
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), Refusal> {
        // A byte-wise feed's commonest byte, without entering the machine: one plain byte of
        // an unconstrained value string below its length and the document limit. `step` would
        // take exactly this path for it (`string_byte` counts it as one character).
        if let [byte] = *chunk
            && self.plain_budget > 0
            && PLAIN[usize::from(byte)]
        {
            self.plain_budget -= 1;
            self.string.chars += 1;
            self.offset += 1;
            self.work += 1;
            return Ok(());
        }
        // The same for a token-sized chunk wholly inside such a string: `string_byte` would
        // count its plain run as characters in one step, as long as the budget (length and
        // document room) holds it.
        let n = chunk.len() as u64;
        if n > 1 && self.plain_budget >= n && plain_run(chunk) == chunk.len() {
            self.plain_budget -= n;
            // Below the string's `maxLength` (a u32), by the budget.
            self.string.chars += n as u32;
            self.offset += n;
            self.work += n;
            return Ok(());
        }
        self.push_chunk(chunk)
    }

    /// The machine over a chunk (see [`StructuredValidator::push`]).
    #[inline(never)]
    fn push_chunk(&mut self, chunk: &[u8]) -> Result<(), Refusal> {
        if self.accepted {
            return Err(Refusal {
                code: RefusalCode::AfterFinish,
                offset: self.offset,
                path: String::new(),
            });
        }
        if let Some(refusal) = &self.refusal {
            return Err(refusal.clone());
        }
        let avail = self
            .grammar
            .limits
            .max_document_bytes
            .saturating_sub(self.offset);
        let n = usize::try_from(avail).map_or(chunk.len(), |a| a.min(chunk.len()));
        let (body, over) = chunk.split_at(n);
        self.keep_text(body);
        // Nothing the machine does reads the offset, so it (and the one work unit per byte)
        // is added once the chunk, or the refused byte, is reached.
        let mut i = 0;
        while i < body.len() {
            match self.step(body, i) {
                Ok(used) => i += used,
                Err(failure) => {
                    self.offset += i as u64;
                    self.work += i as u64;
                    return Err(self.refuse(failure));
                }
            }
        }
        self.offset += i as u64;
        self.work += i as u64;
        if !over.is_empty() {
            return Err(self.refuse(at_value(RefusalCode::DocumentTooLarge)));
        }
        // Not with `uniqueItems` arrays: their validator keeps the bytes `push_chunk` reads.
        self.plain_budget = if self.mode == Mode::String
            && self.unique.is_none()
            && !self.string.constrained
            && self.string.continuation_left == 0
            && self.string.escape == Escape::None
        {
            u64::from(self.string.max.saturating_sub(self.string.chars)).min(
                self.grammar
                    .limits
                    .max_document_bytes
                    .saturating_sub(self.offset),
            )
        } else {
            0
        };
        Ok(())
    }

    /// Declares the end of the document: accepts a complete valid document, refuses otherwise
    /// (`truncated`, `empty_document`, or a number at the root that is out of bounds).
    /// Idempotent.
    pub fn finish(&mut self) -> Result<(), Refusal> {
        if self.accepted {
            return Ok(());
        }
        if let Some(refusal) = &self.refusal {
            return Err(refusal.clone());
        }
        match self.mode {
            Mode::Done => {}
            Mode::Number
                if self.stack.is_empty()
                    && matches!(
                        self.number.phase,
                        NumberPhase::Zero
                            | NumberPhase::Integer
                            | NumberPhase::Fraction
                            | NumberPhase::Exponent
                    ) =>
            {
                if let Err(failure) = self.end_number() {
                    return Err(self.refuse(failure));
                }
            }
            Mode::Value(_) if self.stack.is_empty() => {
                return Err(self.refuse(at_value(RefusalCode::EmptyDocument)));
            }
            Mode::Fork => {
                // Truncated inside the value: where the first live branch stands.
                self.fork_refusal = self
                    .forks
                    .first()
                    .and_then(|fork| fork.clone().finish().err())
                    .map(Box::new);
                return Err(self.refuse(at_value(RefusalCode::Truncated)));
            }
            _ => return Err(self.refuse(at_value(RefusalCode::Truncated))),
        }
        self.accepted = true;
        Ok(())
    }

    /// The bytes the validator would accept next and whether `finish` would accept now. Empty
    /// once the validator is refused or accepted. Costs 257 trial steps on copies of the state;
    /// the validator itself (usage counters included) does not change.
    pub fn expected_next(&self) -> ExpectedNext {
        let mut out = ExpectedNext {
            bytes: [0; 4],
            finish: false,
        };
        if self.accepted || self.refusal.is_some() {
            return out;
        }
        for byte in 0..=255u8 {
            let mut trial = self.clone();
            if trial.push(&[byte]).is_ok() {
                out.bytes[usize::from(byte) / 64] |= 1 << (byte % 64);
            }
        }
        out.finish = self.clone().finish().is_ok();
        out
    }

    fn refuse(&mut self, (code, level): Failure) -> Refusal {
        self.plain_budget = 0;
        let mut path = self.path(level);
        if let Some(branch_refusal) = self.fork_refusal.take() {
            path.push_str(&branch_refusal.path);
        }
        self.forks.clear();
        let refusal = Refusal {
            code,
            offset: self.offset,
            path,
        };
        self.refusal = Some(refusal.clone());
        refusal
    }

    fn path(&self, level: Level) -> String {
        let n = match level {
            Level::Value => self.stack.len(),
            Level::Container => self.stack.len().saturating_sub(1),
        };
        let mut path = String::new();
        for frame in (0..n).filter_map(|i| self.stack.get(i)) {
            let segment: Option<String> = if frame.is_object {
                match (&self.grammar.nodes[frame.node as usize].kind, frame.key) {
                    (Kind::Object { props, .. }, Key::Property(i)) => props
                        .get(usize::from(i))
                        .map(|property| property.name.clone()),
                    (Kind::OneOf { tag, .. }, Key::Tag) => Some(tag.clone()),
                    (_, Key::Extra(i)) => self
                        .extra
                        .text(i as usize)
                        .map(|key| String::from_utf8_lossy(key).into_owned()),
                    _ => None,
                }
            } else {
                Some(frame.count.saturating_sub(1).to_string())
            };
            if let Some(segment) = segment {
                path.push('/');
                for c in segment.chars() {
                    match c {
                        '~' => path.push_str("~0"),
                        '/' => path.push_str("~1"),
                        c => path.push(c),
                    }
                }
            }
        }
        path
    }

    /// Processes the byte at `chunk[i]` (inside a string, the run of plain bytes it starts).
    /// Returns how many bytes were consumed.
    // Inlined into both of its loops (`push_chunk` and a branch's `run_branch`): as a call it
    // cost 6 % more instructions per tool call.
    #[inline(always)]
    fn step(&mut self, chunk: &[u8], i: usize) -> Result<usize, Failure> {
        let byte = chunk[i];
        match self.mode {
            Mode::String => self.string_byte(chunk, i),
            Mode::Fork => self.fork_step(chunk, i),
            Mode::Number => {
                if self.number_byte(byte)? {
                    Ok(1)
                } else {
                    self.end_number()?;
                    if is_whitespace(byte) {
                        return Ok(1);
                    }
                    self.structural_index = i;
                    self.structural(byte)?;
                    Ok(1 + self.after_structural(chunk, i + 1))
                }
            }
            Mode::Literal => {
                // As many of the literal's remaining bytes as the chunk matches, at once.
                let rest = self.literal.get(self.literal_pos..).unwrap_or_default();
                let n = chunk[i..]
                    .iter()
                    .zip(rest)
                    .position(|(x, y)| x != y)
                    .unwrap_or(rest.len().min(chunk.len() - i));
                if n == 0 {
                    return Err(at_value(RefusalCode::Syntax));
                }
                self.literal_pos += n;
                if self.literal_pos == self.literal.len() {
                    self.complete_value();
                }
                Ok(n)
            }
            _ => {
                if is_whitespace(byte) {
                    // A run of whitespace.
                    let run = chunk[i..].iter().take_while(|&&c| is_whitespace(c)).count();
                    return Ok(run);
                }
                self.structural_index = i;
                self.structural(byte)?;
                Ok(1 + self.after_structural(chunk, i + 1))
            }
        }
    }

    /// After a structural byte read before `chunk[at]`: the opening quote of an object's first
    /// or next key there, read in the same step as `structural` would (`start_key` leaves the
    /// validator as it was when it refuses, so a refused quote is left to the next step, which
    /// refuses it at its own offset), or, once a value closed, what [`Self::after_value`]
    /// reads. Returns the bytes taken.
    #[inline(always)]
    fn after_structural(&mut self, chunk: &[u8], at: usize) -> usize {
        match (self.mode, chunk.get(at)) {
            (Mode::ObjectFirst | Mode::ObjectKey, Some(b'"')) => self.key_quote(),
            (Mode::AfterValue, Some(b',' | b'}')) => self.after_value_outlined(chunk, at),
            _ => 0,
        }
    }

    /// `start_key` for [`Self::after_structural`]: 1 when it accepts the quote, else 0.
    #[inline(never)]
    fn key_quote(&mut self) -> usize {
        usize::from(self.start_key().is_ok())
    }

    /// [`Self::after_value`] for [`Self::after_structural`].
    #[inline(never)]
    fn after_value_outlined(&mut self, chunk: &[u8], at: usize) -> usize {
        self.after_value(chunk, at)
    }

    fn complete_value(&mut self) {
        self.mode = if self.stack.is_empty() {
            Mode::Done
        } else {
            Mode::AfterValue
        };
    }

    /// A byte outside strings, numbers and literals that is not whitespace.
    fn structural(&mut self, byte: u8) -> Result<(), Failure> {
        match self.mode {
            Mode::Value(node) => self.value_start(node, byte),
            Mode::TagValue => {
                if byte == b'"' {
                    let node = self.top_frame()?.node;
                    if !matches!(&self.grammar.nodes[node as usize].kind, Kind::OneOf { .. }) {
                        return Err(at_value(RefusalCode::Syntax));
                    }
                    let state = self.grammar.tries.root(node);
                    self.start_string(Target::TagValue, state, true);
                    Ok(())
                } else if is_value_start(byte) {
                    Err(at_value(RefusalCode::WrongType))
                } else {
                    Err(at_value(RefusalCode::Syntax))
                }
            }
            Mode::ObjectFirst => match byte {
                b'}' => self.close_object(),
                b'"' => self.start_key(),
                _ => Err(at_container(RefusalCode::Syntax)),
            },
            Mode::ObjectKey => match byte {
                b'"' => self.start_key(),
                _ => Err(at_container(RefusalCode::Syntax)),
            },
            Mode::Colon => {
                if byte != b':' {
                    return Err(at_container(RefusalCode::Syntax));
                }
                let frame = self.top_frame()?;
                self.mode = match (&self.grammar.nodes[frame.node as usize].kind, frame.key) {
                    (Kind::OneOf { .. }, Key::Tag) => Mode::TagValue,
                    (Kind::Object { props, .. }, Key::Property(i)) => {
                        match props.get(usize::from(i)) {
                            Some(property) => Mode::Value(property.node),
                            None => return Err(at_container(RefusalCode::Syntax)),
                        }
                    }
                    (
                        Kind::Object {
                            extra: Some(extra_node),
                            ..
                        },
                        Key::Extra(_),
                    ) => Mode::Value(*extra_node),
                    (Kind::Any, Key::Extra(_)) => Mode::Value(frame.node),
                    _ => return Err(at_container(RefusalCode::Syntax)),
                };
                Ok(())
            }
            Mode::AfterValue => {
                let is_object = self.top_frame()?.is_object;
                match (byte, is_object) {
                    (b',', true) => self.comma_object(),
                    (b',', false) => {
                        self.unique_element()?;
                        let frame = self.top_frame()?;
                        if let Kind::Array { max_items, .. } =
                            self.grammar.nodes[frame.node as usize].kind
                            && frame.count >= max_items
                        {
                            return Err(at_container(RefusalCode::TooManyItems));
                        }
                        self.mode = Mode::ArrayNext;
                        Ok(())
                    }
                    (b'}', true) => self.close_object(),
                    (b']', false) => {
                        self.unique_element()?;
                        self.close_array()
                    }
                    _ => Err(at_container(RefusalCode::Syntax)),
                }
            }
            Mode::ArrayFirst if byte == b']' => self.close_array(),
            Mode::ArrayFirst | Mode::ArrayNext => {
                if !is_value_start(byte) {
                    return Err(at_container(RefusalCode::Syntax));
                }
                let (items, max_items, count) = match (
                    self.stack.last(),
                    self.stack
                        .last()
                        .map(|frame| &self.grammar.nodes[frame.node as usize].kind),
                ) {
                    (
                        Some(frame),
                        Some(Kind::Array {
                            prefix,
                            items,
                            max_items,
                            ..
                        }),
                    ) => (
                        prefix.get(frame.count as usize).copied().unwrap_or(*items),
                        *max_items,
                        frame.count,
                    ),
                    (Some(frame), Some(Kind::Any)) => (frame.node, u32::MAX, frame.count),
                    _ => return Err(at_container(RefusalCode::Syntax)),
                };
                if count >= max_items {
                    return Err(at_container(RefusalCode::TooManyItems));
                }
                if let Some(frame) = self.stack.last_mut() {
                    frame.count += 1;
                }
                self.value_start(items, byte)
            }
            Mode::Done => Err(at_value(RefusalCode::TrailingBytes)),
            Mode::String | Mode::Number | Mode::Literal | Mode::Fork => {
                Err(at_value(RefusalCode::Syntax))
            }
        }
    }

    fn top_frame(&self) -> Result<&Frame, Failure> {
        self.stack.last().ok_or(at_value(RefusalCode::Syntax))
    }

    fn value_start(&mut self, node: NodeId, byte: u8) -> Result<(), Failure> {
        let grammar = &self.grammar;
        if matches!(byte, b'{' | b'[')
            && self.stack.len() + self.depth_base >= grammar.limits.max_depth as usize
            && matches!(
                (&grammar.nodes[node as usize].kind, byte),
                (
                    Kind::Object { .. }
                        | Kind::OneOf { .. }
                        | Kind::Any
                        | Kind::Union { .. }
                        | Kind::Parallel { .. },
                    b'{'
                ) | (
                    Kind::Array { .. } | Kind::Any | Kind::Union { .. } | Kind::Parallel { .. },
                    b'['
                )
            )
        {
            return Err(at_value(RefusalCode::TooDeep));
        }
        match (&grammar.nodes[node as usize].kind, byte) {
            (Kind::Union { by, .. }, _) => {
                let class = match byte {
                    b'{' => 0,
                    b'[' => 1,
                    b'"' => 2,
                    b'-' | b'0'..=b'9' => 3,
                    b't' | b'f' => 4,
                    b'n' => 5,
                    _ => return Err(at_value(RefusalCode::Syntax)),
                };
                let next = by[class];
                if next == NONE {
                    return Err(at_value(RefusalCode::WrongType));
                }
                return self.value_start(next, byte);
            }
            (Kind::Parallel { branches }, _) => {
                let depth = self.stack.len() + self.depth_base;
                let mut forks: Vec<StructuredValidator> = branches
                    .iter()
                    .map(|&n| Self::branch(&self.grammar, n, depth))
                    .collect();
                // Each branch reads the value's first byte; its work is added to this machine's
                // (which counts the byte once itself).
                let mut fail = None;
                for fork in &mut forks {
                    if let Run::Refused(_) = fork.run_branch(&[byte]) {
                        fail = fail.or_else(|| fork.refusal.clone());
                    }
                    self.work += fork.work;
                }
                forks.retain(|fork| fork.refusal.is_none());
                if forks.is_empty() {
                    let code = fail.as_ref().map_or(RefusalCode::WrongType, |r| r.code);
                    self.fork_refusal = fail.map(Box::new);
                    return Err(at_value(code));
                }
                self.forks = forks;
                self.mode = Mode::Fork;
            }
            (Kind::Any | Kind::Object { .. } | Kind::OneOf { .. }, b'{') => {
                self.open_container(node, true);
            }
            (Kind::Any, b'[') => self.open_container(node, false),
            (Kind::Any, b'"') => self.start_string(Target::Value(node), NONE, false),
            (Kind::Any, b't' | b'f' | b'n') => {
                self.literal = match byte {
                    b't' => TRUE,
                    b'f' => FALSE,
                    _ => NULL,
                };
                self.literal_pos = 1;
                self.mode = Mode::Literal;
            }
            (Kind::Array { unique, .. }, b'[') => {
                let unique_items = *unique;
                self.open_container(node, false);
                if unique_items && let Some(unique) = self.unique.as_deref_mut() {
                    unique.open(self.stack.len(), self.offset + self.structural_index as u64);
                }
            }
            (
                Kind::String {
                    min,
                    max,
                    allowed,
                    pattern,
                },
                b'"',
            ) => {
                let (min, max) = (*min, *max);
                let constrained = allowed.is_some() || pattern.is_some();
                let pat = match pattern.as_deref().map(Pattern::start) {
                    None | Some(Step::Matched) => None,
                    Some(Step::Open(id)) => Some(id),
                    // No string matches: refused at its opening quote.
                    Some(Step::Dead) => return Err(at_value(RefusalCode::PatternMismatch)),
                };
                let state = self.grammar.tries.root(node);
                self.begin_string(Target::Value(node), state, constrained, (min, max));
                self.string.pattern_state = pat;
            }
            (Kind::Integer { .. } | Kind::Number { .. } | Kind::Any, b'-' | b'0'..=b'9') => {
                let (is_integer, plain) = match &grammar.nodes[node as usize].kind {
                    Kind::Integer {
                        lo,
                        hi,
                        allowed: None,
                        wide: None,
                    } => (true, Some((*lo, *hi))),
                    Kind::Integer { .. } => (true, None),
                    _ => (false, None),
                };
                let number = &mut self.number;
                number.node = node;
                number.is_integer = is_integer;
                number.plain_bounds = plain;
                number.len = 1;
                number.text[0] = byte;
                number.negative = byte == b'-';
                number.digits = u32::from(byte != b'-');
                number.magnitude =
                    u64::from(byte.wrapping_sub(b'0')).min(9) * u64::from(byte != b'-');
                number.phase = match byte {
                    b'-' => NumberPhase::Sign,
                    b'0' => NumberPhase::Zero,
                    _ => NumberPhase::Integer,
                };
                self.mode = Mode::Number;
                // What `check_integer_prefix` finds first: nothing to check but for an integer, and
                // a first digit within plain bounds is itself a completion.
                let settled = !is_integer
                    || plain.is_some_and(|(lo, hi)| {
                        let first_digit = i64::from(byte.wrapping_sub(b'0'));
                        byte != b'-' && lo <= first_digit && first_digit <= hi
                    });
                if !settled {
                    self.check_integer_prefix()?;
                }
            }
            (Kind::Boolean { allowed }, b't' | b'f') => {
                let value = byte == b't';
                if allowed.as_ref().is_some_and(|a| !a.contains(&value)) {
                    return Err(at_value(RefusalCode::ValueNotAllowed));
                }
                self.literal = if value { TRUE } else { FALSE };
                self.literal_pos = 1;
                self.mode = Mode::Literal;
            }
            (Kind::Null, b'n') => {
                self.literal = NULL;
                self.literal_pos = 1;
                self.mode = Mode::Literal;
            }
            _ if is_value_start(byte) => return Err(at_value(RefusalCode::WrongType)),
            _ => return Err(at_value(RefusalCode::Syntax)),
        }
        Ok(())
    }

    /// Opens an object (`is_object`) or an array of `node`: its frame on the stack, then its
    /// first member or element.
    #[inline]
    fn open_container(&mut self, node: NodeId, is_object: bool) {
        self.stack.push(Frame {
            node,
            is_object,
            seen: [0; 4],
            count: 0,
            key: Key::None,
        });
        self.mode = if is_object {
            Mode::ObjectFirst
        } else {
            Mode::ArrayFirst
        };
    }

    fn start_string(&mut self, target: Target, state: u32, constrained: bool) {
        let bounds = match target {
            Target::Value(node) => match &self.grammar.nodes[node as usize].kind {
                Kind::String { min, max, .. } => (*min, *max),
                _ => (0, u32::MAX),
            },
            _ => (0, u32::MAX),
        };
        self.begin_string(target, state, constrained, bounds);
    }

    /// [`Self::start_string`] with the string's `(minLength, maxLength)` already looked up.
    #[inline]
    fn begin_string(
        &mut self,
        target: Target,
        state: u32,
        constrained: bool,
        (min, max): (u32, u32),
    ) {
        let string = &mut self.string;
        string.max = max;
        string.min = min;
        string.target = target;
        string.chars = 0;
        string.decoded_bytes = 0;
        string.state = state;
        string.spill = state == NONE;
        string.constrained = constrained;
        string.pattern_state = None;
        string.escape = Escape::None;
        string.continuation_left = 0;
        string.hex_digits = 0;
        self.mode = Mode::String;
    }

    fn start_key(&mut self) -> Result<(), Failure> {
        let frame = self.top_frame()?;
        match &self.grammar.nodes[frame.node as usize].kind {
            Kind::OneOf { .. } => {
                self.start_string(Target::TagKey, NONE, true);
                Ok(())
            }
            Kind::Object {
                all,
                max_properties,
                extra,
                ..
            } => {
                if max_properties.is_some_and(|max| frame.count >= max) {
                    return Err(at_container(RefusalCode::TooManyProperties));
                }
                if extra.is_some() {
                    let state = self.grammar.tries.root(frame.node);
                    self.extra.begin();
                    self.start_string(Target::OpenKey, state, true);
                    return Ok(());
                }
                if !bits_any(&and_not(all, &frame.seen)) {
                    return Err(at_container(RefusalCode::UnknownProperty));
                }
                let state = self.grammar.tries.root(frame.node);
                self.start_string(Target::Key, state, true);
                Ok(())
            }
            Kind::Any => {
                self.extra.begin();
                self.start_string(Target::OpenKey, NONE, true);
                Ok(())
            }
            _ => Err(at_container(RefusalCode::Syntax)),
        }
    }

    fn comma_object(&mut self) -> Result<(), Failure> {
        let frame = self.top_frame()?;
        if let Kind::Object {
            all,
            max_properties,
            extra,
            ..
        } = &self.grammar.nodes[frame.node as usize].kind
        {
            if max_properties.is_some_and(|max| frame.count >= max) {
                return Err(at_container(RefusalCode::TooManyProperties));
            }
            if extra.is_none() && !bits_any(&and_not(all, &frame.seen)) {
                return Err(at_container(RefusalCode::UnknownProperty));
            }
        }
        self.mode = Mode::ObjectKey;
        Ok(())
    }

    fn close_object(&mut self) -> Result<(), Failure> {
        let frame = self.top_frame()?;
        match &self.grammar.nodes[frame.node as usize].kind {
            Kind::Object {
                required,
                min_properties,
                dependent,
                ..
            } if !bits_any(&and_not(required, &frame.seen)) => {
                if frame.count < *min_properties {
                    return Err(at_container(RefusalCode::TooFewProperties));
                }
                // A present property's dependents (`dependentRequired`).
                for (i, need) in dependent.iter().flat_map(|d| d.0.iter()) {
                    let i = usize::from(*i);
                    if frame.seen[i / 64] & (1 << (i % 64)) != 0
                        && bits_any(&and_not(need, &frame.seen))
                    {
                        return Err(at_container(RefusalCode::MissingProperty));
                    }
                }
            }
            Kind::Any => {}
            _ => return Err(at_container(RefusalCode::MissingProperty)),
        }
        self.pop_frame();
        Ok(())
    }

    fn close_array(&mut self) -> Result<(), Failure> {
        let frame = self.top_frame()?;
        if let Kind::Array { min_items, .. } = self.grammar.nodes[frame.node as usize].kind
            && frame.count < min_items
        {
            return Err(at_container(RefusalCode::TooFewItems));
        }
        if let Some(unique) = self.unique.as_deref_mut() {
            unique.close(self.stack.len());
        }
        self.pop_frame();
        Ok(())
    }

    /// The element of the array on top ended before the `,` or `]` being read: in a
    /// `uniqueItems` array, refused when an earlier element equals it (`duplicate_item`).
    #[inline]
    fn unique_element(&mut self) -> Result<(), Failure> {
        let depth = self.stack.len();
        let at = self.offset + self.structural_index as u64;
        if let Some(unique) = self.unique.as_deref_mut() {
            match unique.element(depth, at) {
                Some(Ok(work)) => self.work += work,
                Some(Err(())) => return Err(at_container(RefusalCode::DuplicateItem)),
                None => {}
            }
        }
        Ok(())
    }

    /// Closes the innermost container, forgetting its other properties' keys.
    fn pop_frame(&mut self) {
        self.extra.pop_depth(self.stack.len() as u32);
        self.stack.pop();
        self.complete_value();
    }

    #[inline(always)]
    fn string_byte(&mut self, chunk: &[u8], i: usize) -> Result<usize, Failure> {
        let byte = chunk[i];
        if self.string.continuation_left > 0 {
            if byte < self.string.continuation_min || byte > self.string.continuation_max {
                return Err(at_value(RefusalCode::InvalidUtf8));
            }
            self.string.continuation_left -= 1;
            self.string.continuation_min = 0x80;
            self.string.continuation_max = 0xbf;
            self.feed(byte)?;
            return Ok(1);
        }
        match self.string.escape {
            Escape::None => {}
            Escape::Backslash => {
                let decoded = match byte {
                    b'"' => b'"',
                    b'\\' => b'\\',
                    b'/' => b'/',
                    b'b' => 0x08,
                    b'f' => 0x0c,
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'u' => {
                        self.string.escape = Escape::UnicodeHex;
                        self.string.hex_value = 0;
                        self.string.hex_digits = 0;
                        return Ok(1);
                    }
                    _ => return Err(at_value(RefusalCode::InvalidEscape)),
                };
                self.string.escape = Escape::None;
                self.feed(decoded)?;
                return Ok(1);
            }
            Escape::UnicodeHex | Escape::LowSurrogateHex => {
                let digit = match byte {
                    b'0'..=b'9' => byte - b'0',
                    b'a'..=b'f' => byte - b'a' + 10,
                    b'A'..=b'F' => byte - b'A' + 10,
                    _ => return Err(at_value(RefusalCode::InvalidEscape)),
                };
                self.string.hex_value = self.string.hex_value * 16 + u32::from(digit);
                self.string.hex_digits += 1;
                if self.string.hex_digits < 4 {
                    return Ok(1);
                }
                let code_unit = self.string.hex_value;
                let code_point = if self.string.escape == Escape::UnicodeHex {
                    match code_unit {
                        0xd800..=0xdbff => {
                            self.string.high_surrogate = code_unit;
                            self.string.escape = Escape::ExpectBackslash;
                            return Ok(1);
                        }
                        0xdc00..=0xdfff => return Err(at_value(RefusalCode::LoneSurrogate)),
                        _ => code_unit,
                    }
                } else if (0xdc00..=0xdfff).contains(&code_unit) {
                    0x10000 + ((self.string.high_surrogate - 0xd800) << 10) + (code_unit - 0xdc00)
                } else {
                    return Err(at_value(RefusalCode::LoneSurrogate));
                };
                self.string.escape = Escape::None;
                let character =
                    char::from_u32(code_point).ok_or(at_value(RefusalCode::LoneSurrogate))?;
                let mut buf = [0u8; 4];
                for &utf8_byte in character.encode_utf8(&mut buf).as_bytes() {
                    self.feed(utf8_byte)?;
                }
                return Ok(1);
            }
            Escape::ExpectBackslash => {
                return if byte == b'\\' {
                    self.string.escape = Escape::ExpectLowU;
                    Ok(1)
                } else {
                    Err(at_value(RefusalCode::LoneSurrogate))
                };
            }
            Escape::ExpectLowU => {
                return if byte == b'u' {
                    self.string.escape = Escape::LowSurrogateHex;
                    self.string.hex_value = 0;
                    self.string.hex_digits = 0;
                    Ok(1)
                } else {
                    Err(at_value(RefusalCode::LoneSurrogate))
                };
            }
        }
        match byte {
            b'"' => {
                self.end_string()?;
                Ok(1)
            }
            b'\\' => {
                self.char_start()?;
                self.string.escape = Escape::Backslash;
                Ok(1)
            }
            0x00..=0x1f => Err(at_value(RefusalCode::ControlCharacter)),
            0x20..=0x7f => {
                if self.string.target == Target::OpenKey {
                    // A key that may be another property: a run of plain bytes at once.
                    let run = self.open_key_bytes(&chunk[i..]);
                    return Ok(run + self.key_end(chunk, i + run));
                }
                if self.string.constrained {
                    // A run pays off from two bytes on; a last byte goes straight to `feed`.
                    if i + 1 < chunk.len() {
                        let run = match (
                            self.string.target,
                            self.string.state == NONE,
                            self.string.pattern_state,
                        ) {
                            // A `pattern` and no enum: its automaton over the run.
                            (Target::Value(node), true, _) => self.pattern_run(node, &chunk[i..]),
                            // An enum and a `pattern` still open: byte by byte.
                            (Target::Value(_), false, Some(_)) => 0,
                            _ => self.member_run(&chunk[i..]),
                        };
                        if run > 0 {
                            return Ok(run + self.key_end(chunk, i + run));
                        }
                    }
                    self.char_start()?;
                    self.feed(byte)?;
                    return Ok(1);
                }
                // An unconstrained value string: count the run of plain bytes at once.
                let run = if i + 1 == chunk.len() {
                    1
                } else {
                    plain_run(&chunk[i..])
                };
                let max = self.string.max;
                let room = (max - self.string.chars.min(max)) as usize;
                if run > room {
                    if room == 0 {
                        return Err(at_value(RefusalCode::StringTooLong));
                    }
                    self.string.chars += room as u32;
                    return Ok(room);
                }
                self.string.chars += run as u32;
                // The closing quote right after the run ends the string in the same step when
                // `end_string` cannot refuse it (an unconstrained value string is refused at its
                // end only below its `minLength`); otherwise the next step reads the quote.
                if chunk.get(i + run) == Some(&b'"') && self.string.chars >= self.string.min {
                    self.complete_value();
                    return Ok(run + 1 + self.after_value(chunk, i + run + 1));
                }
                Ok(run)
            }
            _ => {
                let (need, lo, hi) = match byte {
                    0xc2..=0xdf => (1, 0x80, 0xbf),
                    0xe0 => (2, 0xa0, 0xbf),
                    0xed => (2, 0x80, 0x9f),
                    0xe1..=0xef => (2, 0x80, 0xbf),
                    0xf0 => (3, 0x90, 0xbf),
                    0xf1..=0xf3 => (3, 0x80, 0xbf),
                    0xf4 => (3, 0x80, 0x8f),
                    _ => return Err(at_value(RefusalCode::InvalidUtf8)),
                };
                self.char_start()?;
                self.feed(byte)?;
                self.string.continuation_left = need;
                self.string.continuation_min = lo;
                self.string.continuation_max = hi;
                Ok(1)
            }
        }
    }

    /// The plain bytes at the start of `bytes` that continue a key of a closed object, a tag
    /// value or an enum string without refusal, taken at once: exactly what `char_start` and
    /// `feed` would do one byte at a time, stopping before the first byte they would refuse
    /// (which the caller then feeds alone). Returns how many were taken.
    #[inline]
    fn member_run(&mut self, bytes: &[u8]) -> usize {
        let string = &mut self.string;
        let (seen, room) = match string.target {
            Target::Key => match self.stack.last() {
                Some(frame) => (Some(&frame.seen), usize::MAX),
                None => return 0,
            },
            Target::TagValue => (None, usize::MAX),
            Target::Value(_) => (None, (string.max - string.chars.min(string.max)) as usize),
            Target::TagKey => {
                // The plain bytes that continue the tag's name, compared at once (as `feed`
                // would one by one: one work unit each); the first other byte is left to `feed`.
                let Some(frame) = self.stack.last() else {
                    return 0;
                };
                let Kind::OneOf { tag, .. } = &self.grammar.nodes[frame.node as usize].kind else {
                    return 0;
                };
                let rest = tag
                    .as_bytes()
                    .get(string.decoded_bytes as usize..)
                    .unwrap_or_default();
                let run = plain_run(bytes);
                let n = bytes[..run]
                    .iter()
                    .zip(rest)
                    .take_while(|(key_byte, tag_byte)| key_byte == tag_byte)
                    .count();
                // At most the tag's length (a name of the schema, at most 1 MiB).
                string.decoded_bytes += n as u32;
                self.work += n as u64;
                return n;
            }
            _ => return 0,
        };
        // Plain member texts stop the walk at any byte that is not plain by themselves.
        let run = if self.grammar.tries.plain(string.state) {
            bytes.len()
        } else {
            plain_run(bytes)
        };
        let (n, state, work) = self
            .grammar
            .tries
            .walk(string.state, &bytes[..run], room, seen);
        string.state = state;
        // `n` is at most a member text's length (1 MiB).
        string.decoded_bytes += n as u32;
        if let Target::Value(_) = string.target {
            string.chars += n as u32;
        }
        self.work += work;
        n
    }

    /// After a plain run of a key or an enum string ending before `chunk[at]`: when that byte
    /// is the closing quote and the key is a declared property the object does not have yet,
    /// ends the key as `end_string` would (it cannot refuse it), and when the colon follows,
    /// reads it as `structural` would (and a string value's opening quote after it); when the
    /// enum string is a member at least `minLength` long, ends it and reads what
    /// [`Self::after_value`] reads. Returns the bytes taken; 0 leaves every case that could
    /// refuse, and every other string, to the steps that follow.
    #[inline]
    fn key_end(&mut self, chunk: &[u8], at: usize) -> usize {
        if chunk.get(at) != Some(&b'"') {
            return 0;
        }
        let open = match self.string.target {
            Target::Key => false,
            Target::OpenKey if !self.string.spill => true,
            Target::Value(_) => {
                // No pattern left to match (`member_run` runs only then; checked again here):
                // `end_string` refuses only below `minLength` or for no member.
                if self.string.pattern_state.is_none()
                    && self.grammar.tries.exact(self.string.state).is_some()
                    && self.string.chars >= self.string.min
                {
                    self.complete_value();
                    return 1 + self.after_value(chunk, at + 1);
                }
                return 0;
            }
            _ => return 0,
        };
        let grammar = &*self.grammar;
        let Some(property) = grammar.tries.exact(self.string.state) else {
            return 0;
        };
        let Some(frame) = self.stack.last_mut() else {
            return 0;
        };
        let Kind::Object { props, .. } = &grammar.nodes[frame.node as usize].kind else {
            return 0;
        };
        if take_declared(frame, property).is_err() {
            return 0;
        }
        if open {
            // Every declared name is compared against the key (as `end_string` counts).
            self.work += props.len() as u64;
        }
        match (chunk.get(at + 1), props.get(property)) {
            (Some(b':'), Some(declared)) => {
                let node = declared.node;
                // A string value's opening quote right after the colon starts it, as
                // `value_start` would (it cannot refuse the quote of a string node without a
                // `pattern`).
                if chunk.get(at + 2) == Some(&b'"')
                    && let Kind::String {
                        min,
                        max,
                        allowed,
                        pattern: None,
                    } = &grammar.nodes[node as usize].kind
                {
                    let (min, max, constrained) = (*min, *max, allowed.is_some());
                    let state = grammar.tries.root(node);
                    self.begin_string(Target::Value(node), state, constrained, (min, max));
                    return 3;
                }
                self.mode = Mode::Value(node);
                2
            }
            _ => {
                self.mode = Mode::Colon;
                1
            }
        }
    }

    /// After a value of an object completed before `chunk[at]`: a comma there (and the next
    /// key's opening quote after it) or the object's closing brace, read in the same step as
    /// `structural` would when it accepts them. Each of `comma_object`, `start_key` and
    /// `close_object` leaves the validator as it was when it refuses, so a refused byte is
    /// left to the next step, which refuses it at its own offset. Returns the bytes taken.
    #[inline]
    fn after_value(&mut self, chunk: &[u8], at: usize) -> usize {
        if self.mode != Mode::AfterValue || !self.stack.last().is_some_and(|frame| frame.is_object)
        {
            return 0;
        }
        match chunk.get(at) {
            Some(b',') => {
                if self.comma_object().is_err() {
                    return 0;
                }
                if chunk.get(at + 1) == Some(&b'"') && self.start_key().is_ok() {
                    2
                } else {
                    1
                }
            }
            Some(b'}') => usize::from(self.close_object().is_ok()),
            _ => 0,
        }
    }

    /// The plain bytes at the start of `bytes` of a value string with a `pattern` and no enum
    /// that neither pass its `maxLength` nor make its pattern impossible, taken at once:
    /// exactly what `char_start` and `feed` would do one byte at a time, stopping before the
    /// first byte they would refuse (which the caller then feeds alone).
    #[inline]
    fn pattern_run(&mut self, node: NodeId, bytes: &[u8]) -> usize {
        let string = &mut self.string;
        let room = (string.max - string.chars.min(string.max)) as usize;
        let run = plain_run(bytes).min(room);
        let mut n = run;
        if let (
            Some(mut id),
            Kind::String {
                pattern: Some(p), ..
            },
        ) = (
            string.pattern_state,
            &self.grammar.nodes[node as usize].kind,
        ) {
            n = 0;
            let mut open = true;
            while n < run {
                match p.next(id, bytes[n]) {
                    Step::Open(next) => {
                        id = next;
                        n += 1;
                    }
                    // Matched: the rest of the string cannot undo it.
                    Step::Matched => {
                        open = false;
                        n = run;
                    }
                    // Left for `feed` to refuse.
                    Step::Dead => break,
                }
            }
            string.pattern_state = open.then_some(id);
        }
        // `n` is at most the string's `maxLength` room (a u32).
        string.chars += n as u32;
        string.decoded_bytes += n as u32;
        n
    }

    /// Plain bytes at the start of `rest` (at least its first) of a key that may be another
    /// property; returns how many were taken.
    fn open_key_bytes(&mut self, rest: &[u8]) -> usize {
        let grammar = &*self.grammar;
        let string = &mut self.string;
        if !string.spill && grammar.tries.plain(string.state) {
            // Plain declared names: the walk stops at any byte that is not plain by itself.
            let (n, state, _) = grammar.tries.walk(string.state, rest, usize::MAX, None);
            string.state = state;
            // At most a name's length (1 MiB).
            string.decoded_bytes += n as u32;
            match rest.get(n) {
                Some(&byte) if PLAIN[usize::from(byte)] => {}
                _ => return n,
            }
            // A plain byte no declared name continues with: the key is another property.
            string.spill = true;
            spill_key(
                &mut self.extra,
                grammar,
                self.stack.last(),
                state,
                string.decoded_bytes,
            );
            let more = plain_run(rest.get(n..).unwrap_or_default());
            self.extra.extend(rest.get(n..n + more).unwrap_or_default());
            string.decoded_bytes = string.decoded_bytes.saturating_add(more as u32);
            return n + more;
        }
        let run = plain_run(rest).max(1);
        let bytes = rest.get(..run).unwrap_or_default();
        self.open_key_run(bytes);
        run
    }

    /// A run of plain bytes of a key that may be another property.
    fn open_key_run(&mut self, bytes: &[u8]) {
        let string = &mut self.string;
        let at = string.decoded_bytes;
        // Below `max_document_bytes`, checked below 2^53; a key longer than u32::MAX bytes
        // leaves every declared name long before (they are at most 1 MiB).
        string.decoded_bytes = string.decoded_bytes.saturating_add(bytes.len() as u32);
        if string.spill {
            self.extra.extend(bytes);
            return;
        }
        let grammar = &*self.grammar;
        let (n, state, _) = grammar.tries.walk(string.state, bytes, usize::MAX, None);
        string.state = state;
        if n < bytes.len() {
            string.spill = true;
            let len = at.saturating_add(n as u32);
            spill_key(&mut self.extra, grammar, self.stack.last(), state, len);
            self.extra.extend(bytes.get(n..).unwrap_or_default());
        }
    }

    /// A character starts (a plain byte, a UTF-8 lead byte, or the backslash of an escape).
    fn char_start(&mut self) -> Result<(), Failure> {
        if let Target::Value(_) = self.string.target {
            if self.string.chars >= self.string.max {
                return Err(at_value(RefusalCode::StringTooLong));
            }
            self.string.chars += 1;
        }
        Ok(())
    }

    /// One decoded UTF-8 byte of the string's value.
    fn feed(&mut self, byte: u8) -> Result<(), Failure> {
        if !self.string.constrained {
            return Ok(());
        }
        let grammar = &*self.grammar;
        let string = &mut self.string;
        let pos = string.decoded_bytes;
        string.decoded_bytes += 1;
        match string.target {
            Target::Key => {
                let Some(frame) = self.stack.last() else {
                    return Err(at_value(RefusalCode::Syntax));
                };
                // Every member with the prefix is compared against the byte.
                self.work += grammar.tries.count(string.state);
                let Some(next) = grammar.tries.next(string.state, byte) else {
                    return Err(at_container(RefusalCode::UnknownProperty));
                };
                string.state = next;
                // Only present properties (a repeat) or undeclared names (unknown) can follow:
                // nothing repeats yet, so the key is one the object no longer allows. A repeat
                // is `duplicate_property` only when it is whole (at its closing quote).
                if !bits_any(&and_not(&grammar.tries.set(next), &frame.seen)) {
                    return Err(at_container(RefusalCode::UnknownProperty));
                }
            }
            Target::OpenKey => {
                if string.spill {
                    self.extra.push(byte);
                } else if let Some(next) = grammar.tries.next(string.state, byte) {
                    string.state = next;
                } else {
                    string.spill = true;
                    spill_key(
                        &mut self.extra,
                        grammar,
                        self.stack.last(),
                        string.state,
                        pos,
                    );
                    self.extra.push(byte);
                }
            }
            Target::TagKey => {
                let Some(frame) = self.stack.last() else {
                    return Err(at_value(RefusalCode::Syntax));
                };
                let Kind::OneOf { tag, .. } = &grammar.nodes[frame.node as usize].kind else {
                    return Err(at_value(RefusalCode::Syntax));
                };
                self.work += 1;
                if tag.as_bytes().get(pos as usize) != Some(&byte) {
                    return Err(at_container(RefusalCode::TagNotFirst));
                }
            }
            Target::TagValue => {
                self.work += grammar.tries.count(string.state);
                let Some(next) = grammar.tries.next(string.state, byte) else {
                    return Err(at_value(RefusalCode::UnknownTag));
                };
                string.state = next;
            }
            Target::Value(node) => {
                if string.state != NONE {
                    self.work += grammar.tries.count(string.state);
                    let Some(next) = grammar.tries.next(string.state, byte) else {
                        return Err(at_value(RefusalCode::ValueNotAllowed));
                    };
                    string.state = next;
                }
                if let (
                    Some(id),
                    Kind::String {
                        pattern: Some(p), ..
                    },
                ) = (string.pattern_state, &grammar.nodes[node as usize].kind)
                {
                    string.pattern_state = match p.next(id, byte) {
                        Step::Open(next) => Some(next),
                        Step::Matched => None,
                        Step::Dead => return Err(at_value(RefusalCode::PatternMismatch)),
                    };
                }
            }
        }
        Ok(())
    }

    fn end_string(&mut self) -> Result<(), Failure> {
        let grammar = &*self.grammar;
        let pos = self.string.decoded_bytes;
        // The member whose text is the whole string.
        let exact = grammar.tries.exact(self.string.state);
        match self.string.target {
            Target::Key => {
                let Some(frame) = self.stack.last_mut() else {
                    return Err(at_value(RefusalCode::Syntax));
                };
                match exact {
                    Some(i) => {
                        take_declared(frame, i)?;
                        self.mode = Mode::Colon;
                    }
                    None => return Err(at_container(RefusalCode::UnknownProperty)),
                }
            }
            Target::OpenKey => {
                let depth = self.stack.len() as u32;
                let Some(frame) = self.stack.last_mut() else {
                    return Err(at_value(RefusalCode::Syntax));
                };
                let declared = match &grammar.nodes[frame.node as usize].kind {
                    Kind::Object { props, .. } => {
                        // Every declared name is compared against the key.
                        self.work += props.len() as u64;
                        if self.string.spill {
                            None
                        } else {
                            grammar.tries.exact(self.string.state)
                        }
                    }
                    _ => None,
                };
                if let Some(i) = declared {
                    take_declared(frame, i)?;
                } else {
                    if !self.string.spill {
                        spill_key(
                            &mut self.extra,
                            grammar,
                            Some(frame),
                            self.string.state,
                            pos,
                        );
                    }
                    let Some(i) = self.extra.commit(depth) else {
                        return Err(at_container(RefusalCode::DuplicateProperty));
                    };
                    frame.count += 1;
                    // Index of a key of the document, which is read in memory.
                    frame.key = Key::Extra(i as u32);
                }
                self.mode = Mode::Colon;
            }
            Target::TagKey => {
                let Some(frame) = self.stack.last_mut() else {
                    return Err(at_value(RefusalCode::Syntax));
                };
                let Kind::OneOf { tag, .. } = &grammar.nodes[frame.node as usize].kind else {
                    return Err(at_value(RefusalCode::Syntax));
                };
                if pos as usize != tag.len() {
                    return Err(at_container(RefusalCode::TagNotFirst));
                }
                frame.key = Key::Tag;
                self.mode = Mode::Colon;
            }
            Target::TagValue => {
                let Some(frame) = self.stack.last_mut() else {
                    return Err(at_value(RefusalCode::Syntax));
                };
                let Kind::OneOf { branches, .. } = &grammar.nodes[frame.node as usize].kind else {
                    return Err(at_value(RefusalCode::Syntax));
                };
                let Some(j) = exact else {
                    return Err(at_value(RefusalCode::UnknownTag));
                };
                let br = &branches[j];
                frame.node = br.node;
                frame.seen = bit(usize::from(br.tag_index));
                frame.count = 1;
                frame.key = Key::Property(br.tag_index);
                self.complete_value();
            }
            Target::Value(node) => {
                if let Kind::String {
                    min,
                    allowed,
                    pattern,
                    ..
                } = &grammar.nodes[node as usize].kind
                {
                    if self.string.chars < *min {
                        return Err(at_value(RefusalCode::StringTooShort));
                    }
                    if allowed.is_some() && exact.is_none() {
                        return Err(at_value(RefusalCode::ValueNotAllowed));
                    }
                    if let (Some(p), Some(id)) = (pattern, self.string.pattern_state)
                        && !p.ends_matched(id)
                    {
                        return Err(at_value(RefusalCode::PatternMismatch));
                    }
                }
                self.complete_value();
            }
        }
        Ok(())
    }

    /// `Ok(true)`: the byte continues the number; `Ok(false)`: it ends it (not consumed).
    #[inline(always)]
    fn number_byte(&mut self, byte: u8) -> Result<bool, Failure> {
        let number = &mut self.number;
        let next = match (number.phase, byte) {
            (NumberPhase::Sign, b'0') => NumberPhase::Zero,
            (NumberPhase::Sign, b'1'..=b'9') | (NumberPhase::Integer, b'0'..=b'9') => {
                NumberPhase::Integer
            }
            (NumberPhase::Zero, b'0'..=b'9') => return Err(at_value(RefusalCode::Syntax)),
            (NumberPhase::Zero | NumberPhase::Integer, b'.') => NumberPhase::Dot,
            (NumberPhase::Zero | NumberPhase::Integer | NumberPhase::Fraction, b'e' | b'E') => {
                NumberPhase::ExponentMark
            }
            (NumberPhase::Dot | NumberPhase::Fraction, b'0'..=b'9') => NumberPhase::Fraction,
            (NumberPhase::ExponentMark, b'+' | b'-') => NumberPhase::ExponentSign,
            (
                NumberPhase::ExponentMark | NumberPhase::ExponentSign | NumberPhase::Exponent,
                b'0'..=b'9',
            ) => NumberPhase::Exponent,
            (
                NumberPhase::Sign
                | NumberPhase::Dot
                | NumberPhase::ExponentMark
                | NumberPhase::ExponentSign,
                _,
            ) => return Err(at_value(RefusalCode::Syntax)),
            _ => return Ok(false),
        };
        if number.is_integer && matches!(next, NumberPhase::Dot | NumberPhase::ExponentMark) {
            return Err(at_value(RefusalCode::WrongType));
        }
        if number.len >= self.grammar.limits.max_number_chars as usize {
            return Err(at_value(RefusalCode::NumberTooLong));
        }
        number.text[number.len] = byte;
        number.len += 1;
        number.phase = next;
        if number.is_integer {
            number.digits += 1;
            number.magnitude = number
                .magnitude
                .saturating_mul(10)
                .saturating_add(u64::from(byte - b'0'));
            // Below 10^18 digits `magnitude` is exact: an integer so far in plain bounds is itself
            // a completion (what `check_integer_prefix` finds first, without the grammar).
            if let Some((lo, hi)) = number.plain_bounds
                && number.digits <= 18
            {
                let magnitude = number.magnitude as i64;
                let value = if number.negative {
                    -magnitude
                } else {
                    magnitude
                };
                if lo <= value && value <= hi {
                    return Ok(true);
                }
            }
            self.check_integer_prefix()?;
        }
        Ok(true)
    }

    fn check_integer_prefix(&self) -> Result<(), Failure> {
        let number = &self.number;
        if !number.is_integer {
            return Ok(());
        }
        let Kind::Integer {
            lo,
            hi,
            allowed,
            wide,
        } = &self.grammar.nodes[number.node as usize].kind
        else {
            return Ok(());
        };
        if let Some(bounds) = wide {
            let digits = &number.text[usize::from(number.negative)..number.len];
            // The integer typed so far is itself a completion: in bounds, it can be one.
            if !digits.is_empty() && wide_contains(bounds, number.negative, digits) {
                return Ok(());
            }
            return if wide_prefix_possible(
                bounds,
                number.negative,
                digits,
                number.phase == NumberPhase::Zero,
            ) {
                Ok(())
            } else {
                let value = Big::from_token(&number.text[..number.len]);
                Err(at_value(match &bounds.hi {
                    Some(high) if value > *high => RefusalCode::AboveMaximum,
                    _ if number.digits > 0
                        && bounds.lo.as_ref().is_some_and(|low| value < *low) =>
                    {
                        RefusalCode::BelowMinimum
                    }
                    _ if number.negative && number.digits == 0 => RefusalCode::BelowMinimum,
                    _ => RefusalCode::AboveMaximum,
                }))
            };
        }
        if allowed.is_none() && (1..=18).contains(&number.digits) {
            // Below 10^18: `magnitude` is exact. In bounds, the integer so far is a completion.
            let magnitude = number.magnitude as i64;
            let value = if number.negative {
                -magnitude
            } else {
                magnitude
            };
            if *lo <= value && value <= *hi {
                return Ok(());
            }
        }
        if integer_prefix_possible(
            *lo,
            *hi,
            allowed.as_deref(),
            number.negative,
            number.magnitude,
            number.digits,
            number.phase == NumberPhase::Zero,
        ) {
            return Ok(());
        }
        Err(at_value(self.integer_refusal_code(
            *lo,
            *hi,
            allowed.is_some(),
        )))
    }

    fn integer_refusal_code(&self, lo: i64, hi: i64, enumerated: bool) -> RefusalCode {
        let number = &self.number;
        let value = if number.negative {
            -i128::from(number.magnitude)
        } else {
            i128::from(number.magnitude)
        };
        if value > i128::from(hi) {
            RefusalCode::AboveMaximum
        } else if value < i128::from(lo) || (number.negative && number.digits == 0 && lo > 0) {
            RefusalCode::BelowMinimum
        } else if enumerated {
            RefusalCode::ValueNotAllowed
        } else {
            RefusalCode::AboveMaximum
        }
    }

    fn end_number(&mut self) -> Result<(), Failure> {
        let number = &self.number;
        if !matches!(
            number.phase,
            NumberPhase::Zero
                | NumberPhase::Integer
                | NumberPhase::Fraction
                | NumberPhase::Exponent
        ) {
            return Err(at_value(RefusalCode::Syntax));
        }
        match &self.grammar.nodes[number.node as usize].kind {
            Kind::Integer {
                wide: Some(bounds), ..
            } => {
                let value = Big::from_token(&number.text[..number.len]);
                if bounds.lo.as_ref().is_some_and(|low| value < *low) {
                    return Err(at_value(RefusalCode::BelowMinimum));
                }
                if bounds.hi.as_ref().is_some_and(|high| value > *high) {
                    return Err(at_value(RefusalCode::AboveMaximum));
                }
            }
            Kind::Integer {
                lo, hi, allowed, ..
            } => {
                let value = if number.negative {
                    -i128::from(number.magnitude)
                } else {
                    i128::from(number.magnitude)
                };
                if value < i128::from(*lo) {
                    return Err(at_value(RefusalCode::BelowMinimum));
                }
                if value > i128::from(*hi) {
                    return Err(at_value(RefusalCode::AboveMaximum));
                }
                if let Some(members) = allowed
                    && !members.iter().any(|&member| i128::from(member) == value)
                {
                    return Err(at_value(RefusalCode::ValueNotAllowed));
                }
            }
            Kind::Number {
                min,
                max,
                xmin,
                xmax,
                allowed,
            } => {
                let token = decimal::Prepared::new(&number.text[..number.len]);
                let compare = |bound: &Option<crate::grammar::Bound>| {
                    bound.as_ref().map(|limit| {
                        decimal::cmp_prepared(&token, &decimal::Prepared::new(limit.0.as_bytes()))
                    })
                };
                if compare(min).is_some_and(|order| order.is_lt())
                    || compare(xmin).is_some_and(|order| order.is_le())
                {
                    return Err(at_value(RefusalCode::BelowMinimum));
                }
                if compare(max).is_some_and(|order| order.is_gt())
                    || compare(xmax).is_some_and(|order| order.is_ge())
                {
                    return Err(at_value(RefusalCode::AboveMaximum));
                }
                if let Some(members) = allowed
                    && !members.iter().any(|limit| {
                        decimal::cmp_prepared(&token, &decimal::Prepared::new(limit.0.as_bytes()))
                            .is_eq()
                    })
                {
                    return Err(at_value(RefusalCode::ValueNotAllowed));
                }
            }
            Kind::Any => {}
            _ => return Err(at_value(RefusalCode::Syntax)),
        }
        self.complete_value();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Limits;

    /// The shortcuts in `push` (one byte, and a chunk inside a plain string) against the
    /// machine, in chunks of every size from 1 to 6, at the string and document limits.
    #[test]
    fn the_string_shortcuts_are_the_machine() {
        let schema = br#"{"type":"array","items":{"type":"string","maxLength":7}}"#;
        let limited = Limits {
            max_document_bytes: 24,
            ..Limits::DEFAULT
        };
        for grammar in [
            Grammar::compile(schema).expect("compiles"),
            Grammar::compile_with_limits(schema, limited).expect("compiles"),
        ] {
            let grammar = Arc::new(grammar);
            for doc in [
                &br#"["abc","abcdefgh","x\"y"]"#[..],
                br#"["abcdefg","abcdef","a"]"#,
                b"[\"\xc3\xa9abcdef\"]",
                b"[\"ab\"] x",
                br#"["abcdefg","abcdefg","abcdefg"]"#,
            ] {
                for size in 1..=6 {
                    let mut fast = StructuredValidator::new(Arc::clone(&grammar));
                    let mut full = StructuredValidator::new(Arc::clone(&grammar));
                    for c in doc.chunks(size) {
                        assert_eq!(fast.push(c), full.push_chunk(c), "{size}");
                        assert_eq!(fast.usage(), full.usage(), "{size}");
                        assert_eq!(fast.string.chars, full.string.chars, "{size}");
                    }
                    assert_eq!(fast.finish(), full.finish());
                    assert_eq!(fast.status(), full.status());
                }
            }
        }
    }

    /// A step that reads past a string's run (its closing quote, a declared key's colon and
    /// a string value's quote, an enum member's end, the comma and next key's quote or the
    /// closing brace after a value) does what the steps one byte at a time do, and leaves
    /// each byte that one of them refuses to be refused at its own offset: a repeated key
    /// at its closing quote, a string below its `minLength` or an enum string that is no
    /// member at their closing quotes, a comma past `maxProperties` or with every declared
    /// property present, a closing brace with one missing; an enum member that its `pattern`
    /// refuses at the closing quote, a string its `pattern` refuses at its first byte.
    #[test]
    fn the_bytes_a_step_reads_past_a_run_are_the_machine() {
        let closed = br#"{"type":"object","additionalProperties":false,"maxProperties":3,
            "required":["ab","u"],"properties":{"a":{"type":"string"},"ab":{"type":"string",
            "minLength":2},"u":{"enum":["cm","in"]},"n":{"type":"integer"}}}"#;
        let open = br#"{"type":"object","required":["city"],"properties":{"city":{"type":
            "string","minLength":2},"unit":{"enum":["c","f"]}}}"#;
        let pattern = br#"{"type":"object","properties":{"e":{"type":"string","enum":["ab","abc"],
            "pattern":"c$"},
            "p":{"type":"string","pattern":"^a"},"q":{"type":"string","pattern":"^$"}}}"#;
        let docs: [(&[u8], &[&[u8]]); 3] = [
            (
                closed,
                &[
                    br#"{"ab":"xy","u":"cm","a":"z"}"#,
                    br#"{"ab":"xy","ab":"z"}"#,
                    br#"{"a":"q","a":"q"}"#,
                    br#"{"ab":"x","u":"cm"}"#,
                    br#"{"u":"c","ab":"xy"}"#,
                    br#"{"u":"cmx","ab":"xy"}"#,
                    br#"{"ab":"xy","u":"cm","a":"z","n":1}"#,
                    br#"{"ab":"xy","u":"cm","a":"z",}"#,
                    br#"{"ab":"xy","a":"z"}"#,
                    br#"{"ab":"xy","u":"cm"}x"#,
                ],
            ),
            (
                open,
                &[
                    br#"{"city":"Lisbon","unit":"c","x":1}"#,
                    br#"{"city":"Lisbon","city":"Porto"}"#,
                    br#"{"city":"L"}"#,
                    br#"{"unit":"k","city":"Lisbon"}"#,
                    br#"{"unit":"c"}"#,
                    br#"{"cit":"Lisbon"}"#,
                ],
            ),
            (
                pattern,
                &[
                    br#"{"e":"abc","p":"ax","q":""}"#,
                    br#"{"e":"ab"}"#,
                    br#"{"p":"b"}"#,
                    br#"{"q":"x"}"#,
                ],
            ),
        ];
        for (schema, docs) in docs {
            let grammar = Arc::new(Grammar::compile_json_schema(schema).expect("compiles"));
            for doc in docs {
                let mut whole = StructuredValidator::new(Arc::clone(&grammar));
                let pushed = whole.push(doc);
                let mut bytewise = StructuredValidator::new(Arc::clone(&grammar));
                let mut first = Ok(());
                for b in doc.chunks(1) {
                    if let Err(e) = bytewise.push(b)
                        && first.is_ok()
                    {
                        first = Err(e);
                    }
                }
                let name = String::from_utf8_lossy(doc);
                assert_eq!(pushed, first, "{name}");
                assert_eq!(whole.usage(), bytewise.usage(), "{name}");
                assert_eq!(whole.finish(), bytewise.finish(), "{name}");
            }
        }
    }
}
