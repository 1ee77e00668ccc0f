//! The crate's one error type, the document refusal codes and the refusal record.

use core::fmt;

jouleclaw_stream::stable_codes! {
    /// Why the validator refused a document. Each code is stable: its string never changes
    /// meaning (`spec/STRUCTURED-OUTPUT.md` tables them).
    pub enum RefusalCode: RefusalClass {
        /// A byte that cannot continue RFC 8259 JSON text here.
        Syntax => "syntax", Syntax,
        /// A byte that is not part of well-formed UTF-8 (overlong, surrogate, out of range, stray
        /// continuation).
        InvalidUtf8 => "invalid_utf8", Syntax,
        /// A raw control character (below U+0020) inside a string.
        ControlCharacter => "control_character", Syntax,
        /// A backslash escape RFC 8259 does not define, or a bad hex digit in `\uXXXX`.
        InvalidEscape => "invalid_escape", Syntax,
        /// A `\uXXXX` escape of a surrogate that is not half of a high-low pair.
        LoneSurrogate => "lone_surrogate", Syntax,
        /// A non-whitespace byte after the document's value.
        TrailingBytes => "trailing_bytes", Syntax,
        /// `finish` before the document's value was complete.
        Truncated => "truncated", Syntax,
        /// `finish` before any value byte (nothing, or whitespace only).
        EmptyDocument => "empty_document", Syntax,
        /// The document is longer than the grammar's `max_document_bytes`.
        DocumentTooLarge => "document_too_large", Limit,
        /// A number token is longer than the grammar's `max_number_chars`.
        NumberTooLong => "number_too_long", Limit,
        /// A value of a JSON type the schema does not allow here (decided at its first byte; for
        /// an integer, at the `.`, `e` or `E` that makes it a non-integer).
        WrongType => "wrong_type", Schema,
        /// An object key the object does not allow: undeclared (decided at the first key byte no
        /// declared property not yet present can continue, even when a present one can: nothing
        /// repeats until the key ends), or a key where no more may follow.
        UnknownProperty => "unknown_property", Schema,
        /// A whole object key already present in the object (at its closing quote).
        DuplicateProperty => "duplicate_property", Schema,
        /// An object closes without a required property.
        MissingProperty => "missing_property", Schema,
        /// An object would hold more members than its `maxProperties`.
        TooManyProperties => "too_many_properties", Schema,
        /// An object of a `oneOf` whose first key is not the tag property.
        TagNotFirst => "tag_not_first", Schema,
        /// A `oneOf` tag value that names no branch.
        UnknownTag => "unknown_tag", Schema,
        /// A value outside the schema's `enum` or `const`.
        ValueNotAllowed => "value_not_allowed", Schema,
        /// A string shorter than its `minLength`.
        StringTooShort => "string_too_short", Schema,
        /// A string longer than its `maxLength` (characters, as JSON Schema counts them).
        StringTooLong => "string_too_long", Schema,
        /// A string no continuation of which can match its `pattern` (at the byte that makes it
        /// impossible), or that ends without a match (at its closing quote).
        PatternMismatch => "pattern_mismatch", Schema,
        /// A number below its `minimum`.
        BelowMinimum => "below_minimum", Schema,
        /// A number above its `maximum`.
        AboveMaximum => "above_maximum", Schema,
        /// An array would hold more elements than its `maxItems`.
        TooManyItems => "too_many_items", Schema,
        /// An array closes with fewer elements than its `minItems`.
        TooFewItems => "too_few_items", Schema,
        /// An element of a `uniqueItems` array equal to an earlier one (at the `,` or `]` that
        /// ends it).
        DuplicateItem => "duplicate_item", Schema,
        /// An object closes with fewer members than its `minProperties`.
        TooFewProperties => "too_few_properties", Schema,
        /// A container would open deeper than the grammar's `max_depth` (only where the schema
        /// itself does not bound the depth: recursive references, free-form values).
        TooDeep => "too_deep", Limit,
        /// The caller cancelled the stream.
        Cancelled => "cancelled", Control,
        /// Bytes pushed after the document was accepted (the acceptance stands).
        AfterFinish => "after_finish", Control,
    }
}

impl fmt::Display for RefusalCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What kind of rule a [`RefusalCode`] enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RefusalClass {
    /// The bytes are not one RFC 8259 / I-JSON (RFC 7493) text: no JSON Schema validator sees
    /// a value, so a refusal of this class has no meaningful path for a peer to agree on.
    Syntax,
    /// A hard limit of the grammar (document bytes, number length).
    Limit,
    /// The text is JSON so far, but its value cannot be of the schema's type; the refusal
    /// path is the JSON Pointer a JSON Schema validator reports.
    Schema,
    /// Cancellation and use after acceptance.
    Control,
}

