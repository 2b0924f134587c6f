/*
 * Run by `cargo xtask test` (xtask/src/ctests.rs), linked against
 * target/debug/libovstage.so: the inline helpers of the headers, and a
 * write / seal / read round trip through the C API, and the CUDA driver
 * opened only when CUDA memory arrives (against xtask/ctests/fake_cuda.c).
 *
 * SPDX-License-Identifier: Apache-2.0
 */
#include <ovstage/ovstage.h>
#include <ovstage/ovstage_api/experimental/ovstage_placement_extension.h>
#include <ovstage/ovstage_api/ovstage_tensor_utils.h>
#include <ovstage/ovstage_population_export.h>
#include <ovx/path_dictionary/path_dictionary.h>
#include <ovx/path_dictionary/path_dictionary_helper.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static void strings(void)
{
    ovx_string_t empty = { NULL, 0 };
    ovx_string_t bad = { NULL, 3 };
    ovx_string_t abc = literal_to_ovx_string("abc");
    ovx_string_t nul = { "a\0b", 3 };

    CHECK(abc.length == 3 && memcmp(abc.ptr, "abc", 3) == 0);
    CHECK(is_ovx_string_empty(NULL));
    CHECK(is_ovx_string_empty(&empty));
    CHECK(is_ovx_string_empty(&bad));
    CHECK(!is_ovx_string_empty(&abc));
    CHECK(!ovx_string_contains_embedded_nul(NULL));
    CHECK(!ovx_string_contains_embedded_nul(&bad));
    CHECK(!ovx_string_contains_embedded_nul(&abc));
    CHECK(ovx_string_contains_embedded_nul(&nul));
    CHECK(!ovx_string_has_null_data(NULL));
    CHECK(!ovx_string_has_null_data(&empty));
    CHECK(ovx_string_has_null_data(&bad));
    CHECK(!ovx_string_has_null_data(&abc));
}

