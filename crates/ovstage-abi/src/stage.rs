//! `ovstage/ovstage.h`: process and instance life cycle, logging, build
//! information, clone and hierarchy lookups.
