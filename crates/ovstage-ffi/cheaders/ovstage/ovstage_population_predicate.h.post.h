/*
 * Builders of population predicates. Each sets `kind`, the member of
 * `values` the kind uses (`strings` NULL for kinds without operands) and
 * `value_count`. Operand arrays are borrowed, not copied.
 */

/* The prim predicate of `kind` over `count` strings. */
static inline ovstage_population_prim_predicate_t ovstage_population_prim_predicate_with_strings_(
    ovstage_population_prim_predicate_kind_t kind,
    const ovx_string_t* strings,
    size_t count)
{
    ovstage_population_prim_predicate_t predicate;
    predicate.kind = kind;
    predicate.values.strings = strings;
    predicate.value_count = count;
    return predicate;
}

/* The prim predicate of `kind` over `count` sub-predicates. */
static inline ovstage_population_prim_predicate_t ovstage_population_prim_predicate_with_subpredicates_(
    ovstage_population_prim_predicate_kind_t kind,
    const ovstage_population_prim_predicate_t* subpredicates,
    size_t count)
{
    ovstage_population_prim_predicate_t predicate;
    predicate.kind = kind;
    predicate.values.subpredicates = subpredicates;
    predicate.value_count = count;
    return predicate;
}

/** Matches no prim. */
static inline ovstage_population_prim_predicate_t ovstage_population_prim_predicate_none(void)
{
    return ovstage_population_prim_predicate_with_strings_(OVSTAGE_POPULATION_PRIM_PREDICATE_NONE, NULL, 0);
}

/** Matches every prim. */
static inline ovstage_population_prim_predicate_t ovstage_population_prim_predicate_all(void)
{
    return ovstage_population_prim_predicate_with_strings_(OVSTAGE_POPULATION_PRIM_PREDICATE_ALL, NULL, 0);
}

/** Matches prims matching all `value_count` sub-predicates. */
static inline ovstage_population_prim_predicate_t ovstage_population_prim_predicate_and(
    const ovstage_population_prim_predicate_t* subpredicates,
    size_t value_count)
{
    return ovstage_population_prim_predicate_with_subpredicates_(
        OVSTAGE_POPULATION_PRIM_PREDICATE_AND, subpredicates, value_count);
}

/** Matches prims matching any of the `value_count` sub-predicates. */
static inline ovstage_population_prim_predicate_t ovstage_population_prim_predicate_or(
    const ovstage_population_prim_predicate_t* subpredicates,
    size_t value_count)
{
    return ovstage_population_prim_predicate_with_subpredicates_(
        OVSTAGE_POPULATION_PRIM_PREDICATE_OR, subpredicates, value_count);
}

/** Matches prims not matching `*subpredicate`. */
static inline ovstage_population_prim_predicate_t ovstage_population_prim_predicate_not(
    const ovstage_population_prim_predicate_t* subpredicate)
{
    return ovstage_population_prim_predicate_with_subpredicates_(
        OVSTAGE_POPULATION_PRIM_PREDICATE_NOT, subpredicate, 1);
}

/** Matches prims whose parent matches `*subpredicate`. */
static inline ovstage_population_prim_predicate_t ovstage_population_prim_predicate_has_parent(
    const ovstage_population_prim_predicate_t* subpredicate)
{
    return ovstage_population_prim_predicate_with_subpredicates_(
        OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_PARENT, subpredicate, 1);
}

/** Matches prims with an ancestor matching `*subpredicate`. */
static inline ovstage_population_prim_predicate_t ovstage_population_prim_predicate_has_ancestor(
    const ovstage_population_prim_predicate_t* subpredicate)
{
    return ovstage_population_prim_predicate_with_subpredicates_(
        OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_ANCESTOR, subpredicate, 1);
}

/** Matches prims with a property matching `*property_predicate`. */
static inline ovstage_population_prim_predicate_t ovstage_population_prim_predicate_has_property(
    const ovstage_population_property_predicate_t* property_predicate)
{
    ovstage_population_prim_predicate_t predicate;
    predicate.kind = OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_PROPERTY;
    predicate.values.property_predicate = property_predicate;
    predicate.value_count = 1;
    return predicate;
}

