//! `summary.json`: the run's unsigned summary, typed.
//!
//! Fields are declared in the order of their names, so the pretty JSON a writer produces has
//! sorted keys (the form `jouleclaw run` has always written). Unknown fields are ignored when
//! reading, so a later writer may add some; every field below is required unless it is an
//! `Option`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Ledger findings per kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConservationCounts {
    /// `barge_in_ignored` windows.
    pub barge_in_ignored: u64,
    /// `conforming` windows.
    pub conforming: u64,
    /// `hallucination` windows.
    pub hallucination: u64,
}

/// Window verdicts per kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerdictCounts {
    /// `fail` windows.
    pub fail: u64,
    /// `need_more` windows.
    pub need_more: u64,
    /// `pass` windows.
    pub pass: u64,
    /// `yield` windows.
    #[serde(rename = "yield")]
    pub yields: u64,
}

/// `llm_schema`: the JSON Schema the LLM channel was judged against.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LlmSchemaFacts {
    /// The schema file as given.
    pub file: String,
    /// The compiled grammar's digest, hex.
    pub grammar_digest: String,
}

/// `signer`: who signed, as the writer saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignerFacts {
    /// The RFC 9679 thumbprint of the public key, hex.
    pub kid: String,
    /// The public key, hex.
    pub public_key: String,
    /// Whether it is the published RFC 8032 test key.
    pub test_key: bool,
}

/// `signing`: the signing policy. `policy` is `every_window` or `checkpoint`; the other fields
/// only with `checkpoint`. Unsigned, so no verifier decides anything from it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SigningFacts {
    /// Checkpoints written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoints: Option<u64>,
    /// A checkpoint every this many windows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every_windows: Option<u64>,
    /// `every_window` or `checkpoint`.
    pub policy: String,
    /// `all`, `non_pass` or `none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_signatures: Option<String>,
}

/// The typed `summary.json` of a run (`spec/STREAM-AT-REST.md`, section 3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunSummary {
    /// Ledger findings per kind.
    pub conservation: ConservationCounts,
    /// Early verdicts printed during the run.
    pub early_verdicts: u64,
    /// Window ids in range without a receipt.
    pub empty_windows: u64,
    /// Wall time of stream time 0, `YYYY-MM-DDTHH:MM:SSZ`.
    pub epoch: Option<String>,
    /// The first receipt's window id.
    pub first_window: Option<u64>,
    /// Sum of `inbound_bytes`.
    pub inbound_bytes: u64,
    /// The last receipt's window id.
    pub last_window: Option<u64>,
    /// The layout the writer followed ([`LAYOUT_V2`](crate::layout::LAYOUT_V2)); absent in
    /// summaries written before it was recorded (layout `stream-at-rest/1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<String>,
    /// The LLM channel's schema, if any.
    pub llm_schema: Option<LlmSchemaFacts>,
    /// The oracle backends, in order.
    pub oracle: Vec<String>,
    /// Sum of `outbound_bytes`.
    pub outbound_bytes: u64,
    /// BLAKE3 (hex) of each output file, by name.
    pub outputs: BTreeMap<String, String>,
    /// Receipts written.
    pub receipts: u64,
    /// The signer.
    pub signer: SignerFacts,
    /// The signing policy.
    pub signing: SigningFacts,
    /// The stream spec.
    pub spec: String,
    /// The stages, in order.
    pub stages: Vec<String>,
    /// The receipts' steward.
    pub steward: String,
    /// The receipts' stream id.
    pub stream_id: String,
    /// Substrate bytes seen.
    pub substrate_bytes: u64,
    /// Sum of `tick_count`.
    pub ticks: u64,
    /// The trace file as given.
    pub trace: String,
    /// Window verdicts per kind.
    pub verdicts: VerdictCounts,
}

impl RunSummary {
    /// The file's text: pretty JSON with sorted keys and a final newline.
    pub fn to_text(&self) -> crate::Result<String> {
        let mut text = serde_json::to_string_pretty(self)
            .map_err(|source| crate::StoreError::Summary { source })?;
        text.push('\n');
        Ok(text)
    }

    /// Parses the file's bytes.
    pub fn parse(bytes: &[u8]) -> core::result::Result<Self, serde_json::Error> {
        serde_json::from_slice(bytes)
    }
}
