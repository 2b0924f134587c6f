//! The completion ring: a poll of a finished op without a lock.
//!
//! Looking an op up in the op table takes the table's read lock: two
//! atomic read-modify-writes, most of what a poll costs. The ring answers
//! the common question, "has this op completed successfully?", with one
//! atomic load: slot `id % RING_SLOTS` holds the id of the newest op
//! submitted into it and that op's state, packed into one word.
//!
//! Only a slot that names the polled op *and* says done is an answer;
//! anything else (a newer op took the slot, the op is pending, failed or
//! released) sends the caller to the table, which is always right. So the
//! ring never has to be complete, only never wrong:
//!
//! - a slot is set to (id, pending) once the op is in the table, before
//!   anyone can run or complete the op;
//! - completion moves it from (id, pending) to (id, done) by compare and
//!   swap, so it never overwrites a newer op's entry;
//! - a release clears (id, done) by compare and swap, after the op is out
//!   of the table, so a poll after the release finds nothing and asks the
//!   table (which reports the id unknown).

use std::sync::atomic::{AtomicU64, Ordering};

use ovstage_types::OpId;

/// Slots in the ring (a power of two). Polls of ops more than this many
/// submissions old go to the table.
const RING_SLOTS: usize = 1 << 14;

/// The state bits of a slot: pending or done (failed ops stay pending in
/// the ring: their outcome needs the table).
const PENDING: u64 = 1;
const DONE: u64 = 2;

pub(crate) struct CompletionRing {
    slots: Box<[AtomicU64]>,
}

impl Default for CompletionRing {
    fn default() -> Self {
        CompletionRing { slots: (0..RING_SLOTS).map(|_| AtomicU64::new(0)).collect() }
    }
}

/// The slot of `id` and the word that says "`id` in `state`". The id's
/// bits above the slot index are its tag; the slot index is implied.
fn word(id: OpId, state: u64) -> (usize, u64) {
    let raw = id.get();
    let slot = (raw as usize) & (RING_SLOTS - 1);
    let tag = raw >> RING_SLOTS.trailing_zeros();
    (slot, (tag << 2) | state)
}

impl CompletionRing {
    /// Records a new op as pending. Called before the op can run.
    pub(crate) fn submitted(&self, id: OpId) {
        let (slot, pending) = word(id, PENDING);
        self.slots[slot].store(pending, Ordering::Relaxed);
    }

    /// Records a successful completion, unless a newer op took the slot.
    /// Release ordering: a poll that sees it sees the op's effects.
    pub(crate) fn done(&self, id: OpId) {
        let (slot, pending) = word(id, PENDING);
        let (_, done) = word(id, DONE);
        let _ = self.slots[slot].compare_exchange(pending, done, Ordering::Release, Ordering::Relaxed);
    }

    /// Records an op that is complete as it is submitted: a store, as
    /// its id was the newest a moment ago (should 2^14 newer ops have
    /// taken the slot in between, this only makes polls of the newest
    /// ask the table, which is always right).
    pub(crate) fn born_done(&self, id: OpId) {
        let (slot, done) = word(id, DONE);
        self.slots[slot].store(done, Ordering::Release);
    }

    /// Forgets a released op, unless a newer op took the slot.
    pub(crate) fn released(&self, id: OpId) {
        let (slot, done) = word(id, DONE);
        let (_, pending) = word(id, PENDING);
        let s = &self.slots[slot];
        if s.compare_exchange(done, 0, Ordering::Relaxed, Ordering::Relaxed).is_err() {
            let _ = s.compare_exchange(pending, 0, Ordering::Relaxed, Ordering::Relaxed);
        }
    }

    /// True when `id` is known to have completed successfully (and is not
    /// released); false means "ask the table".
    pub(crate) fn is_done(&self, id: OpId) -> bool {
        let (slot, done) = word(id, DONE);
        self.slots[slot].load(Ordering::Acquire) == done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(raw: u64) -> OpId {
        OpId::from_raw(raw).unwrap()
    }

    #[test]
    fn only_a_slot_naming_the_op_as_done_answers() {
        let ring = CompletionRing::default();
        let a = op(5);
        assert!(!ring.is_done(a), "never submitted");
        ring.submitted(a);
        assert!(!ring.is_done(a), "pending");
        ring.done(a);
        assert!(ring.is_done(a));
        // A newer op in the same slot hides it (the table answers then),
        // and a late completion of the older op does not overwrite it.
        let b = op(5 + RING_SLOTS as u64);
        ring.submitted(b);
        assert!(!ring.is_done(a) && !ring.is_done(b));
        ring.done(a);
        assert!(!ring.is_done(b), "an older op's completion left the newer op's slot alone");
        ring.released(a);
        ring.done(b);
        assert!(ring.is_done(b), "an older op's release left the newer op's slot alone");
        ring.released(b);
        assert!(!ring.is_done(b), "released");
        // A pending op released (never done) also leaves nothing behind.
        let c = op(7);
        ring.submitted(c);
        ring.released(c);
        ring.done(c);
        assert!(!ring.is_done(c));
    }

    #[test]
    fn ids_far_apart_do_not_alias() {
        let ring = CompletionRing::default();
        let high = op(u64::MAX);
        ring.submitted(high);
        ring.done(high);
        assert!(ring.is_done(high));
        assert!(!ring.is_done(op(u64::MAX - RING_SLOTS as u64)));
        assert!(!ring.is_done(op((RING_SLOTS as u64) - 1)));
    }
}
