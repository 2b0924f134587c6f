/*
 * A fake CUDA driver for xtask/ctests/runtime.c (OVSTAGE_LIBCUDA names it):
 * it says when it is opened, and it sees no device.
 *
 * SPDX-License-Identifier: Apache-2.0
 */
#define _POSIX_C_SOURCE 200112L
#include <stdlib.h>

__attribute__((constructor)) static void opened(void) { setenv("OVSTAGE_FAKE_CUDA_OPENED", "1", 1); }

int cuInit(unsigned flags) { return flags == 0 ? 0 : 1; }
int cuDriverGetVersion(int* version)
{
    *version = 12080;
    return 0;
}
int cuDeviceGetCount(int* count)
{
    *count = 0;
    return 0;
}
