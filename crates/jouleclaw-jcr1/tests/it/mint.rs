//! Minting: clock and energy seams, RAPL against a fake sysfs tree, refusals.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use bytes::Bytes;
use jouleclaw_jcr1::*;
use jouleclaw_stream::*;
use jouleclaw_stream_oracle::WindowVerdict;

fn window() -> StreamWindow {
    let mut w = StreamWindow::open(Arc::new(StreamSpec::duplex_voice_default()), 2).unwrap();
    for (channel, len, at_ns) in [
        (duplex::MIC, 6400, 400_000_000),
        (duplex::TTS, 4800, 450_000_000),
    ] {
        let t = Tick::new(
            2,
            channel,
            TickKind::Audio,
            Bytes::from(vec![0u8; len]),
            at_ns,
        );
        w.push(t).unwrap();
    }
    w
}

#[test]
fn minted_receipt_carries_the_window_and_decodes_back() {
    let mut m = ReceiptMinter::new(
        "steward",
        "s1",
        FixedClock(1_780_617_600),
        Estimator::default(),
    )
    .unwrap();
    let w = window();
    let v = WindowVerdict::pass_by("always-pass-stream");
    let minted = m
        .mint(&w, &v, WindowConservationFinding::Conforming)
        .unwrap();
    let r = &minted.receipt;
    assert_eq!(r.id(), "s1:0002");
    assert_eq!(r.closed_at.to_string(), "2026-06-05T00:00:00Z");
    assert_eq!(r.window_hash, w.content_hash());
    assert_eq!(
        (r.tick_count, r.inbound_bytes, r.outbound_bytes),
        (2, 6400, 4800)
    );
    // 2 ticks x 10 uJ + 11,200 bytes x 25 nJ = 20 + 280.
    assert_eq!(
        (r.joules_uj, r.energy_provenance),
        (300, EnergyProvenance::Estimator)
    );
    assert_eq!(minted.bytes, r.encode().unwrap());
    assert_eq!(minted.content_hash, blake3::hash(&minted.bytes));
    assert_eq!(&decode_receipt(&minted.bytes).unwrap(), r);
    // Same input, same bytes.
    let again = m
        .mint(&w, &v, WindowConservationFinding::Conforming)
        .unwrap();
    assert_eq!(again.bytes, minted.bytes);
}

#[test]
fn minter_refuses_what_it_cannot_encode() {
    assert!(ReceiptMinter::new("", "s", FixedClock(0), Estimator::default()).is_err());
    assert!(ReceiptMinter::new("st", "", FixedClock(0), Estimator::default()).is_err());
    let w = window();
    let v = WindowVerdict::pass_by("a");
    // A closing time past 9999-12-31, and an energy figure that overflows u64 microjoules.
    let too_late = FixedClock(253_402_300_800);
    let too_costly = Estimator {
        uj_per_tick: u64::MAX,
        nj_per_byte: 0,
    };
    for (clock, estimator, field) in [
        (too_late, Estimator::default(), "closed_at"),
        (FixedClock(0), too_costly, "joules_uj"),
    ] {
        let mut m = ReceiptMinter::new("st", "s", clock, estimator).unwrap();
        let e = m
            .mint(&w, &v, WindowConservationFinding::Conforming)
            .unwrap_err();
        assert!(
            matches!(e, Jcr1Error::Unencodable { field: f, .. } if f == field),
            "{e}"
        );
    }
    let mut m = ReceiptMinter::new("st", "s", FixedClock(0), Estimator::default()).unwrap();
    let e = m
        .mint(
            &w,
            &WindowVerdict::Pass { chain: vec![] },
            WindowConservationFinding::Conforming,
        )
        .unwrap_err();
    assert_eq!(e.code(), "unencodable");
}

fn fake_zone(energy: &str, max: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "jc-rapl-{}-{}",
        std::process::id(),
        blake3::hash(energy.as_bytes()).to_hex()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("energy_uj"), energy).unwrap();
    std::fs::write(dir.join("max_energy_range_uj"), max).unwrap();
    dir
}

#[test]
fn rapl_reader_reports_deltas_and_one_wrap() {
    let zone = fake_zone("1000\n", "262143328850\n");
    let mut r = RaplReader::open(&zone).unwrap();
    std::fs::write(zone.join("energy_uj"), "1750\n").unwrap();
    let reading = r.read(&window()).unwrap();
    assert_eq!(
        reading,
        EnergyReading {
            joules_uj: 750,
            provenance: EnergyProvenance::Rapl
        }
    );
    // Wrap: from 262143328000 through max back to 100.
    std::fs::write(zone.join("energy_uj"), "262143328000").unwrap();
    r.delta().unwrap();
    std::fs::write(zone.join("energy_uj"), "100").unwrap();
    assert_eq!(r.delta().unwrap(), 850 + 1 + 100);
    std::fs::remove_dir_all(zone).unwrap();
}

#[test]
fn rapl_reader_refuses_missing_or_malformed_counters() {
    let missing = std::env::temp_dir().join("jc-rapl-does-not-exist");
    assert_eq!(
        RaplReader::open(&missing).unwrap_err().code(),
        "energy_unavailable"
    );
    for (energy, max) in [
        ("abc", "100"),
        ("10", "0"),
        ("200", "100"),
        ("-1", "100"),
        (" 5", "100"),
    ] {
        let zone = fake_zone(energy, max);
        assert!(RaplReader::open(&zone).is_err(), "{energy} / {max}");
        std::fs::remove_dir_all(zone).unwrap();
    }
    let zone = fake_zone("5", "100");
    let mut r = RaplReader::open(&zone).unwrap();
    std::fs::write(zone.join("energy_uj"), "101").unwrap();
    assert!(r.delta().is_err());
    std::fs::remove_dir_all(zone).unwrap();
}
