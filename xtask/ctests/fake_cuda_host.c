/*
 * A fake CUDA driver for xtask/ctests/cuda_staging.c and cuda_placement.c
 * (OVSTAGE_LIBCUDA names it): one device whose "device memory" is host
 * memory, so writes from kDLCUDA tensors and reads placed on the device run
 * end to end without a GPU. It keeps a log of the calls that order, copy,
 * allocate and free (record, wait, copy, upload, sync, alloc, free) in the
 * environment variable OVSTAGE_FAKE_CUDA_LOG, where the tests read it.
 * Event 0xBAD is one the driver refuses to record (CUDA_ERROR_INVALID_HANDLE).
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
    if (ctx != (void*)0xC0 && ctx != (void*)0xAA && ctx != NULL) {
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
    if (event == (void*)0xBAD) {
        note("refused record;");
        return 400;
    }
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
/* Page-locked host memory is host memory; the blocks given and freed are
 * counted in OVSTAGE_FAKE_CUDA_PINNED ("given N freed M"), not logged. */
static int pinned_given, pinned_freed;
static void count_pinned(void)
{
    char text[64];
    snprintf(text, sizeof(text), "given %d freed %d", pinned_given, pinned_freed);
    setenv("OVSTAGE_FAKE_CUDA_PINNED", text, 1);
}
int cuMemHostAlloc(void** ptr, size_t bytes, unsigned flags)
{
    (void)flags;
    *ptr = malloc(bytes);
    if (*ptr == NULL) {
        return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
    }
    ++pinned_given;
    count_pinned();
    return 0;
}
int cuMemFreeHost(void* ptr)
{
    free(ptr);
    ++pinned_freed;
    count_pinned();
    return 0;
}
int cuStreamGetCtx(void* stream, void** ctx)
{
    (void)stream;
    *ctx = (void*)0xC0;
    return 0;
}
int cuMemAlloc_v2(unsigned long long* dptr, size_t bytes)
{
    char text[48];
    void* p = malloc(bytes);
    if (!p) {
        return 2;
    }
    *dptr = (unsigned long long)(size_t)p;
    snprintf(text, sizeof(text), "alloc %lu;", (unsigned long)bytes);
    note(text);
    return 0;
}
int cuMemFree_v2(unsigned long long dptr)
{
    free((void*)(size_t)dptr);
    note("free;");
    return 0;
}
int cuMemcpyHtoDAsync_v2(unsigned long long dst, const void* src, size_t bytes, void* stream)
{
    char text[64];
    memcpy((void*)(size_t)dst, src, bytes);
    snprintf(text, sizeof(text), "upload %lu on %lx;", (unsigned long)bytes, (unsigned long)stream);
    note(text);
    return 0;
}
int cuMemcpyDtoH_v2(void* dst, unsigned long long src, size_t bytes)
{
    char text[48];
    memcpy(dst, (const void*)(size_t)src, bytes);
    snprintf(text, sizeof(text), "download %lu;", (unsigned long)bytes);
    note(text);
    return 0;
}
int cuEventSynchronize(void* event)
{
    char text[48];
    snprintf(text, sizeof(text), "event sync %lx;", (unsigned long)event);
    note(text);
    /* A test's way to have the work before an event fail. */
    return getenv("OVSTAGE_FAKE_CUDA_FAIL_EVENT") != NULL ? 700 : 0;
}
int cuEventDestroy_v2(void* event)
{
    char text[48];
    snprintf(text, sizeof(text), "destroy %lx;", (unsigned long)event);
    note(text);
    return 0;
}