static void tensor_to_write(void)
{
    float data[24] = { 0 };
    int64_t layout[2] = { -1, -1 };
    DLTensor out;
    DLTensor untouched;

    /* [4, 3] compact, no strides: four rows of three lanes. */
    {
        int64_t shape[2] = { 4, 3 };
        DLTensor in = float_tensor(data, 2, shape, NULL);
        CHECK_STATUS(ovstage_tensor_to_write(&in, &out, layout), OVSTAGE_OK);
        CHECK(out.ndim == 1 && out.dtype.lanes == 3 && out.dtype.bits == 32 && out.dtype.code == kDLFloat);
        CHECK(out.shape == &layout[0] && out.strides == &layout[1]);
        CHECK(layout[0] == 4 && layout[1] == 1 && out.data == data);
    }
    /* [2, 4, 4] with a padded row stride of 32 elements: 16 lanes, stride 2. */
    {
        int64_t shape[3] = { 2, 4, 4 };
        int64_t strides[3] = { 32, 4, 1 };
        DLTensor in = float_tensor(data, 3, shape, strides);
        in.byte_offset = 8;
        CHECK_STATUS(ovstage_tensor_to_write(&in, &out, layout), OVSTAGE_OK);
        CHECK(out.dtype.lanes == 16 && layout[0] == 2 && layout[1] == 2 && out.byte_offset == 8);
    }
    /* [5]: one lane, explicit stride 3. */
    {
        int64_t shape[1] = { 5 };
        int64_t strides[1] = { 3 };
        DLTensor in = float_tensor(data, 1, shape, strides);
        CHECK_STATUS(ovstage_tensor_to_write(&in, &out, layout), OVSTAGE_OK);
        CHECK(out.dtype.lanes == 1 && layout[0] == 5 && layout[1] == 3);
    }
    /* [0, 3]: no rows is fine. */
    {
        int64_t shape[2] = { 0, 3 };
        DLTensor in = float_tensor(data, 2, shape, NULL);
        CHECK_STATUS(ovstage_tensor_to_write(&in, &out, layout), OVSTAGE_OK);
        CHECK(layout[0] == 0 && layout[1] == 1);
    }
    /* [1, 255] is the most components; [1, 16, 16] is one too many. */
    {
        int64_t shape[3] = { 1, 255, 0 };
        DLTensor in = float_tensor(data, 2, shape, NULL);
        CHECK_STATUS(ovstage_tensor_to_write(&in, &out, layout), OVSTAGE_OK);
        CHECK(out.dtype.lanes == 255);
        shape[1] = 16;
        shape[2] = 16;
        in.ndim = 3;
        CHECK_STATUS(ovstage_tensor_to_write(&in, &out, layout), OVSTAGE_ERROR_INVALID_ARGUMENT);
    }

    /* Every rejection leaves output and layout alone. */
    memset(&untouched, 0x5a, sizeof(untouched));
    {
        int64_t shape[3] = { 2, 3, 2 };
        int64_t strides[3] = { 6, 2, 1 };
        DLTensor in = float_tensor(data, 3, shape, strides);
        DLTensor probe;

        layout[0] = layout[1] = -7;
        out = untouched;
        CHECK_STATUS(ovstage_tensor_to_write(NULL, &out, layout), OVSTAGE_ERROR_INVALID_ARGUMENT);
        CHECK_STATUS(ovstage_tensor_to_write(&in, NULL, layout), OVSTAGE_ERROR_INVALID_ARGUMENT);
        CHECK_STATUS(ovstage_tensor_to_write(&in, &out, NULL), OVSTAGE_ERROR_INVALID_ARGUMENT);

        probe = in;
        probe.shape = NULL;
        CHECK_STATUS(ovstage_tensor_to_write(&probe, &out, layout), OVSTAGE_ERROR_INVALID_ARGUMENT);
        probe = in;
        probe.dtype.lanes = 2;
        CHECK_STATUS(ovstage_tensor_to_write(&probe, &out, layout), OVSTAGE_ERROR_INVALID_ARGUMENT);
        probe = in;
        probe.ndim = 0;
        CHECK_STATUS(ovstage_tensor_to_write(&probe, &out, layout), OVSTAGE_ERROR_INVALID_ARGUMENT);
        probe.ndim = 4;
        CHECK_STATUS(ovstage_tensor_to_write(&probe, &out, layout), OVSTAGE_ERROR_INVALID_ARGUMENT);

        shape[0] = -1;
        CHECK_STATUS(ovstage_tensor_to_write(&in, &out, layout), OVSTAGE_ERROR_INVALID_ARGUMENT);
        shape[0] = 2;
        shape[2] = 0;
        CHECK_STATUS(ovstage_tensor_to_write(&in, &out, layout), OVSTAGE_ERROR_INVALID_ARGUMENT);
        shape[2] = 2;
        strides[2] = 2; /* innermost axis not compact */
        CHECK_STATUS(ovstage_tensor_to_write(&in, &out, layout), OVSTAGE_ERROR_INVALID_ARGUMENT);
        strides[2] = 1;
        strides[1] = 3; /* middle axis not the running product */
        CHECK_STATUS(ovstage_tensor_to_write(&in, &out, layout), OVSTAGE_ERROR_INVALID_ARGUMENT);
        strides[1] = 2;
        strides[0] = 7; /* rows not a whole number of tuples */
        CHECK_STATUS(ovstage_tensor_to_write(&in, &out, layout), OVSTAGE_ERROR_INVALID_ARGUMENT);
        strides[0] = -6;
        CHECK_STATUS(ovstage_tensor_to_write(&in, &out, layout), OVSTAGE_ERROR_INVALID_ARGUMENT);

        CHECK(memcmp(&out, &untouched, sizeof(out)) == 0);
        CHECK(layout[0] == -7 && layout[1] == -7);

        strides[0] = 12; /* every other tuple */
        CHECK_STATUS(ovstage_tensor_to_write(&in, &out, layout), OVSTAGE_OK);
        CHECK(out.dtype.lanes == 6 && layout[0] == 2 && layout[1] == 2);
    }
}

