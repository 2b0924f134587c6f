//! The workloads, named after the reference's own benchmark suite and
//! defined as follows. Unless stated otherwise a workload's stage holds `N`
//! prims `/World/Env/P0..P{N-1}` (created in that order), queried by a path
//! list in creation order, with an `f32` scalar attribute written at
//! ordinal 1 and sealed; every iteration that writes uses the next ordinal;
//! "+ wait" means `wait_op(INFINITE)` then `release_op`; reads fetch every
//! group with `fetch_read_next(INFINITE)`, release each group, then the
//! read handle (waited). A "latest" read is a snapshot read at the last
//! sealed ordinal, given explicitly, as the reference's suite reads (not the
//! `end_ordinal = u64::MAX` form), except in the `_PersistentThreads` cases,
//! whose readers race the floor and use `u64::MAX`. The timed part is one
//! iteration as described.
//!
//! - `ImmediateWriteWait`: N = 1000; write all N values + wait.
//! - `ImmediateReadFetch`: N = 1000; read the latest values, fetch, release.
//! - `ImmediateQueryFetch`: N = 1000; `query` (HAS the attribute),
//!   `fetch_query_result`, `release_query_result`, `release_query`.
//! - `QueryThenRead_Latest/N`: the query of `ImmediateQueryFetch`, then a
//!   latest read of the query's prims through its handle, then the releases.
//! - `LatestRead_Warm_CreationOrder/N`: a latest read of the N prims through
//!   the same path-list query every iteration.
//! - `WriteScalar_Full/N`: write all N values + wait.
//! - `WriteScalar_SparseMask/N`: write with a mask selecting every 16th prim
//!   (`ceil(N/16)` written; the payload still has N rows) + wait.
//! - `WriteAttributeLoop_Warm/N/C`: C attributes written once in setup;
//!   each iteration writes all C (one `write_attribute` each, N values, the
//!   same ordinal) then waits for all.
//! - `IsaacLab_WriteXformMat4x4_Cpu/P`: P prims with a 16-lane `f64`
//!   attribute (a 4x4 matrix, 128 bytes per prim); write all P + wait, then
//!   advance the floor to the write's ordinal + wait (the reference's case
//!   seals every step too).
//! - `IsaacLab_MapXformMat4x4_Cpu/P`: the same attribute through a map
//!   session: `map_attribute` (16-lane f64), fetch the group, copy the P
//!   matrices into it, `unmap_attribute` + wait, then advance the floor +
//!   wait.
//! - `MapUnmap_FixedSize/N`: a map session of the f32 attribute (existing
//!   schema): map, fetch, fill, unmap + wait.
//! - `MapUnmap_Array/N`: an `f32` array attribute of 512 elements per prim;
//!   map with 512 elements per prim, fetch, fill every prim's tensor, unmap +
//!   wait.
//! - `WriteArray_MultiTensor_Full/N`: the array attribute written with one
//!   512-element tensor per prim + wait.
//! - `SameOrdinalDisjointWrites_{Strict,Nondecreasing,FloorOnly}/W`: the
//!   process's admission policy set to the named one; W prims, each with its
//!   own one-prim query. One iteration is a frame: W writes of one value
//!   each at the frame's ordinal, each waited before the next is enqueued
//!   (as the reference's case does), then an advance of the write floor to
//!   it + wait. 5 frames run in setup.
//! - `WriteSealRead_SteadyState/P`: one iteration is a step: write P values +
//!   wait, advance the floor to the step's ordinal + wait, read the latest
//!   values. Reports the resident memory before and after the measurement.
//!   (The reference rejects a read overlapping an outstanding write, so the
//!   step waits before reading.)
//! - `SparseUpdate_LargeStage/P/U`: P prims (1M) with 4 f32 attributes
//!   written and sealed. One iteration is a step: write U (500)
//!   prims spread evenly over the stage (every P/U-th) + wait, advance the
//!   floor to the step's ordinal + wait, read those U prims' values at it
//!   (read, fetch, release). What the reference's
//!   `LargeLoadedStage_SparseUpdate_IncludeFloor` counts (a write, a floor
//!   and a read of 500 rows per step), with the updated prims chosen here.
//! - `ConcurrentLatestRead/T`: N = 10000; each iteration starts T threads,
//!   each does one latest read of all N (read, fetch, release), and joins
//!   them. As in the reference's suite (whose cases start their threads in
//!   every iteration: its counters say `thread_count=T`, `rows_per_iter=T*N`,
//!   and a trace of the library's entry points shows T new threads per
//!   iteration), the time includes starting and joining the threads, which
//!   at T = 1 is most of it.
//! - `MixedReadWrite/T`: N = 10000; each iteration starts T reader threads,
//!   each reading the odd prims' (5000) latest values, and one writer thread
//!   that writes the even prims (5000) at the next ordinal + wait, and joins
//!   them. As in the reference's suite, the iteration does not advance the
//!   floor and the readers read the last sealed ordinal. Its fixture is
//!   rebuilt for each of Google Benchmark's runs, so unsealed writes pile up
//!   only over one run (tens to a few hundred iterations, fewer for a slower
//!   library); here the floor is advanced, untimed, every 16 iterations, so
//!   every iteration sees at most 16 unsealed writes on either library.
//!   (Readers of the prims being written would see an unsealed change and
//!   fail with WRITE_FLOOR_VIOLATION, by contract.)
//! - `ConcurrentLatestRead_PersistentThreads/T`: as `ConcurrentLatestRead/T`
//!   but the T reader threads are started once, in setup, and released for
//!   each iteration by a barrier: the reads alone, without thread start-up.
//!   No reference case measures this.
//! - `MixedReadWrite_PersistentThreads_Sealed/T`: the same prims as
//!   `MixedReadWrite/T`, with T reader threads started once (released by a
//!   barrier) while the calling thread writes the even prims, advances the
//!   floor to the write's ordinal and waits for both: concurrent reads
//!   against a write that is sealed in every iteration. No reference case
//!   measures this.
//!
//! Ours only (the reference runs one serialized lane, so these would not
//! compare like with like):
//!
//! - `ours/EnqueueLatency`: the enqueue of an ordinal query (an op with no
//!   payload); each call timed alone, reported as p50 / p99. Every op of a
//!   batch (tens of thousands) stays outstanding until the batch ends, so
//!   the heap grows by tens of megabytes per batch and the allocator
//!   returns them afterwards: the figures include the page faults of that
//!   growth.
//! - `ours/EnqueueLatency_Window1024`: the same enqueues with at most 1024
//!   outstanding, as a producer that releases as it runs ahead would have:
//!   after every 1024 the ops are waited and released, untimed.
//! - `ours/PollFinishedOp`: `wait_op(op, 0)` of a completed op.
//! - `ours/IndependentOrdinals_64KB/{1lane,all-lanes}`: 64 writes of 64 KB
//!   (16384 f32, distinct attributes) at distinct ordinals, submitted
//!   without waiting, then waited; with one lane and with one per core.
//! - `ours/SmallOpThroughput`: 1000 one-value writes at distinct ordinals
//!   submitted without waiting, then waited.
//! - `ours/SmallOpThroughput_2Producers`: the same from two threads at once
//!   (started once, released by a barrier), on one stage, each writing its
//!   own attribute of its own prim: 2000 writes an iteration, which two
//!   cores can run side by side (the ops share nothing but the stage).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ovstage_abi::api_types::ovstage_write_data_t;
use ovstage_abi::dlpack::{DLDataType, DLTensor};

