/*
 * Run by `cargo xtask test` (xtask/src/ctests.rs) with OVSTAGE_LIBCUDA naming
 * xtask/ctests/fake_cuda_host.c, a fake driver whose device memory is host
 * memory: writes from kDLCUDA tensors (all prims, an index map, a mask, a
 * strided tensor, per-row arrays) read back equal to the same writes from
 * host tensors; cuda_sync is captured in order (an event recorded on the
 * caller's stream and waited on by ours, then the caller's event, then the
 * copy, an event completing it, and the caller's current context put back;
 * the enqueue synchronises nothing, the op waits for that event when it
 * runs); a write's CUDA tensors are staged in one batch (one capture, one
 * synchronisation) into pooled page-locked memory; a copy that fails after
 * the enqueue fails the op, which commits nothing; cuda_sync on host memory
 * and a bad device address are refused.
 *
 * SPDX-License-Identifier: Apache-2.0
 */
#define _POSIX_C_SOURCE 200112L /* setenv */
#include <ovstage/ovstage.h>
#include <ovx/path_dictionary/path_dictionary.h>
#include <ovx/path_dictionary/path_dictionary_helper.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PRIMS 4

#include "check.h"

static ovstage_instance_t* instance;
static ovstage_query_handle_t query;

static ovstage_enqueue_result_t write(const char* name, ovstage_ordinal_t ordinal, ovstage_write_data_t data)
{
    ovx_string_or_token_t attribute = { OVX_INVALID_TOKEN, { name, strlen(name) } };
    return ovstage_write_attribute(instance, query, attribute, ordinal, data, OVSTAGE_PRIM_MODE_UPSERT);
}

/* The latest rows of `name` in prim order (`width` floats each, or the
 * array's elements one after another); returns how many floats. */
static size_t read_latest(const char* name, float* out, size_t capacity)
{
    path_dictionary_instance_t* dictionary = ovstage_get_path_dictionary(instance);
    ovx_string_t text = { name, strlen(name) };
    ovx_token_t token = OVX_INVALID_TOKEN;
    ovstage_ordinal_range_t latest = { 0, UINT64_MAX, false };
    ovstage_read_handle_t read = OVSTAGE_INVALID_READ_HANDLE;
    ovstage_read_group_t group;
    size_t n = 0;
    uint32_t t;

    CHECK(path_dictionary_create_tokens_from_strings(dictionary, &text, 1, &token).status == OVX_API_SUCCESS);
    wait_ok(instance, ovstage_read_attributes(instance, query, &token, 1, latest, &read));
    while (ovstage_fetch_read_next(instance, read, OVSTAGE_TIMEOUT_INFINITE, &group) == OVSTAGE_OK) {
        for (t = 0; t < group.data.tensor_count; ++t) {
            const DLTensor* d = &group.data.tensors[t];
            size_t count = 1;
            int32_t k;
            for (k = 0; k < d->ndim; ++k) {
                count *= (size_t)d->shape[k];
            }
            CHECK(n + count <= capacity);
            memcpy(out + n, (const char*)d->data + d->byte_offset, count * sizeof(float));
            n += count;
        }
        CHECK_STATUS(ovstage_release_group(instance, &group), OVSTAGE_OK);
    }
    wait_ok(instance, ovstage_release_read(instance, read));
    return n;
}

/* `device` and `host` read back the same. */
static void same(const char* device, const char* host)
{
    float a[256], b[256];
    size_t na = read_latest(device, a, 256);
    size_t nb = read_latest(host, b, 256);
    CHECK(na > 0 && na == nb);
    CHECK(memcmp(a, b, na * sizeof(float)) == 0);
}

static void both(const char* device, const char* host, ovstage_ordinal_t ordinal, ovstage_write_data_t data,
                 DLTensor* tensors, uint32_t n)
{
    DLTensor on_device[PRIMS];
    uint32_t i;
    for (i = 0; i < n; ++i) {
        on_device[i] = tensors[i];
        on_device[i].device.device_type = kDLCUDA;
    }
    data.tensors = tensors;
    wait_ok(instance, write(host, ordinal, data));
    data.tensors = on_device;
    wait_ok(instance, write(device, ordinal, data));
}