static void builders(void)
{
    ovx_string_t root = literal_to_ovx_string("/World");
    ovstage_config_entry_t e;
    ovstage_population_prim_predicate_t p;
    ovstage_population_prim_predicate_t ps[2];
    ovstage_population_property_predicate_t q;

    e = ovstage_config_entry_runtime_lane_count(3);
    CHECK(e.key_type == OVSTAGE_CONFIG_KEY_TYPE_UINT64);
    CHECK(e.key.uint64_key == OVSTAGE_CONFIG_RUNTIME_LANE_COUNT && e.value.uint_value == 3);
    e = ovstage_config_entry_runtime_history_depth(9);
    CHECK(e.key.uint64_key == OVSTAGE_CONFIG_RUNTIME_HISTORY_DEPTH && e.value.uint_value == 9);
    e = ovstage_config_entry_runtime_default_ordinal_admission_policy(OVSTAGE_ORDINAL_ADMISSION_FLOOR_ONLY);
    CHECK(e.key.uint64_key == OVSTAGE_CONFIG_RUNTIME_DEFAULT_ORDINAL_ADMISSION_POLICY);
    CHECK(e.value.uint_value == OVSTAGE_ORDINAL_ADMISSION_FLOOR_ONLY);
    e = ovstage_config_entry_runtime_default_hierarchy_computation_model(
        OVSTAGE_HIERARCHY_COMPUTATION_MODEL_DEFAULT_CPU);
    CHECK(e.key.uint64_key == OVSTAGE_CONFIG_RUNTIME_DEFAULT_HIERARCHY_COMPUTATION_MODEL);
    CHECK(e.value.uint_value == OVSTAGE_HIERARCHY_COMPUTATION_MODEL_CPU_INCREMENTAL);
    e = ovstage_config_entry_binary_package_root_path(root);
    CHECK(e.key_type == OVSTAGE_CONFIG_KEY_TYPE_STRING);
    CHECK(e.key.string_key == OVSTAGE_CONFIG_BINARY_PACKAGE_ROOT_PATH);
    CHECK(e.value.string_value.ptr == root.ptr && e.value.string_value.length == 6);

    p = ovstage_population_prim_predicate_all();
    CHECK(p.kind == OVSTAGE_POPULATION_PRIM_PREDICATE_ALL && p.values.strings == NULL && p.value_count == 0);
    p = ovstage_population_prim_predicate_is_under_path(&root, 1);
    CHECK(p.kind == OVSTAGE_POPULATION_PRIM_PREDICATE_IS_UNDER_PATH && p.values.strings == &root);
    ps[0] = p;
    ps[1] = ovstage_population_prim_predicate_has_metadata(&root, 1);
    CHECK(ps[1].kind == OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_METADATA && ps[1].value_count == 1);
    p = ovstage_population_prim_predicate_or(ps, 2);
    CHECK(p.kind == OVSTAGE_POPULATION_PRIM_PREDICATE_OR && p.values.subpredicates == ps && p.value_count == 2);
    p = ovstage_population_prim_predicate_has_ancestor(&ps[1]);
    CHECK(p.kind == OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_ANCESTOR && p.values.subpredicates == &ps[1]);
    CHECK(p.value_count == 1);
    q = ovstage_population_property_predicate_is_authored();
    CHECK(q.kind == OVSTAGE_POPULATION_PROPERTY_PREDICATE_IS_AUTHORED && q.value_count == 0);
    p = ovstage_population_prim_predicate_has_property(&q);
    CHECK(p.kind == OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_PROPERTY && p.values.property_predicate == &q);
    q = ovstage_population_property_predicate_in_namespace(&root, 1);
    CHECK(q.kind == OVSTAGE_POPULATION_PROPERTY_PREDICATE_IN_NAMESPACE && q.values.strings == &root);
    q = ovstage_population_property_predicate_not(&q);
    CHECK(q.kind == OVSTAGE_POPULATION_PROPERTY_PREDICATE_NOT && q.value_count == 1);

    CHECK(ovstage_population_is_default_time(OVSTAGE_POPULATION_DEFAULT_TIME));
    CHECK(!ovstage_population_is_default_time(0.0));
}

/* A stand-in instance whose query_extension hands out a chosen table. */
static const void* fake_table;
static int fake_calls;

static ovstage_api_status_t fake_query_extension(ovstage_context_t* instance,
                                                 const char* name,
                                                 const void** out_extension)
{
    (void)instance;
    if (strcmp(name, OVSTAGE_PLACEMENT_EXTENSION_NAME) != 0 || fake_table == NULL) {
        *out_extension = NULL;
        return OVSTAGE_ERROR_NOT_FOUND;
    }
    *out_extension = fake_table;
    return OVSTAGE_OK;
}

