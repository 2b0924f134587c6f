//! Mapped writes: the stage hands out writable buffers, the caller fills
//! them, and each committed buffer becomes the new version's storage
//! directly (no staging copy). A session publishes nothing until a group is
//! committed; an abandoned session publishes nothing at all.

use std::sync::{Arc, Mutex, OnceLock};

use ovstage_sched::{Cells, Failure, Job, OpSpec, Order, Unboxed};
use ovstage_types::{
    AttributeMode, DType, Device, Error, MapHandle, OpId, Ordinal, PrimMode, QueryHandle, Result, Semantic, Status,
    Timeout,
};
use smallvec::SmallVec;

use crate::api::{AttrRef, Enqueued};
use crate::family::Family;
use crate::group::{AttributeMeta, PrimGroup};
use crate::metadata::{self, Reserved};
use crate::mutation::{Ctx, Payload, Reach, RowsOf, Targets};
use crate::schema::{Schema, Storage, ValueKind};
use crate::stage::{Stage, StageInner, lock};
use crate::state::{MapGroup, MapState, OpCell, Session, Setup};
use crate::store::backend::Staging;
use crate::tensor::{Element, TensorDesc};
use crate::transport::check_semantic;
use crate::write::INLINE_WRITE_BYTES;

/// Sessions over at most this many prims are set up on the mapping thread
/// when nothing holds them back (see `enqueue_map`).
const INLINE_SETUP_PRIMS: usize = 256;

const CALL: &str = "map_attribute";

/// What to map.
#[derive(Clone, Debug)]
pub struct MapDesc<'a> {
    /// The attribute.
    pub attribute: AttrRef<'a>,
    /// Element type with the tuple width in lanes; required to create the
    /// attribute, `None` to use the existing one.
    pub dtype: Option<DType>,
    /// Semantic recorded when the attribute is created (`NONE` adopts the
    /// existing one).
    pub semantic: Semantic,
    /// UPSERT or INSERT.
    pub prim_mode: PrimMode,
    /// `REJECT` fails setup when a target prim carries the attribute with
    /// another schema; `FORCE` (which needs a dtype) accepts it, and each
    /// commit replaces that schema with the mapped one.
    pub attribute_mode: AttributeMode,
}

impl<'a> MapDesc<'a> {
    /// Maps `attribute` with its existing schema (UPSERT).
    pub fn existing(attribute: impl Into<AttrRef<'a>>) -> MapDesc<'a> {
        MapDesc {
            attribute: attribute.into(),
            dtype: None,
            semantic: Semantic::None,
            prim_mode: PrimMode::Upsert,
            attribute_mode: AttributeMode::Reject,
        }
    }

    /// Maps `attribute` with element type `dtype` (UPSERT).
    pub fn new(attribute: impl Into<AttrRef<'a>>, dtype: DType) -> MapDesc<'a> {
        MapDesc { dtype: Some(dtype), ..MapDesc::existing(attribute) }
    }
}

impl MapGroup {
    /// The prims covered (all of the query's, in its order).
    pub fn prims(&self) -> &PrimGroup {
        &self.prims
    }

    /// Write floor and layout generation when the session was set up.
    pub fn meta(&self) -> AttributeMeta {
        self.meta
    }

    /// Whether the attribute is an array (one tensor per prim).
    pub fn is_array(&self) -> bool {
        self.offsets.is_some()
    }

    /// Number of tensors: 1 for fixed-size attributes, one per prim for
    /// arrays.
    pub fn tensor_count(&self) -> usize {
        self.offsets.as_ref().map_or(1, |o| o.len() - 1)
    }

    /// The dimensions of one element after the row count (components as
    /// trailing dimensions; none for a scalar).
    pub fn element_dims(&self) -> SmallVec<[u64; 2]> {
        self.schema.element_dims()
    }

    /// An array session's tensors: each one's byte offset in the buffer
    /// and its row count; empty for a fixed-size session.
    pub fn array_tensors(&self) -> impl ExactSizeIterator<Item = (u64, u64)> + Clone + '_ {
        let element = self.schema.row_bytes().max(1) as u64;
        let offsets = self.offsets.as_deref().unwrap_or(&[]);
        offsets.windows(2).map(move |w| (w[0], (w[1] - w[0]) / element))
    }

    /// Shape of tensor `i` (scalar lanes; components as trailing dimensions).
    pub fn shape(&self, i: usize) -> SmallVec<[u64; 3]> {
        let element = self.schema.row_bytes().max(1) as u64;
        match &self.offsets {
            None => self.schema.read_shape(self.prims.count.into()),
            Some(o) => self.schema.read_shape((o[i + 1] - o[i]) / element),
        }
    }

    /// Element type of the tensors (`lanes == 1`).
    pub fn dtype(&self) -> DType {
        self.schema.dtype.scalar()
    }

    /// Where the writable buffer is (the column's memory; host memory in
    /// the CPU store).
    pub fn device(&self) -> Device {
        self.buf.device()
    }

    /// Tensor `i`'s description (compact row-major), as a binding exports
    /// it.
    pub fn desc(&self, i: usize) -> TensorDesc {
        TensorDesc::compact(self.device(), self.dtype(), &self.shape(i))
    }

    /// The whole writable buffer.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        self.buf.bytes_mut()
    }

