//! `vectors check [DIR]`: every conformance vector file in DIR, checked with the Rust library.

use crate::out::say;
use std::path::{Path, PathBuf};

use clap::Subcommand;

use jouleclaw_stack::jcr1::cose::{self, Signer, SingleKey, SoftwareSigner};
use jouleclaw_stack::jcr1::{Limits, decode_canonical_value, decode_receipt, encode_value, schema};
use serde_json::Value;

use crate::{CmdResult, Failure};

/// The vector files this command knows, by name.
const FILES: &[&str] = &[
    "stream-window-vectors.json",
    "stream-window-vectors-extended.json",
    "stream-window-negative-vectors.json",
    "stream-window-signed-vectors.json",
    "stream-window-hash-vectors.json",
    "stream-window-1.schema.json",
];

#[derive(Default)]
struct Tally {
    passed: u64,
    failed: u64,
}

impl Tally {
    fn record(&mut self, file: &str, label: &str, result: Result<(), String>) {
        match result {
            Ok(()) => self.passed += 1,
            Err(why) => {
                self.failed += 1;
                say!("FAIL {file} {label}: {why}");
            }
        }
    }
}

fn field<'a>(v: &'a Value, key: &str) -> Result<&'a Value, String> {
    v.get(key).ok_or_else(|| format!("missing {key}"))
}

fn text<'a>(v: &'a Value, key: &str) -> Result<&'a str, String> {
    field(v, key)?
        .as_str()
        .ok_or_else(|| format!("{key} is not a string"))
}

fn hex_field(v: &Value, key: &str) -> Result<Vec<u8>, String> {
    hex::decode(text(v, key)?).map_err(|e| format!("{key}: {e}"))
}

fn list<'a>(v: &'a Value, key: &str) -> Result<&'a Vec<Value>, String> {
    field(v, key)?
        .as_array()
        .ok_or_else(|| format!("{key} is not an array"))
}

fn label(v: &Value, i: usize) -> String {
    match v.get("n") {
        Some(n) => format!("#{n}"),
        None => format!("[{i}]"),
    }
}

fn same(what: &str, got: impl AsRef<[u8]>, want: impl AsRef<[u8]>) -> Result<(), String> {
    if got.as_ref() == want.as_ref() {
        Ok(())
    } else {
        Err(format!("{what} differs"))
    }
}

/// Receipt vectors: the canonical bytes of `receipt` hash to `content_hash`, and decode
/// strictly to a receipt that re-encodes to the same bytes.
fn receipt_vector(v: &Value) -> Result<(), String> {
    let bytes = encode_value(field(v, "receipt")?).map_err(|e| e.to_string())?;
    let want = text(v, "content_hash")?;
    same(
        "content_hash",
        blake3::hash(&bytes).to_hex().as_bytes(),
        want,
    )?;
    let receipt = decode_receipt(&bytes).map_err(|r| format!("strict decode: {r}"))?;
    let again = receipt.encode().map_err(|e| e.to_string())?;
    same("re-encoding", again, bytes)
}

fn negative_case(v: &Value) -> Result<(), String> {
    let input = hex_field(v, "input_hex")?;
    let want = text(v, "expect_refusal")?;
    match decode_receipt(&input) {
        Ok(_) => Err(format!("accepted; expected refusal {want}")),
        Err(r) if r.code.as_str() == want => Ok(()),
        Err(r) => Err(format!("refused with {}, expected {want}", r.code)),
    }
}

fn signed_vector(v: &Value, signer: &SoftwareSigner) -> Result<(), String> {
    let payload = hex_field(v, "payload_hex")?;
    let receipt = decode_receipt(&payload).map_err(|r| format!("payload: {r}"))?;
    let signed = cose::sign_payload(signer, &receipt, payload).map_err(|e| e.to_string())?;
    same(
        "cose_sign1",
        &signed.cose_sign1,
        hex_field(v, "cose_sign1_hex")?,
    )?;
    for (key, got) in [
        ("protected_hex", &signed.protected[..]),
        ("to_be_signed_hex", &signed.to_be_signed[..]),
        ("signature_hex", &signed.signature[..]),
    ] {
        if v.get(key).is_some() {
            same(key, got, hex_field(v, key)?)?;
        }
    }
    let verified = cose::verify(&signed.cose_sign1, &SingleKey::new(signer.verifying_key()))
        .map_err(|c| format!("verify: {c}"))?;
    same(
        "content_hash",
        verified.content_hash.to_hex().as_bytes(),
        text(v, "content_hash")?,
    )
}

fn signed_negative(v: &Value, signer: &SoftwareSigner) -> Result<(), String> {
    let bytes = hex_field(v, "cose_sign1_hex")?;
    let want = text(v, "expect_refusal")?;
    match cose::verify(&bytes, &SingleKey::new(signer.verifying_key())) {
        Ok(_) => Err(format!("verified; expected refusal {want}")),
        Err(c) if c.as_str() == want => Ok(()),
        Err(c) => Err(format!("refused with {}, expected {want}", c.as_str())),
    }
}

