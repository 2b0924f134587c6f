/*
 * Builders of process configuration entries, for the `entries` of an
 * ovstage_config_t. Every byte of the returned entry is set (unused union
 * bytes are zero).
 */

/** A string setting. */
static inline ovstage_config_entry_t ovstage_config_entry_string(ovstage_config_string_t key, ovx_string_t value)
{
    ovstage_config_entry_t entry;
    memset(&entry, 0, sizeof(entry));
    entry.key_type = OVSTAGE_CONFIG_KEY_TYPE_STRING;
    entry.key.string_key = key;
    entry.value.string_value = value;
    return entry;
}

/** An unsigned integer setting. */
static inline ovstage_config_entry_t ovstage_config_entry_uint64(ovstage_config_uint64_t key, uint64_t value)
{
    ovstage_config_entry_t entry;
    memset(&entry, 0, sizeof(entry));
    entry.key_type = OVSTAGE_CONFIG_KEY_TYPE_UINT64;
    entry.key.uint64_key = key;
    entry.value.uint_value = value;
    return entry;
}

/** The hierarchy computation model of new instances. */
static inline ovstage_config_entry_t ovstage_config_entry_runtime_default_hierarchy_computation_model(
    ovstage_hierarchy_computation_model_id_t model)
{
    return ovstage_config_entry_uint64(OVSTAGE_CONFIG_RUNTIME_DEFAULT_HIERARCHY_COMPUTATION_MODEL, (uint64_t)model);
}

/** The ordinal admission policy of new instances. */
static inline ovstage_config_entry_t ovstage_config_entry_runtime_default_ordinal_admission_policy(
    ovstage_ordinal_admission_policy_t policy)
{
    return ovstage_config_entry_uint64(OVSTAGE_CONFIG_RUNTIME_DEFAULT_ORDINAL_ADMISSION_POLICY, (uint64_t)policy);
}

/**
 * The binary package's root path (may contain
 * OVX_CONFIG_EXECUTABLE_DIR_TOKEN).
 */
static inline ovstage_config_entry_t ovstage_config_entry_binary_package_root_path(ovx_string_t path)
{
    return ovstage_config_entry_string(OVSTAGE_CONFIG_BINARY_PACKAGE_ROOT_PATH, path);
}

/** This library's extension: worker lanes per instance (0: one per core). */
static inline ovstage_config_entry_t ovstage_config_entry_runtime_lane_count(uint64_t lanes)
{
    return ovstage_config_entry_uint64(OVSTAGE_CONFIG_RUNTIME_LANE_COUNT, lanes);
}

/**
 * This library's extension: global write-floor advances of history kept
 * for snapshot and range reads (0: the default).
 */
static inline ovstage_config_entry_t ovstage_config_entry_runtime_history_depth(uint64_t depth)
{
    return ovstage_config_entry_uint64(OVSTAGE_CONFIG_RUNTIME_HISTORY_DEPTH, depth);
}

/**
 * This library's extension: unsealed versions kept per column before the
 * oldest are merged (0: the default).
 */
static inline ovstage_config_entry_t ovstage_config_entry_runtime_max_unsealed_versions(uint64_t count)
{
    return ovstage_config_entry_uint64(OVSTAGE_CONFIG_RUNTIME_MAX_UNSEALED_VERSIONS, count);
}