use crate::api::{
    HostTensor, LATEST, Library, Result, Selection, Stage, every, expect_rows, prim_paths, snapshot, write_data,
};

/// A workload set up on one library, ready to run iterations.
pub(crate) trait Bench {
    /// Runs `n` iterations; returns the time the timed part took.
    fn run(&mut self, n: u64) -> Result<Duration>;

    /// Figures to report besides the time (name, value).
    fn extra(&mut self) -> Vec<(String, String)> {
        Vec::new()
    }
}

/// How big the workloads are.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Scale {
    /// The sizes of the reference's suite.
    Full,
    /// Tiny sizes, to check the workloads still work (no timing value).
    Smoke,
}

/// Which libraries a case runs on.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Runs {
    /// Ours and the reference.
    Both,
    /// Ours only (figures the reference cannot show).
    OursOnly,
}

type Builder = Box<dyn Fn(&'static Library) -> Result<Box<dyn Bench>> + Send + Sync>;

/// One concrete workload at one size.
pub(crate) struct Case {
    pub(crate) name: String,
    pub(crate) runs: Runs,
    pub(crate) build: Builder,
}

fn case(
    name: String,
    runs: Runs,
    build: impl Fn(&'static Library) -> Result<Box<dyn Bench>> + Send + Sync + 'static,
) -> Case {
    Case { name, runs, build: Box::new(build) }
}

/// Every case at `scale`, in report order.
pub(crate) fn cases(scale: Scale) -> Vec<Case> {
    let full = scale == Scale::Full;
    let pick = |full_sizes: &[usize], smoke: &[usize]| -> Vec<usize> {
        if full { full_sizes.to_vec() } else { smoke.to_vec() }
    };
    let small = if full { 1000 } else { 16 };
    let big = if full { 10_000 } else { 64 };
    let mut out = Vec::new();
    out.push(case("ImmediateWriteWait".into(), Runs::Both, move |l| {
        Ok(Box::new(ScalarWrite::new(l, small, Sparse::No)?))
    }));
    out.push(case("ImmediateReadFetch".into(), Runs::Both, move |l| Ok(Box::new(LatestRead::new(l, small)?))));
    out.push(case("ImmediateQueryFetch".into(), Runs::Both, move |l| {
        Ok(Box::new(QueryFetch::new(l, small, ThenRead::No)?))
    }));
    for n in pick(&[1000, 10_000, 100_000], &[32]) {
        out.push(case(format!("QueryThenRead_Latest/{n}"), Runs::Both, move |l| {
            Ok(Box::new(QueryFetch::new(l, n, ThenRead::Yes)?))
        }));
    }
    for n in pick(&[1000, 10_000, 100_000], &[32]) {
        out.push(case(format!("LatestRead_Warm_CreationOrder/{n}"), Runs::Both, move |l| {
            Ok(Box::new(LatestRead::new(l, n)?))
        }));
    }
    for n in pick(&[1000, 10_000, 100_000], &[32]) {
        out.push(case(format!("WriteScalar_Full/{n}"), Runs::Both, move |l| {
            Ok(Box::new(ScalarWrite::new(l, n, Sparse::No)?))
        }));
    }
    for n in pick(&[1000, 10_000, 100_000], &[32]) {
        out.push(case(format!("WriteScalar_SparseMask/{n}"), Runs::Both, move |l| {
            Ok(Box::new(ScalarWrite::new(l, n, Sparse::Every16)?))
        }));
    }
    let loops: Vec<(usize, usize)> = if full { vec![(100_000, 1), (100_000, 24)] } else { vec![(32, 1), (32, 3)] };
    for (n, c) in loops {
        out.push(case(format!("WriteAttributeLoop_Warm/{n}/{c}"), Runs::Both, move |l| {
            Ok(Box::new(AttributeLoop::new(l, n, c)?))
        }));
    }
    for p in pick(&[4096, 16_384, 65_536], &[16]) {
        out.push(case(format!("IsaacLab_WriteXformMat4x4_Cpu/{p}"), Runs::Both, move |l| {
            Ok(Box::new(Xform::new(l, p, XformPath::Write)?))
        }));
    }
    for p in pick(&[4096, 16_384, 65_536], &[16]) {
        out.push(case(format!("IsaacLab_MapXformMat4x4_Cpu/{p}"), Runs::Both, move |l| {
            Ok(Box::new(Xform::new(l, p, XformPath::Map)?))
        }));
    }
    for n in pick(&[1000, 10_000, 100_000], &[32]) {
        out.push(case(format!("MapUnmap_FixedSize/{n}"), Runs::Both, move |l| Ok(Box::new(MapFixed::new(l, n)?))));
    }
    let elements = if full { 512 } else { 8 };
    for n in pick(&[1000, 10_000, 100_000], &[16]) {
        out.push(case(format!("MapUnmap_Array/{n}"), Runs::Both, move |l| {
            Ok(Box::new(Arrays::new(l, n, elements, ArrayPath::Map)?))
        }));
    }
    for n in pick(&[1000, 10_000, 100_000], &[16]) {
        out.push(case(format!("WriteArray_MultiTensor_Full/{n}"), Runs::Both, move |l| {
            Ok(Box::new(Arrays::new(l, n, elements, ArrayPath::Write)?))
        }));
    }
    for (policy, value) in [("Strict", 3u64), ("Nondecreasing", 2), ("FloorOnly", 1)] {
        for w in pick(&[1024, 2048, 4096, 8192], &[8]) {
            out.push(case(format!("SameOrdinalDisjointWrites_{policy}/{w}"), Runs::Both, move |l| {
                Ok(Box::new(DisjointFrames::new(l, w, value)?))
            }));
        }
    }
    for p in pick(&[100, 500], &[8]) {
        out.push(case(format!("WriteSealRead_SteadyState/{p}"), Runs::Both, move |l| {
            Ok(Box::new(SteadyState::new(l, p)?))
        }));
    }
    let (stage_prims, updated) = if full { (1_000_000, 500) } else { (64, 4) };
    out.push(case(format!("SparseUpdate_LargeStage/{stage_prims}/{updated}"), Runs::Both, move |l| {
        Ok(Box::new(SparseUpdate::new(l, stage_prims, updated)?))
    }));
    for t in pick(&[1, 2, 4, 8], &[2]) {
        out.push(case(format!("ConcurrentLatestRead/{t}"), Runs::Both, move |l| {
            Ok(Box::new(Spawned::new(l, big, t, Writer::No)?))
        }));
    }
    for t in pick(&[1, 2, 4, 8], &[2]) {
        out.push(case(format!("MixedReadWrite/{t}"), Runs::Both, move |l| {
            Ok(Box::new(Spawned::new(l, big, t, Writer::EvenPrims)?))
        }));
    }
    for t in pick(&[1, 2, 4, 8], &[2]) {
        out.push(case(format!("ConcurrentLatestRead_PersistentThreads/{t}"), Runs::Both, move |l| {
            Ok(Box::new(Concurrent::new(l, big, t, Writer::No)?))
        }));
    }
    for t in pick(&[1, 2, 4, 8], &[2]) {
        out.push(case(format!("MixedReadWrite_PersistentThreads_Sealed/{t}"), Runs::Both, move |l| {
            Ok(Box::new(Concurrent::new(l, big, t, Writer::EvenPrims)?))
        }));
    }
    out.push(case("ours/EnqueueLatency".into(), Runs::OursOnly, |l| {
        Ok(Box::new(EnqueueLatency::new(l, Window::Batch)?))
    }));
    out.push(case("ours/EnqueueLatency_Window1024".into(), Runs::OursOnly, |l| {
        Ok(Box::new(EnqueueLatency::new(l, Window::Ops(1024))?))
    }));
    out.push(case("ours/PollFinishedOp".into(), Runs::OursOnly, |l| Ok(Box::new(PollFinished::new(l)?))));
    let (writes, floats) = if full { (64, 16_384) } else { (4, 64) };
    for (label, lanes) in [("1lane", 1u64), ("all-lanes", 0)] {
        out.push(case(format!("ours/IndependentOrdinals_64KB/{label}"), Runs::OursOnly, move |l| {
            Ok(Box::new(IndependentOrdinals::new(l, lanes, writes, floats)?))
        }));
    }
    let ops = if full { 1000 } else { 16 };
    out.push(case("ours/SmallOpThroughput".into(), Runs::OursOnly, move |l| Ok(Box::new(SmallOps::new(l, ops)?))));
    out.push(case("ours/SmallOpThroughput_2Producers".into(), Runs::OursOnly, move |l| {
        Ok(Box::new(Producers::new(l, 2, ops)?))
    }));
    out
}

/// A stage with N prims, one path-list query over them and an f32 scalar
/// attribute written at ordinal 1 and sealed.
struct Scalars {
    stage: Stage<'static>,
    query: u64,
    token: u64,
    n: usize,
    ordinal: u64,
}

impl Scalars {
    fn new(lib: &'static Library, n: usize) -> Result<Scalars> {
        let stage = Stage::new(lib, c"ovstage-bench")?;
        let token = stage.tokens(&["value"])?[0];
        let query = stage.query_paths(&prim_paths(0..n))?;
        let values: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let mut t = HostTensor::f32_rows(&values, 1);
        let dl = [t.dl()];
        let op = stage.write(query, token, 1, write_data(&dl, false, &Selection::All))?;
        stage.wait(op)?;
        stage.seal(1)?;
        Ok(Scalars { stage, query, token, n, ordinal: 1 })
    }

    fn next(&mut self) -> u64 {
        self.ordinal += 1;
        self.ordinal
    }

    /// One step of a simulation loop over `query` (of `rows` prims): write
    /// `data` at the next ordinal + wait, advance the floor to it + wait,
    /// read the values there.
    fn write_seal_read(&mut self, query: u64, data: ovstage_write_data_t, rows: u64, what: &str) -> Result<()> {
        let ordinal = self.next();
        let write = self.stage.write(query, self.token, ordinal, data)?;
        self.stage.wait(write)?;
        self.stage.seal(ordinal)?;
        let got = self.stage.read(query, &[self.token], snapshot(ordinal))?;
        expect_rows(what, got, rows)
    }
}

#[derive(Copy, Clone, PartialEq, Eq)]
enum Sparse {
    No,
    Every16,
}

/// Write N f32 values (or every 16th) + wait.
struct ScalarWrite {
    s: Scalars,
    tensor: HostTensor,
    mask: Option<Vec<u64>>,
}

impl ScalarWrite {
    fn new(lib: &'static Library, n: usize, sparse: Sparse) -> Result<ScalarWrite> {
        let s = Scalars::new(lib, n)?;
        let values: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
        let mask = (sparse == Sparse::Every16).then(|| every(n, 16));
        Ok(ScalarWrite { s, tensor: HostTensor::f32_rows(&values, 1), mask })
    }
}

impl Bench for ScalarWrite {
    fn run(&mut self, n: u64) -> Result<Duration> {
        let dl = [self.tensor.dl()];
        let selection = match &self.mask {
            Some(bits) => Selection::Mask { count: self.s.n as u32, bits },
            None => Selection::All,
        };
        let data = write_data(&dl, false, &selection);
        let start = Instant::now();
        for _ in 0..n {
            let ordinal = self.s.next();
            let op = self.s.stage.write(self.s.query, self.s.token, ordinal, data)?;
            self.s.stage.wait(op)?;
        }
        Ok(start.elapsed())
    }
}

/// A latest read of N prims through one path-list query.
struct LatestRead {
    s: Scalars,
}

impl LatestRead {
    fn new(lib: &'static Library, n: usize) -> Result<LatestRead> {
        Ok(LatestRead { s: Scalars::new(lib, n)? })
    }
}

impl Bench for LatestRead {
    fn run(&mut self, n: u64) -> Result<Duration> {
        let start = Instant::now();
        for _ in 0..n {
            let got = self.s.stage.read(self.s.query, &[self.s.token], snapshot(self.s.ordinal))?;
            expect_rows("latest read", got, self.s.n as u64)?;
        }
        Ok(start.elapsed())
    }
}

#[derive(Copy, Clone, PartialEq, Eq)]
enum ThenRead {
    No,
    Yes,
}

/// A HAS query, its result, optionally a latest read through it, releases.
struct QueryFetch {
    s: Scalars,
    read: ThenRead,
}

impl QueryFetch {
    fn new(lib: &'static Library, n: usize, read: ThenRead) -> Result<QueryFetch> {
        Ok(QueryFetch { s: Scalars::new(lib, n)?, read })
    }
}

impl Bench for QueryFetch {
    fn run(&mut self, n: u64) -> Result<Duration> {
        let st = &self.s.stage;
        let start = Instant::now();
        for _ in 0..n {
            let (q, op) = st.query_has(self.s.token)?;
            let count = st.query_result(q)?;
            if count != self.s.n {
                return Err(format!("query matched {count} prims, expected {}", self.s.n));
            }
            if self.read == ThenRead::Yes {
                let got = st.read(q, &[self.s.token], snapshot(self.s.ordinal))?;
                expect_rows("read through the query", got, self.s.n as u64)?;
            }
            st.wait(op)?;
            st.release_query(q)?;
        }
        Ok(start.elapsed())
    }
}

/// C attributes written one `write_attribute` each per iteration.
struct AttributeLoop {
    s: Scalars,
    tokens: Vec<u64>,
    tensor: HostTensor,
}

impl AttributeLoop {
    fn new(lib: &'static Library, n: usize, columns: usize) -> Result<AttributeLoop> {
        let mut s = Scalars::new(lib, n)?;
        let names: Vec<String> = (0..columns).map(|c| format!("column{c}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let tokens = s.stage.tokens(&refs)?;
        let values: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let mut tensor = HostTensor::f32_rows(&values, 1);
        let dl = [tensor.dl()];
        let ordinal = s.next();
        for t in &tokens {
            let op = s.stage.write(s.query, *t, ordinal, write_data(&dl, false, &Selection::All))?;
            s.stage.wait(op)?;
        }
        s.stage.seal(ordinal)?;
        Ok(AttributeLoop { s, tokens, tensor })
    }
}

impl Bench for AttributeLoop {
    fn run(&mut self, n: u64) -> Result<Duration> {
        let dl = [self.tensor.dl()];
        let data = write_data(&dl, false, &Selection::All);
        let mut ops = Vec::with_capacity(self.tokens.len());
        let start = Instant::now();
        for _ in 0..n {
            let ordinal = self.s.next();
            ops.clear();
            for t in &self.tokens {
                ops.push(self.s.stage.write(self.s.query, *t, ordinal, data)?);
            }
            for op in &ops {
                self.s.stage.wait(*op)?;
            }
        }
        Ok(start.elapsed())
    }
}

#[derive(Copy, Clone, PartialEq, Eq)]
enum XformPath {
    Write,
    Map,
}

const F64X16: DLDataType = DLDataType { code: 2, bits: 64, lanes: 16 };

/// P prims with a 4x4 f64 matrix attribute, written or mapped.
struct Xform {
    stage: Stage<'static>,
    query: u64,
    token: u64,
    source: Vec<f64>,
    tensor: HostTensor,
    path: XformPath,
    ordinal: u64,
}

impl Xform {
    fn new(lib: &'static Library, prims: usize, path: XformPath) -> Result<Xform> {
        let stage = Stage::new(lib, c"ovstage-bench")?;
        let token = stage.tokens(&["xform"])?[0];
        let query = stage.query_paths(&prim_paths(0..prims))?;
        let source: Vec<f64> = (0..prims * 16).map(|i| (i % 17) as f64).collect();
        let mut tensor = HostTensor::f64_rows(&source, 16);
        let dl = [tensor.dl()];
        let op = stage.write(query, token, 1, write_data(&dl, false, &Selection::All))?;
        stage.wait(op)?;
        stage.seal(1)?;
        Ok(Xform { stage, query, token, source, tensor, path, ordinal: 1 })
    }
}

impl Bench for Xform {
    fn run(&mut self, n: u64) -> Result<Duration> {
        let dl = [self.tensor.dl()];
        let data = write_data(&dl, false, &Selection::All);
        let start = Instant::now();
        for _ in 0..n {
            self.ordinal += 1;
            match self.path {
                XformPath::Write => {
                    let op = self.stage.write(self.query, self.token, self.ordinal, data)?;
                    self.stage.wait(op)?;
                }
                XformPath::Map => {
                    let source = &self.source;
                    self.stage.map(self.query, self.token, F64X16, self.ordinal, None, |tensors| {
                        copy_into(&tensors[0], bytes_of_f64(source));
                    })?;
                }
            }
            self.stage.seal(self.ordinal)?;
        }
        Ok(start.elapsed())
    }
}

fn bytes_of_f64(v: &[f64]) -> &[u8] {
    // SAFETY: f64 has no padding; the bytes of the slice are initialized.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast(), std::mem::size_of_val(v)) }
}

fn bytes_of_f32(v: &[f32]) -> &[u8] {
    // SAFETY: f32 has no padding; the bytes of the slice are initialized.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast(), std::mem::size_of_val(v)) }
}

/// The byte size of a mapped tensor.
fn tensor_bytes(t: &DLTensor) -> usize {
    // SAFETY: a mapped tensor has `ndim` shape entries.
    let shape = unsafe { std::slice::from_raw_parts(t.shape, t.ndim as usize) };
    let elements: i64 = shape.iter().product();
    elements as usize * usize::from(t.dtype.bits / 8) * usize::from(t.dtype.lanes)
}

/// Copies `src` into a mapped tensor (as much as both hold).
fn copy_into(t: &DLTensor, src: &[u8]) {
    let len = tensor_bytes(t).min(src.len());
    // SAFETY: the mapped tensor is writable for `tensor_bytes` bytes until
    // its commit; `src` holds at least `len` bytes.
    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), t.data.cast::<u8>().add(t.byte_offset as usize), len) };
}

/// A map session of the scalar attribute per iteration.
struct MapFixed {
    s: Scalars,
    values: Vec<f32>,
}

impl MapFixed {
    fn new(lib: &'static Library, n: usize) -> Result<MapFixed> {
        Ok(MapFixed { s: Scalars::new(lib, n)?, values: (0..n).map(|i| i as f32 * 2.0).collect() })
    }
}

impl Bench for MapFixed {
    fn run(&mut self, n: u64) -> Result<Duration> {
        let start = Instant::now();
        for _ in 0..n {
            let ordinal = self.s.next();
            let values = &self.values;
            self.s.stage.map(self.s.query, self.s.token, DLDataType::default(), ordinal, None, |tensors| {
                copy_into(&tensors[0], bytes_of_f32(values));
            })?;
        }
        Ok(start.elapsed())
    }
}

#[derive(Copy, Clone, PartialEq, Eq)]
enum ArrayPath {
    Write,
    Map,
}

const F32: DLDataType = DLDataType { code: 2, bits: 32, lanes: 1 };

/// An f32 array attribute of `elements` per prim, written per prim or
/// mapped.
struct Arrays {
    stage: Stage<'static>,
    query: u64,
    token: u64,
    rows: Vec<HostTensor>,
    source: Vec<f32>,
    sizes: Vec<usize>,
    path: ArrayPath,
    ordinal: u64,
}

impl Arrays {
    fn new(lib: &'static Library, prims: usize, elements: usize, path: ArrayPath) -> Result<Arrays> {
        let stage = Stage::new(lib, c"ovstage-bench")?;
        let token = stage.tokens(&["samples"])?[0];
        let query = stage.query_paths(&prim_paths(0..prims))?;
        let source: Vec<f32> = (0..elements).map(|i| i as f32).collect();
        let mut rows: Vec<HostTensor> = (0..prims).map(|_| HostTensor::f32_rows(&source, 1)).collect();
        let dl: Vec<DLTensor> = rows.iter_mut().map(HostTensor::dl).collect();
        let op = stage.write(query, token, 1, write_data(&dl, true, &Selection::All))?;
        stage.wait(op)?;
        stage.seal(1)?;
        Ok(Arrays { stage, query, token, rows, source, sizes: vec![elements; prims], path, ordinal: 1 })
    }
}

impl Bench for Arrays {
    fn run(&mut self, n: u64) -> Result<Duration> {
        let dl: Vec<DLTensor> = self.rows.iter_mut().map(HostTensor::dl).collect();
        let data = write_data(&dl, true, &Selection::All);
        let start = Instant::now();
        for _ in 0..n {
            self.ordinal += 1;
            match self.path {
                ArrayPath::Write => {
                    let op = self.stage.write(self.query, self.token, self.ordinal, data)?;
                    self.stage.wait(op)?;
                }
                ArrayPath::Map => {
                    let source = bytes_of_f32(&self.source);
                    self.stage.map(self.query, self.token, F32, self.ordinal, Some(&self.sizes), |tensors| {
                        for t in tensors {
                            copy_into(t, source);
                        }
                    })?;
                }
            }
        }
        Ok(start.elapsed())
    }
}

/// W one-prim writes at one ordinal, then a floor advance, per frame,
/// under one admission policy.
struct DisjointFrames {
    // Field order: the stage goes before the process reference is dropped.
    stage: Stage<'static>,
    lib: &'static Library,
    queries: Vec<u64>,
    token: u64,
    tensor: HostTensor,
    frame: u64,
}

impl DisjointFrames {
    fn new(lib: &'static Library, writes: usize, policy: u64) -> Result<DisjointFrames> {
        lib.initialize(policy)?;
        let stage = Stage::new(lib, c"ovstage-bench")?;
        let token = stage.tokens(&["value"])?[0];
        let queries =
            prim_paths(0..writes).into_iter().map(|p| stage.query_paths(&[p])).collect::<Result<Vec<u64>>>()?;
        let mut f = DisjointFrames { stage, lib, queries, token, tensor: HostTensor::f32_rows(&[1.0], 1), frame: 0 };
        f.run(5)?;
        Ok(f)
    }
}

impl Bench for DisjointFrames {
    fn run(&mut self, n: u64) -> Result<Duration> {
        let dl = [self.tensor.dl()];
        let data = write_data(&dl, false, &Selection::All);
        let start = Instant::now();
        for _ in 0..n {
            self.frame += 1;
            for q in &self.queries {
                let op = self.stage.write(*q, self.token, self.frame, data)?;
                self.stage.wait(op)?;
            }
            self.stage.seal(self.frame)?;
        }
        Ok(start.elapsed())
    }
}

impl Drop for DisjointFrames {
    fn drop(&mut self) {
        // The stage is dropped after this body; release the process
        // reference taken for the policy then (the instance holds its own).
        let _ = self.lib.shutdown();
    }
}

/// The resident set size of this process, in bytes.
fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
    pages * 4096
}

