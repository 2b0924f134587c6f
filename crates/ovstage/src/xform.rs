//! World transforms from local ones along the hierarchy: the contract's
//! CPU_INCREMENTAL hierarchy computation model.
//!
//! A prim's world matrix (`omni:fabric:worldMatrix`) is its local matrix
//! (`omni:fabric:localMatrix`, authored as `omni:xform`) times its parent's
//! world matrix, in the row-vector convention of 4x4 float64 matrices
//! (row-major, translation in the last row). As the published library does,
//! only prims that carry a world matrix and a local one, and whose parent
//! carries a world matrix, are computed (a top-level prim keeps the world
//! matrix written to it), and only rows whose value changes are recorded,
//! as a change at the output ordinal.
//!
//! It runs in two ways: `compute_hierarchy` (an op ordered with every
//! mutation of the two attributes, reading the inputs as of its input
//! ordinal: ours honours it exactly thanks to versions, where the published
//! library takes the latest), and any floor advance that covers the world
//! matrices while a transform input changed since the last computation
//! (recorded at the advance's ordinal, before the floor moves).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use ovstage_sched::{Cells, Failure, Job, OpSpec, Order};
use ovstage_types::{DType, Error, OpId, Ordinal, PrimPath, Result, Status};

use crate::family::Family;
use crate::mutation::{Ctx, Payload, Reach, RowsOf, Targets};
use crate::schema::{Storage, ValueKind};
use crate::stage::{Stage, StageInner, lock};
use crate::store::backend::StorageBackend;
use crate::store::column::Column;

/// The stored local matrices.
pub(crate) const LOCAL: &str = "omni:fabric:localMatrix";
/// The computed world matrices.
pub(crate) const WORLD: &str = "omni:fabric:worldMatrix";
/// The transform-stack reset flags (an input too).
pub(crate) const RESET: &str = "omni:fabric:resetXformStack";

const CALL: &str = "compute_hierarchy";

/// 4x4 float64 matrices, one per prim.
const MATRIX: Storage = Storage { dtype: DType::F64.with_lanes(16), kind: ValueKind::Fixed };

type Matrix = [f64; 16];

fn matrix(bytes: &[u8]) -> Option<Matrix> {
    if bytes.len() != 128 {
        return None;
    }
    let mut m = [0.0; 16];
    for (v, b) in m.iter_mut().zip(bytes.chunks_exact(8)) {
        *v = f64::from_le_bytes(b.try_into().expect("8 bytes"));
    }
    Some(m)
}

/// `a * b` (row-major 4x4).
fn multiply(a: &Matrix, b: &Matrix) -> Matrix {
    let mut out = [0.0; 16];
    for r in 0..4 {
        for c in 0..4 {
            out[r * 4 + c] = (0..4).map(|k| a[r * 4 + k] * b[k * 4 + c]).sum();
        }
    }
    out
}

/// Whether a family is one of the computation's inputs or its output.
pub(crate) fn is_transform(name: &str) -> bool {
    matches!(name, LOCAL | WORLD | RESET)
}

/// Which model a computation runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ComputationModel {
    /// Incremental, on the CPU (CPU_INCREMENTAL, and RUNTIME_DEFAULT, which
    /// selects it).
    CpuIncremental,
    /// GPU_INCREMENTAL or GPU_GLOBAL where the process has a CUDA device:
    /// the same matrices and recorded rows as [`Self::CpuIncremental`],
    /// computed on the host, where this build keeps its columns.
    GpuOnHost,
    /// A GPU model where the process has no CUDA device (the reason): the
    /// op is accepted and fails when it runs, as the published library's.
    GpuWithoutDevice(String),
}

