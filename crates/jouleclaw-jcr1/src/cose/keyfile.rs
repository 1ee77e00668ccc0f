//! Key files: parsing, bounded reading and safe creation.
//!
//! A key file is one line: a type prefix that says which key it holds, then 64 lowercase hex
//! digits, then at most one newline. A public key file starts with [`PUBLIC_KEY_PREFIX`]
//! (`jouleclaw-ed25519-public-key `), a secret key file with [`SECRET_KEY_PREFIX`]
//! (`jouleclaw-ed25519-secret-key `), so a secret key file never parses as a public key and the
//! reverse. An untyped file (bare 64 hex digits, the format before the prefixes) is never read
//! as a public key, since a seed cannot be told from a public key by its digits; it is read as a
//! secret key only from a file that only its owner may access (mode 0600, as secret key files
//! were always written; public ones were written 0644).
//!
//! Reading one reads at most [`MAX_KEY_FILE_BYTES`] bytes, so a path such as `/dev/zero` is
//! refused at once. Writing one creates a new file (never an existing path, never through a
//! symlink: `create_new` is `O_CREAT | O_EXCL`, which fails on any existing name, a dangling
//! symlink included) and sets its mode explicitly (0600 secret, 0644 public), whatever the
//! umask. Every I/O failure keeps the operating system's error ([`Jcr1Error::Io`]).

use core::fmt;
use std::fs::{File, OpenOptions};
use std::io::{Read as _, Write as _};
use std::path::Path;

use ed25519_dalek::{SigningKey, VerifyingKey};
use zeroize::Zeroizing;

use super::{SoftwareSigner, ValidKey};
use crate::error::{Jcr1Error, Result};

/// The first bytes of a public key file, before the key's 64 lowercase hex digits.
pub const PUBLIC_KEY_PREFIX: &str = "jouleclaw-ed25519-public-key ";

/// The first bytes of a secret key file, before the seed's 64 lowercase hex digits.
pub const SECRET_KEY_PREFIX: &str = "jouleclaw-ed25519-secret-key ";

/// The most bytes a key file read consumes: the 29-byte prefix, 64 hex digits, one newline and
/// one more byte that shows the file is too long.
pub const MAX_KEY_FILE_BYTES: u64 = 95;

/// The mode of a secret key file.
pub const SECRET_KEY_MODE: u32 = 0o600;

/// The mode of a public key file.
pub const PUBLIC_KEY_MODE: u32 = 0o644;

const MALFORMED_PUBLIC: &str = "expected `jouleclaw-ed25519-public-key `, 64 lowercase hex digits \
     and at most one trailing newline";
const MALFORMED_SECRET: &str = "expected `jouleclaw-ed25519-secret-key `, 64 lowercase hex digits \
     and at most one trailing newline";
const SECRET_AS_PUBLIC: &str = "a secret key file, not a public key file (a secret key is never \
     read or shown as a public key)";
const PUBLIC_AS_SECRET: &str = "a public key file, not a secret key file";
const UNTYPED_AS_PUBLIC: &str = "an untyped key file (bare 64 hex digits, the format before typed \
     key files): it cannot be told from a secret key, so it is never read as a public key; if it \
     holds a public key, put `jouleclaw-ed25519-public-key ` before the digits";
const UNTYPED_AS_SECRET: &str = "an untyped key file (bare 64 hex digits, the format before typed \
     key files) is read as a secret key only from a file only its owner may access (chmod 600), \
     since it cannot be told from a public key; or put `jouleclaw-ed25519-secret-key ` before \
     the digits";

