/*
 * What the C programs under xtask/ctests/ share: the checks (each CHECK
 * counts, and the first that fails prints where and exits 1; CHECK_STATUS
 * also prints the status and the thread's last error), a float32 host
 * tensor, and waiting for an op that must succeed.
 *
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef OVSTAGE_CTESTS_CHECK_H
#define OVSTAGE_CTESTS_CHECK_H

#include <ovstage/ovstage.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int checks;

#define CHECK(cond)                                                                   \
    do {                                                                              \
        ++checks;                                                                     \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

#define CHECK_STATUS(expr, expected)                                                              \
    do {                                                                                          \
        ovstage_api_status_t status_ = (expr);                                                    \
        ++checks;                                                                                 \
        if (status_ != (expected)) {                                                              \
            ovx_string_t error_ = ovstage_get_last_error();                                       \
            fprintf(stderr, "%s:%d: %s gave %d, not %d (%.*s)\n", __FILE__, __LINE__, #expr,      \
                    (int)status_, (int)(expected), (int)error_.length, error_.ptr ? error_.ptr : ""); \
            exit(1);                                                                              \
        }                                                                                         \
    } while (0)


/* A float32 host tensor over `data`. */
static inline DLTensor float_tensor(float* data, int32_t ndim, int64_t* shape, int64_t* strides)
{
    DLTensor t;
    memset(&t, 0, sizeof(t));
    t.data = data;
    t.device.device_type = kDLCPU;
    t.ndim = ndim;
    t.dtype.code = kDLFloat;
    t.dtype.bits = 32;
    t.dtype.lanes = 1;
    t.shape = shape;
    t.strides = strides;
    return t;
}

/* Waits for an op that must have been accepted and succeed, then releases it. */
static inline void wait_ok(ovstage_instance_t* instance, ovstage_enqueue_result_t r)
{
    ovstage_op_wait_result_t w;
    CHECK_STATUS(r.status, OVSTAGE_OK);
    CHECK_STATUS(ovstage_wait_op(instance, r.op_index, OVSTAGE_TIMEOUT_INFINITE, &w), OVSTAGE_OK);
    CHECK_STATUS(ovstage_release_op(instance, r.op_index), OVSTAGE_OK);
}

#endif
