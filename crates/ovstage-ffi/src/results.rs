//! Results C holds: fetched read groups, map groups, query and hierarchy
//! results, with the C-side arrays (tensors, shapes, ids) they point into.
//! Each lives in a registry until C releases it; releasing an id the
//! registry does not hold is INVALID_HANDLE, never a double free.

use std::collections::{HashMap, HashSet};
use std::ffi::{CString, c_char};
use std::sync::{Mutex, RwLock};

use ovstage_dlpack::{MapTensors, ReadTensors};
use ovstage_types::{Error, MapHandle, Result};
use stage::{HandleTable, HierarchyResult, MapGroup, QueryResult};

use crate::abi::api_types::{ovstage_data_t, ovstage_prim_group_t};
use crate::abi::ovx_string::ovx_string_or_token_t;
use crate::abi::stage_types::ovstage_hierarchy_item_t;
use crate::sync::lock;

/// Values C holds by id: ids are never 0, and are salted per registry (so
/// per instance and per kind of result), so an id from another instance, of
/// another kind or already released is unknown here, never another live
/// entry.
pub(crate) type Registry<T> = HandleTable<T>;

fn prim_group(p: &stage::PrimGroup) -> ovstage_prim_group_t {
    ovstage_prim_group_t {
        list: p.list.get(),
        offset: p.offset,
        count: p.count,
        index_map: p.index_map.as_ref().map_or(std::ptr::null(), |m| m.as_ptr()),
    }
}

/// A fetched read group and its C arrays (the group's tensors as
/// `DLTensor`s).
pub(crate) struct HeldGroup(ReadTensors);

impl HeldGroup {
    pub(crate) fn new(tensors: ReadTensors) -> HeldGroup {
        HeldGroup(tensors)
    }

    /// The C view of this group under `id`.
    pub(crate) fn view(&self, id: u64) -> crate::abi::api_types::ovstage_read_group_t {
        use crate::abi::CBool;
        let g = self.0.group();
        // `count` is the logical element count. The contract requires it only
        // with an index map, but the published library always fills it for
        // value groups and bindings read it; tombstone groups carry no data.
        let (index_map, count) = match (g.data(), g.data().and_then(|d| d.index_map())) {
            (_, Some(m)) => (m.as_ptr(), m.len() as u32),
            (Some(_), None) => (std::ptr::null(), g.prims().count),
            (None, None) => (std::ptr::null(), 0),
        };
        crate::abi::api_types::ovstage_read_group_t {
            read_group_id: id,
            attribute: g.attribute().get(),
            ordinal: g.ordinal().get(),
            is_delete: CBool::from(g.is_delete()),
            is_array: CBool::from(g.is_array()),
            semantic: crate::abi::api_types::ovstage_attribute_semantic_t(g.semantic() as u32),
            prims: prim_group(g.prims()),
            data: ovstage_data_t {
                tensors: self.0.as_ptr(),
                tensor_count: self.0.tensors().len() as u32,
                count,
                index_map,
                mask: std::ptr::null(),
                cuda_sync: Default::default(),
            },
            meta: crate::abi::api_types::ovstage_attribute_meta_t {
                attribute_write_floor_ordinal: g.meta().write_floor.get(),
                layout_generation: g.meta().layout_generation,
            },
        }
    }
}

/// The placed map sessions of an instance. `any` keeps unplaced sessions'
/// calls off the lock: it is set by the first placed session and never
/// cleared.
#[derive(Default)]
pub(crate) struct PlacedMaps {
    any: std::sync::atomic::AtomicBool,
    sessions: Mutex<HashMap<u64, PlacedMap>>,
}

pub(crate) use ovstage_dlpack::placement::PlacedMap;

impl PlacedMaps {
    pub(crate) fn insert(&self, map: MapHandle, placed: PlacedMap) {
        self.any.store(true, std::sync::atomic::Ordering::Release);
        lock(&self.sessions).insert(map.get(), placed);
    }

    pub(crate) fn get(&self, map: MapHandle) -> Option<PlacedMap> {
        if !self.any.load(std::sync::atomic::Ordering::Acquire) {
            return None;
        }
        lock(&self.sessions).get(&map.get()).copied()
    }

    pub(crate) fn remove(&self, map: MapHandle) -> Option<PlacedMap> {
        if !self.any.load(std::sync::atomic::Ordering::Acquire) {
            return None;
        }
        lock(&self.sessions).remove(&map.get())
    }
}

/// A fetched writable map group and its C arrays.
pub(crate) struct HeldMapGroup {
    pub(crate) map: MapHandle,
    tensors: MapTensors,
}

impl HeldMapGroup {
    pub(crate) fn new(map: MapHandle, group: MapGroup) -> HeldMapGroup {
        HeldMapGroup { map, tensors: MapTensors::new(group) }
    }

    /// A group of a session mapped on a device, over its device copy.
    pub(crate) fn on_device(map: MapHandle, tensors: MapTensors) -> HeldMapGroup {
        HeldMapGroup { map, tensors }
    }

    /// Brings a device session's buffer back before the commit.
    pub(crate) fn download(&mut self) -> std::result::Result<(), ovstage_backend_cuda::staging::StageError> {
        self.tensors.download()
    }

    /// The address C identifies the group by (its tensor array).
    pub(crate) fn key(&self) -> usize {
        self.tensors.as_ptr() as usize
    }

    pub(crate) fn into_group(self) -> MapGroup {
        self.tensors.into_group()
    }

