//! Output files: written under a temporary name, renamed into place, never over an input.

use std::fs::File;
use std::io::Write as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use crate::Failure;

/// A file written under a temporary name and renamed into place only on success; removed if
/// dropped before that.
pub(crate) struct Staged {
    tmp: PathBuf,
    dest: PathBuf,
    file: Option<std::io::BufWriter<File>>,
    hasher: blake3::Hasher,
}

impl Staged {
    pub(crate) fn create(dir: &Path, name: &str) -> Result<Self, Failure> {
        let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| Failure::io(&tmp, e))?;
        Ok(Self {
            tmp,
            dest: dir.join(name),
            file: Some(std::io::BufWriter::new(file)),
            hasher: blake3::Hasher::new(),
        })
    }

    pub(crate) fn write(&mut self, bytes: &[u8]) -> Result<(), Failure> {
        self.hasher.update(bytes);
        match self.file.as_mut() {
            Some(f) => f.write_all(bytes).map_err(|e| Failure::io(&self.tmp, e)),
            None => Err(Failure::io(&self.tmp, "already closed")),
        }
    }

    /// Flushes and syncs the temporary file; returns the BLAKE3 of what was written.
    pub(crate) fn finish(&mut self) -> Result<blake3::Hash, Failure> {
        if let Some(f) = self.file.take() {
            let file = f
                .into_inner()
                .map_err(|e| Failure::io(&self.tmp, e.error()))?;
            file.sync_all().map_err(|e| Failure::io(&self.tmp, e))?;
        }
        Ok(self.hasher.finalize())
    }

    pub(crate) fn commit(&mut self) -> Result<(), Failure> {
        std::fs::rename(&self.tmp, &self.dest).map_err(|e| Failure::io(&self.dest, e))?;
        self.tmp = PathBuf::new();
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.tmp.as_os_str().is_empty() {
            self.file = None;
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Refuses `dest` when a rename into it would fail (it is a directory) or would replace one of
/// `inputs` (the same file, also through a symlink at `dest`). A missing `dest` is fine.
pub(crate) fn check_destination(dest: &Path, inputs: &[&Path]) -> Result<(), Failure> {
    let meta = match std::fs::symlink_metadata(dest) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Failure::io(dest, e)),
    };
    if meta.is_dir() {
        return Err(Failure::Usage(format!(
            "{}: is a directory; refusing to replace it",
            dest.display()
        )));
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
        return Err(Failure::Usage(format!(
            "{}: is one of the command's inputs; refusing to replace it",
            dest.display()
        )));
    }
    Ok(())
}

/// Writes `bytes` to `dest` through a staged file in `dest`'s directory (created exclusively,
/// synced, renamed into place), after [`check_destination`]. A planted symlink at `dest` is
/// replaced, never followed.
pub(crate) fn write_output(dest: &Path, bytes: &[u8], inputs: &[&Path]) -> Result<(), Failure> {
    check_destination(dest, inputs)?;
    let dir = match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    let Some(name) = dest.file_name().and_then(|n| n.to_str()) else {
        return Err(Failure::io(dest, "not a file name"));
    };
    let mut staged = Staged::create(&dir, name)?;
    staged.write(bytes)?;
    staged.finish()?;
    staged.commit()
}
