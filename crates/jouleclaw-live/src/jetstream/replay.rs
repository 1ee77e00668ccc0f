//! [`replay`]: a journal's undelivered batches published and read back.

use async_nats::jetstream;
use bytes::Bytes;

use super::{
    CONSUMER_ATTEMPTS, JetStreamConfig, READ_ATTEMPTS, Stored, connect, decode_batch,
    for_each_message, message_id, nats_err, publish_until_stored,
};
use crate::error::{LiveError, Result};
use crate::journal::{Journal, JournalWriter, Record, Recovered};

/// Attempts per batch in [`replay`] (a cluster that just restarted elects its leaders first).
pub const REPLAY_ATTEMPTS: u32 = 15;

/// Read-back rounds in [`replay`]: a batch acknowledged (or found) but not read back from its
/// subject is published again under the next id generation, at most this many times.
pub const REPLAY_CONFIRM_ROUNDS: u32 = 3;

/// What [`replay`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplayReport {
    /// What opening the journal found (records, delivered, torn tail).
    pub recovered: Recovered,
    /// Undelivered batches found.
    pub undelivered: u64,
    /// Of them, published now and acknowledged as new.
    pub published: u64,
    /// Of them, already stored (found on their subject, or acknowledged as a duplicate whose
    /// stored message was read back): marked delivered without storing them again.
    pub already_stored: u64,
    /// Of the published or already stored, not found when their subject was read back after
    /// the publishes, so published again under the next id generation (counted once, in
    /// `published` or `already_stored`, by their first outcome).
    pub republished: u64,
    /// Receipts in the batches delivered now (read back from their subject).
    pub receipts: u64,
    /// Batches still undelivered (a publish failed within its attempts, or a batch was not
    /// read back after [`REPLAY_CONFIRM_ROUNDS`] rounds).
    pub left: u64,
    /// Batches read back from their subject whose delivered mark could not be written (a
    /// journal write failed, also when retried): still listed undelivered in the file; a
    /// replay run again marks them without publishing.
    pub unmarked: u64,
    /// Journal writes that failed and were cut back.
    pub write_errors: u64,
    /// Undelivered records that cannot be delivered (offset, why): no batch the sink wrote
    /// (a checksum is no authentication) or journaled for another subject. Nothing is
    /// published for them; they stay undelivered (counted in `left`) unless abandoned.
    pub undeliverable: Vec<(u64, String)>,
    /// Of them, abandoned now (`replay_abandoning`): an abandoned mark written, no longer
    /// undelivered.
    pub abandoned: u64,
}

/// Why the record `rec` with `body` cannot be delivered under `config`, if it cannot: its
/// body is no batch, or the batch belongs on another subject.
fn undeliverable(config: &JetStreamConfig, rec: &Record, body: &[u8]) -> Option<String> {
    match decode_batch(body) {
        Err(e) => Some(format!("not a batch: {e}")),
        Ok(b) => {
            let expected = config.subject(&b.steward, &b.stream_id);
            (rec.subject != expected).then(|| {
                format!(
                    "journaled for subject {}, but its batch belongs on {}",
                    jouleclaw_store::escape_untrusted(&rec.subject),
                    jouleclaw_store::escape_untrusted(&expected)
                )
            })
        }
    }
}

/// A replayed batch waiting to be read back.
struct Replayed {
    rec: Record,
    body: Bytes,
    receipts: u64,
    generation: u32,
}