    /// The writable bytes of tensor `i` (the whole buffer for fixed-size).
    pub fn tensor_bytes_mut(&mut self, i: usize) -> &mut [u8] {
        match &self.offsets {
            None => self.buf.bytes_mut(),
            Some(o) => {
                let (a, b) = (o[i] as usize, o[i + 1] as usize);
                &mut self.buf.bytes_mut()[a..b]
            }
        }
    }

    /// The writable values of tensor `i` as `T` (which must match the
    /// dtype).
    pub fn values_mut<T: Element>(&mut self, i: usize) -> Result<&mut [T]> {
        if T::DTYPE != self.dtype() {
            return Err(Error::invalid_argument(format!("the group holds {} values, not {}", self.dtype(), T::DTYPE)));
        }
        let bytes = self.tensor_bytes_mut(i);
        if bytes.is_empty() {
            return Ok(&mut []);
        }
        bytemuck::try_cast_slice_mut(bytes).map_err(|e| Error::internal(format!("misaligned map buffer: {e}")))
    }
}

impl Stage {
    /// Enqueues a map session of `desc.attribute` over the query's prims at
    /// `ordinal`. `element_sizes` (one element count per prim) makes it an
    /// array session. The handle can be used at once; fetch the writable
    /// group with [`Stage::fetch_map_next`].
    pub fn map_attribute(
        &self,
        query: QueryHandle,
        desc: MapDesc<'_>,
        ordinal: impl Into<Ordinal>,
        element_sizes: Option<&[u64]>,
    ) -> Result<Enqueued<MapHandle>> {
        self.inner.enqueue_map(query, desc, ordinal.into().get(), element_sizes)
    }

    /// The next writable group of a map session, waiting up to `timeout` for
    /// its setup. `Ok(None)` once every group was fetched.
    pub fn fetch_map_next(&self, map: MapHandle, timeout: Timeout) -> Result<Option<MapGroup>> {
        let state = self.inner.map_state(map, "fetch_map_next")?;
        if state.setup.get().is_none() {
            self.inner.await_result(state.op.get().expect("set at enqueue"), timeout, "fetch_map_next", map)?;
        }
        match state.setup.get() {
            Some(Ok(_)) => Ok(lock(&state.session).unfetched.pop_front()),
            Some(Err(e)) => Err(e.clone()),
            // The op failed before its setup ran (an ordinal conflict found
            // at admission): its error is the session's.
            None => Err(self
                .op_error(state.op.get().expect("set at enqueue"))
                .unwrap_or_else(|| Error::internal(format!("fetch_map_next: {map} completed without a setup result")))),
        }
    }

    /// Enqueues the commit of one group at the session's ordinal, ordered
    /// like a write. A failed commit ends the session (it then only reports
    /// the failure).
    pub fn unmap_group(&self, map: MapHandle, group: MapGroup) -> Result<OpId> {
        let state = self.inner.map_state(map, "unmap_group")?;
        if group.session != state.id {
            return Err(Error::invalid_argument(format!(
                "unmap_group: the group belongs to another map session than {map}"
            )));
        }
        self.inner.enqueue_commit(&state, vec![group], false)
    }

