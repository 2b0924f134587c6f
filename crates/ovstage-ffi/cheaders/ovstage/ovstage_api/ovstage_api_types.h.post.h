/**
 * An ovstage instance: its function table (`vtable`, see ovstage_api.h) and
 * the state every function of the table takes first (`context`). Guarded
 * so that other headers may declare it as well; a header that declared
 * only the typedef gets the struct's definition here.
 */
#ifndef OVSTAGE_INSTANCE_T_DECLARED
#define OVSTAGE_INSTANCE_T_DECLARED
typedef struct ovstage_instance_t {
    const ovstage_vtable_t* vtable;
    ovstage_context_t* context;
} ovstage_instance_t;
#else
struct ovstage_instance_t {
    const ovstage_vtable_t* vtable;
    ovstage_context_t* context;
};
#endif
