//! `ovstage/ovstage_config.h`: builders of process config entries (inline
//! in the header) and the executable directory used in package-root paths.