impl RefusalClass {
    /// `"syntax"`, `"limit"`, `"schema"` or `"control"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Syntax => "syntax",
            Self::Limit => "limit",
            Self::Schema => "schema",
            Self::Control => "control",
        }
    }
}

/// A refused document: the rule, the byte and the place in the value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Refusal {
    /// The rule that refused.
    pub code: RefusalCode,
    /// The offset of the byte at which the document became impossible (for `truncated` and
    /// `empty_document`, the document's length; for `cancelled`, the bytes consumed).
    pub offset: u64,
    /// The JSON Pointer (RFC 6901) of the value the refusal is about: the object itself for
    /// key-level rules (unknown, duplicate, missing, too many properties, tag not first), the
    /// array itself for `too_many_items` and `duplicate_item`, the value otherwise.
    pub path: String,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at byte {}, path \"{}\"",
            self.code.as_str(),
            self.offset,
            self.path
        )
    }
}

impl std::error::Error for Refusal {}

/// Everything this crate refuses: schemas it cannot compile and documents it refuses.
///
/// [`StructuredError::code`] gives a stable string per rule.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StructuredError {
    /// The schema text is not one JSON value (syntax, duplicate keys, a number out of `f64`
    /// range, nesting beyond 128).
    SchemaNotJson {
        /// What the JSON parser said.
        message: String,
    },
    /// A keyword outside the supported subset, or a supported keyword where the subset does
    /// not allow it. Never silently ignored.
    UnsupportedKeyword {
        /// The keyword.
        keyword: String,
        /// The JSON Pointer of the schema object that holds it.
        at: String,
    },
    /// A keyword that is neither JSON Schema 2020-12 vocabulary nor an annotation, refused
    /// under [`crate::UnknownKeywords::Refuse`] (the default of [`crate::Profile::JsonSchema`]).
    UnknownKeyword {
        /// The keyword.
        keyword: String,
        /// The JSON Pointer of the schema object that holds it.
        at: String,
    },
    /// A union (`anyOf`, `oneOf`, a type list) whose branch cannot be decided by a value's
    /// first byte: two branches of one JSON type (objects without a common tag, two strings,
    /// two arrays, two constrained numbers).
    AmbiguousUnion {
        /// The JSON Pointer of the union.
        at: String,
    },
    /// A `pattern` this profile does not read: a form of ECMA-262 it cannot compile to a
    /// deterministic automaton with the same meaning (look-around, back-references, flags,
    /// `\p`, word boundaries, ...). Code `schema_unsupported_keyword`, keyword `pattern`.
    UnsupportedPattern {
        /// The JSON Pointer of the schema object that holds it.
        at: String,
        /// What is not read.
        reason: &'static str,
    },
    /// (JSON Schema profile) a root `$schema` naming a dialect this profile does not read
    /// (it reads 2020-12, 2019-09 and draft-07). Keyword `$schema`.
    UnsupportedDialect {
        /// The URI as written.
        uri: String,
    },
    /// A supported keyword with a value the subset does not accept.
    InvalidKeyword {
        /// The keyword.
        keyword: String,
        /// The JSON Pointer of the schema object that holds it.
        at: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A keyword the subset requires is absent (`type`, `additionalProperties: false` on an
    /// object, `items` on an array).
    MissingKeyword {
        /// The keyword.
        keyword: &'static str,
        /// The JSON Pointer of the schema object that lacks it.
        at: String,
    },
    /// The schema exceeds a compile-time limit.
    SchemaOverLimit {
        /// The limit's name (`max_depth`, `max_schema_bytes`, `max_members`,
        /// `max_projection_nodes`, `max_schema_nesting`, `max_pattern_bytes`,
        /// `max_pattern_work`).
        limit: &'static str,
        /// The JSON Pointer where it was exceeded.
        at: String,
    },
    /// A schema object that no value can match (`minLength` above `maxLength`, an integer
    /// `maximum` below every integer its `minimum` and the range allow, ...): a grammar that
    /// accepts nothing there would refuse every document reaching it without saying why.
    Unsatisfiable {
        /// The keyword that leaves nothing (`maximum`, `exclusiveMaximum`, `maxLength`,
        /// `maxItems`, `maxProperties`, `enum`).
        keyword: &'static str,
        /// The JSON Pointer of the schema object.
        at: String,
    },
    /// A toolset ([`crate::Toolset::compile`]) that is not one: neither an MCP `tools/list`
    /// result nor an OpenAI `tools` array, a tool without a name, two tools of one name, no
    /// tool whose schema compiles.
    ToolsetInvalid {
        /// What is wrong.
        reason: &'static str,
    },
    /// A tool whose schema does not compile, in a toolset compiled with
    /// [`crate::ToolsetOptions::strict`].
    ToolRefused {
        /// The tool's name.
        name: String,
        /// Why its schema was refused.
        source: Box<StructuredError>,
    },
    /// [`crate::Limits`] that cannot be used (a zero, or a value above its ceiling).
    InvalidLimits {
        /// The field.
        field: &'static str,
    },
    /// A document was refused.
    Refused(Refusal),
}

impl StructuredError {
    /// A stable code naming the rule that refused; it never changes meaning. For
    /// [`StructuredError::Refused`] it is the [`RefusalCode`]'s string.
    pub fn code(&self) -> &'static str {
        match self {
            Self::SchemaNotJson { .. } => "schema_not_json",
            Self::UnsupportedKeyword { .. } | Self::UnsupportedPattern { .. } => {
                "schema_unsupported_keyword"
            }
            Self::InvalidKeyword { .. } => "schema_invalid_keyword",
            Self::UnknownKeyword { .. } => "schema_unknown_keyword",
            Self::AmbiguousUnion { .. } => "schema_ambiguous_union",
            Self::MissingKeyword { .. } => "schema_missing_keyword",
            Self::SchemaOverLimit { .. } => "schema_over_limit",
            Self::Unsatisfiable { .. } => "schema_unsatisfiable",
            Self::UnsupportedDialect { .. } => "schema_unsupported_dialect",
            Self::ToolsetInvalid { .. } => "toolset_invalid",
            Self::ToolRefused { .. } => "toolset_tool_refused",
            Self::InvalidLimits { .. } => "limits_invalid",
            Self::Refused(r) => r.code.as_str(),
        }
    }

    /// The schema keyword the error names, if any.
    pub fn keyword(&self) -> Option<&str> {
        match self {
            Self::UnsupportedKeyword { keyword, .. }
            | Self::InvalidKeyword { keyword, .. }
            | Self::UnknownKeyword { keyword, .. } => Some(keyword),
            Self::MissingKeyword { keyword, .. } | Self::Unsatisfiable { keyword, .. } => {
                Some(keyword)
            }
            Self::AmbiguousUnion { .. } => Some("anyOf"),
            Self::UnsupportedPattern { .. } => Some("pattern"),
            Self::UnsupportedDialect { .. } => Some("$schema"),
            _ => None,
        }
    }
}

