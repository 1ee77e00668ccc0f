//! Signing policies: one signature per window, or one per checkpoint of the stream's Merkle log.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use jouleclaw_jcr1::Estimator;
use jouleclaw_jcr1::cose::{Signer, SoftwareSigner};
use jouleclaw_pipeline::*;
use jouleclaw_seal::{ReceiptEntry, check_stream, verify_checkpoint, verify_inclusion_receipt};
use jouleclaw_stream::StreamSpec;

fn run(signing: SigningPolicy) -> (Vec<ClosedWindow>, Finished) {
    let mut p = Pipeline::new(
        Arc::new(StreamSpec::duplex_voice_default()),
        PipelineConfig::new(demo::STEWARD, demo::STREAM_ID).with_signing(signing),
        duplex_voice_oracle(),
        Estimator::default(),
        Box::new(SoftwareSigner::rfc8032_test_key()),
    )
    .unwrap();
    let mut windows = Vec::new();
    for tick in demo::ticks() {
        windows.extend(p.push(tick).unwrap().closed);
    }
    let finished = p.finish().unwrap();
    (windows, finished)
}

#[test]
fn every_window_signs_each_receipt_and_seals_nothing() {
    let (windows, finished) = run(SigningPolicy::EveryWindow);
    assert!(windows.iter().all(|w| w.cose_sign1().is_some()));
    assert!(
        windows
            .iter()
            .all(|w| w.seal.is_none() && w.leaf_index.is_none())
    );
    assert!(finished.last.unwrap().cose_sign1().is_some());
    assert_eq!(finished.seal, None);
}

#[test]
fn a_checkpoint_every_five_windows_covers_every_receipt_with_one_signature_each() {
    let (mut windows, finished) = run(SigningPolicy::checkpoint_every(5));
    windows.extend(finished.last.clone());
    assert_eq!(windows.len(), 13);
    // No window is signed on its own; windows 4 and 9 completed a checkpoint.
    assert!(windows.iter().all(|w| w.cose_sign1().is_none()));
    let sealed_at: Vec<u64> = windows
        .iter()
        .filter(|w| w.seal.is_some())
        .map(|w| w.receipt.window_id)
        .collect();
    assert_eq!(sealed_at, [4, 9]);
    let key = SoftwareSigner::rfc8032_test_key().verifying_key();
    let mut batches: Vec<_> = windows.iter().filter_map(|w| w.seal.clone()).collect();
    let last = finished.seal.unwrap();
    assert!(last.checkpoint.seal.is_final);
    assert_eq!(last.checkpoint.seal.tree_size, 13);
    batches.push(last);
    // Every window has exactly one inclusion receipt, in order, and it proves that window.
    let inclusion: Vec<(u64, Vec<u8>)> = batches.iter().flat_map(|b| b.inclusion.clone()).collect();
    assert_eq!(inclusion.len(), 13);
    for ((window_id, receipt), w) in inclusion.iter().zip(&windows) {
        assert_eq!(*window_id, w.receipt.window_id);
        let v = verify_inclusion_receipt(receipt, w.content_hash.as_bytes(), &key).unwrap();
        assert_eq!(Some(v.leaf_index), w.leaf_index);
    }
    // The checkpoints and receipts are a complete stream.
    let checkpoints: Vec<_> = batches
        .iter()
        .map(|b| verify_checkpoint(&b.checkpoint.cose_sign1, &key).unwrap())
        .collect();
    let entries: Vec<ReceiptEntry> = windows
        .iter()
        .map(|w| ReceiptEntry {
            window_id: w.receipt.window_id,
            content_hash: *w.content_hash.as_bytes(),
            stream_id: w.receipt.stream_id.clone(),
            steward: w.receipt.steward.clone(),
        })
        .collect();
    assert!(check_stream(&entries, &checkpoints).is_complete());
    assert!(!check_stream(&entries[1..], &checkpoints).is_complete());
}

#[test]
fn the_receipts_do_not_depend_on_the_signing_policy() {
    let (a, fa) = run(SigningPolicy::EveryWindow);
    let (b, fb) = run(SigningPolicy::checkpoint_every(3));
    let bytes = |ws: &[ClosedWindow], f: &Finished| -> Vec<Vec<u8>> {
        ws.iter()
            .chain(&f.last)
            .map(|w| w.canonical.clone())
            .collect()
    };
    assert_eq!(bytes(&a, &fa), bytes(&b, &fb));
}

#[test]
fn non_pass_windows_keep_their_own_signature() {
    let (mut windows, finished) = run(SigningPolicy::Checkpoint {
        every_windows: 100,
        window_signatures: WindowSignatures::NonPass,
        max_windows: 1 << 10,
    });
    windows.extend(finished.last);
    let signed: Vec<u64> = windows
        .iter()
        .filter(|w| w.cose_sign1().is_some())
        .map(|w| w.receipt.window_id)
        .collect();
    assert_eq!(signed, [6, 10]);
    // One checkpoint only: the final one.
    assert!(windows.iter().all(|w| w.seal.is_none()));
    assert_eq!(finished.seal.unwrap().inclusion.len(), 13);
}

#[test]
fn a_full_log_or_a_zero_policy_is_refused_and_nothing_follows_the_end() {
    let make = |signing| {
        Pipeline::new(
            Arc::new(StreamSpec::duplex_voice_default()),
            PipelineConfig::new("s", "x").with_signing(signing),
            duplex_voice_oracle(),
            Estimator::default(),
            Box::new(SoftwareSigner::rfc8032_test_key()),
        )
    };
    for bad in [
        SigningPolicy::checkpoint_every(0),
        SigningPolicy::Checkpoint {
            every_windows: 1,
            window_signatures: WindowSignatures::None,
            max_windows: 0,
        },
    ] {
        assert_eq!(make(bad).unwrap_err().code(), "pipeline_bad_signing_policy");
    }
    // A log of two receipts: the third window cannot close.
    let mut p = make(SigningPolicy::Checkpoint {
        every_windows: 10,
        window_signatures: WindowSignatures::None,
        max_windows: 2,
    })
    .unwrap();
    let ticks = demo::ticks();
    let mut result = Ok(());
    for tick in ticks {
        if let Err(e) = p.push(tick) {
            result = Err(e);
            break;
        }
    }
    let e = result.unwrap_err();
    assert_eq!(e.code(), "log_full", "{e}");
    assert_eq!(p.finish().unwrap_err(), PipelineError::Poisoned);
    // Finished: nothing more.
    let mut p = make(SigningPolicy::checkpoint_every(1)).unwrap();
    let f = p.finish().unwrap();
    assert_eq!((f.last, f.seal), (None, None));
    assert_eq!(p.close_window().unwrap_err(), PipelineError::Finished);
    assert_eq!(
        p.push(demo::ticks()[0].clone()).unwrap_err().code(),
        "pipeline_finished"
    );
}
