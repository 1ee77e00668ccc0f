//! `jouleclaw transcribe`: a WAV file through a whisper.cpp or Wyoming server, its measurement
//! printed.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use jouleclaw_stack::voice::{
    Transcriber, Transcript, WhisperTranscriber, WyomingTranscriber, hear_wav_with, parse_endpoint,
};

use crate::out::say;
use crate::{CmdResult, Failure};

/// Arguments of `jouleclaw transcribe`.
#[derive(Args, Debug)]
pub(crate) struct TranscribeArgs {
    /// A whisper.cpp server's Unix socket; if it does not exist, prints `no transcriber`.
    #[arg(long)]
    socket: Option<PathBuf>,
    /// A Wyoming speech-to-text server, `unix:PATH` or `tcp:HOST:PORT`; a Unix socket that
    /// does not exist prints `no transcriber`.
    #[arg(long, value_name = "unix:PATH|tcp:HOST:PORT")]
    wyoming: Option<String>,
    /// Longest wait for the answer, in seconds (default: scaled to the audio's length).
    #[arg(long, value_name = "SECS")]
    max_wait: Option<f64>,
    /// The WAV file.
    file: PathBuf,
}

/// `jouleclaw transcribe`.
pub(crate) fn exec(args: &TranscribeArgs) -> CmdResult {
    transcribe(
        args.socket.as_deref(),
        args.wyoming.as_deref(),
        args.max_wait,
        &args.file,
    )
}

/// `transcribe (--socket PATH | --wyoming unix:PATH|tcp:HOST:PORT) [--max-wait SECS] FILE.wav`.
fn transcribe(
    socket: Option<&Path>,
    wyoming: Option<&str>,
    max_wait: Option<f64>,
    file: &Path,
) -> CmdResult {
    let max_wait = match max_wait {
        None => None,
        Some(secs) => match Duration::try_from_secs_f64(secs) {
            Ok(d) if !d.is_zero() => Some(d),
            _ => {
                return Err(Failure::Usage(format!(
                    "--max-wait {secs}: expected a positive number of seconds"
                )));
            }
        },
    };
    let transcriber: Box<dyn Transcriber> = match (socket, wyoming) {
        (Some(path), None) => Box::new(WhisperTranscriber::at_socket(path, max_wait)),
        (None, Some(endpoint)) => {
            let endpoint =
                parse_endpoint(endpoint).map_err(|e| Failure::Usage(format!("--wyoming {e}")))?;
            Box::new(WyomingTranscriber::at(endpoint, max_wait))
        }
        _ => {
            return Err(Failure::Usage(
                "transcribe: give exactly one of --socket and --wyoming".to_owned(),
            ));
        }
    };
    let wav = std::fs::read(file).map_err(|e| Failure::io(file, e))?;
    // The error's text may come from the transcription server: it is printed through the one
    // sanitizer of untrusted text (a `VoiceError` shows it escaped already; escaping is
    // idempotent), never as sent.
    let failed = |e: &jouleclaw_stack::voice::VoiceError| {
        Failure::Refused(format!(
            "{}: {}: {}",
            file.display(),
            e.code(),
            crate::out::untrusted(&e.to_string())
        ))
    };
    let turn = hear_wav_with(transcriber.as_ref(), &wav).map_err(|e| failed(&e))?;
    // The measurement, printed under the sentence: it explains a sentence that did not arrive.
    let measurement = match turn.measurement {
        Some(m) => m.to_string(),
        None => format!(
            "not measured: {} (a turn is measured as 16 kHz 16-bit mono)",
            turn.format
        ),
    };
    match turn.transcript {
        Ok(Transcript::Said(s)) => {
            // The sentence first when there is one.
            if !s.is_empty() {
                say!(
                    "{}",
                    crate::out::for_terminal(&s, crate::out::stdout_is_terminal())
                );
            }
            say!("{measurement}");
            Ok(())
        }
        Ok(Transcript::Unasked) => {
            say!("no transcriber");
            say!("{measurement}");
            Ok(())
        }
        Err(e) => {
            say!("{measurement}");
            Err(failed(&e))
        }
    }
}
