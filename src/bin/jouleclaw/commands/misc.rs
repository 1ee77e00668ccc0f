//! `replay` and `transcribe`.

use crate::out::{say, say_raw};
use std::path::{Path, PathBuf};
use std::time::Duration;

use jouleclaw_stack::replay::replay_corpus;
use jouleclaw_stack::voice::{
    Transcriber, Transcript, WhisperTranscriber, WyomingTranscriber, hear_wav_with, parse_endpoint,
};

use crate::{CmdResult, Failure};

/// `replay FILE... [--json]`.
pub(crate) fn replay(files: &[PathBuf], json: bool) -> CmdResult {
    let mut corpus = Vec::with_capacity(files.len());
    for path in files {
        let bytes = std::fs::read(path).map_err(|e| Failure::io(path, e))?;
        corpus.push((path.display().to_string(), bytes));
    }
    let report = replay_corpus(&corpus);
    if json {
        let provenance = jouleclaw_stack::replay::Provenance::from_build(
            env!("CARGO_PKG_VERSION"),
            option_env!("JOULECLAW_GIT_REV").unwrap_or(""),
        );
        say!("{}", report.render_json_with(&provenance));
    } else {
        say_raw!("{}", report.render_text());
    }
    if report.all_expectations_hold() {
        Ok(())
    } else {
        Err(Failure::Refused(
            "replay: not every expectation holds (see the report)".to_owned(),
        ))
    }
}

/// `transcribe (--socket PATH | --wyoming unix:PATH|tcp:HOST:PORT) [--max-wait SECS] FILE.wav`.
pub(crate) fn transcribe(
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
