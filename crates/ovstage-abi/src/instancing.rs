//! `ovstage/ovstage_instancing.h`: prototype and instance lookups of
//! USD-populated stages. Not supported by this library (it has no USD
//! population): every function returns NOT_SUPPORTED.
