//! Stage configuration.

use ovstage_sched::Lanes;
use ovstage_types::AdmissionPolicy;

use crate::store::column::Limits;

/// How a stage runs and what it keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StageConfig {
    /// Worker lanes; `Lanes::fixed(1)` runs every op on one serialized lane.
    pub lanes: Lanes,
    /// How mutation ordinals are checked against retained cell history.
    pub admission: AdmissionPolicy,
    /// How many earlier global write floors stay readable: snapshots at or
    /// above the floor that was current `history_depth` advances ago are
    /// exact (that floor is the retention frontier). 0 keeps only the
    /// current floor's values.
    pub history_depth: usize,
    /// Most unsealed versions a column keeps (ticks a producer wrote ahead
    /// of its floor advances). Beyond it, the oldest unsealed versions are
    /// merged: memory stays bounded when writes are never sealed, and a
    /// snapshot strictly inside a merged span is `OUT_OF_RANGE` (reported by
    /// `get_oldest_preserved_ordinal`). Sealed versions are never merged.
    pub max_versions: usize,
    /// Most bytes of unsealed versions a column keeps (their payload
    /// buffers). Beyond it, the oldest unsealed versions are merged as for
    /// `max_versions`, except that a column always keeps up to
    /// [`StageConfig::MIN_UNSEALED_VERSIONS`] of them (or `max_versions`
    /// when lower): whichever of the two allows more versions wins. This
    /// bounds the memory of a producer writing large payloads ahead of (or
    /// without) floor advances, where 64 versions of an 8 MB payload would
    /// otherwise hold half a gigabyte per column. The default, 8 MiB, also
    /// keeps the buffers a write loop cycles through within the last-level
    /// cache a core effectively gets: a 512 KB write into a ring of 64
    /// buffers ran at DRAM speed, 2.4x slower than into a ring of 16.
    pub max_unsealed_bytes: usize,
    /// Most ops submitted and not released (`release_op`). Beyond it an
    /// enqueue is refused with `QUEUE_FULL`, naming the oldest unreleased
    /// op; releases of handles are always accepted. Every op keeps a few
    /// hundred bytes until released, so this bounds the memory a client
    /// that never releases its ops can make the stage hold.
    pub max_ops: usize,
}

impl Default for StageConfig {
    fn default() -> Self {
        StageConfig {
            lanes: Lanes::Auto,
            admission: AdmissionPolicy::NonDecreasing,
            history_depth: 4,
            max_versions: 64,
            max_unsealed_bytes: 8 << 20,
            max_ops: 1 << 20,
        }
    }
}

impl StageConfig {
    /// Unsealed versions a column keeps whatever their size (unless
    /// `max_versions` is lower).
    pub const MIN_UNSEALED_VERSIONS: usize = 4;

    /// The default configuration with `lanes` lanes.
    pub fn with_lanes(mut self, lanes: usize) -> StageConfig {
        self.lanes = Lanes::fixed(lanes);
        self
    }

    /// The configuration with another admission policy.
    pub fn with_admission(mut self, admission: AdmissionPolicy) -> StageConfig {
        self.admission = admission;
        self
    }

    /// The configuration with another version cap per column.
    pub fn with_max_versions(mut self, max_versions: usize) -> StageConfig {
        self.max_versions = max_versions;
        self
    }

    /// The configuration with another byte budget of unsealed versions per
    /// column.
    pub fn with_max_unsealed_bytes(mut self, bytes: usize) -> StageConfig {
        self.max_unsealed_bytes = bytes;
        self
    }

    /// What each column may keep unsealed.
    pub(crate) fn column_limits(&self) -> Limits {
        Limits {
            max_versions: self.max_versions,
            min_versions: StageConfig::MIN_UNSEALED_VERSIONS,
            max_bytes: self.max_unsealed_bytes,
        }
    }

    /// The configuration with another bound on unreleased ops.
    pub fn with_max_ops(mut self, max_ops: usize) -> StageConfig {
        self.max_ops = max_ops;
        self
    }

    /// The configuration with another history depth.
    pub fn with_history_depth(mut self, depth: usize) -> StageConfig {
        self.history_depth = depth;
        self
    }
}
