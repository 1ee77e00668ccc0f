//! `jouleclaw receipt decode|sign|verify`: one receipt; and a CBOR sequence of them verified
//! (`receipts verify FILE`).

use crate::out::{say, tell};
use std::io::Read as _;
use std::path::{Path, PathBuf};

use clap::Subcommand;

use jouleclaw_stack::jcr1::cose::{self, Signer, SingleKey};
use jouleclaw_stack::jcr1::{Jcr1Error, Progress, ReceiptDecoder, StreamWindowReceipt};

use crate::keys::{read_public_key, read_secret_key};
use crate::{CmdResult, Failure};

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
            jouleclaw_stack::store::writer::write_output(out, &signed.cose_sign1, &[key, path])?;
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
    let file = std::fs::File::open(path).map_err(|e| Failure::io(path, e))?;
    // One item, read within the profile's item limit; trailing bytes are refused unread.
    let bytes = cose::read_single_item(file).map_err(|e| match e {
        Jcr1Error::Cose(c) => {
            Failure::Refused(format!("{}: refused: {} ({c})", path.display(), c.as_str()))
        }
        other => Failure::io(path, other),
    })?;
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

/// Refused items named one by one on stderr; the rest are counted.
const MAX_NAMED_ITEMS: usize = jouleclaw_stack::store::MAX_NAMED_PROBLEMS;

/// `receipts verify --pub PUB FILE.cbor`.
pub(crate) fn verify_sequence(public: &Path, path: &Path) -> CmdResult {
    let key = read_public_key(public)?;
    let file = std::fs::File::open(path).map_err(|e| Failure::io(path, e))?;
    let mut bad = 0usize;
    // Streamed: memory is one batch of items, each within the profile's item limit, whatever
    // the file's size.
    let total = cose::verify_sequence(file, &SingleKey::new(key), 64, |i, r| {
        if let Err(c) = r {
            bad += 1;
            if bad <= MAX_NAMED_ITEMS {
                tell!("item {i}: {} ({c})", c.as_str());
            }
        }
    })
    .map_err(|e| match e {
        Jcr1Error::Cose(c) => Failure::Refused(format!(
            "{}: {}: {c}; the sequence cannot be split past it ({bad} refused before it)",
            path.display(),
            c.as_str()
        )),
        other => Failure::io(path, other),
    })?;
    if bad > MAX_NAMED_ITEMS {
        tell!(
            "... and {} more refused items (only the first {MAX_NAMED_ITEMS} are named)",
            bad - MAX_NAMED_ITEMS
        );
    }
    if total == 0 {
        return Err(Failure::Refused(format!(
            "{}: no receipts in the sequence",
            path.display()
        )));
    }
    say!(
        "{} verified, {bad} refused, of {total} receipts in {}",
        total - bad,
        path.display()
    );
    if bad > 0 {
        return Err(Failure::Refused(format!(
            "{bad} of {total} receipts refused"
        )));
    }
    Ok(())
}

#[derive(Subcommand, Debug)]
pub(crate) enum ReceiptCmd {
    /// Strictly decode the file's exact bytes as a receipt; print its content hash.
    Decode {
        /// The receipt's canonical JSON (no trailing newline).
        file: PathBuf,
    },
    /// Sign the receipt in FILE as a tagged COSE_Sign1.
    Sign {
        /// The secret key file.
        #[arg(long)]
        key: PathBuf,
        /// The receipt's canonical JSON.
        file: PathBuf,
        /// Where to write the COSE_Sign1 bytes (default: standard output).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Verify a tagged COSE_Sign1; print the content hash and the receipt.
    Verify {
        /// The public key file.
        #[arg(long = "pub", value_name = "PUBFILE")]
        public: PathBuf,
        /// The COSE_Sign1 bytes.
        file: PathBuf,
    },
}

/// `jouleclaw receipt`.
pub(crate) fn exec(cmd: &ReceiptCmd) -> CmdResult {
    match cmd {
        ReceiptCmd::Decode { file } => decode(file),
        ReceiptCmd::Sign { key, file, out } => sign(key, file, out.as_deref()),
        ReceiptCmd::Verify { public, file } => verify(public, file),
    }
}
