/** A placement on no particular device, with no stream and no event. */
#define OVSTAGE_PLACEMENT_INIT { { (DLDeviceType)0, 0 }, 0, 0 }

/** The name to give `query_extension` for the placement table. */
#define OVSTAGE_PLACEMENT_EXTENSION_NAME "ovstage.placement"

/**
 * Looks up the placement table of `instance` and stores it in
 * `*out_extension` (NULL until found). Returns INVALID_ARGUMENT for a NULL
 * argument, the status of `query_extension` when that fails, NOT_FOUND when
 * the instance has no table or one of another revision or too small a size,
 * and OK otherwise.
 */
static inline ovstage_api_status_t ovstage_query_placement_extension(
    ovstage_instance_t* instance,
    const ovstage_placement_extension_v1_t** out_extension)
{
    const void* table = NULL;
    const ovstage_placement_extension_v1_t* extension;
    ovstage_api_status_t status;

    if (out_extension == NULL || instance == NULL) {
        return OVSTAGE_ERROR_INVALID_ARGUMENT;
    }
    *out_extension = NULL;
    status = ovstage_query_extension(instance, OVSTAGE_PLACEMENT_EXTENSION_NAME, &table);
    if (status != OVSTAGE_OK) {
        return status;
    }
    extension = (const ovstage_placement_extension_v1_t*)table;
    if (extension == NULL || extension->header.version != OVSTAGE_PLACEMENT_EXTENSION_VERSION ||
        extension->header.struct_size < sizeof(ovstage_placement_extension_v1_t)) {
        return OVSTAGE_ERROR_NOT_FOUND;
    }
    *out_extension = extension;
    return OVSTAGE_OK;
}

/* The result of an enqueue that was not attempted. */
static inline ovstage_enqueue_result_t ovstage_placement_not_enqueued_(ovstage_api_status_t status)
{
    ovstage_enqueue_result_t result;
    result.status = status;
    result.op_index = OVSTAGE_INVALID_OP_ID;
    return result;
}

/**
 * `write_attribute_on_device` of the placement table; the lookup's failure
 * status (and no op) when the instance has no usable table.
 */
static inline ovstage_enqueue_result_t ovstage_write_attribute_on_device(
    ovstage_instance_t* instance,
    ovstage_query_handle_t handle,
    ovx_string_or_token_t attribute,
    ovstage_ordinal_t ordinal,
    ovstage_write_data_t data,
    ovstage_prim_mode_t prim_mode,
    const ovstage_placement_t* placement)
{
    const ovstage_placement_extension_v1_t* extension = NULL;
    ovstage_api_status_t status = ovstage_query_placement_extension(instance, &extension);
    if (status != OVSTAGE_OK) {
        return ovstage_placement_not_enqueued_(status);
    }
    return extension->write_attribute_on_device(
        instance->context, handle, attribute, ordinal, data, prim_mode, placement);
}

/**
 * `write_attributes_on_device` of the placement table; the lookup's
 * failure status (and no op) when the instance has no usable table.
 */
static inline ovstage_enqueue_result_t ovstage_write_attributes_on_device(
    ovstage_instance_t* instance,
    ovstage_query_handle_t handle,
    const ovstage_attribute_write_t* writes,
    size_t write_count,
    ovstage_ordinal_t ordinal,
    ovstage_prim_mode_t prim_mode,
    const ovstage_placement_t* placement)
{
    const ovstage_placement_extension_v1_t* extension = NULL;
    ovstage_api_status_t status = ovstage_query_placement_extension(instance, &extension);
    if (status != OVSTAGE_OK) {
        return ovstage_placement_not_enqueued_(status);
    }
    return extension->write_attributes_on_device(
        instance->context, handle, writes, write_count, ordinal, prim_mode, placement);
}

/**
 * `map_attribute_on_device` of the placement table. When the instance has
 * no usable table: the lookup's failure status, no op, and
 * `*out_map_handle` (if not NULL) set to OVSTAGE_INVALID_MAP_HANDLE.
 */
static inline ovstage_enqueue_result_t ovstage_map_attribute_on_device(
    ovstage_instance_t* instance,
    ovstage_query_handle_t handle,
    const ovstage_map_desc_t* desc,
    ovstage_ordinal_t ordinal,
    const size_t* element_sizes,
    size_t element_count,
    const ovstage_placement_t* placement,
    ovstage_map_handle_t* out_map_handle)
{
    const ovstage_placement_extension_v1_t* extension = NULL;
    ovstage_api_status_t status = ovstage_query_placement_extension(instance, &extension);
    if (status != OVSTAGE_OK) {
        if (out_map_handle != NULL) {
            *out_map_handle = OVSTAGE_INVALID_MAP_HANDLE;
        }
        return ovstage_placement_not_enqueued_(status);
    }
    return extension->map_attribute_on_device(
        instance->context, handle, desc, ordinal, element_sizes, element_count, placement, out_map_handle);
}

/**
 * `read_attributes_on_device` of the placement table. When the instance has
 * no usable table: the lookup's failure status, no op, and
 * `*out_read_handle` (if not NULL) set to OVSTAGE_INVALID_READ_HANDLE.
 */
static inline ovstage_enqueue_result_t ovstage_read_attributes_on_device(
    ovstage_instance_t* instance,
    ovstage_query_handle_t handle,
    const ovx_token_t* attrs,
    size_t attr_count,
    ovstage_ordinal_range_t range,
    const ovstage_placement_t* placement,
    ovstage_read_handle_t* out_read_handle)
{
    const ovstage_placement_extension_v1_t* extension = NULL;
    ovstage_api_status_t status = ovstage_query_placement_extension(instance, &extension);
    if (status != OVSTAGE_OK) {
        if (out_read_handle != NULL) {
            *out_read_handle = OVSTAGE_INVALID_READ_HANDLE;
        }
        return ovstage_placement_not_enqueued_(status);
    }
    return extension->read_attributes_on_device(
        instance->context, handle, attrs, attr_count, range, placement, out_read_handle);
}
