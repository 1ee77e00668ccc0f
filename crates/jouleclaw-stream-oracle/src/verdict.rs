//! Verdicts: the per-request [`Verdict`] and the per-window [`WindowVerdict`] with its
//! canonical wire form and dominance order.

use jouleclaw_stream::canon;

use crate::error::{OracleError, Result};

/// What a per-request [`crate::Oracle`] concludes about one exchange.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// The exchange is acceptable.
    Pass,
    /// The exchange is not acceptable, and why.
    Fail {
        /// A human-readable reason.
        reason: String,
    },
}

impl Verdict {
    /// A `Fail` with `reason`.
    pub fn fail(reason: impl Into<String>) -> Self {
        Self::Fail {
            reason: reason.into(),
        }
    }

    /// `true` for [`Verdict::Pass`].
    pub fn is_pass(&self) -> bool {
        matches!(self, Self::Pass)
    }
}

/// What a [`crate::StreamOracle`] concludes about one window (or, early, about one tick).
///
/// Ranked by [`WindowVerdict::rank`]: `Fail` (3) > `Yield` (2) > `NeedMore` (1) > `Pass` (0).
/// The canonical wire forms (`spec/STREAM-ORACLE.md`) are written by
/// [`WindowVerdict::write_wire`]:
///
/// ```text
/// {"chain":["always-pass-stream"],"kind":"pass"}
/// {"kind":"fail","oracle":"<name>","reason":"<text>"}
/// {"kind":"yield","seen_at":7}
/// {"kind":"need_more","oracle":"<name>","reason":"<text>"}
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum WindowVerdict {
    /// Every oracle consulted passed the window; `chain` names them in order.
    Pass {
        /// The names of the oracles that vouched for the window, in order.
        chain: Vec<String>,
    },
    /// An oracle refused the window's content.
    Fail {
        /// The name of the oracle that refused.
        oracle: String,
        /// Why.
        reason: String,
    },
    /// A barge-in was seen: the cascade must stop emitting outbound within
    /// [`jouleclaw_stream::BARGE_IN_DEADLINE_MS`].
    Yield {
        /// The id of the window the barge-in was seen in.
        seen_at: u64,
    },
    /// An oracle defers commitment until a later window (for example, an exchange whose end
    /// has not arrived yet).
    NeedMore {
        /// The name of the oracle that defers.
        oracle: String,
        /// What it is waiting for.
        reason: String,
    },
}

impl WindowVerdict {
    /// A `Pass` vouched for by the single oracle `name`.
    pub fn pass_by(name: impl Into<String>) -> Self {
        Self::Pass {
            chain: vec![name.into()],
        }
    }

    /// A `Fail` raised by `oracle`.
    pub fn fail(oracle: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::Fail {
            oracle: oracle.into(),
            reason: reason.into(),
        }
    }

    /// A `NeedMore` raised by `oracle`.
    pub fn need_more(oracle: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::NeedMore {
            oracle: oracle.into(),
            reason: reason.into(),
        }
    }

    /// Dominance rank: `Pass` 0, `NeedMore` 1, `Yield` 2, `Fail` 3.
    pub fn rank(&self) -> u8 {
        match self {
            Self::Pass { .. } => 0,
            Self::NeedMore { .. } => 1,
            Self::Yield { .. } => 2,
            Self::Fail { .. } => 3,
        }
    }

    /// The wire kind: `"pass"`, `"fail"`, `"yield"` or `"need_more"`.
    pub fn kind_str(&self) -> &'static str {
        match self {
            Self::Pass { .. } => "pass",
            Self::Fail { .. } => "fail",
            Self::Yield { .. } => "yield",
            Self::NeedMore { .. } => "need_more",
        }
    }

    /// `true` for [`WindowVerdict::Pass`].
    pub fn is_pass(&self) -> bool {
        matches!(self, Self::Pass { .. })
    }

    /// Appends the canonical wire form (keys sorted, no whitespace, JCR-1 string escaping).
    ///
    /// A `Yield` whose `seen_at` exceeds [`canon::MAX_SAFE_INTEGER`] is refused with
    /// [`OracleError::SeenAtUnsafe`] and nothing is written.
    pub fn write_wire(&self, out: &mut Vec<u8>) -> Result<()> {
        match self {
            Self::Pass { chain } => {
                out.extend_from_slice(b"{\"chain\":[");
                for (i, name) in chain.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    canon::write_str(out, name);
                }
                out.extend_from_slice(b"],\"kind\":\"pass\"}");
            }
            Self::Yield { seen_at } => {
                if *seen_at > canon::MAX_SAFE_INTEGER {
                    return Err(OracleError::SeenAtUnsafe { seen_at: *seen_at });
                }
                out.extend_from_slice(b"{\"kind\":\"yield\",\"seen_at\":");
                canon::write_u64(out, *seen_at)
                    .map_err(|_| OracleError::SeenAtUnsafe { seen_at: *seen_at })?;
                out.push(b'}');
            }
            Self::Fail { oracle, reason } | Self::NeedMore { oracle, reason } => {
                out.extend_from_slice(b"{\"kind\":");
                canon::write_str(out, self.kind_str());
                out.extend_from_slice(b",\"oracle\":");
                canon::write_str(out, oracle);
                out.extend_from_slice(b",\"reason\":");
                canon::write_str(out, reason);
                out.push(b'}');
            }
        }
        Ok(())
    }

    /// The canonical wire form as a new buffer; see [`WindowVerdict::write_wire`].
    pub fn wire_bytes(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.write_wire(&mut out)?;
        Ok(out)
    }
}

/// Combines named verdicts by dominance, as [`crate::CompositeStreamOracle`] does:
///
/// * the highest [`WindowVerdict::rank`] wins;
/// * among verdicts of that rank, the first in order wins (its `oracle`, `reason` or `seen_at`
///   is kept unchanged);
/// * when every verdict is a `Pass`, the result is a `Pass` whose `chain` concatenates, in
///   order, each entry's `chain`, or the entry's name when that chain is empty;
/// * no verdicts at all give `Pass { chain: [] }`.
pub fn combine<'a, I>(signals: I) -> WindowVerdict
where
    I: IntoIterator<Item = (&'a str, &'a WindowVerdict)>,
{
    let mut chain = Vec::new();
    let mut winner: Option<&WindowVerdict> = None;
    for (name, verdict) in signals {
        match verdict {
            WindowVerdict::Pass { chain: c } if winner.is_none() => {
                if c.is_empty() {
                    chain.push(name.to_owned());
                } else {
                    chain.extend(c.iter().cloned());
                }
            }
            WindowVerdict::Pass { .. } => {}
            v => {
                if winner.is_none_or(|w| v.rank() > w.rank()) {
                    winner = Some(v);
                }
            }
        }
    }
    match winner {
        Some(v) => v.clone(),
        None => WindowVerdict::Pass { chain },
    }
}
