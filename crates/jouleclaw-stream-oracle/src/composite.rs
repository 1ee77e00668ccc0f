//! [`CompositeStreamOracle`]: every backend, combined by dominance.

use core::fmt;

use jouleclaw_stream::{ChannelDirection, StreamWindow, Tick};

use crate::stream::{StageEvent, StreamOracle, WindowContext};
use crate::verdict::{WindowVerdict, combine};

/// Runs every backend on every tick and every window and combines their verdicts by
/// dominance ([`combine`]).
///
/// * **Never short-circuits.** A window can carry a barge-in and a content failure; every
///   backend is consulted, in order, whatever the others said.
/// * **Dominance.** `Fail > Yield > NeedMore > Pass`; among verdicts of the winning rank the
///   first backend in order wins.
/// * **Losing signals stay visible.** [`CompositeStreamOracle::last_signals`] holds every
///   backend's verdict for the last judged window, and
///   [`CompositeStreamOracle::last_tick_signals`] every early verdict raised on the last tick,
///   each as `(backend name, verdict)` in backend order.
/// * **Pass chain.** When every backend passes, the chain is the concatenation, in backend
///   order, of each backend's own chain (a leaf contributes its name). A nested composite that
///   passes therefore contributes the names of its leaves, flattened, not its own name.
/// * **Nesting.** A composite is itself a [`StreamOracle`], named by [`Self::new`]'s `name`.
///
/// A composite with no backends passes every window with an empty chain and raises nothing
/// early.
pub struct CompositeStreamOracle {
    name: String,
    backends: Vec<Box<dyn StreamOracle + Send>>,
    last_signals: Vec<(String, WindowVerdict)>,
    last_tick_signals: Vec<(String, WindowVerdict)>,
}

impl CompositeStreamOracle {
    /// A composite named `name` over `backends`, consulted in the given order.
    pub fn new(name: impl Into<String>, backends: Vec<Box<dyn StreamOracle + Send>>) -> Self {
        Self {
            name: name.into(),
            backends,
            last_signals: Vec::new(),
            last_tick_signals: Vec::new(),
        }
    }

    /// The backends' names, in order.
    pub fn backend_names(&self) -> impl Iterator<Item = &str> {
        self.backends.iter().map(|b| b.name())
    }

    /// Number of backends.
    pub fn len(&self) -> usize {
        self.backends.len()
    }

    /// `true` when there are no backends.
    pub fn is_empty(&self) -> bool {
        self.backends.is_empty()
    }

    /// Every backend's verdict for the last judged window, `(name, verdict)` in backend order;
    /// empty before the first window.
    pub fn last_signals(&self) -> &[(String, WindowVerdict)] {
        &self.last_signals
    }

    /// The early verdicts raised on the last tick, `(name, verdict)` in backend order; only
    /// backends that raised one appear.
    pub fn last_tick_signals(&self) -> &[(String, WindowVerdict)] {
        &self.last_tick_signals
    }
}

impl fmt::Debug for CompositeStreamOracle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompositeStreamOracle")
            .field("name", &self.name)
            .field("backends", &self.backend_names().collect::<Vec<_>>())
            .field("last_signals", &self.last_signals)
            .field("last_tick_signals", &self.last_tick_signals)
            .finish()
    }
}

fn as_pairs(signals: &[(String, WindowVerdict)]) -> impl Iterator<Item = (&str, &WindowVerdict)> {
    signals.iter().map(|(n, v)| (n.as_str(), v))
}

impl StreamOracle for CompositeStreamOracle {
    fn name(&self) -> &str {
        &self.name
    }

    fn on_tick(&mut self, tick: &Tick, direction: ChannelDirection) -> Option<WindowVerdict> {
        self.last_tick_signals.clear();
        for backend in &mut self.backends {
            if let Some(v) = backend.on_tick(tick, direction) {
                self.last_tick_signals.push((backend.name().to_owned(), v));
            }
        }
        if self.last_tick_signals.is_empty() {
            None
        } else {
            Some(combine(as_pairs(&self.last_tick_signals)))
        }
    }

    /// Forwards the event to every backend, in order.
    fn on_stage_event(&mut self, event: &StageEvent<'_>) {
        for backend in &mut self.backends {
            backend.on_stage_event(event);
        }
    }

    /// Forwards the end of the stream to every backend, in order.
    fn on_stream_end(&mut self) {
        for backend in &mut self.backends {
            backend.on_stream_end();
        }
    }

    fn judge(&mut self, window: &StreamWindow, ctx: &WindowContext) -> WindowVerdict {
        self.last_signals.clear();
        for backend in &mut self.backends {
            let v = backend.judge(window, ctx);
            self.last_signals.push((backend.name().to_owned(), v));
        }
        combine(as_pairs(&self.last_signals))
    }
}
