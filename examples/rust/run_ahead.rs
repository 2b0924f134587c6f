//! The CPU runs ahead of the store.
//!
//! A "physics" producer submits many ordinals (ticks) of writes for a few
//! thousand prims, sealing each tick with a floor advance, and never waits.
//! It then does other work while polling the last op with timeout 0, and
//! finally reads the results back: the latest values, an older snapshot
//! kept by versioning, and the changes of the last ticks.
//!
//! Run: `cargo run --release -p ovstage-examples --bin run-ahead [-- --prims N --ticks T]`

// A command-line program reports its errors on stderr.
#![allow(clippy::print_stderr)]

use std::process::ExitCode;
use std::time::{Duration, Instant};

use ovstage::{
    AttributeWrite, DType, FloorScope, OpId, OrdinalRange, PrimMode, QueryHandle, ReadGroup, Semantic, Stage, Tensor,
    Timeout, WaitError, WriteData,
};

struct Args {
    prims: usize,
    ticks: u64,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args { prims: 4096, ticks: 120 };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let n: u64 = value.parse().map_err(|_| format!("{flag}: {value:?} is not a number"))?;
        match flag.as_str() {
            "--prims" => args.prims = n.max(1) as usize,
            "--ticks" => args.ticks = n.max(4),
            _ => return Err(format!("unknown flag {flag} (expected --prims N, --ticks T)")),
        }
    }
    Ok(args)
}

/// The position of prim `i` at `tick`, as the producer writes it.
fn position(tick: u64, i: usize) -> [f32; 3] {
    [tick as f32, i as f32, 0.5]
}

fn tick_data(tick: u64, prims: usize) -> Vec<AttributeWrite<'static>> {
    let pos: Vec<f32> = (0..prims).flat_map(|i| position(tick, i)).collect();
    let vel: Vec<f32> = vec![1.0; prims * 3];
    let mut xform = vec![0.0f64; prims * 16];
    for (i, m) in xform.chunks_mut(16).enumerate() {
        m[0] = 1.0;
        m[5] = 1.0;
        m[10] = 1.0;
        m[15] = 1.0;
        m[12] = tick as f64;
        m[13] = i as f64;
    }
    let tensor = |v: Vec<f32>| Tensor::rows(v, 3).expect("whole rows");
    vec![
        AttributeWrite { attribute: "pos".into(), data: WriteData::fixed(tensor(pos)).with_semantic(Semantic::Point) },
        AttributeWrite { attribute: "vel".into(), data: WriteData::fixed(tensor(vel)).with_semantic(Semantic::Vector) },
        AttributeWrite {
            attribute: "xform".into(),
            data: WriteData::fixed(Tensor::new(xform, DType::F64.with_lanes(16), &[prims as u64]).expect("whole rows"))
                .with_semantic(Semantic::Matrix),
        },
    ]
}

fn read_all(stage: &Stage, query: QueryHandle, attr: &str, range: OrdinalRange) -> ovstage::Result<Vec<ReadGroup>> {
    let read = stage.read_attributes(query, &[attr.into()], range)?;
    let mut groups = Vec::new();
    while let Some(group) = stage.fetch_read_next(read.handle, Timeout::INFINITE)? {
        groups.push(group);
    }
    stage.release_read(read.handle)?;
    Ok(groups)
}

