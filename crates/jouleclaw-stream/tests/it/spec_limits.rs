//! A hostile spec is bounded: every limit has a documented cap, the channel count and ids are
//! capped, validation is linear, and channels are found by id in a dense table.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use bytes::Bytes;
use jouleclaw_stream::*;
use proptest::prelude::*;

fn base() -> StreamSpec {
    StreamSpec::duplex_voice_default()
}

fn code(spec: &StreamSpec) -> &'static str {
    match spec.validate() {
        Ok(()) => "ok",
        Err(e) => e.code(),
    }
}

fn channels(ids: impl IntoIterator<Item = u32>) -> Vec<ChannelSpec> {
    ids.into_iter()
        .map(|id| {
            ChannelSpec::new(
                id,
                ChannelDirection::Inbound,
                TickKindTag::Text,
                "text/plain",
            )
        })
        .collect()
}

#[test]
fn max_chunk_bytes_is_capped_at_1_mib() {
    for (value, want) in [
        (u32::MAX, "spec_over_limit"),
        (StreamSpec::MAX_CHUNK_BYTES + 1, "spec_over_limit"),
        (StreamSpec::MAX_CHUNK_BYTES, "ok"),
        (1, "ok"),
        (0, "spec_zero_max_chunk"),
    ] {
        let spec = StreamSpec {
            max_chunk_bytes: value,
            ..base()
        };
        assert_eq!(code(&spec), want, "{value}");
    }
    assert_eq!(StreamSpec::MAX_CHUNK_BYTES, 1_048_576);
    let e = StreamSpec {
        max_chunk_bytes: u32::MAX,
        ..base()
    }
    .validate()
    .unwrap_err();
    assert_eq!(
        e,
        StreamError::SpecLimit {
            field: "max_chunk_bytes",
            value: u64::from(u32::MAX),
            max: 1_048_576
        }
    );
}

#[test]
fn ticks_per_window_and_window_length_are_capped() {
    let ticks = |t: u32| StreamSpec {
        max_ticks_per_window: t,
        ..base()
    };
    let window_ms = |ms: u32| StreamSpec {
        tick_window_ms: ms,
        ..base()
    };
    for (spec, want) in [
        (ticks(u32::MAX), "spec_over_limit"),
        (
            ticks(StreamSpec::MAX_TICKS_PER_WINDOW + 1),
            "spec_over_limit",
        ),
        (ticks(StreamSpec::MAX_TICKS_PER_WINDOW), "ok"),
        (window_ms(u32::MAX), "spec_over_limit"),
        (
            window_ms(StreamSpec::MAX_TICK_WINDOW_MS + 1),
            "spec_over_limit",
        ),
        (window_ms(StreamSpec::MAX_TICK_WINDOW_MS), "ok"),
    ] {
        assert_eq!(code(&spec), want, "{spec:?}");
    }
}

#[test]
fn twenty_thousand_channels_are_refused_and_256_accepted() {
    let spec = StreamSpec {
        channels: channels(0..20_000),
        ..base()
    };
    assert_eq!(code(&spec), "spec_over_limit");
    let spec = StreamSpec {
        channels: channels(0..StreamSpec::MAX_CHANNELS + 1),
        ..base()
    };
    assert_eq!(code(&spec), "spec_over_limit");
    let spec = StreamSpec {
        channels: channels((0..StreamSpec::MAX_CHANNELS).rev()),
        ..base()
    };
    assert_eq!(code(&spec), "ok");
}

#[test]
fn channel_ids_and_mime_lengths_are_capped() {
    for (id, want) in [
        (StreamSpec::MAX_CHANNELS, "spec_over_limit"),
        (u32::MAX, "spec_over_limit"),
        (StreamSpec::MAX_CHANNELS - 1, "ok"),
    ] {
        let spec = StreamSpec {
            channels: channels([0, id]),
            ..base()
        };
        assert_eq!(code(&spec), want, "{id}");
    }
    let mut spec = base();
    spec.channels[2].mime = "a".repeat(StreamSpec::MAX_MIME_BYTES + 1);
    assert_eq!(code(&spec), "spec_over_limit");
    spec.channels[2].mime = "a".repeat(StreamSpec::MAX_MIME_BYTES);
    assert_eq!(code(&spec), "ok");
}

#[test]
fn duplicate_ids_are_refused_wherever_they_sit() {
    for ids in [vec![0, 0], vec![5, 1, 2, 5], vec![255, 0, 255]] {
        let spec = StreamSpec {
            channels: channels(ids.clone()),
            ..base()
        };
        assert_eq!(code(&spec), "spec_duplicate_channel", "{ids:?}");
    }
}

#[test]
fn a_validated_spec_finds_each_channel_by_id_and_windows_share_it() {
    let spec = Arc::new(base());
    let validated = ValidatedSpec::new(spec.clone()).unwrap();
    assert!(Arc::ptr_eq(validated.spec(), &spec));
    for c in &spec.channels {
        assert_eq!(validated.channel(c.id), Some(c));
    }
    assert_eq!(validated.channel(6), None);
    assert_eq!(validated.channel(u32::MAX), None);
    let mut w = StreamWindow::open_validated(&validated, 0).unwrap();
    let tick = Tick::new(
        0,
        duplex::TTS,
        TickKind::Audio,
        Bytes::from_static(b"ab"),
        5,
    );
    assert_eq!(w.push(tick).unwrap().direction, ChannelDirection::Outbound);
    assert!(Arc::ptr_eq(w.spec(), &spec));
    // An invalid spec has no validated form.
    assert_eq!(
        ValidatedSpec::new(Arc::new(StreamSpec {
            channels: Vec::new(),
            ..base()
        }))
        .unwrap_err()
        .code(),
        "spec_no_channels"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The dense table agrees with a linear search (the reference) for every id, present or
    /// not, and a window opened either way decides each tick the same.
    #[test]
    fn table_lookup_agrees_with_a_linear_search(
        ids in proptest::sample::subsequence((0..StreamSpec::MAX_CHANNELS).collect::<Vec<_>>(), 1..40)
            .prop_shuffle(),
        probes in proptest::collection::vec(0u32..300, 1..40),
    ) {
        let spec = Arc::new(StreamSpec { channels: channels(ids), ..base() });
        let validated = ValidatedSpec::new(spec.clone()).unwrap();
        for id in probes.iter().copied().chain(0..StreamSpec::MAX_CHANNELS + 2) {
            let reference = spec.channels.iter().find(|c| c.id == id);
            prop_assert_eq!(validated.channel(id), reference);
            prop_assert_eq!(spec.channel(id), reference);
        }
        let mut a = StreamWindow::open(spec.clone(), 0).unwrap();
        let mut b = StreamWindow::open_validated(&validated, 0).unwrap();
        for (i, id) in probes.iter().enumerate() {
            let t = Tick::new(0, *id, TickKind::Text, Bytes::from_static(b"x"), i as u64);
            let ra = a.push(t.clone()).map(|p| p.direction);
            let rb = b.push(t).map(|p| p.direction);
            prop_assert_eq!(ra, rb);
        }
        prop_assert_eq!(a.content_hash(), b.content_hash());
    }
}
