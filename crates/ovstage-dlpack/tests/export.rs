//! Read and map groups exported as DLPack: borrowed descriptors, versioned
//! and legacy managed tensors. Checked: shape, strides, dtype, device, the
//! data pointer is the store's (zero-copy), flags and version, and every
//! deleter drops its owner exactly once.

use std::borrow::{Borrow, BorrowMut};
use std::sync::atomic::{AtomicUsize, Ordering};

use ovstage::{
    DType, FloorScope, GroupKind, MapDesc, MapGroup, OrdinalRange, PrimMode, QueryHandle, ReadGroup, Stage,
    StageConfig, Tensor, Timeout, WriteData,
};
use ovstage_dlpack::dlpack::{DLDataType, DLDevice, DLDeviceType, DLTensor};
use ovstage_dlpack::export::{
    legacy_from_view, map_group_legacy, map_group_versioned, read_group_legacy, read_group_versioned,
    versioned_from_view,
};
use ovstage_dlpack::{Flags, MapTensors, ReadTensors};

const CPU: DLDevice = DLDevice { device_type: DLDeviceType(1), device_id: 0 };
const F32: DLDataType = DLDataType { code: 2, bits: 32, lanes: 1 };

fn stage() -> Stage {
    Stage::with_config("dlpack", StageConfig::default().with_lanes(2))
}

fn query(s: &Stage, paths: &[&str]) -> QueryHandle {
    let list = s.paths().create_path_list_from_strings(paths).unwrap();
    let q = s.query_from_path_list(list).unwrap();
    s.paths().release_path_list_reference(list).unwrap();
    q
}

fn done(s: &Stage, op: ovstage::OpId) {
    s.wait_ok(op, Timeout::INFINITE).unwrap();
}

fn groups(s: &Stage, q: QueryHandle, attr: &str, range: OrdinalRange) -> Vec<ReadGroup> {
    let r = s.read_attributes(q, &[attr.into()], range).unwrap();
    let mut out = Vec::new();
    while let Some(g) = s.fetch_read_next(r.handle, Timeout::INFINITE).unwrap() {
        out.push(g);
    }
    done(s, s.release_read(r.handle).unwrap());
    out
}

/// Writes `arr` (f32 pairs) at 1 on the query's three prims: rows of two,
/// zero and one pair.
fn write_three_array_rows(s: &Stage, q: QueryHandle) {
    let rows = vec![
        Tensor::rows(vec![1f32, 1., 2., 2.], 2).unwrap(),
        Tensor::rows(Vec::<f32>::new(), 2).unwrap(),
        Tensor::rows(vec![3f32, 3.], 2).unwrap(),
    ];
    done(s, s.write_attribute(q, "arr", 1, WriteData::array_rows(rows), PrimMode::Upsert).unwrap());
}

/// A stage holding `pos` (f32x3) on /A and /B, sealed at 1.
fn positions() -> (Stage, QueryHandle, ReadGroup) {
    let s = stage();
    let q = query(&s, &["/A", "/B"]);
    let values = Tensor::rows(vec![1f32, 2., 3., 4., 5., 6.], 3).unwrap();
    done(&s, s.write_attribute(q, "pos", 1, WriteData::fixed(values), PrimMode::Upsert).unwrap());
    done(&s, s.advance_write_floor(1, FloorScope::All).unwrap());
    let mut g = groups(&s, q, "pos", OrdinalRange::LATEST);
    assert_eq!(g.len(), 1);
    (s, q, g.pop().unwrap())
}

/// The shape, strides and values of a host f32 descriptor.
fn read_f32(t: &DLTensor) -> (Vec<i64>, Vec<i64>, Vec<f32>) {
    let ndim = t.ndim as usize;
    // SAFETY: the descriptors under test have `ndim` shape and stride
    // entries and compact f32 data of their shape's size.
    unsafe {
        let shape = std::slice::from_raw_parts(t.shape, ndim).to_vec();
        let strides = std::slice::from_raw_parts(t.strides, ndim).to_vec();
        let n = shape.iter().product::<i64>() as usize;
        if n == 0 {
            return (shape, strides, Vec::new());
        }
        let data = t.data.cast::<u8>().add(t.byte_offset as usize).cast::<f32>();
        (shape, strides, std::slice::from_raw_parts(data, n).to_vec())
    }
}

