//! The crate's one error type and the seal decoder's refusals.

use core::fmt;

use jouleclaw_jcr1::RefusalCode;

/// Why the strict `stream-seal/1` / `stream-seal/2` decoder refused a byte string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SealCode {
    /// A JCR-1 canonical-JSON or generic schema refusal (`whitespace`, `unsorted_keys`,
    /// `unknown_field`, `missing_field`, `wrong_type`, `null`, `negative_unsigned`,
    /// `empty_string`, `bad_closed_at`, ...), with jcr1's stable code.
    Json(RefusalCode),
    /// `schema` is neither `"stream-seal/1"` nor `"stream-seal/2"`.
    WrongSchema,
    /// `root` is not 64 lowercase hex digits.
    BadRoot,
    /// `tree_size` is 0.
    TreeSizeZero,
    /// `first_window_id` is greater than `last_window_id`.
    WindowRangeReversed,
    /// `last_window_id - first_window_id + 1 != tree_size + empty_windows_skipped`.
    WindowCountMismatch,
    /// `stream-seal/2`: a key of `documents` is not a document kind (`name/version`: lowercase
    /// ASCII letters, digits and `-`, a `/`, a version without a leading zero; at most 64 bytes).
    BadDocumentKind,
    /// `stream-seal/2`: a digest in `documents` is not 64 lowercase hex digits.
    BadDocumentDigest,
    /// `stream-seal/2`: more than [`crate::seal::MAX_SEALED_DOCUMENTS`] documents.
    TooManyDocuments,
    /// `stream-seal/2` on a seal whose `final` is `false`: only the final seal commits to the
    /// call's documents.
    DocumentsNotFinal,
}

impl SealCode {
    /// The stable string form.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Json(c) => c.as_str(),
            Self::WrongSchema => "seal_wrong_schema",
            Self::BadRoot => "seal_bad_root",
            Self::TreeSizeZero => "seal_tree_size_zero",
            Self::WindowRangeReversed => "seal_window_range_reversed",
            Self::WindowCountMismatch => "seal_window_count_mismatch",
            Self::BadDocumentKind => "seal_bad_document_kind",
            Self::BadDocumentDigest => "seal_bad_document_digest",
            Self::TooManyDocuments => "seal_too_many_documents",
            Self::DocumentsNotFinal => "seal_documents_not_final",
        }
    }
}

impl fmt::Display for SealCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A refusal of the seal decoder: the code and the byte offset at which it was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SealRefusal {
    /// Why.
    pub code: SealCode,
    /// Where, in bytes from the start of the document (the input length for refusals decided
    /// at the end, which every schema refusal is).
    pub offset: u64,
}

impl fmt::Display for SealRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "seal refused ({}) at byte {}", self.code, self.offset)
    }
}

impl std::error::Error for SealRefusal {}

/// Why a COSE structure of the seal profile was refused. [`CoseCode::as_str`] is stable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CoseCode {
    /// Not well-formed CBOR, not a COSE_Sign1, or bytes after it.
    Malformed,
    /// A COSE_Sign1 without tag 18.
    Untagged,
    /// A CBOR tag other than 18.
    WrongTag,
    /// Protected `alg` missing or not -8 (EdDSA).
    AlgNotEdDsa,
    /// Protected `vds` (395) missing or not 1 (RFC9162_SHA256).
    VdsNotRfc9162,
    /// No seal document (label -65537) in the protected header, or not a byte string.
    SealMissing,
    /// `kid` missing or not 32 bytes.
    BadKid,
    /// `kid` is not the thumbprint of the verification key.
    UnknownKid,
    /// CWT claims (label 15) not exactly `{1: tstr, 2: tstr}`, or `iss` differs from the seal's
    /// `steward`.
    IssMismatch,
    /// CWT `sub` differs from `{stream_id}:seal:{tree_size}`.
    SubMismatch,
    /// The protected header is not byte for byte the profile's encoding of its values.
    ProtectedNotCanonical,
    /// The unprotected header is not exactly what the structure requires (`{396: {-1: [p]}}`
    /// for an inclusion receipt; `{}` or `{396: {-2: [p]}}` for a checkpoint).
    BadVdp,
    /// A proof byte string is not the deterministic CBOR `[uint, uint, [* bstr]]`.
    ProofMalformed,
    /// The payload is attached; the profile detaches it (the root).
    PayloadAttached,
    /// The envelope is not the deterministic encoding of its parts.
    EnvelopeNotCanonical,
    /// The key `A` or the signature's `R` is not a valid point, or has a torsion (small-order)
    /// component.
    Torsion,
    /// The Ed25519 signature does not verify (`verify_strict`).
    BadSignature,
}