    /// Enqueues the commit of `groups` (fetched and not committed yet) and
    /// of every group never fetched, and ends the session; the handle is
    /// invalid from now on.
    pub fn unmap_attribute(&self, map: MapHandle, groups: impl IntoIterator<Item = MapGroup>) -> Result<OpId> {
        let state = self.inner.map_state(map, "unmap_attribute")?;
        let groups: Vec<MapGroup> = groups.into_iter().collect();
        if groups.iter().any(|g| g.session != state.id) {
            return Err(Error::invalid_argument(format!(
                "unmap_attribute: a group belongs to another map session than {map}"
            )));
        }
        self.inner.maps.remove(map.get());
        self.inner.enqueue_commit(&state, groups, true)
    }
}

impl StageInner {
    fn map_state(&self, map: MapHandle, call: &str) -> Result<Arc<MapState>> {
        self.maps
            .get(map.get())
            .ok_or_else(|| Error::invalid_handle(format!("{call}: {map} is unknown or was released")))
    }

    fn enqueue_map(
        self: &Arc<Self>,
        query: QueryHandle,
        desc: MapDesc<'_>,
        ordinal: u64,
        element_sizes: Option<&[u64]>,
    ) -> Result<Enqueued<MapHandle>> {
        let q = self.query(query, CALL)?;
        let token = self.attr_token(desc.attribute, CALL)?;
        let family = self.family(token)?;
        let name = family.name_text.clone();
        let ctx = Ctx { call: CALL, attribute: &name, ordinal };
        let force = desc.attribute_mode == AttributeMode::Force;
        if force && desc.dtype.is_none() {
            return Err(ctx.err(
                Status::InvalidArgument,
                "ATTRIBUTE_MODE_FORCE needs a dtype: the schema that replaces the existing one",
            ));
        }
        if force && self.reserved.lookup(token).is_some() {
            return Err(ctx.err(
                Status::InvalidArgument,
                "reserved metadata attributes accept only ATTRIBUTE_MODE_REJECT: their schema is fixed",
            ));
        }
        let kind = if element_sizes.is_some() { ValueKind::Array } else { ValueKind::Fixed };
        let mut semantic = desc.semantic;
        if let Some(dtype) = desc.dtype {
            if dtype.element_bytes().is_none() {
                return Err(ctx.err(Status::InvalidArgument, format!("dtype {dtype} has no whole-byte element size")));
            }
            crate::write::check_storable(dtype, &ctx)?;
            let storage = Storage { dtype, kind };
            if let Some(r) = self.reserved.lookup(token) {
                semantic = metadata::check_write(r, CALL, storage, semantic)?;
            }
            check_semantic(semantic, storage).map_err(|e| ctx.err(e.status(), e.message()))?;
        } else if let Some(r) = self.reserved.lookup(token).filter(|r| r.is_derived()) {
            metadata::check_write(r, CALL, Storage { dtype: DType::U64, kind }, semantic)?;
        }
        if let (Some(sizes), Some(r)) = (element_sizes, q.ready())
            && sizes.len() != r.prims.len()
        {
            return Err(ctx.err(
                Status::InvalidArgument,
                format!("element_sizes has {} entries but the query has {} prims", sizes.len(), r.prims.len()),
            ));
        }
        if let Some(sizes) = element_sizes {
            // The element size is known when the dtype is given or the
            // attribute has one array storage; at least 1 byte otherwise.
            // Setup checks again with the storage it decides.
            let element = match desc.dtype {
                Some(dtype) => Storage { dtype, kind }.row_bytes(),
                None => match existing_storage(&family, kind) {
                    Ok(storage) => storage.row_bytes(),
                    Err(_) => 1,
                },
            };
            if let Err(e) = array_layout(sizes, element) {
                let prim = e.entry.and_then(|i| q.ready().and_then(|r| r.prims.get(i).copied()));
                let err = ctx.err(Status::InvalidArgument, e.message);
                return Err(match prim {
                    Some(p) => err.with_prim(self.describe(p)),
                    None => err,
                });
            }
        }
        self.map_setup_check_now(&q, &family, desc.dtype, kind, semantic, (desc.prim_mode, desc.attribute_mode), &ctx)?;
        let sizes: Option<Vec<u64>> = element_sizes.map(<[u64]>::to_vec);
        let key = self.next_handle_key();
        let state = Arc::new(MapState {
            key,
            id: self.next_group_id(),
            op: OpCell::default(),
            ordinal,
            query: q.clone(),
            family: family.clone(),
            prim_mode: desc.prim_mode,
            attribute_mode: desc.attribute_mode,
            setup: OnceLock::new(),
            session: Mutex::new(Session::default()),
        });
        let (owner, job_state) = (self.clone(), state.clone());
        let (dtype, reserved) = (desc.dtype, self.reserved.lookup(token));
        let job: Job = Box::new(move || {
            let setup = owner.set_up(&job_state, dtype, kind, semantic, reserved, sizes.as_deref());
            let failure = setup.as_ref().err().cloned();
            let _ = job_state.setup.set(setup);
            failure.map_or(Ok(()), |e| Err(Failure::from(e)))
        });
        let spec = OpSpec::new(order(force, ordinal, family.id)).using(q.key).producing(key).labelled("map_attribute");
        // The setup of a session over a few prims (a schema decision and
        // an allocation) runs on this thread when nothing holds it back:
        // a lane handoff, with a lane to wake, cost more.
        let few = q.ready().is_some_and(|r| r.prims.len() <= INLINE_SETUP_PRIMS);
        let spec = if few { spec.on_submitter_when_ready() } else { spec };
        let targets = Targets::whole(&q);
        // The session keeps its ticket (its ordinal stays pending: nothing
        // merges past it) until the commit ending it has run. A conflict
        // found at admission is the setup's error: fetches report it even
        // once the op is released.
        let conflicted = state.clone();
        let reach = Reach::Families(&[(&family, &targets)]);
        let op = self.submit_mutation_or(
            &spec,
            reach,
            ordinal,
            CALL,
            |ticket| {
                lock(&state.session).ticket = Some(ticket);
                job
            },
            move |e| {
                let _ = conflicted.setup.set(Err(e.clone()));
            },
        )?;
        state.op.set(op);
        let raw = self.maps.insert_with(|_| state);
        Ok(Enqueued { handle: MapHandle::from_raw(raw).expect("never 0"), op })
    }

