//! `pattern` (the JSON Schema profile): an ECMA-262 regular expression, read as JSON Schema
//! reads it (a match anywhere in the string), compiled to a deterministic automaton the
//! validator steps over a string value's decoded bytes: linear in the string, and a byte after
//! which no continuation can match is refused at once.
//!
//! Only the regular part of ECMA-262 whose meaning this crate's regular-expression engine
//! (`regex-syntax`, `regex-automata`) shares is read; everything else is refused at compile
//! time rather than read with another meaning (spec, "The JSON Schema profile").

use regex_automata::dfa::{Automaton, StartKind, dense};
use regex_automata::nfa::thompson;
use regex_automata::util::primitives::StateID;
use regex_automata::{Anchored, Input, MatchKind};
use regex_syntax::ast::{
    self, Assertion, AssertionKind, Ast, ClassPerl, ClassPerlKind, ClassSetBinaryOp, ClassSetItem,
    GroupKind, HexLiteralKind, LiteralKind, RepetitionKind, RepetitionRange, SpecialLiteralKind,
};

/// Most bytes one pattern's automaton (and its construction) may take; a larger one is
/// refused (`schema_over_limit`, limit `max_pattern_bytes`).
pub const MAX_PATTERN_AUTOMATON_BYTES: usize = 1 << 20;

/// Longest `pattern` text read.
pub const MAX_PATTERN_CHARS: usize = 4096;

/// Work units one schema's `pattern`s may spend compiling, all together. A unit is one NFA
/// byte built, one byte of pattern text read, or one NFA state or transition visited while a
/// DFA transition is computed (`DFA states x byte classes x (NFA states + transitions)`). The
/// budget is turned into the NFA's and the DFA's size limits before each is built, so a schema
/// whose patterns would cost more is refused (`schema_over_limit`, limit `max_pattern_work`)
/// after at most this much work, whatever its patterns and however many.
pub const PATTERN_WORK_BUDGET: u64 = 1 << 28;

/// Spends `units` of `budget`, or refuses when it has less.
fn spend(budget: &mut u64, units: u64) -> Result<(), PatternError> {
    *budget = budget.checked_sub(units).ok_or(PatternError::OverBudget)?;
    Ok(())
}

/// A construction cut off by its size limit: over the automaton bound when that was the
/// limit, else over the work budget.
fn over(limit: usize) -> PatternError {
    if limit >= MAX_PATTERN_AUTOMATON_BYTES {
        PatternError::TooLarge
    } else {
        PatternError::OverBudget
    }
}

/// NFA states plus transitions: the most one step of determinization visits.
fn nfa_units(nfa: &thompson::NFA) -> u64 {
    nfa.states()
        .iter()
        .map(|s| {
            1 + match s {
                thompson::State::Sparse(t) => t.transitions.len() as u64,
                thompson::State::Dense(_) => 256,
                thompson::State::Union { alternates } => alternates.len() as u64,
                thompson::State::BinaryUnion { .. } => 2,
                _ => 1,
            }
        })
        .sum()
}

/// The states reachable from `start` and, by state index, whether a match is reachable from
/// each (a match state, a state the string may end in matched, or one with a transition to
/// such a state). Linear in states x byte classes.
fn live_states(dfa: &dense::DFA<Vec<u32>>, start: StateID) -> (Vec<bool>, usize) {
    let reps: Vec<u8> = dfa
        .byte_classes()
        .representatives(0..=255u8)
        .filter_map(|u| u.as_u8())
        .collect();
    let index = |s: StateID| s.as_usize() >> dfa.stride2();
    let mut order: Vec<StateID> = vec![start];
    let mut seen = vec![false; index(start) + 1];
    seen[index(start)] = true;
    let mut edges: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while let Some(&s) = order.get(i) {
        i += 1;
        for &b in &reps {
            let t = dfa.next_state(s, b);
            let ti = index(t);
            edges.push((index(s), ti));
            if ti >= seen.len() {
                seen.resize(ti + 1, false);
            }
            if !seen[ti] {
                seen[ti] = true;
                order.push(t);
            }
        }
    }
    let n = seen.len();
    let mut live = vec![false; n];
    let mut todo: Vec<usize> = Vec::new();
    for &s in &order {
        if dfa.is_match_state(s) || dfa.is_match_state(dfa.next_eoi_state(s)) {
            live[index(s)] = true;
            todo.push(index(s));
        }
    }
    // Backwards over the edges from the live states.
    let mut back: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &(from, to) in &edges {
        back[to].push(from);
    }
    while let Some(t) = todo.pop() {
        for &f in &back[t] {
            if !live[f] {
                live[f] = true;
                todo.push(f);
            }
        }
    }
    (live, order.len())
}

