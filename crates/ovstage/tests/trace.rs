//! The op timeline: `trace::start`/`trace::stop` and `OVSTAGE_TRACE` write
//! a Chrome trace that is valid JSON with, for every op, one enqueue, one
//! begin and one end (in that order), the begin naming the call, its
//! ordinal and bytes, the end its failure. Tracing is process-wide, so this
//! file is its own test binary, and the environment variable is tested in
//! a child process of it.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::{LONG, f32x3, query, seal, stage, write};
use ovstage::{OpId, OrdinalRange, PrimMode, Status, WaitError, trace};
use serde_json::Value;

/// Per op id: its enqueue, begin and end events, in file order.
#[derive(Default, Debug)]
struct OpEvents {
    enqueues: Vec<Value>,
    begins: Vec<Value>,
    ends: Vec<Value>,
}

/// Parses a trace file (failing on invalid JSON) into events per op, and
/// the thread names it declares.
fn parse(path: &Path) -> (BTreeMap<u64, OpEvents>, Vec<String>) {
    let text = std::fs::read_to_string(path).unwrap();
    let json: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not valid JSON ({e}):\n{text}"));
    let mut ops: BTreeMap<u64, OpEvents> = BTreeMap::new();
    let mut threads = Vec::new();
    for e in json["traceEvents"].as_array().expect("a traceEvents array") {
        let ph = e["ph"].as_str().expect("every event has a phase");
        if ph == "M" {
            threads.push(e["args"]["name"].as_str().unwrap().to_owned());
            continue;
        }
        let op = match ph {
            "s" | "f" => e["id"].as_u64(),
            _ => e["args"]["op"].as_u64(),
        }
        .unwrap_or_else(|| panic!("an op event without an op id: {e}"));
        let slot = ops.entry(op).or_default();
        match ph {
            "i" => slot.enqueues.push(e.clone()),
            "B" => slot.begins.push(e.clone()),
            "E" => slot.ends.push(e.clone()),
            "s" | "f" => {}
            other => panic!("unexpected phase {other}: {e}"),
        }
    }
    (ops, threads)
}

fn ts(e: &Value) -> f64 {
    e["ts"].as_f64().expect("a timestamp")
}

