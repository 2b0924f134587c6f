//! The cores this process may run on.

use std::num::NonZeroUsize;
use std::sync::OnceLock;

/// Cores this process may run on, read once per process: a read costs
/// about a dozen system calls (std parses the cgroup's CPU quota and the
/// affinity mask), which every stage created paid two or three times
/// over (40 of the 64 system calls of an instance's create + destroy).
pub fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, NonZeroUsize::get))
}
