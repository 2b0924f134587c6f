/* Loads an ovstage shared library by path the way a language binding
 * does (dlopen + dlsym, no link-time dependency), then drives an instance
 * only through the resolved entry points and the instance's function
 * tables: version, path dictionary, query, write, seal, read.
 *
 *   dlopen_binding <path to libovstage.so or libovstage-dynamic.so>
 *
 * Prints "ok" and exits 0 when everything behaved. */

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <ovstage/ovstage.h>
#include <ovx/path_dictionary/path_dictionary.h>

#define REQUIRE(cond, what)                                                                                            \
    do                                                                                                                 \
    {                                                                                                                  \
        if (!(cond))                                                                                                   \
        {                                                                                                              \
            fprintf(stderr, "dlopen_binding: %s (line %d)\n", what, __LINE__);                                       \
            return 1;                                                                                                  \
        }                                                                                                              \
    } while (0)

typedef ovstage_api_status_t (*create_fn)(const ovstage_instance_desc_t*, ovstage_instance_t**);
typedef ovstage_api_status_t (*destroy_fn)(ovstage_instance_t*);
typedef ovx_string_t (*last_error_fn)(void);
typedef const ovstage_build_info_t* (*build_info_fn)(void);
typedef ovstage_api_status_t (*initialize_fn)(const ovstage_config_t*);
typedef ovstage_api_status_t (*shutdown_fn)(void);

