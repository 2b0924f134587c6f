//! Batched writes: one op for several attributes, validated whole before it
//! is queued; owned input buffers are released exactly once, accepted or
//! rejected.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use ovstage::{AttributeWrite, DType, HostBytes, OrdinalRange, PrimMode, Status, Tensor, WriteData};

/// Bytes that count how often they are dropped.
struct Counted {
    bytes: Vec<u8>,
    drops: Arc<AtomicUsize>,
}

impl HostBytes for Counted {
    fn host_bytes(&self) -> &[u8] {
        &self.bytes
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

fn entry<'a>(attr: &'a str, values: &[f32], drops: &Arc<AtomicUsize>) -> AttributeWrite<'a> {
    let bytes = bytemuck::cast_slice::<f32, u8>(values).to_vec();
    let data = Counted { bytes, drops: drops.clone() };
    let tensor = Tensor::new(data, DType::F32, &[values.len() as u64]).unwrap();
    AttributeWrite { attribute: attr.into(), data: WriteData::fixed(tensor) }
}

#[test]
fn one_op_for_several_attributes() {
    let s = stage(2);
    let q = query(&s, &["/A", "/B"]);
    let drops = Arc::new(AtomicUsize::new(0));
    let op = s
        .write_attributes(q, vec![entry("x", &[1., 2.], &drops), entry("y", &[3., 4.], &drops)], 1u64, PrimMode::Upsert)
        .unwrap();
    wait(&s, op);
    assert_eq!(drops.load(Ordering::SeqCst), 2, "each buffer released once the op ran");
    wait(&s, seal(&s, 1));
    assert_eq!(read_f32(&s, q, "y", OrdinalRange::LATEST).unwrap().0, vec![(0, vec![3.]), (1, vec![4.])]);
}

#[test]
fn rejected_batches_release_their_buffers_once() {
    let s = stage(2);
    let q = query(&s, &["/A", "/B"]);
    let drops = Arc::new(AtomicUsize::new(0));
    // Rejected during validation: the same attribute twice.
    let err = s
        .write_attributes(q, vec![entry("x", &[1., 2.], &drops), entry("x", &[3., 4.], &drops)], 1u64, PrimMode::Upsert)
        .unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert_eq!(drops.load(Ordering::SeqCst), 2);
    // Rejected by a bad entry after a good one.
    let err = s
        .write_attributes(q, vec![entry("x", &[1., 2.], &drops), entry("y", &[3.], &drops)], 1u64, PrimMode::Upsert)
        .unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert_eq!(drops.load(Ordering::SeqCst), 4);
    // Rejected at the floor, under the ordering lock.
    wait(&s, seal(&s, 5));
    let err = s
        .write_attributes(q, vec![entry("x", &[1., 2.], &drops), entry("y", &[3., 4.], &drops)], 5u64, PrimMode::Upsert)
        .unwrap_err();
    assert_eq!(err.status(), Status::WriteFloorViolation);
    assert_eq!(drops.load(Ordering::SeqCst), 6);
}
