//! Sizes, alignments and field offsets of every public struct against the
//! contract's (`layout.txt`, taken from the 0.3.0 headers).

#![allow(missing_docs)]

use std::collections::BTreeMap;
use std::mem::{align_of, offset_of, size_of};

use ovstage_abi::api::*;
use ovstage_abi::api_types::*;
use ovstage_abi::dlpack::*;
use ovstage_abi::ovx_string::*;
use ovstage_abi::ovx_types::*;
use ovstage_abi::path_dictionary::*;
use ovstage_abi::path_dictionary_vtable::*;
use ovstage_abi::placement::*;
use ovstage_abi::population::*;
use ovstage_abi::population_export::*;
use ovstage_abi::population_predicate::*;
use ovstage_abi::stage_types::*;

/// (size, align, field offsets) by struct name.
type Layouts = BTreeMap<String, (usize, usize, Vec<(String, usize)>)>;

macro_rules! layouts {
    ($($ty:ident { $($field:ident),* $(,)? })*) => {{
        let mut m = Layouts::new();
        $(m.insert(
            stringify!($ty).to_owned(),
            (size_of::<$ty>(), align_of::<$ty>(), vec![$((stringify!($field).to_owned(), offset_of!($ty, $field))),*]),
        );)*
        m
    }};
}

fn contract() -> Layouts {
    let mut m = Layouts::new();
    let mut current: Option<String> = None;
    for line in include_str!("layout.txt").lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        if let Some(field) = line.strip_prefix("  ") {
            let (name, at) = field.split_once(" @").expect("field line");
            let entry = m.get_mut(current.as_ref().expect("a struct line first")).expect("present");
            let entry: &mut (usize, usize, Vec<(String, usize)>) = entry;
            entry.2.push((name.to_owned(), at.parse().expect("offset")));
        } else {
            let mut parts = line.split_whitespace();
            let name = parts.next().expect("name").to_owned();
            let num = |p: Option<&str>, key: &str| -> usize {
                p.and_then(|p| p.strip_prefix(key)).expect("key").parse().expect("number")
            };
            let size = num(parts.next(), "size=");
            let align = num(parts.next(), "align=");
            m.insert(name.clone(), (size, align, Vec::new()));
            current = Some(name);
        }
    }
    m
}

