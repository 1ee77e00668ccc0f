//! The RFC 9162 (section 2.1) Merkle tree with SHA-256: hashing, an O(log n) frontier, a log
//! that can prove inclusion and consistency for any earlier size, and the verification
//! algorithms of sections 2.1.3.2 and 2.1.4.2.

use sha2::{Digest, Sha256};

use crate::error::{ProofCode, Result, SealError};

/// A SHA-256 tree hash.
pub type Hash = [u8; 32];

/// `SHA-256(0x00 || entry)`: the leaf hash of a window, whose entry is the receipt's 32-byte
/// BLAKE3 `content_hash`.
pub fn leaf_hash(entry: &[u8; 32]) -> Hash {
    let mut h = Sha256::new();
    h.update([0x00]);
    h.update(entry);
    h.finalize().into()
}

/// `SHA-256(0x01 || left || right)`: an interior node.
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update([0x01]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// The root of the empty tree, `SHA-256()` (never sealed: a seal's `tree_size` is at least 1).
pub fn empty_root() -> Hash {
    Sha256::digest([]).into()
}

/// The largest power of two strictly smaller than `n` (`n >= 2`).
fn split(n: u64) -> u64 {
    1u64 << (63 - (n - 1).leading_zeros())
}

/// The append-only frontier: the roots of the perfect subtrees that make up the tree, at most
/// one per height (at most 64 hashes). Appending costs one leaf hash plus one node hash
/// amortized; the root costs one node hash per subtree beyond the first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Frontier {
    size: u64,
    /// Perfect-subtree roots from the left (largest) to the right (smallest).
    stack: Vec<Hash>,
}

impl Frontier {
    /// The empty frontier.
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of leaves.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Appends the leaf whose entry is `entry` (a content hash).
    pub fn append(&mut self, entry: &[u8; 32]) -> Result<()> {
        self.append_leaf_hash(leaf_hash(entry))
    }

    /// Appends an already computed leaf hash.
    pub fn append_leaf_hash(&mut self, leaf: Hash) -> Result<()> {
        let size = self.size.checked_add(1).ok_or(SealError::LogFull {
            max_leaves: u64::MAX,
        })?;
        let mut h = leaf;
        // One merge per trailing one bit of the old size.
        let mut s = self.size;
        while s & 1 == 1 {
            let Some(left) = self.stack.pop() else { break };
            h = node_hash(&left, &h);
            s >>= 1;
        }
        self.stack.push(h);
        self.size = size;
        Ok(())
    }

    /// The RFC 9162 root, `MTH(D[size])`.
    pub fn root(&self) -> Hash {
        let mut it = self.stack.iter().rev();
        let Some(last) = it.next() else {
            return empty_root();
        };
        it.fold(*last, |acc, left| node_hash(left, &acc))
    }
}

/// The RFC 9162 root over the receipts' BLAKE3 content hashes in window order
/// (`SHA-256()` for none): the `receipts_root` a signed document of a call (`stop-latency/1`,
/// `interaction-metrics/1`) binds to, and the root the stream's final checkpoint signs.
/// Refused (`log_full`) only past `u64::MAX` leaves.
pub fn receipts_root(content_hashes: &[[u8; 32]]) -> Result<Hash> {
    let mut f = Frontier::new();
    for h in content_hashes {
        f.append(h)?;
    }
    Ok(f.root())
}

/// The default [`MerkleLog`] limit: 2^20 windows (58 hours of 200 ms windows), 64 MiB of node
/// hashes at most.
pub const DEFAULT_MAX_LEAVES: u64 = 1 << 20;

/// A Merkle log that keeps every perfect-subtree hash (about 64 bytes per leaf: the leaf hashes
/// and the interior nodes above them), so it can produce inclusion and consistency proofs for
/// any size up to its own, each in O(log n) stored hashes plus O(log n) node hashes for the
/// right edge. Bounded by `max_leaves`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MerkleLog {
    /// `levels[h][i]` is the hash of the perfect subtree of `2^h` leaves starting at `i * 2^h`.
    levels: Vec<Vec<Hash>>,
    max_leaves: u64,
}

impl Default for MerkleLog {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_LEAVES)
    }
}

impl MerkleLog {
    /// An empty log that refuses to grow beyond `max_leaves`.
    pub fn new(max_leaves: u64) -> Self {
        Self {
            levels: vec![Vec::new()],
            max_leaves,
        }
    }

    /// The limit.
    pub fn max_leaves(&self) -> u64 {
        self.max_leaves
    }

    /// The number of leaves.
    pub fn size(&self) -> u64 {
        self.levels.first().map_or(0, |l| l.len() as u64)
    }

