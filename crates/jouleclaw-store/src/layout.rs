//! The directory layout of a stream at rest (`spec/STREAM-AT-REST.md`): file names, their
//! commit order, and how an input of a directory is opened.

use std::fs::File;
use std::io::Read as _;
use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
use std::path::Path;

use crate::error::{Result, StoreError};

/// The receipts' canonical JSON, one a line, each ending in `\n`, in window order. Required.
pub const RECEIPTS_JSONL: &str = "receipts.jsonl";
/// The window signatures: an RFC 8742 CBOR sequence of tagged COSE_Sign1, in window order
/// (every window, some or none of them). Required (it may be empty).
pub const RECEIPTS_CBOR: &str = "receipts.cbor";
/// The stream-seal checkpoints in order: what makes a directory sealed. Layout
/// [`LAYOUT_V1`]: present exactly when [`INCLUSION_CBOR`] is; layout [`LAYOUT_V2`]: required
/// beside [`INCLUSION_CBOR`], and on its own when that file is left out.
pub const SEALS_CBOR: &str = "seals.cbor";
/// One RFC 9942 inclusion receipt per line of [`RECEIPTS_JSONL`], same order. Layout
/// [`LAYOUT_V1`]: present exactly when [`SEALS_CBOR`] is; layout [`LAYOUT_V2`]: optional (every
/// item is derivable from [`SEALS_CBOR`] and the lines; when present it is checked).
pub const INCLUSION_CBOR: &str = "inclusion.cbor";

/// The first layout of a stream directory (`spec/STREAM-AT-REST.md` section 1): a sealed
/// directory holds both `seals.cbor` and `inclusion.cbor`. A `summary.json` without a `layout`
/// member was written under it.
pub const LAYOUT_V1: &str = "stream-at-rest/1";
/// The layout of `spec/STREAM-AT-REST.md` section 1.1: a sealed directory holds `seals.cbor`;
/// `inclusion.cbor` is optional and, when left out, its receipts are derived. Every
/// [`LAYOUT_V1`] directory is also a valid [`LAYOUT_V2`] directory.
pub const LAYOUT_V2: &str = "stream-at-rest/2";
/// The run's unsigned summary ([`RunSummary`](crate::RunSummary)). Optional; when present it
/// must agree with the files.
pub const SUMMARY_JSON: &str = "summary.json";
/// The signer's public key file. Optional; when present it must be the verifying key.
pub const SIGNER_PUB: &str = "signer.pub";

/// The call's `stop-latency/1` document (`spec/STOP-LATENCY-V1.md`), a COSE_Sign1. Required
/// when a receipt records a barge-in.
pub const STOP_LATENCY_CBOR: &str = "stop-latency.cbor";

/// Every signed document a call can have beside its receipts: its file and the kinds (schema
/// ids) it may hold; what a `stream-seal/2` final seal commits to (`spec/STREAM-SEAL.md`
/// section 3.2).
pub const DOCUMENT_FILES: &[(&str, &[&str])] = &[
    (STOP_LATENCY_CBOR, &["stop-latency/1", "stop-latency/2"]),
    (INTERACTION_METRICS_CBOR, &["interaction-metrics/1"]),
];

/// The call's `interaction-metrics/1` document (`spec/INTERACTION-METRICS-V1.md`), a
/// COSE_Sign1.
pub const INTERACTION_METRICS_CBOR: &str = "interaction-metrics.cbor";

/// The largest signed document read to hash it against a seal: 16 MiB (a `stop-latency/1`
/// document is at most 8 MiB and 16 KiB).
pub const MAX_DOCUMENT_BYTES: u64 = 16 << 20;

/// The order a writer renames its files into place: `summary.json` last, so its presence marks
/// a complete write.
pub const COMMIT_ORDER: [&str; 6] = [
    SIGNER_PUB,
    RECEIPTS_JSONL,
    RECEIPTS_CBOR,
    SEALS_CBOR,
    INCLUSION_CBOR,
    SUMMARY_JSON,
];

/// Every file of a run directory, in the order [`RunWriter`](crate::writer::RunWriter) renames
/// them into place: [`COMMIT_ORDER`] with the call's signed documents ([`DOCUMENT_FILES`])
/// before `summary.json`.
pub const RUN_FILES: [&str; 8] = [
    SIGNER_PUB,
    RECEIPTS_JSONL,
    RECEIPTS_CBOR,
    SEALS_CBOR,
    INCLUSION_CBOR,
    STOP_LATENCY_CBOR,
    INTERACTION_METRICS_CBOR,
    SUMMARY_JSON,
];

