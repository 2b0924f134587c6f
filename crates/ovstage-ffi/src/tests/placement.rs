//! The `ovstage.placement` extension on a machine without a CUDA driver:
//! the table is there; no placement, the unspecified device and the host
//! are the unplaced calls; CUDA placements, availability events and
//! device-staged maps answer the statuses the README lists. (With the
//! fake driver: `xtask/ctests/cuda_placement.c`.)

use std::ffi::c_void;

use super::*;
use crate::abi::placement::{ovstage_placement_extension_v1_t, ovstage_placement_t};

fn table(i: &Inst) -> &'static ovstage_placement_extension_v1_t {
    let mut table: *const c_void = std::ptr::null();
    // SAFETY: live instance, valid name and output.
    let st = unsafe { (i.vt().query_extension.unwrap())(i.ctx(), c"ovstage.placement".as_ptr(), &mut table) };
    assert_eq!(st.0, OK, "{}", last_error());
    // SAFETY: the library's static table.
    unsafe { &*table.cast::<ovstage_placement_extension_v1_t>() }
}

fn placement(device_type: i32, device_id: i32, stream: usize, event: usize) -> ovstage_placement_t {
    ovstage_placement_t {
        device: DLDevice { device_type: DLDeviceType(device_type), device_id },
        stream,
        availability_event: event,
    }
}

fn write(
    i: &Inst,
    q: u64,
    name: &str,
    ordinal: u64,
    values: &[f32],
    p: *const ovstage_placement_t,
) -> ovstage_enqueue_result_t {
    let mut shape = [values.len() as i64];
    let t = f32_tensor(values, &mut shape, 1);
    // SAFETY: live instance; the tensor outlives the op (callers wait).
    unsafe {
        (table(i).write_attribute_on_device.unwrap())(
            i.ctx(),
            q,
            attr(name),
            ordinal,
            write_data(&t),
            ovstage_prim_mode_t(0),
            p,
        )
    }
}

fn read(i: &Inst, q: u64, name: &str, p: *const ovstage_placement_t) -> Result<Vec<ReadOut>, (u32, String)> {
    let tokens = i.tokens(&[name]);
    let mut handle = u64::MAX;
    // SAFETY: live instance, valid arrays and output.
    let r = unsafe {
        (table(i).read_attributes_on_device.unwrap())(i.ctx(), q, tokens.as_ptr(), 1, LATEST, p, &mut handle)
    };
    if r.status.0 != OK {
        assert_eq!(handle, 0, "a rejected read leaves the invalid handle");
        return Err((r.status.0, last_error()));
    }
    i.fetch_all(handle)
}

fn map(i: &Inst, q: u64, name: &str, p: *const ovstage_placement_t) -> (u32, String) {
    // SAFETY: a zeroed desc is "infer everything".
    let mut desc: ovstage_map_desc_t = unsafe { std::mem::zeroed() };
    desc.attribute = attr(name);
    let mut handle = u64::MAX;
    // SAFETY: live instance, valid desc and output.
    let r = unsafe {
        (table(i).map_attribute_on_device.unwrap())(i.ctx(), q, &desc, 50, std::ptr::null(), 0, p, &mut handle)
    };
    if r.status.0 == OK {
        i.done(r);
        return (OK, String::new());
    }
    assert_eq!(handle, 0, "a rejected map leaves the invalid handle");
    (r.status.0, last_error())
}

#[test]
fn query_extension_returns_the_revision_1_table() {
    let _g = shared();
    let i = Inst::new();
    let t = table(&i);
    assert_eq!(t.header.version, 1);
    assert_eq!(t.header.struct_size as usize, size_of::<ovstage_placement_extension_v1_t>());
    assert_eq!(t.header.struct_size, 40);
    assert!(t.write_attribute_on_device.is_some() && t.write_attributes_on_device.is_some());
    assert!(t.map_attribute_on_device.is_some() && t.read_attributes_on_device.is_some());
    // The same table for every instance.
    let other = Inst::new();
    assert!(std::ptr::eq(t, table(&other)));
}

