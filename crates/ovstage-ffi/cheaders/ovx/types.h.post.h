/**
 * An `ovx_string_t` viewing a string literal (its length excludes the
 * terminating NUL). Only literals are accepted: `"" str` fails to compile
 * for anything else.
 */
#ifdef __cplusplus
#define literal_to_ovx_string(str) ovx_string_t{ (str), sizeof("" str) - 1 }
#else
#define literal_to_ovx_string(str) ((ovx_string_t){ (str), sizeof("" str) - 1 })
#endif

/**
 * Whether a string view holds no characters: true for a NULL view, a NULL
 * data pointer or a zero length.
 */
static inline bool is_ovx_string_empty(const ovx_string_t* str)
{
    return str == NULL || str->ptr == NULL || str->length == 0;
}