/// The message ids stored on `subject`. Each read is checked against the stream leader's last
/// sequence on the subject, asked just before it (a `STREAM.MSG.GET`, which the leader
/// answers): a consumer placed
/// on a replica still catching up after a restart delivers a prefix of the subject and ends
/// there, and an id missed so would be published again under its next generation, a batch
/// stored twice. A short read is repeated [`READ_ATTEMPTS`] times, backing off, then refused.
async fn ids_on(
    stream: &jetstream::stream::Stream,
    subject: &str,
) -> Result<std::collections::HashSet<String>> {
    let mut attempt = 0u32;
    loop {
        // Asked again before each read: a message removed in between (a retention limit, a
        // purge) lowers it, and a stale figure would keep every read short.
        let last = leader_last_sequence(stream, subject).await?;
        let mut ids = std::collections::HashSet::new();
        let mut top = 0u64;
        for_each_message(stream, subject, usize::MAX, |seq, payload| {
            ids.insert(message_id(payload));
            top = top.max(seq);
            Ok(())
        })
        .await?;
        if last.is_none_or(|l| top >= l) {
            return Ok(ids);
        }
        attempt += 1;
        if attempt >= READ_ATTEMPTS {
            return Err(nats_err(
                &format!("reading {subject} back"),
                format!(
                    "the read ended at sequence {top}, short of the stream leader's last, {}",
                    last.unwrap_or(0)
                ),
            ));
        }
        tokio::time::sleep(std::time::Duration::from_millis(500) * attempt).await;
    }
}

/// The stream leader's last sequence on `subject` (`None`: nothing stored there), asked again
/// while a cluster that just restarted answers with an error, at most [`CONSUMER_ATTEMPTS`]
/// times.
async fn leader_last_sequence(
    stream: &jetstream::stream::Stream,
    subject: &str,
) -> Result<Option<u64>> {
    use jetstream::stream::LastRawMessageErrorKind;
    let mut failures = 0u32;
    loop {
        match stream.get_last_raw_message_by_subject(subject).await {
            Ok(m) => return Ok(Some(m.sequence)),
            Err(e) if e.kind() == LastRawMessageErrorKind::NoMessageFound => return Ok(None),
            Err(e) => {
                failures += 1;
                if failures >= CONSUMER_ATTEMPTS {
                    return Err(nats_err(&format!("last message on {subject}"), e));
                }
                let wait = (std::time::Duration::from_millis(500) * failures)
                    .min(std::time::Duration::from_secs(2));
                tokio::time::sleep(wait).await;
            }
        }
    }
}

/// Replays a journal into JetStream: every undelivered batch is published on its subject
/// with its content `Nats-Msg-Id`, unless a message with the same body is already stored on
/// that subject (checked by reading the subject, so a replay after the duplicate window does
/// not store a batch twice either). Each publish is retried up to [`REPLAY_ATTEMPTS`] times
/// (or `config.max_attempts` if more) with backoff; when one still fails the replay stops and
/// the rest stays undelivered (`left`). Then every subject published to is read back, and a
/// batch is marked delivered only when its body is found there; one that is not (a server
/// that acknowledged what it then did not keep) is published again under the next id
/// generation, at most [`REPLAY_CONFIRM_ROUNDS`] times.
pub async fn replay(path: &std::path::Path, config: &JetStreamConfig) -> Result<ReplayReport> {
    replay_abandoning(path, config, &[]).await
}

