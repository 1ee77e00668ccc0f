//! The WAV encoding a transcription engine wants.

use std::io::Cursor;
use std::time::Duration;

use crate::error::{Result, VoiceError};
use crate::level::{LevelMeter, Measurement};

/// Mic sample rate: 16 kHz.
pub const SAMPLE_RATE_HZ: u32 = 16_000;

/// Mic bytes per second: 16,000 samples of 2 bytes.
pub const PCM_BYTES_PER_SECOND: usize = 32_000;

/// A complete WAV file with its frame count and sample rate read from its header.
///
/// Built either by encoding 16 kHz 16-bit mono little-endian PCM
/// ([`WavAudio::from_pcm16_mono_16k`]) or by reading an existing file ([`WavAudio::parse`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WavAudio {
    bytes: Vec<u8>,
    frames: u64,
    sample_rate: u32,
}

impl WavAudio {
    /// Encodes 16 kHz 16-bit mono little-endian PCM as a WAV file (RIFF, `fmt ` chunk with PCM
    /// format 1, one channel, 16,000 Hz, 16 bits per sample, then the `data` chunk).
    ///
    /// Refuses an odd byte count ([`VoiceError::OddPcmLength`]).
    pub fn from_pcm16_mono_16k(pcm: &[u8]) -> Result<Self> {
        if !pcm.len().is_multiple_of(2) {
            return Err(VoiceError::OddPcmLength { len: pcm.len() });
        }
        let spec = hound::WavSpec {
            channels: 1,
            sample_rate: SAMPLE_RATE_HZ,
            bits_per_sample: 16,
            sample_format: hound::SampleFormat::Int,
        };
        let mut bytes = Vec::with_capacity(pcm.len().saturating_add(44));
        let encode_err = |e: hound::Error| VoiceError::WavEncode {
            reason: e.to_string(),
        };
        {
            let mut writer =
                hound::WavWriter::new(Cursor::new(&mut bytes), spec).map_err(encode_err)?;
            for pair in pcm.chunks_exact(2) {
                writer
                    .write_sample(i16::from_le_bytes([pair[0], pair[1]]))
                    .map_err(encode_err)?;
            }
            writer.finalize().map_err(encode_err)?;
        }
        Ok(Self {
            bytes,
            frames: (pcm.len() / 2) as u64,
            sample_rate: SAMPLE_RATE_HZ,
        })
    }

    /// Reads an existing WAV file: its header must parse and every sample it declares must be
    /// present. Any sample rate, channel count and sample format the WAV reader understands is
    /// accepted; the engine decides whether it can use them.
    pub fn parse(bytes: Vec<u8>) -> Result<Self> {
        let invalid = |e: hound::Error| VoiceError::InvalidWav {
            reason: e.to_string(),
        };
        let (frames, sample_rate) = {
            let mut reader =
                hound::WavReader::new(Cursor::new(bytes.as_slice())).map_err(invalid)?;
            let spec = reader.spec();
            if spec.sample_rate == 0 {
                return Err(VoiceError::InvalidWav {
                    reason: "sample rate is zero".to_owned(),
                });
            }
            match spec.sample_format {
                hound::SampleFormat::Int => {
                    for s in reader.samples::<i32>() {
                        s.map_err(invalid)?;
                    }
                }
                hound::SampleFormat::Float => {
                    for s in reader.samples::<f32>() {
                        s.map_err(invalid)?;
                    }
                }
            }
            (u64::from(reader.duration()), spec.sample_rate)
        };
        Ok(Self {
            bytes,
            frames,
            sample_rate,
        })
    }

    /// The whole file.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Samples per channel.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Frames per second.
    pub fn sample_rate(&self) -> u32 {
        self.sample_rate
    }

    /// The measurement of the file's samples when it is what the mic channel carries (16 kHz,
    /// 16-bit integer, mono); `Ok(None)` for any other format, which a turn's measurement does
    /// not define. Reads the samples once ([`VoiceError::InvalidWav`] if they cannot be read).
    pub fn measure(&self) -> Result<Option<Measurement>> {
        let invalid = |e: hound::Error| VoiceError::InvalidWav {
            reason: e.to_string(),
        };
        let mut reader =
            hound::WavReader::new(Cursor::new(self.bytes.as_slice())).map_err(invalid)?;
        let spec = reader.spec();
        if spec.sample_rate != SAMPLE_RATE_HZ
            || spec.channels != 1
            || spec.bits_per_sample != 16
            || spec.sample_format != hound::SampleFormat::Int
        {
            return Ok(None);
        }
        let mut meter = LevelMeter::new();
        for s in reader.samples::<i16>() {
            meter.push_sample(s.map_err(invalid)?)?;
        }
        Ok(Some(meter.measurement()))
    }

