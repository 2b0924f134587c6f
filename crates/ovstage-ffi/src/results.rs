//! Results C holds: fetched read groups, map groups, query and hierarchy
//! results, with the C-side arrays (tensors, shapes, ids) they point into.
//! Each lives in a registry until C releases it; releasing an id the
//! registry does not hold is INVALID_HANDLE, never a double free.

use std::collections::{HashMap, HashSet};
use std::ffi::CString;
use std::sync::{Mutex, MutexGuard, RwLock};

use ovstage_types::{DType, Error, MapHandle, Result};
use smallvec::SmallVec;
use stage::{HandleTable, HierarchyResult, MapGroup, QueryResult, ReadGroup};

use crate::abi::api_types::{ovstage_data_t, ovstage_prim_group_t};
use crate::abi::dlpack::{DLDataType, DLDevice, DLDeviceType, DLTensor};
use crate::abi::ovx_string::ovx_string_or_token_t;
use crate::abi::stage_types::ovstage_hierarchy_item_t;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Values C holds by id: ids are never 0, and are salted per registry (so
/// per instance and per kind of result), so an id from another instance, of
/// another kind or already released is unknown here, never another live
/// entry.
pub(crate) type Registry<T> = HandleTable<T>;

/// The host device.
const CPU: DLDevice = DLDevice { device_type: DLDeviceType(1), device_id: 0 };

pub(crate) fn c_dtype(d: DType) -> DLDataType {
    DLDataType { code: d.code as u8, bits: d.bits, lanes: d.lanes }
}

/// Dimensions of one tensor as `build` collects them: the shape, then the
/// strides.
type Dims = SmallVec<[i64; INLINE_DIMS]>;

/// Shape plus strides entries kept inline for a single tensor (`[n, S, S]`
/// and its strides fit).
const INLINE_DIMS: usize = 8;

/// One DLTensor and the shape and stride arrays it points into, in one
/// allocation (a fixed-size group's single tensor).
struct OneTensor {
    tensor: DLTensor,
    dims: [i64; INLINE_DIMS],
}

/// DLTensors over views, with the shape and stride arrays they point into.
/// A single tensor takes one allocation; more take two (tensors and dims),
/// whatever their count.
enum Tensors {
    None,
    One(Box<OneTensor>),
    Many { tensors: Box<[DLTensor]>, _dims: Box<[i64]> },
}

fn dl_tensor(data: *const u8, dtype: DType, ndim: usize, dims: *mut i64) -> DLTensor {
    DLTensor {
        data: data.cast_mut().cast(),
        device: CPU,
        ndim: ndim as i32,
        dtype: c_dtype(dtype),
        shape: dims,
        // SAFETY: the caller's `dims` holds the shape and then `ndim`
        // strides, so `ndim` is within it.
        strides: unsafe { dims.add(ndim) },
        byte_offset: 0,
    }
}

impl Tensors {
    /// `count` tensors of element type `dtype`; `describe(i, dims)` pushes
    /// tensor `i`'s shape and then its strides onto the empty `dims` and
    /// returns its data pointer.
    fn build(dtype: DType, count: usize, mut describe: impl FnMut(usize, &mut Dims) -> *const u8) -> Tensors {
        let mut scratch = Dims::new();
        match count {
            0 => Tensors::None,
            1 => {
                let data = describe(0, &mut scratch);
                if scratch.len() > INLINE_DIMS {
                    return Tensors::many(dtype, vec![(data, scratch)]);
                }
                let mut one = Box::new(OneTensor {
                    tensor: dl_tensor(data, dtype, 0, std::ptr::null_mut()),
                    dims: [0; INLINE_DIMS],
                });
                one.dims[..scratch.len()].copy_from_slice(&scratch);
                // The box's heap memory never moves, so the pointers into
                // `dims` stay valid as long as it lives.
                let base = one.dims.as_mut_ptr();
                one.tensor = dl_tensor(data, dtype, scratch.len() / 2, base);
                Tensors::One(one)
            }
            n => {
                let mut views = Vec::with_capacity(n);
                for i in 0..n {
                    scratch.clear();
                    let data = describe(i, &mut scratch);
                    views.push((data, scratch.clone()));
                }
                Tensors::many(dtype, views)
            }
        }
    }

    fn many(dtype: DType, views: Vec<(*const u8, Dims)>) -> Tensors {
        let total = views.iter().map(|(_, d)| d.len()).sum();
        let mut dims = Vec::with_capacity(total);
        let mut parts = Vec::with_capacity(views.len());
        for (data, d) in &views {
            parts.push((*data, dims.len(), d.len() / 2));
            dims.extend_from_slice(d);
        }
        let mut dims = dims.into_boxed_slice();
        let base = dims.as_mut_ptr();
        let tensors = parts
            .into_iter()
            // SAFETY: `at + 2 * ndim` is within `dims`, which this value
            // owns and never reallocates.
            .map(|(data, at, ndim)| dl_tensor(data, dtype, ndim, unsafe { base.add(at) }))
            .collect();
        Tensors::Many { tensors, _dims: dims }
    }

    fn as_slice(&self) -> &[DLTensor] {
        match self {
            Tensors::None => &[],
            Tensors::One(one) => std::slice::from_ref(&one.tensor),
            Tensors::Many { tensors, .. } => tensors,
        }
    }

    fn as_ptr(&self) -> *const DLTensor {
        let tensors = self.as_slice();
        if tensors.is_empty() { std::ptr::null() } else { tensors.as_ptr() }
    }

    fn len(&self) -> usize {
        self.as_slice().len()
    }
}

/// Pushes `shape` and its compact row-major strides onto `dims`.
fn push_compact(dims: &mut Dims, shape: &[u64]) {
    dims.extend(shape.iter().map(|d| *d as i64));
    let at = dims.len();
    dims.extend(std::iter::repeat_n(1i64, shape.len()));
    for i in (0..shape.len().saturating_sub(1)).rev() {
        dims[at + i] = dims[at + i + 1] * shape[i + 1] as i64;
    }
}

fn prim_group(p: &stage::PrimGroup) -> ovstage_prim_group_t {
    ovstage_prim_group_t {
        list: p.list.get(),
        offset: p.offset,
        count: p.count,
        index_map: p.index_map.as_ref().map_or(std::ptr::null(), |m| m.as_ptr()),
    }
}

/// A fetched read group and its C arrays.
pub(crate) struct HeldGroup {
    group: ReadGroup,
    tensors: Tensors,
}

// SAFETY: the raw pointers inside point into `group`'s pinned immutable
// storage and into `tensors`' own boxes; neither is tied to a thread.
unsafe impl Send for HeldGroup {}

impl HeldGroup {
    pub(crate) fn new(group: ReadGroup) -> HeldGroup {
        let tensors = match group.data() {
            None => Tensors::None,
            Some(data) => Tensors::build(data.dtype(), data.tensor_count(), |i, dims| {
                let t = data.tensor(i);
                dims.extend(t.shape().iter().map(|d| *d as i64));
                dims.extend_from_slice(t.strides());
                t.bytes().as_ptr()
            }),
        };
        HeldGroup { group, tensors }
    }

    pub(crate) fn into_group(self) -> ReadGroup {
        self.group
    }

    /// The C view of this group under `id`.
    pub(crate) fn view(&self, id: u64) -> crate::abi::api_types::ovstage_read_group_t {
        use crate::abi::CBool;
        let g = &self.group;
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
                tensors: self.tensors.as_ptr(),
                tensor_count: self.tensors.len() as u32,
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

/// A fetched writable map group and its C arrays.
pub(crate) struct HeldMapGroup {
    pub(crate) map: MapHandle,
    group: MapGroup,
    tensors: Tensors,
}

// SAFETY: the raw pointers point into `group`'s buffer (heap memory that
// does not move with the struct) and `tensors`' own boxes.
unsafe impl Send for HeldMapGroup {}

impl HeldMapGroup {
    pub(crate) fn new(map: MapHandle, mut group: MapGroup) -> HeldMapGroup {
        let dtype = group.dtype();
        let n = group.tensor_count();
        let tensors = Tensors::build(dtype, n, |i, dims| {
            push_compact(dims, &group.shape(i));
            group.tensor_bytes_mut(i).as_mut_ptr().cast_const()
        });
        HeldMapGroup { map, group, tensors }
    }

    /// The address C identifies the group by (its tensor array).
    pub(crate) fn key(&self) -> usize {
        self.tensors.as_ptr() as usize
    }

    pub(crate) fn into_group(self) -> MapGroup {
        self.group
    }

    pub(crate) fn view(&self) -> crate::abi::api_types::ovstage_map_group_t {
        let meta = self.group.meta();
        crate::abi::api_types::ovstage_map_group_t {
            prims: prim_group(self.group.prims()),
            data: ovstage_data_t {
                tensors: self.tensors.as_ptr(),
                tensor_count: self.tensors.len() as u32,
                count: self.group.prims().count,
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
            texts.extend(item.paths.iter().map(|p| crate::error::c_string(&text(*p))));
        }
        let paths = texts.iter().map(|t| ovx_string_or_token_t { token: 0, string: crate::error::view(t) }).collect();
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
    /// NUL-terminated token texts handed out by `get_strings_from_tokens`.
    pub(crate) token_texts: RwLock<HashMap<u64, CString>>,
    /// Error messages of dictionary results not released yet.
    pub(crate) dictionary_errors: Mutex<HashSet<usize>>,
}

impl Results {
    /// Keeps a fetched map group; returns its C view.
    pub(crate) fn hold_map_group(&self, held: HeldMapGroup) -> crate::abi::api_types::ovstage_map_group_t {
        let view = held.view();
        lock(&self.map_groups).insert(held.key(), held);
        view
    }

    /// Takes back the map group C identifies by its tensor array.
    pub(crate) fn take_map_group(&self, map: MapHandle, tensors: usize) -> Result<MapGroup> {
        let mut groups = lock(&self.map_groups);
        match groups.get(&tensors) {
            Some(h) if h.map == map => Ok(groups.remove(&tensors).expect("present").into_group()),
            Some(_) => Err(Error::invalid_argument(format!(
                "unmap_group: the group belongs to another map session than {map}"
            ))),
            None => Err(Error::invalid_handle(
                "unmap_group: the group is not an uncommitted group of a map session (already committed, or not from fetch_map_next)",
            )),
        }
    }

    /// Takes back every fetched, uncommitted group of `map`.
    pub(crate) fn take_map_groups(&self, map: MapHandle) -> Vec<MapGroup> {
        let mut groups = lock(&self.map_groups);
        let keys: Vec<usize> = groups.iter().filter(|(_, h)| h.map == map).map(|(k, _)| *k).collect();
        keys.into_iter().filter_map(|k| groups.remove(&k)).map(HeldMapGroup::into_group).collect()
    }

    pub(crate) fn lock_errors(&self) -> MutexGuard<'_, HashSet<usize>> {
        lock(&self.dictionary_errors)
    }
}
