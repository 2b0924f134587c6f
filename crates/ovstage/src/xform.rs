//! World transforms from local ones along the hierarchy: the contract's
//! hierarchy computation models.
//!
//! A prim's world matrix (`omni:fabric:worldMatrix`) is its local matrix
//! (`omni:fabric:localMatrix`, authored as `omni:xform`) times its parent's
//! world matrix, in the row-vector convention of 4x4 float64 matrices
//! (row-major, translation in the last row). As the published library does,
//! only prims that carry a world matrix and a local one are computed; a
//! parent that carries no world matrix lends its local matrices composed
//! to the top instead. The CPU model (CPU_INCREMENTAL) leaves a top-level
//! prim the world matrix written to it and records the rows whose value
//! changes; the GPU models (run where the process has a CUDA device, on
//! the host: [`Rule::Gpu`]) give a top-level prim its local matrix and
//! record every computed row, as the published library does on a GPU.
//!
//! It runs in two ways: `compute_hierarchy` (an op ordered with every
//! mutation of the two attributes, reading the inputs as of its input
//! ordinal: ours honours it exactly thanks to versions, where the published
//! library takes the latest), and any floor advance that covers the world
//! matrices while a transform input changed since the last computation
//! (recorded at the advance's ordinal, before the floor moves).

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use ovstage_sched::{Cells, Failure, Job, OpSpec, Order};
use ovstage_types::{DType, Error, OpId, Ordinal, PrimPath, Result, Status};

use crate::family::Family;
use crate::mutation::{Ctx, Payload, Reach, RowsOf, Targets};
use crate::schema::{Storage, ValueKind};
use crate::stage::{Stage, StageInner, lock};
use crate::store::backend::StorageBackend;

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

const IDENTITY: Matrix = [1., 0., 0., 0., 0., 1., 0., 0., 0., 0., 1., 0., 0., 0., 0., 1.];

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
    /// the GPU models' rule (see the module doc), computed on the host,
    /// where this build keeps its columns.
    GpuOnHost,
    /// A GPU model where the process has no CUDA device (the reason): the
    /// op is accepted and fails when it runs, as the published library's.
    GpuWithoutDevice(String),
}

/// What the two GPU models compute (the same here: see [`Rule::Gpu`]).
const GPU_MODEL: &str = "World matrices from local ones, top-level prims included, every computed row recorded; needs a CUDA device (computed on the host, where this build keeps its columns)";

/// The contract's model ids, as listed by `get_hierarchy_computation_models`
/// (the ids name the published library's models).
pub const COMPUTATION_MODELS: [(u32, &str, &str); 4] = [
    (
        1,
        "cpu-incremental",
        "World matrices from local matrices along the hierarchy, on the CPU, recording the rows that change",
    ),
    (2, "gpu-incremental", GPU_MODEL),
    (3, "gpu-global", GPU_MODEL),
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
            ComputationModel::CpuIncremental => self.compute_hierarchy(input_ordinal, output_ordinal),
            ComputationModel::GpuOnHost => self.compute_by(Rule::Gpu, input_ordinal.into(), output_ordinal.into()),
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
        self.compute_by(Rule::Cpu, input_ordinal.into(), output_ordinal.into())
    }

    fn compute_by(&self, rule: Rule, input_ordinal: Ordinal, output_ordinal: Ordinal) -> Result<OpId> {
        let inner = &self.inner;
        let (input, output) = (input_ordinal.get(), output_ordinal.get());
        let local = inner.family(inner.paths.intern_token(LOCAL)?)?;
        let world = inner.family(inner.paths.intern_token(WORLD)?)?;
        let spec = OpSpec::new(Order::Barrier { ordinal: output, cells: Cells::keys([local.id, world.id]) })
            .labelled("compute_hierarchy");
        let targets = Targets::unknown();
        let owner = inner.clone();
        inner.submit_mutation(&spec, Reach::Families(&[(&world, &targets)]), output, CALL, move |ticket| -> Job {
            Box::new(move || {
                let result = owner.compute_world(input, output, rule);
                drop(ticket);
                result.map(|_| ()).map_err(Failure::from)
            })
        })
    }
}

/// How world matrices are computed: the CPU model's rule or the GPU
/// models' (as the published library computes them on a GPU: a top-level
/// prim's world matrix is its local one, and every computed row is
/// recorded, changed or not).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Rule {
    Cpu,
    Gpu,
}

