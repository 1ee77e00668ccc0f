//! Asking a policy's witnesses to cosign a checkpoint (C2SP `tlog-witness` `add-checkpoint`,
//! spec/CALL-REGISTRY.md section 3): every witness with a URL at once, one thread each, each
//! bounded in time, attempts and answer bytes; the valid cosignatures merged in the policy's
//! order.
//!
//! The HTTP client is built with the crate's `witness-http` feature. Without it no request is
//! made: each witness with a URL is reported as not submitted, and a policy's quorum is not met.

use std::time::Duration;

use crate::{PolicyWitness, RegistryLog, WitnessPolicy, merge_cosignatures};

/// Each `add-checkpoint` request: the whole request, response included, within this time.
pub const WITNESS_TIMEOUT: Duration = Duration::from_secs(5);
/// Attempts per witness (connection errors and 5xx answers are retried; 4xx are final).
pub const WITNESS_ATTEMPTS: u32 = 3;
/// The waits between attempts.
pub const WITNESS_BACKOFF: [Duration; 2] = [Duration::from_millis(250), Duration::from_secs(1)];

/// Submits `note` (the checkpoint of `log`, signed) to every witness of the policy that has a
/// URL, all at once (one thread per witness, each bounded as [`WITNESS_TIMEOUT`],
/// [`WITNESS_ATTEMPTS`] and [`WITNESS_BACKOFF`] say, answers at most
/// [`crate::MAX_NOTE_BYTES`]), telling each it holds `old_size`, and merges each answer's valid
/// cosignature under that witness's own key, in the policy's order. Returns the note and one
/// line per witness, in the policy's order: `<name>: cosigned` or why not. Without a policy the
/// note is returned as it is.
pub fn collect(
    mut note: Vec<u8>,
    log: &RegistryLog,
    old_size: u64,
    policy: Option<&WitnessPolicy>,
) -> (Vec<u8>, Vec<String>) {
    let mut outcome = Vec::new();
    let Some(p) = policy else {
        return (note, outcome);
    };
    let sent = &note;
    let answers: Vec<(&PolicyWitness, Result<Vec<u8>, String>)> = std::thread::scope(|s| {
        let running: Vec<_> = p
            .witnesses
            .iter()
            .filter_map(|w| w.url.as_deref().map(|url| (w, url)))
            .map(|(w, url)| {
                let thread = std::thread::Builder::new()
                    .name("witness".into())
                    .spawn_scoped(s, move || submit(url, log, old_size, sent));
                (w, thread)
            })
            .collect();
        running
            .into_iter()
            .map(|(w, thread)| {
                let answer = match thread {
                    Ok(t) => t
                        .join()
                        .unwrap_or_else(|_| Err("the submission failed".into())),
                    Err(e) => Err(format!("not submitted: no thread ({e})")),
                };
                (w, answer)
            })
            .collect()
    });
    // Each answer is merged under the key of the witness that gave it: its lines of other keys
    // are dropped, and at most one line of its own is kept (none when the note holds one).
    for (w, answer) in answers {
        match answer.map(|lines| merge_cosignatures(&note, &lines, std::slice::from_ref(&w.key))) {
            Ok(Ok(merged)) => {
                note = merged;
                outcome.push(format!("{}: cosigned", w.key.name()));
            }
            Ok(Err(e)) => outcome.push(format!("{}: {e}", w.key.name())),
            Err(why) => outcome.push(format!("{}: {why}", w.key.name())),
        }
    }
    (note, outcome)
}

/// Built without the `witness-http` feature: no request is made.
#[cfg(not(feature = "witness-http"))]
fn submit(_url: &str, _log: &RegistryLog, _old_size: u64, _note: &[u8]) -> Result<Vec<u8>, String> {
    Err("not submitted: jouleclaw-registry is built without its `witness-http` feature".into())
}

