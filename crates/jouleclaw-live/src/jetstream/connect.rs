//! Connecting to the cluster: the server list, the subject prefix and the stream checked
//! against the configuration, bounded retries.

use std::time::Duration;

use async_nats::jetstream::{self, stream::StorageType};

use super::{JetStreamConfig, backoff};
use crate::error::{LiveError, Result};

/// The server list of a URL: `nats://HOST:PORT`, several separated by commas.
pub fn servers(url: &str) -> Result<Vec<async_nats::ServerAddr>> {
    url.split(',')
        .map(|u| {
            u.trim().parse().map_err(|e| LiveError::Config {
                message: format!("bad NATS URL {u:?}: {e}"),
            })
        })
        .collect()
}

pub(super) fn nats_err(what: &str, e: impl core::fmt::Display) -> LiveError {
    LiveError::Sink {
        code: "nats",
        message: format!("{what}: {e}"),
    }
}

/// Attempts to create or find the stream before the sink gives up.
pub const CONNECT_ATTEMPTS: u32 = 30;

/// Refuses (`config`) a subject prefix longer than [`MAX_PREFIX_BYTES`](crate::MAX_PREFIX_BYTES)
/// or one that is not dot-separated non-empty tokens of ASCII letters, digits, `-` and `_`.
pub fn check_prefix(prefix: &str) -> Result<()> {
    let ok = prefix.len() <= crate::sink::MAX_PREFIX_BYTES
        && prefix.split('.').all(|t| {
            !t.is_empty()
                && t.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        });
    if ok {
        Ok(())
    } else {
        Err(LiveError::Config {
            message: format!(
                "subject prefix {prefix:?}: 1 to {} bytes of dot-separated tokens of letters, digits, - and _",
                crate::sink::MAX_PREFIX_BYTES
            ),
        })
    }
}

/// Refuses (`stream_mismatch`) a JetStream stream found under the configured name that does
/// not keep what the sink writes as the sink would have made it: file storage, at least the
/// replicas asked for, this prefix's subjects, limits retention; and, unless
/// `config.allow_retention`, nothing that deletes messages on its own (`max_age`, a message,
/// byte or per-subject limit). A batch acknowledged by a stream that then drops it would be
/// counted durable and be gone before any audit.
pub fn check_stream_config(
    found: &jetstream::stream::Config,
    config: &JetStreamConfig,
) -> Result<()> {
    use jetstream::stream::RetentionPolicy;
    let mut wrong = Vec::new();
    if found.storage != StorageType::File {
        wrong.push("memory storage".to_owned());
    }
    if found.num_replicas < config.replicas {
        wrong.push(format!(
            "{} replicas, {} asked for",
            found.num_replicas, config.replicas
        ));
    }
    if !found
        .subjects
        .iter()
        .any(|s| *s == format!("{}.>", config.prefix))
    {
        wrong.push(format!(
            "subjects {:?}, not {}.>",
            found.subjects, config.prefix
        ));
    }
    if found.retention != RetentionPolicy::Limits {
        wrong.push(format!("{:?} retention", found.retention));
    }
    if !config.allow_retention {
        if !found.max_age.is_zero() {
            wrong.push(format!("max_age {:?}", found.max_age));
        }
        for (what, v) in [
            ("max_msgs", found.max_messages),
            ("max_bytes", found.max_bytes),
            ("max_msgs_per_subject", found.max_messages_per_subject),
        ] {
            if v > 0 {
                wrong.push(format!("{what} {v}"));
            }
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(LiveError::Sink {
            code: "stream_mismatch",
            message: format!(
                "the existing JetStream stream {:?} would not keep the batches as asked: {}",
                config.stream,
                wrong.join(", ")
            ),
        })
    }
}

/// Connects and makes sure the stream exists (bounded retries: [`CONNECT_ATTEMPTS`]); a
/// stream found that does not match the configuration is refused ([`check_stream_config`]).
pub async fn connect(
    config: &JetStreamConfig,
) -> Result<(jetstream::Context, jetstream::stream::Stream)> {
    check_prefix(&config.prefix)?;
    let client = async_nats::ConnectOptions::new()
        .retry_on_initial_connect()
        .connection_timeout(Duration::from_secs(5))
        .request_timeout(Some(config.ack_timeout))
        .connect(servers(&config.url)?)
        .await
        .map_err(|e| nats_err("connect", e))?;
    let js = jetstream::new(client);
    // A cluster that just started may have no meta leader yet: bounded retries.
    let mut attempt = 0u32;
    loop {
        let created = js
            .get_or_create_stream(jetstream::stream::Config {
                name: config.stream.clone(),
                subjects: vec![format!("{}.>", config.prefix)],
                storage: StorageType::File,
                num_replicas: config.replicas,
                duplicate_window: config.duplicate_window,
                ..Default::default()
            })
            .await;
        match created {
            Ok(stream) => {
                check_stream_config(&stream.cached_info().config, config)?;
                return Ok((js, stream));
            }
            Err(e) if attempt >= CONNECT_ATTEMPTS => return Err(nats_err("stream", e)),
            Err(_) => {
                attempt += 1;
                tokio::time::sleep(backoff(config, attempt)).await;
            }
        }
    }
}

/// Connects as [`connect`] does, again and again (each attempt bounded; a pause of
/// `backoff_max` between them) until the cluster answers: the sink's link, which a run that
/// starts with the cluster down waits for with its batches in the journal. Ends when the
/// sink drops it. A stream that answers and does not match the configuration
/// (`stream_mismatch`) ends it with that error: the sink fails, its batches stay journaled.
pub(super) async fn connect_until_up(
    config: JetStreamConfig,
) -> Result<(jetstream::Context, jetstream::stream::Stream)> {
    loop {
        match connect(&config).await {
            Ok(link) => return Ok(link),
            Err(e) if e.code() == "stream_mismatch" => return Err(e),
            Err(_) => {}
        }
        tokio::time::sleep(config.backoff_max).await;
    }
}