static ovstage_enqueue_result_t fake_read(ovstage_context_t* instance,
                                          ovstage_query_handle_t handle,
                                          const ovx_token_t* attrs,
                                          size_t attr_count,
                                          ovstage_ordinal_range_t range,
                                          const ovstage_placement_t* placement,
                                          ovstage_read_handle_t* out_read_handle)
{
    ovstage_enqueue_result_t r;
    (void)attrs;
    (void)range;
    ++fake_calls;
    CHECK(instance == (ovstage_context_t*)&fake_calls && handle == 42 && attr_count == 0 && placement != NULL);
    *out_read_handle = 77;
    r.status = OVSTAGE_OK;
    r.op_index = 5;
    return r;
}

static void placement(ovstage_instance_t* real)
{
    ovstage_vtable_t vtable;
    ovstage_instance_t fake;
    ovstage_placement_extension_v1_t table;
    const ovstage_placement_extension_v1_t* found = &table;
    ovstage_placement_t where = OVSTAGE_PLACEMENT_INIT;
    ovstage_ordinal_range_t latest = { 0, UINT64_MAX, false };
    ovstage_read_handle_t read = 1;
    ovstage_map_handle_t map = 1;
    ovstage_enqueue_result_t r;

    /* This library's placement table: found, and its slots check their
     * arguments as the unplaced ones do (a bad query handle, a NULL desc). */
    CHECK_STATUS(ovstage_query_placement_extension(real, &found), OVSTAGE_OK);
    CHECK(found != NULL && found->header.version == OVSTAGE_PLACEMENT_EXTENSION_VERSION);
    CHECK_STATUS(ovstage_query_placement_extension(real, NULL), OVSTAGE_ERROR_INVALID_ARGUMENT);
    r = ovstage_read_attributes_on_device(real, 1, NULL, 0, latest, &where, &read);
    CHECK(r.status == OVSTAGE_ERROR_INVALID_HANDLE && r.op_index == OVSTAGE_INVALID_OP_ID);
    CHECK(read == OVSTAGE_INVALID_READ_HANDLE);
    r = ovstage_map_attribute_on_device(real, 1, NULL, 1, NULL, 0, &where, &map);
    CHECK(r.status == OVSTAGE_ERROR_INVALID_ARGUMENT && map == OVSTAGE_INVALID_MAP_HANDLE);

    /* A stand-in instance with one. */
    memset(&vtable, 0, sizeof(vtable));
    vtable.query_extension = fake_query_extension;
    fake.vtable = &vtable;
    fake.context = (ovstage_context_t*)&fake_calls;
    memset(&table, 0, sizeof(table));
    table.header.struct_size = sizeof(table);
    table.header.version = OVSTAGE_PLACEMENT_EXTENSION_VERSION;
    table.read_attributes_on_device = fake_read;
    fake_table = &table;
    CHECK_STATUS(ovstage_query_placement_extension(&fake, &found), OVSTAGE_OK);
    CHECK(found == &table);
    r = ovstage_read_attributes_on_device(&fake, 42, NULL, 0, latest, &where, &read);
    CHECK(r.status == OVSTAGE_OK && r.op_index == 5 && read == 77 && fake_calls == 1);

    table.header.version = OVSTAGE_PLACEMENT_EXTENSION_VERSION + 1;
    CHECK_STATUS(ovstage_query_placement_extension(&fake, &found), OVSTAGE_ERROR_NOT_FOUND);
    CHECK(found == NULL);
    table.header.version = OVSTAGE_PLACEMENT_EXTENSION_VERSION;
    table.header.struct_size = sizeof(table) - 1;
    CHECK_STATUS(ovstage_query_placement_extension(&fake, &found), OVSTAGE_ERROR_NOT_FOUND);
    fake_table = NULL;
    CHECK_STATUS(ovstage_query_placement_extension(&fake, &found), OVSTAGE_ERROR_NOT_FOUND);
}