impl StageInner {
    /// Recomputes the world matrices from the inputs as of `input` under
    /// `rule` and publishes the rows it records at `output`; how many.
    pub(crate) fn compute_world(&self, input: u64, output: u64, rule: Rule) -> Result<usize> {
        // Whatever changes from here on is seen by the next computation.
        self.xform_dirty.store(false, Ordering::Release);
        let family = |name: &str| self.paths.lookup_token(name).and_then(|t| self.existing_family(t));
        let (Some(local_f), Some(world_f)) = (family(LOCAL), family(WORLD)) else { return Ok(0) };
        let column = |f: &Family| f.columns().into_iter().find(|c| c.storage == MATRIX);
        let (Some(local_c), Some(world_c)) = (column(&local_f), column(&world_f)) else { return Ok(0) };
        // The live prims carrying a world matrix, parents first (by depth),
        // with their parents, and the ancestors of those whose parent
        // carries none (with their own parents).
        let (prims, parents, ancestry) = {
            let table = lock(&self.prims);
            let world = world_c.lock();
            // Bucketed by depth (a counting sort: depths are few).
            let mut by_depth: Vec<Vec<PrimPath>> = Vec::new();
            for p in (0..world.nrows()).map(|r| world.prim_of(r)).filter(|p| table.is_live(*p)) {
                let depth = std::iter::successors(table.parent(p), |q| table.parent(*q)).count();
                if by_depth.len() <= depth {
                    by_depth.resize_with(depth + 1, Vec::new);
                }
                by_depth[depth].push(p);
            }
            let prims: Vec<PrimPath> = by_depth.concat();
            let parents: Vec<Option<PrimPath>> = prims.iter().map(|p| table.parent(*p)).collect();
            let mut ancestry: HashMap<PrimPath, Option<PrimPath>> = HashMap::new();
            for q in parents.iter().flatten().filter(|q| world.row_of(**q).is_none()) {
                let mut at = Some(*q);
                while let Some(a) = at.filter(|a| !ancestry.contains_key(a)) {
                    at = table.parent(a);
                    ancestry.insert(a, at);
                }
            }
            (prims, parents, ancestry)
        };
        // Where each prim sits in `prims`, by prim index.
        let mut slot_of = vec![u32::MAX; prims.iter().map(|p| p.get() as usize).max().unwrap_or(0) + 1];
        for (i, p) in prims.iter().enumerate() {
            slot_of[p.get() as usize] = i as u32;
        }
        // Both columns read once, every row in one walk of their versions,
        // and held while the rows are computed (the op is ordered with
        // every mutation of both; nothing else holds both).
        let world_g = world_c.lock();
        let local_g = local_c.lock();
        // Every row of each column, asked in row order (the lookup sorts
        // what it is asked: sorted already, that costs one pass).
        let all_worlds = world_g.cells_as_of(&(0..world_g.nrows()).collect::<Vec<u32>>(), output);
        let all_locals = local_g.cells_as_of(&(0..local_g.nrows()).collect::<Vec<u32>>(), input);
        let worlds: Vec<Option<&[u8]>> = prims
            .iter()
            .map(|p| all_worlds[world_g.row_of(*p).expect("a prim of the world column") as usize])
            .collect();
        let locals: Vec<Option<&[u8]>> =
            prims.iter().map(|p| local_g.row_of(*p).and_then(|r| all_locals[r as usize])).collect();
        let ancestor_locals: HashMap<PrimPath, Matrix> = ancestry
            .keys()
            .filter_map(|a| Some((*a, local_g.row_of(*a).and_then(|r| all_locals[r as usize]).and_then(matrix)?)))
            .collect();
        // A prim's local matrices composed up to the top (identity where a
        // prim has none): what the published library uses for a parent that
        // carries no world matrix.
        let mut chains: HashMap<PrimPath, Matrix> = HashMap::new();
        let mut chain = |q: PrimPath| -> Matrix {
            let mut path = Vec::new();
            let mut at = Some(q);
            let mut below = IDENTITY;
            while let Some(a) = at {
                if let Some(m) = chains.get(&a) {
                    below = *m;
                    break;
                }
                path.push(a);
                at = ancestry.get(&a).copied().flatten();
            }
            for a in path.into_iter().rev() {
                below = ancestor_locals.get(&a).map_or(below, |l| multiply(l, &below));
                chains.insert(a, below);
            }
            below
        };
        // The recorded rows, packed as they will be published, and where
        // each prim's recorded row is (u32::MAX: none; its world matrix is
        // the stored one).
        let mut recorded: Vec<PrimPath> = Vec::new();
        let mut bytes: Vec<u8> = Vec::new();
        let mut at_out = vec![u32::MAX; prims.len()];
        let world_of = |j: usize, bytes: &[u8], at_out: &[u32]| match at_out[j] {
            u32::MAX => worlds[j].and_then(matrix),
            k => matrix(&bytes[k as usize * 128..(k as usize + 1) * 128]),
        };
        for i in 0..prims.len() {
            let Some(local) = locals[i].and_then(matrix) else { continue };
            let parent_world = match parents[i] {
                None => None,
                Some(q) => match slot_of.get(q.get() as usize).filter(|j| **j != u32::MAX) {
                    Some(&j) => world_of(j as usize, &bytes, &at_out),
                    None => Some(chain(q)),
                },
            };
            let computed = match rule {
                // A top-level prim keeps the world matrix written to it.
                Rule::Cpu => parent_world.map(|pw| multiply(&local, &pw)),
                Rule::Gpu => Some(parent_world.map_or(local, |pw| multiply(&local, &pw))),
            };
            let Some(m) = computed else { continue };
            if rule == Rule::Gpu || worlds[i].and_then(matrix) != Some(m) {
                if bytes.is_empty() {
                    bytes.reserve((prims.len() - i) * 128);
                }
                at_out[i] = recorded.len() as u32;
                recorded.push(prims[i]);
                for v in m {
                    bytes.extend_from_slice(&v.to_le_bytes());
                }
            }
        }
        drop((local_g, world_g));
        if recorded.is_empty() {
            return Ok(0);
        }
        let ctx = Ctx { call: CALL, attribute: &world_f.name_text, ordinal: output };
        let data = world_c.memory.upload(&bytes).map_err(|e| ctx.err(Status::OutOfMemory, e))?;
        let rows = world_c.lock().assign_rows(recorded.iter().copied());
        self.commit(&world_f, &world_c, RowsOf::Assigned(rows), Payload::Values { data, offsets: None }, None, &ctx)?;
        // Its own output is no new input.
        self.xform_dirty.store(false, Ordering::Release);
        Ok(recorded.len())
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