/// [`replay`], abandoning the undeliverable records at `abandon` (offsets the replay named in
/// [`ReplayReport::undeliverable`]): an abandoned mark is written for each, so that a journal
/// holding a record no command can deliver can be cleared. An offset that is not an
/// undelivered record that cannot be delivered is refused (`config`) before anything is
/// published or written.
pub async fn replay_abandoning(
    path: &std::path::Path,
    config: &JetStreamConfig,
    abandon: &[u64],
) -> Result<ReplayReport> {
    let journal = Journal::open(path, u64::MAX)?;
    for off in abandon {
        let rec = journal
            .undelivered()
            .find(|r| r.offset == *off)
            .ok_or_else(|| LiveError::Config {
                message: format!("--abandon {off}: no undelivered batch record at that offset"),
            })?;
        let body = journal.read_body(rec)?;
        if undeliverable(config, rec, &body).is_none() {
            return Err(LiveError::Config {
                message: format!(
                    "--abandon {off}: the batch there can be delivered; only an undeliverable record is abandoned"
                ),
            });
        }
    }
    let mut report = ReplayReport {
        recovered: journal.recovered().clone(),
        undelivered: journal.undelivered_count() as u64,
        ..ReplayReport::default()
    };
    let records: Vec<Record> = journal.undelivered().cloned().collect();
    if records.is_empty() {
        return Ok(report);
    }
    // Connected (and the stream checked) before the writer thread takes the journal: a
    // refusal leaves it as it was, unlocked when this returns.
    let (js, stream) = connect(config).await?;
    let writer = JournalWriter::start(journal)?;
    let attempts = config.max_attempts.max(REPLAY_ATTEMPTS);
    let total = records.len() as u64;
    let mut done = 0u64;
    let mut stored_on: std::collections::HashMap<String, std::collections::HashSet<String>> =
        std::collections::HashMap::new();
    let mut to_confirm: Vec<Replayed> = Vec::new();
    for rec in records {
        done += 1;
        let body = Bytes::from(writer.read(rec.clone()).await?);
        let id = message_id(&body);
        // The journal's checksum is no authentication: a record is published only when it
        // is a batch, on the subject its own batch names under this configuration. Else it
        // is named and left (or abandoned when asked), and the replay goes on.
        if let Some(why) = undeliverable(config, &rec, &body) {
            if abandon.contains(&rec.offset) {
                writer.abandon(rec.offset).await?;
                report.abandoned += 1;
            } else {
                report.left += 1;
            }
            report.undeliverable.push((rec.offset, why));
            continue;
        }
        let receipts = decode_batch(&body)?.receipts.len() as u64;
        if !stored_on.contains_key(&rec.subject) {
            let ids = ids_on(&stream, &rec.subject).await?;
            stored_on.insert(rec.subject.clone(), ids);
        }
        let seen = stored_on.get_mut(&rec.subject);
        let mut generation = 0;
        if seen.as_ref().is_some_and(|s| s.contains(&id)) {
            report.already_stored += 1;
        } else {
            match publish_until_stored(&js, &stream, config, &rec.subject, &body, 0, attempts).await
            {
                Some((Stored::Before, g)) => {
                    report.already_stored += 1;
                    generation = g;
                }
                Some((Stored::New, g)) => {
                    report.published += 1;
                    generation = g;
                }
                None => {
                    // The cluster does not take it: stop here, the rest stays undelivered.
                    report.left += total - done + 1;
                    break;
                }
            }
            if let Some(s) = seen {
                s.insert(id);
            }
        }
        to_confirm.push(Replayed {
            rec,
            body,
            receipts,
            generation,
        });
    }
    // Read back: delivered only what its subject holds.
    let mut round = 0u32;
    while !to_confirm.is_empty() {
        let mut on: std::collections::HashMap<String, std::collections::HashSet<String>> =
            std::collections::HashMap::new();
        let mut missing = Vec::new();
        for r in to_confirm {
            if !on.contains_key(&r.rec.subject) {
                let ids = ids_on(&stream, &r.rec.subject).await?;
                on.insert(r.rec.subject.clone(), ids);
            }
            if on
                .get(&r.rec.subject)
                .is_some_and(|ids| ids.contains(&message_id(&r.body)))
            {
                report.receipts += r.receipts;
                writer.delivered(r.rec.offset);
            } else {
                missing.push(r);
            }
        }
        if missing.is_empty() || round >= REPLAY_CONFIRM_ROUNDS {
            report.left += missing.len() as u64;
            break;
        }
        round += 1;
        let mut again = Vec::with_capacity(missing.len());
        for mut r in missing {
            report.republished += 1;
            let next = r.generation.saturating_add(1);
            match publish_until_stored(
                &js,
                &stream,
                config,
                &r.rec.subject,
                &r.body,
                next,
                attempts,
            )
            .await
            {
                Some((_, g)) => {
                    r.generation = g;
                    again.push(r);
                }
                None => report.left += 1,
            }
        }
        to_confirm = again;
    }
    let fin = writer.finish().await?;
    report.unmarked = fin.unmarked as u64;
    report.write_errors = fin.write_errors;
    Ok(report)
}
