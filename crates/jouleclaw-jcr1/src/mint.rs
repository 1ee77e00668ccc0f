//! Minting receipts from closed windows.

use std::path::{Path, PathBuf};

use jouleclaw_stream::{StreamWindow, WindowConservationFinding};
use jouleclaw_stream_oracle::WindowVerdict;

use crate::error::{Jcr1Error, Result};
use crate::receipt::{EnergyProvenance, StreamWindowReceipt};
use crate::time::UtcSecond;

/// The time a window closes, injected so that minting stays deterministic under test.
pub trait Clock {
    /// Whole seconds since the Unix epoch, UTC.
    fn now_unix(&self) -> i64;
}

/// A clock that always answers the same second (demos, golden files, tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedClock(pub i64);

impl Clock for FixedClock {
    fn now_unix(&self) -> i64 {
        self.0
    }
}

/// The operating system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_unix(&self) -> i64 {
        match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
            Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            Err(e) => -i64::try_from(e.duration().as_secs()).unwrap_or(i64::MAX),
        }
    }
}

/// Energy spent on one window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnergyReading {
    /// Microjoules.
    pub joules_uj: u64,
    /// Where the number came from.
    pub provenance: EnergyProvenance,
}

/// Where a window's energy figure comes from.
pub trait EnergySource {
    /// The energy attributed to `window`, called once per window as it closes.
    fn read(&mut self, window: &StreamWindow) -> Result<EnergyReading>;
}

impl<T: EnergySource + ?Sized> EnergySource for Box<T> {
    fn read(&mut self, window: &StreamWindow) -> Result<EnergyReading> {
        (**self).read(window)
    }
}

/// A documented model, not a measurement:
/// `joules_uj = uj_per_tick * tick_count + nj_per_byte * (inbound + outbound + substrate) / 1000`
/// (integer arithmetic, rounded down, saturating at `u64::MAX`, which the encoder then refuses).
///
/// Defaults: 10 uJ per tick (validation, ledger, oracle, hashing bookkeeping) and 25 nJ per
/// payload byte (hashing and copying at a few GB/s on a ~10 W core). Provenance `Estimator`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Estimator {
    /// Microjoules per tick.
    pub uj_per_tick: u64,
    /// Nanojoules per payload byte.
    pub nj_per_byte: u64,
}

impl Default for Estimator {
    fn default() -> Self {
        Self {
            uj_per_tick: 10,
            nj_per_byte: 25,
        }
    }
}

impl Estimator {
    /// The estimate for a window with these counts.
    pub fn estimate(&self, ticks: u64, bytes: u64) -> u64 {
        let uj = u128::from(self.uj_per_tick) * u128::from(ticks)
            + u128::from(self.nj_per_byte) * u128::from(bytes) / 1000;
        u64::try_from(uj).unwrap_or(u64::MAX)
    }
}

impl EnergySource for Estimator {
    fn read(&mut self, window: &StreamWindow) -> Result<EnergyReading> {
        let bytes = u128::from(window.inbound_bytes())
            + u128::from(window.outbound_bytes())
            + u128::from(window.substrate_bytes());
        Ok(EnergyReading {
            joules_uj: self.estimate(
                window.tick_count() as u64,
                u64::try_from(bytes).unwrap_or(u64::MAX),
            ),
            provenance: EnergyProvenance::Estimator,
        })
    }
}

/// Reads a Linux powercap (Intel RAPL) zone: `<zone>/energy_uj`, wrapping at
/// `<zone>/max_energy_range_uj`. Each read returns the energy since the previous read (the first
/// since construction). The counter is package-wide: it includes every other process on the
/// package, so the figure is an upper bound for the stream, not its share.
#[derive(Debug, Clone)]
pub struct RaplReader {
    zone: PathBuf,
    max_range: u64,
    last: u64,
}

impl RaplReader {
    /// The default zone, `/sys/class/powercap/intel-rapl:0`.
    pub const DEFAULT_ZONE: &'static str = "/sys/class/powercap/intel-rapl:0";

    /// Opens `zone` and takes the baseline reading.
    pub fn open(zone: impl Into<PathBuf>) -> Result<Self> {
        let zone = zone.into();
        let max_range = read_counter(&zone.join("max_energy_range_uj"))?;
        if max_range == 0 {
            return Err(Jcr1Error::Energy {
                detail: "max_energy_range_uj is 0".into(),
            });
        }
        let last = read_counter(&zone.join("energy_uj"))?;
        if last > max_range {
            return Err(Jcr1Error::Energy {
                detail: "energy_uj exceeds max_energy_range_uj".into(),
            });
        }
        Ok(Self {
            zone,
            max_range,
            last,
        })
    }

    /// Microjoules since the previous reading, accounting for one wrap of the counter.
    pub fn delta(&mut self) -> Result<u64> {
        let now = read_counter(&self.zone.join("energy_uj"))?;
        if now > self.max_range {
            return Err(Jcr1Error::Energy {
                detail: "energy_uj exceeds max_energy_range_uj".into(),
            });
        }
        let d = if now >= self.last {
            now - self.last
        } else {
            // Wrapped: the counter runs 0..=max_range.
            self.max_range - self.last + now + 1
        };
        self.last = now;
        Ok(d)
    }
}