fn signing_key(doc: &Value) -> Result<SoftwareSigner, String> {
    let key = field(doc, "key")?;
    let seed: [u8; 32] = hex_field(key, "seed_hex")?
        .try_into()
        .map_err(|_| "seed_hex is not 32 bytes".to_owned())?;
    let signer = SoftwareSigner::from_seed(&seed);
    let public = signer.verifying_key();
    same(
        "public_key_hex",
        hex::encode(public.as_bytes()),
        text(key, "public_key_hex")?,
    )?;
    same(
        "kid_hex",
        hex::encode(cose::kid(&public)),
        text(key, "kid_hex")?,
    )?;
    Ok(signer)
}

/// Window hash vectors: `canonical_json` is its own canonical encoding and hashes to
/// `window_hash`.
fn hash_vector(v: &Value) -> Result<(), String> {
    let json = text(v, "canonical_json")?;
    decode_canonical_value(json.as_bytes(), Limits::GENERIC)
        .map_err(|r| format!("canonical_json is not canonical: {r}"))?;
    same(
        "window_hash",
        blake3::hash(json.as_bytes()).to_hex().as_bytes(),
        text(v, "window_hash")?,
    )
}

fn each(
    tally: &mut Tally,
    name: &str,
    doc: &Value,
    key: &str,
    check: impl Fn(&Value) -> Result<(), String>,
) {
    match list(doc, key) {
        Ok(items) if !items.is_empty() => {
            for (i, v) in items.iter().enumerate() {
                tally.record(name, &format!("{key} {}", label(v, i)), check(v));
            }
        }
        Ok(_) => tally.record(name, key, Err("no entries".to_owned())),
        Err(e) => tally.record(name, key, Err(e)),
    }
}

fn check_file(tally: &mut Tally, name: &str, doc: &Value) {
    match name {
        "stream-window-vectors.json" | "stream-window-vectors-extended.json" => {
            if let Some(n) = doc.get("vector_count") {
                let count = doc.get("vectors").and_then(Value::as_array).map(Vec::len);
                let ok = n.as_u64().map(|n| Some(n as usize) == count) == Some(true);
                tally.record(
                    name,
                    "vector_count",
                    if ok {
                        Ok(())
                    } else {
                        Err("does not match the vectors".to_owned())
                    },
                );
            }
            each(tally, name, doc, "vectors", receipt_vector);
        }
        "stream-window-negative-vectors.json" => each(tally, name, doc, "cases", negative_case),
        "stream-window-signed-vectors.json" => match signing_key(doc) {
            Ok(signer) => {
                tally.record(name, "key", Ok(()));
                each(tally, name, doc, "vectors", |v| signed_vector(v, &signer));
                each(tally, name, doc, "negative", |v| {
                    signed_negative(v, &signer)
                });
            }
            Err(e) => tally.record(name, "key", Err(e)),
        },
        "stream-window-hash-vectors.json" => each(tally, name, doc, "vectors", hash_vector),
        "stream-window-1.schema.json" => tally.record(
            name,
            "schema",
            if *doc == schema::json_schema() {
                Ok(())
            } else {
                Err("differs from the library's schema::json_schema()".to_owned())
            },
        ),
        _ => {}
    }
}

/// `vectors check [DIR]`.
pub(crate) fn check(dir: &Path) -> CmdResult {
    if !dir.is_dir() {
        return Err(Failure::io(dir, "not a directory"));
    }
    let mut tally = Tally::default();
    let mut found = 0usize;
    for name in FILES {
        let path = dir.join(name);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Failure::io(&path, e)),
        };
        found += 1;
        let before = (tally.passed, tally.failed);
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(doc) => check_file(&mut tally, name, &doc),
            Err(e) => tally.record(name, "json", Err(e.to_string())),
        }
        say!(
            "{name}: {} passed, {} failed",
            tally.passed - before.0,
            tally.failed - before.1
        );
    }
    say!("{} passed, {} failed", tally.passed, tally.failed);
    if found == 0 {
        return Err(Failure::Refused(format!(
            "{}: no vector files found (looked for {})",
            dir.display(),
            FILES.join(", ")
        )));
    }
    if tally.failed > 0 {
        return Err(Failure::Refused(format!(
            "{} vector checks failed",
            tally.failed
        )));
    }
    Ok(())
}

#[derive(Subcommand, Debug)]
pub(crate) enum VectorsCmd {
    /// Check every conformance vector file in DIR with the Rust library.
    Check {
        /// The vector directory.
        #[arg(default_value = "conformance")]
        dir: PathBuf,
    },
}

/// `jouleclaw vectors`.
pub(crate) fn exec(cmd: &VectorsCmd) -> CmdResult {
    match cmd {
        VectorsCmd::Check { dir } => check(dir),
    }
}