impl fmt::Display for StructuredError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::SchemaNotJson { message } => write!(f, "schema is not one JSON value: {message}"),
            Self::UnsupportedKeyword { keyword, at } => write!(
                f,
                "schema keyword \"{keyword}\" at \"{at}\" is outside the supported subset"
            ),
            Self::UnknownKeyword { keyword, at } => write!(
                f,
                "schema keyword \"{keyword}\" at \"{at}\" is not JSON Schema 2020-12 vocabulary (refused; UnknownKeywords::Ignore ignores it)"
            ),
            Self::AmbiguousUnion { at } => write!(
                f,
                "union at \"{at}\": two branches of one JSON type, so a value's first byte cannot decide its branch"
            ),
            Self::InvalidKeyword {
                keyword,
                at,
                reason,
            } => write!(f, "schema keyword \"{keyword}\" at \"{at}\": {reason}"),
            Self::ToolsetInvalid { reason } => write!(f, "toolset: {reason}"),
            Self::ToolRefused { name, source } => write!(
                f,
                "toolset: tool \"{name}\" refused ({}): {source}",
                source.code()
            ),
            Self::UnsupportedDialect { uri } => write!(
                f,
                "schema dialect \"{uri}\" is not read (JSON Schema 2020-12, 2019-09 and draft-07 are)"
            ),
            Self::UnsupportedPattern { at, reason } => write!(
                f,
                "schema keyword \"pattern\" at \"{at}\" is not read: {reason}"
            ),
            Self::MissingKeyword { keyword, at } => {
                write!(
                    f,
                    "schema object at \"{at}\" lacks required keyword \"{keyword}\""
                )
            }
            Self::SchemaOverLimit { limit, at } => {
                write!(f, "schema exceeds {limit} at \"{at}\"")
            }
            Self::Unsatisfiable { keyword, at } => write!(
                f,
                "schema object at \"{at}\" accepts no value (\"{keyword}\" leaves none)"
            ),
            Self::InvalidLimits { field } => write!(f, "limits: {field} is zero or too large"),
            Self::Refused(r) => write!(f, "document refused: {r}"),
        }
    }
}

impl std::error::Error for StructuredError {}

impl From<Refusal> for StructuredError {
    fn from(r: Refusal) -> Self {
        Self::Refused(r)
    }
}

/// `Result` with [`StructuredError`].
pub type Result<T, E = StructuredError> = core::result::Result<T, E>;