int main(void)
{
    ovstage_instance_desc_t desc = { "cuda-staging" };
    path_dictionary_instance_t* dictionary;
    ovx_string_t paths[PRIMS] = { literal_to_ovx_string("/W/a"), literal_to_ovx_string("/W/b"),
                                  literal_to_ovx_string("/W/c"), literal_to_ovx_string("/W/d") };
    ovx_primpath_list_t list = OVX_INVALID_PRIMPATH_LIST;
    ovstage_write_floor_desc_t seal = { 10, OVSTAGE_SCOPE_ALL, NULL, 0 };
    float rows[PRIMS * 3] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };
    /* Rows 4 floats apart: a strided tensor. */
    float padded[PRIMS * 4] = { 1, 2, 3, -1, 4, 5, 6, -1, 7, 8, 9, -1, 10, 11, 12, -1 };
    int64_t shape[2] = { PRIMS, 3 }, strides[2] = { 4, 1 };
    int64_t lengths[PRIMS] = { 1, 3, 2, 4 };
    uint32_t map[2] = { 3, 1 };
    uint64_t mask = 0x5; /* prims 0 and 2 */
    ovstage_write_data_t data;
    DLTensor t, arrays[PRIMS];
    const char* log;
    uint32_t i;

    CHECK(getenv("OVSTAGE_LIBCUDA") != NULL);
    CHECK_STATUS(ovstage_create_instance(&desc, &instance), OVSTAGE_OK);
    dictionary = ovstage_get_path_dictionary(instance);
    CHECK(path_dictionary_create_path_list_from_strings(dictionary, paths, PRIMS, &list).status == OVX_API_SUCCESS);
    CHECK_STATUS(ovstage_query_from_path_list(instance, list, &query), OVSTAGE_OK);

    memset(&data, 0, sizeof(data));
    data.tensor_count = 1;

    /* All prims, then two by index map, then two by mask. */
    t = float_tensor(rows, 2, shape, NULL);
    both("all", "all_h", 1, data, &t, 1);
    data.index_map = map; /* prims 0 and 1 take payload rows 3 and 1 */
    data.count = 2;
    both("all", "all_h", 2, data, &t, 1);
    data.index_map = NULL;
    data.mask = &mask;
    data.count = PRIMS;
    both("all", "all_h", 3, data, &t, 1);
    data.mask = NULL;
    data.count = 0;
    /* Strided rows. */
    t = float_tensor(padded, 2, shape, strides);
    both("strided", "strided_h", 1, data, &t, 1);
    /* Per-row arrays: one tensor per prim. */
    for (i = 0; i < PRIMS; ++i) {
        arrays[i] = float_tensor(rows + i, 1, &lengths[i], NULL);
    }
    data.is_array = true;
    data.tensor_count = PRIMS;
    both("arrays", "arrays_h", 1, data, arrays, PRIMS);
    data.is_array = false;
    data.tensor_count = 1;

    wait_ok(instance, ovstage_advance_write_floor(instance, &seal));
    same("all", "all_h");
    same("strided", "strided_h");
    same("arrays", "arrays_h");

    /* cuda_sync: an event recorded on the caller's stream and waited on by
     * ours, then the caller's event, then the copy, then an event that
     * completes it: the enqueue synchronises nothing. The op, when it runs,
     * waits for that event on the host (and destroys it). */
    {
        /* ...with the device's context current, and the client's put back. */
        static const char queued[] =
            "current c0;record e100 on 1234;wait 5100 e100;wait 5100 5678;copy 48 on 5100;record e100 on 5100;"
            "current aa;";
        static const char ran[] = "current c0;event sync e100;destroy e100;current aa;";
        ovstage_enqueue_result_t r;
        size_t before;
        t = float_tensor(rows, 2, shape, NULL);
        t.device.device_type = kDLCUDA;
        data.tensors = &t;
        data.cuda_sync.stream = 0x1234;
        data.cuda_sync.wait_event = 0x5678;
        log = getenv("OVSTAGE_FAKE_CUDA_LOG");
        CHECK(log != NULL && strstr(log, "on 1234") == NULL && strstr(log, "wait") == NULL);
        before = strlen(log);
        r = write("synced", 11, data);
        /* (A lane may already be running the op: its calls follow.) */
        log = getenv("OVSTAGE_FAKE_CUDA_LOG");
        CHECK(strncmp(log + before, queued, strlen(queued)) == 0);
        wait_ok(instance, r);
        log = getenv("OVSTAGE_FAKE_CUDA_LOG");
        if (strlen(log + before) != strlen(queued) + strlen(ran) || strcmp(log + before + strlen(queued), ran) != 0) {
            fprintf(stderr, "log: %s\n", log + before);
        }
        CHECK(strncmp(log + before, queued, strlen(queued)) == 0 && strcmp(log + before + strlen(queued), ran) == 0);
    }
    /* Per-row CUDA arrays are staged as one batch: one capture of cuda_sync,
     * a copy per row, one synchronisation. */
    {
        static const char expected[] = "current c0;record e100 on 1234;wait 5100 e100;wait 5100 5678;copy 4 on 5100;"
                                       "copy 12 on 5100;copy 8 on 5100;copy 16 on 5100;record e100 on 5100;current aa;"
                                       "current c0;event sync e100;destroy e100;current aa;";
        DLTensor rows_on_device[PRIMS];
        size_t before;
        for (i = 0; i < PRIMS; ++i) {
            rows_on_device[i] = float_tensor(rows + i, 1, &lengths[i], NULL);
            rows_on_device[i].device.device_type = kDLCUDA;
        }
        data.is_array = true;
        data.tensor_count = PRIMS;
        data.tensors = rows_on_device;
        data.cuda_sync.stream = 0x1234;
        before = strlen(getenv("OVSTAGE_FAKE_CUDA_LOG"));
        wait_ok(instance, write("batched", 11, data));
        log = getenv("OVSTAGE_FAKE_CUDA_LOG");
        if (strcmp(log + before, expected) != 0) {
            fprintf(stderr, "log: %s\n", log + before);
        }
        CHECK(strcmp(log + before, expected) == 0);
        data.is_array = false;
        data.tensor_count = 1;
        data.tensors = &t;
    }
    /* The bytes land in page-locked memory from a pool: after the first
     * staging write, more of the same size take no new block. */
    {
        const char* pinned = getenv("OVSTAGE_FAKE_CUDA_PINNED");
        char first[64];
        CHECK(pinned != NULL && strncmp(pinned, "given ", 6) == 0 && atoi(pinned + 6) >= 1);
        snprintf(first, sizeof(first), "%s", pinned);
        for (i = 0; i < 8; ++i) {
            wait_ok(instance, write("synced", 20 + i, data));
        }
        CHECK(strcmp(getenv("OVSTAGE_FAKE_CUDA_PINNED"), first) == 0);
    }
    /* A copy that fails after the enqueue (its completing event reports an
     * error) fails the op, which commits nothing. */
    {
        ovstage_enqueue_result_t r;
        ovstage_op_wait_result_t waited;
        data.cuda_sync.stream = 0;
        data.cuda_sync.wait_event = 0;
        setenv("OVSTAGE_FAKE_CUDA_FAIL_EVENT", "1", 1);
        r = write("late_failure", 30, data);
        CHECK_STATUS(r.status, OVSTAGE_OK);
        CHECK_STATUS(ovstage_wait_op(instance, r.op_index, OVSTAGE_TIMEOUT_INFINITE, &waited), OVSTAGE_ERROR_OP_FAILED);
        unsetenv("OVSTAGE_FAKE_CUDA_FAIL_EVENT");
        CHECK(strstr(ovstage_get_last_error().ptr, "copying the write's CUDA tensors to the host (48 bytes) failed") != NULL);
        CHECK(strstr(ovstage_get_last_error().ptr, "cuEventSynchronize failed with CUresult 700") != NULL);
        CHECK_STATUS(ovstage_release_op(instance, r.op_index), OVSTAGE_OK);
        data.cuda_sync.stream = 0x1234;
        data.cuda_sync.wait_event = 0x5678;
    }
    /* cuda_sync on host memory is refused; so is a bad device address. */
    t.device.device_type = kDLCPU;
    CHECK_STATUS(write("synced", 12, data).status, OVSTAGE_ERROR_NOT_SUPPORTED);
    CHECK(strstr(ovstage_get_last_error().ptr, "cuda_sync is only honoured for CUDA tensors") != NULL);
    t.device.device_type = kDLCUDA;
    t.data = (void*)0x10;
    data.cuda_sync.stream = 0;
    data.cuda_sync.wait_event = 0;
    CHECK_STATUS(write("synced", 12, data).status, OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(ovstage_get_last_error().ptr, "copying 48 bytes from CUDA device 0 failed") != NULL);

    /* The late failure committed nothing. */
    seal.ordinal = 40;
    wait_ok(instance, ovstage_advance_write_floor(instance, &seal));
    CHECK(read_latest("late_failure", NULL, 0) == 0);

    wait_ok(instance, ovstage_release_query(instance, query));
    CHECK(path_dictionary_release_path_list_reference(dictionary, list).status == OVX_API_SUCCESS);
    CHECK_STATUS(ovstage_destroy_instance(instance), OVSTAGE_OK);
    printf("cuda_staging.c: %d checks passed\n", checks);
    return 0;
}
