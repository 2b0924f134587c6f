/** Custom data key recording applied API schemas the export did not know. */
#define OVSTAGE_POPULATION_EXPORT_UNKNOWN_APPLIED_API_SCHEMAS_CUSTOM_DATA_KEY "ovpopulation:unknownAppliedAPISchemas"

/**
 * Fills `desc` for a snapshot at `ordinal` of the typed hierarchy under
 * `*root_path`: prims authored as definitions with their recorded API
 * schemas and their schemas' declared properties. Returns the status of
 * ovstage_population_export_desc_init_snapshot when that fails.
 */
static inline ovstage_api_status_t ovstage_population_export_desc_init_typed_hierarchy(
    ovstage_population_export_desc_t* desc,
    ovstage_ordinal_t ordinal,
    const ovx_string_t* root_path)
{
    ovstage_api_status_t status = ovstage_population_export_desc_init_snapshot(desc, ordinal);
    if (status != OVSTAGE_OK) {
        return status;
    }
    desc->layer_mode = OVSTAGE_POPULATION_EXPORT_LAYER_MODE_DEF;
    desc->source_api_schema_policy = OVSTAGE_POPULATION_EXPORT_SOURCE_API_SCHEMAS_APPLY_RECORDED;
    desc->projection = OVSTAGE_POPULATION_EXPORT_PROJECTION_SCHEMA_DECLARED;
    desc->prim_predicate = ovstage_population_prim_predicate_is_under_path(root_path, 1);
    return OVSTAGE_OK;
}
