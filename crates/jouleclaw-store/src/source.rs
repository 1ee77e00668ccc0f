//! Where the stream verifier reads a stream from (`spec/STREAM-AT-REST.md`, section 5.7): a
//! [`StreamSource`] serves the files of the at-rest layout by name, each read front to back
//! once. [`DirSource`] is a stream directory; `jouleclaw-live` serves a JetStream read-back
//! (and a stream held in memory) the same way, so one verifier ([`verify_stream`]) checks
//! them all.
//!
//! [`verify_stream`]: crate::verify_stream

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::error::{Result, StoreError};
use crate::layout::{self, Input};

/// What a [`StreamSource`] holds under one file name.
#[derive(Debug)]
pub enum Fetched<R> {
    /// The file, open for reading front to back.
    Found(R),
    /// Nothing of that name.
    Missing,
    /// Something that is not a regular file (`"symbolic link"`, `"FIFO"`, `"directory"`,
    /// `"device"`, `"socket"`): refused unread.
    NotRegular(&'static str),
}

/// A stream at rest, served file by file under the names of [`layout`]: `receipts.jsonl`,
/// `receipts.cbor`, `seals.cbor`, `inclusion.cbor`, the signed documents of
/// [`layout::DOCUMENT_FILES`], `signer.pub` and `summary.json`. The verifier asks for each
/// name at most a few times and reads what it is given once, front to back, in bounded
/// pieces; a source that holds the stream in memory serves it without copying it whole.
pub trait StreamSource {
    /// How one file is read.
    type Reader: Read;

    /// Opens the file `name`: [`Fetched::Found`], [`Fetched::Missing`] or
    /// [`Fetched::NotRegular`]. Errors only when the storage cannot be read.
    fn fetch(&mut self, name: &'static str) -> Result<Fetched<Self::Reader>>;

    /// Whether an entry named `name` is there, of any kind (what makes a stream sealed is
    /// that `seals.cbor` or `inclusion.cbor` is there, whatever it is).
    fn exists(&mut self, name: &'static str) -> Result<bool>;

    /// Where the file `name` is, to name it in an error.
    fn place(&self, name: &str) -> PathBuf;
}

/// A stream directory: each name opened with [`layout::open_input`] (no symbolic link
/// followed, no FIFO waited on, a regular file only).
#[derive(Debug, Clone, Copy)]
pub struct DirSource<'a> {
    dir: &'a Path,
}

impl<'a> DirSource<'a> {
    /// The directory `dir`: [`StoreError::NotADirectory`] when it is something else, an I/O
    /// error when it cannot be looked at.
    pub fn open(dir: &'a Path) -> Result<Self> {
        match std::fs::metadata(dir) {
            Ok(m) if m.is_dir() => Ok(Self { dir }),
            Ok(_) => Err(StoreError::NotADirectory {
                path: dir.to_owned(),
            }),
            Err(e) => Err(StoreError::io(dir, e)),
        }
    }

    /// The directory.
    pub fn dir(&self) -> &'a Path {
        self.dir
    }
}

impl StreamSource for DirSource<'_> {
    type Reader = std::fs::File;

    fn fetch(&mut self, name: &'static str) -> Result<Fetched<std::fs::File>> {
        Ok(match layout::open_input(&self.dir.join(name))? {
            Input::File(f) => Fetched::Found(f),
            Input::Missing => Fetched::Missing,
            Input::NotRegular(kind) => Fetched::NotRegular(kind),
        })
    }

    fn exists(&mut self, name: &'static str) -> Result<bool> {
        layout::exists(&self.dir.join(name))
    }

    fn place(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}
