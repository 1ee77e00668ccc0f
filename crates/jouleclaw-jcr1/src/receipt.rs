//! The stream-window/1 receipt and its canonical encoding.

use jouleclaw_stream::WindowConservationFinding;
use jouleclaw_stream::canon::{self, MAX_SAFE_INTEGER};
use jouleclaw_stream_oracle::WindowVerdict;

use crate::error::{Jcr1Error, Result};
use crate::schema::SCHEMA_ID;
use crate::strict::Limits;
use crate::time::UtcSecond;

/// Where a receipt's `joules_uj` came from. The set is closed: a new source is a new schema
/// version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EnergyProvenance {
    /// A documented model of the work (per byte, per tick), not a measurement.
    Estimator,
    /// An external hardware shunt or power meter.
    HwShunt,
    /// Linux powercap / Intel RAPL `energy_uj` counters (package-level, shared with every other
    /// process on the package).
    Rapl,
}

impl EnergyProvenance {
    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Estimator => "Estimator",
            Self::HwShunt => "HwShunt",
            Self::Rapl => "Rapl",
        }
    }

    /// The provenance with wire value `s`.
    pub fn from_wire(s: &str) -> Option<Self> {
        match s {
            "Estimator" => Some(Self::Estimator),
            "HwShunt" => Some(Self::HwShunt),
            "Rapl" => Some(Self::Rapl),
            _ => None,
        }
    }
}

/// A stream-window/1 receipt. `jc_receipt` is implied and `id` is derived
/// ([`StreamWindowReceipt::id`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamWindowReceipt {
    /// When the window closed.
    pub closed_at: UtcSecond,
    /// Who answers for the stream; non-empty.
    pub steward: String,
    /// The stream; non-empty.
    pub stream_id: String,
    /// The window's index.
    pub window_id: u64,
    /// BLAKE3 of the window's canonical JSON.
    pub window_hash: blake3::Hash,
    /// Ticks in the window.
    pub tick_count: u64,
    /// Inbound payload bytes.
    pub inbound_bytes: u64,
    /// Outbound payload bytes.
    pub outbound_bytes: u64,
    /// Energy, microjoules.
    pub joules_uj: u64,
    /// Where `joules_uj` came from.
    pub energy_provenance: EnergyProvenance,
    /// The stream oracle's verdict.
    pub verdict: WindowVerdict,
    /// The ledger's window summary.
    pub conservation: WindowConservationFinding,
}

/// `{stream_id}:{window_id:04}`.
pub fn receipt_id(stream_id: &str, window_id: u64) -> String {
    format!("{stream_id}:{window_id:04}")
}

impl StreamWindowReceipt {
    /// The receipt id, `{stream_id}:{window_id:04}`.
    pub fn id(&self) -> String {
        receipt_id(&self.stream_id, self.window_id)
    }

    /// The canonical bytes. Refuses (writing nothing) any value the strict decoder would not
    /// accept back under [`Limits::RECEIPT`]: counters above `2^53-1`, empty `steward`/`stream_id`,
    /// an empty pass chain or chain name, an empty oracle name, a string over 4,096 bytes, more
    /// than 64 chain names, a document over 64 KiB.
    pub fn encode(&self) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(512);
        self.encode_into(&mut out)?;
        Ok(out)
    }

    /// [`StreamWindowReceipt::encode`] into `out`; on error `out` is left as it was.
    pub fn encode_into(&self, out: &mut Vec<u8>) -> Result<()> {
        let start = out.len();
        let r = self.write(out);
        if r.is_err() {
            out.truncate(start);
        }
        r
    }

    /// BLAKE3 of the canonical bytes.
    pub fn content_hash(&self) -> Result<blake3::Hash> {
        Ok(blake3::hash(&self.encode()?))
    }

    fn write(&self, out: &mut Vec<u8>) -> Result<()> {
        let start = out.len();
        non_empty("steward", &self.steward)?;
        non_empty("stream_id", &self.stream_id)?;
        fits("steward", &self.steward)?;
        fits("stream_id", &self.stream_id)?;
        // The id is the stream id, a colon and at least four digits.
        let id_len = self.stream_id.len() + 1 + decimal_len(self.window_id).max(4);
        if id_len > Limits::RECEIPT.max_string_bytes {
            return Err(unencodable("id", "longer than the decoder's string limit"));
        }
        out.extend_from_slice(b"{\"closed_at\":\"");
        self.closed_at.write(out);
        out.extend_from_slice(b"\",\"conservation\":");
        write_conservation(out, &self.conservation)?;
        out.extend_from_slice(b",\"energy_provenance\":\"");
        out.extend_from_slice(self.energy_provenance.as_str().as_bytes());
        out.extend_from_slice(b"\",\"id\":");
        // The id is the escaped stream id (without its closing quote), a colon and the padded
        // window id: neither needs escaping.
        canon::write_str(out, &self.stream_id);
        out.pop();
        uint("window_id", self.window_id)?;
        out.extend_from_slice(format!(":{:04}\"", self.window_id).as_bytes());
        out.extend_from_slice(b",\"inbound_bytes\":");
        put_uint(out, "inbound_bytes", self.inbound_bytes)?;
        out.extend_from_slice(b",\"jc_receipt\":\"");
        out.extend_from_slice(SCHEMA_ID.as_bytes());
        out.extend_from_slice(b"\",\"joules_uj\":");
        put_uint(out, "joules_uj", self.joules_uj)?;
        out.extend_from_slice(b",\"outbound_bytes\":");
        put_uint(out, "outbound_bytes", self.outbound_bytes)?;
        out.extend_from_slice(b",\"steward\":");
        canon::write_str(out, &self.steward);
        out.extend_from_slice(b",\"stream_id\":");
        canon::write_str(out, &self.stream_id);
        out.extend_from_slice(b",\"tick_count\":");
        put_uint(out, "tick_count", self.tick_count)?;
        out.extend_from_slice(b",\"verdict\":");
        check_verdict(&self.verdict)?;
        self.verdict
            .write_wire(out)
            .map_err(|_| unencodable("verdict.seen_at", "above 2^53-1"))?;
        out.extend_from_slice(b",\"window_hash\":");
        canon::write_hex_str(out, self.window_hash.as_bytes());
        out.extend_from_slice(b",\"window_id\":");
        put_uint(out, "window_id", self.window_id)?;
        out.push(b'}');
        if out.len() - start > Limits::RECEIPT.max_document_bytes {
            return Err(unencodable(
                "receipt",
                "larger than the decoder's document limit",
            ));
        }
        Ok(())
    }
}

