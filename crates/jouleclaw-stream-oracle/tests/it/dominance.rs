//! The dominance table, exhaustively: all pairs, every order of 3 and 4 backends, and an
//! independent reference for `combine`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use jouleclaw_stream::{StreamSpec, StreamWindow};
use jouleclaw_stream_oracle::{
    CompositeStreamOracle, FixedStreamOracle, StreamOracle, WindowContext, WindowVerdict, combine,
};

/// Two distinguishable verdicts of every kind.
fn samples() -> Vec<WindowVerdict> {
    vec![
        WindowVerdict::pass_by("p1"),
        WindowVerdict::Pass {
            chain: vec!["p2a".into(), "p2b".into()],
        },
        WindowVerdict::need_more("n1", "r1"),
        WindowVerdict::need_more("n2", "r2"),
        WindowVerdict::Yield { seen_at: 3 },
        WindowVerdict::Yield { seen_at: 9 },
        WindowVerdict::fail("f1", "r1"),
        WindowVerdict::fail("f2", "r2"),
    ]
}

/// A second, dumb implementation of the rule: stable-sort by rank descending, take the first;
/// all-pass concatenates chains (an empty chain stands for the name).
fn reference(signals: &[(String, WindowVerdict)]) -> WindowVerdict {
    let mut order: Vec<usize> = (0..signals.len()).collect();
    order.sort_by_key(|&i| core::cmp::Reverse(signals[i].1.rank()));
    match order.first() {
        Some(&i) if signals[i].1.rank() > 0 => signals[i].1.clone(),
        _ => WindowVerdict::Pass {
            chain: signals
                .iter()
                .flat_map(|(name, v)| match v {
                    WindowVerdict::Pass { chain } if chain.is_empty() => vec![name.clone()],
                    WindowVerdict::Pass { chain } => chain.clone(),
                    _ => unreachable!(),
                })
                .collect(),
        },
    }
}

fn named(verdicts: &[WindowVerdict]) -> Vec<(String, WindowVerdict)> {
    verdicts
        .iter()
        .enumerate()
        .map(|(i, v)| (format!("b{i}"), v.clone()))
        .collect()
}

fn run(signals: &[(String, WindowVerdict)]) -> WindowVerdict {
    combine(signals.iter().map(|(n, v)| (n.as_str(), v)))
}

