//! Every payload says where it lives and how it is laid out, the same way
//! for what a write takes, a read group hands out and a map group lends.

mod common;

use common::*;
use ovstage::{DType, Device, MapDesc, OrdinalRange, Tensor, Timeout};

#[test]
fn tensors_and_groups_describe_device_dtype_shape_and_strides() {
    let s = stage(2);
    let q = query(&s, &["/A", "/B"]);
    let t = Tensor::rows(vec![1f32, 2., 3., 4., 5., 6.], 3).unwrap();
    let d = t.desc();
    assert_eq!(
        (d.device, d.dtype, &d.shape[..], &d.strides[..]),
        (Device::Host, DType::F32.with_lanes(3), &[2u64][..], &[1i64][..])
    );
    wait(&s, write(&s, q, "p", 1, ovstage::WriteData::fixed(t)));
    wait(&s, seal(&s, 1));
    let groups = read_groups(&s, q, "p", OrdinalRange::LATEST).unwrap();
    let data = groups[0].data().unwrap();
    assert_eq!(data.device(), Device::Host);
    let view = data.tensor(0);
    let d = view.desc();
    assert_eq!(
        (d.device, d.dtype, &d.shape[..], &d.strides[..]),
        (Device::Host, DType::F32, &[2u64, 3][..], &[3i64, 1][..])
    );
    assert!(d.is_compact());
    assert_eq!(d.element_count(), Some(6));
    assert_eq!(view.bytes().as_ptr(), data.as_ptr(), "the description is of the store's own bytes");

    let map = s.map_attribute(q, MapDesc::new("w", DType::F64.with_lanes(2)), 2u64, Some(&[3, 1])).unwrap();
    let g = s.fetch_map_next(map.handle, Timeout::INFINITE).unwrap().unwrap();
    assert_eq!(g.device(), Device::Host);
    let d = g.desc(0);
    assert_eq!(
        (d.device, d.dtype, &d.shape[..], &d.strides[..]),
        (Device::Host, DType::F64, &[3u64, 2][..], &[2i64, 1][..])
    );
    assert_eq!(&g.desc(1).shape[..], &[1, 2]);
    wait(&s, s.unmap_attribute(map.handle, [g]).unwrap());
}
