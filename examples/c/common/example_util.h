/* Small helpers shared by the C examples: report a failed call with the
 * library's message and stop, wait for an op, check a path dictionary
 * result. The reusable patterns themselves are spelled out in the examples
 * (see the snippet markers). */

#ifndef OVSTAGE_EXAMPLE_UTIL_H
#define OVSTAGE_EXAMPLE_UTIL_H

#include <stdio.h>
#include <stdlib.h>

#include <ovstage/ovstage.h>
#include <ovx/path_dictionary/path_dictionary.h>

/* The thread's last error message as a printable C string. */
static inline const char* example_last_error(void)
{
    ovx_string_t e = ovstage_get_last_error();
    return e.ptr ? e.ptr : "(no message)";
}

/* Stops the program when a synchronous call failed. */
static inline void example_check(const char* what, ovstage_api_status_t status)
{
    if (status != OVSTAGE_OK)
    {
        fprintf(stderr, "%s failed with status %d: %s\n", what, (int)status, example_last_error());
        exit(1);
    }
}

/* Stops the program when an enqueue was rejected; returns the op id. */
static inline ovstage_op_id_t example_enqueued(const char* what, ovstage_enqueue_result_t r)
{
    example_check(what, r.status);
    return r.op_index;
}

/* Waits for an op; on failure prints every failed op's message and stops. */
static inline void example_wait(ovstage_instance_t* stage, const char* what, ovstage_op_id_t op)
{
    ovstage_op_wait_result_t wr;
    ovstage_api_status_t status = ovstage_wait_op(stage, op, OVSTAGE_TIMEOUT_INFINITE, &wr);
    if (status == OVSTAGE_ERROR_OP_FAILED)
    {
        for (size_t i = 0; i < wr.error_op_id_count; ++i)
        {
            ovx_string_t msg = ovstage_get_last_op_error(stage, wr.error_op_ids[i]);
            fprintf(stderr, "%s: op %llu failed: %s\n", what, (unsigned long long)wr.error_op_ids[i],
                    msg.ptr ? msg.ptr : "(no message)");
        }
        exit(1);
    }
    example_check(what, status);
    example_check("release_op", ovstage_release_op(stage, op));
}

/* Stops the program when a path dictionary call failed. */
static inline void example_check_dict(path_dictionary_instance_t* dict, const char* what, ovx_api_result_t r)
{
    if (r.status != OVX_API_SUCCESS)
    {
        fprintf(stderr, "%s failed: %s\n", what, r.error.ptr ? r.error.ptr : "(no message)");
        path_dictionary_release_error(dict, r.error);
        exit(1);
    }
}

/* Advances the global write floor to `ordinal` and waits for it. */
static inline void example_seal(ovstage_instance_t* stage, ovstage_ordinal_t ordinal)
{
    ovstage_write_floor_desc_t floor = { ordinal, OVSTAGE_SCOPE_ALL, NULL, 0 };
    example_wait(stage, "advance_write_floor", example_enqueued("advance_write_floor", ovstage_advance_write_floor(stage, &floor)));
}

/* A query over `count` prim paths (the list is released: the query keeps
 * its own reference). */
static inline ovstage_query_handle_t example_query(ovstage_instance_t* stage, const ovx_string_t* paths, size_t count)
{
    path_dictionary_instance_t* dict = ovstage_get_path_dictionary(stage);
    ovx_primpath_list_t list = OVX_INVALID_PRIMPATH_LIST;
    example_check_dict(dict, "create_path_list_from_strings", path_dictionary_create_path_list_from_strings(dict, paths, count, &list));
    ovstage_query_handle_t query = OVSTAGE_INVALID_QUERY_HANDLE;
    example_check("query_from_path_list", ovstage_query_from_path_list(stage, list, &query));
    example_check_dict(dict, "release_path_list_reference", path_dictionary_release_path_list_reference(dict, list));
    return query;
}

/* A host tensor of `rows` rows of `lanes` floats. */
static inline DLTensor example_f32_rows(float* values, int64_t* shape, int64_t rows, uint16_t lanes)
{
    DLTensor t;
    shape[0] = rows;
    t.data = values;
    t.device.device_type = kDLCPU;
    t.device.device_id = 0;
    t.ndim = 1;
    t.dtype.code = kDLFloat;
    t.dtype.bits = 32;
    t.dtype.lanes = lanes;
    t.shape = shape;
    t.strides = NULL;
    t.byte_offset = 0;
    return t;
}

#endif /* OVSTAGE_EXAMPLE_UTIL_H */
