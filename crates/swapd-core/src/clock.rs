use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The source of time for everything that stores or compares times. All times are integer Unix
/// milliseconds; tests inject a [`ManualClock`] to move time without sleeping.
pub trait Clock: Send + Sync + 'static {
    fn now_ms(&self) -> i64;

    fn now_secs(&self) -> i64 {
        self.now_ms().div_euclid(1000)
    }
}

#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        let elapsed = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("system clock is before 1970");
        i64::try_from(elapsed.as_millis()).expect("system clock beyond year 292 million")
    }
}

/// A clock that only moves when told to.
#[derive(Debug)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    pub fn new(now_ms: i64) -> Self {
        Self(AtomicI64::new(now_ms))
    }

    pub fn set_ms(&self, now_ms: i64) {
        self.0.store(now_ms, Ordering::SeqCst);
    }

    pub fn advance_ms(&self, delta_ms: i64) {
        self.0.fetch_add(delta_ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let clock = ManualClock::new(1_700_000_000_123);
        assert_eq!(clock.now_secs(), 1_700_000_000);
        clock.advance_ms(2_000);
        assert_eq!(clock.now_ms(), 1_700_000_002_123);
        clock.set_ms(-1);
        assert_eq!(clock.now_secs(), -1);
    }

    #[test]
    fn system_clock_is_after_2024() {
        assert!(SystemClock.now_ms() > 1_704_067_200_000);
    }
}
