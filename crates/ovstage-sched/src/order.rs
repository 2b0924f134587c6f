//! Ordering bookkeeping: which pending ops a new op must wait for.
//!
//! All of it lives behind one mutex that is held only while an op is
//! submitted or completes, never while a job runs. Every node referenced
//! here is pending (submitted, not yet completed): completion removes it
//! under the same lock, so a new op never gains an edge to a finished one.

use std::collections::HashMap;
use std::sync::Arc;

use smallvec::SmallVec;

use ovstage_types::idhash::IdBuild;

use crate::buckets::{OrdinalDeque, Vacant};
use crate::node::Node;
use crate::spec::{CellKey, Cells, FloorScope, HandleKey, OpSpec, Order};

/// Pending mutations at one ordinal: the tail of each cell key's chain, and
/// the tail of the all-cells chain.
#[derive(Default)]
struct Bucket {
    all: Option<Arc<Node>>,
    cells: SmallVec<[(CellKey, Arc<Node>); 4]>,
}

impl Vacant for Bucket {
    fn is_vacant(&self) -> bool {
        self.all.is_none() && self.cells.is_empty()
    }
}

/// The most recent floor advance, while pending.
struct FloorTail {
    node: Arc<Node>,
}

#[derive(Default)]
struct HandleTrack {
    producer: Option<Arc<Node>>,
    users: Users,
}

/// Up to this many pending users are kept in a list.
const FEW_USERS: usize = 8;

/// Emptied handle tracks kept while the map holds at most this many: a
/// loop of ops using one handle (reads or writes through one query) would
/// otherwise remove its track at every completion and insert it again at
/// the next registration. The handle's release removes its track.
const KEPT_TRACKS: usize = 64;

/// The pending users of a handle: a short list for the usual few (a
/// read, a write, their release), a deque by op id once a query has many
/// writes in flight. A track starts as a list again once it empties.
enum Users {
    Few(SmallVec<[Arc<Node>; FEW_USERS]>),
    Many(UsersById),
}

impl Default for Users {
    fn default() -> Self {
        Users::Few(SmallVec::new())
    }
}

impl Users {
    fn insert(&mut self, node: &Arc<Node>) {
        match self {
            Users::Few(list) if list.iter().any(|u| Arc::ptr_eq(u, node)) => {}
            Users::Few(list) if list.len() < FEW_USERS => list.push(node.clone()),
            Users::Few(list) => {
                let mut many = UsersById::default();
                list.sort_unstable_by_key(|u| u.id);
                list.iter().for_each(|u| insert_user(&mut many, u));
                insert_user(&mut many, node);
                *self = Users::Many(many);
            }
            Users::Many(many) => insert_user(many, node),
        }
    }

    fn remove(&mut self, node: &Arc<Node>) {
        match self {
            Users::Few(list) => {
                if let Some(at) = list.iter().position(|u| Arc::ptr_eq(u, node)) {
                    list.swap_remove(at);
                }
            }
            Users::Many(many) => remove_user(many, node),
        }
    }

    fn is_empty(&self) -> bool {
        match self {
            Users::Few(list) => list.is_empty(),
            Users::Many(many) => many.is_empty(),
        }
    }

    fn all_complete(&self) -> bool {
        let mut all = true;
        self.for_each(|u| all &= u.is_complete());
        all
    }

    fn for_each(&self, mut f: impl FnMut(&Arc<Node>)) {
        match self {
            Users::Few(list) => list.iter().for_each(f),
            Users::Many(many) => many.values().filter_map(|u| u.0.as_ref()).for_each(&mut f),
        }
    }
}

/// Many pending users, filed by op id in an [`OrdinalDeque`]. Ops register
/// in id order (ids are allocated under the ordering lock), so an insertion
/// appends, and they mostly complete oldest first, so a removal mostly pops
/// the front: cheaper than hashing. Nothing relies on the order: an id
/// below the newest is filed in its place.
type UsersById = OrdinalDeque<UserSlot>;

/// One pending user (vacant once it completed).
#[derive(Default)]
struct UserSlot(Option<Arc<Node>>);

impl Vacant for UserSlot {
    fn is_vacant(&self) -> bool {
        self.0.is_none()
    }
}

fn insert_user(many: &mut UsersById, node: &Arc<Node>) {
    let slot = many.entry(node.id.get());
    if slot.0.is_none() {
        slot.0 = Some(node.clone());
    }
}

