//! The ovstage scheduler.
//!
//! Every stage call that does work is an *op*: it is submitted with an
//! [`OpSpec`] describing how it orders against other ops, gets an [`OpId`]
//! at once, and later runs on a pool of worker lanes. The scheduler knows
//! nothing about columns or bytes; it only keeps the ordering rules of the
//! contract:
//!
//! - mutations at the same ordinal that touch an overlapping cell key run in
//!   submission order ([`Order::Mutation`]);
//! - a floor advance to `N` runs after every mutation at an ordinal `<= N` in
//!   its scope ([`Order::FloorAdvance`]);
//! - an op that uses a handle runs after the op that produces it, and the
//!   handle's release runs after every op that uses it ([`OpSpec::uses`],
//!   [`OpSpec::produces`], [`OpSpec::releases`]);
//! - an [`Order::AfterFloors`] op (reads, floor queries) runs after every
//!   floor advance submitted before it;
//! - everything else is independent and runs concurrently.
//!
//! [`trace`] records every op into a Chrome trace (the op timeline).
//!
//! A poll of an op that completed successfully is one atomic load (the
//! completion ring); other polls are a table lookup and one atomic load. Waiting
//! with an infinite timeout helps: the waiting thread runs ready ops of the
//! waited op's dependency chain itself instead of sleeping until a lane
//! gets to them.

#![forbid(unsafe_code)]

mod buckets;
mod cores;
mod lanes;
mod node;
mod order;
mod pool;
mod ring;
mod scheduler;
mod search_window;
mod spec;
mod table;
pub mod trace;

pub use cores::cores;
pub use node::Failure;
pub use scheduler::{
    FailureFn, FailureHook, IntoJob, Job, Lanes, QueueFull, Scheduler, SchedulerConfig, Unboxed, WaitError,
};
pub use spec::{CellKey, Cells, FloorScope, HandleKey, OpSpec, Order, Placement, Traced};

pub use ovstage_types::{OpId, Timeout};