#[test]
fn no_placement_the_unspecified_device_and_the_host_are_the_unplaced_calls() {
    let _g = shared();
    let i = Inst::new();
    let q = i.query(&["/A", "/B"]);
    // A stream without an event carries no work: still the unplaced call
    // (and no driver is asked).
    let unspecified = placement(0, 0, 0, 0);
    let host = placement(1, 0, 0x77, 0);
    let cases: [(&str, *const ovstage_placement_t); 3] =
        [("none", std::ptr::null()), ("unspecified", &unspecified), ("host", &host)];
    for (k, (name, p)) in cases.iter().enumerate() {
        let values = [k as f32, 10.0 + k as f32];
        i.done(write(&i, q, name, 1, &values, *p));
    }
    i.seal(1);
    for (k, (name, p)) in cases.iter().enumerate() {
        let placed = read(&i, q, name, *p).unwrap();
        assert_eq!(placed.len(), 1);
        assert_eq!(placed[0].rows, [vec![k as f32], vec![10.0 + k as f32]], "{name}");
        let plain = i.read_f32(q, &[name], LATEST).unwrap();
        assert_eq!(plain[0].rows, placed[0].rows, "{name}");
    }
    assert_eq!(map(&i, q, "host", &host).0, OK);
}

#[test]
fn placements_refused_without_a_driver_and_what_is_not_supported() {
    if ovstage_backend_cuda::probe_device(0).is_ok() {
        println!("SKIP: this machine has a CUDA device (the fake-driver and GPU checks cover placements there)");
        return;
    }
    let _g = shared();
    let i = Inst::new();
    let q = i.query(&["/A"]);
    i.done(write(&i, q, "x", 1, &[1.0], std::ptr::null()));
    i.seal(1);
    let mut report = String::new();
    let cases = [
        ("kDLCUDA 0", placement(2, 0, 0, 0)),
        ("kDLCUDA -1", placement(2, -1, 0, 0)),
        ("kDLCPU 2", placement(1, 2, 0, 0)),
        ("unspecified type, id 3", placement(0, 3, 0, 0)),
        ("kDLCUDAHost", placement(3, 0, 0, 0)),
        ("kDLCUDAManaged", placement(13, 0, 0, 0)),
        ("type 99", placement(99, 0, 0, 0)),
        ("host with an event", placement(1, 0, 0, 0xE1)),
        ("unspecified with an event", placement(0, 0, 0, 0xE1)),
    ];
    for (what, p) in &cases {
        let w = write(&i, q, "x", 2, &[2.0], p);
        assert_eq!(w.op_index, 0, "{what}: refused at enqueue");
        let w = (w.status.0, last_error());
        let r = read(&i, q, "x", p).unwrap_err();
        let m = map(&i, q, "x", p);
        for (status, message) in [&w, &r, &m] {
            report.push_str(&format!("{what}: {status} {message}\n"));
        }
        // Nothing was written.
        assert_eq!(i.read_f32(q, &["x"], LATEST).unwrap()[0].rows, [vec![1.0]], "{what}");
    }
    // The driver's own reason varies by machine; the rest is ours.
    let reason = ovstage_backend_cuda::probe_device(0).unwrap_err().reason;
    insta::assert_snapshot!(report.replace(&reason, "<no driver>"));
}