fn remove_user(many: &mut UsersById, node: &Arc<Node>) {
    let id = node.id.get();
    if let Some(slot) = many.get_mut(id) {
        slot.0 = None;
        many.vacated(id);
    }
}

/// Where a registered op completes when it has nothing to wait for.
#[derive(Copy, Clone, PartialEq, Eq)]
pub(crate) enum Completion {
    /// On the submitting thread, before its submission returns.
    HereWhenFree,
    /// Possibly after its submission returns (on a lane, or waited for).
    Later,
}

#[derive(Default)]
pub(crate) struct OrderState {
    buckets: OrdinalDeque<Bucket>,
    /// Pending barriers and their cells.
    barriers: Vec<(Cells, Arc<Node>)>,
    floor_tail: Option<FloorTail>,
    /// Buckets at or below this ordinal hold only mutations that the chain
    /// of advances already waits for: it is raised to an `All`-scope
    /// advance's ordinal when one is registered, and lowered below a
    /// mutation registered at or below it (the stage never submits one, as
    /// it rejects mutations at or below a submitted floor, but the rule
    /// must not depend on that). An advance then scans only the buckets
    /// above it, so a run of advances costs O(1) each.
    sealed_all: Option<u64>,
    handles: HashMap<HandleKey, HandleTrack, IdBuild>,
}

/// Adds a dependency; duplicates are removed once, at the end of
/// [`OrderState::register`] (see [`dedup_deps`]).
fn push_dep(deps: &mut SmallVec<[Arc<Node>; 4]>, node: &Arc<Node>) {
    deps.push(node.clone());
}

/// Removes repeated nodes. Checking each push against the list instead
/// made releasing a handle with n pending users, or a floor advance over n
/// pending writes, cost O(n^2): 14k writes in flight on one query took
/// half a billion instructions to release it.
fn dedup_deps(deps: &mut SmallVec<[Arc<Node>; 4]>) {
    if deps.len() > 1 {
        deps.sort_unstable_by_key(|d| Arc::as_ptr(d) as usize);
        deps.dedup_by(|a, b| Arc::ptr_eq(a, b));
    }
}

impl OrderState {
    /// Records `node` (described by `spec`) and returns the pending ops it
    /// must wait for.
    #[cfg(test)]
    pub(crate) fn register(&mut self, node: &Arc<Node>, spec: &OpSpec) -> SmallVec<[Arc<Node>; 4]> {
        self.register_as(node, spec, Completion::Later)
    }

