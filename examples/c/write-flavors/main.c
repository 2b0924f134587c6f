/* write-flavors: the ways to get data into a stage.
 *
 * A batched write of two attributes (a 3-lane position and a mass) in one
 * op, a masked write from a library-managed tensor, a clone followed by a
 * re-query, four writes at ordinals 4..7 submitted without waiting and
 * drained by zero-timeout polls, versioned reads of the result, and a write
 * the library rejects at enqueue. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ovstage/ovstage.h>

#include "../common/example_util.h"

#define CRATES 4

static const ovx_string_t crate_paths[CRATES] = {
    literal_to_ovx_string("/Scene/Crate0"),
    literal_to_ovx_string("/Scene/Crate1"),
    literal_to_ovx_string("/Scene/Crate2"),
    literal_to_ovx_string("/Scene/Crate3"),
};

static ovx_token_t position_token;
static ovx_token_t mass_token;

/* Prints one attribute of every prim of `query` for `range`. */
static void print_attribute(ovstage_instance_t* stage, ovstage_query_handle_t query, ovx_token_t attribute,
                            const char* label, ovstage_ordinal_range_t range, const ovx_string_t* names)
{
    ovstage_read_handle_t read = OVSTAGE_INVALID_READ_HANDLE;
    ovstage_op_id_t op = example_enqueued("read_attributes", ovstage_read_attributes(stage, query, &attribute, 1, range, &read));
    ovstage_read_group_t group;
    ovstage_api_status_t status;
    while ((status = ovstage_fetch_read_next(stage, read, OVSTAGE_TIMEOUT_INFINITE, &group)) == OVSTAGE_OK)
    {
        const DLTensor* t = &group.data.tensors[0];
        int64_t width = t->ndim > 1 ? t->shape[1] : 1;
        const float* values = (const float*)((const char*)t->data + t->byte_offset);
        for (uint32_t i = 0; i < group.prims.count; ++i)
        {
            uint32_t prim = group.prims.index_map ? group.prims.index_map[i] : group.prims.offset + i;
            uint32_t row = group.data.index_map ? group.data.index_map[i] : i;
            printf("  %s %s =", names[prim].ptr, label);
            for (int64_t c = 0; c < width; ++c)
                printf(" %.1f", values[row * width + c]);
            printf("\n");
        }
        example_check("release_group", ovstage_release_group(stage, &group));
    }
    if (status != OVSTAGE_ERROR_END_OF_ITERATION)
        example_check("fetch_read_next", status);
    example_wait(stage, "read_attributes", op);
    example_wait(stage, "release_read", example_enqueued("release_read", ovstage_release_read(stage, read)));
}

static ovstage_write_data_t host_payload(const DLTensor* tensor)
{
    ovstage_write_data_t data;
    memset(&data, 0, sizeof data);
    data.tensors = tensor;
    data.tensor_count = 1;
    return data;
}

/* A library-managed tensor: the library calls the deleter once it no
 * longer reads the data. */
struct managed_mass
{
    DLManagedTensorVersioned tensor;
    float values[CRATES];
    int64_t shape[1];
};

static int managed_releases;

static void release_managed(DLManagedTensorVersioned* self)
{
    managed_releases += 1;
    free(self->manager_ctx);
}

