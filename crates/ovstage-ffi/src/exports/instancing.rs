//! The exported functions of ovstage/ovstage_instancing.h (types: `ovstage_abi::instancing`).

use ovstage_abi::api_types::{ovstage_api_status_t, ovstage_instance_t};
use ovstage_abi::ovx_types::{ovx_primpath_list_t, ovx_primpath_t};

use crate::unsupported;

/// The instance roots of a prototype. Not supported.
///
/// # Safety
/// Never dereferences its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_instancing_get_instance_roots(
    instance: *mut ovstage_instance_t,
    prototype_root: ovx_primpath_t,
    out_instance_roots: *mut ovx_primpath_list_t,
) -> ovstage_api_status_t {
    let _ = (instance, prototype_root, out_instance_roots);
    unsupported::status("ovstage_instancing_get_instance_roots", unsupported::INSTANCING)
}

/// The prototype root of an instance root. Not supported.
///
/// # Safety
/// Never dereferences its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_instancing_get_prototype_root(
    instance: *mut ovstage_instance_t,
    instance_root: ovx_primpath_t,
    out_prototype_root: *mut ovx_primpath_t,
) -> ovstage_api_status_t {
    let _ = (instance, instance_root, out_prototype_root);
    unsupported::status("ovstage_instancing_get_prototype_root", unsupported::INSTANCING)
}

/// Every prototype root. Not supported.
///
/// # Safety
/// Never dereferences its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_instancing_get_prototype_roots(
    instance: *mut ovstage_instance_t,
    out_prototype_roots: *mut ovx_primpath_list_t,
) -> ovstage_api_status_t {
    let _ = (instance, out_prototype_roots);
    unsupported::status("ovstage_instancing_get_prototype_roots", unsupported::INSTANCING)
}