    /// Appends the leaf whose entry is `entry`; refuses (changing nothing) when full.
    pub fn append(&mut self, entry: &[u8; 32]) -> Result<()> {
        if self.size() >= self.max_leaves {
            return Err(SealError::LogFull {
                max_leaves: self.max_leaves,
            });
        }
        let mut h = leaf_hash(entry);
        let mut level = 0;
        loop {
            if self.levels.len() == level {
                self.levels.push(Vec::new());
            }
            let row = &mut self.levels[level];
            row.push(h);
            let n = row.len();
            if n % 2 == 1 {
                break;
            }
            h = node_hash(&row[n - 2], &row[n - 1]);
            level += 1;
        }
        Ok(())
    }

    /// The leaf hash at `index`.
    pub fn leaf(&self, index: u64) -> Option<Hash> {
        self.levels
            .first()
            .and_then(|l| usize::try_from(index).ok().and_then(|i| l.get(i)).copied())
    }

    fn check_size(&self, size: u64) -> Result<()> {
        if size == 0 || size > self.size() {
            return Err(SealError::SizeOutOfRange {
                size,
                tree_size: self.size(),
            });
        }
        Ok(())
    }

    /// `MTH(D[start : start + n])` for `n >= 1` within the log.
    fn subtree(&self, start: u64, n: u64) -> Hash {
        if n.is_power_of_two() && start.is_multiple_of(n) {
            let h = n.trailing_zeros() as usize;
            if let Some(x) = self
                .levels
                .get(h)
                .and_then(|row| row.get((start / n) as usize))
            {
                return *x;
            }
        }
        // Only reachable for n >= 2 (every single leaf is stored).
        let k = split(n.max(2));
        node_hash(&self.subtree(start, k), &self.subtree(start + k, n - k))
    }

    /// The root of the tree of the first `size` leaves (`1 <= size <= self.size()`).
    pub fn root_at(&self, size: u64) -> Result<Hash> {
        self.check_size(size)?;
        Ok(self.subtree(0, size))
    }

    /// The root of the whole log (the empty root when it has no leaves).
    pub fn root(&self) -> Hash {
        match self.size() {
            0 => empty_root(),
            n => self.subtree(0, n),
        }
    }

    /// RFC 9162 section 2.1.3.1 `PATH(leaf_index, D[tree_size])`.
    pub fn inclusion_proof(&self, leaf_index: u64, tree_size: u64) -> Result<Vec<Hash>> {
        self.check_size(tree_size)?;
        if leaf_index >= tree_size {
            return Err(ProofCode::IndexOutOfRange.into());
        }
        let (mut m, mut start, mut n) = (leaf_index, 0u64, tree_size);
        let mut path = Vec::new();
        while n > 1 {
            let k = split(n);
            if m < k {
                path.push(self.subtree(start + k, n - k));
                n = k;
            } else {
                path.push(self.subtree(start, k));
                m -= k;
                start += k;
                n -= k;
            }
        }
        path.reverse();
        Ok(path)
    }

    /// RFC 9162 section 2.1.4.1 `PROOF(first, D[second])` for `0 < first <= second <= size`
    /// (empty when `first == second`).
    pub fn consistency_proof(&self, first: u64, second: u64) -> Result<Vec<Hash>> {
        self.check_size(second)?;
        if first == 0 || first > second {
            return Err(ProofCode::SizesOutOfOrder.into());
        }
        let (mut m, mut start, mut n, mut b) = (first, 0u64, second, true);
        let mut path = Vec::new();
        loop {
            if m == n {
                if !b {
                    path.push(self.subtree(start, n));
                }
                break;
            }
            let k = split(n);
            if m <= k {
                path.push(self.subtree(start + k, n - k));
                n = k;
            } else {
                path.push(self.subtree(start, k));
                m -= k;
                start += k;
                n -= k;
                b = false;
            }
        }
        path.reverse();
        Ok(path)
    }
}

/// The number of hashes in `PATH(leaf_index, D[tree_size])` (`leaf_index < tree_size`).
pub fn inclusion_path_len(leaf_index: u64, tree_size: u64) -> usize {
    let (mut m, mut n, mut len) = (leaf_index, tree_size, 0);
    while n > 1 {
        let k = split(n);
        if m < k {
            n = k;
        } else {
            m -= k;
            n -= k;
        }
        len += 1;
    }
    len
}

/// The number of hashes in `PROOF(first, D[second])` (`0 < first <= second`).
pub fn consistency_path_len(first: u64, second: u64) -> usize {
    let (mut m, mut n, mut b, mut len) = (first, second, true, 0);
    loop {
        if m == n {
            return len + usize::from(!b);
        }
        let k = split(n);
        if m <= k {
            n = k;
        } else {
            m -= k;
            n -= k;
            b = false;
        }
        len += 1;
    }
}