    /// `rate Hz, N channel(s), B-bit int|float`: the format, for a person.
    pub fn describe_format(&self) -> String {
        match hound::WavReader::new(Cursor::new(self.bytes.as_slice())) {
            Ok(r) => {
                let s = r.spec();
                let kind = match s.sample_format {
                    hound::SampleFormat::Int => "int",
                    hound::SampleFormat::Float => "float",
                };
                format!(
                    "{} Hz, {} channel{}, {}-bit {kind}",
                    s.sample_rate,
                    s.channels,
                    if s.channels == 1 { "" } else { "s" },
                    s.bits_per_sample
                )
            }
            Err(e) => format!("unreadable ({e})"),
        }
    }

    /// The file's samples as raw little-endian signed integer PCM with its format: what a
    /// Wyoming `audio-chunk` carries (rate, width in bytes, channels, interleaved samples).
    ///
    /// Integer samples of 8, 16, 24 or 32 bits are written back at their width (8-bit WAV,
    /// stored unsigned, is sent signed, as the WAV reader gives it); a float WAV has no Wyoming
    /// form ([`VoiceError::WyomingAudioUnsupported`]).
    pub(crate) fn wire_pcm(&self) -> Result<WirePcm> {
        let invalid = |e: hound::Error| VoiceError::InvalidWav {
            reason: e.to_string(),
        };
        let mut reader =
            hound::WavReader::new(Cursor::new(self.bytes.as_slice())).map_err(invalid)?;
        let spec = reader.spec();
        if spec.sample_format != hound::SampleFormat::Int {
            return Err(VoiceError::WyomingAudioUnsupported {
                reason: format!("{}-bit float samples", spec.bits_per_sample),
            });
        }
        let width = match spec.bits_per_sample {
            8 => 1,
            16 => 2,
            24 => 3,
            32 => 4,
            other => {
                return Err(VoiceError::WyomingAudioUnsupported {
                    reason: format!("{other}-bit integer samples"),
                });
            }
        };
        if spec.channels == 0 {
            return Err(VoiceError::WyomingAudioUnsupported {
                reason: "zero channels".to_owned(),
            });
        }
        let mut pcm = Vec::with_capacity(self.bytes.len());
        for s in reader.samples::<i32>() {
            let s = s.map_err(invalid)?;
            pcm.extend_from_slice(&s.to_le_bytes()[..width]);
        }
        Ok(WirePcm {
            rate: spec.sample_rate,
            width: width as u32,
            channels: u32::from(spec.channels),
            pcm,
        })
    }

    /// How long the audio lasts, to the nanosecond (rounded down).
    pub fn duration(&self) -> Duration {
        let rate = u64::from(self.sample_rate.max(1));
        let whole = self.frames / rate;
        // (frames % rate) < 2^32, so the product stays below 2^62.
        let nanos = (self.frames % rate) * 1_000_000_000 / rate;
        Duration::from_secs(whole) + Duration::from_nanos(nanos)
    }
}

