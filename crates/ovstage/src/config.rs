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
    /// Most unsealed versions a column keeps exact: the distinct ordinals a
    /// producer may write ahead of its floor advances (its lead) with every
    /// one of them still readable once sealed. What happens beyond it is
    /// [`StageConfig::unsealed_overflow`]'s choice: under
    /// [`UnsealedOverflow::Coalesce`] the newest unsealed versions are
    /// merged (the oldest, which the next floor advances seal, stay exact;
    /// a snapshot strictly inside a merged span is `OUT_OF_RANGE`, reported
    /// by `get_oldest_preserved_ordinal`); under [`UnsealedOverflow::Reject`]
    /// the mutation is refused at enqueue with `QUEUE_FULL`. Sealed
    /// versions, and versions at or below a submitted floor, are never
    /// merged. The default, 1024, lets a producer run a thousand ticks
    /// ahead exactly; a version costs its payload plus bitsets of the rows
    /// it changed (the write benchmarks, which never seal and so keep all
    /// 1024, ran no slower than with 64).
    pub max_versions: usize,
    /// Most bytes of unsealed versions a column keeps exact (their payload
    /// buffers), under [`UnsealedOverflow::Coalesce`]. Beyond it the newest
    /// unsealed versions are merged as for `max_versions`, except that a
    /// column always keeps up to [`StageConfig::MIN_UNSEALED_VERSIONS`] of
    /// them (or `max_versions` when lower): whichever of the two allows more
    /// versions wins. This bounds the memory of a producer writing large
    /// payloads ahead of (or without) floor advances, where 1024 versions of
    /// an 8 MB payload would otherwise hold 8 GB per column. A write loop
    /// that never seals fills it once (those versions stay exact until a
    /// floor advance seals them) and then cycles through a few buffers at
    /// the head, which stay in cache. The default, 8 MiB, keeps 1024
    /// versions of payloads up to 8 KB exact, and 16 ticks of a 512 KB one
    /// (4096 4x4 double matrices). It is per column, so it also sets what
    /// a never-sealing loop holds: 64 MiB per column made a loop writing
    /// 24 attributes of 400 KB hold 1.5 GB, and page-fault through its
    /// first 160 ticks per attribute (44 ms per tick instead of 1.5 ms).
    /// Not applied under [`UnsealedOverflow::Reject`], which bounds memory
    /// by `max_versions` alone.
    pub max_unsealed_bytes: usize,
    /// Most ops submitted and not released (`release_op`). Beyond it an
    /// enqueue is refused with `QUEUE_FULL`, naming the oldest unreleased
    /// op; releases of handles are always accepted. Every op keeps a few
    /// hundred bytes until released, so this bounds the memory a client
    /// that never releases its ops can make the stage hold.
    pub max_ops: usize,
    /// What a column does when a producer runs further ahead of its floor
    /// than `max_versions` (or `max_unsealed_bytes`) allows.
    pub unsealed_overflow: UnsealedOverflow,
}

/// What happens to a mutation that would make an attribute hold more
/// unsealed versions than [`StageConfig::max_versions`].
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum UnsealedOverflow {
    /// Accept it, and merge the newest unsealed versions of the column so
    /// memory stays bounded: a write loop that never seals keeps working,
    /// snapshots inside the merged span become `OUT_OF_RANGE`, and the
    /// oldest unsealed versions (all but the merged span at the head and
    /// the newest; those the next floor advances seal) stay exact.
    #[default]
    Coalesce,
    /// Refuse it at enqueue with `QUEUE_FULL` when its ordinal would be
    /// one more distinct unsealed ordinal of an attribute already holding
    /// `max_versions` of them: every sealed ordinal stays readable whatever
    /// runs ahead, and the producer continues once a floor advance seals
    /// some of them. Columns never merge.
    Reject,
}

impl Default for StageConfig {
    fn default() -> Self {
        StageConfig {
            lanes: Lanes::Auto,
            admission: AdmissionPolicy::NonDecreasing,
            history_depth: 4,
            max_versions: 1024,
            max_unsealed_bytes: 8 << 20,
            unsealed_overflow: UnsealedOverflow::Coalesce,
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

    /// The configuration with another overflow policy.
    pub fn with_unsealed_overflow(mut self, overflow: UnsealedOverflow) -> StageConfig {
        self.unsealed_overflow = overflow;
        self
    }

    /// What each column may keep unsealed. Under `Reject` admission keeps
    /// the count within `max_versions` and nothing is merged.
    pub(crate) fn column_limits(&self) -> Limits {
        match self.unsealed_overflow {
            UnsealedOverflow::Coalesce => Limits {
                max_versions: self.max_versions,
                min_versions: StageConfig::MIN_UNSEALED_VERSIONS,
                max_bytes: self.max_unsealed_bytes,
            },
            UnsealedOverflow::Reject => {
                Limits { max_versions: usize::MAX, min_versions: usize::MAX, max_bytes: usize::MAX }
            }
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
