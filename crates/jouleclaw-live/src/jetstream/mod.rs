//! [`JetStreamSink`]: one message per checkpoint batch into a NATS JetStream stream, each
//! batch written to a local write-ahead journal ([`crate::journal`]) before it is published,
//! acks awaited before a batch counts as durable, retries with backoff, batches the cluster
//! does not take kept in the journal and replayed ([`replay`]). Also the message format and
//! the reader the auditor uses ([`read_each`]).
//!
//! Subjects: `PREFIX.STEWARD.STREAM`, each id escaped into one token by
//! [`escape_id`](crate::escape_id). Message: a CBOR map (see [`encode_batch`]); header
//! `Nats-Msg-Id` = lower-case hex BLAKE3 of the body, so a retried publish inside the stream's
//! duplicate window is stored once; a duplicate acknowledgement counts only when the message
//! it names is read back with this body ([`duplicate_confirms`], [`message_id_in`]).

mod config;
mod connect;
mod message;
mod publish;
mod read;
mod replay;
mod sink;

pub use config::JetStreamConfig;
pub use connect::{CONNECT_ATTEMPTS, check_prefix, check_stream_config, connect, servers};
pub use message::{
    DOCUMENT_KEYS, DecodedBatch, INCLUSION_KEY, INTERACTION_METRICS_KEY, MESSAGE_KEYS,
    MESSAGE_KEYS_V1, MESSAGE_VERSION, MESSAGE_VERSION_1, STOP_LATENCY_KEY, decode_batch,
    encode_batch, message_id,
};
pub use publish::{Stored, duplicate_confirms, message_id_in, publish_once};
pub use read::{
    CONSUMER_ATTEMPTS, MAX_OPEN_BYTES, MAX_STREAM_BYTES, MAX_STREAM_MESSAGES, NatsStream,
    PULL_BYTES, PULL_MESSAGES, READ_ATTEMPTS, READ_OPEN_TIMEOUT, READ_TIMEOUT, ReadStats,
    for_each_message, read_back, read_each,
};
pub use replay::{REPLAY_ATTEMPTS, REPLAY_CONFIRM_ROUNDS, ReplayReport, replay, replay_abandoning};
pub use sink::JetStreamSink;

use connect::{connect_until_up, nats_err};
use publish::{backoff, next_generation, publish_until_stored};
