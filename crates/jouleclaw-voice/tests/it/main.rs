//! The voice crate's integration tests in one binary: the pipeline stage, the whisper server
//! client, hostile Wyoming servers, the voice-turn/1 vectors (`voice_turn_vectors`, their
//! generator) and the real Wyoming engine (`wyoming_real`, `#[ignore]`d: the Wyoming suite runs
//! it by name).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../support/engine.rs"]
mod engine;
mod pipeline_stage;
// Kept at tests/voice_turn_vectors.rs, the path the vector file it generates names.
#[path = "../voice_turn_vectors.rs"]
mod voice_turn_vectors;
mod whisper_server;
mod wyoming_hostile;
mod wyoming_real;

/// A duplex-voice pipeline for stream `stream_id` of `did:example:steward`, judged by `oracle`
/// and signing with the RFC 8032 test key.
fn voice_pipeline(
    stream_id: &str,
    oracle: jouleclaw_stream_oracle::CompositeStreamOracle,
) -> jouleclaw_pipeline::Pipeline {
    jouleclaw_pipeline::Pipeline::new(
        std::sync::Arc::new(jouleclaw_stream::StreamSpec::duplex_voice_default()),
        jouleclaw_pipeline::PipelineConfig::new("did:example:steward", stream_id),
        oracle,
        jouleclaw_jcr1::Estimator::default(),
        Box::new(jouleclaw_jcr1::cose::SoftwareSigner::rfc8032_test_key()),
    )
    .unwrap()
}