/// The contract's model ids, as listed by `get_hierarchy_computation_models`
/// (the ids name the published library's models).
pub const COMPUTATION_MODELS: [(u32, &str, &str); 4] = [
    (
        1,
        "cpu-incremental",
        "World matrices from local matrices along the hierarchy, on the CPU, recording the rows that change",
    ),
    (
        2,
        "gpu-incremental",
        "As cpu-incremental, for a process with a CUDA device (computed on the host, where this build keeps its columns)",
    ),
    (
        3,
        "gpu-global",
        "As cpu-incremental, for a process with a CUDA device (computed on the host, where this build keeps its columns)",
    ),
    (4, "runtime-default", "The process default: cpu-incremental"),
];

impl ComputationModel {
    /// The model a contract id names; `cuda_device` is asked, for the GPU
    /// models only, whether the process has a CUDA device (`Err`: why not).
    /// An unknown id is `INVALID_ARGUMENT`.
    pub fn from_id(id: i64, cuda_device: impl FnOnce() -> std::result::Result<(), String>) -> Result<Self> {
        match id {
            1 | 4 => Ok(Self::CpuIncremental),
            2 | 3 => Ok(match cuda_device() {
                Ok(()) => Self::GpuOnHost,
                Err(reason) => Self::GpuWithoutDevice(reason),
            }),
            other => Err(Error::invalid_argument(format!(
                "{other} is not a hierarchy computation model (CPU_INCREMENTAL 1, GPU_INCREMENTAL 2, GPU_GLOBAL 3, RUNTIME_DEFAULT 4)"
            ))),
        }
    }
}

impl Stage {
    /// Enqueues a world-matrix computation with `model`: see
    /// [`Stage::compute_hierarchy`].
    pub fn compute_hierarchy_with(
        &self,
        model: ComputationModel,
        input_ordinal: impl Into<Ordinal>,
        output_ordinal: impl Into<Ordinal>,
    ) -> Result<OpId> {
        match model {
            ComputationModel::CpuIncremental | ComputationModel::GpuOnHost => {
                self.compute_hierarchy(input_ordinal, output_ordinal)
            }
            ComputationModel::GpuWithoutDevice(reason) => {
                let err = Error::not_supported(format!(
                    "{CALL}: the GPU hierarchy computation models need a CUDA device, and this process has none ({reason})"
                ));
                Ok(self.inner.sched.submit(&OpSpec::independent(), Box::new(move || Err(Failure::from(err))))?)
            }
        }
    }

    /// Enqueues a world-matrix computation (CPU_INCREMENTAL): world
    /// matrices from the local matrices as of `input_ordinal`, each changed
    /// row recorded at `output_ordinal`. The op is ordered with every
    /// mutation of the transform attributes; `output_ordinal` at or below
    /// the world matrices' floor is `WRITE_FLOOR_VIOLATION` (the published
    /// library records there anyway, under readers that already read it).
    pub fn compute_hierarchy(
        &self,
        input_ordinal: impl Into<Ordinal>,
        output_ordinal: impl Into<Ordinal>,
    ) -> Result<OpId> {
        let inner = &self.inner;
        let (input, output) = (input_ordinal.into().get(), output_ordinal.into().get());
        let local = inner.family(inner.paths.intern_token(LOCAL)?)?;
        let world = inner.family(inner.paths.intern_token(WORLD)?)?;
        let spec = OpSpec::new(Order::Barrier { ordinal: output, cells: Cells::keys([local.id, world.id]) })
            .labelled("compute_hierarchy");
        let targets = Targets::unknown();
        let owner = inner.clone();
        inner.submit_mutation(&spec, Reach::Families(&[(&world, &targets)]), output, CALL, move |ticket| -> Job {
            Box::new(move || {
                let result = owner.compute_world(input, output);
                drop(ticket);
                result.map(|_| ()).map_err(Failure::from)
            })
        })
    }
}

