//! The completeness checker: are these receipts exactly the sealed stream, in order?

use core::fmt;
use std::collections::HashMap;

use crate::cose::{Checkpoint, verify_consistency_step};
use crate::error::ProofCode;
use crate::merkle::Frontier;

/// The most window ids one [`Problem::Missing`] run names one by one; a longer run of gaps is
/// reported as [`Problem::MissingUnlocated`].
pub const MAX_NAMED_GAPS: u64 = 1024;

/// What the checker needs of one receipt, in the order the receipts were given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiptEntry {
    /// The receipt's `window_id`.
    pub window_id: u64,
    /// BLAKE3 of the receipt's canonical bytes (the leaf entry).
    pub content_hash: [u8; 32],
    /// The receipt's `stream_id`.
    pub stream_id: String,
    /// The receipt's `steward`.
    pub steward: String,
}

/// One problem, typed and located. `index` is a position in the receipt list (0-based);
/// `seal_index` a position in the checkpoint list.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Problem {
    /// No checkpoint at all.
    NoSeals,
    /// The last checkpoint is not final (the stream may have gone on).
    NoFinalSeal,
    /// Successive checkpoints do not describe one growing stream.
    SealChain {
        /// The later checkpoint.
        seal_index: usize,
        /// Which rule broke (`stream_changed`, `first_window_changed`, `size_decreased`,
        /// `last_window_decreased`, `closed_at_regressed`, `seal_after_final`,
        /// `first_seal_has_predecessor`).
        reason: &'static str,
    },
    /// A checkpoint's consistency proof does not lead from its predecessor's root to its own.
    ConsistencyFailed {
        /// The later checkpoint.
        seal_index: usize,
        /// Why.
        code: ProofCode,
    },
    /// A receipt of another stream or steward.
    Foreign {
        /// Where.
        index: usize,
        /// Its window id.
        window_id: u64,
    },
    /// A window id seen before.
    Repeated {
        /// Where the repeat is.
        index: usize,
        /// The window id.
        window_id: u64,
        /// Where it was first seen.
        first_index: usize,
        /// Whether both receipts have the same content hash (a copy) or not (a conflict).
        same_content: bool,
    },
    /// A window id smaller than one before it.
    Reordered {
        /// Where.
        index: usize,
        /// The window id.
        window_id: u64,
        /// The largest window id before it.
        previous_window_id: u64,
    },
    /// A receipt outside the final seal's `[first_window_id, last_window_id]`.
    Extra {
        /// Where.
        index: usize,
        /// The window id.
        window_id: u64,
    },
    /// A sealed window without a receipt, located exactly (the seal says its interval has no
    /// empty window, so every gap is a missing receipt).
    Missing {
        /// The missing window id.
        window_id: u64,
        /// The receipt list position where it belongs.
        before_index: usize,
        /// The first checkpoint that sealed it.
        seal_index: usize,
    },
    /// Sealed windows without receipts whose ids cannot be told from empty windows.
    MissingUnlocated {
        /// The first checkpoint that sealed them.
        seal_index: usize,
        /// How many.
        count: u64,
        /// The interval of window ids they lie in, inclusive.
        window_ids: (u64, u64),
    },
    /// More receipts in a checkpoint's interval than it sealed.
    Surplus {
        /// The checkpoint.
        seal_index: usize,
        /// Receipts it sealed in its interval.
        sealed: u64,
        /// Receipts found there.
        found: u64,
    },
    /// The final seal's `tree_size` differs from the number of receipts of the stream.
    TreeSizeMismatch {
        /// The final checkpoint.
        seal_index: usize,
        /// Its tree size.
        sealed: u64,
        /// Receipts counted.
        receipts: u64,
    },
    /// The root recomputed from the receipts differs from the sealed root.
    RootMismatch {
        /// The checkpoint.
        seal_index: usize,
        /// Its tree size.
        tree_size: u64,
    },
    /// The receipt at leaf 0 or leaf `tree_size - 1` has another window id than the seal says.
    WindowRangeMismatch {
        /// The checkpoint.
        seal_index: usize,
        /// `first_window_id` or `last_window_id`.
        field: &'static str,
        /// The sealed value.
        sealed: u64,
        /// The receipt's window id.
        found: u64,
    },
}

