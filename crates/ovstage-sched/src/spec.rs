//! How an op orders against others: the input to dependency computation.

use smallvec::SmallVec;

/// An opaque key naming what a mutation touches, chosen by the caller (the
/// stage uses one key per canonical attribute).
pub type CellKey = u64;

/// An opaque key naming a handle whose producer, users and release order.
pub type HandleKey = u64;

/// The cells a mutation touches: some keys, or every key.
///
/// A struct rather than an enum with an `All` variant: every byte of it is
/// initialized whichever it is, so code the compiler hoists out of a match
/// (the ordering lock's loops) never branches on the uninitialized payload
/// of a variant not taken, which valgrind reports as a use of
/// uninitialized memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cells {
    /// The keys; empty when `all`.
    keys: SmallVec<[CellKey; 2]>,
    /// Every key (a whole-prim delete, a clone).
    all: bool,
}

impl Cells {
    /// One key.
    pub fn one(key: CellKey) -> Cells {
        Cells { keys: SmallVec::from_slice(&[key]), all: false }
    }

    /// These keys.
    pub fn keys(keys: impl IntoIterator<Item = CellKey>) -> Cells {
        Cells { keys: keys.into_iter().collect(), all: false }
    }

    /// Every key.
    pub fn all() -> Cells {
        Cells { keys: SmallVec::new(), all: true }
    }

    /// The keys, or `None` for every key.
    pub fn as_keys(&self) -> Option<&[CellKey]> {
        (!self.all).then_some(&self.keys[..])
    }

    /// Whether the two touch a common key.
    pub(crate) fn overlaps(&self, other: &Cells) -> bool {
        self.all || other.all || self.keys.iter().any(|k| other.keys.contains(k))
    }

    /// Whether it touches `key`.
    pub(crate) fn has(&self, key: CellKey) -> bool {
        self.all || self.keys.contains(&key)
    }
}

/// Which mutations a floor advance waits for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FloorScope {
    /// Every mutation.
    All,
    /// Mutations touching one of these keys.
    Include(SmallVec<[CellKey; 4]>),
    /// Mutations touching a key other than these.
    Exclude(SmallVec<[CellKey; 4]>),
}

impl FloorScope {
    /// Whether a mutation touching only `key` is in this scope.
    pub(crate) fn covers_key(&self, key: CellKey) -> bool {
        match self {
            FloorScope::All => true,
            FloorScope::Include(keys) => keys.contains(&key),
            FloorScope::Exclude(keys) => !keys.contains(&key),
        }
    }
}

/// The ordering class of an op.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Order {
    /// No ordinal ordering.
    Independent,
    /// A write, delete, map commit or clone at `ordinal` touching `cells`.
    Mutation {
        /// The mutation's ordinal.
        ordinal: u64,
        /// What it touches.
        cells: Cells,
    },
    /// A mutation whose effect depends on what exists when it runs (a
    /// delete, an INSERT): besides the rules of a mutation, it runs after
    /// every pending mutation touching its cells at any ordinal, and every
    /// mutation touching its cells submitted after it runs after it. Around
    /// a barrier, mutations of its cells run in submission order.
    Barrier {
        /// The mutation's ordinal.
        ordinal: u64,
        /// What it touches.
        cells: Cells,
    },
    /// A write-floor advance to `ordinal`: it runs after every mutation
    /// pending when it is submitted at an ordinal `<= ordinal` in its scope,
    /// whatever was submitted before (a mutation at or below an earlier
    /// advance's ordinal included; the stage rejects those, but the
    /// scheduler does not rely on it).
    FloorAdvance {
        /// The new floor.
        ordinal: u64,
        /// The mutations it waits for.
        scope: FloorScope,
    },
    /// Runs after every floor advance submitted before it (reads of sealed
    /// data, floor queries).
    AfterFloors,
}

/// Everything the scheduler needs to know to order one op.
#[derive(Clone, Debug)]
pub struct OpSpec {
    /// The ordering class.
    pub order: Order,
    /// Handles this op consumes: it runs after their producers.
    pub uses: SmallVec<[HandleKey; 2]>,
    /// The handle this op produces, if any.
    pub produces: Option<HandleKey>,
    /// The handle this op releases: it runs after the producer and every
    /// op that uses the handle.
    pub releases: Option<HandleKey>,
    /// Where it runs once ready.
    pub placement: Placement,
    /// The call it was made by and the payload bytes it moves, for the op
    /// timeline ([`crate::trace`]): set only while a trace is being
    /// recorded, so a spec stays small (moved by registers, not `memcpy`)
    /// otherwise.
    pub traced: Option<Box<Traced>>,
}