/// Write, seal, read per step.
struct SteadyState {
    s: Scalars,
    tensor: HostTensor,
    rss_before: u64,
    steps: u64,
}

impl SteadyState {
    fn new(lib: &'static Library, prims: usize) -> Result<SteadyState> {
        let s = Scalars::new(lib, prims)?;
        let values: Vec<f32> = (0..prims).map(|i| i as f32).collect();
        let mut b = SteadyState { s, tensor: HostTensor::f32_rows(&values, 1), rss_before: 0, steps: 0 };
        // Reach the steady state (the retention window filled) first.
        b.run(200)?;
        b.rss_before = rss();
        b.steps = 0;
        Ok(b)
    }
}

impl Bench for SteadyState {
    fn run(&mut self, n: u64) -> Result<Duration> {
        let dl = [self.tensor.dl()];
        let data = write_data(&dl, false, &Selection::All);
        let start = Instant::now();
        let (query, rows) = (self.s.query, self.s.n as u64);
        for _ in 0..n {
            self.s.write_seal_read(query, data, rows, "steady-state read")?;
        }
        self.steps += n;
        Ok(start.elapsed())
    }

    fn extra(&mut self) -> Vec<(String, String)> {
        let after = rss();
        let per_step = if self.steps == 0 { 0.0 } else { (after as f64 - self.rss_before as f64) / self.steps as f64 };
        vec![
            ("rss_before_mb".into(), format!("{:.1}", self.rss_before as f64 / 1048576.0)),
            ("rss_after_mb".into(), format!("{:.1}", after as f64 / 1048576.0)),
            ("rss_bytes_per_step".into(), format!("{per_step:.1}")),
        ]
    }
}

