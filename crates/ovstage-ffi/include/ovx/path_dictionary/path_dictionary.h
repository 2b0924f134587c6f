/*
 * ovx/path_dictionary/path_dictionary.h
 *
 * Hand-written: kept in crates/ovstage-ffi/cheaders/ovx/path_dictionary/path_dictionary.h and copied here by
 * `cargo xtask codegen`. Do not edit this copy.
 *
 * SPDX-License-Identifier: Apache-2.0
 */

/* The whole path dictionary interface: types, function table, wrappers. */
#ifndef PATH_DICTIONARY_INTERFACE_H
#define PATH_DICTIONARY_INTERFACE_H

#include "path_dictionary_types.h"
#include "path_dictionary_vtable.h"
#include "path_dictionary_utils.h"

#endif /* PATH_DICTIONARY_INTERFACE_H */