    /// The setup errors provable now, reported at enqueue as the published
    /// library does: with the query's prims known and no pending op that
    /// could change the attribute's schema or remove a prim, the schema a
    /// setup would decide and the INSERT check give the same answer now.
    #[allow(clippy::too_many_arguments)]
    fn map_setup_check_now(
        &self,
        q: &crate::state::QueryState,
        family: &Family,
        dtype: Option<DType>,
        kind: ValueKind,
        semantic: Semantic,
        (prim_mode, mode): (PrimMode, AttributeMode),
        ctx: &Ctx<'_>,
    ) -> Result<()> {
        let Some(resolved) = q.ready() else { return Ok(()) };
        if !family.pending.is_empty() || !self.floors.pending_all.is_empty() {
            return Ok(());
        }
        let storage = match dtype {
            Some(dtype) => Storage { dtype, kind },
            None => existing_storage(family, kind).map_err(|(status, m)| ctx.err(status, m))?,
        };
        self.plan_schema(family, storage, semantic, mode, &resolved.prims, ctx)?;
        if prim_mode == PrimMode::Insert {
            let table = lock(&self.prims);
            if let Some(p) = resolved.prims.iter().find(|p| table.is_live(**p)) {
                return Err(self.insert_conflict(ctx, *p));
            }
        }
        Ok(())
    }

