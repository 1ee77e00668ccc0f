//! Key files named on the command line.

use std::path::Path;

use jouleclaw_stack::jcr1::cose::{self, PublicKey, SoftwareSigner, ValidKey};

use crate::Failure;
use crate::out::tell;

/// Reads a public key file the user named (at most `cose::MAX_KEY_FILE_BYTES` bytes are read).
pub(crate) fn read_public_key(path: &Path) -> Result<PublicKey, Failure> {
    cose::read_public_key_file(path).map_err(|e| Failure::io(path, e))
}

/// A public key checked once by the one key rule (`ValidKey::new`), for every verification
/// under it; a key file the reader accepted is never refused here (a refusal is exit 2).
pub(crate) fn valid_key(key: &PublicKey) -> Result<ValidKey, Failure> {
    ValidKey::new(*key).map_err(|e| Failure::Usage(format!("public key: {e}")))
}

/// Reads a secret key file; warns, as ssh does, when group or others may read it.
pub(crate) fn read_secret_key(path: &Path) -> Result<SoftwareSigner, Failure> {
    let signer = SoftwareSigner::read_key_file(path).map_err(|e| Failure::io(path, e))?;
    if let Ok(Some(loose)) = cose::check_secret_key_permissions(path) {
        tell!(
            "WARNING: {}: {loose}; anyone who can read it can sign as you (chmod 600)",
            path.display()
        );
    }
    Ok(signer)
}
