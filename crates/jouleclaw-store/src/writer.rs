//! The writer protocol (`spec/STREAM-AT-REST.md`, section 4): every output is written to a new
//! file under a temporary name (created exclusively, so nothing planted there is followed or
//! truncated), synced, and renamed into place; a destination that is a directory or one of the
//! command's inputs is refused; a directory's writer holds an exclusive lock on it for the
//! whole write.

use std::fs::File;
use std::io::Write as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use crate::error::{Result, StoreError};

/// A file written under a temporary name (`.NAME.PID.tmp`, created exclusively) and renamed
/// into place only by [`StagedFile::commit`]; removed if dropped before that.
#[derive(Debug)]
pub struct StagedFile {
    tmp: PathBuf,
    dest: PathBuf,
    file: Option<std::io::BufWriter<File>>,
    hasher: blake3::Hasher,
}

impl StagedFile {
    /// Creates the temporary file for `dir/name`.
    pub fn create(dir: &Path, name: &str) -> Result<Self> {
        let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| StoreError::io(&tmp, e))?;
        Ok(Self {
            tmp,
            dest: dir.join(name),
            file: Some(std::io::BufWriter::new(file)),
            hasher: blake3::Hasher::new(),
        })
    }

    /// Appends `bytes`.
    pub fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.hasher.update(bytes);
        match self.file.as_mut() {
            Some(f) => f.write_all(bytes).map_err(|e| StoreError::io(&self.tmp, e)),
            None => Err(StoreError::io(
                &self.tmp,
                std::io::Error::other("written after it was finished"),
            )),
        }
    }

    /// Flushes and syncs the temporary file; returns the BLAKE3 of what was written.
    pub fn finish(&mut self) -> Result<blake3::Hash> {
        if let Some(f) = self.file.take() {
            let file = f
                .into_inner()
                .map_err(|e| StoreError::io(&self.tmp, e.into_error()))?;
            file.sync_all().map_err(|e| StoreError::io(&self.tmp, e))?;
        }
        Ok(self.hasher.finalize())
    }

    /// Renames the temporary file into place (replacing a symbolic link there, never following
    /// it).
    pub fn commit(&mut self) -> Result<()> {
        self.finish()?;
        std::fs::rename(&self.tmp, &self.dest).map_err(|e| StoreError::io(&self.dest, e))?;
        self.tmp = PathBuf::new();
        Ok(())
    }
}

impl Drop for StagedFile {
    fn drop(&mut self) {
        if !self.tmp.as_os_str().is_empty() {
            self.file = None;
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Refuses `dest` when a rename into it would fail (it is a directory) or would replace one of
/// `inputs` (the same file, also through a symbolic link at `dest`). A missing `dest` is fine.
pub fn check_destination(dest: &Path, inputs: &[&Path]) -> Result<()> {
    let meta = match std::fs::symlink_metadata(dest) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(StoreError::io(dest, e)),
    };
    if meta.is_dir() {
        return Err(StoreError::Destination {
            path: dest.to_owned(),
            reason: "is a directory",
        });
    }
    let ids: Vec<(u64, u64)> = inputs
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| (m.dev(), m.ino()))
        .collect();
    let followed = std::fs::metadata(dest).ok();
    let same = [Some(meta), followed]
        .into_iter()
        .flatten()
        .any(|m| ids.contains(&(m.dev(), m.ino())));
    if same {
        return Err(StoreError::Destination {
            path: dest.to_owned(),
            reason: "is one of the command's inputs",
        });
    }
    Ok(())
}

/// Writes `bytes` to `dest` through a [`StagedFile`] in `dest`'s directory, after
/// [`check_destination`] (checked again just before the rename).
pub fn write_output(dest: &Path, bytes: &[u8], inputs: &[&Path]) -> Result<()> {
    check_destination(dest, inputs)?;
    let dir = match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    let Some(name) = dest.file_name().and_then(|n| n.to_str()) else {
        return Err(StoreError::Destination {
            path: dest.to_owned(),
            reason: "is not a file name",
        });
    };
    let mut staged = StagedFile::create(&dir, name)?;
    staged.write(bytes)?;
    staged.finish()?;
    check_destination(dest, inputs)?;
    staged.commit()
}

/// An output directory held under an exclusive lock (`flock` on the directory) for as long as
/// the value lives, so two writers never mix their outputs. Created if missing.
#[derive(Debug)]
pub struct LockedDir {
    path: PathBuf,
    created: bool,
    _lock: File,
}

impl LockedDir {
    /// Opens (creating if missing) and locks `path`; refuses a path that is not a directory
    /// (a symbolic link included) and a directory another writer holds.
    pub fn open(path: &Path) -> Result<Self> {
        let created = match std::fs::symlink_metadata(path) {
            Ok(m) if m.is_dir() => false,
            Ok(_) => {
                return Err(StoreError::NotADirectory {
                    path: path.to_owned(),
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(path).map_err(|e| StoreError::io(path, e))?;
                true
            }
            Err(e) => return Err(StoreError::io(path, e)),
        };
        let lock = File::open(path).map_err(|e| StoreError::io(path, e))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(StoreError::Locked {
                    path: path.to_owned(),
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(StoreError::io(path, e)),
        }
        Ok(Self {
            path: path.to_owned(),
            created,
            _lock: lock,
        })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether [`LockedDir::open`] created it.
    pub fn created(&self) -> bool {
        self.created
    }

    /// Removes `name` from the directory if it is there.
    pub fn remove(&self, name: &str) -> Result<()> {
        let p = self.path.join(name);
        match std::fs::remove_file(&p) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(StoreError::io(&p, e)),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_writer_is_refused_while_the_first_holds_the_lock() {
        let p = std::env::temp_dir().join(format!("jc-store-lock-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        let first = LockedDir::open(&p);
        assert!(first.as_ref().is_ok_and(LockedDir::created));
        assert!(matches!(
            LockedDir::open(&p),
            Err(StoreError::Locked { .. })
        ));
        drop(first);
        assert!(LockedDir::open(&p).is_ok_and(|d| !d.created()));
        let _ = std::fs::remove_dir_all(&p);
    }

    #[test]
    fn an_output_never_replaces_an_input_even_through_a_symlink() {
        let p = std::env::temp_dir().join(format!("jc-store-dest-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).ok();
        std::fs::write(p.join("in"), b"input").ok();
        std::os::unix::fs::symlink(p.join("in"), p.join("link")).ok();
        let input = p.join("in");
        assert!(write_output(&p.join("in"), b"x", &[&input]).is_err());
        assert!(write_output(&p.join("link"), b"x", &[&input]).is_err());
        assert_eq!(
            std::fs::read(p.join("in")).ok().as_deref(),
            Some(&b"input"[..])
        );
        // Accepted neighbour: a new name is written.
        assert!(write_output(&p.join("out"), b"x", &[&input]).is_ok());
        assert_eq!(
            std::fs::read(p.join("out")).ok().as_deref(),
            Some(&b"x"[..])
        );
        let _ = std::fs::remove_dir_all(&p);
    }
}
