//! Stable refusal codes of the strict decoder.

use core::fmt;

jouleclaw_stream::stable_codes! {
    /// Why the strict decoder refused a byte string. Each code is stable: its string never
    /// changes meaning (`spec/JCR1-STREAM-WINDOW-V1.md` lists them).
    pub enum RefusalCode {
        /// No bytes at all.
        EmptyInput => "empty_input",
        /// The input ended inside the document.
        Truncated => "truncated",
        /// Bytes after the end of the document (a trailing newline included).
        TrailingBytes => "trailing_bytes",
        /// The document starts with byte `EF`, the first byte of a UTF-8 byte-order mark.
        Bom => "bom",
        /// Whitespace outside a string.
        Whitespace => "whitespace",
        /// A byte that cannot continue the document here.
        Syntax => "syntax",
        /// An object key is not greater than the previous key (RFC 8785 order).
        UnsortedKeys => "unsorted_keys",
        /// An object key equals the previous key.
        DuplicateKey => "duplicate_key",
        /// A number with a fraction.
        NumberFraction => "number_fraction",
        /// A number with an exponent.
        NumberExponent => "number_exponent",
        /// A number with a leading zero.
        NumberLeadingZero => "number_leading_zero",
        /// `-0`.
        NumberNegativeZero => "number_negative_zero",
        /// A number with a leading `+`.
        NumberPlus => "number_plus",
        /// An integer outside `[-(2^53-1), 2^53-1]`.
        IntegerOutOfRange => "integer_out_of_range",
        /// A negative integer where the field is unsigned.
        NegativeUnsigned => "negative_unsigned",
        /// A value of the wrong JSON type for its field.
        WrongType => "wrong_type",
        /// `null`.
        Null => "null",
        /// A key the schema does not define (for the variant at hand).
        UnknownField => "unknown_field",
        /// A required key is absent.
        MissingField => "missing_field",
        /// `jc_receipt` is not `"stream-window/1"`.
        WrongSchema => "wrong_schema",
        /// Unknown `verdict.kind`.
        UnknownVerdictKind => "unknown_verdict_kind",
        /// Unknown `conservation.kind`.
        UnknownConservationKind => "unknown_conservation_kind",
        /// Unknown `energy_provenance`.
        UnknownEnergyProvenance => "unknown_energy_provenance",
        /// `window_hash` is not 64 lowercase hex digits.
        BadWindowHash => "bad_window_hash",
        /// `closed_at` is not a valid `YYYY-MM-DDTHH:MM:SSZ`.
        BadClosedAt => "bad_closed_at",
        /// `id` is not `{stream_id}:{window_id:04}`.
        IdMismatch => "id_mismatch",
        /// A string that must be non-empty is empty.
        EmptyString => "empty_string",
        /// A pass verdict with an empty chain.
        EmptyChain => "empty_chain",
        /// `\/`.
        EscapeSolidus => "escape_solidus",
        /// A `\u` escape of a character that is written literally (printable ASCII, non-ASCII).
        EscapeNotNeeded => "escape_not_needed",
        /// A `\u` escape with uppercase hex digits.
        EscapeUppercaseHex => "escape_uppercase_hex",
        /// A `\u` escape of a character that has a short form (`\b \t \n \f \r \" \\`).
        EscapeShortFormAvailable => "escape_short_form_available",
        /// A backslash followed by something that is not an escape.
        EscapeInvalid => "escape_invalid",
        /// A raw byte below `0x20` inside a string.
        RawControlChar => "raw_control_char",
        /// Bytes that are not UTF-8.
        InvalidUtf8 => "invalid_utf8",
        /// An overlong UTF-8 encoding.
        OverlongUtf8 => "overlong_utf8",
        /// A surrogate code point (encoded in UTF-8, or an unpaired `\u` escape).
        LoneSurrogate => "lone_surrogate",
        /// Containers nested deeper than the limit.
        DepthExceeded => "depth_exceeded",
        /// A string longer than the limit (in decoded bytes).
        StringTooLong => "string_too_long",
        /// An array longer than the limit.
        ArrayTooLong => "array_too_long",
        /// A document longer than the limit.
        DocumentTooLarge => "document_too_large",
    }
}

impl fmt::Display for RefusalCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A refusal: the code and the offset of the byte at which it was decided (the input length
/// for refusals decided at the end).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Refusal {
    /// Why.
    pub code: RefusalCode,
    /// Where, in bytes from the start of the document.
    pub offset: u64,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "refused ({}) at byte {}", self.code, self.offset)
    }
}

impl std::error::Error for Refusal {}
