//! The [`Notary`]: the second half of a [`crate::Pipeline`], everything after the window
//! boundary.

use core::fmt;

use jouleclaw_jcr1::cose::{self, Signer};
use jouleclaw_jcr1::{
    EnergySource, Estimator, Jcr1Error, NoClock, ReceiptMinter, StreamWindowReceipt, UtcSecond,
};
use jouleclaw_seal::{SealBatch, SealedDocuments, StreamSealer};
use jouleclaw_stream::WindowConservationFinding;
use jouleclaw_stream_oracle::WindowVerdict;

use crate::driver::{ClosedAt, ClosedWindow, PipelineConfig, SigningPolicy, WindowSignatures};
use crate::error::{PipelineError, Result};
use crate::judge::{JudgedParts, JudgedWindow};

/// The largest window id any receipt can carry: `2^53 - 1` (16 digits in the receipt `id`).
const MAX_WINDOW_ID: u64 = (1 << 53) - 1;

/// The second half of a [`crate::Pipeline`]: mints a [`JudgedWindow`]'s `stream-window/1`
/// receipt at the window's end in stream time ([`ClosedAt`]), hashes it, signs it as a tagged
/// COSE_Sign1 and appends it to the stream's Merkle log, under the configuration's
/// [`SigningPolicy`]; [`Notary::finish`] signs the final checkpoint.
///
/// The signer is handed in on each call, as [`StreamSealer`] takes it: a stream's windows and
/// checkpoints must all be signed by the same signer, because a verifier checks them under one
/// key. A failure (an unencodable receipt, a failing energy source or signer, a full log)
/// leaves the notary unusable: every later call returns [`PipelineError::Poisoned`], because
/// the log may already hold the window. Pure: no clocks, I/O, threads or randomness; `Send`
/// when its energy source is.
///
/// ```
/// use std::sync::Arc;
/// use jouleclaw_jcr1::Estimator;
/// use jouleclaw_jcr1::cose::SoftwareSigner;
/// use jouleclaw_pipeline::{Judge, Notary, PipelineConfig, SigningPolicy, duplex_voice_oracle};
/// use jouleclaw_stream::{StreamSpec, Tick, TickMarker, duplex};
///
/// let config = PipelineConfig::new("did:example:steward", "call-1")
///     .with_signing(SigningPolicy::checkpoint_every(25));
/// let spec = Arc::new(StreamSpec::duplex_voice_default());
/// let mut judge = Judge::new(spec, config.policy, duplex_voice_oracle())?;
/// let mut notary = Notary::new(&config, Estimator::default())?;
/// let signer = SoftwareSigner::rfc8032_test_key();
///
/// judge.push(Tick::marker(0, duplex::CONTROL, TickMarker::BargeIn, 40_000_000))?;
/// let judged = judge.finish()?.expect("window 0 was open");
/// let closed = notary.notarize(judged, &signer)?;
/// assert_eq!((closed.receipt.window_id, closed.leaf_index), (0, Some(0)));
/// let seal = notary.finish(&signer)?.expect("one receipt to seal");
/// assert!(seal.checkpoint.seal.is_final);
/// # Ok::<(), jouleclaw_pipeline::PipelineError>(())
/// ```
pub struct Notary<E: EnergySource = Estimator> {
    closed_at: ClosedAt,
    signing: SigningPolicy,
    minter: ReceiptMinter<NoClock, E>,
    sealer: Option<StreamSealer>,
    windows: u64,
    poisoned: bool,
    finished: bool,
}

impl<E: EnergySource> fmt::Debug for Notary<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Notary")
            .field("closed_at", &self.closed_at)
            .field("signing", &self.signing)
            .field("windows", &self.windows)
            .field("poisoned", &self.poisoned)
            .finish_non_exhaustive()
    }
}