    /// Decides the schema and allocates the writable group.
    fn set_up(
        &self,
        state: &MapState,
        dtype: Option<DType>,
        kind: ValueKind,
        semantic: Semantic,
        reserved: Option<Reserved>,
        sizes: Option<&[u64]>,
    ) -> Result<Setup> {
        let resolved = state.query.at_execution().map_err(|f| f.error)?;
        let prims = &resolved.prims;
        let family = &state.family;
        let ctx = Ctx { call: CALL, attribute: &family.name_text, ordinal: state.ordinal };
        let storage = match dtype {
            Some(dtype) => Storage { dtype, kind },
            None => existing_storage(family, kind).map_err(|(status, m)| ctx.err(status, m))?,
        };
        let semantic = match reserved {
            Some(r) => metadata::check_write(r, CALL, storage, semantic)?,
            None => semantic,
        };
        let mut plan = self.plan_schema(family, storage, semantic, state.attribute_mode, prims, &ctx)?;
        if let Some(sizes) = sizes
            && sizes.len() != prims.len()
        {
            return Err(ctx.err(
                Status::InvalidArgument,
                format!("element_sizes has {} entries but the query has {} prims", sizes.len(), prims.len()),
            ));
        }
        if state.prim_mode == PrimMode::Insert {
            let table = lock(&self.prims);
            if let Some(p) = prims.iter().find(|p| table.is_live(**p)) {
                return Err(self.insert_conflict(&ctx, *p));
            }
        }
        // The column the commits will publish to (created now when it is
        // a new schema): its role is the group's when none is declared.
        let column = plan.take_column(family, self.config.column_limits());
        let schema = Schema {
            dtype: storage.dtype,
            kind,
            semantic: if semantic == Semantic::None { column.semantic() } else { semantic },
        };
        let element = storage.row_bytes();
        let (len, offsets) = match sizes {
            None => (prims.len().checked_mul(element).ok_or_else(|| too_large(&ctx))?, None),
            Some(sizes) => {
                let offsets = array_layout(sizes, element).map_err(|e| {
                    let err = ctx.err(Status::InvalidArgument, e.message);
                    match e.entry.and_then(|i| prims.get(i)) {
                        Some(p) => err.with_prim(self.describe(*p)),
                        None => err,
                    }
                })?;
                (offsets.last().copied().unwrap_or(0) as usize, Some(offsets.into()))
            }
        };
        let generation = column.lock().layout_generation();
        // The group's size is the client's choice: a failed allocation fails
        // the session, not the process.
        let buf = Staging::alloc(&column.memory, len).map_err(|e| ctx.err(Status::OutOfMemory, e))?;
        let group = MapGroup {
            session: state.id,
            buf,
            offsets,
            schema,
            prims: PrimGroup { list: resolved.list, offset: 0, count: prims.len() as u32, index_map: None },
            meta: AttributeMeta { write_floor: Ordinal(self.floors.committed(family)), layout_generation: generation },
        };
        lock(&state.session).unfetched.push_back(group);
        Ok(Setup { schema })
    }

    fn enqueue_commit(self: &Arc<Self>, state: &Arc<MapState>, groups: Vec<MapGroup>, end: bool) -> Result<OpId> {
        let force = state.attribute_mode == AttributeMode::Force;
        let spec = OpSpec::new(order(force, state.ordinal, state.family.id)).using(state.key).labelled(if end {
            "unmap_attribute"
        } else {
            "unmap_group"
        });
        let spec = if end { spec.releasing(state.key) } else { spec };
        // A small commit of host memory runs on the committing thread when
        // nothing holds it back, as a small write does: handing it to a
        // lane (waking one that sleeps) cost more than the commit.
        let bytes = groups.iter().try_fold(0u64, |sum, g| match g.buf.device() {
            Device::Host => Some(sum + g.buf.len() as u64),
            Device::Cuda(_) => None,
        });
        let spec = if bytes.is_some_and(|b| b <= INLINE_WRITE_BYTES) { spec.on_submitter_when_ready() } else { spec };
        // The commit ending the session takes its ticket and drops it once
        // it has run (or at once when refused).
        let ticket = if end { lock(&state.session).ticket.take() } else { None };
        let (owner, job_state) = (self.clone(), state.clone());
        let call = if end { "unmap_attribute" } else { "unmap_group" };
        self.sched.submit_with(&spec, || {
            // A commit lands at the session's ordinal: refused once a floor
            // advance over it has been submitted (that data is sealed).
            self.check_floor(Some(&state.family), state.ordinal, call, true)?;
            Ok(Unboxed(move || {
                let result = owner.commit_groups(&job_state, groups, end);
                drop(ticket);
                result.map_err(Failure::from)
            }))
        })
    }