/// One `add-checkpoint` exchange with a witness, retried within the documented bounds; a 409
/// naming a smaller size the witness holds is answered once with a proof from that size.
#[cfg(feature = "witness-http")]
fn submit(url: &str, log: &RegistryLog, old_size: u64, note: &[u8]) -> Result<Vec<u8>, String> {
    use crate::{MAX_NOTE_BYTES, add_checkpoint_request, conflict_size};

    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(WITNESS_TIMEOUT))
        .http_status_as_error(false)
        .build()
        .into();
    let endpoint = format!("{}/add-checkpoint", url.trim_end_matches('/'));
    let new_size = log.size();
    let mut old = old_size;
    let mut resized = false;
    let mut last = String::new();
    let mut attempt = 0;
    while attempt < WITNESS_ATTEMPTS {
        if attempt > 0 {
            std::thread::sleep(WITNESS_BACKOFF[(attempt as usize - 1).min(1)]);
        }
        attempt += 1;
        let proof = log
            .consistency_proof(old, new_size)
            .map_err(|e| e.to_string())?;
        let body = add_checkpoint_request(old, &proof, note);
        let mut response = match agent
            .post(&endpoint)
            .header("Content-Type", "text/plain; charset=utf-8")
            .send(&body[..])
        {
            Ok(r) => r,
            Err(e) => {
                last = format!("unreachable ({e})");
                continue;
            }
        };
        let status = response.status().as_u16();
        let bytes = match response
            .body_mut()
            .with_config()
            .limit(MAX_NOTE_BYTES as u64)
            .read_to_vec()
        {
            Ok(b) => b,
            Err(e) => {
                last = format!("HTTP {status}, unreadable body ({e})");
                continue;
            }
        };
        match status {
            200 => return Ok(bytes),
            409 => match conflict_size(&bytes) {
                Some(s) if s <= new_size && s != old && !resized => {
                    old = s;
                    resized = true;
                    attempt -= 1;
                }
                Some(s) => return Err(conflict_refusal(s, old, new_size)),
                None => return Err("refused (409) without a size".into()),
            },
            500..=599 => last = format!("HTTP {status}"),
            // Asked again from the size its 409 named, the new one: the witness holds another
            // checkpoint of that size (it cosigned a fork), not this one.
            422 if resized && old == new_size => {
                return Err(format!(
                    "refused (409): the witness holds another checkpoint of size {old} than this one"
                ));
            }
            _ => {
                let why = match status {
                    403 => "the witness does not trust the steward's key",
                    404 => "the witness does not know the origin",
                    422 => "the witness refused the consistency proof",
                    _ => "refused",
                };
                return Err(format!("{why} (HTTP {status})"));
            }
        }
    }
    Err(format!("{last} after {WITNESS_ATTEMPTS} attempts"))
}

/// Why a `409 Conflict` naming size `s` ends the submission of a checkpoint of `new_size` made
/// from `old` (after at most one retry from the size a first 409 named).
#[cfg(feature = "witness-http")]
fn conflict_refusal(s: u64, old: u64, new_size: u64) -> String {
    if s > new_size {
        format!(
            "refused (409): the witness holds a checkpoint of size {s}, larger than this one ({new_size})"
        )
    } else if s == old {
        format!(
            "refused (409): the witness names size {s}, the size this request was made from (it contradicts itself)"
        )
    } else {
        format!(
            "refused (409): asked again from size {old}, the witness names size {s} (it changed its answer)"
        )
    }
}

#[cfg(all(test, feature = "witness-http"))]
mod tests {
    use super::conflict_refusal;

    #[test]
    fn a_conflict_says_which_way_the_witness_disagrees() {
        // Ahead of this checkpoint.
        assert!(conflict_refusal(12, 4, 10).contains("size 12, larger than this one (10)"));
        // Naming the very size the request came from: no checkpoint it holds is described.
        let same = conflict_refusal(0, 0, 10);
        assert!(
            same.contains("the size this request was made from"),
            "{same}"
        );
        assert!(!same.contains("larger"), "{same}");
        // A second 409 naming yet another size after the retry.
        let changed = conflict_refusal(3, 7, 10);
        assert!(changed.contains("asked again from size 7"), "{changed}");
        assert!(changed.contains("names size 3"), "{changed}");
    }
}