#[test]
fn read_groups_lend_zero_copy_descriptors() {
    let (_s, _q, group) = positions();
    let store = group.data().unwrap().as_ptr();
    let held = ReadTensors::new(group);
    assert_eq!(held.tensors().len(), 1);
    let t = &held.tensors()[0];
    assert_eq!((t.device, t.dtype, t.byte_offset), (CPU, F32, 0));
    assert_eq!(t.data.cast_const().cast::<u8>(), store, "the store's memory, not a copy");
    assert_eq!(read_f32(t), (vec![2, 3], vec![3, 1], vec![1., 2., 3., 4., 5., 6.]));
    assert_eq!(held.as_ptr(), t as *const DLTensor);
    assert_eq!(held.into_group().data().unwrap().as_ptr(), store);
}

#[test]
fn read_groups_export_read_only_versioned_tensors_that_outlive_the_group() {
    let (s, _q, group) = positions();
    let store = group.data().unwrap().as_ptr();
    let exported = read_group_versioned(&group, 0).unwrap();
    assert_eq!((exported.version().major, exported.version().minor), (1, 3));
    assert_eq!(exported.flags(), Flags::READ_ONLY);
    // SAFETY: a managed tensor of ours.
    assert_eq!(unsafe { (*exported.as_ptr()).flags }, 1, "DLPACK_FLAG_BITMASK_READ_ONLY");
    let t = exported.tensor();
    assert_eq!((t.device, t.dtype, t.data.cast_const().cast::<u8>()), (CPU, F32, store));
    // The export holds the storage: the group and the stage may go.
    drop(group);
    drop(s);
    assert_eq!(read_f32(exported.tensor()), (vec![2, 3], vec![3, 1], vec![1., 2., 3., 4., 5., 6.]));
    // A consumer takes it over and calls the deleter.
    let raw = exported.into_raw();
    // SAFETY: ours, handed over by `into_raw`; called once.
    unsafe { ((*raw).deleter.unwrap())(raw) };
}

#[test]
fn legacy_exports_describe_the_same_memory() {
    let (_s, _q, group) = positions();
    let legacy = read_group_legacy(&group, 0).unwrap();
    let t = legacy.tensor();
    assert_eq!((t.device, t.dtype, t.data.cast_const().cast::<u8>()), (CPU, F32, group.data().unwrap().as_ptr()));
    assert_eq!(read_f32(t).0, vec![2, 3]);
    // SAFETY: a managed tensor of ours: its context is set.
    assert!(!unsafe { (*legacy.as_ptr()).manager_ctx }.is_null());
    drop(legacy);
    let raw = read_group_legacy(&group, 0).unwrap().into_raw();
    // SAFETY: ours, handed over by `into_raw`; called once.
    unsafe { ((*raw).deleter.unwrap())(raw) };
}

#[test]
fn exports_refuse_missing_tensors() {
    let (s, q, group) = positions();
    let e = read_group_versioned(&group, 1).unwrap_err();
    assert_eq!(e.to_string(), "tensor index 1 is out of range: the group has 1 tensors");
    assert!(read_group_legacy(&group, 7).is_err());
    // A tombstone group has no data.
    done(&s, s.delete_attributes(q, &["pos".into()], 2).unwrap());
    done(&s, s.advance_write_floor(2, FloorScope::All).unwrap());
    let changes = groups(&s, q, "pos", OrdinalRange::changes(2u64, 2u64).unwrap());
    let tomb = changes.iter().find(|g| g.kind() == GroupKind::Tombstones).expect("a tombstone group");
    assert!(ReadTensors::new(tomb.clone()).tensors().is_empty());
    assert!(ReadTensors::new(tomb.clone()).as_ptr().is_null());
    let e = read_group_versioned(tomb, 0).unwrap_err();
    assert!(e.to_string().contains("tombstone"), "{e}");
}