/// Raw PCM with its format, as a Wyoming `audio-chunk` describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WirePcm {
    /// Frames per second.
    pub(crate) rate: u32,
    /// Bytes per sample.
    pub(crate) width: u32,
    /// Interleaved channels.
    pub(crate) channels: u32,
    /// Little-endian signed samples.
    pub(crate) pcm: Vec<u8>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_a_canonical_44_byte_header_then_the_samples() {
        let pcm = [0x01, 0x00, 0xff, 0x7f, 0x00, 0x80];
        let wav = WavAudio::from_pcm16_mono_16k(&pcm).unwrap();
        let b = wav.bytes();
        assert_eq!(b.len(), 44 + pcm.len());
        assert_eq!(&b[0..4], b"RIFF");
        assert_eq!(u32::from_le_bytes([b[4], b[5], b[6], b[7]]), 36 + 6); // RIFF size
        assert_eq!(&b[8..16], b"WAVEfmt ");
        assert_eq!(u32::from_le_bytes([b[16], b[17], b[18], b[19]]), 16); // fmt size
        assert_eq!(u16::from_le_bytes([b[20], b[21]]), 1); // PCM
        assert_eq!(u16::from_le_bytes([b[22], b[23]]), 1); // mono
        assert_eq!(u32::from_le_bytes([b[24], b[25], b[26], b[27]]), 16_000); // rate
        assert_eq!(u32::from_le_bytes([b[28], b[29], b[30], b[31]]), 32_000); // byte rate
        assert_eq!(u16::from_le_bytes([b[32], b[33]]), 2); // block align
        assert_eq!(u16::from_le_bytes([b[34], b[35]]), 16); // bits
        assert_eq!(&b[36..40], b"data");
        assert_eq!(u32::from_le_bytes([b[40], b[41], b[42], b[43]]), 6);
        assert_eq!(&b[44..], &pcm);
        assert_eq!(wav.frames(), 3);
        // Reading it back gives the same file, frames and rate.
        assert_eq!(WavAudio::parse(b.to_vec()).unwrap(), wav);
    }

    #[test]
    fn odd_pcm_is_refused_and_even_neighbour_accepted() {
        assert_eq!(
            WavAudio::from_pcm16_mono_16k(&[0; 3]).unwrap_err(),
            VoiceError::OddPcmLength { len: 3 }
        );
        assert!(WavAudio::from_pcm16_mono_16k(&[0; 4]).is_ok());
        assert!(WavAudio::from_pcm16_mono_16k(&[]).is_ok());
    }

    #[test]
    fn parse_refuses_non_wav_and_truncated_wav() {
        let err = WavAudio::parse(b"not a wav file at all".to_vec()).unwrap_err();
        assert_eq!(err.code(), "wav_invalid");
        let full = WavAudio::from_pcm16_mono_16k(&[0; 64]).unwrap();
        let mut cut = full.bytes().to_vec();
        cut.truncate(cut.len() - 3);
        assert_eq!(WavAudio::parse(cut).unwrap_err().code(), "wav_invalid");
    }

    #[test]
    fn a_mic_format_file_is_measured_and_another_format_is_not() {
        let pcm: Vec<u8> = [100i16, -200, 0, 32767]
            .iter()
            .flat_map(|s| s.to_le_bytes())
            .collect();
        let wav = WavAudio::from_pcm16_mono_16k(&pcm).unwrap();
        let mut meter = LevelMeter::new();
        meter.push_pcm16le(&pcm).unwrap();
        assert_eq!(wav.measure().unwrap(), Some(meter.measurement()));
        assert_eq!(wav.describe_format(), "16000 Hz, 1 channel, 16-bit int");
        // The same samples at 8 kHz are not a mic turn.
        let mut other = Vec::new();
        {
            let spec = hound::WavSpec {
                channels: 1,
                sample_rate: 8_000,
                bits_per_sample: 16,
                sample_format: hound::SampleFormat::Int,
            };
            let mut w = hound::WavWriter::new(Cursor::new(&mut other), spec).unwrap();
            w.write_sample(100i16).unwrap();
            w.finalize().unwrap();
        }
        let other = WavAudio::parse(other).unwrap();
        assert_eq!(other.measure().unwrap(), None);
        assert_eq!(other.describe_format(), "8000 Hz, 1 channel, 16-bit int");
    }

    fn wav_of(spec: hound::WavSpec, samples: &[i32]) -> WavAudio {
        let mut bytes = Vec::new();
        {
            let mut w = hound::WavWriter::new(Cursor::new(&mut bytes), spec).unwrap();
            for &s in samples {
                match spec.bits_per_sample {
                    8 => w.write_sample(s as i8).unwrap(),
                    16 => w.write_sample(s as i16).unwrap(),
                    _ => w.write_sample(s).unwrap(),
                }
            }
            w.finalize().unwrap();
        }
        WavAudio::parse(bytes).unwrap()
    }

    #[test]
    fn wire_pcm_is_the_samples_at_their_width_and_float_has_none() {
        let pcm: Vec<u8> = [100i16, -200, 0, 32767]
            .iter()
            .flat_map(|s| s.to_le_bytes())
            .collect();
        let wire = WavAudio::from_pcm16_mono_16k(&pcm)
            .unwrap()
            .wire_pcm()
            .unwrap();
        assert_eq!((wire.rate, wire.width, wire.channels), (16_000, 2, 1));
        assert_eq!(wire.pcm, pcm);
        let spec = |bits, channels| hound::WavSpec {
            channels,
            sample_rate: 22_050,
            bits_per_sample: bits,
            sample_format: hound::SampleFormat::Int,
        };
        // 8-bit is sent signed, 24-bit at three bytes, channels interleaved as stored.
        let w8 = wav_of(spec(8, 2), &[-128, 127]).wire_pcm().unwrap();
        assert_eq!((w8.rate, w8.width, w8.channels), (22_050, 1, 2));
        assert_eq!(w8.pcm, vec![0x80, 0x7f]);
        let w24 = wav_of(spec(24, 1), &[-2, 0x12_3456]).wire_pcm().unwrap();
        assert_eq!(w24.width, 3);
        assert_eq!(w24.pcm, vec![0xfe, 0xff, 0xff, 0x56, 0x34, 0x12]);
        let mut float = Vec::new();
        {
            let spec = hound::WavSpec {
                channels: 1,
                sample_rate: 16_000,
                bits_per_sample: 32,
                sample_format: hound::SampleFormat::Float,
            };
            let mut w = hound::WavWriter::new(Cursor::new(&mut float), spec).unwrap();
            w.write_sample(0.5f32).unwrap();
            w.finalize().unwrap();
        }
        assert_eq!(
            WavAudio::parse(float)
                .unwrap()
                .wire_pcm()
                .unwrap_err()
                .code(),
            "wyoming_audio_unsupported"
        );
    }

    #[test]
    fn duration_is_frames_over_rate() {
        let wav = WavAudio::from_pcm16_mono_16k(&vec![0; PCM_BYTES_PER_SECOND * 2 + 2]).unwrap();
        assert_eq!(
            wav.duration(),
            Duration::from_secs(2) + Duration::from_nanos(62_500)
        );
    }
}