#[test]
fn every_struct_matches_the_contract_layout() {
    let ours = layouts! {
        DLDevice { device_type, device_id }
        DLDataType { code, bits, lanes }
        DLTensor { data, device, ndim, dtype, shape, strides, byte_offset }
        DLManagedTensor { dl_tensor, manager_ctx, deleter }
        DLManagedTensorVersioned { version, manager_ctx, deleter, flags, dl_tensor }
        DLPackExchangeAPIHeader { version, prev_api }
        DLPackExchangeAPI { header, managed_tensor_allocator, managed_tensor_from_py_object_no_sync, managed_tensor_to_py_object_no_sync, dltensor_from_py_object_no_sync, current_work_stream }
        ovstage_placement_t { device, stream, availability_event }
        ovstage_placement_extension_v1_t { header, write_attribute_on_device, write_attributes_on_device, map_attribute_on_device, read_attributes_on_device }
        ovstage_vtable_t { wait_op, release_op, advance_write_floor, get_oldest_preserved_ordinal, get_attribute_write_floor, fetch_ordinal, release_ordinal_query, query, query_from_path_list, fetch_query_result, release_query_result, release_query, read_attributes, fetch_read_next, release_group, release_read, write_attribute, map_attribute, fetch_map_next, unmap_group, unmap_attribute, delete_attributes, get_version, get_error_string, get_last_op_error, get_path_dictionary, write_attributes, query_extension }
        ovstage_extension_header_t { struct_size, version }
        ovstage_cuda_sync_t { stream, wait_event }
        ovstage_enqueue_result_t { status, op_index }
        ovstage_op_wait_result_t { error_op_ids, error_op_id_count, lowest_pending_op_id }
        ovstage_data_t { tensors, tensor_count, count, index_map, mask, cuda_sync }
        ovstage_prim_group_t { list, offset, count, index_map }
        ovstage_attribute_meta_t { attribute_write_floor_ordinal, layout_generation }
        ovstage_ordinal_range_t { start_ordinal, end_ordinal, has_start_ordinal }
        ovstage_read_group_t { read_group_id, attribute, ordinal, is_delete, is_array, semantic, prims, data, meta }
        ovstage_map_group_t { prims, data, meta }
        ovstage_map_desc_t { attribute, dtype, semantic, prim_mode, attribute_mode }
        ovstage_predicate_t { attribute, op, values, value_count }
        ovstage_filter_t { predicates, count }
        ovstage_query_result_t { query_result_id, attributes, attribute_count, all_handle, total_prim_count }
        ovstage_write_floor_desc_t { ordinal, scope, attributes, attribute_count }
        ovstage_write_data_t { tensors, managed_tensors, tensor_count, count, index_map, mask, cuda_sync, semantic, is_array, attribute_mode }
        ovstage_attribute_write_t { attribute, data }
        ovstage_instance_t { vtable, context }
        ovstage_population_selector_t { prim_predicate, property_predicate, prim_metadata_paths, prim_metadata_path_count, property_metadata_paths, property_metadata_path_count }
        ovstage_population_desc_t { domains, selectors, selector_count, stage_metadata_paths, stage_metadata_path_count }
        ovstage_population_enqueue_result_t { status, op_index }
        ovstage_population_op_wait_result_t { error_op_ids, error_op_id_count, lowest_pending_op_id }
        ovstage_population_export_attribute_rule_t { path, path_match, source_attribute_name, source_attribute_name_match, destination_attribute_name, usd_type_name, required_schema_name, flags }
        ovstage_population_export_prim_rule_t { path, path_match, usd_type_name, unknown_type_metadata_key }
        ovstage_population_export_api_schema_rule_t { path, path_match, schema_name, instance_name, flags }
        ovstage_population_export_property_edge_rule_t { path, path_match, source_property_name, destination_property_name, usd_type_name, property_kind, flags }
        ovstage_population_export_metadata_rule_t { path, path_match, source_metadata_name, destination_metadata_name, metadata_kind, flags }
        ovstage_population_export_desc_t { struct_size, source_api_schema_policy, projection, ordinal, since_ordinal, selection, layer_mode, transform_policy, unknown_metadata_policy, prim_predicate, property_predicate, prim_rules, prim_rule_count, api_schema_rules, api_schema_rule_count, attribute_rules, attribute_rule_count, property_rules, property_rule_count, metadata_rules, metadata_rule_count }
        ovstage_population_export_report_t { prims_examined, prims_exported, prims_skipped, attributes_examined, attributes_exported, attributes_skipped, attributes_unsupported, api_schemas_examined, api_schemas_applied, api_schemas_skipped, custom_attributes_inferred, unknown_metadata_preserved, transforms_examined, transforms_exported, property_edges_examined, property_edges_exported, property_edges_skipped, property_edges_unsupported, metadata_examined, metadata_exported, metadata_skipped, metadata_unsupported, source_states_unavailable }
        ovstage_population_prim_predicate_t { kind, values, value_count }
        ovstage_population_property_predicate_t { kind, values, value_count }
        ovstage_instance_desc_t { name }
        ovstage_build_info_t { struct_size, build_number, build_string, git_branch, git_hash, build_location }
        ovstage_config_entry_t { key_type, key, value }
        ovstage_config_t { entries, entry_count }
        ovstage_clone_result_t { ordinal, target_count, source_prim_count, prims_cloned }
        ovstage_hierarchy_item_t { status, path_offset, path_count }
        ovstage_hierarchy_result_t { hierarchy_result_id, ordinal, items, input_count, paths, path_count }
        ovstage_hierarchy_computation_model_desc_t { model_id, name, description }
        DLPackVersion { major, minor }
        path_dictionary_instance_t { vtable, context }
        path_dictionary_vtable_t { create_tokens_from_strings, create_paths_from_tokens, create_paths_from_strings, create_path_list_from_paths, create_path_list_from_strings, add_path_list_reference, release_path_list_reference, get_strings_from_tokens, get_tokens_from_paths, get_num_paths_from_path_list, get_paths_from_path_list, release_error }
        ovx_string_t { ptr, length }
        ovx_string_or_token_t { token, string }
        ovx_api_result_t { status, error }
        ovx_string_or_prim_path_t { path, string }
    };
    let theirs = contract();
    assert_eq!(ours.keys().collect::<Vec<_>>(), theirs.keys().collect::<Vec<_>>(), "the same structs");
    for (name, expected) in &theirs {
        assert_eq!(&ours[name], expected, "layout of {name}");
    }
}

#[test]
fn c_enums_and_bools_are_four_and_one_bytes() {
    assert_eq!(size_of::<ovstage_api_status_t>(), 4);
    assert_eq!(size_of::<ovstage_log_severity_t>(), 4);
    assert_eq!(size_of::<ovstage_abi::CBool>(), 1);
    assert_eq!(size_of::<Option<unsafe extern "C" fn()>>(), size_of::<usize>());
}
