//! The Merkle log against a naive recursive RFC 9162 reference written here from the RFC's
//! definitions (section 2.1.1 MTH, 2.1.3.1 PATH, 2.1.4.1 PROOF/SUBPROOF).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::needless_range_loop
)]

use jouleclaw_seal::merkle::{consistency_path_len, inclusion_path_len};
use jouleclaw_seal::*;
use proptest::prelude::*;
use sha2::{Digest, Sha256};

fn h(parts: &[&[u8]]) -> [u8; 32] {
    let mut s = Sha256::new();
    for p in parts {
        s.update(p);
    }
    s.finalize().into()
}

/// MTH(D[n]) on raw entries, straight from the definition.
fn mth(d: &[[u8; 32]]) -> [u8; 32] {
    match d.len() {
        0 => h(&[]),
        1 => h(&[&[0], &d[0]]),
        n => {
            let mut k = 1;
            while k * 2 < n {
                k *= 2;
            }
            h(&[&[1], &mth(&d[..k]), &mth(&d[k..])])
        }
    }
}

fn k_of(n: usize) -> usize {
    let mut k = 1;
    while k * 2 < n {
        k *= 2;
    }
    k
}

fn path(m: usize, d: &[[u8; 32]]) -> Vec<[u8; 32]> {
    let n = d.len();
    if n == 1 {
        return vec![];
    }
    let k = k_of(n);
    if m < k {
        let mut p = path(m, &d[..k]);
        p.push(mth(&d[k..]));
        p
    } else {
        let mut p = path(m - k, &d[k..]);
        p.push(mth(&d[..k]));
        p
    }
}

fn subproof(m: usize, d: &[[u8; 32]], b: bool) -> Vec<[u8; 32]> {
    let n = d.len();
    if m == n {
        return if b { vec![] } else { vec![mth(d)] };
    }
    let k = k_of(n);
    if m <= k {
        let mut p = subproof(m, &d[..k], b);
        p.push(mth(&d[k..]));
        p
    } else {
        let mut p = subproof(m - k, &d[k..], false);
        p.push(mth(&d[..k]));
        p
    }
}

fn entries(n: usize) -> Vec<[u8; 32]> {
    (0..n)
        .map(|i| *blake3::hash(format!("leaf {i}").as_bytes()).as_bytes())
        .collect()
}

fn log_of(d: &[[u8; 32]]) -> MerkleLog {
    let mut log = MerkleLog::new(1 << 12);
    for e in d {
        log.append(e).unwrap();
    }
    log
}