fn decimal_len(mut n: u64) -> usize {
    let mut len = 1;
    while n >= 10 {
        n /= 10;
        len += 1;
    }
    len
}

/// Refuses a string the strict decoder would refuse as too long.
fn fits(field: &'static str, s: &str) -> Result<()> {
    if s.len() > Limits::RECEIPT.max_string_bytes {
        return Err(unencodable(field, "longer than the decoder's string limit"));
    }
    Ok(())
}

fn unencodable(field: &'static str, reason: &'static str) -> Jcr1Error {
    Jcr1Error::Unencodable { field, reason }
}

fn non_empty(field: &'static str, s: &str) -> Result<()> {
    if s.is_empty() {
        return Err(unencodable(field, "must be non-empty"));
    }
    Ok(())
}

fn uint(field: &'static str, n: u64) -> Result<()> {
    if n > MAX_SAFE_INTEGER {
        return Err(unencodable(field, "above 2^53-1"));
    }
    Ok(())
}

fn put_uint(out: &mut Vec<u8>, field: &'static str, n: u64) -> Result<()> {
    canon::write_u64(out, n).map_err(|_| unencodable(field, "above 2^53-1"))
}

fn check_verdict(v: &WindowVerdict) -> Result<()> {
    match v {
        WindowVerdict::Pass { chain } => {
            if chain.is_empty() {
                return Err(unencodable(
                    "verdict.chain",
                    "a pass chain must name a backend",
                ));
            }
            if chain.len() > Limits::RECEIPT.max_array_len {
                return Err(unencodable(
                    "verdict.chain",
                    "longer than the decoder's limit",
                ));
            }
            for name in chain {
                non_empty("verdict.chain", name)?;
                fits("verdict.chain", name)?;
            }
        }
        WindowVerdict::Fail { oracle, reason } | WindowVerdict::NeedMore { oracle, reason } => {
            non_empty("verdict.oracle", oracle)?;
            fits("verdict.oracle", oracle)?;
            fits("verdict.reason", reason)?;
        }
        WindowVerdict::Yield { .. } => {}
    }
    Ok(())
}

/// Appends the conservation wire form:
/// `{"kind":"conforming"}`, `{"kind":"hallucination","unaccounted":N}` or
/// `{"barge_in_ts_ns":N,"kind":"barge_in_ignored","outbound_ts_ns":N}`.
pub fn write_conservation(out: &mut Vec<u8>, c: &WindowConservationFinding) -> Result<()> {
    match *c {
        WindowConservationFinding::Conforming => {
            out.extend_from_slice(b"{\"kind\":\"conforming\"}");
        }
        WindowConservationFinding::Hallucination { unaccounted } => {
            uint("conservation.unaccounted", unaccounted)?;
            out.extend_from_slice(b"{\"kind\":\"hallucination\",\"unaccounted\":");
            put_uint(out, "conservation.unaccounted", unaccounted)?;
            out.push(b'}');
        }
        WindowConservationFinding::BargeInIgnored {
            barge_in_ts_ns,
            outbound_ts_ns,
        } => {
            uint("conservation.barge_in_ts_ns", barge_in_ts_ns)?;
            uint("conservation.outbound_ts_ns", outbound_ts_ns)?;
            out.extend_from_slice(b"{\"barge_in_ts_ns\":");
            put_uint(out, "conservation.barge_in_ts_ns", barge_in_ts_ns)?;
            out.extend_from_slice(b",\"kind\":\"barge_in_ignored\",\"outbound_ts_ns\":");
            put_uint(out, "conservation.outbound_ts_ns", outbound_ts_ns)?;
            out.push(b'}');
        }
    }
    Ok(())
}
