//! World matrices from local matrices along the hierarchy (the
//! CPU_INCREMENTAL model): explicit computations, the one a floor advance
//! runs, which prims are computed, which rows are recorded, and inputs taken
//! as of the input ordinal.

mod common;

use common::*;
use ovstage::{FloorScope, OrdinalRange, Stage, Tensor, WriteData};

type Matrix = [f64; 16];

fn translate(x: f64, y: f64, z: f64) -> Matrix {
    [1., 0., 0., 0., 0., 1., 0., 0., 0., 0., 1., 0., x, y, z, 1.]
}

fn matrices(ms: &[Matrix]) -> WriteData {
    WriteData::fixed(Tensor::rows(ms.iter().flatten().copied().collect::<Vec<f64>>(), 16).unwrap())
}

const TREE: [&str; 4] = ["/W", "/W/A", "/W/A/B", "/W/C"];

/// The tree with local translations and identity world matrices at 1.
fn scene() -> (Stage, ovstage::QueryHandle) {
    let s = stage(2);
    let q = query(&s, &TREE);
    let locals = [translate(1., 0., 0.), translate(0., 2., 0.), translate(0., 0., 3.), translate(5., 0., 0.)];
    wait(&s, write(&s, q, "omni:xform", 1, matrices(&locals)));
    wait(&s, write(&s, q, "omni:fabric:worldMatrix", 1, matrices(&[translate(0., 0., 0.); 4])));
    (s, q)
}

/// Each prim's world translation (x, y, z) read over `range`, by its
/// index in the query.
fn worlds(s: &Stage, q: ovstage::QueryHandle, range: OrdinalRange) -> Vec<(u32, [f64; 3])> {
    let groups = read_groups(s, q, "omni:fabric:worldMatrix", range).unwrap();
    let mut out = Vec::new();
    for g in &groups {
        for (i, m) in g.rows::<f64>().unwrap() {
            out.push((i, [m[12], m[13], m[14]]));
        }
    }
    out.sort_by_key(|(p, _)| *p);
    out
}

#[test]
fn an_advance_computes_world_matrices_from_the_hierarchy() {
    let (s, q) = scene();
    wait(&s, seal(&s, 1));
    // /W is top-level: it keeps the world matrix written to it.
    assert_eq!(
        worlds(&s, q, OrdinalRange::LATEST),
        vec![(0, [0., 0., 0.]), (1, [0., 2., 0.]), (2, [0., 2., 3.]), (3, [5., 0., 0.])]
    );
    // A local change: the next advance covering the world matrices records
    // only the rows that change, at its ordinal.
    let qa = query(&s, &TREE[1..2]);
    wait(&s, write(&s, qa, "omni:xform", 3, matrices(&[translate(0., 7., 0.)])));
    wait(&s, seal(&s, 3));
    assert_eq!(worlds(&s, q, OrdinalRange::changes(3u64, 3u64).unwrap()), vec![(1, [0., 7., 0.]), (2, [0., 7., 3.])]);
    // An advance that does not cover the world matrices computes nothing.
    let qc = query(&s, &TREE[3..4]);
    wait(&s, write(&s, qc, "omni:xform", 4, matrices(&[translate(9., 0., 0.)])));
    wait(&s, s.advance_write_floor(4u64, FloorScope::Include(vec!["omni:xform".into()])).unwrap());
    wait(&s, seal(&s, 5));
    assert_eq!(worlds(&s, q, OrdinalRange::changes(4u64, 4u64).unwrap()), vec![]);
    assert_eq!(worlds(&s, q, OrdinalRange::changes(5u64, 5u64).unwrap()), vec![(3, [9., 0., 0.])]);
}

#[test]
fn an_explicit_computation_reads_inputs_as_of_its_input_ordinal() {
    let (s, q) = scene();
    let qa = query(&s, &TREE[1..2]);
    wait(&s, write(&s, qa, "omni:xform", 2, matrices(&[translate(0., 7., 0.)])));
    // Inputs as of 1 (before A's change at 2), recorded at 3.
    wait(&s, s.compute_hierarchy(1u64, 3u64).unwrap());
    wait(&s, s.advance_write_floor(3u64, FloorScope::Include(vec!["omni:xform".into()])).unwrap());
    wait(&s, s.advance_write_floor(3u64, FloorScope::Include(vec!["omni:fabric:worldMatrix".into()])).unwrap());
    assert_eq!(
        worlds(&s, q, OrdinalRange::snapshot(3u64)),
        vec![(0, [0., 0., 0.]), (1, [0., 2., 0.]), (2, [0., 2., 3.]), (3, [5., 0., 0.])]
    );
    // The same computation again changes nothing and records nothing.
    wait(&s, s.compute_hierarchy(1u64, 4u64).unwrap());
    wait(&s, seal(&s, 4));
    assert_eq!(worlds(&s, q, OrdinalRange::changes(4u64, 4u64).unwrap()), vec![]);
    // At or below the floor: refused.
    let e = s.compute_hierarchy(4u64, 4u64).unwrap_err();
    assert_eq!(e.status(), ovstage::Status::WriteFloorViolation);
}