int main(void)
{
    ovstage_instance_desc_t desc = { "write-flavors" };
    ovstage_instance_t* stage = NULL;
    if (ovstage_create_instance(&desc, &stage) != OVSTAGE_OK)
    {
        fprintf(stderr, "ovstage_create_instance failed: %s\n", example_last_error());
        return 1;
    }
    path_dictionary_instance_t* dict = ovstage_get_path_dictionary(stage);
    ovx_string_t names[2] = { literal_to_ovx_string("position"), literal_to_ovx_string("mass") };
    ovx_token_t tokens[2];
    example_check_dict(dict, "create_tokens_from_strings", path_dictionary_create_tokens_from_strings(dict, names, 2, tokens));
    position_token = tokens[0];
    mass_token = tokens[1];
    ovstage_query_handle_t crates = example_query(stage, crate_paths, CRATES);
    ovstage_ordinal_range_t latest = { 0, UINT64_MAX, false };

    /* 1. One op writing two attributes: a 3-lane float position and a
     *    1-lane float mass for every crate, at ordinal 1. */
    float xyz[CRATES * 3] = { 0, 0, 0, 1, 0, 0, 2, 0, 0, 3, 0, 0 };
    float mass[CRATES] = { 10, 20, 30, 40 };
    int64_t xyz_shape[1], mass_shape[1];
    DLTensor xyz_tensor = example_f32_rows(xyz, xyz_shape, CRATES, 3);
    DLTensor mass_tensor = example_f32_rows(mass, mass_shape, CRATES, 1);
    ovstage_attribute_write_t batch[2];
    batch[0].attribute.token = position_token;
    batch[0].attribute.string.ptr = NULL;
    batch[0].attribute.string.length = 0;
    batch[0].data = host_payload(&xyz_tensor);
    batch[0].data.semantic = OVSTAGE_SEMANTIC_POINT;
    batch[1].attribute.token = mass_token;
    batch[1].attribute.string = batch[0].attribute.string;
    batch[1].data = host_payload(&mass_tensor);
    example_wait(stage, "write_attributes",
                 example_enqueued("write_attributes", ovstage_write_attributes(stage, crates, batch, 2, 1, OVSTAGE_PRIM_MODE_UPSERT)));
    example_seal(stage, 1);
    printf("batched write at ordinal 1:\n");
    print_attribute(stage, crates, position_token, "position", latest, crate_paths);
    print_attribute(stage, crates, mass_token, "mass", latest, crate_paths);

    /* 2. A masked write from a managed tensor: only crates 1 and 3 take
     *    their row, at ordinal 2. */
    struct managed_mass* m = calloc(1, sizeof *m);
    if (!m)
        return 1;
    m->values[1] = 25;
    m->values[3] = 45;
    m->tensor.version.major = 1;
    m->tensor.version.minor = 3;
    m->tensor.manager_ctx = m;
    m->tensor.deleter = release_managed;
    m->tensor.dl_tensor = example_f32_rows(m->values, m->shape, CRATES, 1);
    const DLManagedTensorVersioned* managed[1] = { &m->tensor };
    uint64_t selected = (1u << 1) | (1u << 3);
    ovstage_write_data_t masked;
    memset(&masked, 0, sizeof masked);
    masked.managed_tensors = managed;
    masked.tensor_count = 1;
    masked.count = CRATES;
    masked.mask = &selected;
    ovx_string_or_token_t mass_attr = { mass_token, { NULL, 0 } };
    example_wait(stage, "write_attribute (masked)",
                 example_enqueued("write_attribute", ovstage_write_attribute(stage, crates, mass_attr, 2, masked, OVSTAGE_PRIM_MODE_UPSERT)));

    /* 3. Clone crate 0 to two new prims at ordinal 3, then query the copies. */
    ovx_string_t copies[2] = { literal_to_ovx_string("/Scene/Copy0"), literal_to_ovx_string("/Scene/Copy1") };
    ovstage_op_id_t clone = example_enqueued("ovstage_clone", ovstage_clone(stage, crate_paths[0], copies, 2, 3));
    ovstage_clone_result_t report;
    example_check("ovstage_fetch_clone_result", ovstage_fetch_clone_result(stage, clone, OVSTAGE_TIMEOUT_INFINITE, &report));
    example_check("release_op", ovstage_release_op(stage, clone));
    example_seal(stage, 3);
    printf("masked write at ordinal 2, clone to %zu target(s) at ordinal 3:\n", report.target_count);
    print_attribute(stage, crates, mass_token, "mass", latest, crate_paths);
    ovstage_query_handle_t copy_query = example_query(stage, copies, 2);
    print_attribute(stage, copy_query, position_token, "position", latest, copies);
    print_attribute(stage, copy_query, mass_token, "mass", latest, copies);

    // [snippet:pipelined-submission]
    /* 4. Run ahead: submit four ticks of positions without waiting. Each
     *    enqueue only records the op; the worker lanes run them (writes at
     *    different ordinals are independent and may run in parallel). The
     *    payload must stay valid until its op completes. */
    enum { TICKS = 4, FIRST_TICK = 4 };
    static float ticks[TICKS][CRATES * 3];
    int64_t tick_shape[TICKS][1];
    DLTensor tick_tensor[TICKS];
    ovstage_op_id_t pending[TICKS];
    ovx_string_or_token_t position_attr = { position_token, { NULL, 0 } };
    for (int t = 0; t < TICKS; ++t)
    {
        for (int c = 0; c < CRATES; ++c)
        {
            ticks[t][3 * c] = (float)c;
            ticks[t][3 * c + 1] = (float)(FIRST_TICK + t);
            ticks[t][3 * c + 2] = 0.0f;
        }
        tick_tensor[t] = example_f32_rows(ticks[t], tick_shape[t], CRATES, 3);
        ovstage_enqueue_result_t r = ovstage_write_attribute(stage, crates, position_attr, (ovstage_ordinal_t)(FIRST_TICK + t),
                                                             host_payload(&tick_tensor[t]), OVSTAGE_PRIM_MODE_UPSERT);
        pending[t] = example_enqueued("write_attribute", r);
    }
    // [/snippet:pipelined-submission]
    printf("submitted writes at ordinals %d..%d without waiting\n", FIRST_TICK, FIRST_TICK + TICKS - 1);

    // [snippet:poll-wait-release]
    /* Drain with zero-timeout polls: a poll never blocks; TIMEOUT means
     * "still pending" (lowest_pending_op_id says how far its chain got).
     * The caller does other work between polls. Release each op once it
     * is done; its id is then forgotten. */
    int remaining = TICKS;
    unsigned long long polls = 0;
    while (remaining > 0)
    {
        for (int t = 0; t < TICKS; ++t)
        {
            if (pending[t] == OVSTAGE_INVALID_OP_ID)
                continue;
            ovstage_op_wait_result_t wr;
            ovstage_api_status_t s = ovstage_wait_op(stage, pending[t], 0, &wr);
            polls += 1;
            if (s == OVSTAGE_ERROR_TIMEOUT)
                continue; /* not yet: do something else */
            example_check("wait_op", s);
            example_check("release_op", ovstage_release_op(stage, pending[t]));
            pending[t] = OVSTAGE_INVALID_OP_ID;
            remaining -= 1;
        }
    }
    // [/snippet:poll-wait-release]
    printf("all %d writes completed (%s)\n", TICKS, polls > 0 ? "drained by zero-timeout polls" : "nothing to poll");

    example_seal(stage, FIRST_TICK + TICKS - 1);
    printf("sealed ordinal %d; latest positions:\n", FIRST_TICK + TICKS - 1);
    print_attribute(stage, crates, position_token, "position", latest, crate_paths);
    ovstage_ordinal_range_t at5 = { 0, 5, false };
    printf("snapshot at ordinal 5 (kept as a version):\n");
    print_attribute(stage, crates, position_token, "position", at5, crate_paths);

    // [snippet:check-sync-error]
    /* Errors that can be proven at enqueue come back at once: the op is
     * not accepted (op id 0) and the thread's last error says why. Here the
     * ordinal is at or below the write floor, which is sealed. */
    ovstage_enqueue_result_t late = ovstage_write_attribute(stage, crates, position_attr, 2, host_payload(&xyz_tensor),
                                                            OVSTAGE_PRIM_MODE_UPSERT);
    if (late.status != OVSTAGE_OK)
    {
        ovx_string_t why = ovstage_get_last_error();
        printf("write at ordinal 2 rejected at enqueue: %s (op id %llu)\n  %.*s\n",
               ovstage_get_error_string(stage, late.status), (unsigned long long)late.op_index, (int)why.length, why.ptr);
    }
    // [/snippet:check-sync-error]

    example_wait(stage, "release_query", example_enqueued("release_query", ovstage_release_query(stage, copy_query)));
    example_wait(stage, "release_query", example_enqueued("release_query", ovstage_release_query(stage, crates)));
    example_check("ovstage_destroy_instance", ovstage_destroy_instance(stage));
    printf("managed tensor released %d time(s)\n", managed_releases);
    return 0;
}
