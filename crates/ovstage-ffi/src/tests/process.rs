//! Process configuration and logging (exclusive tests: they need every
//! other instance gone).

use std::ffi::c_void;
use std::sync::Mutex;

use super::*;
use crate::abi::stage_types::*;
use crate::exports::stage::*;

fn entry_u64(key: u32, value: u64) -> ovstage_config_entry_t {
    ovstage_config_entry_t {
        key_type: ovstage_config_key_type_t(2),
        key: ovstage_config_entry_key_t { uint64_key: ovstage_config_uint64_t(key) },
        value: ovstage_config_entry_value_t { uint_value: value },
    }
}

fn init(entries: &[ovstage_config_entry_t]) -> u32 {
    let config = ovstage_config_t { entries: entries.as_ptr(), entry_count: entries.len() };
    // SAFETY: a valid config.
    unsafe { ovstage_initialize(&config) }.0
}

#[test]
fn configuration_is_validated_captured_and_reported() {
    let _g = exclusive();
    assert_eq!(ovstage_shutdown().0, INVALID_ARGUMENT);
    assert_eq!(last_error(), "ovstage_shutdown: called without a matching ovstage_initialize()");
    // Rejected configs change nothing.
    assert_eq!(init(&[entry_u64(1, 9)]), INVALID_ARGUMENT);
    assert!(last_error().contains("not an ordinal admission policy"), "{}", last_error());
    assert_eq!(init(&[entry_u64(77, 1)]), INVALID_ARGUMENT);
    assert!(last_error().contains("unknown uint64 config key"), "{}", last_error());
    assert_eq!(init(&[entry_u64(1, 3), entry_u64(1, 3)]), INVALID_ARGUMENT);
    assert!(last_error().contains("more than once"));
    let bad_type = ovstage_config_entry_t { key_type: ovstage_config_key_type_t(9), ..entry_u64(0, 1) };
    assert_eq!(init(&[bad_type]), INVALID_ARGUMENT);
    let root = "/opt/ovstage/bin";
    let path = ovstage_config_entry_t {
        key_type: ovstage_config_key_type_t(4),
        key: ovstage_config_entry_key_t { string_key: ovstage_config_string_t(0) },
        value: ovstage_config_entry_value_t { string_value: s(root) },
    };
    // STRICTLY_INCREASING, one lane, our history depth; the package root is
    // accepted and recorded.
    assert_eq!(init(&[entry_u64(1, 3), entry_u64(256, 1), entry_u64(257, 2), path]), OK, "{}", last_error());
    // A concrete conflicting setting is refused; DEFAULT and equal values
    // are fine.
    assert_eq!(init(&[entry_u64(1, 2)]), INVALID_ARGUMENT);
    assert_eq!(
        last_error(),
        "ovstage_initialize: OVSTAGE_CONFIG_RUNTIME_DEFAULT_ORDINAL_ADMISSION_POLICY NONDECREASING conflicts with the \
         active process settings (STRICTLY_INCREASING); settings change only after every initialization and instance \
         is released"
    );
    assert_eq!(init(&[entry_u64(1, 0), entry_u64(1 + 255, 1)]), OK);
    {
        let i = Inst::new();
        let mut config = ovstage_config_t { entries: std::ptr::null(), entry_count: 0 };
        // SAFETY: live instance, valid output.
        assert_eq!(unsafe { ovstage_get_config(i.ptr, &mut config) }.0, OK);
        assert_eq!(config.entry_count, 4);
        // SAFETY: the instance owns `entry_count` entries.
        let entries = unsafe { std::slice::from_raw_parts(config.entries, 4) };
        // SAFETY: the key type of entry 3 is STRING.
        assert_eq!(text(unsafe { entries[3].value.string_value }).unwrap(), root);
        // SAFETY: reading the NULL-output error path.
        assert_eq!(unsafe { ovstage_get_config(i.ptr, std::ptr::null_mut()) }.0, INVALID_ARGUMENT);
        // STRICTLY_INCREASING: the same cell at the same ordinal is refused.
        let q = i.query(&["/A"]);
        i.done(i.write_f32(q, "v", 1, &[1.0], 1));
        let again = i.write_f32(q, "v", 1, &[2.0], 1);
        assert!(again.status.0 == WRITE_FLOOR_VIOLATION || i.wait(again.op_index) == OP_FAILED, "{}", last_error());
    }
    assert_eq!(ovstage_shutdown().0, OK);
    assert_eq!(ovstage_shutdown().0, OK);
    assert_eq!(ovstage_shutdown().0, INVALID_ARGUMENT);
    // All references gone: the next first reference may pick another policy.
    assert_eq!(init(&[entry_u64(1, 1)]), OK);
    assert_eq!(ovstage_shutdown().0, OK);
}