/// What the op timeline shows of an op besides its ordering class.
#[derive(Clone, Debug, Default)]
pub struct Traced {
    /// The call that made the op (`None`: named by its ordering class).
    pub label: Option<&'static str>,
    /// The payload bytes it moves.
    pub bytes: u64,
}

/// Where a ready op runs.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Placement {
    /// On a worker lane, or on a thread that waits for it.
    #[default]
    Lanes,
    /// On the submitting thread, before the submission returns, when it is
    /// ready then (and the submitter is not a lane); on a lane otherwise.
    /// For ops whose job is trivial, such as releasing a handle: handing
    /// one to a lane would cost a wake-up and a cache-line round trip more
    /// than the job itself.
    SubmitterWhenReady,
}

impl OpSpec {
    /// Whether the op's only relation is the release of a handle.
    pub(crate) fn releases_only(&self) -> bool {
        matches!(self.order, Order::Independent)
            && self.uses.is_empty()
            && self.produces.is_none()
            && self.releases.is_some()
    }

    /// An op with the given ordering class and no handle relations.
    #[inline]
    pub fn new(order: Order) -> OpSpec {
        OpSpec {
            order,
            uses: SmallVec::new(),
            produces: None,
            releases: None,
            placement: Placement::Lanes,
            traced: None,
        }
    }

    /// An independent op.
    #[inline]
    pub fn independent() -> OpSpec {
        OpSpec::new(Order::Independent)
    }

    /// Adds a consumed handle.
    #[inline]
    pub fn using(mut self, handle: HandleKey) -> OpSpec {
        if !self.uses.contains(&handle) {
            self.uses.push(handle);
        }
        self
    }

    /// Sets the produced handle.
    #[inline]
    pub fn producing(mut self, handle: HandleKey) -> OpSpec {
        self.produces = Some(handle);
        self
    }

    /// Sets the released handle.
    #[inline]
    pub fn releasing(mut self, handle: HandleKey) -> OpSpec {
        self.releases = Some(handle);
        self
    }

    /// Runs the op on the submitting thread when it is ready at submission
    /// (see [`Placement::SubmitterWhenReady`]).
    #[inline]
    pub fn on_submitter_when_ready(mut self) -> OpSpec {
        self.placement = Placement::SubmitterWhenReady;
        self
    }

    /// Names the op in the op timeline by the call that made it (kept
    /// only while a trace is being recorded).
    #[inline]
    pub fn labelled(mut self, call: &'static str) -> OpSpec {
        if crate::trace::is_on() {
            self.traced.get_or_insert_with(Box::default).label = Some(call);
        }
        self
    }

    /// Records the payload bytes the op moves, for the op timeline:
    /// `bytes` is called only while a trace is being recorded (summing an
    /// array payload walks its rows).
    #[inline]
    pub fn with_bytes(mut self, bytes: impl FnOnce() -> u64) -> OpSpec {
        if crate::trace::is_on() {
            self.traced.get_or_insert_with(Box::default).bytes = bytes();
        }
        self
    }

    /// Whether the op takes part in any ordering relation; ops that do not
    /// skip the ordering bookkeeping entirely.
    pub(crate) fn is_ordered(&self) -> bool {
        !matches!(self.order, Order::Independent)
            || !self.uses.is_empty()
            || self.produces.is_some()
            || self.releases.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smallvec::smallvec;

    #[test]
    fn scope_coverage() {
        assert!(FloorScope::All.covers_key(7));
        assert!(FloorScope::Include(smallvec![1, 2]).covers_key(2));
        assert!(!FloorScope::Include(smallvec![3]).covers_key(1));
        assert!(!FloorScope::Exclude(smallvec![1]).covers_key(1));
        assert!(FloorScope::Exclude(smallvec![1]).covers_key(2));
    }

    #[test]
    fn only_related_ops_are_ordered() {
        assert!(!OpSpec::independent().is_ordered());
        assert!(OpSpec::independent().using(3).is_ordered());
        assert!(OpSpec::new(Order::AfterFloors).is_ordered());
        assert!(OpSpec::new(Order::Mutation { ordinal: 1, cells: Cells::one(1) }).is_ordered());
        assert!(Cells::one(1).overlaps(&Cells::all()));
        assert!(!Cells::one(1).overlaps(&Cells::one(2)));
        assert!(Cells::all().has(9) && !Cells::one(1).has(9));
        assert_eq!((Cells::all().as_keys(), Cells::keys([3, 4]).as_keys()), (None, Some(&[3, 4][..])));
    }
}
