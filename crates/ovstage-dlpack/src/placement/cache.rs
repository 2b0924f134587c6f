//! Device copies of read groups kept for later placed reads: a read placed
//! on a device whose groups come from an image already copied there points
//! at that copy instead of uploading again (the common case of a GPU
//! consumer reading a column that has not changed since its last read).
//!
//! Keys are the group's image ([`ImageIdentity`], which no later image can
//! share) and the exact parts copied (address and length of each), per
//! device; images are immutable, so a copy keyed by a live image is never
//! stale, and one keyed by a dead image is never asked for again. Copies
//! are dropped least recently used first once they exceed the byte budget
//! (`OVSTAGE_DEVICE_CACHE_MB`, default 256, read once; 0 disables), and
//! dead images' copies every 64 inserts or when the budget is reached. A
//! dropped copy's memory lives on while groups still point at it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use ovstage::ImageIdentity;

/// A cache of `V` (a device copy) by device, image and parts.
pub(crate) struct Cache<V> {
    budget: usize,
    inner: Mutex<Inner<V>>,
}

struct Inner<V> {
    entries: HashMap<Key, Entry<V>>,
    bytes: usize,
    clock: u64,
    /// Inserts since dead images' copies were last dropped.
    since_sweep: u32,
}

/// Dead images' copies are dropped every this many inserts (or when the
/// budget is reached), not on every insert: a read of many groups inserts
/// many copies.
const SWEEP_EVERY: u32 = 64;

/// Device, image address, first part's address.
type Key = (u32, usize, usize);

struct Entry<V> {
    image: ImageIdentity,
    parts: Vec<(usize, usize)>,
    bytes: usize,
    last_use: u64,
    value: Arc<V>,
}

/// The parts of a copy: each one's address and length.
pub(crate) fn parts_of(parts: &[&[u8]]) -> Vec<(usize, usize)> {
    parts.iter().map(|p| (p.as_ptr() as usize, p.len())).collect()
}

fn key(device: u32, image: &ImageIdentity, parts: &[(usize, usize)]) -> Key {
    (device, image.addr(), parts.first().map_or(0, |p| p.0))
}

