//! COSE_Sign1 (placeholder while building).
/// Placeholder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoseRefusal;
impl CoseRefusal {
    /// Placeholder.
    pub fn as_str(self) -> &'static str {
        "x"
    }
}
