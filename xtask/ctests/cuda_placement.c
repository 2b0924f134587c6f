/*
 * Run by `cargo xtask test` (xtask/src/ctests.rs) with OVSTAGE_LIBCUDA naming
 * xtask/ctests/fake_cuda_host.c, a fake driver whose device memory is host
 * memory: the experimental "ovstage.placement" extension end to end.
 * query_extension returns the table; a read placed on CUDA device 0 hands
 * out groups in device memory (fixed rows and per-row arrays) equal to the
 * host read; the copy is kept for later placed reads of the same version
 * (ordered behind its upload by an event of ours), and a new version is
 * copied again; the availability event is recorded
 * exactly once per accepted op, on the placement's stream, also for a read
 * with no groups and for a write that needs no device work; without an
 * event the read drains the stream instead; a host placement with an event
 * records in the caller's current context; a refused record fails the op
 * (a read hands out nothing; a write's values stay committed and the call
 * reports OP_FAILED after it ran); CUDA sources on two devices with no
 * device named and a default stream are refused before anything runs; a
 * map session on the device hands out a device copy, waits for
 * write_done_sync and copies the values back before each commit, which
 * records the event once; a steady GPU producer / GPU consumer loop costs
 * one host synchronisation per tick (the producer's staging), none in the
 * consumer's read; a placed write's event follows, on the device, the copy
 * that reads its CUDA tensor; the GPU hierarchy models run.
 *
 * SPDX-License-Identifier: Apache-2.0
 */
#include <ovstage/ovstage.h>
#include <ovstage/ovstage_api/experimental/ovstage_placement_extension.h>
#include <ovx/path_dictionary/path_dictionary.h>
#include <ovx/path_dictionary/path_dictionary_helper.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PRIMS 4

#include "check.h"

static ovstage_instance_t* instance;
static ovstage_query_handle_t query;
static const ovstage_placement_extension_v1_t* ext;

static size_t log_length(void)
{
    const char* log = getenv("OVSTAGE_FAKE_CUDA_LOG");
    return log ? strlen(log) : 0;
}

/* The log written since `before` (log_length() then). */
static const char* log_since(size_t before)
{
    const char* log = getenv("OVSTAGE_FAKE_CUDA_LOG");
    return log ? log + before : "";
}

static int occurrences(const char* text, const char* what)
{
    int n = 0;
    const char* at = text;
    while ((at = strstr(at, what)) != NULL) {
        ++n;
        at += strlen(what);
    }
    return n;
}

static ovx_token_t token(const char* name)
{
    path_dictionary_instance_t* dictionary = ovstage_get_path_dictionary(instance);
    ovx_string_t text = { name, strlen(name) };
    ovx_token_t t = OVX_INVALID_TOKEN;
    CHECK(path_dictionary_create_tokens_from_strings(dictionary, &text, 1, &t).status == OVX_API_SUCCESS);
    return t;
}

static ovstage_enqueue_result_t write_placed(const char* name, ovstage_ordinal_t ordinal, ovstage_write_data_t data,
                                             const ovstage_placement_t* placement)
{
    ovx_string_or_token_t attribute = { OVX_INVALID_TOKEN, { name, strlen(name) } };
    return ovstage_write_attribute_on_device(instance, query, attribute, ordinal, data, OVSTAGE_PRIM_MODE_UPSERT,
                                             placement);
}

/* Reads the latest `name` with `placement`; copies every group's values (one
 * after another) into `out`, checks each tensor is on `device_type`, and
 * returns how many floats. */
static size_t read_placed(const char* name, const ovstage_placement_t* placement, int32_t device_type, float* out,
                          size_t capacity)
{
    ovx_token_t t = token(name);
    ovstage_ordinal_range_t latest = { 0, UINT64_MAX, false };
    ovstage_read_handle_t read = OVSTAGE_INVALID_READ_HANDLE;
    ovstage_read_group_t group;
    size_t n = 0;
    uint32_t i;

    wait_ok(instance, ovstage_read_attributes_on_device(instance, query, &t, 1, latest, placement, &read));
    while (ovstage_fetch_read_next(instance, read, OVSTAGE_TIMEOUT_INFINITE, &group) == OVSTAGE_OK) {
        for (i = 0; i < group.data.tensor_count; ++i) {
            const DLTensor* d = &group.data.tensors[i];
            size_t count = 1;
            int32_t k;
            CHECK((int32_t)d->device.device_type == device_type && d->device.device_id == 0);
            for (k = 0; k < d->ndim; ++k) {
                count *= (size_t)d->shape[k];
            }
            CHECK(n + count <= capacity);
            /* The fake driver's device memory is host memory. */
            memcpy(out + n, (const char*)d->data + d->byte_offset, count * sizeof(float));
            n += count;
        }
        CHECK_STATUS(ovstage_release_group(instance, &group), OVSTAGE_OK);
    }
    wait_ok(instance, ovstage_release_read(instance, read));
    return n;
}