/// On a real GPU (device 0): a read placed there hands out device memory
/// equal to the host read once its event has fired, and a map session
/// there commits what the client wrote into the device copy. Prints SKIP
/// without a GPU (the GPU check's bundle runs it where there is one). Built
/// where the backend drives a driver (its `driven` cfg, spelled out: a cfg
/// of another crate).
#[cfg(all(feature = "cuda", target_arch = "x86_64", target_os = "linux"))]
#[test]
fn on_a_gpu_placed_reads_and_maps_move_the_values() {
    use ovstage_backend_cuda::cust::sys as cu;
    let _g = shared();
    let Some(_gpu) = gpu_or_skip("on_a_gpu_placed_reads_and_maps_move_the_values") else { return };
    let ok = cu::cudaError_enum::CUDA_SUCCESS;
    let i = Inst::new();
    let q = i.query(&["/A", "/B", "/C"]);
    let values = [1f32, 2., 3., 4., 5., 6.];
    i.done(i.write_f32(q, "p", 1, &values, 2));
    i.seal(1);
    let mut event = std::ptr::null_mut();
    // SAFETY: the driver writes one handle.
    assert_eq!(unsafe { cu::cuEventCreate(&mut event, 2) }, ok);
    let on_device = placement(2, 0, 1, event as usize);
    let tokens = i.tokens(&["p"]);
    let mut handle = 0;
    // SAFETY: live instance, valid arrays, placement and output.
    let r = unsafe {
        (table(&i).read_attributes_on_device.unwrap())(i.ctx(), q, tokens.as_ptr(), 1, LATEST, &on_device, &mut handle)
    };
    assert_eq!(r.status.0, OK, "{}", last_error());
    // SAFETY: a zeroed group is a valid output buffer.
    let mut g: ovstage_read_group_t = unsafe { std::mem::zeroed() };
    // SAFETY: live instance, valid output.
    assert_eq!(unsafe { (i.vt().fetch_read_next.unwrap())(i.ctx(), handle, INFINITE, &mut g) }.0, OK);
    // SAFETY: one tensor.
    let t = unsafe { &*g.data.tensors };
    assert_eq!((t.device.device_type.0, t.device.device_id), (2, 0));
    // SAFETY: the event was recorded before the group was handed out.
    assert_eq!(unsafe { cu::cuEventSynchronize(event) }, ok);
    let mut back = [0f32; 6];
    // SAFETY: 24 bytes of the group's device copy into `back`.
    assert_eq!(unsafe { cu::cuMemcpyDtoH_v2(back.as_mut_ptr().cast(), t.data as u64, 24) }, ok);
    assert_eq!(back, values);
    // SAFETY: live instance; the group came from this read.
    assert_eq!(unsafe { (i.vt().release_group.unwrap())(i.ctx(), &g) }.0, OK);
    // SAFETY: live instance.
    i.done(unsafe { (i.vt().release_read.unwrap())(i.ctx(), handle) });

    // A map session on the device: the client writes the device copy.
    // SAFETY: a zeroed desc is "infer everything".
    let mut desc: ovstage_map_desc_t = unsafe { std::mem::zeroed() };
    desc.attribute = attr("p");
    let mut map = 0;
    // SAFETY: live instance, valid desc, placement and output.
    let r = unsafe {
        (table(&i).map_attribute_on_device.unwrap())(i.ctx(), q, &desc, 2, std::ptr::null(), 0, &on_device, &mut map)
    };
    assert_eq!(r.status.0, OK, "{}", last_error());
    // SAFETY: a zeroed group is a valid output buffer.
    let mut mg: ovstage_map_group_t = unsafe { std::mem::zeroed() };
    // SAFETY: live instance, valid output.
    assert_eq!(unsafe { (i.vt().fetch_map_next.unwrap())(i.ctx(), map, INFINITE, &mut mg) }.0, OK);
    // SAFETY: one tensor.
    let mt = unsafe { &*mg.data.tensors };
    assert_eq!(mt.device.device_type.0, 2);
    let written = [9f32, 8., 7., 6., 5., 4.];
    // SAFETY: 24 bytes into the group's device copy, on the legacy stream.
    let copied = unsafe { cu::cuMemcpyHtoDAsync_v2(mt.data as u64, written.as_ptr().cast(), 24, 1 as cu::CUstream) };
    assert_eq!(copied, ok);
    let done = ovstage_cuda_sync_t { stream: 1, wait_event: 0 };
    // SAFETY: live instance; the group came from this session.
    i.done(unsafe { (i.vt().unmap_group.unwrap())(i.ctx(), map, &mg, done) });
    // SAFETY: live instance.
    i.done(unsafe { (i.vt().unmap_attribute.unwrap())(i.ctx(), map, Default::default()) });
    i.seal(2);
    let rows = i.read_f32(q, &["p"], LATEST).unwrap()[0].rows.concat();
    assert_eq!(rows, written);
    // SAFETY: created above; every record was waited for.
    unsafe { cu::cuEventDestroy_v2(event) };
}
