//! `jouleclaw keygen`: an Ed25519 signing key file.

use std::path::PathBuf;

use clap::Args;
use jouleclaw_stack::jcr1::cose::{self, Signer, SoftwareSigner};

use crate::out::say;
use crate::{CmdResult, Failure};

/// Arguments of `jouleclaw keygen`.
#[derive(Args, Debug)]
pub(crate) struct KeygenArgs {
    /// The secret key file to create (refuses to overwrite).
    #[arg(long)]
    out: PathBuf,
    /// Also write the public key file here.
    #[arg(long)]
    pub_out: Option<PathBuf>,
}

/// `keygen --out FILE [--pub-out FILE]`.
///
/// Both files are created exclusively (an existing path, a dangling symlink included, is
/// refused), the secret with mode 0600 and the public key with mode 0644 whatever the umask. If
/// the public key cannot be written, the new secret key file is removed again.
pub(crate) fn exec(args: &KeygenArgs) -> CmdResult {
    let (out, pub_out) = (args.out.as_path(), args.pub_out.as_deref());
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
    match pub_out {
        Some(p) => cose::write_key_pair(&signer, out, p).map_err(|e| Failure::io(p, e))?,
        None => signer
            .write_key_file(out)
            .map_err(|e| Failure::io(out, e))?,
    }
    let public = signer.verifying_key();
    say!("public_key {}", hex::encode(public.as_bytes()));
    say!("kid {}", hex::encode(cose::kid(&public)));
    Ok(())
}
