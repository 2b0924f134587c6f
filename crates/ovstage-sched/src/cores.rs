//! The cores this process may run on.

use std::num::NonZeroUsize;
use std::sync::OnceLock;

/// Cores this process may run on, read once per process: a read costs
/// about twenty system calls (std reads the affinity mask and parses the
/// cgroup's CPU quota files), and every stage created read it three
/// times (63 of the 64 system calls of an instance's create + destroy).
pub fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, NonZeroUsize::get))
}
