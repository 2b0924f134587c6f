/**
 * Marks a declaration as deprecated with a message, in whatever form the
 * compiler understands. Define it before including to override.
 */
#ifndef OVSTAGE_DEPRECATED
#if defined(__cplusplus) && __cplusplus >= 201402L
#define OVSTAGE_DEPRECATED(msg) [[deprecated(msg)]]
#elif defined(__GNUC__) || defined(__clang__)
#define OVSTAGE_DEPRECATED(msg) __attribute__((deprecated(msg)))
#elif defined(_MSC_VER)
#define OVSTAGE_DEPRECATED(msg) __declspec(deprecated(msg))
#else
#define OVSTAGE_DEPRECATED(msg)
#endif
#endif

/* Defined in ovstage_api.h. */
typedef struct ovstage_vtable_t ovstage_vtable_t;

/**
 * The ordering key of mutations, write floors and reads (any value; no
 * sentinel). Guarded so that other headers may declare it as well.
 */
#ifndef OVSTAGE_ORDINAL_T_DECLARED
#define OVSTAGE_ORDINAL_T_DECLARED
typedef uint64_t ovstage_ordinal_t;
#endif
