/*
 * The checks of the C programs under xtask/ctests/: each CHECK counts, and
 * the first that fails prints where and exits 1 (CHECK_STATUS also prints
 * the status and the thread's last error).
 *
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef OVSTAGE_CTESTS_CHECK_H
#define OVSTAGE_CTESTS_CHECK_H

#include <ovstage/ovstage.h>

#include <stdio.h>
#include <stdlib.h>

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

#endif