#[test]
fn array_groups_export_one_tensor_per_prim() {
    let s = stage();
    let q = query(&s, &["/A", "/B", "/C"]);
    write_three_array_rows(&s, q);
    done(&s, s.advance_write_floor(1, FloorScope::All).unwrap());
    let group = groups(&s, q, "arr", OrdinalRange::LATEST).pop().unwrap();
    let held = ReadTensors::new(group.clone());
    let data = group.data().unwrap();
    assert_eq!(held.tensors().len(), 3);
    for (i, t) in held.tensors().iter().enumerate() {
        let exported = read_group_versioned(&group, i).unwrap();
        for t in [t, exported.tensor()] {
            assert_eq!((t.device, t.dtype), (CPU, F32));
            assert_eq!(read_f32(t).2, data.tensor(i).values::<f32>().unwrap());
            assert_eq!(read_f32(t).0, data.tensor(i).shape().iter().map(|d| *d as i64).collect::<Vec<_>>());
            if !data.tensor(i).bytes().is_empty() {
                assert_eq!(t.data.cast_const().cast::<u8>(), data.tensor(i).bytes().as_ptr());
            }
        }
    }
    assert_eq!(read_f32(&held.tensors()[0]), (vec![2, 2], vec![2, 1], vec![1., 1., 2., 2.]));
    assert_eq!(read_f32(&held.tensors()[1]).0, vec![0, 2]);
}

/// Many array rows in runs of equal and different lengths, from several
/// write buffers, with matrix elements: every descriptor (data pointer,
/// shape, strides, values) is the group's tensor, however the descriptors
/// share their shape and stride arrays.
#[test]
fn many_array_tensors_describe_each_row() {
    let s = stage();
    let paths: Vec<String> = (0..40).map(|i| format!("/P{i}")).collect();
    let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
    let q = query(&s, &paths);
    let len = |i: usize| [1, 1, 1, 0, 2, 2, 3, 1][i % 8] as usize;
    let rows = |from: usize, to: usize, base: f32| {
        (from..to)
            .map(|i| {
                let values: Vec<f32> = (0..len(i) * 16).map(|k| base + (i * 100 + k) as f32).collect();
                Tensor::new(values, DType::F32, &[len(i) as u64, 4, 4]).unwrap()
            })
            .collect::<Vec<_>>()
    };
    let matrix = |rows| WriteData::array_rows(rows).with_semantic(ovstage::Semantic::Matrix);
    done(&s, s.write_attribute(q, "m", 1, matrix(rows(0, 40, 0.)), PrimMode::Upsert).unwrap());
    // A second buffer for some rows.
    let some = query(&s, &paths[10..25]);
    done(&s, s.write_attribute(some, "m", 2, matrix(rows(10, 25, 0.5)), PrimMode::Upsert).unwrap());
    done(&s, s.advance_write_floor(2, FloorScope::All).unwrap());
    let group = groups(&s, q, "m", OrdinalRange::LATEST).pop().unwrap();
    let data = group.data().unwrap();
    let held = ReadTensors::new(group.clone());
    assert_eq!(held.tensors().len(), 40);
    for (i, t) in held.tensors().iter().enumerate() {
        let want = data.tensor(i);
        let (shape, strides, values) = read_f32(t);
        assert_eq!((t.device, t.dtype, t.byte_offset), (CPU, F32, 0));
        assert_eq!(shape, want.shape().iter().map(|d| *d as i64).collect::<Vec<_>>(), "tensor {i}");
        assert_eq!(shape[0] as usize, len(i), "tensor {i}");
        assert_eq!(strides, want.strides(), "tensor {i}");
        assert_eq!(values, want.values::<f32>().unwrap(), "tensor {i}");
        if !want.bytes().is_empty() {
            assert_eq!(t.data.cast_const().cast::<u8>(), want.bytes().as_ptr(), "tensor {i}: zero-copy");
        }
    }
}

