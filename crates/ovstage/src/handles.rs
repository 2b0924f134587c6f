//! Handle tables: versioned slot maps whose raw handles are salted per table
//! (so per stage and per kind), so a stale handle, a handle of another kind
//! or a handle of another stage is rejected instead of aliasing a live
//! entry.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use ovstage_types::sync::lock;
use slotmap::{DefaultKey, Key, KeyData, SlotMap};

static SALT_COUNTER: AtomicU64 = AtomicU64::new(0x9e37_79b9_7f4a_7c15);

/// A well-mixed 64-bit value, different for every call.
fn next_salt() -> u64 {
    let mut z = SALT_COUNTER.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A table of values held by raw `u64` handles: a versioned slot map whose
/// handles are salted per table, so a stale handle, a handle of another
/// kind (another table) or of another stage is rejected instead of
/// aliasing a live entry. Handles are never 0. The stage keeps one per
/// kind of handle; the bindings use it for the results they hold for
/// clients (read groups, query and hierarchy results).
///
/// A table may keep state of its own beside its values (`X`), under the
/// same lock: what a holder updates together with an insert or a removal
/// costs no second lock (see [`HandleTable::locked`]).
pub struct HandleTable<T, X = ()> {
    slots: Mutex<Slots<T, X>>,
    /// XORed into the version half of the raw key. Its lowest version bit is
    /// clear, so encoded versions stay odd and never decode to 0.
    salt: u64,
}

struct Slots<T, X> {
    map: SlotMap<DefaultKey, T>,
    extra: X,
}

/// A handle table's values and extra state, locked (see
/// [`HandleTable::locked`]).
pub struct Locked<'a, T, X> {
    slots: MutexGuard<'a, Slots<T, X>>,
    salt: u64,
}

/// The raw handle of `key` in a table salted with `salt`.
fn encode(key: DefaultKey, salt: u64) -> u64 {
    key.data().as_ffi() ^ salt
}

impl<T, X> Locked<'_, T, X> {
    fn decode(&self, raw: u64) -> DefaultKey {
        KeyData::from_ffi(raw ^ self.salt).into()
    }

    /// Inserts the value built for its own raw handle; returns the handle.
    pub fn insert_with(&mut self, make: impl FnOnce(u64) -> T) -> u64 {
        let salt = self.salt;
        let mut raw = 0;
        self.slots.map.insert_with_key(|key| {
            raw = encode(key, salt);
            make(raw)
        });
        raw
    }

    /// The value of `raw`, if the table holds it.
    pub fn get_mut(&mut self, raw: u64) -> Option<&mut T> {
        let key = self.decode(raw);
        self.slots.map.get_mut(key)
    }

    /// Removes and returns the value of `raw`, if the table holds it.
    pub fn remove(&mut self, raw: u64) -> Option<T> {
        let key = self.decode(raw);
        self.slots.map.remove(key)
    }

    /// The table's own state.
    pub fn extra(&mut self) -> &mut X {
        &mut self.slots.extra
    }
}

impl<T, X: Default> Default for HandleTable<T, X> {
    fn default() -> Self {
        HandleTable::new()
    }
}

impl<T, X> std::fmt::Debug for HandleTable<T, X> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandleTable").field("len", &self.len()).finish_non_exhaustive()
    }
}

impl<T, X: Default> HandleTable<T, X> {
    /// An empty table with a salt of its own.
    pub fn new() -> HandleTable<T, X> {
        let slots = Slots { map: SlotMap::new(), extra: X::default() };
        HandleTable { slots: Mutex::new(slots), salt: (next_salt() & 0xffff_fffe) << 32 }
    }
}

impl<T, X> HandleTable<T, X> {
    /// The values and the extra state under the table's lock, for a change
    /// of both at once.
    pub fn locked(&self) -> Locked<'_, T, X> {
        Locked { slots: lock(&self.slots), salt: self.salt }
    }

    /// Inserts the value built for its own raw handle; returns the handle.
    pub fn insert_with(&self, make: impl FnOnce(u64) -> T) -> u64 {
        self.locked().insert_with(make)
    }

    /// Inserts `value`; returns what `view` makes of its handle and the
    /// value as stored (under the table's lock, so the value cannot be
    /// removed meanwhile).
    pub fn insert_view<V>(&self, value: T, view: impl FnOnce(u64, &T) -> V) -> V {
        let mut t = self.locked();
        let key = t.slots.map.insert(value);
        view(encode(key, t.salt), &t.slots.map[key])
    }

    /// Runs `f` on the value of `raw`, if the table holds it.
    pub fn with_mut<R>(&self, raw: u64, f: impl FnOnce(&mut T) -> R) -> Option<R> {
        self.locked().get_mut(raw).map(f)
    }

    /// Runs `f` on the value of `raw`, if the table holds it, and removes
    /// the value when `f` says so, under one lock (a release that drops
    /// the last reference). Returns `f`'s result and the removed value,
    /// which the caller drops after the lock is released.
    pub fn with_mut_remove_if<R>(&self, raw: u64, f: impl FnOnce(&mut T) -> (R, bool)) -> Option<(R, Option<T>)> {
        let mut t = self.locked();
        let (r, remove) = f(t.get_mut(raw)?);
        Some((r, if remove { t.remove(raw) } else { None }))
    }

    /// Removes and returns the value of `raw`, if the table holds it.
    pub fn remove(&self, raw: u64) -> Option<T> {
        self.locked().remove(raw)
    }

    /// Number of values held.
    pub fn len(&self) -> usize {
        self.locked().slots.map.len()
    }

    /// Whether the table holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T: Clone, X> HandleTable<T, X> {
    /// A copy of the value of `raw`, if the table holds it.
    pub fn get(&self, raw: u64) -> Option<T> {
        self.locked().get_mut(raw).map(|v| v.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_and_foreign_handles_are_rejected() {
        let a: HandleTable<u32> = HandleTable::new();
        let b: HandleTable<u32> = HandleTable::new();
        let h = a.insert_with(|_| 7);
        assert_ne!(h, 0);
        assert_eq!(a.get(h), Some(7));
        assert_eq!(b.get(h), None, "a handle of another table");
        assert_eq!(a.remove(h), Some(7));
        assert_eq!(a.get(h), None, "a released handle");
        let h2 = a.insert_with(|raw| raw as u32);
        assert_ne!(h2, h, "the slot is reused under a new handle");
        assert_eq!(a.get(h2), Some(h2 as u32));
        assert_eq!(a.get(0), None);
        assert_eq!(a.len(), 1);
        let view = b.insert_view(5, |raw, v| (raw, *v));
        assert_eq!(view.1, 5);
        assert_eq!(a.with_mut(view.0, |v| *v), None, "a handle of another table");
        assert_eq!(b.with_mut(view.0, |v| std::mem::replace(v, 6)), Some(5));
        assert_eq!(b.get(view.0), Some(6));
        assert_eq!(a.with_mut_remove_if(view.0, |_| ((), true)), None, "a handle of another table");
        assert_eq!(b.with_mut_remove_if(view.0, |v| (*v, false)), Some((6, None)), "kept");
        assert_eq!(b.with_mut_remove_if(view.0, |v| (*v + 1, true)), Some((7, Some(6))), "removed");
        assert_eq!(b.get(view.0), None);
        assert!(b.is_empty());
    }
}
