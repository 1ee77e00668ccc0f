//! What `jouleclaw live` tells at the end of its run: the substrate's and the sink's counts,
//! the schedule against what was minted, the latencies.

use std::sync::atomic::Ordering;

use jouleclaw_live::synth::{Capacity, Latency};
use jouleclaw_live::{SinkStats, SubstrateStats};

use crate::out::say;

/// The receipts' fate, read once after the run.
#[derive(Clone, Copy)]
pub(crate) struct Receipts {
    /// Minted by the substrate.
    pub(crate) minted: u64,
    /// Acknowledged by the sink.
    pub(crate) acked: u64,
    /// Journaled and not acknowledged.
    pub(crate) pending: u64,
    /// Lost.
    pub(crate) lost: u64,
}

/// The counts: streams, windows, receipts, checkpoints (`durable` of them), ticks. Returns the receipts' fate.
pub(crate) fn tell_counts(
    describe: &str,
    st: &SubstrateStats,
    sk: &SinkStats,
    failed_streams: usize,
    secs: f64,
    durable: u64,
) -> Receipts {
    say!("sink        {describe}");
    say!(
        "streams     {} opened, {} sealed durable, {} failed",
        st.streams_opened.load(Ordering::Relaxed),
        sk.seals_durable.load(Ordering::Relaxed),
        failed_streams
    );
    say!(
        "windows     {} ({:.0}/s)",
        st.windows.load(Ordering::Relaxed),
        st.windows.load(Ordering::Relaxed) as f64 / secs
    );
    let minted = st.windows.load(Ordering::Relaxed);
    let acked = sk.receipts_durable.load(Ordering::Relaxed);
    let pending = sk.receipts_pending.load(Ordering::Relaxed);
    let unknown = sk.receipts_unknown_fate.load(Ordering::Relaxed);
    let unsent = sk.receipts_unsent.load(Ordering::Relaxed);
    let lost = sk.receipts_lost.load(Ordering::Relaxed);
    say!(
        "receipts    {minted} minted, {acked} durable ({:.0}/s), {pending} journaled and not acknowledged ({unknown} of unknown fate: sent, no ack; {unsent} never sent), {lost} lost",
        acked as f64 / secs
    );
    say!(
        "checkpoints {} signed, {} durable ({:.1}/s), {} journaled, {} retries",
        st.checkpoints.load(Ordering::Relaxed),
        durable,
        durable as f64 / secs,
        sk.journaled.load(Ordering::Relaxed),
        sk.retries.load(Ordering::Relaxed)
    );
    say!(
        "ticks       {} accepted, {} refused ({} window closed, {} overloaded)",
        st.accepted.load(Ordering::Relaxed),
        st.refused.load(Ordering::Relaxed),
        st.refused_closed.load(Ordering::Relaxed),
        st.refused_overloaded.load(Ordering::Relaxed)
    );
    Receipts {
        minted,
        acked,
        pending,
        lost,
    }
}

/// The schedule against what was minted, the generator's lag, the push and tick-to-yield
/// latencies, the sink's lag and the drain after the calls (`drain_secs`).
pub(crate) fn tell_timing(
    cap: &Capacity,
    [lag, push, yields]: [&Latency; 3],
    sk: &SinkStats,
    lag_mean_ms: f64,
    drain_secs: f64,
) {
    say!(
        "schedule    {} windows and {} ticks scheduled; {} windows minted, {} ticks accepted",
        cap.scheduled_windows,
        cap.scheduled_ticks,
        cap.minted_windows,
        cap.accepted_ticks
    );
    let at_least = |us: u64| if us >= lag.ceiling_us() { ">= " } else { "" };
    say!(
        "generator   lag behind schedule p50 {}{:.1} ms, p99 {}{:.1} ms, max {:.1} ms ({} ticks)",
        at_least(cap.lag_p50_us),
        cap.lag_p50_us as f64 / 1000.0,
        at_least(cap.lag_p99_us),
        cap.lag_p99_us as f64 / 1000.0,
        cap.lag_max_us as f64 / 1000.0,
        lag.count()
    );
    say!(
        "push        p50 {} us, p99 {} us, max {} us ({} pushes)",
        push.quantile_us(0.5),
        push.quantile_us(0.99),
        push.max_us(),
        push.count()
    );
    say!(
        "tick-to-yield p50 {} us, p99 {} us, max {} us ({} yields)",
        yields.quantile_us(0.5),
        yields.quantile_us(0.99),
        yields.max_us(),
        yields.count()
    );
    say!(
        "sink lag    mean {:.1} ms, max {:.1} ms; drain after the calls {:.1} s",
        lag_mean_ms,
        sk.max_lag_ns.load(Ordering::Relaxed) as f64 / 1e6,
        drain_secs
    );
}