impl<V> Cache<V> {
    pub(crate) fn new(budget: usize) -> Cache<V> {
        Cache { budget, inner: Mutex::new(Inner { entries: HashMap::new(), bytes: 0, clock: 0, since_sweep: 0 }) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner<V>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The copy of exactly `parts` of `image` on `device`, if one is kept.
    pub(crate) fn get(&self, device: u32, image: &ImageIdentity, parts: &[(usize, usize)]) -> Option<Arc<V>> {
        if self.budget == 0 {
            return None;
        }
        let mut inner = self.lock();
        inner.clock += 1;
        let now = inner.clock;
        let e = inner.entries.get_mut(&key(device, image, parts))?;
        if !e.image.same(image) || !e.image.is_live() || e.parts != parts {
            return None;
        }
        e.last_use = now;
        Some(e.value.clone())
    }

    /// Keeps `value`, a copy of `parts` of `image` on `device` (`bytes` of
    /// device memory), dropping dead images' copies and then the least
    /// recently used ones to stay within the budget. A copy larger than
    /// the whole budget is not kept.
    pub(crate) fn insert(
        &self,
        device: u32,
        image: &ImageIdentity,
        parts: Vec<(usize, usize)>,
        bytes: usize,
        value: Arc<V>,
    ) {
        if bytes > self.budget {
            return;
        }
        let mut inner = self.lock();
        inner.since_sweep += 1;
        if inner.since_sweep >= SWEEP_EVERY || inner.bytes + bytes > self.budget {
            inner.since_sweep = 0;
            let mut freed = 0;
            inner.entries.retain(|_, e| {
                let live = e.image.is_live();
                if !live {
                    freed += e.bytes;
                }
                live
            });
            inner.bytes -= freed;
        }
        let k = key(device, image, &parts);
        if let Some(old) = inner.entries.remove(&k) {
            inner.bytes -= old.bytes;
        }
        while inner.bytes + bytes > self.budget {
            let Some(oldest) = inner.entries.iter().min_by_key(|(_, e)| e.last_use).map(|(k, _)| *k) else { break };
            let e = inner.entries.remove(&oldest).expect("present");
            inner.bytes -= e.bytes;
        }
        inner.clock += 1;
        let last_use = inner.clock;
        inner.bytes += bytes;
        inner.entries.insert(k, Entry { image: image.clone(), parts, bytes, last_use, value });
    }

    /// Bytes kept.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.lock().bytes
    }
}

/// The process's cache of placed reads' device copies.
pub(crate) fn device_copies() -> &'static Cache<ovstage_backend_cuda::placement::DeviceCopy> {
    static CACHE: OnceLock<Cache<ovstage_backend_cuda::placement::DeviceCopy>> = OnceLock::new();
    CACHE.get_or_init(|| {
        let mb = std::env::var("OVSTAGE_DEVICE_CACHE_MB").ok().and_then(|v| v.trim().parse::<usize>().ok());
        Cache::new(mb.unwrap_or(256).saturating_mul(1 << 20))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ovstage::{OrdinalRange, PrimMode, Stage, StageConfig, Tensor, Timeout, WriteData};

    /// A stage with one column "x" over two prims, and a reader of its
    /// latest group's data (image identity and value bytes).
    struct Column {
        stage: Stage,
        query: ovstage::QueryHandle,
        ordinal: u64,
    }

    impl Column {
        fn new() -> Column {
            let stage = Stage::with_config("cache", StageConfig::default().with_lanes(1));
            let list = stage.paths().create_path_list_from_strings(&["/A", "/B"]).unwrap();
            let query = stage.query_from_path_list(list).unwrap();
            let mut c = Column { stage, query, ordinal: 0 };
            c.write(1.0);
            c
        }

        fn write(&mut self, v: f32) {
            self.ordinal += 1;
            let data = WriteData::fixed(Tensor::rows(vec![v, v], 1).unwrap());
            let op = self.stage.write_attribute(self.query, "x", self.ordinal, data, PrimMode::Upsert).unwrap();
            self.stage.wait_ok(op, Timeout::INFINITE).unwrap();
            let seal = self.stage.advance_write_floor(self.ordinal, ovstage::FloorScope::All).unwrap();
            self.stage.wait_ok(seal, Timeout::INFINITE).unwrap();
        }

        fn group(&self) -> ovstage::ReadGroup {
            let r =
                self.stage.read_attributes(self.query, &["x".into()], OrdinalRange::snapshot(self.ordinal)).unwrap();
            self.stage.fetch_read_next(r.handle, Timeout::INFINITE).unwrap().unwrap()
        }
    }

    fn parts(g: &ovstage::ReadGroup) -> Vec<(usize, usize)> {
        parts_of(&[g.data().unwrap().bytes()])
    }

    #[test]
    fn a_copy_is_found_for_the_same_image_and_parts_only() {
        let mut col = Column::new();
        let cache = Cache::<u32>::new(1 << 20);
        let g = col.group();
        let id = g.data().unwrap().image_identity();
        assert!(cache.get(0, &id, &parts(&g)).is_none());
        cache.insert(0, &id, parts(&g), 8, Arc::new(7));
        assert_eq!(cache.get(0, &id, &parts(&g)).as_deref(), Some(&7));
        // Another read of the unchanged column: the same image.
        let again = col.group();
        assert_eq!(cache.get(0, &again.data().unwrap().image_identity(), &parts(&again)).as_deref(), Some(&7));
        // Another device, other parts: not found.
        assert!(cache.get(1, &id, &parts(&g)).is_none());
        assert!(cache.get(0, &id, &[(parts(&g)[0].0, 4)]).is_none());
        // A new version is a new image.
        col.write(2.0);
        let newer = col.group();
        assert!(cache.get(0, &newer.data().unwrap().image_identity(), &parts(&newer)).is_none());
    }

    #[test]
    fn the_budget_drops_the_least_recently_used_and_dead_images() {
        let cols: Vec<Column> = (0..3).map(|_| Column::new()).collect();
        let groups: Vec<_> = cols.iter().map(Column::group).collect();
        let ids: Vec<_> = groups.iter().map(|g| g.data().unwrap().image_identity()).collect();
        let cache = Cache::<usize>::new(100);
        cache.insert(0, &ids[0], parts(&groups[0]), 40, Arc::new(0));
        cache.insert(0, &ids[1], parts(&groups[1]), 40, Arc::new(1));
        // Using 0 makes 1 the least recently used: it goes for 2.
        assert!(cache.get(0, &ids[0], &parts(&groups[0])).is_some());
        cache.insert(0, &ids[2], parts(&groups[2]), 40, Arc::new(2));
        assert!(cache.get(0, &ids[1], &parts(&groups[1])).is_none());
        assert!(cache.get(0, &ids[0], &parts(&groups[0])).is_some());
        assert_eq!(cache.bytes(), 80);
        // Larger than the budget: not kept.
        cache.insert(0, &ids[1], parts(&groups[1]), 101, Arc::new(9));
        assert!(cache.get(0, &ids[1], &parts(&groups[1])).is_none());
        // Once nothing holds image 0 (its stage and groups gone), its copy
        // is dropped when the budget is reached, before any live one.
        let p0 = parts(&groups[0]);
        let mut cols = cols;
        let mut groups = groups;
        drop(groups.remove(0));
        drop(cols.remove(0));
        assert!(!ids[0].is_live());
        assert!(cache.get(0, &ids[0], &p0).is_none());
        cache.insert(0, &ids[1], parts(&groups[0]), 25, Arc::new(1));
        assert_eq!(cache.bytes(), 65, "image 0's 40 bytes went; image 2's stayed");
        assert!(cache.get(0, &ids[2], &parts(&groups[1])).is_some());
    }
}
