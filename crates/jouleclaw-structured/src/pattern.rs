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
}

/// Why a pattern is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PatternError {
    /// Not read by this profile (look-around, back-references, flags, `\p`, `\b`, ...).
    Unsupported(&'static str),
    /// Its automaton would pass [`MAX_PATTERN_AUTOMATON_BYTES`].
    TooLarge,
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

impl Pattern {
    /// Compiles `source` (ECMA-262 syntax, as JSON Schema has it).
    pub(crate) fn compile(source: &str) -> Result<Pattern, PatternError> {
        if source.chars().count() > MAX_PATTERN_CHARS {
            return Err(PatternError::TooLarge);
        }
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
        let nfa = thompson::Compiler::new()
            .configure(
                thompson::Config::new()
                    .nfa_size_limit(Some(MAX_PATTERN_AUTOMATON_BYTES))
                    .shrink(false),
            )
            .build_from_hir(&hir)
            .map_err(|_| PatternError::TooLarge)?;
        let dfa = dense::Builder::new()
            .configure(
                dense::Config::new()
                    .start_kind(StartKind::Unanchored)
                    .match_kind(MatchKind::All)
                    // Minimal: every state from which no match is reachable is the dead state,
                    // so a refusal comes at the first byte that makes the match impossible.
                    .minimize(true)
                    .dfa_size_limit(Some(MAX_PATTERN_AUTOMATON_BYTES))
                    .determinize_size_limit(Some(MAX_PATTERN_AUTOMATON_BYTES)),
            )
            .build_from_nfa(&nfa)
            .map_err(|_| PatternError::TooLarge)?;
        let start = dfa
            .start_state_forward(&Input::new(&[][..]).anchored(Anchored::No))
            .map_err(|_| PatternError::Unsupported("a pattern this profile cannot start"))?;
        Ok(Pattern {
            source: source.to_owned(),
            dfa,
            start,
        })
    }

    /// The step before a string's first byte.
    pub(crate) fn start(&self) -> Step {
        self.classify(self.start)
    }

    fn classify(&self, s: StateID) -> Step {
        if self.dfa.is_match_state(s) {
            Step::Matched
        } else if self.dfa.is_dead_state(s) || self.dfa.is_quit_state(s) {
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

    #[test]
    fn ecma_meanings() {
        let p = Pattern::compile(r"^\d{2}-\w+$").unwrap();
        assert_eq!(run(&p, "12-ab_9"), Step::Matched);
        // ECMA's \d is ASCII.
        assert_eq!(run(&p, "\u{0663}2-a"), Step::Dead);
        let dot = Pattern::compile("^a.b$").unwrap();
        assert_eq!(run(&dot, "a\u{e9}b"), Step::Matched);
        assert_eq!(run(&dot, "a\rb"), Step::Dead);
        // Unanchored: a match anywhere.
        let any = Pattern::compile("b+").unwrap();
        assert_eq!(run(&any, "aaabaaa"), Step::Matched);
        assert_eq!(run(&any, "aaa"), Step::Dead);
    }

    #[test]
    fn an_anchored_pattern_dies_at_the_first_impossible_byte() {
        let p = Pattern::compile("^ab").unwrap();
        let Step::Open(s) = p.start() else { panic!() };
        assert!(matches!(p.next(s, b'a'), Step::Open(_)));
        assert_eq!(p.next(s, b'x'), Step::Dead);
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
                matches!(Pattern::compile(p), Err(PatternError::Unsupported(_))),
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
            assert!(Pattern::compile(p).is_ok(), "{p}");
        }
    }
}
