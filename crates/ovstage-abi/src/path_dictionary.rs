//! `ovx/path_dictionary/path_dictionary_types.h`: the path dictionary's
//! `{vtable, context}` bundle.

/// The dictionary's implementation state (opaque to C).
pub struct path_dictionary_context_t {
    _private: [u8; 0],
}

/// A path dictionary: its function table and the state the functions take
/// as first argument. The owner (an ovstage instance) allocates both and
/// frees them when it is destroyed; every token, path and path list made
/// through it becomes invalid then.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct path_dictionary_instance_t {
    /// The function table (see `path_dictionary_vtable.h`).
    pub vtable: *mut super::path_dictionary_vtable::path_dictionary_vtable_t,
    /// State passed to every function of the table.
    pub context: *mut path_dictionary_context_t,
}