    pub(crate) fn view(&self) -> crate::abi::api_types::ovstage_map_group_t {
        let group = self.tensors.group();
        let meta = group.meta();
        crate::abi::api_types::ovstage_map_group_t {
            prims: prim_group(group.prims()),
            data: ovstage_data_t {
                tensors: self.tensors.as_ptr(),
                tensor_count: self.tensors.tensors().len() as u32,
                count: group.prims().count,
                index_map: std::ptr::null(),
                mask: std::ptr::null(),
                cuda_sync: Default::default(),
            },
            meta: crate::abi::api_types::ovstage_attribute_meta_t {
                attribute_write_floor_ordinal: meta.write_floor.get(),
                layout_generation: meta.layout_generation,
            },
        }
    }
}

/// A fetched query result and its attribute token array.
pub(crate) struct HeldQueryResult {
    pub(crate) result: QueryResult,
    pub(crate) attributes: Box<[u64]>,
}

/// A fetched hierarchy result and its C arrays.
pub(crate) struct HeldHierarchy {
    pub(crate) ordinal: u64,
    pub(crate) items: Box<[ovstage_hierarchy_item_t]>,
    pub(crate) paths: Box<[ovx_string_or_token_t]>,
    _texts: Vec<CString>,
}

// SAFETY: the path views point into `_texts`, owned by the struct.
unsafe impl Send for HeldHierarchy {}

impl HeldHierarchy {
    pub(crate) fn new(result: &HierarchyResult, text: impl Fn(ovstage_types::PrimPath) -> String) -> HeldHierarchy {
        let mut texts = Vec::new();
        let mut items = Vec::with_capacity(result.items.len());
        for item in &result.items {
            items.push(ovstage_hierarchy_item_t {
                status: crate::error::c_status(item.status),
                path_offset: texts.len(),
                path_count: item.paths.len(),
            });
            texts.extend(item.paths.iter().map(|p| crate::strings::c_string(&text(*p))));
        }
        let paths = texts.iter().map(|t| ovx_string_or_token_t { token: 0, string: crate::strings::view(t) }).collect();
        HeldHierarchy { ordinal: result.ordinal.get(), items: items.into_boxed_slice(), paths, _texts: texts }
    }
}

/// Everything an instance holds for C.
#[derive(Default)]
pub(crate) struct Results {
    pub(crate) groups: Registry<HeldGroup>,
    pub(crate) query_results: Registry<HeldQueryResult>,
    pub(crate) hierarchies: Registry<HeldHierarchy>,
    /// Fetched, uncommitted map groups by the address of their tensors.
    pub(crate) map_groups: Mutex<HashMap<usize, HeldMapGroup>>,
    /// Map sessions with a placement (a CUDA device or an availability
    /// event), by raw map handle, until `unmap_attribute` ends them.
    pub(crate) map_placements: PlacedMaps,
    /// NUL-terminated token texts handed out by `get_strings_from_tokens`.
    pub(crate) token_texts: RwLock<HashMap<u64, CString>>,
    /// Error messages of dictionary results not released yet (from
    /// `CString::into_raw`; freed when released, or when this is dropped).
    dictionary_errors: Mutex<HashSet<usize>>,
}

impl Results {
    /// Keeps a fetched map group; returns its C view.
    pub(crate) fn hold_map_group(&self, held: HeldMapGroup) -> crate::abi::api_types::ovstage_map_group_t {
        let view = held.view();
        lock(&self.map_groups).insert(held.key(), held);
        view
    }

    /// Takes back the map group C identifies by its tensor array.
    pub(crate) fn take_map_group(&self, map: MapHandle, tensors: usize) -> Result<HeldMapGroup> {
        let mut groups = lock(&self.map_groups);
        match groups.get(&tensors) {
            Some(h) if h.map == map => Ok(groups.remove(&tensors).expect("present")),
            Some(_) => Err(Error::invalid_argument(format!(
                "unmap_group: the group belongs to another map session than {map}"
            ))),
            None => Err(Error::invalid_handle(
                "unmap_group: the group is not an uncommitted group of a map session (already committed, or not from fetch_map_next)",
            )),
        }
    }

    /// Takes back every fetched, uncommitted group of `map`.
    pub(crate) fn take_map_groups(&self, map: MapHandle) -> Vec<HeldMapGroup> {
        let mut groups = lock(&self.map_groups);
        let keys: Vec<usize> = groups.iter().filter(|(_, h)| h.map == map).map(|(k, _)| *k).collect();
        keys.into_iter().filter_map(|k| groups.remove(&k)).collect()
    }

    /// Keeps a dictionary error message for C until it is released;
    /// returns its address.
    pub(crate) fn hold_error(&self, text: CString) -> *const c_char {
        let raw = text.into_raw();
        lock(&self.dictionary_errors).insert(raw as usize);
        raw
    }

    /// Frees a message `hold_error` handed out; false (nothing freed) for
    /// any other pointer.
    pub(crate) fn release_error(&self, ptr: *const c_char) -> bool {
        if !lock(&self.dictionary_errors).remove(&(ptr as usize)) {
            return false;
        }
        // SAFETY: the pointer came from `CString::into_raw` in
        // `hold_error` and was tracked until now, so it is freed once.
        drop(unsafe { CString::from_raw(ptr.cast_mut()) });
        true
    }
}

impl Drop for Results {
    /// Frees the dictionary error messages C never released.
    fn drop(&mut self) {
        let errors = self.dictionary_errors.get_mut().unwrap_or_else(|e| e.into_inner());
        for ptr in errors.drain() {
            // SAFETY: every tracked pointer came from `CString::into_raw`
            // and is freed once, here or in `release_error`.
            drop(unsafe { CString::from_raw(ptr as *mut c_char) });
        }
    }
}
