//! The meter beside a `jouleclaw_pipeline::Pipeline`: what every producer of
//! `interaction-metrics/1` (the `jouleclaw run` command, the Python binding) feeds it, in one
//! place.

use jouleclaw_jcr1::cose::Signer;
use jouleclaw_pipeline::{ClosedWindow, TickOutcome};
use jouleclaw_stream::{StreamSpec, Tick};

use crate::cose::{SignedInteraction, sign};
use crate::document::InteractionDocument;
use crate::error::Result;
use crate::meter::{InteractionConfig, InteractionMeter};

/// An [`InteractionMeter`] fed as a pipeline runs, and the content hashes of the window
/// receipts it closed, in window order: at the end, the signed document bound to them.
///
/// Pure: the caller passes each pushed tick with the pipeline's outcome for it
/// ([`PipelineMeter::push`]) and each window closed outside a push
/// ([`PipelineMeter::closed`]). Memory: the meter's and one 32-byte hash per receipt.
#[derive(Debug, Clone)]
pub struct PipelineMeter {
    meter: InteractionMeter,
    hashes: Vec<[u8; 32]>,
}

impl PipelineMeter {
    /// A meter with `config` (refused when [`InteractionConfig::validate`] refuses it).
    pub fn new(config: InteractionConfig) -> Result<Self> {
        Ok(Self {
            meter: InteractionMeter::new(config)?,
            hashes: Vec::new(),
        })
    }

    /// The meter.
    pub fn meter(&self) -> &InteractionMeter {
        &self.meter
    }

    /// The content hashes of the windows closed so far, in window order.
    pub fn content_hashes(&self) -> &[[u8; 32]] {
        &self.hashes
    }

    /// One tick the pipeline accepted (`tick` as pushed) and its outcome, in this order: the
    /// window it closed, the tick, and the ticks the stages produced from it (each with its
    /// channel's direction in `spec`). A refusal of the meter is returned at the first tick
    /// it refuses; the window's hash is recorded before it.
    pub fn push(&mut self, tick: &Tick, outcome: &TickOutcome, spec: &StreamSpec) -> Result<()> {
        if let Some(w) = &outcome.closed {
            self.closed(w);
        }
        self.meter.observe(tick, outcome.direction)?;
        for report in &outcome.stages {
            for p in report.result.iter().flatten() {
                if let Some(c) = spec.channel(p.tick.channel_id) {
                    self.meter.observe(&p.tick, c.direction)?;
                }
            }
        }
        Ok(())
    }

    /// A window closed outside a push (by `close_window` or `end_windows`).
    pub fn closed(&mut self, w: &ClosedWindow) {
        self.hashes.push(*w.content_hash.as_bytes());
    }

    /// Ends the stream: derives the events and returns the document of `steward`'s stream
    /// `stream_id` bound to every window closed. Call it after the last window closed.
    pub fn finish(&mut self, steward: &str, stream_id: &str) -> Result<InteractionDocument> {
        let config = *self.meter.config();
        let frames = self.meter.frame_count();
        let events = self.meter.finish()?.to_vec();
        InteractionDocument::new(steward, stream_id, config, frames, &events, &self.hashes)
    }

    /// [`PipelineMeter::finish`], then the document signed by `signer`.
    pub fn finish_signed(
        &mut self,
        signer: &dyn Signer,
        steward: &str,
        stream_id: &str,
    ) -> Result<SignedInteraction> {
        let doc = self.finish(steward, stream_id)?;
        sign(signer, &doc)
    }
}
