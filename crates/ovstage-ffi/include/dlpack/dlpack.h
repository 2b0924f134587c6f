/*
 * dlpack/dlpack.h
 *
 * Hand-written: kept in crates/ovstage-ffi/cheaders/dlpack/dlpack.h and copied here by
 * `cargo xtask codegen`. Do not edit this copy.
 *
 * SPDX-License-Identifier: Apache-2.0
 */

/* The DLPack types under their usual include path. */
#include <ovx/dlpack/dlpack.h>