#[test]
fn model_ids_name_the_contracts_models_and_ask_for_a_device_only_for_gpu_ones() {
    use ovstage::ComputationModel as M;
    let never = || -> Result<(), String> { panic!("a CPU model asked for a CUDA device") };
    assert_eq!(M::from_id(1, never).unwrap(), M::CpuIncremental);
    assert_eq!(M::from_id(4, never).unwrap(), M::CpuIncremental);
    assert_eq!(M::from_id(2, || Ok(())).unwrap(), M::GpuOnHost);
    assert_eq!(M::from_id(3, || Err("no driver".into())).unwrap(), M::GpuWithoutDevice("no driver".into()));
    for bad in [0, 5, -1, i64::from(u32::MAX)] {
        let e = M::from_id(bad, never).unwrap_err();
        assert_eq!(e.status(), ovstage::Status::InvalidArgument);
        assert!(e.message().contains(&format!("{bad} is not a hierarchy computation model")), "{e}");
    }
    let ids: Vec<u32> = ovstage::COMPUTATION_MODELS.iter().map(|m| m.0).collect();
    assert_eq!(ids, [1, 2, 3, 4]);
}

/// The GPU models compute as the published library does on a GPU (seen on
/// an H200 by xtask/gpu-check/hierarchy-probe.py): a top-level prim's world
/// matrix is its local one, and every computed row is recorded, changed or
/// not; the CPU model keeps a top-level prim's written world matrix and
/// records the rows that change.
#[test]
fn a_gpu_model_computes_top_level_prims_from_their_local_matrix_and_records_every_row() {
    use ovstage::ComputationModel as M;
    let run = |model: M| {
        let (s, q) = scene();
        let qa = query(&s, &TREE[1..2]);
        wait(&s, write(&s, qa, "omni:xform", 2, matrices(&[translate(0., 7., 0.)])));
        wait(&s, s.compute_hierarchy_with(model.clone(), 2u64, 3u64).unwrap());
        // Again, with nothing changed in between.
        wait(&s, s.compute_hierarchy_with(model, 3u64, 4u64).unwrap());
        wait(&s, seal(&s, 4));
        (
            worlds(&s, q, OrdinalRange::snapshot(4u64)),
            worlds(&s, q, OrdinalRange::changes(3u64, 3u64).unwrap()),
            worlds(&s, q, OrdinalRange::changes(4u64, 4u64).unwrap()),
        )
    };
    let (latest, at3, at4) = run(M::CpuIncremental);
    assert_eq!(latest, vec![(0, [0., 0., 0.]), (1, [0., 7., 0.]), (2, [0., 7., 3.]), (3, [5., 0., 0.])]);
    assert_eq!(at3, latest[1..].to_vec());
    assert_eq!(at4, vec![]);
    let (latest, at3, at4) = run(M::GpuOnHost);
    assert_eq!(latest, vec![(0, [1., 0., 0.]), (1, [1., 7., 0.]), (2, [1., 7., 3.]), (3, [6., 0., 0.])]);
    assert_eq!(at3, latest);
    assert_eq!(at4, latest);
}

#[test]
fn a_gpu_model_without_a_device_is_accepted_and_its_op_fails_with_the_reason() {
    let (s, _) = scene();
    let op = s.compute_hierarchy_with(ovstage::ComputationModel::GpuWithoutDevice("no driver here".into()), 1u64, 2u64);
    let e = s.wait_ok(op.unwrap(), LONG).unwrap_err();
    assert_eq!(e.status(), ovstage::Status::NotSupported);
    assert!(e.message().contains("need a CUDA device") && e.message().contains("(no driver here)"), "{e}");
}

/// A prim whose parent carries no world matrix takes the parent's local
/// matrices composed up to the top (identity where a prim has none), as the
/// published library computes it (its output for this tree, recorded by
/// xtask/gpu-check/hierarchy-probe.py: /W/D/F at (1, 4, 9), /X/G at
/// (3, 3, 100) under a top-level prim without a local matrix).
#[test]
fn a_parent_without_a_world_matrix_lends_its_local_matrices_composed_to_the_top() {
    let s = stage(2);
    let tree = ["/W", "/W/D", "/W/D/F", "/X", "/X/G"];
    let q = query(&s, &tree);
    let with_local = query(&s, &["/W", "/W/D", "/W/D/F", "/X/G"]);
    let locals = [translate(1., 0., 0.), translate(0., 0., 9.), translate(0., 4., 0.), translate(3., 3., 0.)];
    wait(&s, write(&s, with_local, "omni:xform", 1, matrices(&locals)));
    let with_world = query(&s, &["/W", "/W/D/F", "/X", "/X/G"]);
    let worlds_at_1 = [translate(10., 0., 0.), translate(0., 0., 0.), translate(0., 0., 100.), translate(0., 0., 0.)];
    wait(&s, write(&s, with_world, "omni:fabric:worldMatrix", 1, matrices(&worlds_at_1)));
    wait(&s, s.compute_hierarchy(1u64, 2u64).unwrap());
    wait(&s, seal(&s, 2));
    assert_eq!(
        worlds(&s, q, OrdinalRange::snapshot(2u64)),
        vec![(0, [10., 0., 0.]), (2, [1., 4., 9.]), (3, [0., 0., 100.]), (4, [3., 3., 100.])]
    );
}
