//! The experimental `ovstage.placement` extension: its table (what
//! `query_extension` returns for `"ovstage.placement"`), its four slots,
//! and what the write, read and map slots do with a placement. The rules
//! are `ovstage_dlpack::placement`'s (shared with Python); this module
//! reads the C struct and orders the availability event's record against
//! the op.

use std::sync::Arc;

use ovstage_backend_cuda::placement::RecordOn;
use ovstage_backend_cuda::staging::{CudaSync, StageError};
use ovstage_dlpack::Managed;
use ovstage_dlpack::MapTensors;
use ovstage_dlpack::placement::{Placement, Target};
use ovstage_types::{Error, MapHandle, OpId, Result, Status};
use stage::MapGroup;

use crate::abi::api::ovstage_extension_header_t;
use crate::abi::api_types::ovstage_cuda_sync_t;
use crate::abi::api_types::{
    ovstage_attribute_write_t, ovstage_context_t, ovstage_enqueue_result_t, ovstage_map_desc_t, ovstage_map_handle_t,
    ovstage_ordinal_range_t, ovstage_ordinal_t, ovstage_prim_mode_t, ovstage_query_handle_t, ovstage_read_handle_t,
    ovstage_write_data_t,
};
use crate::abi::dlpack::DLTensor;
use crate::abi::ovx_string::{ovx_string_or_token_t, ovx_token_t};
use crate::abi::placement::{
    OVSTAGE_PLACEMENT_EXTENSION_VERSION, ovstage_placement_extension_v1_t, ovstage_placement_t,
};
use crate::instance::Context;
use crate::results::{HeldMapGroup, PlacedMap};

/// The name `query_extension` answers with [`TABLE`].
pub(super) const NAME: &str = "ovstage.placement";

/// The placement table (revision 1) every instance shares.
pub(super) static TABLE: ovstage_placement_extension_v1_t = ovstage_placement_extension_v1_t {
    header: ovstage_extension_header_t {
        struct_size: size_of::<ovstage_placement_extension_v1_t>() as u32,
        version: OVSTAGE_PLACEMENT_EXTENSION_VERSION,
    },
    write_attribute_on_device: Some(write_attribute_on_device),
    write_attributes_on_device: Some(write_attributes_on_device),
    map_attribute_on_device: Some(map_attribute_on_device),
    read_attributes_on_device: Some(read_attributes_on_device),
};

/// The placement a slot was given (NULL: none).
///
/// # Safety
/// `p` is NULL or readable.
pub(super) unsafe fn placement(p: *const ovstage_placement_t, call: &str) -> Result<Placement> {
    if p.is_null() {
        return Ok(Placement::NONE);
    }
    // SAFETY: non-NULL and readable per the contract; copied out now (the
    // struct need not outlive the call).
    let p = unsafe { p.read() };
    Placement::parse(p.device, p.stream, p.availability_event, call)
}

/// Distinct CUDA devices of the given payloads' tensors.
///
/// # Safety
/// Each payload's `tensors`, when not NULL, has `tensor_count` readable
/// entries.
unsafe fn cuda_sources(payloads: &[(&ovstage_write_data_t, &[Arc<Managed>])]) -> Vec<u32> {
    let mut devices = Vec::new();
    let mut note = |t: &DLTensor| {
        if t.device.device_type.0 == ovstage_dlpack::device::CUDA
            && let Ok(n) = u32::try_from(t.device.device_id)
            && !devices.contains(&n)
        {
            devices.push(n);
        }
    };
    for (d, managed) in payloads {
        if !d.tensors.is_null() {
            // SAFETY: `tensor_count` readable entries, per the caller.
            for t in unsafe { std::slice::from_raw_parts(d.tensors, d.tensor_count as usize) } {
                note(t);
            }
        }
        for m in *managed {
            note(m.tensor());
        }
    }
    devices
}

/// Where a placed write records its availability event (`None`: no
/// record), decided before anything is enqueued.
///
/// # Safety
/// As for [`cuda_sources`].
pub(super) unsafe fn write_record(
    placed: &Placement,
    payloads: &[(&ovstage_write_data_t, &[Arc<Managed>])],
    call: &str,
) -> Result<Option<RecordOn>> {
    if placed.availability_event == 0 {
        return Ok(None);
    }
    // SAFETY: forwarded.
    let sources = if placed.target == Target::Unspecified { unsafe { cuda_sources(payloads) } } else { Vec::new() };
    placed.write_record(&sources, call)
}

/// [`Placement::after_write`] on this instance's stage.
pub(super) fn after_write(
    c: &Context,
    op: OpId,
    placed: &Placement,
    record: Option<RecordOn>,
    call: &str,
) -> Result<OpId> {
    // SAFETY: the placement's handles are the caller's live ones, per the
    // contract.
    unsafe { placed.after_write(&c.stage, op, record, call) }
}