/// A large sealed stage of which each step changes a few prims spread over
/// it.
struct SparseUpdate {
    s: Scalars,
    /// The updated prims, spread evenly over the stage.
    updated: u64,
    rows: usize,
    tensor: HostTensor,
}

impl SparseUpdate {
    fn new(lib: &'static Library, stage_prims: usize, updated: usize) -> Result<SparseUpdate> {
        let mut s = Scalars::new(lib, stage_prims)?;
        // Three more attributes over every prim, as a loaded stage has.
        let values: Vec<f32> = (0..stage_prims).map(|i| i as f32).collect();
        let mut t = HostTensor::f32_rows(&values, 1);
        let dl = [t.dl()];
        let ordinal = s.next();
        for token in s.stage.tokens(&["seeded1", "seeded2", "seeded3"])? {
            let op = s.stage.write(s.query, token, ordinal, write_data(&dl, false, &Selection::All))?;
            s.stage.wait(op)?;
        }
        s.stage.seal(ordinal)?;
        let stride = stage_prims / updated;
        let updated_query = s
            .stage
            .query_paths(&prim_paths(0..stage_prims).into_iter().step_by(stride).take(updated).collect::<Vec<_>>())?;
        let values: Vec<f32> = (0..updated).map(|i| -(i as f32)).collect();
        Ok(SparseUpdate { s, updated: updated_query, rows: updated, tensor: HostTensor::f32_rows(&values, 1) })
    }
}

