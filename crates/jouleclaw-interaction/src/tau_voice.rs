//! τ-voice simulations in: one tau2-bench simulation file (JSON with `ticks[]`) becomes the
//! ticks of one stream on the duplex voice layout (`spec/INTERACTION-METRICS-V1.md` section 9).
//! Pure: bytes in, ticks out.

use bytes::Bytes;
use jouleclaw_stream::interaction::{self, BACKCHANNEL, NON_DIRECTED, USER_SPEECH, VOCAL_TIC};
use jouleclaw_stream::{Tick, TickKind, TickMarker, duplex};
use serde_json::Value;

use crate::meter::MAX_FRAMES;

/// The most bytes of one simulation file: 64 MiB (τ-voice's published simulations are under
/// 1 MiB; an hour of 200 ms ticks is about 8 MiB). The parsed file is held in memory whole.
pub const MAX_SIMULATION_BYTES: usize = 64 << 20;

/// The only tick length imported: 200 ms.
pub const TAU_TICK_NS: u64 = 200_000_000;

/// Mic audio per frame: 200 ms of 16 kHz 16-bit mono, the default layout's mic.
pub const MIC_BYTES: usize = 6_400;

/// Agent audio per frame of speech: 200 ms of 12 kHz 16-bit mono, the default layout's TTS.
pub const TTS_BYTES: usize = 4_800;

/// Why a simulation file was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TauError {
    /// `tau_too_large`, `tau_not_json`, `tau_not_simulation`, `tau_not_full_duplex`,
    /// `tau_bad_tick`, `tau_ticks_out_of_order`, `tau_too_many_ticks` or `tau_tick_not_200ms`.
    pub code: &'static str,
    /// What, where.
    pub detail: String,
}

impl core::fmt::Display for TauError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}: {}", self.code, self.detail)
    }
}

impl std::error::Error for TauError {}

fn err(code: &'static str, detail: impl Into<String>) -> TauError {
    TauError {
        code,
        detail: detail.into(),
    }
}

/// One τ-voice tick, as the panel reads it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TauFrame {
    /// `user_chunk.contains_speech`.
    pub user_speech: bool,
    /// `agent_chunk.contains_speech`.
    pub agent_speech: bool,
    /// `user_chunk.turn_taking_action.action == "backchannel"`.
    pub backchannel: bool,
    /// A `vocal_tic` speech insert in the user chunk's speech or source effects.
    pub vocal_tic: bool,
    /// Any other speech insert (`non_directed_phrase`).
    pub non_directed: bool,
}

/// A parsed simulation: its id and one frame per tick.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TauSimulation {
    /// The simulation's `id` (a string), if it has one.
    pub id: Option<String>,
    /// One frame per tick, in `tick_id` order.
    pub frames: Vec<TauFrame>,
}

fn speech(chunk: Option<&Value>, at: usize, side: &str) -> Result<bool, TauError> {
    match chunk {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Object(m)) => match m.get("contains_speech") {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(err(
                "tau_bad_tick",
                format!("tick {at}: {side}.contains_speech is not a boolean"),
            )),
        },
        Some(_) => Err(err(
            "tau_bad_tick",
            format!("tick {at}: {side} is not an object"),
        )),
    }
}

/// The speech insert types of a chunk's `speech_effects` and `source_effects`.
fn inserts(chunk: &Value) -> impl Iterator<Item = &str> {
    ["speech_effects", "source_effects"]
        .into_iter()
        .filter_map(move |k| chunk.get(k)?.get("speech_insert"))
        .filter(|v| v.is_object())
        .map(|v| v.get("type").and_then(Value::as_str).unwrap_or("vocal_tic"))
}