/// RFC 9162 section 2.1.3.2: the root that `path` proves for the leaf hash `leaf` at
/// `leaf_index` in a tree of `tree_size` leaves. Refuses an index out of range and a path of
/// the wrong length; the caller compares the result with the trusted root.
pub fn root_from_inclusion(
    leaf_index: u64,
    tree_size: u64,
    leaf: &Hash,
    path: &[Hash],
) -> Result<Hash, ProofCode> {
    if leaf_index >= tree_size {
        return Err(ProofCode::IndexOutOfRange);
    }
    if path.len() != inclusion_path_len(leaf_index, tree_size) {
        return Err(ProofCode::WrongLength);
    }
    let (mut fnode, mut snode, mut r) = (leaf_index, tree_size - 1, *leaf);
    for p in path {
        if snode == 0 {
            return Err(ProofCode::WrongLength);
        }
        if fnode & 1 == 1 || fnode == snode {
            r = node_hash(p, &r);
            while fnode & 1 == 0 && fnode != 0 {
                fnode >>= 1;
                snode >>= 1;
            }
        } else {
            r = node_hash(&r, p);
        }
        fnode >>= 1;
        snode >>= 1;
    }
    if snode != 0 {
        return Err(ProofCode::WrongLength);
    }
    Ok(r)
}

/// Verifies an inclusion proof against `root`.
pub fn verify_inclusion(
    leaf_index: u64,
    tree_size: u64,
    leaf: &Hash,
    path: &[Hash],
    root: &Hash,
) -> Result<(), ProofCode> {
    if root_from_inclusion(leaf_index, tree_size, leaf, path)? == *root {
        Ok(())
    } else {
        Err(ProofCode::RootMismatch)
    }
}

/// RFC 9162 section 2.1.4.2: checks that `path` reproduces `first_root` for `first` leaves and
/// returns the root it proves for `second` leaves (the caller compares it with the trusted
/// second root). `first == second` requires an empty path and returns `first_root`.
pub fn root_from_consistency(
    first: u64,
    second: u64,
    first_root: &Hash,
    path: &[Hash],
) -> Result<Hash, ProofCode> {
    if first == 0 || first > second {
        return Err(ProofCode::SizesOutOfOrder);
    }
    if path.len() != consistency_path_len(first, second) {
        return Err(ProofCode::WrongLength);
    }
    if first == second {
        return Ok(*first_root);
    }
    // Step 2: a power-of-two first tree is itself a node of the second: its root starts the walk.
    let mut nodes: Vec<&Hash> = Vec::with_capacity(path.len() + 1);
    if first.is_power_of_two() {
        nodes.push(first_root);
    }
    nodes.extend(path.iter());
    let (mut fnode, mut snode) = (first - 1, second - 1);
    while fnode & 1 == 1 {
        fnode >>= 1;
        snode >>= 1;
    }
    let Some((c0, rest)) = nodes.split_first() else {
        return Err(ProofCode::WrongLength);
    };
    let (mut fr, mut sr) = (**c0, **c0);
    for c in rest {
        if snode == 0 {
            return Err(ProofCode::WrongLength);
        }
        if fnode & 1 == 1 || fnode == snode {
            fr = node_hash(c, &fr);
            sr = node_hash(c, &sr);
            while fnode & 1 == 0 && fnode != 0 {
                fnode >>= 1;
                snode >>= 1;
            }
        } else {
            sr = node_hash(&sr, c);
        }
        fnode >>= 1;
        snode >>= 1;
    }
    if snode != 0 {
        return Err(ProofCode::WrongLength);
    }
    if fr != *first_root {
        return Err(ProofCode::FirstRootMismatch);
    }
    Ok(sr)
}

/// Verifies a consistency proof between two trusted roots.
pub fn verify_consistency(
    first: u64,
    second: u64,
    first_root: &Hash,
    second_root: &Hash,
    path: &[Hash],
) -> Result<(), ProofCode> {
    if root_from_consistency(first, second, first_root, path)? == *second_root {
        Ok(())
    } else {
        Err(ProofCode::RootMismatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_is_the_largest_power_of_two_below() {
        for (n, k) in [
            (2, 1),
            (3, 2),
            (4, 2),
            (5, 4),
            (8, 4),
            (9, 8),
            (1 << 40, 1 << 39),
        ] {
            assert_eq!(split(n), k, "{n}");
        }
    }

    #[test]
    fn a_full_log_refuses_and_keeps_its_root() {
        let mut log = MerkleLog::new(2);
        log.append(&[1; 32]).unwrap();
        log.append(&[2; 32]).unwrap();
        let root = log.root();
        assert_eq!(
            log.append(&[3; 32]),
            Err(SealError::LogFull { max_leaves: 2 })
        );
        assert_eq!((log.size(), log.root()), (2, root));
    }
}
