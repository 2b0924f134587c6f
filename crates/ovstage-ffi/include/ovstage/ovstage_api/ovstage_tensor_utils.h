/*
 * ovstage/ovstage_api/ovstage_tensor_utils.h
 *
 * Hand-written: kept in crates/ovstage-ffi/cheaders/ovstage/ovstage_api/ovstage_tensor_utils.h and copied here by
 * `cargo xtask codegen`. Do not edit this copy.
 *
 * SPDX-License-Identifier: Apache-2.0
 */

/* Conversions between the tensor layouts of reads/maps and of writes. */
#ifndef OVSTAGE_TENSOR_UTILS_H
#define OVSTAGE_TENSOR_UTILS_H

#include "ovstage_api_types.h"

/**
 * Describes the rows of a tensor from a read or a map (scalar lanes, one to
 * three dimensions, the dimensions after the first being the tuple's
 * components) in the form writes take: one dimension of rows whose element
 * type has one lane per component. No data is copied.
 *
 * On success `*output` is `*source` with `ndim` 1, `dtype.lanes` the
 * component count, `shape` pointing at `layout[0]` (the row count) and
 * `strides` at `layout[1]` (the row stride in whole tuples); `layout` must
 * then outlive the use of `output`.
 *
 * Returns OVSTAGE_ERROR_INVALID_ARGUMENT, leaving `*output` and `layout`
 * untouched, for a NULL argument or shape, lanes other than 1, a rank
 * outside 1..3, a negative row count, an empty or negative component
 * dimension, more than 255 components, component strides that are not
 * compact, or a row stride that is negative or not a whole number of
 * tuples.
 */
static inline ovstage_api_status_t ovstage_tensor_to_write(const DLTensor* source,
                                                           DLTensor* output,
                                                           int64_t layout[2])
{
    DLTensor result;
    int64_t components = 1;
    int64_t row_stride;
    int32_t axis;

    if (source == NULL || output == NULL || layout == NULL || source->shape == NULL) {
        return OVSTAGE_ERROR_INVALID_ARGUMENT;
    }
    if (source->dtype.lanes != 1 || source->ndim < 1 || source->ndim > 3 || source->shape[0] < 0) {
        return OVSTAGE_ERROR_INVALID_ARGUMENT;
    }
    /* Innermost axis first: each component axis must be compact. */
    for (axis = source->ndim - 1; axis >= 1; --axis) {
        int64_t extent = source->shape[axis];
        if (extent <= 0 || extent > 255 / components) {
            return OVSTAGE_ERROR_INVALID_ARGUMENT;
        }
        if (source->strides != NULL && source->strides[axis] != components) {
            return OVSTAGE_ERROR_INVALID_ARGUMENT;
        }
        components *= extent;
    }
    row_stride = source->strides != NULL ? source->strides[0] : components;
    if (row_stride < 0 || row_stride % components != 0) {
        return OVSTAGE_ERROR_INVALID_ARGUMENT;
    }

    result = *source;
    result.ndim = 1;
    result.dtype.lanes = (uint16_t)components;
    layout[0] = source->shape[0];
    layout[1] = row_stride / components;
    result.shape = &layout[0];
    result.strides = &layout[1];
    *output = result;
    return OVSTAGE_OK;
}

#endif /* OVSTAGE_TENSOR_UTILS_H */
