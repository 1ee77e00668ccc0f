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
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        record(&e);
    }
}

/// Writes formatted text to standard output unless it has closed.
pub(crate) fn out(args: fmt::Arguments<'_>) {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_fmt(args).and_then(|()| stdout.flush()) {
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