/// Parses one simulation file (`Simulation` JSON of tau2-bench, `ticks[]` of `Tick`).
/// `tick_duration_seconds` is the experiment's recorded tick (from `results.json`), when known:
/// anything but 0.2 is refused (`tau_tick_not_200ms`).
pub fn parse_simulation(
    bytes: &[u8],
    tick_duration_seconds: Option<f64>,
) -> Result<TauSimulation, TauError> {
    if bytes.len() > MAX_SIMULATION_BYTES {
        return Err(err(
            "tau_too_large",
            format!("over {MAX_SIMULATION_BYTES} bytes"),
        ));
    }
    if let Some(t) = tick_duration_seconds
        && t != 0.2
    {
        return Err(err(
            "tau_tick_not_200ms",
            format!("the experiment's tick is {t} s; only 0.2 s is imported"),
        ));
    }
    let v: Value = serde_json::from_slice(bytes).map_err(|e| err("tau_not_json", e.to_string()))?;
    let ticks = v
        .get("ticks")
        .and_then(Value::as_array)
        .ok_or_else(|| err("tau_not_simulation", "no ticks[] array"))?;
    if ticks.is_empty() {
        return Err(err(
            "tau_not_full_duplex",
            "ticks[] is empty: not a full-duplex simulation",
        ));
    }
    if ticks.len() as u64 > MAX_FRAMES {
        return Err(err(
            "tau_too_many_ticks",
            format!("{} ticks, at most {MAX_FRAMES}", ticks.len()),
        ));
    }
    let mut frames = Vec::with_capacity(ticks.len());
    for (i, t) in ticks.iter().enumerate() {
        if !t.is_object() {
            return Err(err("tau_bad_tick", format!("tick {i} is not an object")));
        }
        match t.get("tick_id").and_then(Value::as_u64) {
            Some(id) if id == i as u64 => {}
            Some(id) => {
                return Err(err(
                    "tau_ticks_out_of_order",
                    format!("ticks[{i}] has tick_id {id}"),
                ));
            }
            None => {
                return Err(err(
                    "tau_bad_tick",
                    format!("ticks[{i}] has no integer tick_id"),
                ));
            }
        }
        let user = t.get("user_chunk");
        let mut f = TauFrame {
            user_speech: speech(user, i, "user_chunk")?,
            agent_speech: speech(t.get("agent_chunk"), i, "agent_chunk")?,
            ..TauFrame::default()
        };
        if let Some(u) = user.filter(|u| u.is_object()) {
            f.backchannel = u
                .get("turn_taking_action")
                .and_then(|a| a.get("action"))
                .and_then(Value::as_str)
                == Some("backchannel");
            for kind in inserts(u) {
                if kind == "vocal_tic" {
                    f.vocal_tic = true;
                } else {
                    f.non_directed = true;
                }
            }
        }
        frames.push(f);
    }
    let id = v.get("id").and_then(Value::as_str).map(str::to_owned);
    Ok(TauSimulation { id, frames })
}

/// The ticks of a simulation on `StreamSpec::duplex_voice_default()`, frame `k` at
/// `ts_ns = k * 200 ms` in window `k`, in this order: on the control channel `user_speech`,
/// `backchannel`, `vocal_tic`, `non_directed` (each when its flag is set) and `barge_in` (on
/// the first frame of a user speech segment that starts during agent speech and is neither a
/// backchannel nor holds a vocal tic or non-directed speech: a real interruption); 6,400 bytes
/// of mic audio (every frame: the open microphone); on the TTS channel a `start` marker on the
/// first frame of each agent speech segment and 4,800 bytes of audio per frame of agent speech.
pub fn simulation_ticks(sim: &TauSimulation) -> Vec<Tick> {
    let f = &sim.frames;
    let mut out = Vec::with_capacity(f.len() * 3);
    let mut k = 0;
    while k < f.len() {
        let fr = f[k];
        let ts = k as u64 * TAU_TICK_NS;
        let w = k as u64;
        let marker = |m: TickMarker| Tick::marker(w, duplex::CONTROL, m, ts);
        for (on, name) in [
            (fr.user_speech, USER_SPEECH),
            (fr.backchannel, BACKCHANNEL),
            (fr.vocal_tic, VOCAL_TIC),
            (fr.non_directed, NON_DIRECTED),
        ] {
            if on {
                out.push(marker(interaction::marker(name)));
            }
        }
        let user_starts = fr.user_speech && (k == 0 || !f[k - 1].user_speech);
        if user_starts && fr.agent_speech && !fr.backchannel {
            let end = f[k..]
                .iter()
                .position(|x| !x.user_speech)
                .map_or(f.len(), |p| k + p);
            if !f[k..end].iter().any(|x| x.vocal_tic || x.non_directed) {
                out.push(marker(TickMarker::BargeIn));
            }
        }
        out.push(Tick::new(
            w,
            duplex::MIC,
            TickKind::Audio,
            Bytes::from(vec![0u8; MIC_BYTES]),
            ts,
        ));
        if fr.agent_speech {
            if k == 0 || !f[k - 1].agent_speech {
                out.push(Tick::marker(w, duplex::TTS, TickMarker::Start, ts));
            }
            out.push(Tick::new(
                w,
                duplex::TTS,
                TickKind::Audio,
                Bytes::from(vec![0u8; TTS_BYTES]),
                ts,
            ));
        }
        k += 1;
    }
    out
}