/// ECMA-262's `\s`: WhiteSpace and LineTerminator.
const ECMA_SPACE: &str =
    r"\t\n\x0B\x0C\r \u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000\uFEFF";

/// A compiled `pattern`.
#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    /// The pattern as written (it is what the projection states).
    pub(crate) source: String,
    dfa: dense::DFA<Vec<u32>>,
    start: StateID,
    /// By state index (`id >> stride2`): whether a match is still reachable from the state
    /// (the string may also end there matched).
    live: Vec<bool>,
}

/// Why a pattern is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PatternError {
    /// Not read by this profile (look-around, back-references, flags, `\p`, `\b`, ...).
    Unsupported(&'static str),
    /// Its automaton would pass [`MAX_PATTERN_AUTOMATON_BYTES`] (or its text
    /// [`MAX_PATTERN_CHARS`]).
    TooLarge,
    /// Compiling it would pass what is left of the schema's [`PATTERN_WORK_BUDGET`].
    OverBudget,
}

/// Where the automaton stands in a string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// More bytes may still make a match.
    Open(StateID),
    /// A match was found: the rest of the string cannot undo it.
    Matched,
    /// No continuation can match.
    Dead,
}

/// What one successful [`Pattern::compile_spent`] spent of its budget, in its steps.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Spent {
    /// The text (parsing and translating).
    text: u64,
    /// The NFA's memory.
    nfa: u64,
    /// Units per DFA state, and bytes per DFA row.
    per_state: u64,
    row: u64,
    /// The DFA's states walked for their liveness.
    last: u64,
    /// Both constructions ran with their size limits at [`MAX_PATTERN_AUTOMATON_BYTES`]
    /// (the budget left them there rather than lowering them).
    unbound: bool,
}

impl Spent {
    /// Whether [`Spent::replay`] can ever replay it.
    pub(crate) fn unbound(&self) -> bool {
        self.unbound
    }

    /// Lowers `budget` as compiling the same text again would, and returns `true`, when that
    /// compile is sure to run as the one that spent this did: both ran their constructions with
    /// the size limits at [`MAX_PATTERN_AUTOMATON_BYTES`] (the same configuration over the
    /// same text builds the same automata) and every step's spending fits. Otherwise leaves
    /// `budget` as it is and returns `false` (the text must then be compiled).
    pub(crate) fn replay(&self, budget: &mut u64) -> bool {
        let max = MAX_PATTERN_AUTOMATON_BYTES as u64;
        let Some(left) = budget.checked_sub(self.text) else {
            return false;
        };
        if !self.unbound || left < max {
            return false;
        }
        let Some(left) = left.checked_sub(self.nfa) else {
            return false;
        };
        let max_states = left / self.per_state;
        if max_states < 3 || max_states.saturating_mul(self.row) < max {
            return false;
        }
        let Some(left) = left.checked_sub(self.last) else {
            return false;
        };
        *budget = left;
        true
    }
}

impl Pattern {
    /// [`Pattern::compile_spent`] without what it spent.
    #[cfg(test)]
    pub(crate) fn compile(source: &str, budget: &mut u64) -> Result<Box<Pattern>, PatternError> {
        Self::compile_spent(source, budget).map(|(pattern, _)| pattern)
    }