impl Bench for SparseUpdate {
    fn run(&mut self, n: u64) -> Result<Duration> {
        let dl = [self.tensor.dl()];
        let data = write_data(&dl, false, &Selection::All);
        let start = Instant::now();
        for _ in 0..n {
            self.s.write_seal_read(self.updated, data, self.rows as u64, "sparse-update read")?;
        }
        Ok(start.elapsed())
    }
}

#[derive(Copy, Clone, PartialEq, Eq)]
enum Writer {
    No,
    EvenPrims,
}

/// Which prims the readers read and the writer writes.
struct Split {
    /// All prims, or the odd ones when there is a writer.
    read_query: u64,
    read_rows: u64,
    /// The even prims (unused without a writer).
    write_query: u64,
    write_rows: usize,
}

impl Split {
    fn new(s: &Scalars, writer: Writer) -> Result<Split> {
        let n = s.n;
        Ok(match writer {
            Writer::No => Split { read_query: s.query, read_rows: n as u64, write_query: s.query, write_rows: n },
            Writer::EvenPrims => {
                let even: Vec<String> = prim_paths(0..n).into_iter().step_by(2).collect();
                let odd: Vec<String> = prim_paths(0..n).into_iter().skip(1).step_by(2).collect();
                Split {
                    read_rows: odd.len() as u64,
                    write_rows: even.len(),
                    read_query: s.stage.query_paths(&odd)?,
                    write_query: s.stage.query_paths(&even)?,
                }
            }
        })
    }
}

