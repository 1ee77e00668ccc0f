//! One publish and its retries: the `Nats-Msg-Id` generations, duplicate acknowledgements
//! checked against the stored message, the backoff.

use std::time::Duration;

use async_nats::jetstream;
use bytes::Bytes;

use super::{JetStreamConfig, message_id, nats_err};
use crate::error::{LiveError, Result};

/// The `Nats-Msg-Id` of a body's publish in `generation`: [`message_id`] for generation 0,
/// `ID.N` for generation N. A batch moves to the next generation only when the server
/// acknowledged it as a duplicate that it cannot show stored (see [`duplicate_confirms`]):
/// the server then holds the id for a proposal that may never be stored, and a publish with
/// the same id would be answered "duplicate" for the whole duplicate window. A body stored
/// under two generations is two equal messages, which every reader keeps once.
pub fn message_id_in(body: &[u8], generation: u32) -> String {
    let id = message_id(body);
    if generation == 0 {
        id
    } else {
        format!("{id}.{generation}")
    }
}

/// Whether a publish acknowledged as a duplicate is stored: the acknowledgement names a
/// stream sequence (not 0, which a server answers while the first publish of that id is still
/// a proposal, or was one that was lost) and the message stored there, `stored` (subject,
/// body), is this subject and this body. A duplicate acknowledgement alone is no evidence:
/// a server that staged the id for a proposal lost in a leader change answers "duplicate"
/// while nothing is stored.
pub fn duplicate_confirms(
    ack_sequence: u64,
    stored: Option<(&str, &[u8])>,
    subject: &str,
    body: &[u8],
) -> bool {
    ack_sequence != 0 && stored.is_some_and(|(s, b)| s == subject && b == body)
}

/// How a publish ended that the server acknowledged and [`duplicate_confirms`] agrees is
/// stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    /// Stored now.
    New,
    /// Stored before (a confirmed duplicate).
    Before,
}

/// The code of a duplicate acknowledgement without the message stored.
const DUPLICATE_UNCONFIRMED: &str = "duplicate_unconfirmed";

/// One publish of `body` on `subject` with message id `id`, its acknowledgement awaited
/// (bounded by `timeout`: `nats`); a duplicate acknowledgement is checked against the message
/// stored at the sequence it names (`duplicate_unconfirmed` when that is not this body). What
/// the sink and [`replay`](super::replay) do for every attempt.
pub async fn publish_once(
    js: jetstream::Context,
    stream: jetstream::stream::Stream,
    subject: String,
    body: Bytes,
    id: &str,
    timeout: Duration,
) -> Result<Stored> {
    let publish = jetstream::context::Publish::build()
        .payload(body.clone())
        .message_id(id);
    tokio::time::timeout(timeout, async {
        let ack = js
            .send_publish(subject.clone(), publish)
            .await
            .map_err(|e| nats_err("publish", e))?
            .await
            .map_err(|e| nats_err("ack", e))?;
        if !ack.duplicate {
            return Ok(Stored::New);
        }
        let stored = if ack.sequence == 0 {
            None
        } else {
            stream.get_raw_message(ack.sequence).await.ok()
        };
        let stored = stored.as_ref().map(|m| (m.subject.as_str(), &m.payload[..]));
        if duplicate_confirms(ack.sequence, stored, &subject, &body) {
            Ok(Stored::Before)
        } else {
            Err(LiveError::Sink {
                code: DUPLICATE_UNCONFIRMED,
                message: format!(
                    "acknowledged as a duplicate of sequence {} on {subject}, which does not hold this batch",
                    ack.sequence
                ),
            })
        }
    })
    .await
    .map_err(|_| nats_err("ack", "timed out"))?
}

/// The id for the next attempt after `r`: the next generation after an unconfirmed
/// duplicate, else the same.
pub(super) fn next_generation(r: &Result<Stored>, generation: u32) -> u32 {
    match r {
        Err(e) if e.code() == DUPLICATE_UNCONFIRMED => generation.saturating_add(1),
        _ => generation,
    }
}

pub(super) fn backoff(config: &JetStreamConfig, attempts: u32) -> Duration {
    let factor = 1u32 << attempts.min(16);
    config
        .backoff_initial
        .saturating_mul(factor)
        .min(config.backoff_max)
}

/// Publishes `body` on `subject` until an attempt is acknowledged as stored (new, or a
/// confirmed duplicate), at most `attempts` times with backoff; `None` when none was. Starts
/// at id `generation` and moves on after an unconfirmed duplicate; returns the generation
/// that was stored.
pub(super) async fn publish_until_stored(
    js: &jetstream::Context,
    stream: &jetstream::stream::Stream,
    config: &JetStreamConfig,
    subject: &str,
    body: &Bytes,
    mut generation: u32,
    attempts: u32,
) -> Option<(Stored, u32)> {
    let mut attempt = 0u32;
    loop {
        let r = publish_once(
            js.clone(),
            stream.clone(),
            subject.to_owned(),
            body.clone(),
            &message_id_in(body, generation),
            config.ack_timeout,
        )
        .await;
        match r {
            Ok(stored) => return Some((stored, generation)),
            Err(_) if attempt + 1 >= attempts => return None,
            Err(_) => {
                attempt += 1;
                generation = next_generation(&r, generation);
                tokio::time::sleep(backoff(config, attempt)).await;
            }
        }
    }
}
