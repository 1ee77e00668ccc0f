//! `jouleclaw receipts verify|inclusion`: many receipts, a CBOR sequence or a run's directory.

use std::path::PathBuf;

use clap::Subcommand;

use super::{receipt, registry, stream_dir};
use crate::{CmdResult, Failure};

#[derive(Subcommand, Debug)]
pub(crate) enum ReceiptsCmd {
    /// Verify an RFC 8742 CBOR sequence of COSE_Sign1 receipts, or a run's whole directory
    /// (and, when it was sealed, its completeness); report every bad item.
    Verify {
        /// The public key file.
        #[arg(long = "pub", value_name = "PUBFILE")]
        public: PathBuf,
        /// With a directory: accept one that is not sealed (exit 0 when every receipt
        /// verifies). Without seals completeness is unknown, so by default such a directory
        /// exits 1.
        #[arg(long)]
        allow_unsealed: bool,
        /// A witness policy: also require DIR/registry.tlog-proof, the run's final seal in a
        /// registry checkpoint cosigned by the policy's quorum (spec/CALL-REGISTRY.md).
        #[arg(long, value_name = "FILE")]
        witness_policy: Option<PathBuf>,
        /// The CBOR sequence (e.g. `receipts.cbor` from `jouleclaw run`) or a run's directory.
        file: PathBuf,
    },
    /// Export one window's RFC 9942 inclusion receipt from a sealed run directory, derived from
    /// its seals.cbor and receipts.jsonl (spec/STREAM-AT-REST.md section 5.6) and verified
    /// before it is written: the receipt a third party checks against that one receipt.
    Inclusion {
        /// The sealed run directory.
        dir: PathBuf,
        /// The window whose receipt is to be proven.
        #[arg(long, value_name = "N")]
        window: u64,
        /// The public key file to verify the checkpoints with (default: DIR/signer.pub, read
        /// without following a symbolic link).
        #[arg(long = "pub", value_name = "PUBFILE")]
        public: Option<PathBuf>,
        /// Write the COSE_Sign1 bytes here (created new, then renamed; never over one of the
        /// directory's files); without it they go to standard output.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
}

/// `jouleclaw receipts`.
pub(crate) fn exec(cmd: &ReceiptsCmd) -> CmdResult {
    match cmd {
        ReceiptsCmd::Verify {
            public,
            allow_unsealed,
            witness_policy,
            file,
        } => {
            if file.is_dir() {
                stream_dir::verify(public, file, *allow_unsealed)
            } else if *allow_unsealed {
                Err(Failure::Usage(
                    "--allow-unsealed needs a stream directory, not one CBOR file".to_owned(),
                ))
            } else {
                receipt::verify_sequence(public, file)
            }
        }
        .and_then(|()| registry::verify_witnessed(public, file, witness_policy.as_deref())),
        ReceiptsCmd::Inclusion {
            dir,
            window,
            public,
            out,
        } => stream_dir::export_inclusion(dir, *window, public.as_deref(), out.as_deref()),
    }
}