int main(int argc, char** argv)
{
    REQUIRE(argc == 2, "usage: dlopen_binding <library>");
    void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib)
    {
        fprintf(stderr, "dlopen_binding: %s\n", dlerror());
        return 1;
    }
    /* The exports a binding needs, resolved by name. */
    create_fn create = (create_fn)dlsym(lib, "ovstage_create_instance");
    destroy_fn destroy = (destroy_fn)dlsym(lib, "ovstage_destroy_instance");
    last_error_fn last_error = (last_error_fn)dlsym(lib, "ovstage_get_last_error");
    build_info_fn build_info = (build_info_fn)dlsym(lib, "ovstage_get_build_info");
    initialize_fn initialize = (initialize_fn)dlsym(lib, "ovstage_initialize");
    shutdown_fn shutdown = (shutdown_fn)dlsym(lib, "ovstage_shutdown");
    REQUIRE(create && destroy && last_error && build_info && initialize && shutdown, "a required export is missing");
    REQUIRE(dlsym(lib, "ovstage_get_config") && dlsym(lib, "ovstage_clone"), "an optional export is missing");

    const ovstage_build_info_t* info = build_info();
    REQUIRE(info && info->struct_size >= sizeof(ovstage_build_info_t), "build info");
    REQUIRE(strncmp(info->build_string.ptr, "0.3.0+", 6) == 0, "build string starts with the API version");

    REQUIRE(initialize(NULL) == OVSTAGE_OK, "initialize");
    ovstage_instance_t* inst = NULL;
    REQUIRE(create(NULL, NULL) == OVSTAGE_ERROR_INVALID_ARGUMENT, "NULL output is rejected");
    REQUIRE(last_error().length > 0, "the failure has a message");
    ovstage_instance_desc_t desc = { "dlopen-binding" };
    REQUIRE(create(&desc, &inst) == OVSTAGE_OK && inst, "create");

    const ovstage_vtable_t* vt = inst->vtable;
    ovstage_context_t* ctx = inst->context;
    uint32_t major = 9, minor = 9, patch = 9;
    vt->get_version(ctx, &major, &minor, &patch);
    REQUIRE(major == OVSTAGE_VERSION_MAJOR && minor == OVSTAGE_VERSION_MINOR && patch == OVSTAGE_VERSION_PATCH, "version");

    path_dictionary_instance_t* dict = vt->get_path_dictionary(ctx);
    REQUIRE(dict && dict->vtable && dict->context, "path dictionary");
    ovx_string_t paths[2] = { literal_to_ovx_string("/A"), literal_to_ovx_string("/B") };
    ovx_primpath_list_t list = OVX_INVALID_PRIMPATH_LIST;
    REQUIRE(dict->vtable->create_path_list_from_strings(dict->context, paths, 2, &list).status == OVX_API_SUCCESS, "path list");
    ovstage_query_handle_t query = OVSTAGE_INVALID_QUERY_HANDLE;
    REQUIRE(vt->query_from_path_list(ctx, list, &query) == OVSTAGE_OK, "query");

    float values[2] = { 1.5f, 2.5f };
    int64_t shape[1] = { 2 };
    DLTensor t;
    memset(&t, 0, sizeof t);
    t.data = values;
    t.device.device_type = kDLCPU;
    t.ndim = 1;
    t.dtype.code = kDLFloat;
    t.dtype.bits = 32;
    t.dtype.lanes = 1;
    t.shape = shape;
    ovstage_write_data_t data;
    memset(&data, 0, sizeof data);
    data.tensors = &t;
    data.tensor_count = 1;
    ovx_string_or_token_t attr = { OVX_INVALID_TOKEN, literal_to_ovx_string("value") };
    ovstage_enqueue_result_t w = vt->write_attribute(ctx, query, attr, 1, data, OVSTAGE_PRIM_MODE_UPSERT);
    REQUIRE(w.status == OVSTAGE_OK, "write enqueued");
    ovstage_write_floor_desc_t floor = { 1, OVSTAGE_SCOPE_ALL, NULL, 0 };
    ovstage_enqueue_result_t f = vt->advance_write_floor(ctx, &floor);
    ovstage_op_wait_result_t wr;
    REQUIRE(vt->wait_op(ctx, w.op_index, OVSTAGE_TIMEOUT_INFINITE, &wr) == OVSTAGE_OK, "write done");
    REQUIRE(vt->wait_op(ctx, f.op_index, OVSTAGE_TIMEOUT_INFINITE, &wr) == OVSTAGE_OK, "floor advanced");

    ovx_token_t token = OVX_INVALID_TOKEN;
    REQUIRE(dict->vtable->create_tokens_from_strings(dict->context, &attr.string, 1, &token).status == OVX_API_SUCCESS, "token");
    ovstage_ordinal_range_t latest = { 0, UINT64_MAX, false };
    ovstage_read_handle_t read = OVSTAGE_INVALID_READ_HANDLE;
    REQUIRE(vt->read_attributes(ctx, query, &token, 1, latest, &read).status == OVSTAGE_OK, "read enqueued");
    ovstage_read_group_t g;
    REQUIRE(vt->fetch_read_next(ctx, read, OVSTAGE_TIMEOUT_INFINITE, &g) == OVSTAGE_OK, "a group");
    const float* got = (const float*)g.data.tensors[0].data;
    REQUIRE(g.prims.count == 2 && got[0] == 1.5f && got[1] == 2.5f, "the written values");
    REQUIRE(vt->release_group(ctx, &g) == OVSTAGE_OK, "release group");
    REQUIRE(vt->fetch_read_next(ctx, read, 0, &g) == OVSTAGE_ERROR_END_OF_ITERATION, "end of iteration");
    REQUIRE(vt->release_read(ctx, read).status == OVSTAGE_OK, "release read");
    REQUIRE(vt->release_query(ctx, query).status == OVSTAGE_OK, "release query");
    REQUIRE(dict->vtable->release_path_list_reference(dict->context, list).status == OVX_API_SUCCESS, "release list");

    REQUIRE(destroy(inst) == OVSTAGE_OK, "destroy");
    REQUIRE(shutdown() == OVSTAGE_OK, "shutdown");
    REQUIRE(shutdown() == OVSTAGE_ERROR_INVALID_ARGUMENT, "unbalanced shutdown");
    dlclose(lib);
    printf("ok\n");
    return 0;
}
