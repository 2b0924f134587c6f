//! Stage configuration.

use ovstage_sched::Lanes;
use ovstage_types::AdmissionPolicy;

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
}

impl Default for StageConfig {
    fn default() -> Self {
        StageConfig {
            lanes: Lanes::Auto,
            admission: AdmissionPolicy::NonDecreasing,
            history_depth: 4,
            max_versions: 64,
        }
    }
}

impl StageConfig {
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

    /// The configuration with another history depth.
    pub fn with_history_depth(mut self, depth: usize) -> StageConfig {
        self.history_depth = depth;
        self
    }
}
