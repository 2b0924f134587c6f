//! Copy-in writes and deletes.

use ovstage_types::{Error, PrimMode, Result};
use stage::{AttrRef, AttributeWrite};

use super::queries::query_handle;
use super::{enqueue_slot, in_call, placed};
use crate::abi::api_types::{
    ovstage_attribute_write_t, ovstage_context_t, ovstage_enqueue_result_t, ovstage_ordinal_t, ovstage_prim_mode_t,
    ovstage_query_handle_t, ovstage_write_data_t,
};
use crate::abi::ovx_string::ovx_string_or_token_t;
use crate::abi::placement::ovstage_placement_t;
use crate::instance::Context;
use crate::{strings, tensors};

/// Names the attribute and ordinal of a payload error.
fn in_context(e: Error, c: &Context, attribute: AttrRef<'_>, ordinal: u64) -> Error {
    let name = match attribute {
        AttrRef::Name(n) => n.to_owned(),
        AttrRef::Token(t) => c.stage.paths().token_text(t).map_or_else(|_| t.to_string(), |s| s.to_string()),
    };
    e.with_attribute(name).with_ordinal(ordinal)
}

pub(crate) fn prim_mode(raw: ovstage_prim_mode_t, call: &str) -> Result<PrimMode> {
    PrimMode::from_raw(raw.0)
        .ok_or_else(|| Error::invalid_argument(format!("{call}: prim_mode {} is not UPSERT (0) or INSERT (1)", raw.0)))
}

/// `write_attribute`.
pub(super) unsafe extern "C" fn write_attribute(
    ctx: *mut ovstage_context_t,
    handle: ovstage_query_handle_t,
    attribute: ovx_string_or_token_t,
    ordinal: ovstage_ordinal_t,
    data: ovstage_write_data_t,
    mode: ovstage_prim_mode_t,
) -> ovstage_enqueue_result_t {
    const CALL: &str = "write_attribute";
    // The placed slot's body without a placement, spelled out: the hot
    // write path keeps its constant call name and no placement checks.
    // Ownership of managed tensors passes at entry, whatever happens next.
    // SAFETY: the payload's arrays are readable per the contract.
    let managed = unsafe { tensors::take_managed(&[&data], CALL) };
    // SAFETY: the contract's preconditions on the pointers.
    unsafe {
        enqueue_slot(ctx, CALL, |c| {
            let managed = managed?.pop().unwrap_or_default();
            let mode = prim_mode(mode, CALL)?;
            let attr = strings::attribute(attribute, format_args!("{CALL}: attribute"))?;
            let q = query_handle(handle, CALL)?;
            let prims = || c.stage.query_prim_count(q).ok().flatten();
            let data =
                tensors::write_data(&data, managed, &prims, &CALL).map_err(|e| in_context(e, c, attr, ordinal))?;
            c.stage.write_attribute(q, attr, ordinal, data, mode).map_err(in_call(CALL))
        })
    }
}

/// `write_attribute`, or `write_attribute_on_device` with `placement`
/// (NULL: none).
///
/// # Safety
/// The contract's preconditions on the pointers.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn write_attribute_placed(
    ctx: *mut ovstage_context_t,
    handle: ovstage_query_handle_t,
    attribute: ovx_string_or_token_t,
    ordinal: ovstage_ordinal_t,
    data: ovstage_write_data_t,
    mode: ovstage_prim_mode_t,
    placement: *const ovstage_placement_t,
    call: &'static str,
) -> ovstage_enqueue_result_t {
    // Ownership of managed tensors passes at entry, whatever happens next.
    // SAFETY: the payload's arrays are readable per the contract.
    let managed = unsafe { tensors::take_managed(&[&data], call) };
    // SAFETY: the contract's preconditions on the pointers.
    unsafe {
        enqueue_slot(ctx, call, |c| {
            let managed = managed?.pop().unwrap_or_default();
            let placed = placed::placement(placement, call)?;
            let mode = prim_mode(mode, call)?;
            let attr = strings::attribute(attribute, format_args!("{call}: attribute"))?;
            let q = query_handle(handle, call)?;
            let record = placed::write_record(&placed, &[(&data, managed.as_slice())], call)?;
            let prims = || c.stage.query_prim_count(q).ok().flatten();
            let data =
                tensors::write_data(&data, managed, &prims, &call).map_err(|e| in_context(e, c, attr, ordinal))?;
            let op = c.stage.write_attribute(q, attr, ordinal, data, mode).map_err(in_call(call))?;
            placed::after_write(c, op, &placed, record, call)
        })
    }
}

