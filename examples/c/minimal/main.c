/* minimal: the smallest complete ovstage program.
 *
 * Interns an attribute name, makes a query over three prims, writes a
 * float3 per prim at ordinal 1, seals ordinal 1, reads the values back,
 * clones one prim's subtree, and tears everything down. */

#include <stdio.h>
#include <string.h>

#include <ovstage/ovstage.h>

#include "../common/example_util.h"

static const ovx_string_t robot_paths[] = {
    literal_to_ovx_string("/World/Robot0"),
    literal_to_ovx_string("/World/Robot1"),
    literal_to_ovx_string("/World/Robot2"),
};

/* Reads `position` of every prim of `query` (latest sealed values) and
 * prints it, naming each prim with `names[position in the query]`. */
static void print_positions(ovstage_instance_t* stage, ovstage_query_handle_t query, ovx_token_t position,
                            const ovx_string_t* names)
{
    // [snippet:minimal-write-read]
    /* Reads are enqueued too: the read handle is usable at once and the
     * groups are fetched when the read has run. A snapshot with end
     * UINT64_MAX asks for the latest sealed values. */
    ovstage_ordinal_range_t latest = { 0, UINT64_MAX, false };
    ovstage_read_handle_t read = OVSTAGE_INVALID_READ_HANDLE;
    ovstage_op_id_t read_op = example_enqueued(
        "read_attributes", ovstage_read_attributes(stage, query, &position, 1, latest, &read));

    ovstage_read_group_t group;
    ovstage_api_status_t status;
    while ((status = ovstage_fetch_read_next(stage, read, OVSTAGE_TIMEOUT_INFINITE, &group)) == OVSTAGE_OK)
    {
        /* One tensor of shape [rows, 3] (scalar lanes, components as the
         * last dimension); element i of the group is row i, or row
         * index_map[i] when the group has an index map. */
        const DLTensor* t = &group.data.tensors[0];
        const float* xyz = (const float*)((const char*)t->data + t->byte_offset);
        for (uint32_t i = 0; i < group.prims.count; ++i)
        {
            uint32_t prim = group.prims.index_map ? group.prims.index_map[i] : group.prims.offset + i;
            uint32_t row = group.data.index_map ? group.data.index_map[i] : i;
            printf("  %s position = (%.1f, %.1f, %.1f)\n", names[prim].ptr, xyz[3 * row], xyz[3 * row + 1],
                   xyz[3 * row + 2]);
        }
        /* The group pins its storage until released; later writes never
         * change what it shows. */
        example_check("release_group", ovstage_release_group(stage, &group));
    }
    if (status != OVSTAGE_ERROR_END_OF_ITERATION)
        example_check("fetch_read_next", status);
    example_wait(stage, "read_attributes", read_op);
    example_wait(stage, "release_read", example_enqueued("release_read", ovstage_release_read(stage, read)));
    // [/snippet:minimal-write-read]
}

int main(void)
{
    ovstage_instance_desc_t desc = { "minimal" };
    ovstage_instance_t* stage = NULL;
    if (ovstage_create_instance(&desc, &stage) != OVSTAGE_OK)
    {
        fprintf(stderr, "ovstage_create_instance failed: %s\n", example_last_error());
        return 1;
    }
    path_dictionary_instance_t* dict = ovstage_get_path_dictionary(stage);

    /* Attribute names are interned once and passed around as tokens. */
    ovx_string_t name = literal_to_ovx_string("position");
    ovx_token_t position = OVX_INVALID_TOKEN;
    example_check_dict(dict, "create_tokens_from_strings", path_dictionary_create_tokens_from_strings(dict, &name, 1, &position));

    ovstage_query_handle_t robots = example_query(stage, robot_paths, 3);
    printf("query over %d prims\n", 3);

    /* Three float3 rows: tuple width in dtype.lanes, one row per prim. */
    float xyz[9] = { 0.0f, 0.0f, 0.0f, 1.0f, 0.5f, 0.0f, 2.0f, 1.0f, 0.0f };
    int64_t shape[1];
    DLTensor tensor = example_f32_rows(xyz, shape, 3, 3);
    ovstage_write_data_t data;
    memset(&data, 0, sizeof data);
    data.tensors = &tensor;
    data.tensor_count = 1;
    data.semantic = OVSTAGE_SEMANTIC_POINT;
    ovx_string_or_token_t attribute = { position, { NULL, 0 } };

    // [snippet:enqueue-wait-error]
    /* Every data-plane call is an enqueue: it returns at once with a status
     * (was the op accepted?) and an op id. A rejected enqueue says why in
     * ovstage_get_last_error(). */
    ovstage_enqueue_result_t write = ovstage_write_attribute(stage, robots, attribute, 1, data, OVSTAGE_PRIM_MODE_UPSERT);
    if (write.status != OVSTAGE_OK)
    {
        fprintf(stderr, "write rejected (%d): %s\n", (int)write.status, example_last_error());
        return 1;
    }
    /* wait_op blocks until the op and what it depends on have run. An op
     * that failed while running reports OP_FAILED; each failed op's message
     * comes from get_last_op_error. */
    ovstage_op_wait_result_t waited;
    ovstage_api_status_t status = ovstage_wait_op(stage, write.op_index, OVSTAGE_TIMEOUT_INFINITE, &waited);
    if (status == OVSTAGE_ERROR_OP_FAILED)
    {
        for (size_t i = 0; i < waited.error_op_id_count; ++i)
        {
            ovx_string_t why = ovstage_get_last_op_error(stage, waited.error_op_ids[i]);
            fprintf(stderr, "op %llu failed: %s\n", (unsigned long long)waited.error_op_ids[i], why.ptr);
        }
        return 1;
    }
    example_check("wait_op", status);
    example_check("release_op", ovstage_release_op(stage, write.op_index));
    // [/snippet:enqueue-wait-error]
    printf("wrote position at ordinal 1\n");

    /* Nothing is readable until the write floor passes its ordinal. */
    example_seal(stage, 1);
    printf("sealed ordinal 1; latest values:\n");
    print_positions(stage, robots, position, robot_paths);

    /* Clone Robot0's subtree to a new prim at ordinal 2; the clone's report
     * says how many prims it copied. */
    ovx_string_t target = literal_to_ovx_string("/World/Robot3");
    ovstage_op_id_t clone_op = example_enqueued(
        "ovstage_clone", ovstage_clone(stage, robot_paths[0], &target, 1, 2));
    ovstage_clone_result_t report;
    example_check("ovstage_fetch_clone_result", ovstage_fetch_clone_result(stage, clone_op, OVSTAGE_TIMEOUT_INFINITE, &report));
    printf("cloned %s to %s at ordinal %llu: %zu prim(s) created\n", robot_paths[0].ptr, target.ptr,
           (unsigned long long)report.ordinal, report.prims_cloned);
    example_check("release_op", ovstage_release_op(stage, clone_op));
    example_seal(stage, 2);

    ovstage_query_handle_t clone_query = example_query(stage, &target, 1);
    printf("sealed ordinal 2; the clone:\n");
    print_positions(stage, clone_query, position, &target);

    /* Teardown: release handles, then the instance (which owns the path
     * dictionary and everything interned in it). */
    example_wait(stage, "release_query", example_enqueued("release_query", ovstage_release_query(stage, clone_query)));
    example_wait(stage, "release_query", example_enqueued("release_query", ovstage_release_query(stage, robots)));
    example_check("ovstage_destroy_instance", ovstage_destroy_instance(stage));
    printf("done\n");
    return 0;
}
