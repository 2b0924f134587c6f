//! Op ids and timeouts.

use std::fmt;
use std::num::NonZeroU64;
use std::time::Duration;

/// Identifies one enqueued operation of a stage.
///
/// Ids increase monotonically within a stage and are never reused. The C
/// contract's invalid id 0 has no `OpId`; it is `Option<OpId>::None` here.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OpId(NonZeroU64);

impl OpId {
    /// The op id for a raw value; `None` for the invalid id 0.
    pub const fn from_raw(raw: u64) -> Option<OpId> {
        match NonZeroU64::new(raw) {
            Some(v) => Some(OpId(v)),
            None => None,
        }
    }

    /// The raw value (never 0).
    pub const fn get(self) -> u64 {
        self.0.get()
    }
}

impl fmt::Display for OpId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "op {}", self.0)
    }
}

/// How long a wait or fetch may block, in nanoseconds.
///
/// `Timeout::POLL` (0) never blocks, `Timeout::INFINITE` blocks until the
/// result is ready, anything else is an upper bound.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timeout(u64);

impl Timeout {
    /// Do not block: report `TIMEOUT` at once when the result is not ready.
    pub const POLL: Timeout = Timeout(0);
    /// Block until the result is ready.
    pub const INFINITE: Timeout = Timeout(u64::MAX);

    /// A bound of `nanos` nanoseconds (0 polls, `u64::MAX` is infinite).
    pub const fn from_nanos(nanos: u64) -> Timeout {
        Timeout(nanos)
    }

    /// The raw nanosecond value as the C contract spells it.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Whether this timeout never blocks.
    pub const fn is_poll(self) -> bool {
        self.0 == 0
    }

    /// Whether this timeout blocks without bound.
    pub const fn is_infinite(self) -> bool {
        self.0 == u64::MAX
    }

    /// The bound as a `Duration`; `None` when infinite.
    pub const fn as_duration(self) -> Option<Duration> {
        if self.is_infinite() { None } else { Some(Duration::from_nanos(self.0)) }
    }
}

impl From<Duration> for Timeout {
    /// Durations too long for a `u64` of nanoseconds saturate to `INFINITE`.
    fn from(d: Duration) -> Self {
        Timeout(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_id_zero_is_invalid() {
        assert_eq!(OpId::from_raw(0), None);
        assert_eq!(OpId::from_raw(7).map(OpId::get), Some(7));
    }

    #[test]
    fn timeout_kinds() {
        assert!(Timeout::POLL.is_poll());
        assert!(Timeout::INFINITE.is_infinite());
        assert_eq!(Timeout::INFINITE.as_duration(), None);
        assert_eq!(Timeout::from(Duration::from_micros(3)).as_nanos(), 3_000);
        assert_eq!(Timeout::from(Duration::MAX), Timeout::INFINITE);
    }
}