impl StageInner {
    /// Recomputes the world matrices from the inputs as of `input` and
    /// publishes the rows that change at `output`; how many changed.
    pub(crate) fn compute_world(&self, input: u64, output: u64) -> Result<usize> {
        // Whatever changes from here on is seen by the next computation.
        self.xform_dirty.store(false, Ordering::Release);
        let family = |name: &str| self.paths.lookup_token(name).and_then(|t| self.existing_family(t));
        let (Some(local_f), Some(world_f)) = (family(LOCAL), family(WORLD)) else { return Ok(0) };
        let column = |f: &Family| f.columns().into_iter().find(|c| c.storage == MATRIX);
        let (Some(local_c), Some(world_c)) = (column(&local_f), column(&world_f)) else { return Ok(0) };
        // The prims carrying a world matrix, parents first (a parent's path
        // is shorter), with their parents.
        let mut prims: Vec<(PrimPath, Option<PrimPath>, usize)> = {
            let table = lock(&self.prims);
            let world = world_c.lock();
            table
                .live_prims()
                .filter(|p| world.row_of(*p).is_some())
                .map(|p| {
                    let depth = self.paths.path_text(p).map(|t| t.matches('/').count()).unwrap_or(0);
                    (p, table.parent(p), depth)
                })
                .collect()
        };
        prims.sort_by_key(|(_, _, depth)| *depth);
        let value_at = |c: &Arc<Column>, p: PrimPath, at: u64| {
            let g = c.lock();
            g.row_of(p).and_then(|r| g.row_at(r, at)).and_then(|b| matrix(&b))
        };
        let mut worlds: std::collections::HashMap<PrimPath, Matrix> = std::collections::HashMap::new();
        let mut changed: Vec<(PrimPath, Matrix)> = Vec::new();
        for (p, parent, _) in &prims {
            let current = value_at(&world_c, *p, output);
            let computed = match (parent, value_at(&local_c, *p, input)) {
                (Some(parent), Some(local)) => {
                    let parent_world = worlds.get(parent).copied().or_else(|| value_at(&world_c, *parent, output));
                    parent_world.map(|pw| multiply(&local, &pw))
                }
                _ => None,
            };
            match computed {
                Some(m) => {
                    if current != Some(m) {
                        changed.push((*p, m));
                    }
                    worlds.insert(*p, m);
                }
                None => {
                    if let Some(m) = current {
                        worlds.insert(*p, m);
                    }
                }
            }
        }
        if changed.is_empty() {
            return Ok(0);
        }
        let ctx = Ctx { call: CALL, attribute: &world_f.name_text, ordinal: output };
        let bytes: Vec<u8> = changed.iter().flat_map(|(_, m)| m.iter().flat_map(|v| v.to_le_bytes())).collect();
        let data = world_c.memory.upload(&bytes).map_err(|e| ctx.err(Status::OutOfMemory, e))?;
        let rows = world_c.lock().assign_rows(changed.iter().map(|(p, _)| *p));
        self.commit(&world_f, &world_c, RowsOf::Assigned(rows), Payload::Values { data, offsets: None }, None, &ctx)?;
        // Its own output is no new input.
        self.xform_dirty.store(false, Ordering::Release);
        Ok(changed.len())
    }

    /// Notes that a transform input or the world matrices changed.
    pub(crate) fn mark_transforms_changed(&self, family: &Family) {
        if family.is_transform {
            self.xform_dirty.store(true, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn translate(x: f64, y: f64, z: f64) -> Matrix {
        [1., 0., 0., 0., 0., 1., 0., 0., 0., 0., 1., 0., x, y, z, 1.]
    }

    #[test]
    fn products_compose_translations_in_the_row_vector_convention() {
        assert_eq!(multiply(&translate(0., 0., 3.), &translate(0., 2., 0.)), translate(0., 2., 3.));
        let scale: Matrix = [2., 0., 0., 0., 0., 2., 0., 0., 0., 0., 2., 0., 0., 0., 0., 1.];
        // Local translation, then the parent's scale: the translation scales.
        assert_eq!(multiply(&translate(1., 0., 0.), &scale)[12], 2.);
        assert_eq!(matrix(&[0; 127]), None);
    }
}
