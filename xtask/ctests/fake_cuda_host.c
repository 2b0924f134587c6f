/*
 * A fake CUDA driver for xtask/ctests/cuda_staging.c (OVSTAGE_LIBCUDA names
 * it): one device whose "device memory" is host memory, so writes from
 * kDLCUDA tensors run end to end without a GPU. It keeps a log of the calls
 * that order and copy (record, wait, copy, sync) in the environment variable
 * OVSTAGE_FAKE_CUDA_LOG, where the test reads it.
 *
 * SPDX-License-Identifier: Apache-2.0
 */
#define _POSIX_C_SOURCE 200112L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char log_text[8192];

static void note(const char* text)
{
    if (strlen(log_text) + strlen(text) < sizeof(log_text)) {
        strcat(log_text, text);
    }
    setenv("OVSTAGE_FAKE_CUDA_LOG", log_text, 1);
}

int cuInit(unsigned flags) { return flags == 0 ? 0 : 1; }
int cuDriverGetVersion(int* version)
{
    *version = 12080;
    return 0;
}
int cuDeviceGetCount(int* count)
{
    *count = 1;
    return 0;
}
int cuDeviceGet(int* device, int ordinal)
{
    *device = ordinal;
    return ordinal == 0 ? 0 : 101;
}
int cuDevicePrimaryCtxRetain(void** ctx, int device)
{
    *ctx = (void*)0xC0;
    return device == 0 ? 0 : 101;
}
static void* current = (void*)0xAA; /* the client's own context */
int cuCtxGetCurrent(void** ctx)
{
    *ctx = current;
    return 0;
}
int cuCtxSetCurrent(void* ctx)
{
    char text[32];
    if (ctx != (void*)0xC0 && ctx != (void*)0xAA) {
        return 201;
    }
    current = ctx;
    snprintf(text, sizeof(text), "current %lx;", (unsigned long)ctx);
    note(text);
    return 0;
}
int cuStreamCreate(void** stream, unsigned flags)
{
    *stream = (void*)0x5100;
    return flags == 1 ? 0 : 1;
}
int cuEventCreate(void** event, unsigned flags)
{
    *event = (void*)0xE100;
    (void)flags;
    return 0;
}
int cuEventRecord(void* event, void* stream)
{
    char text[64];
    snprintf(text, sizeof(text), "record %lx on %lx;", (unsigned long)event, (unsigned long)stream);
    note(text);
    return 0;
}
int cuStreamWaitEvent(void* stream, void* event, unsigned flags)
{
    char text[64];
    snprintf(text, sizeof(text), "wait %lx %lx;", (unsigned long)stream, (unsigned long)event);
    note(text);
    return flags == 0 ? 0 : 1;
}
int cuMemcpyDtoHAsync_v2(void* dst, unsigned long long src, size_t bytes, void* stream)
{
    char text[64];
    if (src == 0x10) {
        return 1; /* CUDA_ERROR_INVALID_VALUE: the test's bad device address */
    }
    memcpy(dst, (const void*)(size_t)src, bytes);
    snprintf(text, sizeof(text), "copy %lu on %lx;", (unsigned long)bytes, (unsigned long)stream);
    note(text);
    return 0;
}
int cuStreamSynchronize(void* stream)
{
    char text[32];
    snprintf(text, sizeof(text), "sync %lx;", (unsigned long)stream);
    note(text);
    return 0;
}