fn check(ok: bool, what: &str) -> Result<(), String> {
    if ok { Ok(()) } else { Err(format!("check failed: {what}")) }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args()?;
    let stage = Stage::new("run-ahead");
    let paths: Vec<String> = (0..args.prims).map(|i| format!("/World/Env{i}/Robot")).collect();
    let list = stage.paths().create_path_list_from_strings(&paths)?;
    let query = stage.query_from_path_list(list)?;
    stage.paths().release_path_list_reference(list)?;
    println!(
        "ovstage run-ahead demo: {} prims, 3 attributes (pos f32x3, vel f32x3, xform f64 4x4), {} ticks, {} lanes",
        args.prims,
        args.ticks,
        stage.lanes()
    );

    // Produce every tick without waiting: each call only validates and
    // enqueues; the copies run on the stage's lanes.
    let payloads: Vec<_> = (1..=args.ticks).map(|t| tick_data(t, args.prims)).collect();
    let start = Instant::now();
    let mut ops: Vec<OpId> = Vec::new();
    let mut longest = Duration::ZERO;
    for (t, writes) in (1..=args.ticks).zip(payloads) {
        let call = Instant::now();
        ops.push(stage.write_attributes(query, writes, t, PrimMode::Upsert)?);
        ops.push(stage.advance_write_floor(t, FloorScope::All)?);
        longest = longest.max(call.elapsed());
    }
    let submitted = start.elapsed();
    let last = *ops.last().expect("ops were submitted");
    println!(
        "submitted {} ops ({} multi-attribute writes, {} floor advances) in {:.2} ms without waiting (slowest tick {:.1} us)",
        ops.len(),
        args.ticks,
        args.ticks,
        submitted.as_secs_f64() * 1e3,
        longest.as_secs_f64() * 1e6
    );

    // Poll while doing other work.
    let mut polls = 0u64;
    let mut pending_polls = 0u64;
    let mut other_work = 0u64;
    loop {
        polls += 1;
        match stage.wait(last, Timeout::POLL) {
            Ok(()) => break,
            Err(WaitError::Timeout { lowest_pending }) => {
                if pending_polls == 0 {
                    println!(
                        "poll of the last op ({last}, the advance to {}) right after submitting: TIMEOUT (lowest pending in its chain: {lowest_pending})",
                        args.ticks
                    );
                }
                pending_polls += 1;
                // Stand-in for the application's own work between polls.
                other_work = (0..20_000u64).fold(other_work, |acc, x| acc.wrapping_mul(31).wrapping_add(x));
                std::thread::yield_now();
            }
            Err(other) => return Err(format!("{last} failed: {other:?}").into()),
        }
    }
    std::hint::black_box(other_work);
    println!(
        "did other work between polls: {pending_polls} polls returned TIMEOUT, poll {polls} returned OK, {:.2} ms after the first submission",
        start.elapsed().as_secs_f64() * 1e3
    );
    for op in &ops {
        stage.wait_ok(*op, Timeout::POLL)?;
        stage.release_op(*op)?;
    }

    let floor = stage.get_attribute_write_floor(None)?;
    let oldest = stage.get_oldest_preserved_ordinal()?;
    let floor = stage.fetch_ordinal(floor.handle, Timeout::INFINITE)?.get();
    let oldest = stage.fetch_ordinal(oldest.handle, Timeout::INFINITE)?.get();
    println!("global write floor: {floor}; oldest preserved ordinal: {oldest}");
    check(floor == args.ticks, "the floor reached the last tick")?;

    let latest = read_all(&stage, query, "pos", OrdinalRange::LATEST)?;
    check(latest.len() == 1, "the latest read is one group")?;
    let group = &latest[0];
    let data = group.data().ok_or("a value group has data")?;
    println!(
        "read pos at latest: {} group, {} prims, shape {:?}, index maps: {}, ordinal {}, zero-copy view at {:p}",
        latest.len(),
        group.len(),
        data.shape(),
        group.prims().index_map.is_some() || data.index_map().is_some(),
        group.ordinal(),
        data.as_ptr()
    );
    let values = data.values::<f32>()?;
    for i in [0, args.prims / 2, args.prims - 1] {
        println!("  {} pos = {:?}", paths[i], &values[i * 3..i * 3 + 3]);
        check(values[i * 3..i * 3 + 3] == position(args.ticks, i), "latest pos is the last tick's")?;
    }

    let older = args.ticks - 2;
    let snapshot = read_all(&stage, query, "pos", OrdinalRange::snapshot(older))?;
    let old_values = snapshot[0].data().ok_or("a value group has data")?.values::<f32>()?;
    println!("read pos at snapshot {older} (kept by versioning): {} pos = {:?}", paths[0], &old_values[..3]);
    check(old_values[..3] == position(older, 0), "the snapshot holds that tick's values")?;

    let changes = read_all(&stage, query, "xform", OrdinalRange::changes(args.ticks - 1, args.ticks)?)?;
    let xform = changes[0].data().ok_or("a value group has data")?;
    println!(
        "read xform changes in [{}, {}]: {} prims changed, matrices as shape {:?}, translation of {} = {:?}",
        args.ticks - 1,
        args.ticks,
        changes[0].len(),
        xform.shape(),
        paths[1],
        &xform.values::<f64>()?[16 + 12..16 + 15]
    );
    check(xform.shape() == [args.prims as u64, 4, 4], "MATRIX reads as [N, 4, 4]")?;

    let stats = stage.stats();
    println!(
        "store: {} columns, {} retained versions, {:.1} MiB of buffers, {} live prims",
        stats.columns,
        stats.versions,
        stats.bytes as f64 / (1 << 20) as f64,
        stats.prims
    );
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("run-ahead: {e}");
            ExitCode::FAILURE
        }
    }
}