impl Problem {
    /// A stable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NoSeals => "no_seals",
            Self::NoFinalSeal => "no_final_seal",
            Self::SealChain { .. } => "seal_chain_broken",
            Self::ConsistencyFailed { .. } => "consistency_failed",
            Self::Foreign { .. } => "foreign_receipt",
            Self::Repeated { .. } => "repeated_window",
            Self::Reordered { .. } => "reordered_window",
            Self::Extra { .. } => "extra_window",
            Self::Missing { .. } => "missing_window",
            Self::MissingUnlocated { .. } => "missing_windows_unlocated",
            Self::Surplus { .. } => "surplus_windows",
            Self::TreeSizeMismatch { .. } => "tree_size_mismatch",
            Self::RootMismatch { .. } => "root_mismatch",
            Self::WindowRangeMismatch { .. } => "window_range_mismatch",
        }
    }
}

impl Problem {
    /// The problem as a JSON object: `code` plus its location fields (for reports and vectors).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::json;
        let c = self.code();
        match self {
            Self::NoSeals | Self::NoFinalSeal => json!({ "code": c }),
            Self::SealChain { seal_index, reason } => {
                json!({ "code": c, "seal_index": seal_index, "reason": reason })
            }
            Self::ConsistencyFailed { seal_index, code } => {
                json!({ "code": c, "seal_index": seal_index, "proof_code": code.as_str() })
            }
            Self::Foreign { index, window_id } | Self::Extra { index, window_id } => {
                json!({ "code": c, "index": index, "window_id": window_id })
            }
            Self::Repeated {
                index,
                window_id,
                first_index,
                same_content,
            } => json!({
                "code": c, "index": index, "window_id": window_id,
                "first_index": first_index, "same_content": same_content,
            }),
            Self::Reordered {
                index,
                window_id,
                previous_window_id,
            } => json!({
                "code": c, "index": index, "window_id": window_id,
                "previous_window_id": previous_window_id,
            }),
            Self::Missing {
                window_id,
                before_index,
                seal_index,
            } => json!({
                "code": c, "window_id": window_id, "before_index": before_index,
                "seal_index": seal_index,
            }),
            Self::MissingUnlocated {
                seal_index,
                count,
                window_ids: (a, b),
            } => json!({
                "code": c, "seal_index": seal_index, "count": count,
                "window_ids": [a, b],
            }),
            Self::Surplus {
                seal_index,
                sealed,
                found,
            }
            | Self::TreeSizeMismatch {
                seal_index,
                sealed,
                receipts: found,
            } => json!({ "code": c, "seal_index": seal_index, "sealed": sealed, "found": found }),
            Self::RootMismatch {
                seal_index,
                tree_size,
            } => json!({ "code": c, "seal_index": seal_index, "tree_size": tree_size }),
            Self::WindowRangeMismatch {
                seal_index,
                field,
                sealed,
                found,
            } => json!({
                "code": c, "seal_index": seal_index, "field": field,
                "sealed": sealed, "found": found,
            }),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = self.code();
        match self {
            Self::NoSeals => write!(f, "{c}: no checkpoint"),
            Self::NoFinalSeal => write!(f, "{c}: the last checkpoint is not final"),
            Self::SealChain { seal_index, reason } => {
                write!(f, "{c}: checkpoint {seal_index}: {reason}")
            }
            Self::ConsistencyFailed { seal_index, code } => {
                write!(f, "{c}: checkpoint {seal_index}: {}", code.as_str())
            }
            Self::Foreign { index, window_id } => {
                write!(
                    f,
                    "{c}: receipt {index} (window {window_id}) is of another stream"
                )
            }
            Self::Repeated {
                index,
                window_id,
                first_index,
                same_content,
            } => write!(
                f,
                "{c}: receipt {index} repeats window {window_id} of receipt {first_index}{}",
                if *same_content {
                    ""
                } else {
                    " with other content"
                }
            ),
            Self::Reordered {
                index,
                window_id,
                previous_window_id,
            } => write!(
                f,
                "{c}: receipt {index} (window {window_id}) comes after window {previous_window_id}"
            ),
            Self::Extra { index, window_id } => write!(
                f,
                "{c}: receipt {index} (window {window_id}) is outside the sealed windows"
            ),
            Self::Missing {
                window_id,
                before_index,
                seal_index,
            } => write!(
                f,
                "{c}: window {window_id} (sealed by checkpoint {seal_index}) is missing before receipt {before_index}"
            ),
            Self::MissingUnlocated {
                seal_index,
                count,
                window_ids: (a, b),
            } => write!(
                f,
                "{c}: {count} window(s) sealed by checkpoint {seal_index} are missing among windows {a}..={b}"
            ),
            Self::Surplus {
                seal_index,
                sealed,
                found,
            } => write!(
                f,
                "{c}: checkpoint {seal_index} sealed {sealed} receipt(s) in its interval, {found} found"
            ),
            Self::TreeSizeMismatch {
                seal_index,
                sealed,
                receipts,
            } => write!(
                f,
                "{c}: checkpoint {seal_index} sealed {sealed} receipt(s), {receipts} found"
            ),
            Self::RootMismatch {
                seal_index,
                tree_size,
            } => write!(
                f,
                "{c}: the receipts do not hash to checkpoint {seal_index}'s root (tree size {tree_size})"
            ),
            Self::WindowRangeMismatch {
                seal_index,
                field,
                sealed,
                found,
            } => write!(
                f,
                "{c}: checkpoint {seal_index}: {field} is {sealed}, the receipt there is window {found}"
            ),
        }
    }
}