/// Largest `summary.json` read: 1 MiB.
pub const MAX_SUMMARY_BYTES: u64 = 1 << 20;

/// What opening an input of a directory found.
#[derive(Debug)]
pub enum Input {
    /// A regular file, open for reading.
    File(File),
    /// No entry of that name.
    Missing,
    /// An entry that is not a regular file (`"symbolic link"`, `"FIFO"`, `"directory"`,
    /// `"device"`, `"socket"`): refused unread.
    NotRegular(&'static str),
}

fn kind(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_symlink() {
        "symbolic link"
    } else if t.is_dir() {
        "directory"
    } else if t.is_fifo() {
        "FIFO"
    } else if t.is_socket() {
        "socket"
    } else if t.is_block_device() || t.is_char_device() {
        "device"
    } else {
        "not a regular file"
    }
}

/// Opens `path` for reading without following a symbolic link at its last component
/// (`O_NOFOLLOW`) and without blocking on a FIFO (`O_NONBLOCK`, which has no effect on a
/// regular file), and accepts it only when the open file is a regular file (`fstat`). A
/// symbolic link (to `/dev/zero`, to someone's secret key), a FIFO, a device or a directory is
/// [`Input::NotRegular`], never read.
pub fn open_input(path: &Path) -> Result<Input> {
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path);
    let file = match opened {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Input::Missing),
        Err(e) => {
            // ELOOP (a symbolic link), ENXIO (a socket), ...: name what is there.
            return match std::fs::symlink_metadata(path) {
                Ok(m) if !m.file_type().is_file() => Ok(Input::NotRegular(kind(&m))),
                _ => Err(StoreError::io(path, e)),
            };
        }
    };
    let meta = file.metadata().map_err(|e| StoreError::io(path, e))?;
    if !meta.file_type().is_file() {
        return Ok(Input::NotRegular(kind(&meta)));
    }
    Ok(Input::File(file))
}

/// Whether an entry of that name exists (of any kind, a dangling symbolic link included).
pub fn exists(path: &Path) -> Result<bool> {
    match std::fs::symlink_metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(StoreError::io(path, e)),
    }
}

/// Reads at most `max` bytes of an open input; `Ok(None)` when it holds more.
pub fn read_bounded(file: impl std::io::Read, path: &Path, max: u64) -> Result<Option<Vec<u8>>> {
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| StoreError::io(path, e))?;
    Ok((bytes.len() as u64 <= max).then_some(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> std::path::PathBuf {
        let p = std::env::temp_dir().join(format!("jc-store-layout-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).ok();
        p
    }

    #[test]
    fn a_symlink_a_fifo_and_a_directory_are_refused_unread_and_a_regular_file_is_opened() {
        let d = scratch("kinds");
        std::fs::write(d.join("plain"), b"x").ok();
        std::os::unix::fs::symlink("/dev/zero", d.join("zero")).ok();
        std::os::unix::fs::symlink(d.join("plain"), d.join("to-plain")).ok();
        std::fs::create_dir(d.join("sub")).ok();
        let fifo = std::process::Command::new("mkfifo")
            .arg(d.join("fifo"))
            .status();
        assert!(matches!(open_input(&d.join("plain")), Ok(Input::File(_))));
        assert!(matches!(
            open_input(&d.join("zero")),
            Ok(Input::NotRegular("symbolic link"))
        ));
        assert!(matches!(
            open_input(&d.join("to-plain")),
            Ok(Input::NotRegular("symbolic link"))
        ));
        assert!(matches!(
            open_input(&d.join("sub")),
            Ok(Input::NotRegular("directory"))
        ));
        assert!(matches!(open_input(&d.join("none")), Ok(Input::Missing)));
        if fifo.is_ok_and(|s| s.success()) {
            // Opening does not block waiting for a writer, and the FIFO is refused.
            assert!(matches!(
                open_input(&d.join("fifo")),
                Ok(Input::NotRegular("FIFO"))
            ));
        }
        assert!(matches!(
            open_input(Path::new("/dev/null")),
            Ok(Input::NotRegular("device"))
        ));
        let _ = std::fs::remove_dir_all(&d);
    }
}
