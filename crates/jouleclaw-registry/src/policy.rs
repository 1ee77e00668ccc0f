//! Witness policies: which steward key and origin, which witnesses, and how many must cosign.
//!
//! A policy is a text file of lines (modelled on the Sigsum/C2SP policy files):
//!
//! ```text
//! # comments and blank lines are ignored
//! log <steward vkey>
//! witness <witness vkey> [<submission URL>]
//! quorum <k>
//! ```
//!
//! Exactly one `log` line (a type 0x01 verifier key whose name is the registry's origin), one
//! to 63 `witness` lines (type 0x04 verifier keys with distinct names and keys: with the
//! steward's own line, a note that carries every witness's cosignature stays within the 64
//! signature lines a note may have), and exactly one `quorum` line with
//! `witnesses / 2 < k <= witnesses`: any two quorums then share a witness, so two forks can
//! each reach a quorum only if a witness of the policy cosigned both (a quorum of half the
//! witnesses or fewer lets two disjoint sets of honest witnesses cosign two forks). No
//! witness's Ed25519 key may be the log's key (whatever the names): the steward cannot cosign
//! its own checkpoints.

use crate::error::{RegistryError, Result};
use crate::note::{ALG_COSIGNATURE_V1, ALG_ED25519, NoteKey};

/// The refusal of a witness whose Ed25519 key is the log's: the steward would cosign its own
/// checkpoints, and one key would count as a log signature and a witness.
const LOG_KEY_AS_WITNESS: &str = "a witness key is the log's key";

/// The most witnesses a policy may name: a note with the steward's line and one line per
/// witness holds at most [`MAX_NOTE_SIGNATURES`](crate::MAX_NOTE_SIGNATURES) lines.
pub const MAX_POLICY_WITNESSES: usize = 63;
/// The longest policy file read, in bytes.
pub const MAX_POLICY_BYTES: usize = 64 * 1024;

/// One witness of a policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyWitness {
    /// The witness's cosignature key (its name is the witness's name).
    pub key: NoteKey,
    /// Where `add-checkpoint` is posted (`http://host:port` prefix), when given.
    pub url: Option<String>,
}

/// A parsed witness policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WitnessPolicy {
    /// The steward's note key; its name is the registry's origin.
    pub log: NoteKey,
    /// The witnesses.
    pub witnesses: Vec<PolicyWitness>,
    /// How many distinct witnesses must cosign.
    pub quorum: usize,
}

impl WitnessPolicy {
    /// Parses a policy file's text.
    pub fn parse(text: &str) -> Result<Self> {
        if text.len() > MAX_POLICY_BYTES {
            return Err(RegistryError::PolicyMalformed {
                line: 0,
                reason: "above 64 KiB",
            });
        }
        let mut log = None;
        let mut witnesses: Vec<PolicyWitness> = Vec::new();
        let mut quorum = None;
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let bad = |reason| RegistryError::PolicyMalformed { line, reason };
            let words: Vec<&str> = raw.split_ascii_whitespace().collect();
            match words.as_slice() {
                [] => {}
                [first, ..] if first.starts_with('#') => {}
                ["log", vkey] => {
                    let key = NoteKey::parse_vkey(vkey).map_err(|_| bad("a malformed log key"))?;
                    if key.alg() != ALG_ED25519 {
                        return Err(bad("the log key is not of type 0x01 (Ed25519)"));
                    }
                    if witnesses.iter().any(|w| w.key.key() == key.key()) {
                        return Err(bad(LOG_KEY_AS_WITNESS));
                    }
                    if log.replace(key).is_some() {
                        return Err(bad("a second log line"));
                    }
                }
                ["witness", vkey, rest @ ..] if rest.len() <= 1 => {
                    let key =
                        NoteKey::parse_vkey(vkey).map_err(|_| bad("a malformed witness key"))?;
                    if key.alg() != ALG_COSIGNATURE_V1 {
                        return Err(bad("a witness key is not of type 0x04 (cosignature/v1)"));
                    }
                    if witnesses
                        .iter()
                        .any(|w| w.key.name() == key.name() || w.key.key() == key.key())
                    {
                        return Err(bad("two witnesses share a name or a key"));
                    }
                    if log.as_ref().is_some_and(|l: &NoteKey| l.key() == key.key()) {
                        return Err(bad(LOG_KEY_AS_WITNESS));
                    }
                    if witnesses.len() == MAX_POLICY_WITNESSES {
                        return Err(bad("more than 63 witnesses"));
                    }
                    let url = match rest.first() {
                        Some(u) if u.starts_with("http://") || u.starts_with("https://") => {
                            Some((*u).to_owned())
                        }
                        Some(_) => {
                            return Err(bad("a witness URL starts with http:// or https://"));
                        }
                        None => None,
                    };
                    witnesses.push(PolicyWitness { key, url });
                }
                ["quorum", k] => {
                    let k: usize = k.parse().map_err(|_| bad("the quorum is a number"))?;
                    if quorum.replace(k).is_some() {
                        return Err(bad("a second quorum line"));
                    }
                }
                _ => return Err(bad("not a log, witness or quorum line")),
            }
        }
        let end = |reason| RegistryError::PolicyMalformed { line: 0, reason };
        let log = log.ok_or(end("no log line"))?;
        let quorum = quorum.ok_or(end("no quorum line"))?;
        if quorum == 0 || quorum > witnesses.len() {
            return Err(end("the quorum is between 1 and the number of witnesses"));
        }
        if quorum * 2 <= witnesses.len() {
            return Err(end(
                "the quorum is more than half the witnesses (else two forks can each reach one)",
            ));
        }
        Ok(Self {
            log,
            witnesses,
            quorum,
        })
    }

    /// The witnesses' keys.
    pub fn witness_keys(&self) -> Vec<NoteKey> {
        self.witnesses.iter().map(|w| w.key.clone()).collect()
    }

    /// Counts the distinct policy witnesses among `cosigners` and refuses fewer than the quorum.
    pub fn check_quorum<'a>(&self, cosigners: impl IntoIterator<Item = &'a str>) -> Result<usize> {
        let mut seen: Vec<&str> = Vec::new();
        for c in cosigners {
            if self.witnesses.iter().any(|w| w.key.name() == c) && !seen.contains(&c) {
                seen.push(c);
            }
        }
        if seen.len() < self.quorum {
            return Err(RegistryError::QuorumNotMet {
                have: seen.len(),
                need: self.quorum,
            });
        }
        Ok(seen.len())
    }

    /// When the quorum had cosigned: the `quorum`-th earliest of the policy witnesses'
    /// cosignature times (one per witness), `None` below the quorum. The call existed by then
    /// unless `quorum` witnesses lied about their clocks; one witness, inside the quorum or out
    /// of it, cannot move it earlier.
    pub fn quorum_time(&self, cosignatures: &[crate::Cosignature]) -> Option<u64> {
        let mut times: Vec<u64> = Vec::new();
        for w in &self.witnesses {
            if let Some(t) = cosignatures
                .iter()
                .filter(|c| c.witness == w.key.name())
                .map(|c| c.timestamp)
                .min()
            {
                times.push(t);
            }
        }
        times.sort_unstable();
        times.get(self.quorum.checked_sub(1)?).copied()
    }
}
