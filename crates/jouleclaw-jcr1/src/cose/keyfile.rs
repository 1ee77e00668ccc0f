//! Key files: parsing, bounded reading and safe creation.
//!
//! A key file is 64 lowercase hex digits and at most one newline. Reading one reads at most
//! [`MAX_KEY_FILE_BYTES`] bytes, so a path such as `/dev/zero` is refused at once. Writing one
//! creates a new file (never an existing path, never through a symlink: `create_new` is
//! `O_CREAT | O_EXCL`, which fails on any existing name, a dangling symlink included) and sets
//! its mode explicitly (0600 secret, 0644 public), whatever the umask. Every I/O failure keeps
//! the operating system's error ([`Jcr1Error::Io`]).

use core::fmt;
use std::fs::{File, OpenOptions};
use std::io::{Read as _, Write as _};
use std::path::Path;

use ed25519_dalek::{SigningKey, VerifyingKey};
use zeroize::Zeroizing;

use super::SoftwareSigner;
use crate::error::{Jcr1Error, Result};

/// The most bytes a key file read consumes: 64 hex digits, one newline and one more byte that
/// shows the file is too long.
pub const MAX_KEY_FILE_BYTES: u64 = 66;

/// The mode of a secret key file.
pub const SECRET_KEY_MODE: u32 = 0o600;

/// The mode of a public key file.
pub const PUBLIC_KEY_MODE: u32 = 0o644;

fn parse_key_hex(text: &[u8]) -> Result<[u8; 32]> {
    let body = text.strip_suffix(b"\n").unwrap_or(text);
    if body.len() != 64 || !body.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(Jcr1Error::KeyFile {
            detail: "expected 64 lowercase hex digits and at most one trailing newline",
        });
    }
    let mut out = [0u8; 32];
    hex::decode_to_slice(body, &mut out).map_err(|_| Jcr1Error::KeyFile { detail: "not hex" })?;
    Ok(out)
}

/// Parses a public key file (64 lowercase hex digits, optional trailing newline). Refuses an
/// encoding that is not a curve point, a non-canonical encoding (`y >= p`) and a small-order
/// (weak) key, under which no signature verifies.
pub fn parse_public_key_text(text: &str) -> Result<VerifyingKey> {
    let bytes = parse_key_hex(text.as_bytes())?;
    let key = VerifyingKey::from_bytes(&bytes).map_err(|_| Jcr1Error::KeyFile {
        detail: "not a valid Ed25519 public key",
    })?;
    if key.to_edwards().compress().to_bytes() != bytes {
        return Err(Jcr1Error::KeyFile {
            detail: "not the canonical encoding of an Ed25519 public key",
        });
    }
    if key.is_weak() {
        return Err(Jcr1Error::KeyFile {
            detail: "a small-order (weak) Ed25519 public key",
        });
    }
    Ok(key)
}

/// The public key file text: lowercase hex and a newline.
pub fn public_key_text(key: &VerifyingKey) -> String {
    format!("{}\n", hex::encode(key.as_bytes()))
}

/// Reads at most [`MAX_KEY_FILE_BYTES`] of the file at `path`.
fn read_bounded(path: &Path, action: &'static str) -> Result<Zeroizing<Vec<u8>>> {
    let file = File::open(path).map_err(|e| Jcr1Error::io(action, &e))?;
    let mut buf = Zeroizing::new(Vec::with_capacity(MAX_KEY_FILE_BYTES as usize));
    file.take(MAX_KEY_FILE_BYTES)
        .read_to_end(&mut buf)
        .map_err(|e| Jcr1Error::io(action, &e))?;
    if buf.len() as u64 >= MAX_KEY_FILE_BYTES {
        return Err(Jcr1Error::KeyFile {
            detail: "longer than a key file (64 hex digits and a newline)",
        });
    }
    Ok(buf)
}

/// Reads a public key file: at most [`MAX_KEY_FILE_BYTES`] bytes, then
/// [`parse_public_key_text`].
pub fn read_public_key_file(path: &Path) -> Result<VerifyingKey> {
    let bytes = read_bounded(path, "reading the public key file")?;
    let text = core::str::from_utf8(&bytes).map_err(|_| Jcr1Error::KeyFile {
        detail: "expected 64 lowercase hex digits and at most one trailing newline",
    })?;
    parse_public_key_text(text)
}

