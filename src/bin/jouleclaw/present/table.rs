//! The per-window table and the run totals that `jouleclaw run` prints and writes to
//! `summary.json`.

use jouleclaw_stack::oracle::WindowVerdict;
use jouleclaw_stack::pipeline::{ClosedWindow, format_ts};
use jouleclaw_stack::stream::WindowConservationFinding;

/// One row of the per-window table ([`table_header`]): window, ticks, inbound and outbound
/// bytes, verdict, the first early verdict with its tick time, the conservation finding and
/// the first 16 hex digits of the content hash.
pub(crate) fn table_row(w: &ClosedWindow) -> String {
    let r = &w.receipt;
    let verdict = match &r.verdict {
        WindowVerdict::Yield { seen_at } => format!("yield@{seen_at}"),
        v => v.kind_str().to_owned(),
    };
    let early = match w.early.first() {
        Some(e) => format!("{}@{}", e.verdict.kind_str(), format_ts(e.ts_ns)),
        None => "-".to_owned(),
    };
    let finding = match r.conservation {
        WindowConservationFinding::Conforming => "conforming".to_owned(),
        WindowConservationFinding::Hallucination { unaccounted } => {
            format!("hallucination(+{unaccounted}B)")
        }
        WindowConservationFinding::BargeInIgnored {
            barge_in_ts_ns,
            outbound_ts_ns,
        } => format!(
            "barge_in_ignored({}->{})",
            format_ts(barge_in_ts_ns),
            format_ts(outbound_ts_ns)
        ),
    };
    format!(
        "{:>6} {:>5} {:>8} {:>8}  {:<10} {:<15} {:<36} {}",
        r.window_id,
        r.tick_count,
        r.inbound_bytes,
        r.outbound_bytes,
        verdict,
        early,
        finding,
        &w.content_hash.to_hex()[..16]
    )
}

/// The header line of the per-window table ([`table_row`]).
pub(crate) fn table_header() -> String {
    format!(
        "{:>6} {:>5} {:>8} {:>8}  {:<10} {:<15} {:<36} {}",
        "window", "ticks", "in_B", "out_B", "verdict", "early", "finding", "content_hash"
    )
}

/// Totals over the windows of a run, for summaries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RunTotals {
    /// Closed windows (receipts).
    pub(crate) windows: u64,
    /// Ticks in them.
    pub(crate) ticks: u64,
    /// Inbound payload bytes.
    pub(crate) inbound_bytes: u64,
    /// Outbound payload bytes.
    pub(crate) outbound_bytes: u64,
    /// Substrate payload bytes.
    pub(crate) substrate_bytes: u64,
    /// The first and last window ids with a receipt.
    pub(crate) window_range: Option<(u64, u64)>,
    /// Verdicts by kind: pass, need_more, yield, fail.
    pub(crate) verdicts: [u64; 4],
    /// Conservation findings by kind: conforming, hallucination, barge_in_ignored.
    pub(crate) conservation: [u64; 3],
    /// Early verdicts raised on ticks.
    pub(crate) early_verdicts: u64,
}

impl RunTotals {
    /// Adds one closed window (saturating).
    pub(crate) fn add(&mut self, w: &ClosedWindow) {
        let r = &w.receipt;
        self.windows = self.windows.saturating_add(1);
        self.ticks = self.ticks.saturating_add(r.tick_count);
        self.inbound_bytes = self.inbound_bytes.saturating_add(r.inbound_bytes);
        self.outbound_bytes = self.outbound_bytes.saturating_add(r.outbound_bytes);
        self.substrate_bytes = self.substrate_bytes.saturating_add(w.substrate_bytes);
        self.window_range = Some(match self.window_range {
            None => (r.window_id, r.window_id),
            Some((first, _)) => (first, r.window_id),
        });
        let v = usize::from(r.verdict.rank());
        self.verdicts[v] = self.verdicts[v].saturating_add(1);
        let c = usize::from(r.conservation.rank());
        self.conservation[c] = self.conservation[c].saturating_add(1);
        self.early_verdicts = self.early_verdicts.saturating_add(w.early.len() as u64);
    }

    /// Windows between the first and last receipt that held no tick and so have no receipt.
    pub(crate) fn empty_windows(&self) -> u64 {
        match self.window_range {
            Some((first, last)) => (last - first)
                .saturating_add(1)
                .saturating_sub(self.windows),
            None => 0,
        }
    }

    /// A few readable lines.
    pub(crate) fn render_text(&self) -> String {
        let [pass, need_more, yields, fail] = self.verdicts;
        let [conforming, hallucination, ignored] = self.conservation;
        let range = match self.window_range {
            Some((a, b)) => format!("windows {a}..={b}"),
            None => "no windows".to_owned(),
        };
        format!(
            "{} receipts ({range}, {} empty windows without a receipt), {} ticks, {} B in, {} B out, {} B substrate\n\
             verdicts: {pass} pass, {yields} yield, {need_more} need_more, {fail} fail; {} early verdicts on ticks\n\
             conservation: {conforming} conforming, {hallucination} hallucination, {ignored} barge_in_ignored\n",
            self.windows,
            self.empty_windows(),
            self.ticks,
            self.inbound_bytes,
            self.outbound_bytes,
            self.substrate_bytes,
            self.early_verdicts,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use jouleclaw_stack::pipeline::demo;
    use jouleclaw_stack::stream::{Tick, TickKind, duplex};

    fn mic(w: u64, ts_ns: u64) -> Tick {
        Tick::new(
            w,
            duplex::MIC,
            TickKind::Audio,
            Bytes::from(vec![0u8; 640]),
            ts_ns,
        )
    }

    #[test]
    fn run_totals_count_kinds_and_empty_windows() {
        let mut p = demo::pipeline().unwrap();
        let mut t = RunTotals::default();
        p.push(mic(0, 0)).unwrap();
        let closed = p.push(mic(3, 600_000_000)).unwrap().closed.unwrap();
        t.add(&closed);
        t.add(&p.close_window().unwrap().unwrap());
        assert_eq!(t.windows, 2);
        assert_eq!(t.window_range, Some((0, 3)));
        assert_eq!(t.empty_windows(), 2);
        assert_eq!(t.verdicts, [2, 0, 0, 0]);
        assert_eq!(t.empty_windows(), 2);
        assert!(
            t.render_text()
                .starts_with("2 receipts (windows 0..=3, 2 empty")
        );
    }
}