/// A fetched map group as C gets it: over a copy of its buffer on the
/// device for a session mapped on a CUDA device (uploaded and finished
/// before the fetch returns), else over the buffer itself. If the copy
/// fails the group is held as a host group (so the session's commit still
/// finds it, its values unchanged) and the fetch reports the error.
pub(super) fn map_group(c: &Context, m: MapHandle, group: MapGroup, call: &str) -> Result<HeldMapGroup> {
    let Some(PlacedMap { placement: Placement { target: Target::Cuda(n), stream, .. }, .. }) =
        c.results.map_placements.get(m)
    else {
        return Ok(HeldMapGroup::new(m, group));
    };
    // SAFETY: the placement's stream is the caller's live handle (the
    // contract), of device `n`'s primary context.
    match unsafe { MapTensors::on_device(group, n, stream) } {
        Ok(tensors) => Ok(HeldMapGroup::on_device(m, tensors)),
        Err(refused) => {
            let (e, group) = *refused;
            c.results.hold_map_group(HeldMapGroup::new(m, group));
            let status = if e.is_out_of_memory() { Status::OutOfMemory } else { Status::OpFailed };
            Err(Error::new(
                status,
                format!(
                    "{call}: staging the map group on CUDA device {n} failed ({e}); the group stays mapped on the \
                     host, unchanged, and is committed with the session"
                ),
            ))
        }
    }
}

/// Before a commit of a session mapped on a device: waits for the client's
/// `write_done_sync` on the host, then copies each group's device copy back
/// into its buffer. Nothing for other sessions. A failure commits nothing
/// (the groups stay held, mapped).
pub(super) fn bring_back(
    session: Option<PlacedMap>,
    groups: &mut [HeldMapGroup],
    sync: ovstage_cuda_sync_t,
    call: &str,
) -> Result<()> {
    let Some(PlacedMap { placement: Placement { target: Target::Cuda(n), .. }, .. }) = session else { return Ok(()) };
    let failed = |what: &str, e: StageError| {
        Error::new(Status::OpFailed, format!("{call}: {what} on CUDA device {n} failed: {e}; nothing was committed"))
    };
    let sync = CudaSync { stream: sync.stream, wait_event: sync.wait_event };
    // SAFETY: write_done_sync's handles are the caller's live ones.
    unsafe { ovstage_backend_cuda::placement::wait_host(sync, RecordOn::Device(n)) }
        .map_err(|e| failed("waiting for write_done_sync", e))?;
    for g in groups {
        g.download().map_err(|e| failed("copying the mapped values back", e))?;
    }
    Ok(())
}

/// Records a placed session's availability event for the commit `op`
/// (each commit records once), as [`after_write`] does for a write.
pub(super) fn after_commit(c: &Context, op: OpId, session: Option<PlacedMap>, call: &str) -> Result<OpId> {
    match session {
        Some(s) => after_write(c, op, &s.placement, s.record, call),
        None => Ok(op),
    }
}

/// `write_attribute_on_device`.
unsafe extern "C" fn write_attribute_on_device(
    ctx: *mut ovstage_context_t,
    handle: ovstage_query_handle_t,
    attribute: ovx_string_or_token_t,
    ordinal: ovstage_ordinal_t,
    data: ovstage_write_data_t,
    mode: ovstage_prim_mode_t,
    placement: *const ovstage_placement_t,
) -> ovstage_enqueue_result_t {
    // SAFETY: the contract's preconditions, forwarded.
    unsafe {
        super::writes::write_attribute_placed(
            ctx,
            handle,
            attribute,
            ordinal,
            data,
            mode,
            placement,
            "write_attribute_on_device",
        )
    }
}

/// `write_attributes_on_device`.
unsafe extern "C" fn write_attributes_on_device(
    ctx: *mut ovstage_context_t,
    handle: ovstage_query_handle_t,
    writes: *const ovstage_attribute_write_t,
    write_count: usize,
    ordinal: ovstage_ordinal_t,
    mode: ovstage_prim_mode_t,
    placement: *const ovstage_placement_t,
) -> ovstage_enqueue_result_t {
    // SAFETY: the contract's preconditions, forwarded.
    unsafe {
        super::writes::write_attributes_placed(
            ctx,
            handle,
            writes,
            write_count,
            ordinal,
            mode,
            placement,
            "write_attributes_on_device",
        )
    }
}

/// `map_attribute_on_device`.
#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn map_attribute_on_device(
    ctx: *mut ovstage_context_t,
    handle: ovstage_query_handle_t,
    desc: *const ovstage_map_desc_t,
    ordinal: ovstage_ordinal_t,
    element_sizes: *const usize,
    element_count: usize,
    placement: *const ovstage_placement_t,
    out: *mut ovstage_map_handle_t,
) -> ovstage_enqueue_result_t {
    // SAFETY: the contract's preconditions, forwarded.
    unsafe {
        super::maps::map_attribute_placed(
            ctx,
            handle,
            desc,
            ordinal,
            element_sizes,
            element_count,
            placement,
            out,
            "map_attribute_on_device",
        )
    }
}

/// `read_attributes_on_device`.
unsafe extern "C" fn read_attributes_on_device(
    ctx: *mut ovstage_context_t,
    handle: ovstage_query_handle_t,
    attrs: *const ovx_token_t,
    attr_count: usize,
    range: ovstage_ordinal_range_t,
    placement: *const ovstage_placement_t,
    out: *mut ovstage_read_handle_t,
) -> ovstage_enqueue_result_t {
    // SAFETY: the contract's preconditions, forwarded.
    unsafe {
        super::reads::read_attributes_placed(
            ctx,
            handle,
            attrs,
            attr_count,
            range,
            placement,
            out,
            "read_attributes_on_device",
        )
    }
}
