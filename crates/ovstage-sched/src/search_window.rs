//! How long an idle lane searches (spins) for work before it parks.
//!
//! A search saves the wake-up of a parked lane (often 30-60 us on this
//! project's VMs) when work comes soon after a lane runs dry, and costs a
//! core for as long as it lasts when none comes. A fixed 50 us window made
//! the lanes of a loop whose ops come farther apart than that spin 50 us
//! per op for nothing, a core's worth of time taken from the threads a
//! simulation host runs beside us. The window adapts to how work arrives:
//!
//! - a search that finds work sets it back to the longest ([`LONGEST`]);
//! - a search that finds none halves it, down to [`SHORTEST`];
//! - a lane woken soon after it parked ([`WOKEN_SOON`]: work came while a
//!   longer search would still have been looking) sets it back to the
//!   longest.
//!
//! So a stream of ops that come within the window keeps it whole, and a
//! loop whose ops come farther apart stops spinning after a few searches.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The longest search.
pub(crate) const LONGEST: Duration = Duration::from_micros(50);
/// The shortest search: a few looks, for work that follows at once (the
/// searching lane reads the clock every 16 rounds of pauses, about 2 us
/// on this project's VMs).
pub(crate) const SHORTEST: Duration = Duration::from_micros(2);
/// A lane woken within this of parking widens the window again: with the
/// wake-up's own latency, work came within about the longest search.
pub(crate) const WOKEN_SOON: Duration = Duration::from_micros(100);

/// The current search window, shared by a pool's lanes (one searches at a
/// time). Relaxed: a stale value only makes one search longer or shorter.
pub(crate) struct SearchWindow {
    nanos: AtomicU64,
}

impl SearchWindow {
    pub(crate) fn new() -> SearchWindow {
        SearchWindow { nanos: AtomicU64::new(LONGEST.as_nanos() as u64) }
    }

    /// How long the next search lasts at most.
    pub(crate) fn get(&self) -> Duration {
        Duration::from_nanos(self.nanos.load(Ordering::Relaxed))
    }

    /// A search found work.
    pub(crate) fn found(&self) {
        self.widen();
    }

    /// A search found nothing and the lane parks.
    pub(crate) fn found_nothing(&self) {
        let now = self.nanos.load(Ordering::Relaxed);
        let halved = (now / 2).max(SHORTEST.as_nanos() as u64);
        if halved != now {
            self.nanos.store(halved, Ordering::Relaxed);
        }
    }

    /// A parked lane was woken after `parked` (for work, or at shutdown).
    pub(crate) fn woken_after(&self, parked: Duration) {
        if parked < WOKEN_SOON {
            self.widen();
        }
    }

    fn widen(&self) {
        let longest = LONGEST.as_nanos() as u64;
        // Read first: the common case (already the longest) writes nothing
        // to the line the other lanes read.
        if self.nanos.load(Ordering::Relaxed) != longest {
            self.nanos.store(longest, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fruitless searches halve the window down to the shortest; a search
    /// that finds work, or a lane woken soon after it parked, restores the
    /// longest; a lane woken late leaves it as it is.
    #[test]
    fn the_window_shrinks_while_searches_find_nothing_and_widens_when_work_comes_soon() {
        let w = SearchWindow::new();
        assert_eq!(w.get(), LONGEST);
        w.found_nothing();
        assert_eq!(w.get(), LONGEST / 2);
        for _ in 0..10 {
            w.found_nothing();
        }
        assert_eq!(w.get(), SHORTEST);
        w.woken_after(Duration::from_millis(1));
        assert_eq!(w.get(), SHORTEST, "work that came late: a longer search would not have found it");
        w.woken_after(Duration::from_micros(30));
        assert_eq!(w.get(), LONGEST, "work that came soon after the lane parked");
        w.found_nothing();
        w.found_nothing();
        assert_eq!(w.get(), LONGEST / 4);
        w.found();
        assert_eq!(w.get(), LONGEST);
    }
}