/// A map group whose drop is counted.
#[derive(Debug)]
struct Counted(MapGroup, &'static AtomicUsize);

impl Drop for Counted {
    fn drop(&mut self) {
        self.1.fetch_add(1, Ordering::SeqCst);
    }
}

impl Borrow<MapGroup> for Counted {
    fn borrow(&self) -> &MapGroup {
        &self.0
    }
}

impl BorrowMut<MapGroup> for Counted {
    fn borrow_mut(&mut self) -> &mut MapGroup {
        &mut self.0
    }
}

fn map_group(s: &Stage, q: QueryHandle, ordinal: u64) -> (ovstage::MapHandle, MapGroup) {
    let map = s.map_attribute(q, MapDesc::new("m", DType::F32.with_lanes(3)), ordinal, None).unwrap();
    (map.handle, s.fetch_map_next(map.handle, Timeout::INFINITE).unwrap().unwrap())
}

#[test]
fn map_groups_lend_writable_descriptors_that_commit_in_place() {
    let s = stage();
    let q = query(&s, &["/A", "/B"]);
    let (map, mut group) = map_group(&s, q, 1);
    let buffer = group.bytes_mut().as_ptr();
    let held = MapTensors::new(group);
    let t = held.tensors()[0];
    assert_eq!((t.device, t.dtype, t.data.cast_const().cast::<u8>()), (CPU, F32, buffer));
    assert_eq!(read_f32(&t).0, vec![2, 3]);
    // SAFETY: the map buffer holds 6 writable f32, alive while `held` is.
    unsafe { std::ptr::copy_nonoverlapping([1f32, 2., 3., 4., 5., 6.].as_ptr(), t.data.cast::<f32>(), 6) };
    done(&s, s.unmap_group(map, held.into_group()).unwrap());
    done(&s, s.unmap_attribute(map, []).unwrap());
    done(&s, s.advance_write_floor(1, FloorScope::All).unwrap());
    let read = groups(&s, q, "m", OrdinalRange::LATEST).pop().unwrap();
    assert_eq!(read.data().unwrap().values::<f32>().unwrap(), &[1., 2., 3., 4., 5., 6.]);
    assert_eq!(read.data().unwrap().as_ptr(), buffer, "the descriptors wrote the committed buffer itself");
}

/// An array session's descriptors, one per prim (rows of 2, 0 and 1
/// pairs), point at each prim's bytes in the session's one buffer with
/// the prim's shape and compact strides; writing through them commits.
#[test]
fn array_map_sessions_describe_each_prim() {
    let s = stage();
    let q = query(&s, &["/A", "/B", "/C"]);
    let pairs = MapDesc::new("arr", DType::F32.with_lanes(2));
    let map = s.map_attribute(q, pairs, 2, Some(&[2, 0, 1])).unwrap();
    let mut group = s.fetch_map_next(map.handle, Timeout::INFINITE).unwrap().unwrap();
    let buffer = group.bytes_mut().as_ptr();
    let held = MapTensors::new(group);
    let t = held.tensors();
    assert_eq!(t.len(), 3);
    let described: Vec<_> = t.iter().map(|t| (read_f32(t).0, read_f32(t).1)).collect();
    assert_eq!(described, [(vec![2, 2], vec![2, 1]), (vec![0, 2], vec![2, 1]), (vec![1, 2], vec![2, 1])]);
    assert_eq!(t[0].data.cast_const().cast::<u8>(), buffer);
    assert_eq!(t[2].data.cast_const().cast::<u8>(), buffer.wrapping_add(16), "after the first prim's 2 pairs");
    // SAFETY: the first tensor holds 4 writable f32 and the third 2, alive
    // while `held` is.
    unsafe {
        std::ptr::copy_nonoverlapping([5f32, 6., 7., 8.].as_ptr(), t[0].data.cast::<f32>(), 4);
        std::ptr::copy_nonoverlapping([9f32, 10.].as_ptr(), t[2].data.cast::<f32>(), 2);
    }
    done(&s, s.unmap_group(map.handle, held.into_group()).unwrap());
    done(&s, s.unmap_attribute(map.handle, []).unwrap());
    done(&s, s.advance_write_floor(2, FloorScope::All).unwrap());
    let read = groups(&s, q, "arr", OrdinalRange::LATEST).pop().unwrap();
    let data = read.data().unwrap();
    let values: Vec<Vec<f32>> = (0..3).map(|i| data.tensor(i).values::<f32>().unwrap().to_vec()).collect();
    assert_eq!(values, [vec![5., 6., 7., 8.], vec![], vec![9., 10.]]);
}

#[test]
fn map_exports_are_writable_and_drop_their_owner_once() {
    static DROPS: AtomicUsize = AtomicUsize::new(0);
    let s = stage();
    let q = query(&s, &["/A", "/B"]);
    let (_map, mut group) = map_group(&s, q, 1);
    let buffer = group.bytes_mut().as_ptr();
    // Refused: the owner comes back, not dropped.
    let refused = map_group_versioned(Counted(group, &DROPS), 1).unwrap_err();
    assert!(refused.error.to_string().contains("out of range"), "{}", refused.error);
    assert_eq!(DROPS.load(Ordering::SeqCst), 0);
    let exported = map_group_versioned(refused.owner, 0).unwrap();
    assert_eq!(exported.flags(), Flags::empty(), "map groups are writable");
    let t = exported.tensor();
    assert_eq!((t.device, t.dtype, t.data.cast_const().cast::<u8>()), (CPU, F32, buffer));
    assert_eq!(read_f32(t).0, vec![2, 3]);
    let raw = exported.into_raw();
    assert_eq!(DROPS.load(Ordering::SeqCst), 0, "handed over, not dropped");
    // SAFETY: ours, handed over by `into_raw`; called once.
    unsafe { ((*raw).deleter.unwrap())(raw) };
    assert_eq!(DROPS.load(Ordering::SeqCst), 1);
    // Dropping an export that was never handed over runs the deleter.
    static LEGACY: AtomicUsize = AtomicUsize::new(0);
    let (_map, group) = map_group(&s, q, 2);
    let legacy = map_group_legacy(Counted(group, &LEGACY), 0).unwrap();
    assert_eq!(read_f32(legacy.tensor()).1, vec![3, 1]);
    drop(legacy);
    assert_eq!(LEGACY.load(Ordering::SeqCst), 1);
}

#[test]
fn any_memory_exports_with_its_owner() {
    static DROPS: AtomicUsize = AtomicUsize::new(0);
    struct Owner(Vec<f32>);
    impl Drop for Owner {
        fn drop(&mut self) {
            DROPS.fetch_add(1, Ordering::SeqCst);
        }
    }
    let owner = Owner(vec![1., 2., 3., 4.]);
    let mut shape = [2i64, 2];
    // Strides NULL: compact row-major ones are filled in.
    let view = DLTensor {
        data: owner.0.as_ptr().cast_mut().cast(),
        device: CPU,
        ndim: 2,
        dtype: F32,
        shape: shape.as_mut_ptr(),
        strides: std::ptr::null_mut(),
        byte_offset: 4,
    };
    // SAFETY: `view`'s arrays are readable; the owner keeps the data.
    let exported = unsafe { versioned_from_view(&view, Flags::READ_ONLY | Flags::IS_COPIED, owner) };
    shape = [99, 99];
    assert_eq!(shape[0], 99);
    let t = exported.tensor();
    assert_eq!((t.byte_offset, t.ndim), (0, 2), "the byte offset is folded into the data pointer");
    // SAFETY: 2 shape and 2 stride entries.
    let (shape, strides) =
        unsafe { (std::slice::from_raw_parts(t.shape, 2), std::slice::from_raw_parts(t.strides, 2)) };
    assert_eq!((shape, strides), (&[2i64, 2][..], &[2i64, 1][..]), "copied, not borrowed");
    assert_eq!(exported.flags().bits(), 0b11);
    drop(exported);
    assert_eq!(DROPS.load(Ordering::SeqCst), 1);
    let scalar = DLTensor { ndim: 0, shape: std::ptr::null_mut(), ..view };
    // SAFETY: no shape entries to read; the data is 'static.
    let legacy = unsafe { legacy_from_view(&scalar, ()) };
    assert_eq!(legacy.tensor().ndim, 0);
}

/// With `prepare` installed as the stage's group preparer (as the C
/// library does), each read's job runs it on its groups: an array group
/// arrives carrying its descriptors (a fixed-size group's one descriptor
/// is written at the fetch, beside the group), a clone carries none, and
/// `ReadTensors` hands over descriptors equal to those it builds itself.
#[test]
fn prepared_descriptors_are_built_by_the_read_and_equal_built_ones() {
    let s = stage();
    let built = std::sync::Arc::new(AtomicUsize::new(0));
    let count = built.clone();
    s.set_group_preparer(Box::new(move |g| {
        count.fetch_add(1, Ordering::SeqCst);
        ovstage_dlpack::prepare(g)
    }))
    .unwrap();
    let again = s.set_group_preparer(Box::new(ovstage_dlpack::prepare)).unwrap_err();
    assert_eq!(again.status(), ovstage::Status::InvalidArgument, "{again}");
    let q = query(&s, &["/A", "/B", "/C"]);
    write_three_array_rows(&s, q);
    let fixed = Tensor::rows(vec![1f32, 2., 3., 4., 5., 6.], 2).unwrap();
    done(&s, s.write_attribute(q, "pos", 1, WriteData::fixed(fixed), PrimMode::Upsert).unwrap());
    done(&s, s.advance_write_floor(1, FloorScope::All).unwrap());
    for attr in ["arr", "pos"] {
        let before = built.load(Ordering::SeqCst);
        let group = groups(&s, q, attr, OrdinalRange::LATEST).pop().unwrap();
        assert_eq!(built.load(Ordering::SeqCst), before + 1, "{attr}: the read's job prepared its group");
        assert_eq!(ovstage_dlpack::prepare(&group).is_some(), attr == "arr", "{attr}: built ahead for arrays only");
        let mut copy = group.clone();
        assert!(copy.take_prepared().is_none(), "{attr}: a clone carries no descriptors");
        let own = ReadTensors::new(copy);
        let handed = ReadTensors::new(group);
        assert_eq!(handed.tensors().len(), own.tensors().len(), "{attr}");
        for (i, (a, b)) in handed.tensors().iter().zip(own.tensors()).enumerate() {
            assert_eq!((a.device, a.dtype, a.ndim, a.byte_offset), (b.device, b.dtype, b.ndim, b.byte_offset));
            assert_eq!(read_f32(a), read_f32(b), "{attr}: tensor {i}");
            if !read_f32(a).2.is_empty() {
                assert_eq!(a.data, b.data, "{attr}: tensor {i} points at the store");
            }
        }
        // Taken once: the held group has none left.
        let mut back = handed.into_group();
        assert!(back.take_prepared().is_none(), "{attr}");
    }
}

/// `ReadTensors::fetch` takes each group of a read with its descriptors
/// (prepared by the read for an array group, written beside the group for
/// a fixed-size one): equal to those built from the same group, still
/// valid after the holders move, then END_OF_ITERATION; a released read
/// is an unknown handle.
#[test]
fn fetched_holders_describe_their_groups_and_keep_their_descriptors_when_moved() {
    let s = stage();
    s.set_group_preparer(Box::new(ovstage_dlpack::prepare)).unwrap();
    let q = query(&s, &["/A", "/B", "/C"]);
    write_three_array_rows(&s, q);
    let fixed = Tensor::rows(vec![1f32, 2., 3., 4., 5., 6., 7., 8., 9.], 3).unwrap();
    done(&s, s.write_attribute(q, "pos", 1, WriteData::fixed(fixed), PrimMode::Upsert).unwrap());
    done(&s, s.advance_write_floor(1, FloorScope::All).unwrap());
    let attrs = ["pos".into(), "arr".into()];
    let r = s.read_attributes(q, &attrs, OrdinalRange::LATEST).unwrap();
    let mut held = Vec::new();
    while let Some(h) = ReadTensors::fetch(&s, r.handle, Timeout::INFINITE).unwrap() {
        held.push(h);
    }
    assert_eq!(held.len(), 2, "a group per attribute");
    // Moved again (the holders' boxes do not move).
    let held: Vec<ReadTensors> = held.into_iter().rev().collect();
    for h in held.iter().rev() {
        let own = ReadTensors::new(h.group().clone());
        assert_eq!(h.tensors().len(), own.tensors().len());
        for (i, (a, b)) in h.tensors().iter().zip(own.tensors()).enumerate() {
            assert_eq!((a.device, a.dtype, a.ndim, a.byte_offset), (b.device, b.dtype, b.ndim, b.byte_offset));
            assert_eq!(read_f32(a), read_f32(b), "tensor {i}");
        }
        assert_eq!(h.as_ptr(), &h.tensors()[0] as *const DLTensor);
    }
    let pos = &held[1].tensors()[0];
    assert_eq!(read_f32(pos), (vec![3, 3], vec![3, 1], vec![1., 2., 3., 4., 5., 6., 7., 8., 9.]));
    assert_eq!(pos.data.cast_const().cast::<u8>(), held[1].group().data().unwrap().as_ptr(), "zero-copy");
    assert!(ReadTensors::fetch(&s, r.handle, Timeout::INFINITE).unwrap().is_none(), "END_OF_ITERATION");
    done(&s, s.release_read(r.handle).unwrap());
    let gone = ReadTensors::fetch(&s, r.handle, Timeout::INFINITE).err().expect("a released read");
    assert_eq!(gone.status(), ovstage::Status::InvalidHandle, "{gone}");
}