static LOGGED: Mutex<Vec<(i32, String)>> = Mutex::new(Vec::new());

unsafe extern "C" fn collect(
    severity: ovstage_log_severity_t,
    timestamp: f64,
    message: ovx_string_t,
    user_data: *mut c_void,
) {
    assert!(timestamp > 1.0e9, "seconds since the epoch");
    assert_eq!(user_data as usize, 0x5eed);
    LOGGED.lock().unwrap().push((severity.0, text(message).unwrap()));
}

#[test]
fn log_messages_reach_the_callback_through_the_filter() {
    let _g = exclusive();
    let cb: ovstage_log_callback_t = Some(collect);
    let ud = 0x5eed as *mut c_void;
    // SAFETY: valid callback; no process reference yet.
    assert_eq!(unsafe { ovstage_set_log_callback(ovstage_log_severity_t(-2), std::ptr::null(), cb, ud) }.0, OP_FAILED);
    assert_eq!(ovstage_flush_log(0).0, OK, "no callback: nothing to flush");
    let i = Inst::new();
    let bad = s("ovstage=loud");
    // SAFETY: valid arguments; the filter does not parse.
    assert_eq!(unsafe { ovstage_set_log_callback(ovstage_log_severity_t(0), &bad, cb, ud) }.0, INVALID_ARGUMENT);
    let filter = s("ovstage.api=verbose");
    // SAFETY: valid arguments.
    assert_eq!(unsafe { ovstage_set_log_callback(ovstage_log_severity_t(0), &filter, cb, ud) }.0, OK);
    // A rejected call is logged on `ovstage.api` at verbose level.
    // SAFETY: live instance; the NULL output is reported.
    let _ = unsafe { (i.vt().query_from_path_list.unwrap())(i.ctx(), 1, std::ptr::null_mut()) };
    assert_eq!(ovstage_flush_log(INFINITE).0, OK);
    {
        let logged = LOGGED.lock().unwrap();
        assert!(
            logged.iter().any(|(sev, m)| *sev == -2 && m.contains("query_from_path_list: out_handle is NULL")),
            "{logged:?}"
        );
        assert!(!logged.iter().any(|(sev, _)| *sev == -1), "info messages of other channels are below the threshold");
    }
    // SAFETY: removing the callback.
    let st =
        unsafe { ovstage_set_log_callback(ovstage_log_severity_t(0), std::ptr::null(), None, std::ptr::null_mut()) };
    assert_eq!(st.0, OK);
    let before = LOGGED.lock().unwrap().len();
    // SAFETY: as above; nothing is delivered now.
    let _ = unsafe { (i.vt().query_from_path_list.unwrap())(i.ctx(), 1, std::ptr::null_mut()) };
    assert_eq!(ovstage_flush_log(INFINITE).0, OK);
    assert_eq!(LOGGED.lock().unwrap().len(), before);
}

#[test]
fn the_unsealed_byte_budget_is_a_process_setting() {
    let _g = exclusive();
    let snapshot = |n| ovstage_ordinal_range_t { start_ordinal: 0, end_ordinal: n, has_start_ordinal: CBool::FALSE };
    // Eight one-value ticks written ahead of the floor, then sealed at once.
    let ahead = |i: &Inst| {
        let q = i.query(&["/A"]);
        for t in 1..=8u64 {
            i.done(i.write_f32(q, "v", t, &[t as f32], 1));
        }
        i.seal(8);
        q
    };
    // A budget of one byte: the column keeps only the 4 versions it always
    // keeps: the two oldest stay exact, ticks 3 to 7 were merged into one
    // span at the head, and the newest stays.
    assert_eq!(init(&[entry_u64(259, 1)]), OK, "{}", last_error());
    {
        let i = Inst::new();
        let q = ahead(&i);
        let (status, message) = i.read_f32(q, &["v"], snapshot(5)).unwrap_err();
        assert_eq!(status, 13, "OUT_OF_RANGE: {message}");
        for t in [1, 2, 7, 8] {
            assert_eq!(i.read_f32(q, &["v"], snapshot(t)).unwrap()[0].rows, vec![vec![t as f32]], "at {t}");
        }
    }
    // A different budget while the first is active is refused, naming the key.
    assert_eq!(init(&[entry_u64(259, 2)]), INVALID_ARGUMENT);
    assert!(last_error().contains("OVSTAGE_CONFIG_RUNTIME_MAX_UNSEALED_BYTES 2 conflicts"), "{}", last_error());
    assert_eq!(ovstage_shutdown().0, OK);
    // The default budget keeps every tick.
    let i = Inst::new();
    let q = ahead(&i);
    assert_eq!(i.read_f32(q, &["v"], snapshot(2)).unwrap()[0].rows, vec![vec![2.0]]);
}