    /// Compiles `source` (ECMA-262 syntax, as JSON Schema has it) within `budget` work units
    /// (see [`PATTERN_WORK_BUDGET`]), which it lowers by the units it spent, and says what it
    /// spent (see [`Spent::replay`]). The budget is turned into size limits *before* each
    /// construction runs, so a pattern that would cost more is cut off, and refused
    /// ([`PatternError::OverBudget`]), within the budget. Boxed, and never inlined: the
    /// automaton is large, and the schema compiler that calls this recurses.
    #[inline(never)]
    pub(crate) fn compile_spent(
        source: &str,
        budget: &mut u64,
    ) -> Result<(Box<Pattern>, Spent), PatternError> {
        if source.chars().count() > MAX_PATTERN_CHARS {
            return Err(PatternError::TooLarge);
        }
        // Parsing and translating are linear in the text.
        spend(budget, source.len() as u64)?;
        let parsed = ast::parse::ParserBuilder::new()
            .nest_limit(64)
            .build()
            .parse(source)
            .map_err(|_| {
                PatternError::Unsupported(
                    "not a regular expression this profile reads (look-around, back-references \
                     and some ECMA-262 forms are not)",
                )
            })?;
        let mut edits = Vec::new();
        ast::visit(
            &parsed,
            Ecma {
                source,
                edits: &mut edits,
            },
        )?;
        // ECMA-262's meanings, written in the engine's syntax, over the spans they replace.
        let mut text = source.to_owned();
        edits.sort_by_key(|(span, _): &(ast::Span, String)| std::cmp::Reverse(span.start.offset));
        for (span, with) in edits {
            text.replace_range(span.start.offset..span.end.offset, &with);
        }
        let hir = regex_syntax::ParserBuilder::new()
            .nest_limit(64)
            .build()
            .parse(&text)
            .map_err(|_| {
                PatternError::Unsupported("not a regular expression this profile reads")
            })?;
        // The NFA: its construction is linear in its size, which the limit cuts off.
        let nfa_limit = usize::try_from(*budget)
            .unwrap_or(usize::MAX)
            .min(MAX_PATTERN_AUTOMATON_BYTES);
        let nfa = thompson::Compiler::new()
            .configure(
                thompson::Config::new()
                    .nfa_size_limit(Some(nfa_limit))
                    .shrink(false),
            )
            .build_from_hir(&hir)
            .map_err(|_| over(nfa_limit))?;
        let nfa_memory = nfa.memory_usage() as u64;
        spend(budget, nfa_memory)?;
        // Determinization computes one transition per (DFA state, byte class), each a walk
        // over at most every NFA state and transition: the DFA's size limit is set so that
        // states x classes x nfa_units stays within what is left of the budget.
        let nfa_units = nfa_units(&nfa);
        let classes = nfa.byte_classes().alphabet_len() as u64;
        let per_state = classes.saturating_mul(nfa_units).max(1);
        let max_states = *budget / per_state;
        // A DFA state is one row of `stride` 4-byte transitions.
        let row = (classes.next_power_of_two()).saturating_mul(4);
        let dfa_limit = usize::try_from(max_states.saturating_mul(row))
            .unwrap_or(usize::MAX)
            .min(MAX_PATTERN_AUTOMATON_BYTES);
        if max_states < 3 {
            return Err(PatternError::OverBudget);
        }
        let dfa = dense::Builder::new()
            .configure(
                dense::Config::new()
                    .start_kind(StartKind::Unanchored)
                    .match_kind(MatchKind::All)
                    // Not minimized (minimizing is not bounded by the budget's rule); the
                    // states from which no match is reachable are found below instead, so a
                    // refusal still comes at the first byte that makes the match impossible.
                    .minimize(false)
                    .dfa_size_limit(Some(dfa_limit))
                    .determinize_size_limit(Some(MAX_PATTERN_AUTOMATON_BYTES)),
            )
            .build_from_nfa(&nfa)
            .map_err(|_| over(dfa_limit))?;
        let start = dfa
            .start_state_forward(&Input::new(&[][..]).anchored(Anchored::No))
            .map_err(|_| PatternError::Unsupported("a pattern this profile cannot start"))?;
        let (live, states) = live_states(&dfa, start);
        let last = (states as u64)
            .saturating_mul(per_state)
            .saturating_add((states as u64).saturating_mul(classes));
        spend(budget, last)?;
        let spent = Spent {
            text: source.len() as u64,
            nfa: nfa_memory,
            per_state,
            row,
            last,
            unbound: nfa_limit == MAX_PATTERN_AUTOMATON_BYTES
                && dfa_limit == MAX_PATTERN_AUTOMATON_BYTES,
        };
        Ok((
            Box::new(Pattern {
                source: source.to_owned(),
                dfa,
                start,
                live,
            }),
            spent,
        ))
    }

    /// The step before a string's first byte.
    pub(crate) fn start(&self) -> Step {
        self.classify(self.start)
    }

    fn classify(&self, s: StateID) -> Step {
        if self.dfa.is_match_state(s) {
            Step::Matched
        } else if self.dfa.is_dead_state(s)
            || self.dfa.is_quit_state(s)
            || !self
                .live
                .get(s.as_usize() >> self.dfa.stride2())
                .copied()
                .unwrap_or(false)
        {
            Step::Dead
        } else {
            Step::Open(s)
        }
    }

