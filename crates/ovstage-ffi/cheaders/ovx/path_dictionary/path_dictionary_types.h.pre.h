/* Defined in path_dictionary_vtable.h. */
typedef struct path_dictionary_vtable_t path_dictionary_vtable_t;