/// `write_attributes`.
pub(super) unsafe extern "C" fn write_attributes(
    ctx: *mut ovstage_context_t,
    handle: ovstage_query_handle_t,
    writes: *const ovstage_attribute_write_t,
    write_count: usize,
    ordinal: ovstage_ordinal_t,
    mode: ovstage_prim_mode_t,
) -> ovstage_enqueue_result_t {
    // SAFETY: forwarded; no placement is the unplaced call.
    unsafe {
        write_attributes_placed(ctx, handle, writes, write_count, ordinal, mode, std::ptr::null(), "write_attributes")
    }
}

/// `write_attributes`, or `write_attributes_on_device` with `placement`
/// (NULL: none).
///
/// # Safety
/// The contract's preconditions on the pointers.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn write_attributes_placed(
    ctx: *mut ovstage_context_t,
    handle: ovstage_query_handle_t,
    writes: *const ovstage_attribute_write_t,
    write_count: usize,
    ordinal: ovstage_ordinal_t,
    mode: ovstage_prim_mode_t,
    placement: *const ovstage_placement_t,
    call: &'static str,
) -> ovstage_enqueue_result_t {
    // SAFETY: `write_count` readable entries per the contract (or NULL).
    let entries = unsafe { strings::slice(writes, write_count, format_args!("{call}: writes")) };
    // Ownership of every managed tensor passes at entry, whatever happens
    // next.
    let managed = entries.as_ref().ok().map(|entries| {
        let payloads: Vec<&ovstage_write_data_t> = entries.iter().map(|w| &w.data).collect();
        // SAFETY: each payload's arrays are readable per the contract.
        unsafe { tensors::take_managed(&payloads, call) }
    });
    // SAFETY: the contract's preconditions on the pointers.
    unsafe {
        enqueue_slot(ctx, call, |c| {
            let entries = entries?;
            let managed = managed.expect("taken when the entries are readable")?;
            let placed = placed::placement(placement, call)?;
            let mode = prim_mode(mode, call)?;
            let q = query_handle(handle, call)?;
            let record = if placed.is_unplaced() {
                None
            } else {
                let payloads: Vec<_> = entries.iter().zip(&managed).map(|(w, m)| (&w.data, m.as_slice())).collect();
                placed::write_record(&placed, &payloads, call)?
            };
            let prims = || c.stage.query_prim_count(q).ok().flatten();
            let mut batch = Vec::with_capacity(entries.len());
            for (i, (w, managed)) in entries.iter().zip(managed).enumerate() {
                // Formatted only when a message needs it (eagerly, 700
                // instructions an entry).
                let what = strings::Indexed(strings::Arg(call, "writes"), i);
                let attribute = strings::attribute(w.attribute, format_args!("{what}.attribute"))?;
                let data = tensors::write_data(&w.data, managed, &prims, &what)
                    .map_err(|e| in_context(e, c, attribute, ordinal))?;
                batch.push(AttributeWrite { attribute, data });
            }
            let op = c.stage.write_attributes(q, batch, ordinal, mode).map_err(in_call(call))?;
            placed::after_write(c, op, &placed, record, call)
        })
    }
}

/// `delete_attributes` (no attributes: whole prims).
pub(super) unsafe extern "C" fn delete_attributes(
    ctx: *mut ovstage_context_t,
    handle: ovstage_query_handle_t,
    attributes: *const ovx_string_or_token_t,
    attribute_count: usize,
    ordinal: ovstage_ordinal_t,
) -> ovstage_enqueue_result_t {
    const CALL: &str = "delete_attributes";
    // SAFETY: the contract's preconditions on the pointers.
    unsafe {
        enqueue_slot(ctx, CALL, |c| {
            let q = query_handle(handle, CALL)?;
            let raw = strings::slice(attributes, attribute_count, format_args!("{CALL}: attributes"))?;
            let attrs = raw
                .iter()
                .enumerate()
                .map(|(i, a)| strings::attribute(*a, format_args!("{CALL}: attributes[{i}]")))
                .collect::<Result<Vec<_>>>()?;
            c.stage.delete_attributes(q, &attrs, ordinal).map_err(in_call(CALL))
        })
    }
}