    /// The step after one more decoded byte of the string.
    #[inline]
    pub(crate) fn next(&self, s: StateID, byte: u8) -> Step {
        self.classify(self.dfa.next_state(s, byte))
    }

    /// Whether the string, ending after the bytes that led to `s`, matches.
    pub(crate) fn ends_matched(&self, s: StateID) -> bool {
        self.dfa.is_match_state(self.dfa.next_eoi_state(s))
    }
}

/// Checks that a parsed pattern means in the engine what it means in ECMA-262, and collects
/// the rewrites of the classes whose meanings differ (`\d`, `\w`, `\s` are ASCII or ECMA's
/// sets, `.` excludes ECMA's line terminators).
struct Ecma<'a> {
    source: &'a str,
    edits: &'a mut Vec<(ast::Span, String)>,
}

fn refuse<T>(why: &'static str) -> Result<T, PatternError> {
    Err(PatternError::Unsupported(why))
}

/// A Perl class's ECMA-262 members, as the inside of a bracketed class, and whether negated.
fn perl_members(c: &ClassPerl) -> (String, bool) {
    let members = match c.kind {
        ClassPerlKind::Digit => "0-9".to_owned(),
        ClassPerlKind::Word => "0-9A-Za-z_".to_owned(),
        ClassPerlKind::Space => ECMA_SPACE.to_owned(),
    };
    (members, c.negated)
}

impl ast::Visitor for Ecma<'_> {
    type Output = ();
    type Err = PatternError;

    fn finish(self) -> Result<(), PatternError> {
        Ok(())
    }

    fn visit_pre(&mut self, a: &Ast) -> Result<(), PatternError> {
        match a {
            Ast::Flags(_) => refuse("inline flags are not ECMA-262"),
            Ast::Literal(l) => literal(l),
            Ast::Dot(span) => {
                self.edits.push((**span, r"[^\n\r\u2028\u2029]".to_owned()));
                Ok(())
            }
            Ast::Assertion(x) => assertion(x),
            Ast::ClassUnicode(_) => refuse(r"\p classes are not read"),
            Ast::ClassPerl(c) => {
                let (members, negated) = perl_members(c);
                let class = if negated {
                    format!("[^{members}]")
                } else {
                    format!("[{members}]")
                };
                self.edits.push((c.span, class));
                Ok(())
            }
            Ast::ClassBracketed(_) => Ok(()),
            Ast::Repetition(r) => {
                // `a{,3}` is a literal in ECMA-262, a repetition here.
                if let RepetitionKind::Range(RepetitionRange::Bounded(..)) = r.op.kind {
                    let op = &self.source[r.op.span.start.offset..r.op.span.end.offset];
                    if op.starts_with("{,") {
                        return refuse("{,n} is not a repetition in ECMA-262");
                    }
                }
                Ok(())
            }
            Ast::Group(g) => match &g.kind {
                GroupKind::CaptureIndex(_) => Ok(()),
                GroupKind::CaptureName { starts_with_p, .. } => {
                    if *starts_with_p {
                        refuse("(?P<name>...) is not ECMA-262")
                    } else {
                        Ok(())
                    }
                }
                GroupKind::NonCapturing(flags) => {
                    if flags.items.is_empty() {
                        Ok(())
                    } else {
                        refuse("group flags are not ECMA-262")
                    }
                }
            },
            Ast::Empty(_) | Ast::Alternation(_) | Ast::Concat(_) => Ok(()),
        }
    }

    fn visit_class_set_item_pre(&mut self, item: &ClassSetItem) -> Result<(), PatternError> {
        match item {
            ClassSetItem::Empty(_) | ClassSetItem::Union(_) => Ok(()),
            ClassSetItem::Literal(l) => literal(l),
            ClassSetItem::Range(r) => {
                literal(&r.start)?;
                literal(&r.end)
            }
            ClassSetItem::Ascii(_) => refuse("[:name:] classes are not ECMA-262"),
            ClassSetItem::Unicode(_) => refuse(r"\p classes are not read"),
            ClassSetItem::Perl(c) => {
                let (members, negated) = perl_members(c);
                // Inside a class: the members, or a nested class of the complement.
                let with = if negated {
                    format!("[^{members}]")
                } else {
                    members
                };
                self.edits.push((c.span, with));
                Ok(())
            }
            ClassSetItem::Bracketed(_) => refuse("a class inside a class is not ECMA-262"),
        }
    }

    fn visit_class_set_binary_op_pre(
        &mut self,
        _op: &ClassSetBinaryOp,
    ) -> Result<(), PatternError> {
        refuse("class set operations (&&, --, ~~) are not ECMA-262")
    }
}

