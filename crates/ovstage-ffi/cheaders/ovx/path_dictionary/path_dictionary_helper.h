/* Checks of string views handed to the path dictionary. */
#ifndef PATH_DICTIONARY_HELPER_H
#define PATH_DICTIONARY_HELPER_H

#include "path_dictionary_types.h"
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/**
 * Whether `str` (non-NULL, with a non-NULL `ptr`) has a zero byte among its
 * `length` bytes. False for a NULL view or a NULL `ptr`.
 */
static inline bool ovx_string_contains_embedded_nul(const ovx_string_t* str)
{
    if (str == NULL || str->ptr == NULL) {
        return false;
    }
    return memchr(str->ptr, '\0', str->length) != NULL;
}

/**
 * Whether `str` is malformed in the one way a view can be: a non-zero
 * `length` with a NULL `ptr`. False for a NULL view.
 */
static inline bool ovx_string_has_null_data(const ovx_string_t* str)
{
    return str != NULL && str->ptr == NULL && str->length != 0;
}

#endif /* PATH_DICTIONARY_HELPER_H */