#[test]
fn a_trace_has_one_enqueue_begin_and_end_per_op_with_its_call_ordinal_bytes_and_failure() {
    if std::env::var_os("OVSTAGE_TRACE_CHILD").is_some() {
        return; // The child process runs only the environment test's body.
    }
    let dir = std::env::temp_dir().join(format!("ovstage-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ops.json");
    assert_eq!(trace::stop().unwrap(), None, "no trace is being recorded yet");
    trace::start(&path).unwrap();
    let again = trace::start(dir.join("other.json")).unwrap_err();
    assert_eq!(again.status(), Status::InvalidArgument, "{again}");
    assert!(trace::is_on());

    let s = stage(2);
    let q = query(&s, &["/A", "/B"]);
    let mut ops: Vec<OpId> = Vec::new();
    for o in 1..=3u64 {
        ops.push(write(&s, q, "pos", o, f32x3(&[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])));
    }
    ops.push(seal(&s, 3));
    let read = s.read_attributes(q, &["pos".into()], OrdinalRange::LATEST).unwrap();
    ops.push(read.op);
    while s.fetch_read_next(read.handle, LONG).unwrap().is_some() {}
    ops.push(s.release_read(read.handle).unwrap());
    // A write below a change already accepted for the same prims is an
    // ordinal conflict: accepted, and failed when it runs.
    ops.push(write(&s, q, "pos", 6, f32x3(&[[0.0; 3]; 2])));
    // Above the inline limit (24 KB), and waited with a timeout (a waiter
    // that does not run work itself): it runs on a lane.
    let many: Vec<String> = (0..2000).map(|i| format!("/Many/P{i}")).collect();
    let many = query(&s, &many.iter().map(String::as_str).collect::<Vec<_>>());
    ops.push(write(&s, many, "big", 7, f32x3(&[[1.0; 3]; 2000])));
    let failing = s.write_attribute(q, "pos", 5, f32x3(&[[0.0; 3]; 2]), PrimMode::Upsert);
    for op in &ops {
        s.wait_ok(*op, LONG).unwrap();
    }
    let failed = match failing {
        Ok(op) => {
            assert!(matches!(s.wait(op, LONG), Err(WaitError::Failed { .. })), "the conflicting write fails");
            Some(op)
        }
        Err(e) => panic!("the conflicting write was refused at enqueue: {e}"),
    };
    drop(s);
    assert_eq!(trace::stop().unwrap().as_deref(), Some(path.as_path()));
    assert!(!trace::is_on());

    let (events, threads) = parse(&path);
    for op in ops.iter().chain(failed.iter()) {
        assert!(events.contains_key(&op.get()), "{op} is in the trace");
    }
    for (op, e) in &events {
        assert_eq!((e.enqueues.len(), e.begins.len(), e.ends.len()), (1, 1, 1), "op {op}: {e:?}");
        let (q, b, x) = (ts(&e.enqueues[0]), ts(&e.begins[0]), ts(&e.ends[0]));
        assert!(q <= b && b <= x, "op {op}: enqueue {q}, begin {b}, end {x}");
        assert_eq!(e.begins[0]["name"], e.ends[0]["name"], "op {op}");
        assert_eq!(e.begins[0]["tid"], e.ends[0]["tid"], "op {op} begins and ends on one thread");
    }
    let write1 = &events[&ops[0].get()];
    assert_eq!(write1.begins[0]["name"], "write_attribute");
    assert_eq!(write1.begins[0]["args"]["ordinal"], 1);
    assert_eq!(write1.begins[0]["args"]["bytes"], 24, "two rows of f32x3");
    assert_eq!(write1.ends[0]["args"]["failure"], Value::Null);
    assert_eq!(events[&ops[3].get()].begins[0]["name"], "advance_write_floor");
    assert_eq!(events[&ops[3].get()].begins[0]["args"]["ordinal"], 3);
    assert_eq!(events[&ops[4].get()].begins[0]["name"], "read_attributes");
    assert_eq!(events[&ops[5].get()].begins[0]["name"], "release_read");
    let failure = &events[&failed.unwrap().get()].ends[0]["args"]["failure"];
    assert!(failure.as_str().is_some_and(|f| f.contains("pos") && f.contains('6')), "{failure}");
    assert!(threads.iter().any(|t| t.contains("lane")), "the lanes are named tracks: {threads:?}");

    // Stopped: nothing more is recorded, and a new trace starts empty.
    trace::start(&path).unwrap();
    assert_eq!(trace::stop().unwrap().as_deref(), Some(path.as_path()));
    assert!(parse(&path).0.is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Run in a child process with `OVSTAGE_TRACE` set: two stages one after
/// the other (none alive in between, as when a simulation resets), each
/// traced from its creation to its drop.
#[test]
fn environment_child() {
    if std::env::var_os("OVSTAGE_TRACE_CHILD").is_none() {
        return;
    }
    for (attribute, ordinal) in [("x", 1), ("y", 7)] {
        let s = stage(2);
        let q = query(&s, &["/A"]);
        s.wait_ok(write(&s, q, attribute, ordinal, f32x3(&[[1.0, 2.0, 3.0]])), LONG).unwrap();
        s.wait_ok(seal(&s, ordinal), LONG).unwrap();
    }
}

#[test]
fn ovstage_trace_records_a_process_from_its_first_stage_to_its_last() {
    if std::env::var_os("OVSTAGE_TRACE_CHILD").is_some() {
        return;
    }
    let path = std::env::temp_dir().join(format!("ovstage-trace-env-{}.json", std::process::id()));
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "environment_child", "--test-threads", "1"])
        .env("OVSTAGE_TRACE", &path)
        .env("OVSTAGE_TRACE_CHILD", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (events, threads) = parse(&path);
    let names: Vec<&str> = events.values().map(|e| e.begins[0]["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"write_attribute") && names.contains(&"advance_write_floor"), "{names:?}");
    assert!(events.values().all(|e| e.begins.len() == 1 && e.ends.len() == 1 && e.enqueues.len() == 1));
    // Both stages' writes and seals: the second stage's ops are in the
    // file too, after the first's.
    let ordinals = |call: &str| -> Vec<u64> {
        events
            .values()
            .filter(|e| e.begins[0]["name"] == call)
            .map(|e| e.begins[0]["args"]["ordinal"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(ordinals("write_attribute"), [1, 7], "{names:?}");
    assert_eq!(ordinals("advance_write_floor"), [1, 7], "{names:?}");
    // Each thread is named once, however many times the file was extended.
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut named: Vec<u64> = json["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "M")
        .map(|e| e["tid"].as_u64().unwrap())
        .collect();
    let declared = named.len();
    named.sort_unstable();
    named.dedup();
    assert_eq!(named.len(), declared, "{threads:?}");
    let _ = std::fs::remove_file(&path);
}