#[test]
fn the_unsealed_overflow_policy_is_a_process_setting() {
    let _g = exclusive();
    const QUEUE_FULL: u32 = 7;
    let snapshot = |n| ovstage_ordinal_range_t { start_ordinal: 0, end_ordinal: n, has_start_ordinal: CBool::FALSE };
    // Reject beyond 4 unsealed versions.
    assert_eq!(init(&[entry_u64(258, 4), entry_u64(260, 1)]), OK, "{}", last_error());
    {
        let i = Inst::new();
        let q = i.query(&["/A"]);
        for t in 1..=4u64 {
            i.done(i.write_f32(q, "v", t, &[t as f32], 1));
        }
        // A fifth ordinal ahead of the floor is refused at enqueue; a
        // second write at a held ordinal is not.
        let r = i.write_f32(q, "v", 5, &[5.0], 1);
        assert_eq!(r.status.0, QUEUE_FULL, "{}", last_error());
        assert!(last_error().contains("advance the write floor"), "{}", last_error());
        i.done(i.write_f32(q, "v", 4, &[4.5], 1));
        // Sealing makes room; nothing was merged.
        i.seal(2);
        i.done(i.write_f32(q, "v", 5, &[5.0], 1));
        i.seal(5);
        for (t, v) in [(1, 1.0), (2, 2.0), (3, 3.0), (4, 4.5), (5, 5.0)] {
            assert_eq!(i.read_f32(q, &["v"], snapshot(t)).unwrap()[0].rows, vec![vec![v]], "at {t}");
        }
    }
    // Only 0 and 1 are policies; another value while one is active is
    // refused, naming the key.
    assert_eq!(init(&[entry_u64(260, 2)]), INVALID_ARGUMENT);
    assert!(last_error().contains("OVSTAGE_CONFIG_RUNTIME_UNSEALED_OVERFLOW: 2"), "{}", last_error());
    assert_eq!(init(&[entry_u64(260, 0)]), INVALID_ARGUMENT);
    assert!(last_error().contains("OVSTAGE_CONFIG_RUNTIME_UNSEALED_OVERFLOW 0 conflicts"), "{}", last_error());
    assert_eq!(ovstage_shutdown().0, OK);
    // The default coalesces: a never-sealed producer is never refused.
    let i = Inst::new();
    let q = i.query(&["/A"]);
    for t in 1..=20u64 {
        i.done(i.write_f32(q, "v", t, &[t as f32], 1));
    }
}

#[test]
fn the_op_bound_is_a_process_setting() {
    let _g = exclusive();
    const QUEUE_FULL: u32 = 7;
    assert_eq!(init(&[entry_u64(261, 3)]), OK, "{}", last_error());
    {
        let i = Inst::new();
        let q = i.query(&["/A"]);
        // Each write waited at once: its client tensor lives only that long.
        let ops: Vec<u64> = (1..=3u64)
            .map(|t| {
                let values = [t as f32];
                let op = i.write_f32(q, "v", t, &values, 1).op_index;
                assert_eq!(i.wait(op), OK);
                op
            })
            .collect();
        let r = i.write_f32(q, "v", 4, &[4.0], 1);
        assert_eq!((r.status.0, r.op_index), (QUEUE_FULL, 0), "{}", last_error());
        assert!(last_error().contains("3 ops are submitted and not released"), "{}", last_error());
        // SAFETY: live instance; a completed op of it.
        assert_eq!(unsafe { (i.vt().release_op.unwrap())(i.ctx(), ops[0]) }.0, OK);
        i.done(i.write_f32(q, "v", 4, &[4.0], 1));
    }
    assert_eq!(init(&[entry_u64(261, 5)]), INVALID_ARGUMENT);
    assert!(last_error().contains("OVSTAGE_CONFIG_RUNTIME_MAX_OPS 5 conflicts"), "{}", last_error());
    assert_eq!(ovstage_shutdown().0, OK);
}