    /// [`OrderState::register`], told whether the op completes on the
    /// submitting thread when it has nothing to wait for. Such an op is
    /// complete before its submission returns the handle it produces, so
    /// no later op can name that handle while it is pending: its producer
    /// entry (a map insertion now and a removal at completion) is skipped.
    pub(crate) fn register_as(
        &mut self,
        node: &Arc<Node>,
        spec: &OpSpec,
        completion: Completion,
    ) -> SmallVec<[Arc<Node>; 4]> {
        let mut deps = SmallVec::new();
        match &spec.order {
            Order::Independent => {}
            Order::Mutation { ordinal, cells } | Order::Barrier { ordinal, cells } => {
                if self.sealed_all.is_some_and(|sealed| *ordinal <= sealed) {
                    // Not covered by the chain of advances: later advances
                    // must scan its bucket again.
                    self.sealed_all = ordinal.checked_sub(1);
                }
                for (bcells, barrier) in &self.barriers {
                    if bcells.overlaps(cells) {
                        push_dep(&mut deps, barrier);
                    }
                }
                if matches!(spec.order, Order::Barrier { .. }) {
                    for bucket in self.buckets.values() {
                        if let Some(all) = &bucket.all {
                            push_dep(&mut deps, all);
                        }
                        for (key, tail) in &bucket.cells {
                            if cells.has(*key) {
                                push_dep(&mut deps, tail);
                            }
                        }
                    }
                    self.barriers.push((cells.clone(), node.clone()));
                }
                let bucket = self.buckets.entry(*ordinal);
                if let Some(all) = &bucket.all {
                    push_dep(&mut deps, all);
                }
                match cells.as_keys() {
                    None => {
                        for (_, tail) in bucket.cells.drain(..) {
                            push_dep(&mut deps, &tail);
                        }
                        bucket.all = Some(node.clone());
                    }
                    Some(keys) => {
                        for key in keys {
                            match bucket.cells.iter_mut().find(|(k, _)| k == key) {
                                // A key listed twice: already this op's.
                                Some((_, tail)) if Arc::ptr_eq(tail, node) => {}
                                Some((_, tail)) => {
                                    push_dep(&mut deps, tail);
                                    *tail = node.clone();
                                }
                                None => bucket.cells.push((*key, node.clone())),
                            }
                        }
                    }
                }
                if bucket.is_vacant() {
                    // A mutation of no cell files nothing.
                    self.buckets.vacated(*ordinal);
                }
            }
            Order::FloorAdvance { ordinal, scope } => {
                if let Some(tail) = &self.floor_tail {
                    push_dep(&mut deps, &tail.node);
                }
                let lower = match self.sealed_all {
                    Some(sealed) if sealed >= *ordinal => None,
                    Some(sealed) => Some(sealed + 1),
                    None => Some(0),
                };
                if let Some(lower) = lower {
                    for bucket in self.buckets.range(lower, *ordinal) {
                        if let Some(all) = &bucket.all {
                            push_dep(&mut deps, all);
                        }
                        for (key, tail) in &bucket.cells {
                            // A tail touching several keys is in scope when any
                            // of them is; checking each key it is filed under
                            // finds it.
                            if scope.covers_key(*key) {
                                push_dep(&mut deps, tail);
                            }
                        }
                    }
                }
                if matches!(scope, FloorScope::All) {
                    self.sealed_all = Some(self.sealed_all.map_or(*ordinal, |s| s.max(*ordinal)));
                }
                self.floor_tail = Some(FloorTail { node: node.clone() });
            }
            Order::AfterFloors => {
                if let Some(tail) = &self.floor_tail {
                    push_dep(&mut deps, &tail.node);
                }
            }
        }
        for handle in &spec.uses {
            let track = self.handles.entry(*handle).or_default();
            if let Some(producer) = &track.producer {
                push_dep(&mut deps, producer);
            }
            track.users.insert(node);
        }
        if let Some(handle) = spec.releases
            && let Some(track) = self.handles.remove(&handle)
        {
            if let Some(producer) = &track.producer {
                push_dep(&mut deps, producer);
            }
            track.users.for_each(|user| {
                if !Arc::ptr_eq(user, node) {
                    push_dep(&mut deps, user);
                }
            });
        }
        if let Some(handle) = spec.produces
            && !(completion == Completion::HereWhenFree && deps.is_empty())
        {
            self.handles.entry(handle).or_default().producer = Some(node.clone());
        }
        dedup_deps(&mut deps);
        deps
    }

    /// Whether an op ordered by `order`, using and releasing no handle,
    /// would have nothing to wait for, so that it can complete before
    /// anything is filed for it (see `Scheduler::submit_brief`). False for
    /// the orderings whose registration files the op itself (mutations,
    /// barriers, advances): they must be registered.
    pub(crate) fn holds_back_nothing_of(&self, order: &Order) -> bool {
        match order {
            Order::Independent => true,
            Order::AfterFloors => self.floor_tail.as_ref().is_none_or(|tail| tail.node.is_complete()),
            Order::Mutation { .. } | Order::Barrier { .. } | Order::FloorAdvance { .. } => false,
        }
    }

    /// Whether an op of `spec` would have nothing to wait for and need
    /// nothing filed for it, so that it can be born complete and run on
    /// its submitter before its id is handed out (see
    /// `Scheduler::submit_work`): its ordering holds it back on nothing
    /// and files nothing ([`OrderState::holds_back_nothing_of`]), every
    /// handle it uses has no pending producer, and a handle it releases is
    /// idle, whose record is then removed (as [`OrderState::release_if_idle`]).
    /// It is not recorded as a user of the handles it uses, so a release
    /// of one that another thread submits while it runs does not wait for
    /// it: the op must keep what it needs of the handle itself (the stage's
    /// jobs hold the handle's state), as it must already when such a
    /// release races its submission.
    pub(crate) fn admits_born(&mut self, spec: &OpSpec) -> bool {
        let ready = self.holds_back_nothing_of(&spec.order)
            && spec
                .uses
                .iter()
                .all(|h| self.handles.get(h).and_then(|t| t.producer.as_ref()).is_none_or(|p| p.is_complete()));
        ready && spec.releases.is_none_or(|h| self.release_if_idle(h))
    }

    /// The registration of an op that only releases `handle`, when no
    /// pending op produces or uses the handle: its record is removed and
    /// true returned (the release has nothing to wait for). False, with
    /// nothing changed, when one does.
    pub(crate) fn release_if_idle(&mut self, handle: HandleKey) -> bool {
        let Some(track) = self.handles.get(&handle) else { return true };
        let idle = track.producer.as_ref().is_none_or(|p| p.is_complete()) && track.users.all_complete();
        if idle {
            self.handles.remove(&handle);
        }
        idle
    }

