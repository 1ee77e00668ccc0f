//! The injected clock. Stream time is nanoseconds since the stream was opened.

use core::future::Future;
use core::pin::Pin;
use core::time::Duration;

/// A future the runtime awaits.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The substrate's clock: a monotonic nanosecond count, the Unix second at its origin (for
/// receipts' `closed_at`), and a way to wait until a count is reached. Windows close on it.
pub trait Clock: Send + Sync + 'static {
    /// Nanoseconds since the clock's origin; never decreases.
    fn now_ns(&self) -> u64;
    /// The Unix second at which `now_ns() == 0`.
    fn epoch_unix(&self) -> i64;
    /// Completes once `now_ns() >= at_ns`.
    fn sleep_until(&self, at_ns: u64) -> BoxFuture<'static, ()>;
}

/// The clock of the tokio runtime (`tokio::time::Instant`): real time, or tokio's paused and
/// auto-advanced time in tests (`#[tokio::test(start_paused = true)]`).
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    origin: tokio::time::Instant,
    epoch_unix: i64,
}

impl TokioClock {
    /// A clock whose origin is now and whose origin lies at Unix second `epoch_unix`.
    /// Must be called inside a tokio runtime when time is paused.
    pub fn new(epoch_unix: i64) -> Self {
        Self {
            origin: tokio::time::Instant::now(),
            epoch_unix,
        }
    }

    /// A clock whose origin is now, with the origin's Unix second read from the system clock.
    pub fn system() -> Self {
        let epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(0));
        Self::new(epoch)
    }
}

impl Clock for TokioClock {
    fn now_ns(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn epoch_unix(&self) -> i64 {
        self.epoch_unix
    }

    fn sleep_until(&self, at_ns: u64) -> BoxFuture<'static, ()> {
        let deadline = self
            .origin
            .checked_add(Duration::from_nanos(at_ns))
            .unwrap_or_else(|| self.origin + Duration::from_secs(86_400 * 365));
        Box::pin(tokio::time::sleep_until(deadline))
    }
}