fn literal(l: &ast::Literal) -> Result<(), PatternError> {
    match &l.kind {
        LiteralKind::Verbatim | LiteralKind::Meta | LiteralKind::Superfluous => Ok(()),
        LiteralKind::HexFixed(HexLiteralKind::X | HexLiteralKind::UnicodeShort) => Ok(()),
        LiteralKind::Special(
            SpecialLiteralKind::FormFeed
            | SpecialLiteralKind::Tab
            | SpecialLiteralKind::LineFeed
            | SpecialLiteralKind::CarriageReturn
            | SpecialLiteralKind::VerticalTab,
        ) => Ok(()),
        _ => refuse("an escape ECMA-262 reads otherwise"),
    }
}

fn assertion(a: &Assertion) -> Result<(), PatternError> {
    match a.kind {
        // `^` and `$` without the multi-line flag: the start and end of the string.
        AssertionKind::StartLine | AssertionKind::EndLine => Ok(()),
        _ => refuse(r"\A, \z and word boundaries are not read"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compile(p: &str) -> Result<Box<Pattern>, PatternError> {
        Pattern::compile(p, &mut PATTERN_WORK_BUDGET.clone())
    }

    fn run(p: &Pattern, s: &str) -> Step {
        let mut st = p.start();
        for &b in s.as_bytes() {
            st = match st {
                Step::Open(id) => p.next(id, b),
                other => return other,
            };
        }
        match st {
            Step::Open(id) if p.ends_matched(id) => Step::Matched,
            Step::Open(_) => Step::Dead,
            other => other,
        }
    }

    /// Replaying a compile lowers the budget exactly as compiling the text again does, with
    /// the same outcome, at budgets where both size limits stay at their bound and at budgets
    /// around where the budget starts lowering them (where replay declines and the text is
    /// compiled); at the full budget it replays.
    #[test]
    fn replay_is_compiling_again() {
        let uuid = "^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-\
                    [0-9a-fA-F]{12}|00000000-0000-0000-0000-000000000000)$";
        for p in ["^[a-z0-9][a-z0-9_-]*$", uuid, "b+"] {
            let mut full = PATTERN_WORK_BUDGET;
            let (_, spent) = Pattern::compile_spent(p, &mut full).unwrap();
            let cost = PATTERN_WORK_BUDGET - full;
            let mut again = full;
            assert!(spent.replay(&mut again), "{p}");
            let mut compiled = full;
            Pattern::compile(p, &mut compiled).unwrap();
            assert_eq!(again, compiled, "{p}");
            let bound = MAX_PATTERN_AUTOMATON_BYTES as u64;
            let mut budgets: Vec<u64> = [0, 1, 2, 4, 8, 16, 64, 256]
                .iter()
                .flat_map(|&k| [bound * k, bound * k + cost, (bound + cost) * k])
                .collect();
            budgets.extend((0..64).map(|i| bound + cost * i / 8));
            budgets.extend((0..64).map(|i| 2 * cost + bound + i * 4096));
            for b in budgets {
                let (mut first, mut real) = (b, b);
                let Ok((_, spent)) = Pattern::compile_spent(p, &mut first) else {
                    continue;
                };
                let _ = Pattern::compile(p, &mut real);
                assert_eq!(first, real, "{p} {b}");
                let mut replayed = first;
                let replay_ok = spent.replay(&mut replayed);
                let real_again = Pattern::compile(p, &mut real);
                if replay_ok {
                    assert!(real_again.is_ok(), "{p} {b}");
                    assert_eq!(replayed, real, "{p} {b}");
                } else {
                    assert_eq!(replayed, first, "{p} {b}: unchanged when declined");
                }
            }
        }
    }

    /// Replay declines wherever compiling again would run a construction under a lower size
    /// limit than the first compile did (the text's cost, the NFA's or the DFA's limit lowered
    /// by the budget, too few states), and when the first compile ran under one itself.
    #[test]
    fn replay_declines_where_a_limit_would_bind() {
        let mut budget = PATTERN_WORK_BUDGET;
        let (_, spent) = Pattern::compile_spent("^[a-z0-9][a-z0-9_-]*$", &mut budget).unwrap();
        let max = MAX_PATTERN_AUTOMATON_BYTES as u64;
        // The NFA's limit: what is left after the text, just below and at the bound.
        let nfa_binds = spent.text + max - 1;
        let nfa_free = spent.text + max + spent.nfa;
        // The DFA's limit: states x row just below the bound once the NFA is paid.
        let dfa_states = max.div_ceil(spent.row);
        let dfa_binds = spent.text + spent.nfa + spent.per_state * dfa_states - 1;
        let dfa_free =
            (spent.text + spent.nfa + spent.per_state * dfa_states).max(nfa_free) + spent.last;
        // Where the DFA's limit binds, the NFA's does not (the case is not vacuous).
        assert!(dfa_binds - spent.text >= max, "{spent:?}");
        for (b, replays) in [
            (spent.text - 1, false),
            (nfa_binds, false),
            (dfa_binds, false),
            (dfa_free, true),
        ] {
            let mut left = b;
            assert_eq!(spent.replay(&mut left), replays, "{b}");
            if !replays {
                assert_eq!(left, b);
            }
        }
        let mut bound = spent;
        bound.unbound = false;
        assert!(!bound.replay(&mut PATTERN_WORK_BUDGET.clone()));
    }

    #[test]
    fn ecma_meanings() {
        let p = compile(r"^\d{2}-\w+$").unwrap();
        assert_eq!(run(&p, "12-ab_9"), Step::Matched);
        // ECMA's \d is ASCII.
        assert_eq!(run(&p, "\u{0663}2-a"), Step::Dead);
        let dot = compile("^a.b$").unwrap();
        assert_eq!(run(&dot, "a\u{e9}b"), Step::Matched);
        assert_eq!(run(&dot, "a\rb"), Step::Dead);
        // Unanchored: a match anywhere.
        let any = compile("b+").unwrap();
        assert_eq!(run(&any, "aaabaaa"), Step::Matched);
        assert_eq!(run(&any, "aaa"), Step::Dead);
    }

    #[test]
    fn an_anchored_pattern_dies_at_the_first_impossible_byte() {
        let p = compile("^ab").unwrap();
        let Step::Open(s) = p.start() else { panic!() };
        assert!(matches!(p.next(s, b'a'), Step::Open(_)));
        assert_eq!(p.next(s, b'x'), Step::Dead);
    }

    #[test]
    fn a_state_no_match_is_reachable_from_is_dead_without_minimization() {
        // No string matches `a^`, yet the unminimized automaton's unanchored start is not its
        // dead state: found by the backward walk, it is dead before the first byte.
        assert_eq!(compile("a^").unwrap().start(), Step::Dead);
        assert_eq!(
            compile("(?:b|a^)").unwrap().start(),
            Step::Open(compile("(?:b|a^)").unwrap().start)
        );
        // An anchored pattern dies at the byte no continuation can match.
        let p = compile("^(?:ab|ac|bb)c").unwrap();
        assert_eq!(run(&p, "acc"), Step::Matched);
        assert_eq!(run(&p, "acb"), Step::Dead);
        // The work spent is taken from the budget; a budget too small refuses.
        let mut budget = PATTERN_WORK_BUDGET;
        Pattern::compile("^[a-z]+$", &mut budget).unwrap();
        assert!(budget < PATTERN_WORK_BUDGET);
        let mut small = 100;
        assert_eq!(
            Pattern::compile("^[a-z]+$", &mut small).unwrap_err(),
            PatternError::OverBudget
        );
    }

    #[test]
    fn forms_with_another_meaning_are_refused() {
        for p in [
            "(?i)a",
            "(?i:a)",
            r"\pL",
            r"\bx",
            r"\Ax",
            "[[:alpha:]]",
            "[a&&b]",
            "[a[b]]",
            "(?P<n>a)",
            r"\x{41}",
            "a{,3}",
            "(?=a)",
            r"(a)\1",
            r"\U00000041",
            r"\a",
        ] {
            assert!(
                matches!(compile(p), Err(PatternError::Unsupported(_))),
                "{p}"
            );
        }
        for p in [
            r"\/",
            r"[\d-]",
            "(?<n>a)",
            r"\u0041",
            "(?:a|b)*c",
            "[^a-z]",
            r"\S\D\W",
        ] {
            assert!(compile(p).is_ok(), "{p}");
        }
    }
}
