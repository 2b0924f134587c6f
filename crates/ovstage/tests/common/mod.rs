//! Helpers shared by the integration tests.
#![allow(dead_code)]

use ovstage::{
    FloorScope, GroupKind, OpId, OrdinalRange, PrimMode, QueryHandle, ReadGroup, Stage, StageConfig, Tensor, Timeout,
    WriteData,
};

pub(crate) const LONG: Timeout = Timeout::from_nanos(20_000_000_000);

pub(crate) fn stage(lanes: usize) -> Stage {
    Stage::with_config("test", StageConfig::default().with_lanes(lanes))
}

pub(crate) fn query(stage: &Stage, paths: &[&str]) -> QueryHandle {
    let list = stage.paths().create_path_list_from_strings(paths).unwrap();
    let q = stage.query_from_path_list(list).unwrap();
    stage.paths().release_path_list_reference(list).unwrap();
    q
}

/// `n` prim paths `/World/P{i}`.
pub(crate) fn prim_paths(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("/World/P{i}")).collect()
}

pub(crate) fn f32x3(values: &[[f32; 3]]) -> WriteData {
    WriteData::fixed(Tensor::rows(values.iter().flatten().copied().collect(), 3).unwrap())
}

pub(crate) fn scalars(values: &[f32]) -> WriteData {
    WriteData::fixed(Tensor::rows(values.to_vec(), 1).unwrap())
}

pub(crate) fn write(stage: &Stage, q: QueryHandle, attr: &str, ordinal: u64, data: WriteData) -> OpId {
    stage.write_attribute(q, attr, ordinal, data, PrimMode::Upsert).unwrap()
}

pub(crate) fn seal(stage: &Stage, ordinal: u64) -> OpId {
    stage.advance_write_floor(ordinal, FloorScope::All).unwrap()
}

pub(crate) fn wait(stage: &Stage, op: OpId) {
    stage.wait_ok(op, LONG).unwrap_or_else(|e| panic!("{op} failed: {e}"));
}

/// All groups of a read.
pub(crate) fn read_groups(
    stage: &Stage,
    q: QueryHandle,
    attr: &str,
    range: OrdinalRange,
) -> ovstage::Result<Vec<ReadGroup>> {
    let r = stage.read_attributes(q, &[attr.into()], range)?;
    let mut out = Vec::new();
    while let Some(g) = stage.fetch_read_next(r.handle, LONG)? {
        out.push(g);
    }
    let release = stage.release_read(r.handle)?;
    for op in [r.op, release] {
        stage.wait_ok(op, LONG)?;
        stage.release_op(op)?;
    }
    Ok(out)
}

/// What a read returned: `(index in the query, values)` of every value
/// group's prims, and the indices of tombstoned prims, both sorted.
pub(crate) type ReadOut = (Vec<(u32, Vec<f32>)>, Vec<u32>);

/// Reads `attr` and flattens the groups (see [`ReadOut`]).
pub(crate) fn read_f32(stage: &Stage, q: QueryHandle, attr: &str, range: OrdinalRange) -> ovstage::Result<ReadOut> {
    let mut values = Vec::new();
    let mut tombstones = Vec::new();
    for g in read_groups(stage, q, attr, range)? {
        match g.kind() {
            GroupKind::Values => {
                for (i, row) in g.rows::<f32>()? {
                    values.push((i, row.to_vec()));
                }
            }
            GroupKind::Tombstones => {
                tombstones.extend((0..g.len()).map(|i| g.prims().list_index(i)));
            }
        }
    }
    values.sort_by_key(|v| v.0);
    tombstones.sort();
    Ok((values, tombstones))
}

/// `(index in the query, elements)` of every prim in value groups.
pub(crate) fn arrays_f32(groups: &[ReadGroup]) -> Vec<(u32, Vec<f32>)> {
    let mut out = Vec::new();
    for g in groups.iter().filter(|g| g.kind() == GroupKind::Values) {
        assert!(g.is_array());
        let data = g.data().unwrap();
        assert_eq!(data.tensor_count(), g.len(), "one tensor per prim");
        for i in 0..g.len() {
            out.push((g.prims().list_index(i), data.tensor(i).values::<f32>().unwrap().to_vec()));
        }
    }
    out.sort_by_key(|e| e.0);
    out
}
