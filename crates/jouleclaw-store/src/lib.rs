//! The stream at rest: one home for the files a sealed or unsealed stream is kept in.
//!
//! Normative: `spec/STREAM-AT-REST.md`. The public interface is:
//!
//! - [`layout`]: the file names ([`layout::RECEIPTS_JSONL`], [`layout::RECEIPTS_CBOR`],
//!   [`layout::SEALS_CBOR`], [`layout::INCLUSION_CBOR`], [`layout::SUMMARY_JSON`],
//!   [`layout::SIGNER_PUB`]), their commit order, and [`layout::open_input`], which opens an
//!   input of a directory without following a symbolic link and refuses anything but a regular
//!   file;
//! - [`RunSummary`]: the typed `summary.json`;
//! - [`writer`]: the writer protocol: [`writer::StagedFile`] (create-new under a temporary
//!   name, sync, rename), [`writer::LockedDir`] (an exclusive lock on the output directory),
//!   [`writer::check_destination`] and [`writer::write_output`];
//! - [`verify_dir`]: the one verifier of a stream directory, bounded and streaming, returning a
//!   typed [`DirReport`] (each receipt's [`ReceiptStatus`], the [`Completeness`], every
//!   [`Problem`] with its index and window id, up to [`MAX_NAMED_PROBLEMS`] named), which also
//!   checks the call's signed documents ([`layout::DOCUMENT_FILES`]: `stop-latency.cbor`,
//!   `interaction-metrics.cbor`) under the key and against the receipts, a missing one when
//!   required ([`DirReport::document_problems`], the verified [`DirReport::stop_latency`] and
//!   [`DirReport::interaction`]);
//! - [`verify_stream`]: the same verifier over any [`source::StreamSource`] (a stream served
//!   under the layout's file names: [`source::DirSource`] for a directory; `jouleclaw-live`
//!   serves its stream folders and the JetStream read-back through it);
//! - [`derive_inclusion_receipt`]: one window's RFC 9942 inclusion receipt, derived from a
//!   sealed directory's `seals.cbor` and `receipts.jsonl` for a third party;
//! - [`escape_untrusted`]: the one sanitizer for untrusted text shown on a terminal;
//! - [`StoreError`] and [`Result`].
//!
//! ```
//! use jouleclaw_store::{Outcome, layout};
//! assert_eq!(layout::COMMIT_ORDER.last(), Some(&layout::SUMMARY_JSON));
//! let dir = std::env::temp_dir().join(format!("jc-store-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! let key = jouleclaw_jcr1::cose::SoftwareSigner::rfc8032_test_key();
//! use jouleclaw_jcr1::cose::Signer as _;
//! // The key is checked once (the one key rule), then every stream is verified under it.
//! let key = jouleclaw_jcr1::cose::ValidKey::new(key.verifying_key()).unwrap();
//! let report = jouleclaw_store::verify_dir(&dir, &key, &mut |_, _| {}).unwrap();
//! // An empty folder is no stream: receipts.jsonl is missing.
//! assert_eq!(report.outcome(), Outcome::Failed);
//! assert_eq!(report.problems[0].code, "missing_file");
//! std::fs::remove_dir_all(&dir).unwrap();
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![deny(clippy::unwrap_used)]

mod error;
mod inclusion;
pub mod layout;
pub mod source;
mod summary;
mod text;
mod verify;
pub mod writer;

pub use error::{Result, StoreError};
pub use inclusion::{DerivedInclusion, derive_inclusion_receipt};
pub use summary::{
    ConservationCounts, LlmSchemaFacts, RunSummary, SignerFacts, SigningFacts, VerdictCounts,
};
pub use text::escape_untrusted;
pub use verify::{
    Completeness, DirReport, MAX_NAMED_PROBLEMS, MAX_RECEIPTS, Outcome, Problem, ReceiptRecord,
    ReceiptStatus, Totals, verify_dir, verify_stream,
};
