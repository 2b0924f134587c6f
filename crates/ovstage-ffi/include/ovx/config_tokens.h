/*
 * ovx/config_tokens.h
 *
 * Hand-written: kept in crates/ovstage-ffi/cheaders/ovx/config_tokens.h and copied here by
 * `cargo xtask codegen`. Do not edit this copy.
 *
 * SPDX-License-Identifier: Apache-2.0
 */

/* Tokens that process configuration strings may contain. */
#ifndef OVX_CONFIG_TOKENS_H
#define OVX_CONFIG_TOKENS_H

/** Replaced by the running executable's directory in configured paths. */
#define OVX_CONFIG_EXECUTABLE_DIR_TOKEN "${executable_dir}"

#endif /* OVX_CONFIG_TOKENS_H */
