//! Write payloads built by scenarios: host tensors with the descriptors
//! that point into them, and the write's selection fields, each with a
//! short description for the transcript.

use std::ptr::{null, null_mut};

use ovstage_abi::CBool;
use ovstage_abi::api_types::{
    ovstage_attribute_mode_t, ovstage_attribute_semantic_t, ovstage_cuda_sync_t, ovstage_write_data_t,
};
use ovstage_abi::dlpack::{DLDataType, DLDevice, DLDeviceType, DLTensor};

/// One host tensor: 8-byte aligned bytes, shape and optional strides.
pub(crate) struct HostTensor {
    words: Vec<u64>,
    shape: Vec<i64>,
    strides: Option<Vec<i64>>,
    dtype: DLDataType,
    device_type: i32,
}

impl HostTensor {
    fn new(bytes: &[u8], shape: Vec<i64>, dtype: DLDataType) -> HostTensor {
        let mut words = vec![0u64; bytes.len().div_ceil(8).max(1)];
        for (i, b) in bytes.iter().enumerate() {
            words[i / 8] |= u64::from(*b) << (8 * (i % 8));
        }
        HostTensor { words, shape, strides: None, dtype, device_type: 1 }
    }

    fn dl(&mut self) -> DLTensor {
        DLTensor {
            data: self.words.as_mut_ptr().cast(),
            device: DLDevice { device_type: DLDeviceType(self.device_type), device_id: 0 },
            ndim: self.shape.len() as i32,
            dtype: self.dtype,
            shape: self.shape.as_mut_ptr(),
            strides: self.strides.as_mut().map_or(null_mut(), |s| s.as_mut_ptr()),
            byte_offset: 0,
        }
    }
}

const F32: DLDataType = DLDataType { code: 2, bits: 32, lanes: 1 };

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// A write payload: tensors plus selection, semantic and modes.
pub(crate) struct Payload {
    tensors: Vec<HostTensor>,
    descs: Vec<DLTensor>,
    count: u32,
    index_map: Option<Vec<u32>>,
    mask: Option<Vec<u64>>,
    semantic: u32,
    is_array: bool,
    attribute_mode: u32,
    /// What the transcript prints for it.
    pub(crate) desc: String,
}

impl Payload {
    fn of(tensors: Vec<HostTensor>, is_array: bool, desc: String) -> Payload {
        Payload {
            tensors,
            descs: Vec::new(),
            count: 0,
            index_map: None,
            mask: None,
            semantic: 0,
            is_array,
            attribute_mode: 0,
            desc,
        }
    }

    /// One float32 per prim.
    pub(crate) fn f32(values: &[f32]) -> Payload {
        let t = HostTensor::new(&f32_bytes(values), vec![values.len() as i64], F32);
        Payload::of(vec![t], false, format!("f32{values:?}"))
    }

    /// `lanes` float32 per prim, as a `[rows, lanes]` tensor.
    pub(crate) fn f32_rows(values: &[f32], lanes: usize) -> Payload {
        let rows = values.len() / lanes.max(1);
        let t = HostTensor::new(&f32_bytes(values), vec![rows as i64, lanes as i64], F32);
        Payload::of(vec![t], false, format!("f32x{lanes}{values:?}"))
    }

    /// 4x4 float64 matrices, one per prim (a `[prims, 16]` tensor, row-major).
    pub(crate) fn f64_matrices(matrices: &[[f64; 16]], desc: &str) -> Payload {
        let bytes: Vec<u8> = matrices.iter().flatten().flat_map(|v| v.to_le_bytes()).collect();
        let t = HostTensor::new(&bytes, vec![matrices.len() as i64, 16], DLDataType { code: 2, bits: 64, lanes: 1 });
        Payload::of(vec![t], false, desc.to_string())
    }

    /// One float64 per prim.
    pub(crate) fn f64(values: &[f64]) -> Payload {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let t = HostTensor::new(&bytes, vec![values.len() as i64], DLDataType { code: 2, bits: 64, lanes: 1 });
        Payload::of(vec![t], false, format!("f64{values:?}"))
    }

    /// Values of any scalar dtype (`code`, `bits`), given as little-endian
    /// bytes of `count` elements, one per prim.
    pub(crate) fn scalar(code: u8, bits: u8, bytes: &[u8], desc: &str) -> Payload {
        let count = bytes.len() / usize::from(bits / 8).max(1);
        let t = HostTensor::new(bytes, vec![count as i64], DLDataType { code, bits, lanes: 1 });
        Payload::of(vec![t], false, desc.to_string())
    }

    /// Rows of any dtype (`code`, `bits`, `lanes`), given as little-endian
    /// bytes of `rows` rows, as a `[rows]` tensor (`[rows, lanes]` when
    /// `as_2d`).
    pub(crate) fn rows(code: u8, bits: u8, lanes: u16, rows: usize, bytes: &[u8], desc: &str) -> Payload {
        let t = HostTensor::new(bytes, vec![rows as i64], DLDataType { code, bits, lanes });
        Payload::of(vec![t], false, desc.to_string())
    }