impl CoseCode {
    /// The stable code.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Malformed => "seal_cose_malformed",
            Self::Untagged => "seal_cose_untagged",
            Self::WrongTag => "seal_cose_wrong_tag",
            Self::AlgNotEdDsa => "seal_cose_alg_not_eddsa",
            Self::VdsNotRfc9162 => "seal_cose_vds_not_rfc9162",
            Self::SealMissing => "seal_cose_seal_missing",
            Self::BadKid => "seal_cose_bad_kid",
            Self::UnknownKid => "seal_cose_unknown_kid",
            Self::IssMismatch => "seal_cose_iss_mismatch",
            Self::SubMismatch => "seal_cose_sub_mismatch",
            Self::ProtectedNotCanonical => "seal_cose_protected_not_canonical",
            Self::BadVdp => "seal_cose_bad_vdp",
            Self::ProofMalformed => "seal_cose_proof_malformed",
            Self::PayloadAttached => "seal_cose_payload_attached",
            Self::EnvelopeNotCanonical => "seal_cose_envelope_not_canonical",
            Self::Torsion => "seal_cose_torsion",
            Self::BadSignature => "seal_cose_bad_signature",
        }
    }
}

/// Why a Merkle proof was refused. [`ProofCode::as_str`] is stable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProofCode {
    /// `leaf_index >= tree_size` (a tree size of 0 included).
    IndexOutOfRange,
    /// Consistency sizes not `0 < first <= second`.
    SizesOutOfOrder,
    /// The path has more or fewer hashes than the sizes and index require.
    WrongLength,
    /// A path element is not exactly 32 bytes.
    BadElement,
    /// The recomputed (second) root differs from the expected root.
    RootMismatch,
    /// The consistency proof does not reproduce the first root.
    FirstRootMismatch,
    /// The proof's tree size differs from the seal's `tree_size`.
    TreeSizeMismatch,
}

impl ProofCode {
    /// The stable code.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::IndexOutOfRange => "proof_index_out_of_range",
            Self::SizesOutOfOrder => "proof_sizes_out_of_order",
            Self::WrongLength => "proof_wrong_length",
            Self::BadElement => "proof_bad_element",
            Self::RootMismatch => "proof_root_mismatch",
            Self::FirstRootMismatch => "proof_first_root_mismatch",
            Self::TreeSizeMismatch => "proof_tree_size_mismatch",
        }
    }
}

/// Every failure of this crate. [`SealError::code`] is stable.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SealError {
    /// The strict seal decoder refused a document.
    Refused(SealRefusal),
    /// A seal cannot be encoded (a counter above 2^53-1, an empty name, inconsistent counts).
    Unencodable {
        /// The field.
        field: &'static str,
        /// Why.
        reason: &'static str,
    },
    /// The log holds its maximum number of leaves.
    LogFull {
        /// The limit.
        max_leaves: u64,
    },
    /// A window id not greater than the previous one was appended.
    WindowNotIncreasing {
        /// The last appended window id.
        previous: u64,
        /// The refused one.
        window_id: u64,
    },
    /// A proof or root was requested for a size the log cannot serve (0 where not allowed, or
    /// above the current size).
    SizeOutOfRange {
        /// The requested size.
        size: u64,
        /// The log's size.
        tree_size: u64,
    },
    /// The stream was sealed final: nothing may be appended or sealed after it.
    Finished,
    /// A Merkle proof was refused.
    Proof(ProofCode),
    /// A COSE structure was refused.
    Cose(CoseCode),
    /// The signer failed.
    Signer {
        /// Its code and message.
        detail: String,
    },
}

impl SealError {
    /// A stable code: the refusal's or proof's or COSE code, else one per variant.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Refused(r) => r.code.as_str(),
            Self::Unencodable { .. } => "unencodable",
            Self::LogFull { .. } => "log_full",
            Self::WindowNotIncreasing { .. } => "window_not_increasing",
            Self::SizeOutOfRange { .. } => "size_out_of_range",
            Self::Finished => "seal_finished",
            Self::Proof(p) => p.as_str(),
            Self::Cose(c) => c.as_str(),
            Self::Signer { .. } => "signer_failed",
        }
    }
}

impl fmt::Display for SealError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Refused(r) => write!(f, "{r}"),
            Self::Unencodable { field, reason } => {
                write!(f, "cannot encode seal field {field}: {reason}")
            }
            Self::LogFull { max_leaves } => write!(f, "the log is full ({max_leaves} leaves)"),
            Self::WindowNotIncreasing {
                previous,
                window_id,
            } => write!(
                f,
                "window {window_id} appended after window {previous}: ids must increase"
            ),
            Self::SizeOutOfRange { size, tree_size } => {
                write!(
                    f,
                    "size {size} is out of range for a log of {tree_size} leaves"
                )
            }
            Self::Finished => f.write_str("the stream is already sealed final"),
            Self::Proof(p) => write!(f, "Merkle proof refused ({})", p.as_str()),
            Self::Cose(c) => write!(f, "COSE refused ({})", c.as_str()),
            Self::Signer { detail } => write!(f, "signer failed: {detail}"),
        }
    }
}

impl std::error::Error for SealError {}

impl From<SealRefusal> for SealError {
    fn from(r: SealRefusal) -> Self {
        Self::Refused(r)
    }
}

impl From<ProofCode> for SealError {
    fn from(p: ProofCode) -> Self {
        Self::Proof(p)
    }
}

impl From<CoseCode> for SealError {
    fn from(c: CoseCode) -> Self {
        Self::Cose(c)
    }
}

/// `Result` with [`SealError`].
pub type Result<T, E = SealError> = core::result::Result<T, E>;