/* `name` reads the same on the host and on CUDA device 0; returns the
 * driver log of the device read. */
static void same_on_device(const char* name, const ovstage_placement_t* placement)
{
    float host[64], device[64];
    size_t nh = read_placed(name, NULL, kDLCPU, host, 64);
    size_t nd = read_placed(name, placement, kDLCUDA, device, 64);
    CHECK(nh > 0 && nh == nd);
    CHECK(memcmp(host, device, nh * sizeof(float)) == 0);
}

int main(void)
{
    ovstage_instance_desc_t desc = { "cuda-placement" };
    path_dictionary_instance_t* dictionary;
    ovx_string_t paths[PRIMS] = { literal_to_ovx_string("/W/a"), literal_to_ovx_string("/W/b"),
                                  literal_to_ovx_string("/W/c"), literal_to_ovx_string("/W/d") };
    ovx_primpath_list_t list = OVX_INVALID_PRIMPATH_LIST;
    ovstage_write_floor_desc_t seal = { 10, OVSTAGE_SCOPE_ALL, NULL, 0 };
    float rows[PRIMS * 3] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };
    int64_t shape[2] = { PRIMS, 3 };
    int64_t lengths[PRIMS] = { 1, 3, 2, 4 };
    ovstage_placement_t on_device = { { kDLCUDA, 0 }, 0x5200, 0xE200 };
    ovstage_placement_t drained = { { kDLCUDA, 0 }, 0x5200, 0 };
    ovstage_placement_t host_event = { { kDLCPU, 0 }, 0, 0xE300 };
    ovstage_placement_t refused = { { kDLCUDA, 0 }, 0x5200, 0xBAD };
    ovstage_placement_t unspecified = { { 0, 0 }, 0, 0xE400 };
    ovstage_write_data_t data;
    DLTensor t, arrays[PRIMS], two[2];
    size_t before;
    const char* log;
    uint32_t i;

    CHECK(getenv("OVSTAGE_LIBCUDA") != NULL);
    CHECK_STATUS(ovstage_create_instance(&desc, &instance), OVSTAGE_OK);
    dictionary = ovstage_get_path_dictionary(instance);
    CHECK(path_dictionary_create_path_list_from_strings(dictionary, paths, PRIMS, &list).status == OVX_API_SUCCESS);
    CHECK_STATUS(ovstage_query_from_path_list(instance, list, &query), OVSTAGE_OK);

    /* The table, through the header's own lookup. */
    CHECK_STATUS(ovstage_query_placement_extension(instance, &ext), OVSTAGE_OK);
    CHECK(ext != NULL && ext->header.version == OVSTAGE_PLACEMENT_EXTENSION_VERSION);
    CHECK(ext->header.struct_size == sizeof(ovstage_placement_extension_v1_t));

    memset(&data, 0, sizeof(data));
    data.tensor_count = 1;
    t = float_tensor(rows, 2, shape, NULL);
    data.tensors = &t;

    /* A write placed on the device, with an event: recorded once, on the
     * placement's stream, in the device's context. */
    before = log_length();
    wait_ok(instance, write_placed("fixed", 1, data, &on_device));
    log = log_since(before);
    CHECK(occurrences(log, "record e200 on 5200;") == 1);
    /* Per-row arrays, unplaced. */
    for (i = 0; i < PRIMS; ++i) {
        arrays[i] = float_tensor(rows + i, 1, &lengths[i], NULL);
    }
    data.is_array = true;
    data.tensor_count = PRIMS;
    data.tensors = arrays;
    wait_ok(instance, write_placed("arrays", 1, data, NULL));
    data.is_array = false;
    data.tensor_count = 1;
    data.tensors = &t;
    wait_ok(instance, ovstage_advance_write_floor(instance, &seal));

    /* A placed read: device copies equal to the host read, one upload per
     * tensor into one allocation per group, our ready event and then the
     * caller's recorded after them, the stream not drained; the copy is
     * kept for later reads of the same version (not freed on release). */
    before = log_length();
    same_on_device("fixed", &on_device);
    log = log_since(before);
    CHECK(occurrences(log, "alloc") == 1 && occurrences(log, "upload 48 on 5200;") == 1);
    CHECK(occurrences(log, "record e100 on 5200;") == 1 && occurrences(log, "record e200 on 5200;") == 1);
    CHECK(occurrences(log, "sync") == 0 && occurrences(log, "free;") == 0);
    CHECK(strstr(log, "upload") < strstr(log, "record e100") && strstr(log, "record e100") < strstr(log, "record e200"));
    /* Every switch to the device's context is undone: the thread's own
     * (the fake's 0xAA) is current again. */
    CHECK(occurrences(log, "current c0;") == occurrences(log, "current aa;"));
    CHECK(strlen(log) >= 11 && strcmp(log + strlen(log) - 11, "current aa;") == 0);
    before = log_length();
    same_on_device("arrays", &on_device);
    log = log_since(before);
    CHECK(occurrences(log, "alloc") == 1 && occurrences(log, "upload") == PRIMS);
    CHECK(occurrences(log, "record e200 on 5200;") == 1 && occurrences(log, "free;") == 0);
    /* The same version again, with an event: no copy; the stream waits for
     * the kept copy's ready event on the device, then the record. */
    before = log_length();
    same_on_device("fixed", &on_device);
    log = log_since(before);
    CHECK(occurrences(log, "alloc") == 0 && occurrences(log, "upload") == 0);
    CHECK(occurrences(log, "wait 5200 e100;") == 1 && strstr(log, "wait 5200 e100;") < strstr(log, "record e200"));
    /* Without an event the read waits on the host: for the kept copy's
     * event; for a new copy (the arrays, read with another placement the
     * first time below, are kept too), by draining the stream. */
    before = log_length();
    same_on_device("fixed", &drained);
    log = log_since(before);
    CHECK(occurrences(log, "event sync e100;") == 1 && occurrences(log, "record") == 0);
    CHECK(occurrences(log, "upload") == 0 && occurrences(log, "sync 5200;") == 0);
    /* A read with no groups still records its event, once. */
    {
        float none[4];
        before = log_length();
        CHECK(read_placed("nobody_has_this", &on_device, kDLCUDA, none, 4) == 0);
        log = log_since(before);
        CHECK(occurrences(log, "record e200 on 5200;") == 1 && occurrences(log, "alloc") == 0);
    }
    /* A host placement with an event: host tensors, the record in the
     * caller's own context (no context switch), on the default stream. */
    {
        float a[16], b[16];
        before = log_length();
        CHECK(read_placed("fixed", &host_event, kDLCPU, a, 16) == 12);
        log = log_since(before);
        CHECK(occurrences(log, "record e300 on 0;") == 1 && occurrences(log, "current") == 0);
        CHECK(read_placed("fixed", NULL, kDLCPU, b, 16) == 12 && memcmp(a, b, sizeof(float) * 12) == 0);
    }

    /* A host placement with an event on a thread with no current context
     * has no device to record on: refused at enqueue, nothing recorded. */
    {
        typedef int (*set_current_t)(void*);
        void* driver = dlopen(getenv("OVSTAGE_LIBCUDA"), RTLD_NOW | RTLD_NOLOAD);
        set_current_t set_current = driver ? (set_current_t)(size_t)dlsym(driver, "cuCtxSetCurrent") : NULL;
        ovx_token_t ft = token("fixed");
        ovstage_ordinal_range_t latest = { 0, UINT64_MAX, false };
        ovstage_read_handle_t read = 1;
        CHECK(set_current != NULL && set_current(NULL) == 0);
        before = log_length();
        CHECK_STATUS(ovstage_read_attributes_on_device(instance, query, &ft, 1, latest, &host_event, &read).status,
                     OVSTAGE_ERROR_INVALID_ARGUMENT);
        CHECK(read == OVSTAGE_INVALID_READ_HANDLE);
        CHECK(strstr(ovstage_get_last_error().ptr, "no CUDA context is current on the calling thread") != NULL);
        CHECK(occurrences(log_since(before), "record") == 0);
        CHECK(set_current((void*)0xAA) == 0);
        dlclose(driver);
    }

    /* A refused record fails the read: nothing is handed out. */
    {
        ovx_token_t ft = token("fixed");
        ovstage_ordinal_range_t latest = { 0, UINT64_MAX, false };
        ovstage_read_handle_t read = OVSTAGE_INVALID_READ_HANDLE;
        ovstage_read_group_t group;
        ovstage_op_wait_result_t waited;
        ovstage_enqueue_result_t r = ovstage_read_attributes_on_device(instance, query, &ft, 1, latest, &refused, &read);
        CHECK_STATUS(r.status, OVSTAGE_OK);
        CHECK_STATUS(ovstage_wait_op(instance, r.op_index, OVSTAGE_TIMEOUT_INFINITE, &waited), OVSTAGE_ERROR_OP_FAILED);
        CHECK(ovstage_fetch_read_next(instance, read, OVSTAGE_TIMEOUT_INFINITE, &group) != OVSTAGE_OK);
        CHECK(strstr(ovstage_get_last_error().ptr, "availability_event 0xbad") != NULL);
        CHECK_STATUS(ovstage_release_op(instance, r.op_index), OVSTAGE_OK);
        wait_ok(instance, ovstage_release_read(instance, read));
    }
    /* ...and a write reports OP_FAILED after it ran: its values stay. */
    {
        float again[16], expected[16];
        CHECK_STATUS(write_placed("fixed", 11, data, &refused).status, OVSTAGE_ERROR_OP_FAILED);
        CHECK(strstr(ovstage_get_last_error().ptr, "the op ran, but recording its availability_event 0xbad") != NULL);
        seal.ordinal = 11;
        wait_ok(instance, ovstage_advance_write_floor(instance, &seal));
        CHECK(read_placed("fixed", NULL, kDLCPU, again, 16) == 12);
        memcpy(expected, rows, sizeof(float) * 12);
        CHECK(memcmp(again, expected, sizeof(float) * 12) == 0);
    }

    /* CUDA sources on two devices, no device named, a default stream and
     * an event: one record cannot cover them; refused before anything ran
     * (no copy out of either tensor, no record). */
    two[0] = float_tensor(rows, 2, shape, NULL);
    two[1] = float_tensor(rows, 2, shape, NULL);
    two[0].device.device_type = kDLCUDA;
    two[1].device.device_type = kDLCUDA;
    two[1].device.device_id = 1;
    {
        ovstage_attribute_write_t writes[2];
        memset(writes, 0, sizeof(writes));
        writes[0].attribute.string = literal_to_ovx_string("x");
        writes[0].data = data;
        writes[0].data.tensors = &two[0];
        writes[1].attribute.string = literal_to_ovx_string("y");
        writes[1].data = data;
        writes[1].data.tensors = &two[1];
        before = log_length();
        CHECK_STATUS(ovstage_write_attributes_on_device(instance, query, writes, 2, 20, OVSTAGE_PRIM_MODE_UPSERT,
                                                        &unspecified)
                         .status,
                     OVSTAGE_ERROR_INVALID_ARGUMENT);
        CHECK(strstr(ovstage_get_last_error().ptr, "on 2 devices") != NULL);
        log = log_since(before);
        CHECK(occurrences(log, "copy") == 0 && occurrences(log, "record") == 0);
        /* One device: the record goes to that device's default stream. */
        before = log_length();
        wait_ok(instance, ovstage_write_attributes_on_device(instance, query, writes, 1, 20, OVSTAGE_PRIM_MODE_UPSERT,
                                                             &unspecified));
        log = log_since(before);
        CHECK(occurrences(log, "copy 48") == 1 && occurrences(log, "record e400 on 0;") == 1);
        CHECK(strstr(log, "copy") < strstr(log, "record e400"));
    }

    /* A map session on the device: the group is a device copy of its
     * buffer, ready when the fetch returns; the commit waits for
     * write_done_sync, copies the values back, commits, records the event
     * once and frees the copy. */
    {
        ovstage_map_desc_t map;
        ovstage_map_handle_t handle = OVSTAGE_INVALID_MAP_HANDLE;
        ovstage_map_group_t group;
        ovstage_cuda_sync_t done = { 0x5400, 0x5500 };
        ovstage_enqueue_result_t r;
        float mapped[PRIMS * 3], back[16];
        size_t element_sizes[PRIMS] = { 1, 1, 1, 1 };
        memset(&map, 0, sizeof(map));
        map.attribute.string = literal_to_ovx_string("fixed");
        for (i = 0; i < PRIMS * 3; ++i) {
            mapped[i] = 100.0f + (float)i;
        }
        r = ovstage_map_attribute_on_device(instance, query, &map, 30, NULL, 0, &on_device, &handle);
        CHECK_STATUS(r.status, OVSTAGE_OK);
        before = log_length();
        CHECK_STATUS(ovstage_fetch_map_next(instance, handle, OVSTAGE_TIMEOUT_INFINITE, &group), OVSTAGE_OK);
        log = log_since(before);
        CHECK(group.data.tensor_count == 1 && group.data.tensors[0].device.device_type == kDLCUDA);
        CHECK(occurrences(log, "alloc") == 1 && occurrences(log, "upload 48 on 5200;") == 1);
        CHECK(occurrences(log, "sync 5200;") == 1 && strstr(log, "upload") < strstr(log, "sync 5200"));
        /* The client's kernel writes the device copy (host memory here). */
        memcpy(group.data.tensors[0].data, mapped, sizeof(mapped));
        before = log_length();
        r = ovstage_unmap_group(instance, handle, &group, done);
        CHECK_STATUS(r.status, OVSTAGE_OK);
        log = log_since(before);
        CHECK(strstr(log, "sync 5400;") != NULL && strstr(log, "event sync 5500;") != NULL);
        CHECK(strstr(log, "event sync 5500;") < strstr(log, "download 48;"));
        CHECK(strstr(log, "download 48;") < strstr(log, "record e200 on 5200;"));
        CHECK(occurrences(log, "record e200 on 5200;") == 1 && occurrences(log, "free;") == 1);
        wait_ok(instance, r);
        /* The session's end commits nothing more and records once more. */
        before = log_length();
        wait_ok(instance, ovstage_unmap_attribute(instance, handle, (ovstage_cuda_sync_t){ 0, 0 }));
        CHECK(occurrences(log_since(before), "record e200 on 5200;") == 1);
        seal.ordinal = 30;
        wait_ok(instance, ovstage_advance_write_floor(instance, &seal));
        CHECK(read_placed("fixed", NULL, kDLCPU, back, 16) == 12);
        CHECK(memcmp(back, mapped, sizeof(mapped)) == 0);
        /* A new version is a new copy: the placed read uploads again, and
         * without an event drains its stream. */
        before = log_length();
        same_on_device("fixed", &drained);
        log = log_since(before);
        CHECK(occurrences(log, "alloc") == 1 && occurrences(log, "upload 48 on 5200;") == 1);
        CHECK(occurrences(log, "sync 5200;") == 1 && strstr(log, "upload") < strstr(log, "sync 5200"));
        /* A commit whose record is refused reports OP_FAILED after it ran:
         * its values are committed and the session stays open. */
        {
            ovstage_placement_t refused_map = { { kDLCUDA, 0 }, 0x5200, 0xBAD };
            float again[PRIMS * 3], got[16];
            ovstage_map_group_t second;
            for (i = 0; i < PRIMS * 3; ++i) {
                again[i] = 200.0f + (float)i;
            }
            r = ovstage_map_attribute_on_device(instance, query, &map, 32, NULL, 0, &refused_map, &handle);
            CHECK_STATUS(r.status, OVSTAGE_OK);
            CHECK_STATUS(ovstage_fetch_map_next(instance, handle, OVSTAGE_TIMEOUT_INFINITE, &second), OVSTAGE_OK);
            memcpy(second.data.tensors[0].data, again, sizeof(again));
            CHECK_STATUS(ovstage_unmap_group(instance, handle, &second, (ovstage_cuda_sync_t){ 0, 0 }).status,
                         OVSTAGE_ERROR_OP_FAILED);
            CHECK(strstr(ovstage_get_last_error().ptr, "recording its availability_event 0xbad") != NULL);
            /* Still open: ending it is accepted (and its record refused too). */
            CHECK_STATUS(ovstage_unmap_attribute(instance, handle, (ovstage_cuda_sync_t){ 0, 0 }).status,
                         OVSTAGE_ERROR_OP_FAILED);
            seal.ordinal = 32;
            wait_ok(instance, ovstage_advance_write_floor(instance, &seal));
            CHECK(read_placed("fixed", NULL, kDLCPU, got, 16) == 12);
            CHECK(memcmp(got, again, sizeof(again)) == 0);
        }
        /* Arrays are not mapped on a device. */
        map.attribute.string = literal_to_ovx_string("arrays");
        CHECK_STATUS(ovstage_map_attribute_on_device(instance, query, &map, 33, element_sizes, PRIMS, &on_device,
                                                     &handle)
                         .status,
                     OVSTAGE_ERROR_NOT_SUPPORTED);
        CHECK(handle == OVSTAGE_INVALID_MAP_HANDLE);
        CHECK(strstr(ovstage_get_last_error().ptr, "array attributes cannot be mapped on a CUDA device") != NULL);
    }

    /* A steady GPU producer and GPU consumer, three ticks: the producer
     * writes a CUDA tensor after the work on its stream, the floor
     * advances, the consumer reads on the device with an event. Host
     * synchronisations per tick: one, when the producer's write runs (it
     * waits for the event that completes its staging copy, queued at
     * enqueue, which synchronises nothing); the consumer's read has none
     * (its copies and record are queued on its stream). */
    {
        ovstage_write_data_t produced = data;
        ovstage_placement_t consumer = { { kDLCUDA, 0 }, 0x5600, 0xE600 };
        DLTensor on_gpu = float_tensor(rows, 2, shape, NULL);
        ovstage_ordinal_t tick;
        on_gpu.device.device_type = kDLCUDA;
        produced.tensors = &on_gpu;
        produced.cuda_sync.stream = 0x5700;
        for (tick = 1; tick <= 3; ++tick) {
            float seen[16];
            rows[0] = (float)(100 + tick);
            ovstage_enqueue_result_t w;
            before = log_length();
            w = write_placed("steady", 40 + tick, produced, NULL);
            log = log_since(before);
            /* The enqueue's device work ends with the event that completes
             * its copy; a lane may run the op (and wait on the host) right
             * after, and other lanes switch contexts meanwhile (the fake's
             * current context is the process's), so only the order of the
             * copy's record and the first synchronisation is checked. */
            CHECK(w.status == OVSTAGE_OK && strstr(log, "record e100 on 5100;") != NULL);
            CHECK(strstr(log, "sync") == NULL || strstr(log, "sync") > strstr(log, "record e100 on 5100;"));
            wait_ok(instance, w);
            log = log_since(before);
            CHECK(occurrences(log, "sync ") == 1 && occurrences(log, "event sync e100;") == 1);
            seal.ordinal = 40 + tick;
            wait_ok(instance, ovstage_advance_write_floor(instance, &seal));
            before = log_length();
            CHECK(read_placed("steady", &consumer, kDLCUDA, seen, 16) == 12 && seen[0] == (float)(100 + tick));
            log = log_since(before);
            CHECK(occurrences(log, "sync") == 0 && occurrences(log, "download") == 0);
            CHECK(occurrences(log, "upload 48 on 5600;") == 1 && occurrences(log, "record e600 on 5600;") == 1);
        }
        rows[0] = 1;
    }

    /* A placed write from a CUDA tensor records its event after the copy
     * that reads the tensor, on the device: the placement's stream waits for
     * a fence recorded on our staging stream after the copy. */
    {
        ovstage_write_data_t produced = data;
        ovstage_placement_t after = { { kDLCUDA, 0 }, 0x5300, 0xE300 };
        DLTensor on_gpu = float_tensor(rows, 2, shape, NULL);
        const char *copy, *fence, *record;
        on_gpu.device.device_type = kDLCUDA;
        produced.tensors = &on_gpu;
        before = log_length();
        wait_ok(instance, write_placed("fenced", 44, produced, &after));
        log = log_since(before);
        copy = strstr(log, "copy 48 on 5100;");
        fence = strstr(log, "wait 5300 e100;");
        record = strstr(log, "record e300 on 5300;");
        CHECK(copy != NULL && fence != NULL && record != NULL && copy < fence && fence < record);
        CHECK(occurrences(log, "record e300 on 5300;") == 1 && occurrences(log, "sync 5") == 0);
    }

    /* The GPU hierarchy models run where the process has a CUDA device (the
     * fake driver's here): accepted, and the op succeeds. */
    wait_ok(instance, ovstage_compute_hierarchy(instance, OVSTAGE_HIERARCHY_COMPUTATION_MODEL_GPU_INCREMENTAL, 43, 50));
    wait_ok(instance, ovstage_compute_hierarchy(instance, OVSTAGE_HIERARCHY_COMPUTATION_MODEL_DEFAULT_GPU, 43, 51));

    wait_ok(instance, ovstage_release_query(instance, query));
    CHECK(path_dictionary_release_path_list_reference(dictionary, list).status == OVX_API_SUCCESS);
    CHECK_STATUS(ovstage_destroy_instance(instance), OVSTAGE_OK);
    printf("cuda_placement.c: %d checks passed\n", checks);
    return 0;
}
