//! Writing to standard output and standard error without ever panicking.
//!
//! `println!` panics (exit 101) when the reader of a pipe has gone (`jouleclaw run ... | head
//! -1`). Everything the command prints goes through [`out`] and [`err`] instead: after a broken
//! pipe the stream is closed for the rest of the process and the command goes on, so a run still
//! commits its outputs and the exit code is the command's own (0, 1 or 2). Any other write error
//! on standard output (a full disk behind a redirect) is remembered and turns a successful exit
//! into 2, since the output the user asked for is incomplete.

use std::fmt;
use std::io::{ErrorKind, Write as _};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);
static STDERR_CLOSED: AtomicBool = AtomicBool::new(false);
static STDOUT_ERROR: OnceLock<String> = OnceLock::new();

fn record(e: &std::io::Error) {
    STDOUT_CLOSED.store(true, Ordering::Relaxed);
    if e.kind() != ErrorKind::BrokenPipe {
        let _ = STDOUT_ERROR.set(e.to_string());
    }
}

/// Writes `bytes` to standard output unless it has closed; data outputs use this too.
pub(crate) fn out_bytes(bytes: &[u8]) {
    to_stdout(|w| w.write_all(bytes));
}

/// Writes formatted text to standard output unless it has closed.
pub(crate) fn out(args: fmt::Arguments<'_>) {
    to_stdout(|w| w.write_fmt(args));
}

/// Runs `write` on standard output and flushes it, unless it has closed; an error closes it.
fn to_stdout(write: impl FnOnce(&mut std::io::StdoutLock<'static>) -> std::io::Result<()>) {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = write(&mut stdout).and_then(|()| stdout.flush()) {
        record(&e);
    }
}

/// Writes formatted text to standard error unless it has closed.
pub(crate) fn err(args: fmt::Arguments<'_>) {
    if STDERR_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut stderr = std::io::stderr().lock();
    if stderr.write_fmt(args).is_err() {
        STDERR_CLOSED.store(true, Ordering::Relaxed);
    }
}

/// A write error on standard output other than a broken pipe, if one happened.
pub(crate) fn stdout_error() -> Option<&'static str> {
    STDOUT_ERROR.get().map(String::as_str)
}

/// `println!` that never panics.
macro_rules! say {
    () => { $crate::out::out(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::out::out(format_args!("{}\n", format_args!($($arg)*))) };
}

/// `print!` that never panics.
macro_rules! say_raw {
    ($($arg:tt)*) => { $crate::out::out(format_args!($($arg)*)) };
}

/// `eprintln!` that never panics.
macro_rules! tell {
    ($($arg:tt)*) => { $crate::out::err(format_args!("{}\n", format_args!($($arg)*))) };
}

pub(crate) use {say, say_raw, tell};

/// `true` when standard output is a terminal.
pub(crate) fn stdout_is_terminal() -> bool {
    use std::io::IsTerminal as _;
    std::io::stdout().is_terminal()
}

/// Text from outside (a transcriber's sentence) made safe to show on a terminal, through the
/// one sanitizer of untrusted text, `jouleclaw_stack::store::escape_untrusted`. When `terminal`
/// is false the text is returned as it is: a pipe or a file gets the exact bytes.
pub(crate) fn for_terminal(text: &str, terminal: bool) -> std::borrow::Cow<'_, str> {
    if terminal {
        jouleclaw_stack::store::escape_untrusted(text)
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// An untrusted identifier (a stream id from a folder name, a NATS subject or an unsigned
/// line) in a line of output, escaped whether or not the output is a terminal (a line end in
/// it would forge a line).
pub(crate) fn untrusted(text: &str) -> std::borrow::Cow<'_, str> {
    jouleclaw_stack::store::escape_untrusted(text)
}

#[cfg(test)]
mod tests {
    use super::for_terminal;

    #[test]
    fn escapes_and_bidi_controls_are_shown_not_obeyed_on_a_terminal() {
        let hostile = "ok\u{1b}[2J\u{202E}gnp.exe\u{7}\u{9b}31m";
        assert_eq!(
            for_terminal(hostile, true),
            "ok\\u{001B}[2J\\u{202E}gnp.exe\\u{0007}\\u{009B}31m"
        );
        // Off a terminal the text is exact.
        assert_eq!(for_terminal(hostile, false), hostile);
    }
}
