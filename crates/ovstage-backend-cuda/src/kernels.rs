//! Placeholder: the kernel table is being written.