    /// Array rows of any scalar dtype: one tensor per prim, each given as
    /// little-endian bytes.
    pub(crate) fn arrays(code: u8, bits: u8, rows: &[Vec<u8>], desc: &str) -> Payload {
        let width = usize::from(bits / 8).max(1);
        let tensors = rows
            .iter()
            .map(|r| HostTensor::new(r, vec![(r.len() / width) as i64], DLDataType { code, bits, lanes: 1 }))
            .collect();
        Payload::of(tensors, true, desc.to_string())
    }

    /// Array rows of float32: one tensor per prim.
    pub(crate) fn f32_arrays(rows: &[&[f32]]) -> Payload {
        let tensors = rows.iter().map(|r| HostTensor::new(&f32_bytes(r), vec![r.len() as i64], F32)).collect();
        Payload::of(tensors, true, format!("arrays{rows:?}"))
    }

    /// Array rows packed in one tensor (the count-based packed form): the
    /// rows back to back, with `count` set to the number of prims.
    pub(crate) fn f32_packed(values: &[f32], prims: u32) -> Payload {
        let t = HostTensor::new(&f32_bytes(values), vec![values.len() as i64], F32);
        let mut p = Payload::of(vec![t], true, format!("packed{values:?}/{prims}"));
        p.count = prims;
        p
    }

    /// No tensor at all.
    pub(crate) fn empty() -> Payload {
        Payload::of(Vec::new(), false, "no tensors".into())
    }

    /// Marks the tensors as device memory of `device_type` (kDLCUDA = 2,
    /// ...).
    pub(crate) fn on_device(mut self, device_type: i32) -> Payload {
        self.tensors.iter_mut().for_each(|t| t.device_type = device_type);
        self.desc += &format!(" device={device_type}");
        self
    }

    /// With explicit strides (in elements) on the first tensor.
    pub(crate) fn strides(mut self, strides: &[i64]) -> Payload {
        self.tensors[0].strides = Some(strides.to_vec());
        self.desc += &format!(" strides={strides:?}");
        self
    }

    /// With the first tensor's shape replaced.
    pub(crate) fn shape(mut self, shape: &[i64]) -> Payload {
        self.tensors[0].shape = shape.to_vec();
        self.desc += &format!(" shape={shape:?}");
        self
    }

    /// With an element count.
    pub(crate) fn count(mut self, count: u32) -> Payload {
        self.count = count;
        self.desc += &format!(" count={count}");
        self
    }

    /// With an index map.
    pub(crate) fn index_map(mut self, map: &[u32]) -> Payload {
        self.index_map = Some(map.to_vec());
        self.desc += &format!(" index_map={map:?}");
        self
    }

    /// With a mask over the first `count` prims.
    pub(crate) fn mask(mut self, count: u32, bits: &[u64]) -> Payload {
        self.mask = Some(bits.to_vec());
        self.count = count;
        self.desc += &format!(" mask={bits:x?}/{count}");
        self
    }

    /// With a semantic.
    pub(crate) fn semantic(mut self, semantic: u32) -> Payload {
        self.semantic = semantic;
        self.desc += &format!(" semantic={semantic}");
        self
    }

    /// With `is_array` set to `is_array` whatever the tensors are.
    pub(crate) fn array_flag(mut self, is_array: bool) -> Payload {
        self.is_array = is_array;
        self.desc += &format!(" is_array={is_array}");
        self
    }

    /// With `ATTRIBUTE_MODE_FORCE` (or another raw mode).
    pub(crate) fn attribute_mode(mut self, mode: u32) -> Payload {
        self.attribute_mode = mode;
        self.desc += &format!(" attribute_mode={mode}");
        self
    }

    /// The C struct, pointing into `self` (valid while `self` is neither
    /// moved nor dropped).
    pub(crate) fn data(&mut self) -> ovstage_write_data_t {
        self.descs = self.tensors.iter_mut().map(HostTensor::dl).collect();
        ovstage_write_data_t {
            tensors: if self.descs.is_empty() { null() } else { self.descs.as_ptr() },
            managed_tensors: null(),
            tensor_count: self.descs.len() as u32,
            count: self.count,
            index_map: self.index_map.as_ref().map_or(null(), |m| m.as_ptr()),
            mask: self.mask.as_ref().map_or(null(), |m| m.as_ptr()),
            cuda_sync: ovstage_cuda_sync_t::default(),
            semantic: ovstage_attribute_semantic_t(self.semantic),
            is_array: CBool::from(self.is_array),
            attribute_mode: ovstage_attribute_mode_t(self.attribute_mode),
        }
    }
}