/// How many writes of [`Spawned`]'s writer stay unsealed at most: the
/// floor is advanced, untimed, every this many iterations.
const UNSEALED_WINDOW: u64 = 16;

/// Threads started anew in every iteration, as the reference's suite does:
/// `readers` reader threads, each reading once, and with
/// [`Writer::EvenPrims`] one writer thread writing the even prims at the
/// next ordinal (waited, not sealed: the floor is advanced, untimed, every
/// [`UNSEALED_WINDOW`] iterations).
struct Spawned {
    s: Scalars,
    split: Split,
    readers: usize,
    writer: Writer,
    tensor: HostTensor,
    /// The last ordinal written.
    ordinal: u64,
    /// The last ordinal sealed, which the readers read.
    sealed: u64,
}

impl Spawned {
    fn new(lib: &'static Library, n: usize, readers: usize, writer: Writer) -> Result<Spawned> {
        let s = Scalars::new(lib, n)?;
        let split = Split::new(&s, writer)?;
        let values: Vec<f32> = (0..split.write_rows).map(|i| i as f32).collect();
        let tensor = HostTensor::f32_rows(&values, 1);
        Ok(Spawned { s, split, readers, writer, tensor, ordinal: 1, sealed: 1 })
    }
}

impl Bench for Spawned {
    fn run(&mut self, n: u64) -> Result<Duration> {
        let mut timed = Duration::ZERO;
        let mut start = Instant::now();
        for _ in 0..n {
            self.ordinal += 1;
            let (s, split, tensor, ordinal) = (&self.s, &self.split, &mut self.tensor, self.ordinal);
            let read_at = snapshot(self.sealed);
            let writes = self.writer == Writer::EvenPrims;
            let readers = self.readers;
            std::thread::scope(|scope| -> Result<()> {
                let reading: Vec<_> = (0..readers)
                    .map(|_| {
                        scope.spawn(move || {
                            let got = s.stage.read(split.read_query, &[s.token], read_at)?;
                            expect_rows("concurrent read", got, split.read_rows)
                        })
                    })
                    .collect();
                let writing = writes.then(|| {
                    scope.spawn(move || {
                        let dl = [tensor.dl()];
                        let op = s.stage.write(
                            split.write_query,
                            s.token,
                            ordinal,
                            write_data(&dl, false, &Selection::All),
                        )?;
                        s.stage.wait(op)
                    })
                });
                let mut outcome = Ok(());
                for thread in reading.into_iter().chain(writing) {
                    let got = thread.join().unwrap_or_else(|_| Err("a benchmark thread panicked".into()));
                    if outcome.is_ok() {
                        outcome = got;
                    }
                }
                outcome
            })?;
            if self.ordinal - self.sealed >= UNSEALED_WINDOW {
                timed += start.elapsed();
                self.s.stage.seal(self.ordinal)?;
                self.sealed = self.ordinal;
                start = Instant::now();
            }
        }
        Ok(timed + start.elapsed())
    }
}

