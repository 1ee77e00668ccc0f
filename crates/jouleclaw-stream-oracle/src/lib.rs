//! Per-request and per-window oracles of the jouleclaw streaming substrate.
//!
//! A per-request [`Oracle`] judges one exchange (input bytes, output bytes) and returns a
//! [`Verdict`]. A [`StreamOracle`] judges a closed [`jouleclaw_stream::StreamWindow`] and may
//! raise a verdict early on the tick that warrants it; its [`WindowVerdict`] is ranked
//! `Fail > Yield > NeedMore > Pass` and has a canonical JSON wire form. Everything here is pure:
//! no clocks, I/O, threads or randomness. The normative contract is `spec/STREAM-ORACLE.md`.
//!
//! The public interface is:
//! - [`Oracle`], [`Verdict`]: the per-request surface;
//! - [`StreamOracle`], [`WindowContext`], [`WindowVerdict`], [`combine`]: the per-window
//!   surface, the verdict wire forms and the dominance rule;
//! - [`OracleError`], [`Result`]: every refusal, with a stable code.
//!
//! ```
//! use jouleclaw_stream_oracle::*;
//!
//! let v = WindowVerdict::Yield { seen_at: 7 };
//! assert_eq!(v.wire_bytes()?, br#"{"kind":"yield","seen_at":7}"#);
//! assert_eq!(v.rank(), 2);
//!
//! let budget = ByteBudgetOracle::new(2000, 16);
//! assert!(budget.passes(b"hello", b"twenty-six bytes of output"));
//! # Ok::<(), OracleError>(())
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![deny(clippy::unwrap_used)]

mod error;
mod oracle;
mod stream;
mod verdict;

pub use error::{OracleError, Result};
pub use oracle::{ByteBudgetOracle, Oracle, TextRequirement, TextWellFormedOracle};
pub use stream::{StreamOracle, WindowContext};
pub use verdict::{Verdict, WindowVerdict, combine};
