/* The whole path dictionary interface: types, function table, wrappers. */
#ifndef PATH_DICTIONARY_INTERFACE_H
#define PATH_DICTIONARY_INTERFACE_H

#include "path_dictionary_types.h"
#include "path_dictionary_vtable.h"
#include "path_dictionary_utils.h"

#endif /* PATH_DICTIONARY_INTERFACE_H */