/// The checker's findings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamReport {
    /// Every problem, in the order found: seal chain, receipts in list order, then per
    /// checkpoint.
    pub problems: Vec<Problem>,
    /// Receipts that belong to the sealed stream (not foreign, repeated or extra).
    pub accepted: u64,
}

impl StreamReport {
    /// `true` when the receipts are exactly the sealed stream, in order, and the last seal is
    /// final.
    pub fn is_complete(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Checks `receipts` (in the order given) against `checkpoints` (in order, each already
/// signature-verified with [`crate::verify_checkpoint`]). Pure; memory is linear in the
/// number of receipts.
pub fn check_stream(receipts: &[ReceiptEntry], checkpoints: &[Checkpoint]) -> StreamReport {
    let mut problems = Vec::new();
    let Some(fin) = checkpoints.last().map(|c| &c.seal) else {
        problems.push(Problem::NoSeals);
        return StreamReport {
            problems,
            accepted: 0,
        };
    };
    // 1. The seal chain.
    let mut chain_ok = true;
    if checkpoints[0].consistency.is_some() {
        problems.push(Problem::SealChain {
            seal_index: 0,
            reason: "first_seal_has_predecessor",
        });
        chain_ok = false;
    }
    for (k, pair) in checkpoints.windows(2).enumerate() {
        let (prev, cur) = (&pair[0].seal, &pair[1]);
        let seal_index = k + 1;
        let s = &cur.seal;
        let reason = if prev.stream_id != s.stream_id || prev.steward != s.steward {
            Some("stream_changed")
        } else if prev.first_window_id != s.first_window_id {
            Some("first_window_changed")
        } else if s.tree_size < prev.tree_size {
            Some("size_decreased")
        } else if s.last_window_id < prev.last_window_id {
            Some("last_window_decreased")
        } else if s.closed_at < prev.closed_at {
            Some("closed_at_regressed")
        } else if prev.is_final {
            Some("seal_after_final")
        } else {
            None
        };
        if let Some(reason) = reason {
            problems.push(Problem::SealChain { seal_index, reason });
            chain_ok = false;
        }
        if let Err(code) = verify_consistency_step(prev, cur) {
            problems.push(Problem::ConsistencyFailed { seal_index, code });
        }
    }
    if !fin.is_final {
        problems.push(Problem::NoFinalSeal);
    }

    // 2. The receipts, in list order.
    let mut seen: HashMap<u64, usize> = HashMap::with_capacity(receipts.len());
    let mut max_id: Option<u64> = None;
    let mut accepted: Vec<(usize, u64, [u8; 32])> = Vec::with_capacity(receipts.len());
    for (index, r) in receipts.iter().enumerate() {
        let window_id = r.window_id;
        if r.stream_id != fin.stream_id || r.steward != fin.steward {
            problems.push(Problem::Foreign { index, window_id });
            continue;
        }
        if let Some(&first_index) = seen.get(&window_id) {
            problems.push(Problem::Repeated {
                index,
                window_id,
                first_index,
                same_content: receipts[first_index].content_hash == r.content_hash,
            });
            continue;
        }
        seen.insert(window_id, index);
        if window_id < fin.first_window_id || window_id > fin.last_window_id {
            problems.push(Problem::Extra { index, window_id });
            continue;
        }
        if let Some(m) = max_id
            && window_id < m
        {
            problems.push(Problem::Reordered {
                index,
                window_id,
                previous_window_id: m,
            });
        }
        max_id = Some(max_id.map_or(window_id, |m| m.max(window_id)));
        accepted.push((index, window_id, r.content_hash));
    }

    // 3. Per checkpoint interval: counts, then the root.
    let mut ids: Vec<(u64, usize)> = accepted.iter().map(|&(i, w, _)| (w, i)).collect();
    ids.sort_unstable();
    let mut counts_ok = chain_ok;
    let mut frontier = Frontier::new();
    let mut next_leaf = 0usize;
    let mut prev_last: Option<u64> = None;
    let mut prev_size = 0u64;
    for (seal_index, c) in checkpoints.iter().enumerate() {
        let s = &c.seal;
        let lo = prev_last.map_or(s.first_window_id, |p| p.saturating_add(1));
        let hi = s.last_window_id;
        if chain_ok && lo <= hi.saturating_add(1) {
            let a = ids.partition_point(|&(w, _)| w < lo);
            let b = ids.partition_point(|&(w, _)| w <= hi);
            let found = (b - a) as u64;
            let sealed = s.tree_size.saturating_sub(prev_size);
            let width = if lo > hi {
                0
            } else {
                (hi - lo).saturating_add(1)
            };
            if found < sealed {
                counts_ok = false;
                let missing = sealed - found;
                let gaps = width.saturating_sub(found);
                if gaps == missing && gaps <= MAX_NAMED_GAPS {
                    let mut j = a;
                    for w in lo..=hi {
                        while j < b && ids[j].0 < w {
                            j += 1;
                        }
                        if j < b && ids[j].0 == w {
                            continue;
                        }
                        let before_index = if j < ids.len() {
                            ids[j].1
                        } else {
                            receipts.len()
                        };
                        problems.push(Problem::Missing {
                            window_id: w,
                            before_index,
                            seal_index,
                        });
                    }
                } else {
                    problems.push(Problem::MissingUnlocated {
                        seal_index,
                        count: missing,
                        window_ids: (lo, hi),
                    });
                }
            } else if found > sealed {
                counts_ok = false;
                problems.push(Problem::Surplus {
                    seal_index,
                    sealed,
                    found,
                });
            }
        }
        // The root at this size, from the receipts in list order.
        // A decoded seal has tree_size >= 1; a hand-built one may not, and is skipped here.
        let size = usize::try_from(s.tree_size).unwrap_or(usize::MAX);
        if counts_ok && size >= 1 && size <= accepted.len() {
            while (frontier.size() as usize) < size {
                let (_, _, h) = accepted[next_leaf];
                // A frontier of at most 2^64 - 1 leaves never fails to grow here.
                let _ = frontier.append(&h);
                next_leaf += 1;
            }
            if frontier.root() != s.root {
                problems.push(Problem::RootMismatch {
                    seal_index,
                    tree_size: s.tree_size,
                });
            }
            let (first, last) = (accepted[0].1, accepted[size - 1].1);
            if first != s.first_window_id {
                problems.push(Problem::WindowRangeMismatch {
                    seal_index,
                    field: "first_window_id",
                    sealed: s.first_window_id,
                    found: first,
                });
            }
            if last != s.last_window_id {
                problems.push(Problem::WindowRangeMismatch {
                    seal_index,
                    field: "last_window_id",
                    sealed: s.last_window_id,
                    found: last,
                });
            }
        }
        prev_last = Some(hi);
        prev_size = s.tree_size;
    }
    let n = accepted.len() as u64;
    if n != fin.tree_size {
        problems.push(Problem::TreeSizeMismatch {
            seal_index: checkpoints.len() - 1,
            sealed: fin.tree_size,
            receipts: n,
        });
    }
    StreamReport {
        problems,
        accepted: n,
    }
}