#[test]
fn the_table_for_every_pair_of_kinds() {
    // Row = first backend, column = second; entry = which one the composite reports.
    // Kinds in rank order: pass, need_more, yield, fail.
    const FIRST: u8 = 1;
    const SECOND: u8 = 2;
    const BOTH: u8 = 3; // a pass chain naming both
    let table: [[u8; 4]; 4] = [
        [BOTH, SECOND, SECOND, SECOND],
        [FIRST, FIRST, SECOND, SECOND],
        [FIRST, FIRST, FIRST, SECOND],
        [FIRST, FIRST, FIRST, FIRST],
    ];
    let kinds = |rank: usize| -> Vec<WindowVerdict> {
        samples()
            .into_iter()
            .filter(|v| usize::from(v.rank()) == rank)
            .collect()
    };
    for (r1, row) in table.iter().enumerate() {
        for (r2, &expected) in row.iter().enumerate() {
            for a in kinds(r1) {
                for b in kinds(r2) {
                    let signals = named(&[a.clone(), b.clone()]);
                    let got = run(&signals);
                    assert_eq!(got.rank(), a.rank().max(b.rank()));
                    match expected {
                        FIRST => assert_eq!(got, a),
                        SECOND => assert_eq!(got, b),
                        _ => {
                            let (
                                WindowVerdict::Pass { chain: ca },
                                WindowVerdict::Pass { chain: cb },
                            ) = (&a, &b)
                            else {
                                panic!("BOTH only for two passes")
                            };
                            assert_eq!(
                                got,
                                WindowVerdict::Pass {
                                    chain: [ca.clone(), cb.clone()].concat()
                                }
                            );
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn combine_equals_the_reference_for_every_sequence_up_to_four() {
    let s = samples();
    let mut seqs: Vec<Vec<WindowVerdict>> = vec![vec![]];
    let mut checked = 0;
    for _ in 0..4 {
        seqs = seqs
            .iter()
            .flat_map(|seq| {
                s.iter().map(move |v| {
                    let mut next = seq.clone();
                    next.push(v.clone());
                    next
                })
            })
            .collect();
        for seq in &seqs {
            let signals = named(seq);
            assert_eq!(run(&signals), reference(&signals), "{seq:?}");
            checked += 1;
        }
    }
    assert_eq!(checked, 8 + 64 + 512 + 4096);
    // The empty composite.
    assert_eq!(run(&[]), WindowVerdict::Pass { chain: vec![] });
    // A pass with an empty chain contributes its name.
    let empty_chain = vec![("leaf".to_owned(), WindowVerdict::Pass { chain: vec![] })];
    assert_eq!(run(&empty_chain), WindowVerdict::pass_by("leaf"));
}

fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![vec![]];
    }
    let mut out = Vec::new();
    for p in permutations(n - 1) {
        for i in 0..=p.len() {
            let mut q = p.clone();
            q.insert(i, n - 1);
            out.push(q);
        }
    }
    out
}

#[test]
fn every_order_of_three_and_four_backends_gives_the_same_rank() {
    let window = StreamWindow::open(Arc::new(StreamSpec::duplex_voice_default()), 0).unwrap();
    let ctx = WindowContext::default();
    let kinds = [
        WindowVerdict::pass_by("p"),
        WindowVerdict::need_more("n", "r"),
        WindowVerdict::Yield { seen_at: 0 },
        WindowVerdict::fail("f", "r"),
    ];
    let mut composites_judged = 0;
    for n in [3usize, 4] {
        let perms = permutations(n);
        assert_eq!(perms.len(), if n == 3 { 6 } else { 24 });
        for code in 0..4usize.pow(n as u32) {
            let picks: Vec<usize> = (0..n).map(|i| code / 4usize.pow(i as u32) % 4).collect();
            let max_rank = picks.iter().map(|&k| kinds[k].rank()).max().unwrap();
            for perm in &perms {
                let backends: Vec<Box<dyn StreamOracle + Send>> = perm
                    .iter()
                    .map(|&slot| {
                        // Distinct names so the winner is identifiable.
                        let v = match &kinds[picks[slot]] {
                            WindowVerdict::Pass { .. } => {
                                WindowVerdict::pass_by(format!("b{slot}"))
                            }
                            WindowVerdict::NeedMore { .. } => {
                                WindowVerdict::need_more(format!("b{slot}"), "r")
                            }
                            WindowVerdict::Yield { .. } => WindowVerdict::Yield {
                                seen_at: slot as u64,
                            },
                            WindowVerdict::Fail { .. } => {
                                WindowVerdict::fail(format!("b{slot}"), "r")
                            }
                        };
                        Box::new(FixedStreamOracle::new(format!("b{slot}"), v))
                            as Box<dyn StreamOracle + Send>
                    })
                    .collect();
                let mut composite = CompositeStreamOracle::new("c", backends);
                let got = composite.judge(&window, &ctx);
                composites_judged += 1;
                assert_eq!(got.rank(), max_rank, "picks {picks:?} perm {perm:?}");
                // Every backend ran, and the winner is the first of the top rank in this order.
                let signals = composite.last_signals();
                assert_eq!(signals.len(), n);
                let first_top = signals.iter().find(|(_, v)| v.rank() == max_rank).unwrap();
                if max_rank > 0 {
                    assert_eq!(&got, &first_top.1);
                } else {
                    let names: Vec<String> = perm.iter().map(|s| format!("b{s}")).collect();
                    assert_eq!(got, WindowVerdict::Pass { chain: names });
                }
            }
        }
    }
    assert_eq!(composites_judged, 64 * 6 + 256 * 24);
}