/** Matches prims whose type is one of the names. */
static inline ovstage_population_prim_predicate_t ovstage_population_prim_predicate_has_type(
    const ovx_string_t* values,
    size_t value_count)
{
    return ovstage_population_prim_predicate_with_strings_(
        OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_TYPE, values, value_count);
}

/** Matches prims whose type is, or derives from, one of the names. */
static inline ovstage_population_prim_predicate_t ovstage_population_prim_predicate_is_a_type(
    const ovx_string_t* values,
    size_t value_count)
{
    return ovstage_population_prim_predicate_with_strings_(
        OVSTAGE_POPULATION_PRIM_PREDICATE_IS_A_TYPE, values, value_count);
}

/** Matches prims with one of the schemas, typed or applied. */
static inline ovstage_population_prim_predicate_t ovstage_population_prim_predicate_has_schema(
    const ovx_string_t* values,
    size_t value_count)
{
    return ovstage_population_prim_predicate_with_strings_(
        OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_SCHEMA, values, value_count);
}

/** Matches prims with one of the applied schemas. */
static inline ovstage_population_prim_predicate_t ovstage_population_prim_predicate_has_applied_schema(
    const ovx_string_t* values,
    size_t value_count)
{
    return ovstage_population_prim_predicate_with_strings_(
        OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_APPLIED_SCHEMA, values, value_count);
}

/** Matches prims with an applied schema in one of the namespaces. */
static inline ovstage_population_prim_predicate_t ovstage_population_prim_predicate_has_applied_schema_in_namespace(
    const ovx_string_t* values,
    size_t value_count)
{
    return ovstage_population_prim_predicate_with_strings_(
        OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_APPLIED_SCHEMA_IN_NAMESPACE, values, value_count);
}

/** Matches the prims at the paths. */
static inline ovstage_population_prim_predicate_t ovstage_population_prim_predicate_has_path(
    const ovx_string_t* values,
    size_t value_count)
{
    return ovstage_population_prim_predicate_with_strings_(
        OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_PATH, values, value_count);
}

/** Matches prims under one of the paths. */
static inline ovstage_population_prim_predicate_t ovstage_population_prim_predicate_is_under_path(
    const ovx_string_t* values,
    size_t value_count)
{
    return ovstage_population_prim_predicate_with_strings_(
        OVSTAGE_POPULATION_PRIM_PREDICATE_IS_UNDER_PATH, values, value_count);
}

/** Matches prims whose kind is one of the names. */
static inline ovstage_population_prim_predicate_t ovstage_population_prim_predicate_has_kind(
    const ovx_string_t* values,
    size_t value_count)
{
    return ovstage_population_prim_predicate_with_strings_(
        OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_KIND, values, value_count);
}

/** Matches prims whose purpose is one of the names. */
static inline ovstage_population_prim_predicate_t ovstage_population_prim_predicate_has_purpose(
    const ovx_string_t* values,
    size_t value_count)
{
    return ovstage_population_prim_predicate_with_strings_(
        OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_PURPOSE, values, value_count);
}

/** Matches prims with metadata at one of the paths. */
static inline ovstage_population_prim_predicate_t ovstage_population_prim_predicate_has_metadata(
    const ovx_string_t* paths,
    size_t path_count)
{
    return ovstage_population_prim_predicate_with_strings_(
        OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_METADATA, paths, path_count);
}

/* The property predicate of `kind` over `count` strings. */
static inline ovstage_population_property_predicate_t ovstage_population_property_predicate_with_strings_(
    ovstage_population_property_predicate_kind_t kind,
    const ovx_string_t* strings,
    size_t count)
{
    ovstage_population_property_predicate_t predicate;
    predicate.kind = kind;
    predicate.values.strings = strings;
    predicate.value_count = count;
    return predicate;
}