impl<E: EnergySource> Notary<E> {
    /// A notary for the stream `config` names, reading its steward, stream id, `closed_at` and
    /// signing policy (the ledger policy is the [`crate::Judge`]'s). Refuses a steward or
    /// stream id that is empty or too long for a receipt of any window (each must fit the
    /// receipt's 4,096-byte string limit, the stream id with room for `:` and a 16-digit
    /// window id in the receipt `id`), so that no run fails late on a name, and a checkpoint
    /// policy with `every_windows` or `max_windows` of 0.
    pub fn new(config: &PipelineConfig, energy: E) -> Result<Self> {
        let minter = ReceiptMinter::for_stream_time(&config.steward, &config.stream_id, energy)?;
        probe_names(config)?;
        let sealer = match config.signing {
            SigningPolicy::EveryWindow => None,
            SigningPolicy::Checkpoint {
                every_windows,
                max_windows,
                ..
            } => {
                if every_windows == 0 || max_windows == 0 {
                    return Err(PipelineError::BadSigningPolicy);
                }
                Some(StreamSealer::new(
                    &config.stream_id,
                    &config.steward,
                    max_windows,
                ))
            }
        };
        Ok(Self {
            closed_at: config.closed_at,
            signing: config.signing,
            minter,
            sealer,
            windows: 0,
            poisoned: false,
            finished: false,
        })
    }

    /// This notary without inclusion receipts: under [`SigningPolicy::Checkpoint`] its
    /// checkpoints' [`SealBatch::inclusion`] is empty (the sealer's
    /// [`StreamSealer::without_inclusion_receipts`]); every other byte is the same. For a
    /// writer that stores the checkpoints and derives an inclusion receipt only when one is
    /// asked for (`spec/STREAM-AT-REST.md` layout `stream-at-rest/2`): a checkpoint then costs
    /// its signature and no per-window receipt.
    pub fn without_inclusion_receipts(mut self) -> Self {
        self.sealer = self
            .sealer
            .take()
            .map(StreamSealer::without_inclusion_receipts);
        self
    }

    /// Under [`SigningPolicy::Checkpoint`], the receipts sealed so far: their count and the
    /// RFC 9162 root over their content hashes (what a document bound to the receipts signs,
    /// and what the final seal will seal). `None` without a sealer.
    pub fn sealed_so_far(&self) -> Option<(u64, [u8; 32])> {
        self.sealer.as_ref().map(|s| (s.size(), s.log().root()))
    }

    /// Windows notarized so far.
    pub fn windows(&self) -> u64 {
        self.windows
    }

    /// Whether an earlier failure left the notary unusable.
    pub fn is_poisoned(&self) -> bool {
        self.poisoned
    }

    /// Mints, hashes, signs and seals one judged window, in the order the windows closed:
    /// the receipt, its content hash and canonical bytes, its own COSE_Sign1 when the signing
    /// policy signs this window, its leaf in the log and, every `every_windows` windows, the
    /// checkpoint it completed ([`ClosedWindow`]).
    pub fn notarize(&mut self, judged: JudgedWindow, signer: &dyn Signer) -> Result<ClosedWindow> {
        self.usable()?;
        let result = self.try_notarize(judged.into_parts(), signer);
        match &result {
            Ok(_) => self.windows += 1,
            Err(_) => self.poisoned = true,
        }
        result
    }

    /// Ends the stream: under [`SigningPolicy::Checkpoint`] signs the final checkpoint
    /// (`final: true`) over every receipt of the stream, with the inclusion receipts of the
    /// windows since the previous checkpoint. A stream without a single receipt, or under
    /// [`SigningPolicy::EveryWindow`], has nothing to seal (`None`). Afterwards every call
    /// returns [`PipelineError::Finished`].
    pub fn finish(&mut self, signer: &dyn Signer) -> Result<Option<SealBatch>> {
        self.finish_inner(signer, None)
    }

    /// [`Notary::finish`] whose final checkpoint is a `stream-seal/2` seal committing to
    /// `documents` (each signed document of the call by kind, with the SHA-256 of its
    /// COSE_Sign1 bytes: `jouleclaw_seal::document_digest`). Sign the documents first: they bind
    /// to the receipts, which the last window fixes.
    pub fn finish_with_documents(
        &mut self,
        signer: &dyn Signer,
        documents: SealedDocuments,
    ) -> Result<Option<SealBatch>> {
        self.finish_inner(signer, Some(documents))
    }

