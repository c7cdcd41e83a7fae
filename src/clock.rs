//! Where "now" comes from: the real clock, or a manual one for tests and replays.

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use parking_lot::Mutex;

/// A source of the current time.
pub trait Clock: Send + Sync {
    /// The current instant.
    fn now(&self) -> DateTime<Utc>;
}

/// The system's wall clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that only moves when told to. Clones share one instant.
///
/// ```
/// use chrono::{Duration, TimeZone, Utc};
/// use ctxmem::{Clock, ManualClock};
/// let clock = ManualClock::new(Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap());
/// let handle = clock.clone();
/// handle.advance(Duration::hours(2));
/// assert_eq!(clock.now(), Utc.with_ymd_and_hms(2026, 1, 1, 2, 0, 0).unwrap());
/// ```
#[derive(Clone, Debug)]
pub struct ManualClock(Arc<Mutex<DateTime<Utc>>>);

impl ManualClock {
    /// A clock standing at `at`.
    pub fn new(at: DateTime<Utc>) -> Self {
        ManualClock(Arc::new(Mutex::new(at)))
    }

    /// Moves the clock to `at` (backwards too).
    pub fn set(&self, at: DateTime<Utc>) {
        *self.0.lock() = at;
    }

    /// Moves the clock by `by`.
    pub fn advance(&self, by: Duration) {
        let mut now = self.0.lock();
        *now += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.0.lock()
    }
}