/* Write two float3 rows, seal, read them back, write the read tensor back. */
static void round_trip(ovstage_instance_t* instance)
{
    path_dictionary_instance_t* dictionary = ovstage_get_path_dictionary(instance);
    ovx_string_t paths[2] = { literal_to_ovx_string("/World/A"), literal_to_ovx_string("/World/B") };
    ovx_string_t name = literal_to_ovx_string("pos");
    ovx_string_or_token_t attribute = { OVX_INVALID_TOKEN, literal_to_ovx_string("pos") };
    ovx_primpath_list_t list = OVX_INVALID_PRIMPATH_LIST;
    ovx_token_t token = OVX_INVALID_TOKEN;
    ovx_api_result_t result;
    ovstage_query_handle_t query = OVSTAGE_INVALID_QUERY_HANDLE;
    ovstage_read_handle_t read = OVSTAGE_INVALID_READ_HANDLE;
    ovstage_write_floor_desc_t seal = { 1, OVSTAGE_SCOPE_ALL, NULL, 0 };
    ovstage_ordinal_range_t latest = { 0, UINT64_MAX, false };
    ovstage_write_data_t data;
    ovstage_read_group_t group;
    float rows[6] = { 1, 2, 3, 4, 5, 6 };
    int64_t shape[2] = { 2, 3 };
    int64_t layout[2];
    DLTensor tensor = float_tensor(rows, 2, shape, NULL);
    DLTensor as_write;
    const float* got;
    int i;

    CHECK(dictionary != NULL);
    CHECK(ovstage_get_path_dictionary(NULL) == NULL);
    result = path_dictionary_create_path_list_from_strings(dictionary, paths, 2, &list);
    CHECK(result.status == OVX_API_SUCCESS && list != OVX_INVALID_PRIMPATH_LIST);
    result = path_dictionary_create_tokens_from_strings(dictionary, &name, 1, &token);
    CHECK(result.status == OVX_API_SUCCESS && token != OVX_INVALID_TOKEN);
    CHECK_STATUS(ovstage_query_from_path_list(instance, list, &query), OVSTAGE_OK);

    memset(&data, 0, sizeof(data));
    data.tensors = &tensor;
    data.tensor_count = 1;
    data.semantic = OVSTAGE_SEMANTIC_POINT;
    data.attribute_mode = OVSTAGE_ATTRIBUTE_MODE_REJECT;
    wait_ok(instance, ovstage_write_attribute(instance, query, attribute, 1, data, OVSTAGE_PRIM_MODE_UPSERT));
    wait_ok(instance, ovstage_advance_write_floor(instance, &seal));

    wait_ok(instance, ovstage_read_attributes(instance, query, &token, 1, latest, &read));
    CHECK_STATUS(ovstage_fetch_read_next(instance, read, OVSTAGE_TIMEOUT_INFINITE, &group), OVSTAGE_OK);
    CHECK(group.attribute == token && !group.is_delete && !group.is_array);
    CHECK(group.semantic == OVSTAGE_SEMANTIC_POINT && group.prims.count == 2);
    CHECK(group.data.tensor_count == 1 && group.data.tensors[0].ndim == 2);
    CHECK(group.data.tensors[0].shape[0] == 2 && group.data.tensors[0].shape[1] == 3);
    got = (const float*)((const char*)group.data.tensors[0].data + group.data.tensors[0].byte_offset);
    for (i = 0; i < 6; ++i) {
        CHECK(got[i] == rows[i]);
    }

    /* The read tensor, in write form, written back at ordinal 2. */
    CHECK_STATUS(ovstage_tensor_to_write(&group.data.tensors[0], &as_write, layout), OVSTAGE_OK);
    CHECK(as_write.dtype.lanes == 3 && layout[0] == 2 && layout[1] == 1);
    data.tensors = &as_write;
    wait_ok(instance, ovstage_write_attribute(instance, query, attribute, 2, data, OVSTAGE_PRIM_MODE_UPSERT));
    CHECK_STATUS(ovstage_release_group(instance, &group), OVSTAGE_OK);
    CHECK_STATUS(ovstage_fetch_read_next(instance, read, OVSTAGE_TIMEOUT_INFINITE, &group),
                 OVSTAGE_ERROR_END_OF_ITERATION);
    wait_ok(instance, ovstage_release_read(instance, read));
    wait_ok(instance, ovstage_release_query(instance, query));
    result = path_dictionary_release_path_list_reference(dictionary, list);
    CHECK(result.status == OVX_API_SUCCESS);
}