    fn finish_inner(
        &mut self,
        signer: &dyn Signer,
        documents: Option<SealedDocuments>,
    ) -> Result<Option<SealBatch>> {
        self.usable()?;
        let seal = match self.sealer.as_mut() {
            Some(sealer) if sealer.size() > 0 => match match documents {
                Some(d) => sealer.finish_with_documents(signer, d),
                None => sealer.checkpoint(signer, true),
            } {
                Ok(batch) => Some(batch),
                Err(e) => {
                    self.poisoned = true;
                    return Err(e.into());
                }
            },
            _ => None,
        };
        self.finished = true;
        Ok(seal)
    }

    fn usable(&self) -> Result<()> {
        crate::error::usable(self.poisoned, self.finished)
    }

    fn try_notarize(&mut self, judged: JudgedParts, signer: &dyn Signer) -> Result<ClosedWindow> {
        let JudgedParts {
            window,
            verdict,
            conservation,
            signals,
            early,
        } = judged;
        let closed_at = UtcSecond::from_unix(self.closed_at.unix_for(window.end_ns())).ok_or(
            Jcr1Error::Unencodable {
                field: "closed_at",
                reason: "clock outside years 0000-9999",
            },
        )?;
        let minted = self
            .minter
            .mint_at(closed_at, &window, &verdict, conservation)?;
        let signed = if self.signs_window(&verdict) {
            Some(cose::sign_payload(
                signer,
                &minted.receipt,
                minted.bytes.clone(),
            )?)
        } else {
            None
        };
        let (leaf_index, seal) = match (self.sealer.as_mut(), self.signing) {
            (Some(sealer), SigningPolicy::Checkpoint { every_windows, .. }) => {
                let leaf = sealer.append(
                    minted.receipt.window_id,
                    minted.content_hash.as_bytes(),
                    closed_at,
                )?;
                let seal = if sealer.pending() >= every_windows {
                    Some(sealer.checkpoint(signer, false)?)
                } else {
                    None
                };
                (Some(leaf), seal)
            }
            _ => (None, None),
        };
        Ok(ClosedWindow {
            receipt: minted.receipt,
            content_hash: minted.content_hash,
            canonical: minted.bytes,
            signed,
            leaf_index,
            seal,
            substrate_bytes: window.substrate_bytes(),
            signals,
            early,
        })
    }

    /// Whether the signing policy gives this window a COSE_Sign1 of its own.
    fn signs_window(&self, verdict: &WindowVerdict) -> bool {
        match self.signing {
            SigningPolicy::EveryWindow => true,
            SigningPolicy::Checkpoint {
                window_signatures, ..
            } => match window_signatures {
                WindowSignatures::All => true,
                WindowSignatures::NonPass => !verdict.is_pass(),
                WindowSignatures::None => false,
            },
        }
    }
}

/// Refuses, when the notary is built, a steward or stream id that some later receipt could not
/// encode (a string over the receipt limits once the receipt `id` has grown to a 16-digit window
/// id): such a run would otherwise fail late, at the window whose id gains the digit.
fn probe_names(config: &PipelineConfig) -> Result<()> {
    let probe = StreamWindowReceipt {
        closed_at: UtcSecond::from_unix(0).ok_or(PipelineError::Internal {
            invariant: "second 0 is a receipt time",
        })?,
        steward: config.steward.clone(),
        stream_id: config.stream_id.clone(),
        window_id: MAX_WINDOW_ID,
        window_hash: blake3::Hash::from_bytes([0; 32]),
        tick_count: 0,
        inbound_bytes: 0,
        outbound_bytes: 0,
        joules_uj: 0,
        energy_provenance: jouleclaw_jcr1::EnergyProvenance::Estimator,
        verdict: WindowVerdict::pass_by("probe"),
        conservation: WindowConservationFinding::Conforming,
    };
    probe.encode()?;
    Ok(())
}
