//! `receipt decode|sign|verify`, `receipts verify`, `keygen`.

use crate::out::{say, tell};
use std::io::Read as _;
use std::path::Path;

use jouleclaw_stack::jcr1::cose::{self, PublicKey, Signer, SingleKey, SoftwareSigner};
use jouleclaw_stack::jcr1::{Progress, ReceiptDecoder, StreamWindowReceipt};

use crate::{CmdResult, Failure};

/// Reads a public key file.
pub(crate) fn read_public_key(path: &Path) -> Result<PublicKey, Failure> {
    let text = std::fs::read_to_string(path).map_err(|e| Failure::io(path, e))?;
    cose::parse_public_key_text(&text).map_err(|e| Failure::io(path, e))
}

/// Reads a secret key file.
pub(crate) fn read_secret_key(path: &Path) -> Result<SoftwareSigner, Failure> {
    SoftwareSigner::read_key_file(path).map_err(|e| Failure::io(path, e))
}

/// Strictly decodes the file's exact bytes as a receipt, streaming it through the decoder so
/// that memory stays within the decoder's document limit whatever the file's size. Returns the
/// receipt and its bytes.
fn read_receipt(path: &Path) -> Result<(StreamWindowReceipt, Vec<u8>), Failure> {
    let mut file = std::fs::File::open(path).map_err(|e| Failure::io(path, e))?;
    let mut decoder = ReceiptDecoder::new();
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let n = file.read(&mut chunk).map_err(|e| Failure::io(path, e))?;
        if n == 0 {
            break;
        }
        if let Progress::Refused(r) = decoder.push(&chunk[..n]) {
            return Err(refused(path, r));
        }
        bytes.extend_from_slice(&chunk[..n]);
    }
    let receipt = decoder.finish().map_err(|r| refused(path, r))?;
    Ok((receipt, bytes))
}

fn refused(path: &Path, r: jouleclaw_stack::jcr1::Refusal) -> Failure {
    Failure::Refused(format!(
        "{}: refused: {} at byte {}",
        path.display(),
        r.code,
        r.offset
    ))
}

/// `receipt decode FILE`.
pub(crate) fn decode(path: &Path) -> CmdResult {
    let (_, bytes) = read_receipt(path)?;
    say!("{}", blake3::hash(&bytes).to_hex());
    Ok(())
}

/// `receipt sign --key KEY FILE [--out OUT]`.
pub(crate) fn sign(key: &Path, path: &Path, out: Option<&Path>) -> CmdResult {
    let signer = read_secret_key(key)?;
    let (receipt, bytes) = read_receipt(path)?;
    let content_hash = blake3::hash(&bytes);
    let signed = cose::sign_payload(&signer, &receipt, bytes)
        .map_err(|e| Failure::Usage(format!("signing failed: {e}")))?;
    match out {
        Some(out) => {
            crate::files::write_output(out, &signed.cose_sign1, &[key, path])?;
            say!("content_hash {}", content_hash.to_hex());
            say!("kid {}", hex::encode(cose::kid(&signer.verifying_key())));
        }
        None => crate::out::out_bytes(&signed.cose_sign1),
    }
    Ok(())
}

/// `receipt verify --pub PUB FILE`.
pub(crate) fn verify(public: &Path, path: &Path) -> CmdResult {
    let key = read_public_key(public)?;
    let bytes = std::fs::read(path).map_err(|e| Failure::io(path, e))?;
    match cose::verify(&bytes, &SingleKey::new(key)) {
        Ok(v) => {
            let canonical = v.receipt.encode().map_err(|e| {
                // A verified receipt was decoded from canonical bytes, so it re-encodes.
                Failure::Refused(format!("{}: {e}", path.display()))
            })?;
            say!("{}", v.content_hash.to_hex());
            say!("{}", String::from_utf8_lossy(&canonical));
            Ok(())
        }
        Err(c) => Err(Failure::Refused(format!(
            "{}: refused: {} ({c})",
            path.display(),
            c.as_str()
        ))),
    }
}

/// `receipts verify --pub PUB FILE.cbor|DIR`.
pub(crate) fn verify_sequence(public: &Path, path: &Path) -> CmdResult {
    if path.is_dir() {
        return crate::stream::verify_dir(public, path);
    }
    let key = read_public_key(public)?;
    let bytes = std::fs::read(path).map_err(|e| Failure::io(path, e))?;
    let items = cose::split_cbor_sequence(&bytes).map_err(|index| {
        Failure::Refused(format!(
            "{}: item {index}: cose_malformed: not well-formed CBOR; the sequence cannot be \
             split past it",
            path.display()
        ))
    })?;
    if items.is_empty() {
        return Err(Failure::Refused(format!(
            "{}: no receipts in the sequence",
            path.display()
        )));
    }
    let results = cose::verify_batch(&items, &SingleKey::new(key));
    let mut bad = 0usize;
    for (i, r) in results.iter().enumerate() {
        if let Err(c) = r {
            bad += 1;
            tell!("item {i}: {} ({c})", c.as_str());
        }
    }
    say!(
        "{} verified, {bad} refused, of {} receipts in {}",
        results.len() - bad,
        results.len(),
        path.display()
    );
    if bad > 0 {
        return Err(Failure::Refused(format!(
            "{bad} of {} receipts refused",
            results.len()
        )));
    }
    Ok(())
}

/// `keygen --out FILE [--pub-out FILE]`.
///
/// Both files are created exclusively (an existing path, a dangling symlink included, is
/// refused), the secret with mode 0600 and the public key with mode 0644 whatever the umask. If
/// the public key cannot be written, the new secret key file is removed again.
pub(crate) fn keygen(out: &Path, pub_out: Option<&Path>) -> CmdResult {
    if pub_out == Some(out) {
        return Err(Failure::Usage(format!(
            "{}: --out and --pub-out name the same file",
            out.display()
        )));
    }
    for p in std::iter::once(out).chain(pub_out) {
        match std::fs::symlink_metadata(p) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Ok(_) => return Err(Failure::io(p, "already exists; refusing to overwrite")),
            Err(e) => return Err(Failure::io(p, e)),
        }
    }
    let signer = SoftwareSigner::generate();
    signer
        .write_key_file(out)
        .map_err(|e| Failure::io(out, e))?;
    let public = signer.verifying_key();
    if let Some(Err(e)) = pub_out.map(|p| write_public_key_file(p, &public)) {
        let _ = std::fs::remove_file(out);
        return Err(e);
    }
    say!("public_key {}", hex::encode(public.as_bytes()));
    say!("kid {}", hex::encode(cose::kid(&public)));
    Ok(())
}

/// Creates a public key file exclusively (never through an existing path or symlink), mode 0644.
fn write_public_key_file(path: &Path, key: &PublicKey) -> Result<(), Failure> {
    use std::io::Write as _;
    use std::os::unix::fs::PermissionsExt as _;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| Failure::io(path, e))?;
    file.set_permissions(std::fs::Permissions::from_mode(0o644))
        .and_then(|()| file.write_all(cose::public_key_text(key).as_bytes()))
        .and_then(|()| file.sync_all())
        .map_err(|e| {
            let _ = std::fs::remove_file(path);
            Failure::io(path, e)
        })
}