/// Creates a new file at `path` with exactly `mode` and writes `text` to it.
fn create_key_file(path: &Path, mode: u32, text: &[u8], action: &'static str) -> Result<()> {
    let mut opts = OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(mode & SECRET_KEY_MODE);
    }
    let mut f = opts.open(path).map_err(|e| Jcr1Error::io(action, &e))?;
    let written = set_mode(&f, mode)
        .and_then(|()| f.write_all(text))
        .and_then(|()| f.sync_all());
    if let Err(e) = written {
        drop(f);
        // The file is ours (created just now): do not leave a partial key behind.
        let _ = std::fs::remove_file(path);
        return Err(Jcr1Error::io(action, &e));
    }
    Ok(())
}

/// Sets the open file's mode (on the handle, so no path is followed again).
fn set_mode(f: &File, mode: u32) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        f.set_permissions(std::fs::Permissions::from_mode(mode))
    }
    #[cfg(not(unix))]
    {
        let _ = (f, mode);
        Ok(())
    }
}

/// Writes a public key file: a new file with mode 0644, refusing any existing path.
pub fn write_public_key_file(key: &VerifyingKey, path: &Path) -> Result<()> {
    create_key_file(
        path,
        PUBLIC_KEY_MODE,
        public_key_text(key).as_bytes(),
        "creating the public key file",
    )
}

/// Writes a new key pair: the secret key file (mode 0600) at `secret`, then the public key file
/// (mode 0644) at `public`. Refuses equal paths before creating anything, refuses any existing
/// path, and removes the secret key file again if the public one cannot be written.
pub fn write_key_pair(signer: &SoftwareSigner, secret: &Path, public: &Path) -> Result<()> {
    if secret == public {
        return Err(Jcr1Error::KeyFile {
            detail: "the secret and the public key file paths are the same",
        });
    }
    signer.write_key_file(secret)?;
    if let Err(e) = write_public_key_file(&signer.key.verifying_key(), public) {
        let _ = std::fs::remove_file(secret);
        return Err(e);
    }
    Ok(())
}

/// A secret key file that others than its owner may access, as ssh refuses to use one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoosePermissions {
    /// The file's permission bits (e.g. `0o644`).
    pub mode: u32,
}

impl fmt::Display for LoosePermissions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "permissions {:04o} are too open: group or others may access the secret key \
             (chmod 600 fixes it)",
            self.mode & 0o7777
        )
    }
}

/// Checks a secret key file's permissions: `Some` when any group or other bit is set (mode &
/// 0o077), a warning for the caller to print; `None` when only the owner has access (and on
/// systems without Unix modes).
pub fn check_secret_key_permissions(path: &Path) -> Result<Option<LoosePermissions>> {
    let meta =
        std::fs::metadata(path).map_err(|e| Jcr1Error::io("reading the key file's mode", &e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode();
        Ok((mode & 0o077 != 0).then_some(LoosePermissions { mode }))
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        Ok(None)
    }
}

impl SoftwareSigner {
    /// Parses a secret key file: 64 lowercase hex digits, optionally followed by one newline.
    pub fn from_key_file_text(text: &str) -> Result<Self> {
        let seed = Zeroizing::new(parse_key_hex(text.as_bytes())?);
        Ok(Self {
            key: SigningKey::from_bytes(&seed),
        })
    }

    /// Reads a secret key file: at most [`MAX_KEY_FILE_BYTES`] bytes; errors keep the
    /// operating system's. Does not check the file's mode: see
    /// [`check_secret_key_permissions`].
    pub fn read_key_file(path: &Path) -> Result<Self> {
        let bytes = read_bounded(path, "reading the secret key file")?;
        let seed = Zeroizing::new(parse_key_hex(&bytes)?);
        Ok(Self {
            key: SigningKey::from_bytes(&seed),
        })
    }

    /// The secret key file text: the seed in lowercase hex and a newline.
    pub fn key_file_text(&self) -> Zeroizing<String> {
        Zeroizing::new(format!("{}\n", hex::encode(self.key.to_bytes())))
    }

    /// Writes the secret key file: a new file with mode 0600 whatever the umask, refusing any
    /// existing path (a dangling symlink included).
    pub fn write_key_file(&self, path: &Path) -> Result<()> {
        create_key_file(
            path,
            SECRET_KEY_MODE,
            self.key_file_text().as_bytes(),
            "creating the secret key file",
        )
    }
}