    /// Removes every trace of a completed node.
    pub(crate) fn complete(&mut self, node: &Arc<Node>) {
        let Some(role) = &node.role else { return };
        if let Some(ordinal) = role.mutation_ordinal
            && let Some(bucket) = self.buckets.get_mut(ordinal)
        {
            if bucket.all.as_ref().is_some_and(|a| Arc::ptr_eq(a, node)) {
                bucket.all = None;
            }
            bucket.cells.retain(|(_, tail)| !Arc::ptr_eq(tail, node));
            if bucket.is_vacant() {
                self.buckets.vacated(ordinal);
            }
        }
        if role.barrier {
            self.barriers.retain(|(_, b)| !Arc::ptr_eq(b, node));
        }
        if role.floor_advance && self.floor_tail.as_ref().is_some_and(|t| Arc::ptr_eq(&t.node, node)) {
            self.floor_tail = None;
        }
        let many = self.handles.len() > KEPT_TRACKS;
        for handle in role.uses.iter().chain(role.produces.iter()) {
            if let Some(track) = self.handles.get_mut(handle) {
                if track.producer.as_ref().is_some_and(|p| Arc::ptr_eq(p, node)) {
                    track.producer = None;
                }
                track.users.remove(node);
                if track.producer.is_none() && track.users.is_empty() {
                    if many {
                        self.handles.remove(handle);
                    } else if matches!(track.users, Users::Many(_)) {
                        track.users = Users::default();
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::Role;
    use ovstage_types::OpId;

    fn node(id: u64) -> Arc<Node> {
        Arc::new(Node::new(OpId::from_raw(id).expect("non-zero"), Some(Box::new(|| Ok(()))), None, None))
    }

    fn ids(users: &Users) -> Vec<u64> {
        let mut out = Vec::new();
        users.for_each(|u| out.push(u.id.get()));
        out.sort_unstable();
        out
    }

    #[test]
    fn many_users_are_kept_by_id_whatever_the_order_of_completion() {
        let nodes: Vec<Arc<Node>> = (1..=40).map(node).collect();
        let mut users = Users::default();
        // Out of order at first (the list is sorted on the switch), then a
        // duplicate, then in order.
        for n in nodes[..FEW_USERS].iter().rev() {
            users.insert(n);
        }
        users.insert(&nodes[0]);
        for n in &nodes[FEW_USERS..30] {
            users.insert(n);
        }
        users.insert(&nodes[29]);
        assert!(matches!(users, Users::Many(_)));
        assert_eq!(ids(&users), (1..=30).collect::<Vec<_>>());
        // Oldest first, then from the middle and the back.
        for n in &nodes[..5] {
            users.remove(n);
        }
        for i in [12usize, 20, 29, 28, 13] {
            users.remove(&nodes[i]);
        }
        users.remove(&nodes[12]);
        users.remove(&nodes[35]);
        let expect: Vec<u64> = (6..=28).filter(|i| ![13, 14, 21].contains(i)).collect();
        assert_eq!(ids(&users), expect);
        // An id below the newest goes in its place.
        users.insert(&nodes[13]);
        users.insert(&nodes[35]);
        let mut expect = expect;
        expect.extend([14, 36]);
        expect.sort_unstable();
        assert_eq!(ids(&users), expect);
        let Users::Many(many) = &users else { unreachable!() };
        let filed: Vec<u64> = many.values().filter_map(|u| u.0.as_ref()).map(|u| u.id.get()).collect();
        assert_eq!(filed, expect, "filed by increasing id");
        // Removing everything leaves it empty, holes included.
        for n in &nodes {
            users.remove(n);
        }
        assert!(users.is_empty());
        let Users::Many(many) = &users else { unreachable!() };
        assert_eq!(many.held(), 0, "no holes left");
    }

    fn dep_ids(deps: &[Arc<Node>]) -> Vec<u64> {
        let mut out: Vec<u64> = deps.iter().map(|d| d.id.get()).collect();
        out.sort_unstable();
        out
    }

    /// Each pending op is waited for once, however many ways it is found:
    /// a producer that is also a user, a write filed under several keys,
    /// thousands of users of one handle (the release used to check each
    /// against all found before it: quadratic).
    #[test]
    fn register_lists_each_dependency_once() {
        let mut order = OrderState::default();
        let handle: HandleKey = 7;
        let producer = node(1);
        assert!(order.register(&producer, &OpSpec::independent().producing(handle).using(handle)).is_empty());
        let users: Vec<Arc<Node>> = (2..5002).map(node).collect();
        for u in &users {
            assert_eq!(dep_ids(&order.register(u, &OpSpec::independent().using(handle))), [1]);
        }
        let release = node(6000);
        let deps = order.register(&release, &OpSpec::independent().using(handle).releasing(handle));
        assert_eq!(dep_ids(&deps), (1..5002).collect::<Vec<_>>());

        // One write under keys 1 and 2 (2 listed twice), another under 2:
        // an advance over both keys waits for each write once.
        let w1 = node(7000);
        let w2 = node(7001);
        let cells = Cells::keys([1, 2, 2]);
        assert!(order.register(&w1, &OpSpec::new(Order::Mutation { ordinal: 5, cells })).is_empty());
        let deps = order.register(&w2, &OpSpec::new(Order::Mutation { ordinal: 6, cells: Cells::keys([2]) }));
        assert!(deps.is_empty(), "another ordinal: no order between them");
        let floor = node(7002);
        let deps = order.register(&floor, &OpSpec::new(Order::FloorAdvance { ordinal: 6, scope: FloorScope::All }));
        assert_eq!(dep_ids(&deps), [7000, 7001]);
    }

    /// A handle's emptied track stays (no map removal and insertion per op
    /// of a loop using one query) until its release removes it; at most
    /// `KEPT_TRACKS` of them, whatever a client never releases.
    #[test]
    fn emptied_handle_tracks_are_kept_until_released_and_bounded() {
        let mut order = OrderState::default();
        let spec = |handle| OpSpec::independent().using(handle);
        let user = |id, handle| {
            let s = spec(handle);
            Arc::new(Node::new(
                OpId::from_raw(id).expect("non-zero"),
                None,
                Some(Role::new(&s.order, &s.uses, None)),
                None,
            ))
        };
        for id in 1..=3 {
            let u = user(id, 7);
            assert!(order.register(&u, &spec(7)).is_empty(), "the previous user is complete");
            order.complete(&u);
        }
        assert!(order.handles.get(&7).is_some_and(|t| t.producer.is_none() && t.users.is_empty()));
        // A track kept after many users were pending at once is a short
        // list again.
        let many: Vec<Arc<Node>> = (20..40).map(|id| user(id, 8)).collect();
        many.iter().for_each(|u| assert!(order.register(u, &spec(8)).is_empty()));
        assert!(order.handles.get(&8).is_some_and(|t| matches!(t.users, Users::Many(_))));
        many.iter().for_each(|u| order.complete(u));
        assert!(order.handles.get(&8).is_some_and(|t| matches!(&t.users, Users::Few(list) if list.is_empty())));
        assert!(order.register(&node(10), &OpSpec::independent().releasing(7)).is_empty());
        assert!(!order.handles.contains_key(&7), "the release removes the track");
        for h in 100..400 {
            let u = user(h, h);
            order.register(&u, &spec(h));
            order.complete(&u);
        }
        assert!(order.handles.len() <= KEPT_TRACKS + 1, "{} tracks kept", order.handles.len());
    }

    /// An op that completes on its submitting thread, with nothing to
    /// wait for, files no producer (nothing can name its handle before it
    /// is complete); one that waits, or may complete later, does.
    #[test]
    fn a_producer_completing_at_submission_is_not_filed() {
        let mut order = OrderState::default();
        let free = node(1);
        let spec = OpSpec::independent().producing(40);
        assert!(order.register_as(&free, &spec, Completion::HereWhenFree).is_empty());
        assert!(!order.handles.contains_key(&40), "a producer complete before its handle is out was filed");

        let later = node(2);
        assert!(order.register_as(&later, &OpSpec::independent().producing(41), Completion::Later).is_empty());
        assert_eq!(dep_ids(&order.register(&node(3), &OpSpec::independent().using(41))), [2]);

        // Held back by a pending user of its input: filed, so a consumer
        // of its handle waits for it.
        let blocker = node(4);
        assert!(order.register(&blocker, &OpSpec::independent().producing(42)).is_empty());
        let held = node(5);
        let spec = OpSpec::independent().using(42).producing(43);
        assert_eq!(dep_ids(&order.register_as(&held, &spec, Completion::HereWhenFree)), [4]);
        assert_eq!(dep_ids(&order.register(&node(6), &OpSpec::independent().using(43))), [5]);
    }
}
