//! Handle tables: versioned slot maps whose raw handles are salted per stage
//! and per kind, so a stale handle, a handle of another kind or a handle of
//! another stage is rejected instead of aliasing a live entry.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use slotmap::{DefaultKey, Key, KeyData, SlotMap};

static SALT_COUNTER: AtomicU64 = AtomicU64::new(0x9e37_79b9_7f4a_7c15);

/// A well-mixed 64-bit value, different for every call.
fn next_salt() -> u64 {
    let mut z = SALT_COUNTER.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

pub(crate) struct HandleTable<T> {
    slots: Mutex<SlotMap<DefaultKey, T>>,
    /// XORed into the version half of the raw key. Its lowest version bit is
    /// clear, so encoded versions stay odd and never decode to 0.
    salt: u64,
}

impl<T: Clone> HandleTable<T> {
    pub(crate) fn new() -> HandleTable<T> {
        HandleTable { slots: Mutex::new(SlotMap::new()), salt: (next_salt() & 0xffff_fffe) << 32 }
    }

    fn lock(&self) -> MutexGuard<'_, SlotMap<DefaultKey, T>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn encode(&self, key: DefaultKey) -> u64 {
        key.data().as_ffi() ^ self.salt
    }

    fn decode(&self, raw: u64) -> DefaultKey {
        KeyData::from_ffi(raw ^ self.salt).into()
    }

    /// Inserts the value built for its own raw handle.
    pub(crate) fn insert_with(&self, make: impl FnOnce(u64) -> T) -> u64 {
        let mut slots = self.lock();
        let mut raw = 0;
        slots.insert_with_key(|key| {
            raw = self.encode(key);
            make(raw)
        });
        raw
    }

    pub(crate) fn get(&self, raw: u64) -> Option<T> {
        self.lock().get(self.decode(raw)).cloned()
    }

    pub(crate) fn remove(&self, raw: u64) -> Option<T> {
        self.lock().remove(self.decode(raw))
    }

    pub(crate) fn len(&self) -> usize {
        self.lock().len()
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
    }
}