/* The property predicate of `kind` over `count` sub-predicates. */
static inline ovstage_population_property_predicate_t ovstage_population_property_predicate_with_subpredicates_(
    ovstage_population_property_predicate_kind_t kind,
    const ovstage_population_property_predicate_t* subpredicates,
    size_t count)
{
    ovstage_population_property_predicate_t predicate;
    predicate.kind = kind;
    predicate.values.subpredicates = subpredicates;
    predicate.value_count = count;
    return predicate;
}

/** Matches no property. */
static inline ovstage_population_property_predicate_t ovstage_population_property_predicate_none(void)
{
    return ovstage_population_property_predicate_with_strings_(
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_NONE, NULL, 0);
}

/** Matches every property. */
static inline ovstage_population_property_predicate_t ovstage_population_property_predicate_all(void)
{
    return ovstage_population_property_predicate_with_strings_(
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_ALL, NULL, 0);
}

/** Matches properties matching all `value_count` sub-predicates. */
static inline ovstage_population_property_predicate_t ovstage_population_property_predicate_and(
    const ovstage_population_property_predicate_t* subpredicates,
    size_t value_count)
{
    return ovstage_population_property_predicate_with_subpredicates_(
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_AND, subpredicates, value_count);
}

/** Matches properties matching any of the `value_count` sub-predicates. */
static inline ovstage_population_property_predicate_t ovstage_population_property_predicate_or(
    const ovstage_population_property_predicate_t* subpredicates,
    size_t value_count)
{
    return ovstage_population_property_predicate_with_subpredicates_(
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_OR, subpredicates, value_count);
}

/** Matches properties not matching `*subpredicate`. */
static inline ovstage_population_property_predicate_t ovstage_population_property_predicate_not(
    const ovstage_population_property_predicate_t* subpredicate)
{
    return ovstage_population_property_predicate_with_subpredicates_(
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_NOT, subpredicate, 1);
}

/** Matches properties one of the schemas declares. */
static inline ovstage_population_property_predicate_t ovstage_population_property_predicate_declared_by_schema(
    const ovx_string_t* values,
    size_t value_count)
{
    return ovstage_population_property_predicate_with_strings_(
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_DECLARED_BY_SCHEMA, values, value_count);
}

/** Matches properties whose name is one of the names. */
static inline ovstage_population_property_predicate_t ovstage_population_property_predicate_has_name(
    const ovx_string_t* values,
    size_t value_count)
{
    return ovstage_population_property_predicate_with_strings_(
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_HAS_NAME, values, value_count);
}

/** Matches properties in one of the namespaces. */
static inline ovstage_population_property_predicate_t ovstage_population_property_predicate_in_namespace(
    const ovx_string_t* values,
    size_t value_count)
{
    return ovstage_population_property_predicate_with_strings_(
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_IN_NAMESPACE, values, value_count);
}

/** Matches properties with metadata at one of the paths. */
static inline ovstage_population_property_predicate_t ovstage_population_property_predicate_has_metadata(
    const ovx_string_t* paths,
    size_t path_count)
{
    return ovstage_population_property_predicate_with_strings_(
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_HAS_METADATA, paths, path_count);
}

/** Matches attributes. */
static inline ovstage_population_property_predicate_t ovstage_population_property_predicate_is_attribute(void)
{
    return ovstage_population_property_predicate_with_strings_(
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_IS_ATTRIBUTE, NULL, 0);
}

/** Matches relationships. */
static inline ovstage_population_property_predicate_t ovstage_population_property_predicate_is_relationship(
    void)
{
    return ovstage_population_property_predicate_with_strings_(
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_IS_RELATIONSHIP, NULL, 0);
}

/** Matches custom properties. */
static inline ovstage_population_property_predicate_t ovstage_population_property_predicate_is_custom(void)
{
    return ovstage_population_property_predicate_with_strings_(
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_IS_CUSTOM, NULL, 0);
}

/** Matches properties with an authored value. */
static inline ovstage_population_property_predicate_t ovstage_population_property_predicate_is_authored(void)
{
    return ovstage_population_property_predicate_with_strings_(
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_IS_AUTHORED, NULL, 0);
}