/// What a key file's text says it holds.
enum Kind<'a> {
    Public(&'a [u8]),
    Secret(&'a [u8]),
    /// Bare 64 lowercase hex digits.
    Untyped(&'a [u8]),
    Malformed,
}

/// Splits `text` by its prefix; the body is checked to be 64 lowercase hex digits.
fn classify(text: &[u8]) -> Kind<'_> {
    let line = text.strip_suffix(b"\n").unwrap_or(text);
    let is_hex64 =
        |b: &[u8]| b.len() == 64 && b.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'));
    if let Some(body) = line.strip_prefix(PUBLIC_KEY_PREFIX.as_bytes()) {
        return if is_hex64(body) {
            Kind::Public(body)
        } else {
            Kind::Malformed
        };
    }
    if let Some(body) = line.strip_prefix(SECRET_KEY_PREFIX.as_bytes()) {
        return if is_hex64(body) {
            Kind::Secret(body)
        } else {
            Kind::Malformed
        };
    }
    if is_hex64(line) {
        Kind::Untyped(line)
    } else {
        Kind::Malformed
    }
}

fn decode_hex32(body: &[u8]) -> Result<[u8; 32]> {
    let mut out = [0u8; 32];
    hex::decode_to_slice(body, &mut out).map_err(|_| Jcr1Error::KeyFile { detail: "not hex" })?;
    Ok(out)
}

/// A public key from its 32 bytes, accepted as [`ValidKey::new`] accepts one: refuses an
/// encoding that is not a curve point, a non-canonical encoding (`y >= p`), a small-order
/// (weak) key and a key with a torsion component, under which no receipt verifies. Errors are
/// `bad_key_file`.
pub fn public_key_from_bytes(bytes: &[u8; 32]) -> Result<VerifyingKey> {
    let key = VerifyingKey::from_bytes(bytes).map_err(|_| Jcr1Error::KeyFile {
        detail: "not a valid Ed25519 public key",
    })?;
    match ValidKey::new(key) {
        Ok(_) => Ok(key),
        Err(Jcr1Error::KeyRefused { detail }) => Err(Jcr1Error::KeyFile { detail }),
        Err(e) => Err(e),
    }
}

/// Parses a public key file: [`PUBLIC_KEY_PREFIX`], 64 lowercase hex digits, an optional
/// trailing newline. Refuses a secret key file and an untyped (bare hex) file by name, and the
/// keys [`public_key_from_bytes`] refuses.
pub fn parse_public_key_text(text: &str) -> Result<VerifyingKey> {
    let detail = match classify(text.as_bytes()) {
        Kind::Public(body) => return public_key_from_bytes(&decode_hex32(body)?),
        Kind::Secret(_) => SECRET_AS_PUBLIC,
        Kind::Untyped(_) => UNTYPED_AS_PUBLIC,
        Kind::Malformed => MALFORMED_PUBLIC,
    };
    Err(Jcr1Error::KeyFile { detail })
}

/// The public key file text: [`PUBLIC_KEY_PREFIX`], the key in lowercase hex and a newline.
pub fn public_key_text(key: &VerifyingKey) -> String {
    format!("{PUBLIC_KEY_PREFIX}{}\n", hex::encode(key.as_bytes()))
}

/// The seed of secret key file text; an untyped file only when `owner_only`.
fn parse_secret(text: &[u8], owner_only: bool) -> Result<Zeroizing<[u8; 32]>> {
    let detail = match classify(text) {
        Kind::Secret(body) => return Ok(Zeroizing::new(decode_hex32(body)?)),
        Kind::Untyped(body) if owner_only => return Ok(Zeroizing::new(decode_hex32(body)?)),
        Kind::Untyped(_) => UNTYPED_AS_SECRET,
        Kind::Public(_) => PUBLIC_AS_SECRET,
        Kind::Malformed => MALFORMED_SECRET,
    };
    Err(Jcr1Error::KeyFile { detail })
}

/// Reads at most [`MAX_KEY_FILE_BYTES`] of the file at `path`; also whether only the file's
/// owner may access it (its mode, read from the open file).
fn read_bounded(path: &Path, action: &'static str) -> Result<(Zeroizing<Vec<u8>>, bool)> {
    let file = File::open(path).map_err(|e| Jcr1Error::io(action, &e))?;
    let owner_only = owner_only(&file).map_err(|e| Jcr1Error::io(action, &e))?;
    let mut buf = Zeroizing::new(Vec::with_capacity(MAX_KEY_FILE_BYTES as usize));
    file.take(MAX_KEY_FILE_BYTES)
        .read_to_end(&mut buf)
        .map_err(|e| Jcr1Error::io(action, &e))?;
    if buf.len() as u64 >= MAX_KEY_FILE_BYTES {
        return Err(Jcr1Error::KeyFile {
            detail: "longer than a key file (a type prefix, 64 hex digits and a newline)",
        });
    }
    Ok((buf, owner_only))
}

/// `true` when no group or other permission bit is set (always `false` without Unix modes).
fn owner_only(file: &File) -> std::io::Result<bool> {
    let meta = file.metadata()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        Ok(meta.permissions().mode() & 0o077 == 0)
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        Ok(false)
    }
}

/// Reads a public key file: at most [`MAX_KEY_FILE_BYTES`] bytes, then
/// [`parse_public_key_text`].
pub fn read_public_key_file(path: &Path) -> Result<VerifyingKey> {
    let (bytes, _) = read_bounded(path, "reading the public key file")?;
    let text = core::str::from_utf8(&bytes).map_err(|_| Jcr1Error::KeyFile {
        detail: MALFORMED_PUBLIC,
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
    /// Parses secret key file text: [`SECRET_KEY_PREFIX`], 64 lowercase hex digits, an optional
    /// trailing newline. Refuses a public key file, and an untyped (bare hex) text, which only
    /// [`SoftwareSigner::read_key_file`] accepts, from an owner-only file.
    pub fn from_key_file_text(text: &str) -> Result<Self> {
        let seed = parse_secret(text.as_bytes(), false)?;
        Ok(Self {
            key: SigningKey::from_bytes(&seed),
        })
    }

    /// Reads a secret key file: at most [`MAX_KEY_FILE_BYTES`] bytes; errors keep the
    /// operating system's. Accepts [`SECRET_KEY_PREFIX`] files, and an untyped (bare hex) file
    /// only when no group or other permission bit is set. Does not otherwise check the file's
    /// mode: see [`check_secret_key_permissions`].
    pub fn read_key_file(path: &Path) -> Result<Self> {
        let (bytes, owner_only) = read_bounded(path, "reading the secret key file")?;
        let seed = parse_secret(&bytes, owner_only)?;
        Ok(Self {
            key: SigningKey::from_bytes(&seed),
        })
    }

    /// The secret key file text: [`SECRET_KEY_PREFIX`], the seed in lowercase hex and a
    /// newline.
    pub fn key_file_text(&self) -> Zeroizing<String> {
        Zeroizing::new(format!(
            "{SECRET_KEY_PREFIX}{}\n",
            hex::encode(self.key.to_bytes())
        ))
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