/* The CUDA driver is opened only when CUDA memory arrives. Run with
 * OVSTAGE_LIBCUDA naming xtask/ctests/fake_cuda.c, which sets
 * OVSTAGE_FAKE_CUDA_OPENED when it is opened and sees no device: after the
 * CPU work above nothing has opened it; a write from a kDLCUDA tensor opens
 * it and is refused for naming a device that is not there. */
static void cuda_opened_lazily(ovstage_instance_t* instance)
{
    path_dictionary_instance_t* dictionary = ovstage_get_path_dictionary(instance);
    ovx_string_t path = literal_to_ovx_string("/World/A");
    ovx_string_or_token_t attribute = { OVX_INVALID_TOKEN, literal_to_ovx_string("gpu") };
    ovx_primpath_list_t list = OVX_INVALID_PRIMPATH_LIST;
    ovstage_query_handle_t query = OVSTAGE_INVALID_QUERY_HANDLE;
    ovstage_write_data_t data;
    ovstage_enqueue_result_t r;
    ovx_string_t error;
    float row[3] = { 1, 2, 3 };
    int64_t shape[2] = { 1, 3 };
    DLTensor tensor = float_tensor(row, 2, shape, NULL);

    CHECK(getenv("OVSTAGE_LIBCUDA") != NULL);
    CHECK(getenv("OVSTAGE_FAKE_CUDA_OPENED") == NULL);
    CHECK(path_dictionary_create_path_list_from_strings(dictionary, &path, 1, &list).status == OVX_API_SUCCESS);
    CHECK_STATUS(ovstage_query_from_path_list(instance, list, &query), OVSTAGE_OK);
    tensor.device.device_type = kDLCUDA;
    memset(&data, 0, sizeof(data));
    data.tensors = &tensor;
    data.tensor_count = 1;
    r = ovstage_write_attribute(instance, query, attribute, 1, data, OVSTAGE_PRIM_MODE_UPSERT);
    CHECK_STATUS(r.status, OVSTAGE_ERROR_INVALID_ARGUMENT);
    CHECK(getenv("OVSTAGE_FAKE_CUDA_OPENED") != NULL);
    error = ovstage_get_last_error();
    CHECK(error.ptr != NULL && strstr(error.ptr, "CUDA device 0 does not exist (the driver sees 0 devices)") != NULL);
    wait_ok(instance, ovstage_release_query(instance, query));
    CHECK(path_dictionary_release_path_list_reference(dictionary, list).status == OVX_API_SUCCESS);
}

int main(void)
{
    ovstage_instance_desc_t desc = { "header-tests" };
    ovstage_instance_t* instance = NULL;
    ovstage_population_export_desc_t export_desc;
    ovx_string_t root = literal_to_ovx_string("/World");
    uint32_t major = 99, minor = 99, patch = 99;

    strings();
    tensor_to_write();
    builders();

    CHECK_STATUS(ovstage_create_instance(&desc, &instance), OVSTAGE_OK);
    CHECK(instance != NULL && instance->vtable != NULL);
    ovstage_get_version(instance, &major, &minor, &patch);
    CHECK(major == OVSTAGE_VERSION_MAJOR && minor == OVSTAGE_VERSION_MINOR && patch == OVSTAGE_VERSION_PATCH);
    CHECK(strlen(ovstage_get_error_string(instance, OVSTAGE_ERROR_TIMEOUT)) > 0);
    placement(instance);
    round_trip(instance);
    cuda_opened_lazily(instance);
    /* Population export is not supported: the helper passes the status on. */
    memset(&export_desc, 0, sizeof(export_desc));
    CHECK_STATUS(ovstage_population_export_desc_init_typed_hierarchy(&export_desc, 1, &root),
                 OVSTAGE_ERROR_NOT_SUPPORTED);
    CHECK_STATUS(ovstage_destroy_instance(instance), OVSTAGE_OK);

    printf("runtime.c: %d checks passed\n", checks);
    return 0;
}
