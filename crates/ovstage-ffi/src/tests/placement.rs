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