/// Threads started once, each doing its part of every iteration with what
/// they share (`S`) and its own (`P`), released together by a barrier
/// while the calling thread does its own part.
struct Crew<S> {
    shared: Arc<CrewState<S>>,
    threads: Vec<JoinHandle<()>>,
}

struct CrewState<S> {
    state: S,
    start: Barrier,
    end: Barrier,
    stop: AtomicBool,
    /// A thread's failure in the current iteration.
    failure: Mutex<Option<String>>,
}

impl<S: Send + Sync + 'static> Crew<S> {
    /// One thread per part, each running `each(state, part)` once per
    /// iteration.
    fn start<P: Send + 'static>(
        state: S,
        parts: Vec<P>,
        each: impl Fn(&S, &mut P) -> Result<()> + Send + Sync + 'static,
    ) -> Crew<S> {
        let crew = parts.len() + 1;
        let shared = Arc::new(CrewState {
            state,
            start: Barrier::new(crew),
            end: Barrier::new(crew),
            stop: AtomicBool::new(false),
            failure: Mutex::new(None),
        });
        let each = Arc::new(each);
        let threads = parts
            .into_iter()
            .map(|mut part| {
                let (sh, each) = (shared.clone(), each.clone());
                std::thread::spawn(move || {
                    loop {
                        sh.start.wait();
                        if sh.stop.load(Ordering::Acquire) {
                            return;
                        }
                        if let Err(e) = each(&sh.state, &mut part) {
                            *sh.failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                        }
                        sh.end.wait();
                    }
                })
            })
            .collect();
        Crew { shared, threads }
    }

    /// One iteration: the threads' parts and `here` on this thread, side by
    /// side; then this thread's failure, else one of the crew's, if any. The threads' part ends before
    /// this returns, also when `here` fails (a crew left waiting at the end
    /// of an iteration could not be stopped).
    fn iterate(&self, here: impl FnOnce(&S) -> Result<()>) -> Result<()> {
        let sh = &self.shared;
        sh.start.wait();
        let mine = here(&sh.state);
        sh.end.wait();
        let theirs = sh.failure.lock().unwrap_or_else(|p| p.into_inner()).take();
        mine.and(theirs.map_or(Ok(()), Err))
    }
}

impl<S> Drop for Crew<S> {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        self.shared.start.wait();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Readers on their own threads, started once and each reading once per
/// iteration, and optionally a writer on the calling thread.
struct Concurrent {
    crew: Crew<ConcurrentState>,
    writer: Writer,
    tensor: HostTensor,
    ordinal: u64,
}

struct ConcurrentState {
    s: Scalars,
    /// The prims the readers read (all, or the odd ones) and their count.
    read_query: u64,
    read_rows: u64,
    /// The prims the writer writes (the even ones).
    write_query: u64,
}

impl Concurrent {
    fn new(lib: &'static Library, n: usize, readers: usize, writer: Writer) -> Result<Concurrent> {
        let s = Scalars::new(lib, n)?;
        let Split { read_query, read_rows, write_query, write_rows } = Split::new(&s, writer)?;
        let state = ConcurrentState { s, read_query, read_rows, write_query };
        let crew = Crew::start(state, vec![(); readers], |sh: &ConcurrentState, _| {
            let got = sh.s.stage.read(sh.read_query, &[sh.s.token], LATEST)?;
            expect_rows("concurrent read", got, sh.read_rows)
        });
        let values: Vec<f32> = (0..write_rows).map(|i| i as f32).collect();
        Ok(Concurrent { crew, writer, tensor: HostTensor::f32_rows(&values, 1), ordinal: 1 })
    }
}

impl Bench for Concurrent {
    fn run(&mut self, n: u64) -> Result<Duration> {
        let dl = [self.tensor.dl()];
        let data = write_data(&dl, false, &Selection::All);
        let start = Instant::now();
        for _ in 0..n {
            self.crew.iterate(|sh| {
                if self.writer == Writer::EvenPrims {
                    self.ordinal += 1;
                    let write = sh.s.stage.write(sh.write_query, sh.s.token, self.ordinal, data)?;
                    let seal = sh.s.stage.advance(self.ordinal)?;
                    sh.s.stage.wait(write)?;
                    sh.s.stage.wait(seal)?;
                }
                Ok(())
            })?;
        }
        Ok(start.elapsed())
    }
}

/// Producers of small writes on one stage, each on its own thread with its
/// own attribute and prim.
struct Producers {
    crew: Crew<ProducersState>,
    /// Writes per iteration, all producers together.
    ops: usize,
}

struct ProducersState {
    stage: Stage<'static>,
    /// Writes per producer per iteration.
    ops: usize,
}

/// What one producer writes, and its ops in flight.
struct Producer {
    token: u64,
    query: u64,
    ordinal: u64,
    tensor: HostTensor,
    ops: Vec<u64>,
}

impl Producers {
    fn new(lib: &'static Library, producers: usize, ops: usize) -> Result<Producers> {
        let stage = Stage::new(lib, c"ovstage-bench")?;
        let names: Vec<String> = (0..producers).map(|i| format!("value{i}")).collect();
        let tokens = stage.tokens(&names.iter().map(String::as_str).collect::<Vec<_>>())?;
        let mut parts = Vec::with_capacity(producers);
        for (i, token) in tokens.into_iter().enumerate() {
            let query = stage.query_paths(&prim_paths(i..i + 1))?;
            let tensor = HostTensor::f32_rows(&[1.0], 1);
            parts.push(Producer { token, query, ordinal: 1, tensor, ops: Vec::with_capacity(ops) });
        }
        let crew = Crew::start(ProducersState { stage, ops }, parts, |sh: &ProducersState, p: &mut Producer| {
            let dl = [p.tensor.dl()];
            let data = write_data(&dl, false, &Selection::All);
            p.ops.clear();
            for _ in 0..sh.ops {
                p.ordinal += 1;
                p.ops.push(sh.stage.write(p.query, p.token, p.ordinal, data)?);
            }
            p.ops.iter().try_for_each(|op| sh.stage.wait(*op))
        });
        Ok(Producers { crew, ops: ops * producers })
    }
}

impl Bench for Producers {
    fn run(&mut self, n: u64) -> Result<Duration> {
        let start = Instant::now();
        for _ in 0..n {
            self.crew.iterate(|_| Ok(()))?;
        }
        Ok(start.elapsed())
    }