#[test]
fn the_empty_root_is_sha256_of_nothing() {
    assert_eq!(
        hex::encode(merkle::empty_root()),
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    assert_eq!(Frontier::new().root(), merkle::empty_root());
}

#[test]
fn roots_of_every_size_to_300_match_the_reference_for_frontier_and_log() {
    let d = entries(300);
    let log = log_of(&d);
    let mut frontier = Frontier::new();
    for n in 1..=300 {
        frontier.append(&d[n - 1]).unwrap();
        let want = mth(&d[..n]);
        assert_eq!(frontier.root(), want, "frontier {n}");
        assert_eq!(log.root_at(n as u64).unwrap(), want, "log {n}");
        assert_eq!(frontier.size(), n as u64);
    }
    assert_eq!(log.root(), mth(&d));
}

#[test]
fn the_frontier_keeps_one_hash_per_set_bit_of_the_size() {
    let d = entries(300);
    let mut frontier = Frontier::new();
    for (i, e) in d.iter().enumerate() {
        frontier.append(e).unwrap();
        let f = format!("{frontier:?}");
        // The Debug form lists the stack; count its hashes.
        let hashes = f.matches('[').count() - 1;
        assert_eq!(hashes as u32, (i as u64 + 1).count_ones(), "{i}");
    }
}

/// Copies of `x` with one bit flipped: all 256 bits, or (to bound debug-build time) 8 bits
/// spread over the bytes and bit positions, rotated by `salt`.
fn flips(x: &[u8; 32], all_bits: bool, salt: usize) -> Vec<[u8; 32]> {
    let picks: Vec<(usize, usize)> = if all_bits {
        (0..256).map(|b| (b / 8, b % 8)).collect()
    } else {
        (0..8)
            .map(|j| ((salt * 5 + j * 4) % 32, (salt + j) % 8))
            .collect()
    };
    picks
        .into_iter()
        .map(|(byte, bit)| {
            let mut y = *x;
            y[byte] ^= 1 << bit;
            y
        })
        .collect()
}

/// `path` with one element flipped by [`flips`] (element `i` salted with `salt + i`), every
/// such path in turn.
fn path_flips(path: &[[u8; 32]], all_bits: bool, salt: usize) -> Vec<Vec<[u8; 32]>> {
    let mut out = Vec::new();
    for (i, x) in path.iter().enumerate() {
        for y in flips(x, all_bits, salt + i) {
            let mut q = path.to_vec();
            q[i] = y;
            out.push(q);
        }
    }
    out
}

#[test]
fn every_inclusion_proof_to_size_64_matches_the_reference_verifies_and_refuses_every_flip() {
    let d = entries(64);
    let log = log_of(&d);
    let mut checked = 0;
    for n in 1..=64usize {
        let root = mth(&d[..n]);
        for m in 0..n {
            let p = log.inclusion_proof(m as u64, n as u64).unwrap();
            assert_eq!(p, path(m, &d[..n]), "PATH({m}, {n})");
            assert_eq!(p.len(), inclusion_path_len(m as u64, n as u64));
            let leaf = leaf_hash(&d[m]);
            assert_eq!(
                verify_inclusion(m as u64, n as u64, &leaf, &p, &root),
                Ok(())
            );
            // All 256 bits of every path element for n <= 8, one bit per byte above.
            let all = n <= 8;
            for q in path_flips(&p, all, m) {
                assert!(verify_inclusion(m as u64, n as u64, &leaf, &q, &root).is_err());
            }
            for y in flips(&leaf, all, m) {
                assert!(verify_inclusion(m as u64, n as u64, &y, &p, &root).is_err());
            }
            for y in flips(&root, all, m) {
                assert_eq!(
                    verify_inclusion(m as u64, n as u64, &leaf, &p, &y),
                    Err(ProofCode::RootMismatch)
                );
            }
            // Wrong index, wrong size, truncated and extended paths.
            for other in 0..n {
                if other != m {
                    assert!(verify_inclusion(other as u64, n as u64, &leaf, &p, &root).is_err());
                }
            }
            assert_eq!(
                verify_inclusion(n as u64, n as u64, &leaf, &p, &root),
                Err(ProofCode::IndexOutOfRange)
            );
            // (The tree size is not bound by the path alone: sizes with the same proof shape
            // give the same root, which is why a seal binds `tree_size` beside the root.)
            if !p.is_empty() {
                assert_eq!(
                    verify_inclusion(m as u64, n as u64, &leaf, &p[..p.len() - 1], &root),
                    Err(ProofCode::WrongLength)
                );
            }
            let mut longer = p.clone();
            longer.push([0; 32]);
            assert_eq!(
                verify_inclusion(m as u64, n as u64, &leaf, &longer, &root),
                Err(ProofCode::WrongLength)
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 64 * 65 / 2);
}

#[test]
fn every_consistency_proof_to_size_64_matches_the_reference_verifies_and_refuses_every_flip() {
    let d = entries(64);
    let log = log_of(&d);
    let roots: Vec<[u8; 32]> = (0..=64).map(|n| mth(&d[..n])).collect();
    let mut checked = 0;
    for n in 1..=64usize {
        let second = roots[n];
        for m in 1..=n {
            let first = roots[m];
            let p = log.consistency_proof(m as u64, n as u64).unwrap();
            assert_eq!(p, subproof(m, &d[..n], true), "PROOF({m}, {n})");
            assert_eq!(p.len(), consistency_path_len(m as u64, n as u64));
            assert_eq!(
                verify_consistency(m as u64, n as u64, &first, &second, &p),
                Ok(())
            );
            assert_eq!(
                root_from_consistency(m as u64, n as u64, &first, &p),
                Ok(second)
            );
            let all = n <= 8;
            for q in path_flips(&p, all, m) {
                assert!(verify_consistency(m as u64, n as u64, &first, &second, &q).is_err());
            }
            for y in flips(&first, all, m) {
                assert!(verify_consistency(m as u64, n as u64, &y, &second, &p).is_err());
            }
            for y in flips(&second, all, m) {
                assert!(verify_consistency(m as u64, n as u64, &first, &y, &p).is_err());
            }
            if !p.is_empty() {
                assert_eq!(
                    verify_consistency(m as u64, n as u64, &first, &second, &p[1..]),
                    Err(ProofCode::WrongLength)
                );
            }
            // The proof for (m, n) does not pass for another first size.
            for other in 1..=n {
                if other != m {
                    let r = root_from_consistency(other as u64, n as u64, &roots[other], &p);
                    assert!(r != Ok(second), "({other}, {n}) accepted PROOF({m}, {n})");
                }
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 64 * 65 / 2);
    assert_eq!(
        root_from_consistency(0, 3, &[0; 32], &[]),
        Err(ProofCode::SizesOutOfOrder)
    );
    assert_eq!(
        root_from_consistency(4, 3, &[0; 32], &[]),
        Err(ProofCode::SizesOutOfOrder)
    );
}

#[test]
fn the_log_refuses_sizes_and_indices_it_cannot_serve() {
    let log = log_of(&entries(5));
    assert_eq!(log.root_at(0).unwrap_err().code(), "size_out_of_range");
    assert_eq!(log.root_at(6).unwrap_err().code(), "size_out_of_range");
    assert_eq!(
        log.inclusion_proof(5, 5).unwrap_err().code(),
        "proof_index_out_of_range"
    );
    assert_eq!(
        log.consistency_proof(0, 5).unwrap_err().code(),
        "proof_sizes_out_of_order"
    );
    assert_eq!(
        log.consistency_proof(4, 3).unwrap_err().code(),
        "proof_sizes_out_of_order"
    );
    assert!(log.consistency_proof(3, 5).is_ok());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn random_logs_agree_with_the_reference(
        leaves in prop::collection::vec(any::<[u8; 32]>(), 1..200),
        picks in prop::collection::vec((any::<u64>(), any::<u64>()), 8),
    ) {
        let n = leaves.len();
        let log = log_of(&leaves);
        let mut frontier = Frontier::new();
        for e in &leaves {
            frontier.append(e).unwrap();
        }
        prop_assert_eq!(frontier.root(), mth(&leaves));
        prop_assert_eq!(log.root(), mth(&leaves));
        for (a, b) in picks {
            let size = (a % n as u64) as usize + 1;
            let m = (b % size as u64) as usize;
            let p = log.inclusion_proof(m as u64, size as u64).unwrap();
            prop_assert_eq!(&p, &path(m, &leaves[..size]));
            prop_assert!(verify_inclusion(m as u64, size as u64, &leaf_hash(&leaves[m]), &p, &mth(&leaves[..size])).is_ok());
            let first = m + 1;
            let c = log.consistency_proof(first as u64, size as u64).unwrap();
            prop_assert_eq!(&c, &subproof(first, &leaves[..size], true));
            prop_assert!(verify_consistency(first as u64, size as u64, &mth(&leaves[..first]), &mth(&leaves[..size]), &c).is_ok());
        }
    }
}
