//! The per-request [`Oracle`] surface and two real per-request oracles.

use std::sync::Arc;

use crate::verdict::Verdict;

/// Judges one exchange: the bytes that went in and the bytes that came out.
///
/// Implementations are pure functions of their configuration and the two byte strings: no
/// clocks, I/O, threads or randomness. [`Oracle::name`] is stable: it appears in
/// [`crate::WindowVerdict`] wire forms and so in signed receipts.
///
/// [`crate::PerTickAdapter`] lifts an `Oracle` onto the streaming surface.
pub trait Oracle {
    /// A stable name, such as `"byte-budget"`.
    fn name(&self) -> &str;

    /// Judges one exchange.
    fn judge(&self, input: &[u8], output: &[u8]) -> Verdict;

    /// `true` when [`Oracle::judge`] passes the exchange.
    fn passes(&self, input: &[u8], output: &[u8]) -> bool {
        self.judge(input, output).is_pass()
    }
}

impl<T: Oracle + ?Sized> Oracle for &T {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn judge(&self, input: &[u8], output: &[u8]) -> Verdict {
        (**self).judge(input, output)
    }
}

impl<T: Oracle + ?Sized> Oracle for Box<T> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn judge(&self, input: &[u8], output: &[u8]) -> Verdict {
        (**self).judge(input, output)
    }
}

impl<T: Oracle + ?Sized> Oracle for Arc<T> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn judge(&self, input: &[u8], output: &[u8]) -> Verdict {
        (**self).judge(input, output)
    }
}

/// Passes an exchange when `output.len() <= k * input.len() + c`, with `k` given in
/// thousandths (`k_permille`).
///
/// The comparison is exact integer arithmetic on `u128`
/// (`1000 * output <= k_permille * input + 1000 * c`); nothing rounds or wraps. Name:
/// `"byte-budget"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteBudgetOracle {
    k_permille: u64,
    c_bytes: u64,
}

impl ByteBudgetOracle {
    /// The oracle's name.
    pub const NAME: &'static str = "byte-budget";

    /// An oracle allowing `k_permille / 1000` output bytes per input byte plus `c_bytes`.
    pub fn new(k_permille: u64, c_bytes: u64) -> Self {
        Self {
            k_permille,
            c_bytes,
        }
    }

    /// The multiplier, in thousandths.
    pub fn k_permille(&self) -> u64 {
        self.k_permille
    }

    /// The constant allowance, in bytes.
    pub fn c_bytes(&self) -> u64 {
        self.c_bytes
    }
}

impl Oracle for ByteBudgetOracle {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn judge(&self, input: &[u8], output: &[u8]) -> Verdict {
        // usize fits in u128; the products below cannot overflow u128 (< 2^64 * 2^64).
        let input_len = input.len() as u128;
        let output_len = output.len() as u128;
        let budget_milli =
            u128::from(self.k_permille) * input_len + 1000 * u128::from(self.c_bytes);
        if 1000 * output_len <= budget_milli {
            Verdict::Pass
        } else {
            Verdict::fail(format!(
                "output of {} bytes exceeds {}/1000 x {} input bytes + {}",
                output.len(),
                self.k_permille,
                input.len(),
                self.c_bytes
            ))
        }
    }
}

/// What [`TextWellFormedOracle`] requires of the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TextRequirement {
    /// Valid UTF-8.
    Utf8,
    /// Valid UTF-8 holding exactly one complete JSON document (RFC 8259; surrounding JSON
    /// whitespace allowed; nesting deeper than 128 levels is refused).
    Json,
}

/// Passes an exchange whose output is well-formed text; the input is not inspected.
///
/// Names: `"utf8-text"` ([`TextRequirement::Utf8`]) and `"json-document"`
/// ([`TextRequirement::Json`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TextWellFormedOracle {
    requirement: TextRequirement,
}

impl TextWellFormedOracle {
    /// Name of the UTF-8 oracle.
    pub const UTF8_NAME: &'static str = "utf8-text";
    /// Name of the JSON oracle.
    pub const JSON_NAME: &'static str = "json-document";
    /// The deepest nesting of arrays and objects [`TextRequirement::Json`] accepts: 128 levels.
    pub const MAX_JSON_DEPTH: usize = 128;

    /// An oracle with `requirement`.
    pub fn new(requirement: TextRequirement) -> Self {
        Self { requirement }
    }

    /// Requires valid UTF-8.
    pub fn utf8() -> Self {
        Self::new(TextRequirement::Utf8)
    }

    /// Requires valid UTF-8 holding one complete JSON document.
    pub fn json() -> Self {
        Self::new(TextRequirement::Json)
    }

    /// The requirement.
    pub fn requirement(&self) -> TextRequirement {
        self.requirement
    }
}

impl Oracle for TextWellFormedOracle {
    fn name(&self) -> &str {
        match self.requirement {
            TextRequirement::Utf8 => Self::UTF8_NAME,
            TextRequirement::Json => Self::JSON_NAME,
        }
    }

    fn judge(&self, _input: &[u8], output: &[u8]) -> Verdict {
        if let Err(e) = core::str::from_utf8(output) {
            return Verdict::fail(format!(
                "output is not valid UTF-8 (first invalid byte at offset {})",
                e.valid_up_to()
            ));
        }
        match self.requirement {
            TextRequirement::Utf8 => Verdict::Pass,
            TextRequirement::Json => {
                // serde_json skips an ignored value iteratively, without its recursion limit, so
                // the depth bound is checked here on the syntax it has accepted.
                match serde_json::from_slice::<serde::de::IgnoredAny>(output) {
                    Ok(_) => match nesting_exceeds(output, Self::MAX_JSON_DEPTH) {
                        None => Verdict::Pass,
                        Some(offset) => Verdict::fail(format!(
                            "output is not one complete JSON document: nesting deeper than {} \
                             levels at offset {offset}",
                            Self::MAX_JSON_DEPTH
                        )),
                    },
                    Err(e) => {
                        Verdict::fail(format!("output is not one complete JSON document: {e}"))
                    }
                }
            }
        }
    }
}

/// The offset of the first `[` or `{` that opens level `max + 1`, in a valid JSON text; `None`
/// when the text nests at most `max` levels. Brackets inside strings are not nesting.
fn nesting_exceeds(json: &[u8], max: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, &b) in json.iter().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return Some(i);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}