    fn extra(&mut self) -> Vec<(String, String)> {
        vec![("ops_per_iteration".into(), self.ops.to_string())]
    }
}

/// How many enqueued ops [`EnqueueLatency`] keeps outstanding.
#[derive(Copy, Clone)]
enum Window {
    /// All of a batch's.
    Batch,
    /// At most this many: then they are waited and released, untimed.
    Ops(usize),
}

/// Each enqueue of a payload-less op timed alone.
struct EnqueueLatency {
    stage: Stage<'static>,
    window: Window,
    samples: Vec<u64>,
}

impl EnqueueLatency {
    fn new(lib: &'static Library, window: Window) -> Result<EnqueueLatency> {
        Ok(EnqueueLatency { stage: Stage::new(lib, c"ovstage-bench")?, window, samples: Vec::new() })
    }

    fn finish(&self, handles: &mut Vec<(u64, u64)>) -> Result<()> {
        for (h, op) in handles.drain(..) {
            self.stage.wait(op)?;
            self.stage.release_ordinal_query(h)?;
        }
        Ok(())
    }
}

impl Bench for EnqueueLatency {
    fn run(&mut self, n: u64) -> Result<Duration> {
        let window = match self.window {
            Window::Batch => n as usize,
            Window::Ops(w) => w,
        };
        let mut total = Duration::ZERO;
        let mut handles = Vec::with_capacity(window.min(n as usize));
        for _ in 0..n {
            if handles.len() == window {
                self.finish(&mut handles)?;
            }
            let t = Instant::now();
            let (h, op) = self.stage.oldest_preserved()?;
            let d = t.elapsed();
            total += d;
            self.samples.push(d.as_nanos() as u64);
            handles.push((h, op));
        }
        self.finish(&mut handles)?;
        Ok(total)
    }

    fn extra(&mut self) -> Vec<(String, String)> {
        self.samples.sort_unstable();
        let at = |q: f64| self.samples.get(((self.samples.len() as f64 - 1.0) * q) as usize).copied().unwrap_or(0);
        vec![("p50_ns".into(), at(0.5).to_string()), ("p99_ns".into(), at(0.99).to_string())]
    }
}

/// `wait_op(op, 0)` of one completed op.
struct PollFinished {
    s: Scalars,
    op: u64,
}

impl PollFinished {
    fn new(lib: &'static Library) -> Result<PollFinished> {
        let s = Scalars::new(lib, 8)?;
        let op = s.stage.advance(1)?;
        // Blocking, not polling: the measured polls are the only ones.
        s.stage.wait_kept(op)?;
        Ok(PollFinished { s, op })
    }
}

impl Bench for PollFinished {
    fn run(&mut self, n: u64) -> Result<Duration> {
        let start = Instant::now();
        for _ in 0..n {
            if self.s.stage.poll_status(self.op) != 0 {
                return Err("a completed op did not poll OK".into());
            }
        }
        Ok(start.elapsed())
    }
}

impl Drop for PollFinished {
    fn drop(&mut self) {
        let _ = self.s.stage.release_op(self.op);
    }
}

/// Writes at distinct ordinals to distinct attributes, with a lane count;
/// each round is sealed by a floor advance.
struct IndependentOrdinals {
    stage: Stage<'static>,
    lib: &'static Library,
    query: u64,
    tokens: Vec<u64>,
    tensor: HostTensor,
    ordinal: u64,
}

impl IndependentOrdinals {
    fn new(lib: &'static Library, lanes: u64, writes: usize, floats: usize) -> Result<IndependentOrdinals> {
        lib.initialize_lanes(lanes)?;
        let stage = Stage::new(lib, c"ovstage-bench")?;
        let query = stage.query_paths(&prim_paths(0..1))?;
        let names: Vec<String> = (0..writes).map(|c| format!("block{c}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let tokens = stage.tokens(&refs)?;
        let values: Vec<f32> = (0..floats).map(|i| i as f32).collect();
        // One prim, one row of `floats` values: a 64 KB array row.
        let tensor = HostTensor::f32_rows(&values, 1);
        Ok(IndependentOrdinals { stage, lib, query, tokens, tensor, ordinal: 0 })
    }
}

impl Bench for IndependentOrdinals {
    fn run(&mut self, n: u64) -> Result<Duration> {
        let dl = [self.tensor.dl()];
        let data = write_data(&dl, true, &Selection::All);
        let mut ops = Vec::with_capacity(self.tokens.len());
        let start = Instant::now();
        for _ in 0..n {
            ops.clear();
            for t in &self.tokens {
                self.ordinal += 1;
                ops.push(self.stage.write(self.query, *t, self.ordinal, data)?);
            }
            for op in &ops {
                self.stage.wait(*op)?;
            }
            // Sealed each round, so the columns keep a few versions and the
            // copies land in memory already touched: without it the first
            // hundred rounds fill each column's unsealed budget with fresh
            // pages, and a run measured while that lasts times page faults
            // (17 ms a round instead of 0.5).
            self.stage.seal(self.ordinal)?;
        }
        Ok(start.elapsed())
    }
}

impl Drop for IndependentOrdinals {
    fn drop(&mut self) {
        let _ = self.lib.shutdown();
    }
}

/// Small writes at distinct ordinals, submitted then waited.
struct SmallOps {
    s: Scalars,
    ops: usize,
    tensor: HostTensor,
}

impl SmallOps {
    fn new(lib: &'static Library, ops: usize) -> Result<SmallOps> {
        Ok(SmallOps { s: Scalars::new(lib, 1)?, ops, tensor: HostTensor::f32_rows(&[1.0], 1) })
    }
}

impl Bench for SmallOps {
    fn run(&mut self, n: u64) -> Result<Duration> {
        let dl = [self.tensor.dl()];
        let data = write_data(&dl, false, &Selection::All);
        let mut ops = Vec::with_capacity(self.ops);
        let start = Instant::now();
        for _ in 0..n {
            ops.clear();
            for _ in 0..self.ops {
                let ordinal = self.s.next();
                ops.push(self.s.stage.write(self.s.query, self.s.token, ordinal, data)?);
            }
            for op in &ops {
                self.s.stage.wait(*op)?;
            }
        }
        Ok(start.elapsed())
    }

    fn extra(&mut self) -> Vec<(String, String)> {
        vec![("ops_per_iteration".into(), self.ops.to_string())]
    }
}