    fn commit_groups(&self, state: &MapState, mut groups: Vec<MapGroup>, end: bool) -> Result<()> {
        let setup = match state.setup.get() {
            Some(Ok(setup)) => *setup,
            Some(Err(e)) => return Err(e.clone()),
            None => return Err(Error::internal("a map commit ran before its setup")),
        };
        {
            let mut session = lock(&state.session);
            if let Some(e) = &session.failed {
                return Err(e.clone());
            }
            if end {
                groups.extend(session.unfetched.drain(..));
            }
        }
        for group in groups {
            if let Err(e) = self.commit_group(state, setup, group) {
                lock(&state.session).failed = Some(e.clone());
                return Err(e);
            }
        }
        Ok(())
    }

    /// Publishes one group: its buffer becomes the version's storage.
    fn commit_group(&self, state: &MapState, setup: Setup, group: MapGroup) -> Result<()> {
        let q = &state.query;
        let resolved = q.at_execution().map_err(|f| f.error)?;
        let family = &state.family;
        let ordinal = state.ordinal;
        let ctx = Ctx { call: "unmap_group", attribute: &family.name_text, ordinal };
        let storage = setup.schema.storage();
        // What setup checked may have changed since: decide again.
        let mut plan =
            self.plan_schema(family, storage, setup.schema.semantic, state.attribute_mode, &resolved.prims, &ctx)?;
        let targets = Targets::whole(q);
        self.create_prims(q, &[(&family.name_text, &targets)], ordinal, state.prim_mode, "unmap_group")?;
        let column = plan.take_column(family, self.config.column_limits());
        self.end_replaced(family, plan.replaced, &ctx)?;
        let rows = RowsOf::Prims { q, prims: &resolved.prims, whole: true };
        let payload = Payload::Values { data: group.buf.into_buffer(), offsets: group.offsets };
        self.commit(family, &column, rows, payload, Some((setup.schema.semantic, "the map")), &ctx)
    }
}

/// How a map session's ops are ordered: a forcing session's setup and
/// commits decide which schema each prim carries, so they run in
/// submission order with every mutation of the attribute (as a forcing
/// write does).
fn order(force: bool, ordinal: u64, family: u64) -> Order {
    let cells = Cells::one(family);
    if force { Order::Barrier { ordinal, cells } } else { Order::Mutation { ordinal, cells } }
}

/// The one storage of `kind` the family's columns have, or why there is
/// none to adopt.
fn existing_storage(family: &Family, kind: ValueKind) -> std::result::Result<Storage, (Status, &'static str)> {
    let mut found: Vec<Storage> = Vec::new();
    for s in family.columns().iter().map(|c| c.storage).filter(|s| s.kind == kind) {
        if !found.contains(&s) {
            found.push(s);
        }
    }
    match found[..] {
        [one] => Ok(one),
        // As the published library: creating an attribute needs a dtype.
        [] => Err((Status::NotSupported, "the attribute does not exist yet: a dtype is required to create it")),
        _ => Err((Status::InvalidArgument, "the attribute has several schemas: give a dtype")),
    }
}

/// Why an array session's layout was refused.
struct LayoutError {
    /// The `element_sizes` entry (= prim of the query) where it overflows.
    entry: Option<usize>,
    message: String,
}

/// Byte offsets of an array session's prims (one more than `sizes`), with
/// every product and sum checked: a layout whose size no allocation can
/// have is refused, naming the entry where it overflows.
fn array_layout(sizes: &[u64], element: usize) -> std::result::Result<Vec<u64>, LayoutError> {
    let mut offsets = Vec::new();
    offsets.try_reserve_exact(sizes.len() + 1).map_err(|_| LayoutError {
        entry: None,
        message: format!("element_sizes has too many entries ({})", sizes.len()),
    })?;
    offsets.push(0u64);
    let mut end = 0u64;
    for (i, n) in sizes.iter().enumerate() {
        end = n
            .checked_mul(element as u64)
            .and_then(|bytes| end.checked_add(bytes))
            .filter(|end| *end <= isize::MAX as u64)
            .ok_or_else(|| LayoutError {
                entry: Some(i),
                message: format!(
                    "element_sizes[{i}] = {n}: the session's elements of {element} bytes would exceed the {} bytes one buffer can address",
                    isize::MAX
                ),
            })?;
        offsets.push(end);
    }
    Ok(offsets)
}

fn too_large(ctx: &Ctx<'_>) -> Error {
    ctx.err(Status::InvalidArgument, "the session's size exceeds what one buffer can address")
}
