//! Instances: the `{vtable, context}` bundle C holds, the context behind
//! it, and finding the context again from what C passes in.

use ovstage_types::{Error, Result};
use stage::Stage;

use crate::abi::api::ovstage_vtable_t;
use crate::abi::api_types::{ovstage_context_t, ovstage_instance_t};
use crate::abi::path_dictionary::{path_dictionary_context_t, path_dictionary_instance_t};
use crate::abi::path_dictionary_vtable::path_dictionary_vtable_t;
use crate::error::guard;
use crate::log;
use crate::process::{self, ProcessRef};
use crate::results::Results;

/// Marks a live context; cleared when it is destroyed, so a double destroy
/// or a call through a destroyed instance whose memory was not reused yet
/// is caught instead of running on freed state.
const LIVE: u64 = 0x6f76_7374_6167_6521;

/// Everything an instance owns. C sees it only as `ovstage_context_t*`.
pub(crate) struct Context {
    magic: u64,
    /// The stage.
    pub(crate) stage: Stage,
    /// The path dictionary bundle handed out by `get_path_dictionary`; its
    /// context is this `Context`.
    pub(crate) dictionary: path_dictionary_instance_t,
    /// Fetched results C holds until it releases them.
    pub(crate) results: Results,
    /// The process reference and the settings captured with it.
    pub(crate) process: ProcessRef,
}

impl Context {
    /// The context as C's opaque data-plane pointer.
    fn as_c(&self) -> *mut ovstage_context_t {
        (self as *const Context).cast_mut().cast()
    }
}

/// The context behind a data-plane `context` pointer.
///
/// # Safety
/// `ctx` is NULL or a context of a live instance (the contract forbids
/// calls through destroyed instances).
pub(crate) unsafe fn context<'a>(ctx: *mut ovstage_context_t, call: &str) -> Result<&'a Context> {
    if ctx.is_null() {
        return Err(Error::invalid_argument(format!("{call}: instance context is NULL")));
    }
    // SAFETY: a non-NULL context comes from `create` and is live per the
    // caller; `Context` is what it points to.
    let c = unsafe { &*ctx.cast::<Context>() };
    if c.magic != LIVE {
        return Err(Error::invalid_handle(format!("{call}: the instance was destroyed or is not an ovstage instance")));
    }
    Ok(c)
}

/// The context behind a path dictionary's `context` pointer.
///
/// # Safety
/// As for [`context`].
pub(crate) unsafe fn dictionary_context<'a>(ctx: *mut path_dictionary_context_t, call: &str) -> Result<&'a Context> {
    // SAFETY: a dictionary's context is its instance's context.
    unsafe { context(ctx.cast(), call) }
}

/// The context of an instance bundle.
///
/// # Safety
/// `inst` is NULL or a live instance.
pub(crate) unsafe fn from_instance<'a>(inst: *mut ovstage_instance_t, call: &str) -> Result<&'a Context> {
    if inst.is_null() {
        return Err(Error::invalid_argument(format!("{call}: instance is NULL")));
    }
    // SAFETY: non-NULL and live per the caller.
    let ctx = unsafe { (*inst).context };
    // SAFETY: forwarded.
    unsafe { context(ctx, call) }
}

/// A new instance named `name` (the logic of `ovstage_create_instance`):
/// its bundle, whose data plane is `vtable` and whose path dictionary is
/// `dictionary`. Freed by [`destroy`].
pub(crate) fn create(
    name: &str,
    vtable: &'static ovstage_vtable_t,
    dictionary: &'static path_dictionary_vtable_t,
) -> *mut ovstage_instance_t {
    let process = process::acquire();
    let stage = Stage::with_config(name, process.settings.stage_config());
    // Reads build their groups' `DLTensor`s on the lane that runs them, so
    // `fetch_read_next` only hands them over.
    stage.set_group_preparer(Box::new(ovstage_dlpack::prepare)).expect("a new stage has no preparer");
    let ctx = Box::new(Context {
        magic: LIVE,
        stage,
        dictionary: path_dictionary_instance_t {
            vtable: std::ptr::from_ref(dictionary).cast_mut(),
            context: std::ptr::null_mut(),
        },
        results: Results::default(),
        process,
    });
    let ctx = Box::into_raw(ctx);
    // SAFETY: just allocated; the dictionary's context is the instance
    // context itself.
    unsafe { (*ctx).dictionary.context = ctx.cast() };
    // SAFETY: just allocated.
    let c_ctx = unsafe { (*ctx).as_c() };
    let bundle = Box::into_raw(Box::new(ovstage_instance_t { vtable, context: c_ctx }));
    log::emit(log::Severity::Info, "ovstage", &format!("instance '{name}' created"));
    bundle
}

/// Destroys an instance (the logic of `ovstage_destroy_instance`): NULL is
/// fine, a destroyed or foreign one is an error.
///
/// # Safety
/// `inst` is NULL or an undestroyed instance from [`create`].
pub(crate) unsafe fn destroy(inst: *mut ovstage_instance_t) -> Result<()> {
    if inst.is_null() {
        return Ok(());
    }
    // SAFETY: forwarded.
    unsafe { from_instance(inst, "ovstage_destroy_instance") }?;
    // SAFETY: `inst` and its context were made by `create` with
    // `Box::into_raw` and are destroyed only here, once.
    let (bundle, mut ctx) = unsafe { (Box::from_raw(inst), Box::from_raw((*inst).context.cast::<Context>())) };
    ctx.magic = 0;
    let name = ctx.stage.name().to_owned();
    // Results still held (and dictionary error messages never released)
    // are dropped before the stage (they pin its storage); the stage then
    // finishes outstanding ops.
    drop(std::mem::take(&mut ctx.results));
    drop(ctx);
    drop(bundle);
    log::emit(log::Severity::Info, "ovstage", &format!("instance '{name}' destroyed"));
    Ok(())
}

/// Runs flat export `call` with the instance's context: NULL or destroyed
/// instances are reported, panics become INTERNAL.
///
/// # Safety
/// `inst` is NULL or a live instance.
pub(crate) unsafe fn with_instance<R: crate::error::Failure>(
    inst: *mut ovstage_instance_t,
    call: &str,
    body: impl FnOnce(&Context) -> R,
) -> R {
    guard(call, || {
        // SAFETY: forwarded.
        match unsafe { from_instance(inst, call) } {
            Ok(c) => body(c),
            Err(e) => {
                crate::error::report(&e);
                R::failure(e.status())
            }
        }
    })
}
