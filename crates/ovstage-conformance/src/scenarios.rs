//! The corpus: scenarios of ordinary use, edge values and bad input, each
//! run on a fresh instance. A scenario only drives calls; the driver
//! prints what happened, so the transcript, not the scenario, says what
//! the library did.

use crate::driver::{Attr, Driver, INFINITE, MapSpec, Pred, Range};
use crate::payload::Payload;

/// A named scenario with the process settings it runs under.
pub(crate) struct Scenario {
    pub(crate) name: &'static str,
    /// `ovstage_initialize` uint64 settings (key, value).
    pub(crate) settings: &'static [(u32, u64)],
    pub(crate) run: fn(&mut Driver<'_>),
}

const PATHS: [&str; 4] = ["/World/a", "/World/b", "/World/c", "/World/d"];

const FILTER_HAS: u32 = 0;
const FILTER_IN: u32 = 1;
const FILTER_CONTAINS: u32 = 2;
const FILTER_PREFIX: u32 = 3;
const FILTER_LT: u32 = 4;
const FILTER_LE: u32 = 5;
const FILTER_GT: u32 = 6;
const FILTER_GE: u32 = 7;

/// Every scenario, in transcript order.
pub(crate) fn all() -> Vec<Scenario> {
    let s = |name, run| Scenario { name, settings: &[], run };
    vec![
        s("version_and_strings", version_and_strings),
        s("write_then_read_latest", write_then_read_latest),
        s("read_ranges_and_snapshots", read_ranges_and_snapshots),
        s("floors_and_violations", floors_and_violations),
        s("scoped_floors", scoped_floors),
        s("ordinal_queries", ordinal_queries),
        s("insert_and_upsert", insert_and_upsert),
        s("batched_writes", batched_writes),
        s("repeated_paths", repeated_paths),
        s("payload_shapes", payload_shapes),
        s("bad_payloads", bad_payloads),
        s("masks_and_index_maps", masks_and_index_maps),
        s("arrays", arrays),
        s("dtypes", dtypes),
        s("dtype_codes", dtype_codes),
        s("deletes", deletes),
        s("maps", maps),
        s("map_setup_errors", map_setup_errors),
        s("filters", filters),
        s("value_predicates", value_predicates),
        s("reserved_metadata", reserved_metadata),
        s("handles", handles),
        s("path_dictionary", path_dictionary),
        s("op_lifecycle", op_lifecycle),
        Scenario { name: "retention_frontier", settings: &[], run: retention_frontier },
        s("frontier_under_scoped_seals", frontier_under_scoped_seals),
        s("attribute_aliases", attribute_aliases),
        s("hierarchy_computation", hierarchy_computation),
        s("clones", clones),
        s("hierarchy_lookups", hierarchy_lookups),
        s("informational_exports", informational_exports),
        s("metadata_semantics", metadata_semantics),
        s("force_mode", force_mode),
        s("force_history", force_history),
        s("failed_write_admission", failed_write_admission),
        Scenario { name: "same_ordinal_strict", settings: &[(1, 3)], run: same_ordinal_overlap },
        Scenario { name: "same_ordinal_nondecreasing", settings: &[(1, 2)], run: same_ordinal_overlap },
        Scenario { name: "same_ordinal_floor_only", settings: &[(1, 1)], run: same_ordinal_overlap },
    ]
}

fn version_and_strings(d: &mut Driver<'_>) {
    d.version();
    for status in [0, 1, 2, 4, 5, 8, 11, 12, 13, 99, 12345] {
        d.error_string(status);
    }
    d.extension("ovstage.placement");
    d.extension("no.such.extension");
}

fn write_then_read_latest(d: &mut Driver<'_>) {
    let q = d.query_paths(&PATHS);
    d.write_settled(q, "pos", 1, Payload::f32(&[1.0, 2.0, 3.0, 4.0]));
    d.read_all(q, &["pos"], Range::Latest);
    d.seal(1);
    d.read_all(q, &["pos"], Range::Latest);
    d.write_settled(q, "pos", 2, Payload::f32(&[5.0, 6.0, 7.0, 8.0]));
    d.read_all(q, &["pos"], Range::Latest);
    d.seal(2);
    d.read_all(q, &["pos"], Range::Latest);
    d.read_all(q, &["pos", "missing"], Range::Latest);
    d.read_all(q, &[], Range::Latest);
    let sub = d.query_paths(&PATHS[1..3]);
    d.read_all(sub, &["pos"], Range::Latest);
    let op = d.release_query(sub);
    d.settle(op);
}

fn read_ranges_and_snapshots(d: &mut Driver<'_>) {
    let q = d.query_paths(&PATHS[..2]);
    for o in 1..=4u64 {
        d.write_settled(q, "v", o * 10, Payload::f32(&[o as f32, -(o as f32)]));
    }
    d.seal(25);
    d.read_all(q, &["v"], Range::Snapshot(10));
    d.read_all(q, &["v"], Range::Snapshot(15));
    d.read_all(q, &["v"], Range::Snapshot(20));
    d.read_all(q, &["v"], Range::Snapshot(5));
    d.read_all(q, &["v"], Range::Between(0, 20));
    d.read_all(q, &["v"], Range::Between(10, 20));
    d.read_all(q, &["v"], Range::Between(20, 20));
    d.read_all(q, &["v"], Range::Between(20, 10));
    d.read_all(q, &["v"], Range::Snapshot(30));
    d.seal(40);
    d.read_all(q, &["v"], Range::Between(0, 40));
    d.read_all(q, &["v"], Range::Latest);
}

fn floors_and_violations(d: &mut Driver<'_>) {
    let q = d.query_paths(&PATHS[..2]);
    d.write_settled(q, "x", 5, Payload::f32(&[1.0, 2.0]));
    d.seal(5);
    d.write_settled(q, "x", 5, Payload::f32(&[3.0, 4.0]));
    d.write_settled(q, "x", 4, Payload::f32(&[3.0, 4.0]));
    d.write_settled(q, "x", 6, Payload::f32(&[3.0, 4.0]));
    d.seal(3);
    d.seal(5);
    d.seal(6);
    d.ordinal_query(Some(Attr::Name("x")));
    d.read_all(q, &["x"], Range::Latest);
    d.seal(u64::MAX - 1);
    d.write_settled(q, "x", u64::MAX, Payload::f32(&[9.0, 9.0]));
    d.seal(u64::MAX);
    d.read_all(q, &["x"], Range::Latest);
}

fn scoped_floors(d: &mut Driver<'_>) {
    let q = d.query_paths(&PATHS[..2]);
    d.write_settled(q, "a", 3, Payload::f32(&[1.0, 2.0]));
    d.write_settled(q, "b", 3, Payload::f32(&[1.0, 2.0]));
    let op = d.advance(3, 1, &["a"]);
    d.settle(op);
    d.ordinal_query(Some(Attr::Name("a")));
    d.ordinal_query(Some(Attr::Name("b")));
    d.ordinal_query(None);
    d.write_settled(q, "a", 3, Payload::f32(&[5.0, 5.0]));
    d.write_settled(q, "b", 3, Payload::f32(&[5.0, 5.0]));
    let op = d.advance(4, 2, &["a"]);
    d.settle(op);
    d.ordinal_query(Some(Attr::Name("a")));
    d.ordinal_query(Some(Attr::Name("b")));
    d.ordinal_query(Some(Attr::Name("never_written")));
    let op = d.advance(5, 1, &[]);
    d.settle(op);
    let op = d.advance(5, 7, &[]);
    d.settle(op);
    d.read_all(q, &["a", "b"], Range::Latest);
}

fn ordinal_queries(d: &mut Driver<'_>) {
    d.ordinal_query(None);
    d.ordinal_query(Some(Attr::Name("nothing")));
    d.ordinal_query(Some(Attr::Raw(0)));
    d.ordinal_query(Some(Attr::Token("tok")));
    let q = d.query_paths(&PATHS[..1]);
    d.write_settled(q, "t", 7, Payload::f32(&[1.0]));
    d.seal(7);
    d.ordinal_query(None);
    d.ordinal_query(Some(Attr::Name("t")));
    d.ordinal_query(Some(Attr::Token("t")));
}

fn insert_and_upsert(d: &mut Driver<'_>) {
    let q = d.query_paths(&PATHS[..2]);
    let mut p = Payload::f32(&[1.0, 2.0]);
    let op = d.write(q, Attr::Name("i"), 1, &mut p, true);
    d.settle(op);
    let mut p = Payload::f32(&[3.0, 4.0]);
    let op = d.write(q, Attr::Name("i"), 2, &mut p, true);
    d.settle(op);
    let mut p = Payload::f32(&[3.0, 4.0]);
    let op = d.write(q, Attr::Name("other"), 2, &mut p, true);
    d.settle(op);
    let q2 = d.query_paths(&PATHS[2..]);
    let mut p = Payload::f32(&[7.0, 8.0]);
    let op = d.write(q2, Attr::Name("i"), 3, &mut p, true);
    d.settle(op);
    d.seal(3);
    let all = d.query_paths(&PATHS);
    d.read_all(all, &["i", "other"], Range::Latest);
}

fn batched_writes(d: &mut Driver<'_>) {
    let q = d.query_paths(&PATHS[..2]);
    let op = d.write_many(q, &mut [], 1, false);
    d.settle(op);
    let mut writes = [("m1", Payload::f32(&[1.0, 2.0])), ("m2", Payload::f32_rows(&[1.0, 2.0, 3.0, 4.0], 2))];
    let op = d.write_many(q, &mut writes, 2, false);
    d.settle(op);
    let mut dup = [("m1", Payload::f32(&[1.0, 2.0])), ("m1", Payload::f32(&[3.0, 4.0]))];
    let op = d.write_many(q, &mut dup, 3, false);
    d.settle(op);
    let mut bad = [("m3", Payload::f32(&[1.0, 2.0])), ("m4", Payload::f32(&[1.0]))];
    let op = d.write_many(q, &mut bad, 4, false);
    d.settle(op);
    d.seal(4);
    d.read_all(q, &["m1", "m2", "m3", "m4"], Range::Latest);
}

fn repeated_paths(d: &mut Driver<'_>) {
    let q = d.query_paths(&["/World/a", "/World/b", "/World/a"]);
    d.write_settled(q, "r", 1, Payload::f32(&[1.0, 2.0, 3.0]));
    d.seal(1);
    d.read_all(q, &["r"], Range::Latest);
    let q2 = d.query_paths(&["/World/a", "/World/b"]);
    d.write_settled(q2, "r", 2, Payload::f32(&[4.0, 5.0]));
    d.seal(2);
    d.read_all(q, &["r"], Range::Latest);
}

fn payload_shapes(d: &mut Driver<'_>) {
    let q = d.query_paths(&PATHS[..2]);
    d.write_settled(q, "v3", 1, Payload::f32_rows(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 3));
    d.write_settled(q, "v3", 2, Payload::f32(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).shape(&[2, 3]));
    d.write_settled(q, "v3", 3, Payload::f32(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).shape(&[2, 1, 3]));
    d.write_settled(q, "v3", 4, Payload::f32(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).shape(&[3, 2]));
    d.write_settled(q, "s", 5, Payload::f32(&[7.0]).shape(&[1]));
    d.write_settled(q, "s", 6, Payload::f32(&[1.0, 2.0, 3.0, 4.0]).shape(&[2]).strides(&[2]));
    d.write_settled(q, "s", 7, Payload::f32(&[1.0, 2.0]).shape(&[2]).strides(&[0]));
    d.write_settled(q, "s", 9, Payload::f32(&[]).shape(&[0]));
    d.write_settled(q, "s", 10, Payload::f32(&[1.0, 2.0]).shape(&[]));
    d.seal(10);
    d.read_all(q, &["v3", "s"], Range::Latest);
}

fn bad_payloads(d: &mut Driver<'_>) {
    let q = d.query_paths(&PATHS[..2]);
    d.write_settled(q, "b", 1, Payload::empty());
    d.write_settled(q, "b", 1, Payload::f32(&[1.0, 2.0, 3.0]));
    d.write_settled(q, "b", 1, Payload::f32(&[1.0]));
    d.write_settled(q, "b", 1, Payload::f32(&[1.0, 2.0]).on_device(2));
    d.write_settled(q, "b", 1, Payload::f32(&[1.0, 2.0]).on_device(13));
    d.write_settled(q, "b", 1, Payload::f32(&[1.0, 2.0]).on_device(3));
    d.write_settled(q, "b", 1, Payload::scalar(2, 16, &[0, 0, 0, 0], "f16[0,0]"));
    d.write_settled(q, "b", 1, Payload::scalar(5, 32, &[0; 8], "code5"));
    d.write_settled(q, "b", 1, Payload::f32(&[1.0, 2.0]).shape(&[2, -1]));
    d.write_settled(q, "b", 1, Payload::f32(&[1.0, 2.0]).semantic(99));
    d.write_settled(q, "b", 1, Payload::f32(&[1.0, 2.0]).attribute_mode(7));
    d.write_settled(q, "", 1, Payload::f32(&[1.0, 2.0]));
    let mut p = Payload::f32(&[1.0, 2.0]);
    let op = d.write(q, Attr::Raw(0), 1, &mut p, false);
    d.settle(op);
    let mut p = Payload::f32(&[1.0, 2.0]);
    let op = d.write(q, Attr::Raw(0xdead_beef), 1, &mut p, false);
    d.settle(op);
    d.write_settled(q, "b", 2, Payload::f32(&[1.0, 2.0]));
    d.write_settled(q, "b", 3, Payload::f32_rows(&[1.0, 2.0, 3.0, 4.0], 2));
    d.write_settled(q, "b", 4, Payload::scalar(2, 64, &[0; 16], "f64[0,0]"));
    d.write_settled(q, "b", 5, Payload::f32(&[1.0, 2.0]).semantic(5));
    d.write_settled(q, "b", 6, Payload::f32(&[1.0, 2.0]).array_flag(true));
    d.write_settled(q, "b", 7, Payload::f32(&[1.0, 2.0]).attribute_mode(1));
    d.seal(7);
    d.read_all(q, &["b"], Range::Latest);
}

fn masks_and_index_maps(d: &mut Driver<'_>) {
    let q = d.query_paths(&PATHS);
    d.write_settled(q, "k", 1, Payload::f32(&[0.0, 0.0, 0.0, 0.0]));
    d.write_settled(q, "k", 2, Payload::f32(&[1.0, 3.0]).mask(4, &[0b0101]));
    d.write_settled(q, "k", 3, Payload::f32(&[9.0]).mask(4, &[0b1000]));
    d.write_settled(q, "k", 4, Payload::f32(&[5.0]).mask(4, &[0]));
    d.write_settled(q, "k", 5, Payload::f32(&[5.0, 6.0]).mask(4, &[0b0001]));
    d.write_settled(q, "k", 6, Payload::f32(&[5.0]).mask(3, &[0b1000]));
    d.write_settled(q, "k", 7, Payload::f32(&[5.0, 6.0]).index_map(&[3, 1]).count(2));
    d.write_settled(q, "k", 8, Payload::f32(&[5.0, 6.0]).index_map(&[3, 4]).count(2));
    d.write_settled(q, "k", 9, Payload::f32(&[5.0, 6.0]).index_map(&[2, 2]).count(2));
    d.write_settled(q, "k", 10, Payload::f32(&[7.0]).count(4));
    d.write_settled(q, "k", 11, Payload::f32(&[1.0, 2.0]).count(2));
    d.seal(11);
    d.read_all(q, &["k"], Range::Between(0, 11));
    d.read_all(q, &["k"], Range::Latest);
}

fn arrays(d: &mut Driver<'_>) {
    let q = d.query_paths(&PATHS[..3]);
    d.write_settled(q, "arr", 1, Payload::f32_arrays(&[&[1.0], &[2.0, 3.0], &[]]));
    d.write_settled(q, "arr", 2, Payload::f32_packed(&[1.0, 2.0, 3.0], 3));
    d.write_settled(q, "arr", 3, Payload::f32_arrays(&[&[4.0], &[5.0]]));
    d.write_settled(q, "arr", 4, Payload::f32_arrays(&[&[6.0, 6.5]]).mask(3, &[0b100]));
    d.write_settled(q, "arr", 5, Payload::f32(&[1.0, 2.0, 3.0]));
    d.write_settled(q, "arr2", 6, Payload::f32_arrays(&[&[1.0], &[2.0], &[3.0]]).semantic(5));
    d.seal(6);
    d.read_all(q, &["arr", "arr2"], Range::Latest);
    d.read_all(q, &["arr"], Range::Between(0, 6));
}

fn dtypes(d: &mut Driver<'_>) {
    let q = d.query_paths(&PATHS[..2]);
    let i32s: Vec<u8> = [-1i32, 7].iter().flat_map(|v| v.to_le_bytes()).collect();
    let u64s: Vec<u8> = [u64::MAX, 3].iter().flat_map(|v| v.to_le_bytes()).collect();
    let f64s: Vec<u8> = [0.5f64, -2.25].iter().flat_map(|v| v.to_le_bytes()).collect();
    let u8s = [0u8, 255];
    d.write_settled(q, "di", 1, Payload::scalar(0, 32, &i32s, "i32[-1,7]"));
    d.write_settled(q, "du", 1, Payload::scalar(1, 64, &u64s, "u64[max,3]"));
    d.write_settled(q, "df", 1, Payload::scalar(2, 64, &f64s, "f64[0.5,-2.25]"));
    d.write_settled(q, "db", 1, Payload::scalar(1, 8, &u8s, "u8[0,255]"));
    d.write_settled(q, "bool", 1, Payload::scalar(6, 8, &[1, 0], "bool[1,0]"));
    d.seal(1);
    d.read_all(q, &["di", "du", "df", "db", "bool"], Range::Latest);
}

/// Which DLPack type codes and widths a write and a map accept: every
/// code the C header names, at each common width.
fn dtype_codes(d: &mut Driver<'_>) {
    let q = d.query_paths(&PATHS[..1]);
    let mut ordinal = 1;
    for code in 0u8..=16 {
        for bits in [8u8, 16, 32, 64] {
            let bytes = vec![0u8; usize::from(bits / 8)];
            let name = format!("c{code}b{bits}");
            let label = format!("code{code}/{bits}");
            d.write_settled(q, &name, ordinal, Payload::scalar(code, bits, &bytes, &label));
            ordinal += 1;
        }
        let name = format!("m{code}");
        let spec =
            MapSpec { attribute: &name, dtype: Some((code, 32, 1)), semantic: 0, prim_mode: 0, attribute_mode: 0 };
        let (op, m) = d.map(q, &spec, ordinal, None);
        ordinal += 1;
        if m != 0 {
            let end = d.unmap_attribute(m);
            d.settle(end);
        }
        if op != 0 {
            d.settle(op);
        }
    }
}

fn deletes(d: &mut Driver<'_>) {
    let q = d.query_paths(&PATHS[..3]);
    d.write_settled(q, "x", 1, Payload::f32(&[1.0, 2.0, 3.0]));
    d.write_settled(q, "y", 1, Payload::f32(&[1.0, 2.0, 3.0]));
    d.seal(1);
    let sub = d.query_paths(&PATHS[1..2]);
    let op = d.delete(sub, &["x"], 2);
    d.settle(op);
    let op = d.delete(sub, &[], 3);
    d.settle(op);
    let op = d.delete(sub, &["never"], 3);
    d.settle(op);
    let op = d.delete(q, &["x"], 1);
    d.settle(op);
    d.seal(3);
    d.read_all(q, &["x", "y"], Range::Latest);
    d.read_all(q, &["x"], Range::Between(0, 3));
    d.write_settled(sub, "x", 4, Payload::f32(&[8.0]));
    d.seal(4);
    d.read_all(q, &["x", "y"], Range::Latest);
}

fn maps(d: &mut Driver<'_>) {
    let q = d.query_paths(&PATHS[..3]);
    let spec = MapSpec { attribute: "mp", dtype: Some((2, 32, 1)), semantic: 0, prim_mode: 0, attribute_mode: 0 };
    let (op, m) = d.map(q, &spec, 1, None);
    let ops = d.fill_and_unmap_groups(m, 10.0);
    let end = d.unmap_attribute(m);
    for o in ops {
        d.settle(o);
    }
    d.settle(end);
    d.settle(op);
    d.seal(1);
    d.read_all(q, &["mp"], Range::Latest);

    let arr = MapSpec { attribute: "mparr", dtype: Some((2, 32, 1)), semantic: 0, prim_mode: 0, attribute_mode: 0 };
    let (op, m) = d.map(q, &arr, 2, Some(&[1, 0, 2]));
    let ops = d.fill_and_unmap_groups(m, 1.0);
    let end = d.unmap_attribute(m);
    for o in ops {
        d.settle(o);
    }
    d.settle(end);
    d.settle(op);
    d.seal(2);
    d.read_all(q, &["mparr"], Range::Latest);

    let vec3 = MapSpec { attribute: "mp3", dtype: Some((2, 32, 3)), semantic: 6, prim_mode: 0, attribute_mode: 0 };
    let (op, m) = d.map(q, &vec3, 3, None);
    let ops = d.fill_and_unmap_groups(m, 50.0);
    let end = d.unmap_attribute(m);
    for o in ops {
        d.settle(o);
    }
    d.settle(end);
    d.settle(op);
    let (op, m) = d.map(q, &spec, 4, None);
    let ops = d.fill_and_unmap_groups(m, 100.0);
    let end = d.unmap_attribute(m);
    for o in ops {
        d.settle(o);
    }
    d.settle(end);
    d.settle(op);
    d.seal(4);
    d.read_all(q, &["mp", "mp3"], Range::Latest);
    let end = d.unmap_attribute(m);
    d.settle(end);
}

fn map_setup_errors(d: &mut Driver<'_>) {
    let q = d.query_paths(&PATHS[..2]);
    d.write_settled(q, "have", 1, Payload::f32(&[1.0, 2.0]));
    let cases = [
        MapSpec { attribute: "new_no_dtype", dtype: None, semantic: 0, prim_mode: 0, attribute_mode: 0 },
        MapSpec { attribute: "have", dtype: None, semantic: 0, prim_mode: 0, attribute_mode: 0 },
        MapSpec { attribute: "have", dtype: Some((2, 64, 1)), semantic: 0, prim_mode: 0, attribute_mode: 0 },
        MapSpec { attribute: "have", dtype: Some((2, 32, 1)), semantic: 0, prim_mode: 1, attribute_mode: 0 },
        MapSpec { attribute: "have", dtype: Some((2, 32, 1)), semantic: 0, prim_mode: 0, attribute_mode: 1 },
        MapSpec { attribute: "have", dtype: Some((2, 32, 1)), semantic: 77, prim_mode: 0, attribute_mode: 0 },
        MapSpec { attribute: "", dtype: Some((2, 32, 1)), semantic: 0, prim_mode: 0, attribute_mode: 0 },
        MapSpec { attribute: "odd", dtype: Some((9, 32, 1)), semantic: 0, prim_mode: 0, attribute_mode: 0 },
    ];
    for (i, spec) in cases.iter().enumerate() {
        let (op, m) = d.map(q, spec, 2 + i as u64, None);
        if m != 0 {
            let ops = d.fill_and_unmap_groups(m, 0.0);
            let end = d.unmap_attribute(m);
            for o in ops {
                d.settle(o);
            }
            d.settle(end);
        }
        if op != 0 {
            d.settle(op);
        }
    }
    let spec = MapSpec { attribute: "arr", dtype: Some((2, 32, 1)), semantic: 0, prim_mode: 0, attribute_mode: 0 };
    let (op, m) = d.map(q, &spec, 20, Some(&[1]));
    if m != 0 {
        let end = d.unmap_attribute(m);
        d.settle(end);
    }
    if op != 0 {
        d.settle(op);
    }
    d.seal(1);
    let (op, _) = d.map(q, &spec, 1, None);
    if op != 0 {
        d.settle(op);
    }
}

fn filters(d: &mut Driver<'_>) {
    let q = d.query_paths(&PATHS);
    d.write_settled(q, "f", 1, Payload::f32(&[1.0, 2.0, 3.0, 4.0]));
    let ab = d.query_paths(&PATHS[..2]);
    d.write_settled(ab, "g", 1, Payload::f32(&[1.0, 2.0]));
    d.seal(1);
    let cases: Vec<(Option<Vec<Pred<'_>>>, Vec<&str>)> = vec![
        (None, vec![]),
        (None, vec!["f"]),
        (Some(vec![Pred { attribute: "g", op: FILTER_HAS, values: &[] }]), vec!["f"]),
        (Some(vec![Pred { attribute: "g", op: FILTER_HAS, values: &[] }]), vec![]),
        (Some(vec![Pred { attribute: "nope", op: FILTER_HAS, values: &[] }]), vec!["f"]),
        (Some(vec![Pred { attribute: "usd-path", op: FILTER_PREFIX, values: &["/World/c"] }]), vec!["f"]),
        (Some(vec![Pred { attribute: "usd-path", op: FILTER_IN, values: &["/World/a", "/World/d"] }]), vec!["f"]),
        (Some(vec![Pred { attribute: "usd-path", op: FILTER_IN, values: &[] }]), vec!["f"]),
        (Some(vec![Pred { attribute: "usd-path", op: FILTER_CONTAINS, values: &["b"] }]), vec!["f"]),
        (Some(vec![Pred { attribute: "g", op: 42, values: &[] }]), vec!["f"]),
        (Some(vec![]), vec!["f"]),
    ];
    for (filter, attrs) in &cases {
        let (op, h) = d.query(filter.as_deref(), attrs);
        if op != 0 {
            d.settle(op);
        }
        if h != 0 {
            d.fetch_query_result(h);
            d.read_all(h, &["f", "g"], Range::Latest);
            let op = d.release_query(h);
            if op != 0 {
                d.settle(op);
            }
        }
    }
}

fn le_bytes<T: Copy, const N: usize>(values: &[T], f: fn(T) -> [u8; N]) -> Vec<u8> {
    values.iter().flat_map(|v| f(*v)).collect()
}

/// Value predicates on recorded columns, against the predicates the
/// library does evaluate. Every value operator (IN, CONTAINS, PREFIX, LT,
/// LE, GT, GE, and a code past the enum) on a column of every common dtype
/// (int32/64, uint8/32/64, float32/64, bool, float3 lanes, float arrays,
/// token ids, strings, a column only some prims carry, a name no prim
/// carries), with one, several, no and malformed values, alone and with a
/// metadata predicate; the metadata pairings on a hierarchy; the attributes
/// a query reports for the names its filter tests; and the one value test
/// on recorded data (`usd-prim-type IN`) across later unsealed, sealed and
/// deleted values.
fn value_predicates(d: &mut Driver<'_>) {
    let q = d.query_paths(&PATHS);
    let i32s = le_bytes(&[-5i32, 0, 7, i32::MAX], i32::to_le_bytes);
    d.write_settled(q, "i32", 1, Payload::scalar(0, 32, &i32s, "i32[-5,0,7,max]"));
    let i64s = le_bytes(&[-1i64, 1 << 40, 7, i64::MIN], i64::to_le_bytes);
    d.write_settled(q, "i64", 1, Payload::scalar(0, 64, &i64s, "i64[-1,2^40,7,min]"));
    let u32s = le_bytes(&[0u32, 1, 4_000_000_000, 7], u32::to_le_bytes);
    d.write_settled(q, "u32", 1, Payload::scalar(1, 32, &u32s, "u32[0,1,4e9,7]"));
    d.write_settled(q, "u8", 1, Payload::scalar(1, 8, &[0, 255, 7, 1], "u8[0,255,7,1]"));
    let u64s = le_bytes(&[u64::MAX, 0, 7, (1 << 53) + 1], u64::to_le_bytes);
    d.write_settled(q, "u64", 1, Payload::scalar(1, 64, &u64s, "u64[max,0,7,2^53+1]"));
    let f32s = le_bytes(&[1.5f32, -0.0, f32::NAN, 7.0], f32::to_le_bytes);
    d.write_settled(q, "f32", 1, Payload::scalar(2, 32, &f32s, "f32[1.5,-0,nan,7]"));
    let f64s = le_bytes(&[0.1f64, -2.25, f64::INFINITY, 7.0], f64::to_le_bytes);
    d.write_settled(q, "f64", 1, Payload::scalar(2, 64, &f64s, "f64[0.1,-2.25,inf,7]"));
    d.write_settled(q, "b", 1, Payload::scalar(6, 8, &[1, 0, 1, 0], "bool[1,0,1,0]"));
    let v3 = le_bytes(&[1f32, 2., 3., 7., 7., 7., 0., 0., 0., 1., 2., 7.], f32::to_le_bytes);
    d.write_settled(q, "v3", 1, Payload::rows(2, 32, 3, 4, &v3, "f32x3"));
    let rows = [vec![1f32, 2.], vec![7.], vec![], vec![8., 9., 7.]].map(|r| le_bytes(&r, f32::to_le_bytes));
    d.write_settled(q, "arr", 1, Payload::arrays(2, 32, &rows, "f32 arrays [1,2] [7] [] [8,9,7]"));
    let toks = d.tokens(&["Foo", "Bar", "7"]);
    let tok =
        Payload::scalar(1, 64, &le_bytes(&[toks[0], toks[1], toks[2], 0], u64::to_le_bytes), "tokens Foo Bar 7 0");
    d.write_settled(q, "tok", 1, tok.semantic(2));
    let strings = [b"hello".to_vec(), b"7".to_vec(), b"help".to_vec(), vec![]];
    d.write_settled(q, "str", 1, Payload::arrays(1, 8, &strings, "strings hello 7 help ''").semantic(13));
    let ab = d.query_paths(&PATHS[..2]);
    d.write_settled(ab, "sparse", 1, Payload::scalar(0, 32, &le_bytes(&[1i32, 7], i32::to_le_bytes), "i32[1,7]"));
    d.seal(1);
    let value_ops = [FILTER_IN, FILTER_CONTAINS, FILTER_PREFIX, FILTER_LT, FILTER_LE, FILTER_GT, FILTER_GE, 8];
    let columns = ["i32", "i64", "u32", "u8", "u64", "f32", "f64", "b", "v3", "arr", "tok", "str", "sparse", "nope"];
    for attribute in columns {
        for op in value_ops {
            d.filter_case(&[Pred { attribute, op, values: &["7"] }]);
        }
    }
    // Several, none, malformed and out-of-range values; a value predicate
    // next to a supported one; HAS ignores values.
    let odd: [&[&str]; 9] = [&[], &["1", "7"], &["x"], &["3.5"], &["-1"], &[" 7"], &["0x7"], &["1e99"], &["true"]];
    for values in odd {
        d.filter_case(&[Pred { attribute: "i32", op: FILTER_LT, values }]);
        d.filter_case(&[Pred { attribute: "u8", op: FILTER_IN, values }]);
    }
    let path_b = Pred { attribute: "usd-path", op: FILTER_IN, values: &["/World/b"] };
    d.filter_case(&[path_b, Pred { attribute: "i32", op: FILTER_GE, values: &["0"] }]);
    d.filter_case(&[Pred { attribute: "i32", op: FILTER_HAS, values: &["x", "y"] }]);

    // The metadata pairings on a hierarchy (values that are not paths
    // included), and what each reports as the query's attributes.
    let tree = d.query_paths(&["/P", "/P/c1", "/P/c2", "/P/c1/g"]);
    d.write_settled(tree, "k", 2, Payload::f32(&[1.0, 2.0, 3.0, 4.0]));
    d.seal(2);
    let has = |a| Pred { attribute: a, op: FILTER_HAS, values: &[] };
    let metadata: [&[Pred<'_>]; 16] = [
        &[has("usd-path")],
        &[has("usd-path"), has("usd-path")],
        &[has("usd-path"), has("k")],
        &[has("usd-parent")],
        &[has("usd-children")],
        &[has("usd-path"), has("usd-parent")],
        &[has("usd-prim-type")],
        &[has("nope"), has("k")],
        &[Pred { attribute: "usd-path", op: FILTER_PREFIX, values: &["/P/c"] }],
        &[Pred { attribute: "usd-path", op: FILTER_IN, values: &["/P/c1", "not a path", ""] }],
        &[Pred { attribute: "usd-path", op: FILTER_PREFIX, values: &["P", ""] }],
        &[Pred { attribute: "usd-parent", op: FILTER_IN, values: &["/P", "relative"] }],
        &[Pred { attribute: "usd-parent", op: FILTER_IN, values: &[""] }],
        &[Pred { attribute: "usd-children", op: FILTER_CONTAINS, values: &["/P/c1/g", "/nothing"] }],
        &[Pred { attribute: "usd-prim-type", op: FILTER_IN, values: &["", "Xform"] }],
        &[Pred { attribute: "usd-schemas", op: FILTER_CONTAINS, values: &[""] }],
    ];
    for f in metadata {
        d.filter_case(f);
    }

    // `usd-prim-type IN` reads recorded values: which ones, across later
    // writes that are unsealed, then sealed, then deleted.
    let t = d.tokens(&["Xform", "Mesh"]);
    let types = |a: u64, b: u64| Payload::scalar(1, 64, &le_bytes(&[a, b], u64::to_le_bytes), "prim types");
    let pc = d.query_paths(&["/P/c1", "/P/c2"]);
    d.write_settled(pc, "usd-prim-type", 3, types(t[0], t[0]));
    let xform = [Pred { attribute: "usd-prim-type", op: FILTER_IN, values: &["Xform"] }];
    let mesh = [Pred { attribute: "usd-prim-type", op: FILTER_IN, values: &["Mesh"] }];
    d.filter_case(&xform);
    d.seal(3);
    d.filter_case(&xform);
    d.write_settled(pc, "usd-prim-type", 4, types(t[1], t[0]));
    d.filter_case(&xform);
    d.filter_case(&mesh);
    d.seal(4);
    d.filter_case(&mesh);
    let c2 = d.query_paths(&["/P/c2"]);
    let op = d.delete(c2, &["usd-prim-type"], 5);
    d.settle(op);
    d.filter_case(&xform);
    d.seal(5);
    d.filter_case(&xform);
    d.filter_case(&[has("usd-prim-type")]);
}

fn reserved_metadata(d: &mut Driver<'_>) {
    let q = d.query_paths(&["/World", "/World/a", "/World/a/child"]);
    d.write_settled(q, "w", 1, Payload::f32(&[1.0, 2.0, 3.0]));
    d.seal(1);
    d.read_all(q, &["usd-path"], Range::Latest);
    d.write_settled(q, "usd-path", 2, Payload::f32(&[1.0, 2.0, 3.0]));
}

fn handles(d: &mut Driver<'_>) {
    let q = d.query_paths(&PATHS[..1]);
    d.write_settled(0, "h", 1, Payload::f32(&[1.0]));
    d.write_settled(0xfeed, "h", 1, Payload::f32(&[1.0]));
    d.read_all(0, &["h"], Range::Latest);
    d.read_all(0x1234_5678, &["h"], Range::Latest);
    d.query_from_list(0);
    d.query_from_list(0xabcdef);
    d.fetch_query_result(0);
    let op = d.release_query(0);
    d.settle(op);
    let op = d.delete(0, &["h"], 1);
    d.settle(op);
    let spec = MapSpec { attribute: "h", dtype: Some((2, 32, 1)), semantic: 0, prim_mode: 0, attribute_mode: 0 };
    let (op, _) = d.map(0, &spec, 1, None);
    d.settle(op);
    d.drain(0);
    d.release_read(0);
    d.unmap_attribute(0);
    d.write_settled(q, "h", 1, Payload::f32(&[1.0]));
    let op = d.release_query(q);
    d.settle(op);
    d.write_settled(q, "h", 2, Payload::f32(&[1.0]));
    let op = d.release_query(q);
    d.settle(op);
}

fn path_dictionary(d: &mut Driver<'_>) {
    let t = d.tokens(&["alpha", "beta", ""]);
    d.token_string(t[0], "alpha");
    d.token_string(t[2], "empty");
    d.token_string(0, "0");
    d.token_string(0xffff_ffff, "unknown");
    let l = d.path_list(&["/A", "/A/B", "/A"]);
    d.release_path_list(l);
    d.release_path_list(l);
    d.path_list(&["not/absolute"]);
    d.path_list(&[""]);
    d.path_list(&["/"]);
    d.path_list(&["/a//b"]);
    d.path_list(&[]);
    d.release_path_list(0);
}

fn op_lifecycle(d: &mut Driver<'_>) {
    let q = d.query_paths(&PATHS[..1]);
    let mut p = Payload::f32(&[1.0]);
    let op = d.write(q, Attr::Name("o"), 1, &mut p, false);
    d.wait(op, INFINITE);
    d.wait(op, 0);
    d.release_op(op);
    d.release_op(op);
    d.wait(op, 0);
    d.wait(0, 0);
    d.wait(0xdead_0000_0001, 0);
    d.release_op(0);
    let mut p = Payload::f32(&[1.0]);
    let failed = d.write(q, Attr::Name("o"), 1, &mut p, true);
    d.wait(failed, INFINITE);
    d.wait(failed, 0);
    d.release_op(failed);
}

fn retention_frontier(d: &mut Driver<'_>) {
    let q = d.query_paths(&PATHS[..1]);
    for o in 1..=5u64 {
        d.write_settled(q, "h", o, Payload::f32(&[o as f32]));
        d.seal(o);
    }
    d.ordinal_query(None);
    d.read_all(q, &["h"], Range::Snapshot(1));
    d.read_all(q, &["h"], Range::Between(0, 5));
    d.read_all(q, &["h"], Range::Snapshot(0));
}

/// Overlapping writes at one ordinal, and below it, under the admission
/// policy the scenario sets: the first overlap submitted while the first
/// write may still be pending, then again once it has run.
fn same_ordinal_overlap(d: &mut Driver<'_>) {
    let all = d.query_paths(&PATHS[..3]);
    let one = d.query_paths(&PATHS[..1]);
    let mut first = Payload::f32(&[1.0, 2.0, 3.0]);
    let a = d.write(all, Attr::Name("s"), 2, &mut first, false);
    let mut second = Payload::f32(&[9.0]);
    let b = d.write(one, Attr::Name("s"), 2, &mut second, false);
    for op in [a, b] {
        if op != 0 {
            d.settle(op);
        }
    }
    d.write_settled(one, "s", 2, Payload::f32(&[8.0]));
    d.write_settled(one, "s", 1, Payload::f32(&[7.0]));
    d.write_settled(one, "s", 3, Payload::f32(&[6.0]));
    d.write_settled(all, "s", 3, Payload::f32(&[4.0, 5.0, 6.0]));
    d.seal(3);
    d.read_all(all, &["s"], Range::Latest);
}

/// The retention frontier when seals name attributes (INCLUDE, EXCLUDE)
/// instead of advancing every floor: read after each step, with snapshots
/// of the sealed and the unsealed attribute at old ordinals.
fn frontier_under_scoped_seals(d: &mut Driver<'_>) {
    let q = d.query_paths(&PATHS[..1]);
    for o in 1..=6u64 {
        d.write_settled(q, "sealed", o, Payload::f32(&[o as f32]));
        let op = d.advance(o, 1, &["sealed"]);
        d.settle(op);
        d.ordinal_query(None);
    }
    d.write_settled(q, "other", 1, Payload::f32(&[10.0]));
    for o in 7..=9u64 {
        d.write_settled(q, "sealed", o, Payload::f32(&[o as f32]));
        let op = d.advance(o, 2, &["other"]);
        d.settle(op);
        d.ordinal_query(None);
    }
    d.ordinal_query(Some(Attr::Name("sealed")));
    d.ordinal_query(Some(Attr::Name("other")));
    d.read_all(q, &["sealed"], Range::Snapshot(2));
    d.read_all(q, &["sealed"], Range::Snapshot(8));
    d.read_all(q, &["sealed"], Range::Between(1, 9));
}

/// Attribute names that alias one stored column (the transform attributes
/// and the names the stage stores them as): writes, floors, reads and
/// change ranges through either name.
fn attribute_aliases(d: &mut Driver<'_>) {
    let q = d.query_paths(&PATHS[..2]);
    d.write_settled(q, "omni:xform", 1, Payload::f32(&[1.0, 2.0]));
    d.write_settled(q, "omni:fabric:localMatrix", 2, Payload::f32(&[3.0, 4.0]));
    d.write_settled(q, "omni:xform", 1, Payload::f32(&[5.0, 6.0]));
    let f64s: Vec<u8> = [7.0f64, 8.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    d.write_settled(q, "omni:fabric:localMatrix", 3, Payload::scalar(2, 64, &f64s, "f64[7,8]"));
    d.write_settled(q, "omni:resetXformStack", 1, Payload::scalar(6, 8, &[1, 0], "bool[1,0]"));
    let op = d.advance(2, 1, &["omni:xform"]);
    d.settle(op);
    d.ordinal_query(Some(Attr::Name("omni:fabric:localMatrix")));
    d.ordinal_query(Some(Attr::Name("omni:xform")));
    d.seal(3);
    d.read_all(q, &["omni:xform"], Range::Latest);
    d.read_all(q, &["omni:fabric:localMatrix"], Range::Between(1, 1));
    d.read_all(q, &["omni:xform", "omni:fabric:localMatrix"], Range::Snapshot(2));
    d.read_all(q, &["omni:fabric:resetXformStack"], Range::Latest);
}

/// A translation matrix (row-vector convention: the translation is the
/// last row).
fn translate(x: f64, y: f64, z: f64) -> [f64; 16] {
    [1., 0., 0., 0., 0., 1., 0., 0., 0., 0., 1., 0., x, y, z, 1.]
}

/// World matrices computed from local ones along the hierarchy: explicit
/// computations, the one a floor advance runs, a reset of the transform
/// stack, reads of the result by snapshot and by range.
fn hierarchy_computation(d: &mut Driver<'_>) {
    let tree = ["/W", "/W/A", "/W/A/B", "/W/C"];
    let q = d.query_paths(&tree);
    let locals = [translate(1., 0., 0.), translate(0., 2., 0.), translate(0., 0., 3.), translate(5., 0., 0.)];
    d.write_settled(q, "omni:xform", 1, Payload::f64_matrices(&locals, "4 translations"));
    // The world matrices exist (identity) before anything computes them.
    d.write_settled(
        q,
        "omni:fabric:worldMatrix",
        1,
        Payload::f64_matrices(&[translate(0., 0., 0.); 4], "4 identities"),
    );
    d.seal(1);
    let op = d.compute_hierarchy(1, 1, 2);
    if op != 0 {
        d.settle(op);
    }
    d.seal(2);
    d.read_all(q, &["omni:fabric:worldMatrix"], Range::Latest);
    d.read_all(q, &["omni:fabric:worldMatrix"], Range::Between(2, 2));
    // A local change, then a floor advance covering the world matrices.
    let qa = d.query_paths(&tree[1..2]);
    d.write_settled(qa, "omni:xform", 3, Payload::f64_matrices(&[translate(0., 7., 0.)], "translate y 7"));
    d.seal(3);
    d.read_all(q, &["omni:fabric:worldMatrix"], Range::Latest);
    d.read_all(q, &["omni:fabric:worldMatrix"], Range::Between(3, 3));
    // Resetting the transform stack of B makes its world matrix its local one.
    let qb = d.query_paths(&tree[2..3]);
    d.write_settled(qb, "omni:resetXformStack", 4, Payload::scalar(6, 8, &[1], "bool[1]"));
    let op = d.compute_hierarchy(1, 4, 4);
    if op != 0 {
        d.settle(op);
    }
    d.seal(4);
    d.read_all(q, &["omni:fabric:worldMatrix"], Range::Latest);
    // Other models and bad arguments.
    for model in [0u32, 2, 3, 4, 99] {
        let op = d.compute_hierarchy(model, 4, 5);
        if op != 0 {
            d.settle(op);
        }
    }
}

/// Clones: a subtree to fresh targets, onto a target that exists (what a
/// clone merges and what it replaces), several targets, bad sources and
/// targets, ordinals at and below floors and changes; values read back.
fn clones(d: &mut Driver<'_>) {
    let src = ["/S", "/S/a", "/S/b"];
    let q = d.query_paths(&src);
    d.write_settled(q, "v", 1, Payload::f32(&[1.0, 2.0, 3.0]));
    d.write_settled(q, "w", 1, Payload::f32(&[10.0, 20.0, 30.0]));
    d.seal(1);
    d.clone_prims("/S", &["/T"], 2);
    // A target that exists, with its own values, an attribute the source
    // lacks and a child the source lacks.
    let t2 = ["/U", "/U/a", "/U/z"];
    let qt = d.query_paths(&t2);
    d.write_settled(qt, "v", 2, Payload::f32(&[7.0, 8.0, 9.0]));
    d.write_settled(qt, "only", 2, Payload::f32(&[70.0, 80.0, 90.0]));
    d.clone_prims("/S", &["/U"], 3);
    d.clone_prims("/S/a", &["/V", "/W/x"], 3);
    d.clone_prims("/missing", &["/X"], 3);
    d.clone_prims("/S", &[], 3);
    d.clone_prims("/S", &["/S/a/inner"], 3);
    d.clone_prims("/S", &["relative"], 3);
    d.clone_prims("/S", &["/Y"], 1);
    d.seal(3);
    let all = ["/S", "/S/a", "/S/b", "/T", "/T/a", "/T/b", "/U", "/U/a", "/U/b", "/U/z", "/V", "/W/x", "/Y"];
    let qa = d.query_paths(&all);
    d.read_all(qa, &["v", "w", "only"], Range::Latest);
    d.read_all(qa, &["v", "w", "only"], Range::Between(3, 3));
    d.write_settled(q, "v", 4, Payload::f32(&[5.0, 5.0, 5.0]));
    d.clone_prims("/S", &["/T"], 3);
    d.clone_prims("/S", &["/T"], 5);
    d.seal(5);
    d.read_all(qa, &["v"], Range::Latest);
}

/// Parent, children and sibling lookups over prims created by writes
/// (only targets are created), clones and deletes; bad relations.
fn hierarchy_lookups(d: &mut Driver<'_>) {
    let q = d.query_paths(&["/H", "/H/a", "/H/b", "/H/a/x", "/Lone/Deep"]);
    d.write_settled(q, "v", 1, Payload::f32(&[1.0, 2.0, 3.0, 4.0, 5.0]));
    d.seal(1);
    let probe = ["/H", "/H/a", "/H/b", "/H/a/x", "/Lone/Deep", "/Lone", "/missing", "/"];
    for relation in [0u32, 1, 2] {
        d.hierarchy(&probe, 1, relation);
    }
    d.clone_prims("/H/a", &["/H/c"], 2);
    let qx = d.query_paths(&["/H/b"]);
    let op = d.delete(qx, &[], 2);
    if op != 0 {
        d.settle(op);
    }
    d.seal(2);
    for relation in [0u32, 1, 2] {
        d.hierarchy(&["/H", "/H/a", "/H/b", "/H/c", "/H/c/x"], 2, relation);
    }
    d.hierarchy(&["/H"], 2, 3);
    d.hierarchy(&[], 2, 1);
}

const FORCE: u32 = 1;

/// The change-range reads around a replacement at `at` that end at the
/// latest change `last` (so latest-only storage can answer them too).
fn ranges_to(d: &mut Driver<'_>, q: u64, attributes: &[&str], at: u64, last: u64) {
    d.read_all(q, attributes, Range::Latest);
    d.read_all(q, attributes, Range::Snapshot(last));
    for start in [at - 1, at] {
        d.read_all(q, attributes, Range::Between(start, last));
    }
}

/// Commits every group of a map session and ends it, settling each op.
fn map_session(d: &mut Driver<'_>, q: u64, spec: &MapSpec<'_>, ordinal: u64, sizes: Option<&[usize]>) {
    let (op, m) = d.map(q, spec, ordinal, sizes);
    if m != 0 {
        let ops = d.fill_and_unmap_groups(m, 10.0 * ordinal as f64);
        let end = d.unmap_attribute(m);
        for o in ops {
            d.settle(o);
        }
        d.settle(end);
    }
    if op != 0 {
        d.settle(op);
    }
}

fn map_spec(attribute: &str, dtype: Option<(u8, u8, u16)>, semantic: u32, attribute_mode: u32) -> MapSpec<'_> {
    MapSpec { attribute, dtype, semantic, prim_mode: 0, attribute_mode }
}

/// `ATTRIBUTE_MODE_FORCE`: schema replacement by writes and map sessions
/// (dtype, lanes, kind, semantic; some prims or all; no change; prims
/// without the attribute; batches), and reads of the replacement that
/// end at the latest change.
fn force_mode(d: &mut Driver<'_>) {
    d.show_semantic = true;
    let all = d.query_paths(&PATHS);
    let ab = d.query_paths(&PATHS[..2]);
    let a = d.query_paths(&PATHS[..1]);
    let cd = d.query_paths(&PATHS[2..]);
    let e = d.query_paths(&["/World/e"]);

    // dtype, on every target prim; then FORCE with no change.
    d.write_settled(ab, "fd", 1, Payload::f32(&[1.0, 2.0]));
    d.write_settled(ab, "fd", 2, Payload::f64(&[3.0, 4.0]));
    d.write_settled(ab, "fd", 2, Payload::f64(&[3.0, 4.0]).attribute_mode(FORCE));
    d.seal(2);
    ranges_to(d, ab, &["fd"], 2, 2);
    d.write_settled(ab, "fd", 3, Payload::f64(&[5.0, 6.0]).attribute_mode(FORCE));
    d.seal(3);
    ranges_to(d, ab, &["fd"], 3, 3);

    // lanes, on some prims (a subset query; a mask), then on all.
    d.write_settled(all, "fl", 4, Payload::f32(&[1.0, 2.0, 3.0, 4.0]));
    let rows = [1.0, 1.5, 1.75, 0.0, 0.0, 0.0, 3.0, 3.5, 3.75, 0.0, 0.0, 0.0];
    d.write_settled(all, "fl", 5, Payload::f32_rows(&rows, 3).mask(4, &[0b0101]).attribute_mode(FORCE));
    d.write_settled(all, "fl", 5, Payload::f32(&[5.0, 0.0, 6.0, 0.0]).mask(4, &[0b0010]).attribute_mode(FORCE));
    d.write_settled(a, "fl", 5, Payload::f32_rows(&rows[..3], 3).attribute_mode(FORCE));
    d.seal(5);
    ranges_to(d, all, &["fl"], 5, 5);
    d.write_settled(a, "fl", 6, Payload::f32(&[0.5]));
    d.write_settled(all, "fl", 6, Payload::f32(&[7.0, 8.0, 9.0, 10.0]));
    d.write_settled(ab, "fl", 6, Payload::f32_rows(&[0.0; 6], 3));
    d.write_settled(all, "fl", 7, Payload::f32(&[7.0, 8.0, 9.0, 10.0]).attribute_mode(FORCE));
    d.seal(7);
    ranges_to(d, all, &["fl"], 7, 7);

    // fixed to array and back.
    d.write_settled(ab, "fk", 8, Payload::f32(&[1.0, 2.0]));
    d.write_settled(a, "fk", 9, Payload::f32_arrays(&[&[1.0, 2.0, 3.0]]));
    d.write_settled(a, "fk", 9, Payload::f32_arrays(&[&[1.0, 2.0, 3.0]]).attribute_mode(FORCE));
    d.seal(9);
    ranges_to(d, ab, &["fk"], 9, 9);
    d.write_settled(ab, "fk", 10, Payload::f32(&[5.0, 6.0]).attribute_mode(FORCE));
    d.seal(10);
    ranges_to(d, ab, &["fk"], 10, 10);

    // semantic: POINT to NORMAL on one prim; NONE over two identities;
    // prims without the attribute.
    d.write_settled(ab, "fs", 11, Payload::f32_rows(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 3).semantic(5));
    d.write_settled(a, "fs", 12, Payload::f32_rows(&[0.0, 0.0, 1.0], 3).semantic(7));
    d.write_settled(a, "fs", 12, Payload::f32_rows(&[0.0, 0.0, 1.0], 3).semantic(7).attribute_mode(FORCE));
    d.seal(12);
    ranges_to(d, all, &["fs"], 12, 12);
    d.write_settled(ab, "fs", 13, Payload::f32_rows(&[1.0; 6], 3).attribute_mode(FORCE));
    d.write_settled(ab, "fs", 14, Payload::f32_rows(&[2.0; 6], 3));
    d.write_settled(a, "fs", 14, Payload::f32_rows(&[2.0; 3], 3).attribute_mode(FORCE));
    d.write_settled(cd, "fs", 15, Payload::f32_rows(&[3.0; 6], 3).semantic(8).attribute_mode(FORCE));
    d.write_settled(cd, "fs", 16, Payload::f32_rows(&[4.0; 6], 3).semantic(5));
    d.write_settled(e, "fs", 16, Payload::f32_rows(&[4.0; 3], 3).semantic(6));
    d.seal(16);
    ranges_to(d, all, &["fs"], 14, 16);
    d.read_all(e, &["fs"], Range::Latest);

    // FORCE onto prims that lack the attribute, and onto a mix.
    d.write_settled(ab, "fn", 17, Payload::f32(&[1.0, 2.0]).attribute_mode(FORCE));
    d.write_settled(all, "fn", 18, Payload::f64(&[1.0, 2.0, 3.0, 4.0]).attribute_mode(FORCE));
    d.seal(18);
    ranges_to(d, all, &["fn"], 18, 18);

    // Batches: a forcing entry with an ordinary one, and with a
    // conflicting ordinary one.
    let mut writes = [("fd", Payload::f32(&[1.0, 2.0]).attribute_mode(FORCE)), ("fb", Payload::f32(&[1.0, 2.0]))];
    let op = d.write_many(ab, &mut writes, 19, false);
    d.settle(op);
    let mut writes = [("fb", Payload::f64(&[1.0, 2.0]).attribute_mode(FORCE)), ("fd", Payload::f64(&[1.0, 2.0]))];
    let op = d.write_many(ab, &mut writes, 20, false);
    d.settle(op);
    d.seal(20);
    ranges_to(d, ab, &["fd", "fb"], 19, 20);

    // Map sessions: REJECT and FORCE over another dtype, FORCE with no
    // change, without a dtype, to arrays, to a semantic on one prim.
    d.write_settled(ab, "fmap", 21, Payload::f32(&[1.0, 2.0]));
    map_session(d, ab, &map_spec("fmap", Some((2, 64, 1)), 0, 0), 22, None);
    map_session(d, ab, &map_spec("fmap", Some((2, 64, 1)), 0, FORCE), 22, None);
    d.seal(22);
    ranges_to(d, all, &["fmap"], 22, 22);
    map_session(d, ab, &map_spec("fmap", Some((2, 64, 1)), 0, FORCE), 23, None);
    map_session(d, ab, &map_spec("fmap", None, 0, FORCE), 24, None);
    map_session(d, all, &map_spec("fmap", Some((2, 32, 1)), 0, FORCE), 25, Some(&[1, 2, 0, 1]));
    d.seal(25);
    ranges_to(d, all, &["fmap"], 25, 25);
    map_session(d, a, &map_spec("fmap", Some((2, 32, 3)), 6, FORCE), 26, None);
    d.seal(26);
    ranges_to(d, all, &["fmap"], 26, 26);
    d.read_all(all, &["fmap"], Range::Between(22, 26));
}

/// Reads of history across a replacement (before, at and after it) once
/// later changes exist: ours keeps versions (spec section 3.2); the
/// published library keeps the latest values only.
fn force_history(d: &mut Driver<'_>) {
    d.show_semantic = true;
    let all = d.query_paths(&PATHS);
    let ab = d.query_paths(&PATHS[..2]);
    d.write_settled(all, "h", 1, Payload::f32(&[1.0, 2.0, 3.0, 4.0]));
    d.write_settled(ab, "h", 2, Payload::f64(&[5.0, 6.0]).attribute_mode(FORCE));
    d.write_settled(all, "h", 3, Payload::f64(&[7.0, 8.0, 9.0, 10.0]).attribute_mode(FORCE));
    d.write_settled(ab, "h", 4, Payload::f32_arrays(&[&[1.0], &[2.0, 3.0]]).attribute_mode(FORCE));
    d.seal(4);
    for at in 0..=4 {
        d.read_all(all, &["h"], Range::Snapshot(at));
    }
    for (a, b) in [(0, 1), (1, 2), (0, 2), (2, 3), (1, 3), (3, 4), (0, 4)] {
        d.read_all(all, &["h"], Range::Between(a, b));
    }
}

/// Build information, the hierarchy computation models and the USD stage
/// id of an instance without USD.
fn informational_exports(d: &mut Driver<'_>) {
    d.exports();
}

/// Which semantics the recorded metadata accepts: `usd-prim-type` token ids
/// and `usd-schemas` / `usd-ancestor-types` token-id arrays written with no
/// semantic, `TOKEN_ID` (2) and others.
fn metadata_semantics(d: &mut Driver<'_>) {
    let q = d.query_paths(&PATHS[..2]);
    let t = d.tokens(&["Xform", "Scope"]);
    let ids: Vec<u8> = t.iter().flat_map(|v| v.to_le_bytes()).collect();
    let row: Vec<u8> = t[..1].iter().flat_map(|v| v.to_le_bytes()).collect();
    for (ordinal, semantic) in (1u64..).zip([0u32, 2, 1, 13]) {
        d.write_settled(q, "usd-prim-type", ordinal, Payload::scalar(1, 64, &ids, "tokens").semantic(semantic));
        for name in ["usd-schemas", "usd-ancestor-types"] {
            let arrays = Payload::arrays(1, 64, &[row.clone(), Vec::new()], "token rows").semantic(semantic);
            d.write_settled(q, name, ordinal, arrays);
        }
    }
}

/// A write accepted and failing when it runs (a prim type name written as
/// a schema name), then a write below its ordinal to the same cells:
/// admission counts committed changes, so the failed one does not make the
/// later one an ordinal conflict (as the published library answers).
fn failed_write_admission(d: &mut Driver<'_>) {
    let q = d.query_paths(&PATHS[..2]);
    let t = d.tokens(&["Xform", "Scope", "MySchema"]);
    let ids: Vec<u8> = t[..2].iter().flat_map(|v| v.to_le_bytes()).collect();
    let row = |token: u64| token.to_le_bytes().to_vec();
    d.write_settled(q, "usd-prim-type", 3, Payload::scalar(1, 64, &ids, "tokens"));
    d.seal(3);
    d.write_settled(q, "usd-schemas", 5, Payload::arrays(1, 64, &[row(t[0]), Vec::new()], "token rows"));
    d.write_settled(q, "usd-schemas", 4, Payload::arrays(1, 64, &[row(t[2]), Vec::new()], "token rows"));
    // (Not read back: token ids are each library's own.)
    d.seal(5);
}