impl EnergySource for RaplReader {
    fn read(&mut self, _window: &StreamWindow) -> Result<EnergyReading> {
        Ok(EnergyReading {
            joules_uj: self.delta()?,
            provenance: EnergyProvenance::Rapl,
        })
    }
}

fn read_counter(path: &Path) -> Result<u64> {
    let text = std::fs::read_to_string(path).map_err(|e| Jcr1Error::Energy {
        detail: format!("{}: {e}", path.display()),
    })?;
    text.trim_end_matches('\n')
        .parse::<u64>()
        .map_err(|_| Jcr1Error::Energy {
            detail: format!("{}: not a decimal counter", path.display()),
        })
}

/// A minted receipt with its canonical bytes and content hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Minted {
    /// The receipt.
    pub receipt: StreamWindowReceipt,
    /// Its canonical bytes (the COSE payload).
    pub bytes: Vec<u8>,
    /// BLAKE3 of `bytes`.
    pub content_hash: blake3::Hash,
}

fn check_names(steward: &str, stream_id: &str) -> Result<()> {
    for (field, v) in [("steward", steward), ("stream_id", stream_id)] {
        if v.is_empty() {
            return Err(Jcr1Error::Unencodable {
                field,
                reason: "must be non-empty",
            });
        }
    }
    Ok(())
}

/// Builds stream-window/1 receipts for one stream.
#[derive(Debug, Clone)]
pub struct ReceiptMinter<C, E> {
    steward: String,
    stream_id: String,
    clock: C,
    energy: E,
}

impl<C: Clock, E: EnergySource> ReceiptMinter<C, E> {
    /// A minter; `steward` and `stream_id` must be non-empty.
    pub fn new(steward: &str, stream_id: &str, clock: C, energy: E) -> Result<Self> {
        check_names(steward, stream_id)?;
        Ok(Self {
            steward: steward.to_owned(),
            stream_id: stream_id.to_owned(),
            clock,
            energy,
        })
    }

    /// Mints the receipt of a closed window, stamped with the clock's current second. Refuses,
    /// with a typed error, anything it cannot encode canonically (a counter above `2^53-1`, a
    /// clock outside years 0000-9999).
    pub fn mint(
        &mut self,
        window: &StreamWindow,
        verdict: &WindowVerdict,
        conservation: WindowConservationFinding,
    ) -> Result<Minted> {
        let closed_at =
            UtcSecond::from_unix(self.clock.now_unix()).ok_or(Jcr1Error::Unencodable {
                field: "closed_at",
                reason: "clock outside years 0000-9999",
            })?;
        self.mint_at(closed_at, window, verdict, conservation)
    }
}

/// A minter whose `closed_at` comes from the caller ([`ReceiptMinter::mint_at`]), never from a
/// clock: the stream-time seam a pipeline uses, where a window's close time is data.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoClock;

impl<E: EnergySource> ReceiptMinter<NoClock, E> {
    /// A minter for stream time: it has no clock, so only [`ReceiptMinter::mint_at`] mints.
    /// `steward` and `stream_id` must be non-empty.
    pub fn for_stream_time(steward: &str, stream_id: &str, energy: E) -> Result<Self> {
        check_names(steward, stream_id)?;
        Ok(Self {
            steward: steward.to_owned(),
            stream_id: stream_id.to_owned(),
            clock: NoClock,
            energy,
        })
    }
}

impl<C, E: EnergySource> ReceiptMinter<C, E> {
    /// The steward.
    pub fn steward(&self) -> &str {
        &self.steward
    }

    /// The stream id.
    pub fn stream_id(&self) -> &str {
        &self.stream_id
    }

    /// Mints the receipt of a closed window stamped `closed_at` (stream time, or any time the
    /// caller decides). Refuses, with a typed error, anything it cannot encode canonically.
    pub fn mint_at(
        &mut self,
        closed_at: UtcSecond,
        window: &StreamWindow,
        verdict: &WindowVerdict,
        conservation: WindowConservationFinding,
    ) -> Result<Minted> {
        let energy = self.energy.read(window)?;
        let receipt = StreamWindowReceipt {
            closed_at,
            steward: self.steward.clone(),
            stream_id: self.stream_id.clone(),
            window_id: window.window_id(),
            window_hash: window.content_hash(),
            tick_count: window.tick_count() as u64,
            inbound_bytes: window.inbound_bytes(),
            outbound_bytes: window.outbound_bytes(),
            joules_uj: energy.joules_uj,
            energy_provenance: energy.provenance,
            verdict: verdict.clone(),
            conservation,
        };
        let bytes = receipt.encode()?;
        let content_hash = blake3::hash(&bytes);
        Ok(Minted {
            receipt,
            bytes,
            content_hash,
        })
    }
}
