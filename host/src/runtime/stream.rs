//! [`Stream`]: an in-order queue of work on a device, and the bookkeeping that keeps every
//! operand of queued work alive until the stream has passed it.
//!
//! Every device has a default stream; [`Device::new_stream`] makes more. Ops run on the calling
//! thread's *current* stream of the device: the default one, or the innermost one made current
//! with [`Stream::enter`] (a guard, like a scoped `torch.cuda.stream(s)`).
//!
//! ```no_run
//! use ferrocm::{Device, Tensor, ops::elementwise as ew};
//! let dev = Device::new()?;
//! let x = Tensor::from_slice(&dev, &[1.0f32, 2.0, 3.0], &[3])?;
//! let side = dev.new_stream()?;
//! let ready = dev.current_stream().record_event()?;   // x is uploaded on the default stream
//! side.wait_event(&ready)?;                            // side's work starts after that
//! let y = {
//!     let _on_side = side.enter();                     // ops below queue on `side`
//!     ew::exp(&x)?
//! };
//! side.synchronize()?;
//! assert_eq!(y.to_vec::<f32>()?.len(), 3);
//! # Ok::<(), ferrocm::Error>(())
//! ```

use super::buffer::RawBuffer;
use super::device::Device;
use super::event::Event;
use crate::backend::{Backend, RawEvent, RawStream};
use crate::error::{Error, Result};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, MutexGuard};

/// The allocations one piece of queued work (a launch, a copy) reads or writes.
pub(crate) type Held = Vec<Arc<RawBuffer>>;

/// Events used only to learn when a stream has passed some work (timing off), reused.
pub(crate) struct EventCache {
    backend: Arc<dyn Backend>,
    free: Mutex<Vec<RawEvent>>,
}

impl EventCache {
    pub(crate) fn new(backend: Arc<dyn Backend>) -> EventCache {
        EventCache { backend, free: Mutex::new(Vec::new()) }
    }

    fn get(&self) -> Result<RawEvent> {
        match self.free.lock().unwrap_or_else(|p| p.into_inner()).pop() {
            Some(e) => Ok(e),
            None => self.backend.create_event(false),
        }
    }

    fn put(&self, e: RawEvent) {
        self.free.lock().unwrap_or_else(|p| p.into_inner()).push(e);
    }
}

impl Drop for EventCache {
    fn drop(&mut self) {
        for e in self.free.get_mut().unwrap_or_else(|p| p.into_inner()).drain(..) {
            // SAFETY: cached events are complete and unused.
            unsafe { self.backend.destroy_event(e) };
        }
    }
}

/// The backend stream plus the operands of work queued on it that may still be running.
pub(crate) struct StreamCore {
    pub(crate) backend: Arc<dyn Backend>,
    pub(crate) raw: RawStream,
    pub(crate) device_id: u64,
    /// False for the device's default stream, which the backend owns.
    owned: bool,
    events: Arc<EventCache>,
    /// Oldest first: an event recorded after some work, and that work's operands.
    pending: Mutex<VecDeque<(RawEvent, Held)>>,
}

impl StreamCore {
    pub(crate) fn new(backend: Arc<dyn Backend>, raw: RawStream, device_id: u64, owned: bool, events: Arc<EventCache>) -> StreamCore {
        StreamCore { backend, raw, device_id, owned, events, pending: Mutex::new(VecDeque::new()) }
    }

    fn pending(&self) -> MutexGuard<'_, VecDeque<(RawEvent, Held)>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Called right after queueing work that uses `operands`: keeps them alive until the stream
    /// has passed the work, then lets them go (their blocks return to the memory pool).
    pub(crate) fn hold_until_passed(&self, operands: Held) -> Result<()> {
        if operands.is_empty() || self.backend.completes_inline() {
            return Ok(()); // already done: dropped here
        }
        let e = self.events.get()?;
        if let Err(err) = self.backend.record_event(e, self.raw) {
            // Without the event nothing says when the work is done: wait for it instead.
            self.events.put(e);
            let sync = self.backend.synchronize_stream(self.raw);
            drop(operands);
            return Err(sync.err().unwrap_or(err));
        }
        self.pending().push_back((e, operands));
        self.release_passed()
    }

    /// Drops the operands of the work the stream has passed (oldest first, up to the first
    /// still running).
    pub(crate) fn release_passed(&self) -> Result<()> {
        loop {
            // Pop under the lock, drop outside it: dropping returns blocks to the pool.
            let done = {
                let mut q = self.pending();
                match q.front() {
                    Some(&(e, _)) if self.backend.event_complete(e)? => q.pop_front(),
                    _ => None,
                }
            };
            match done {
                Some((e, operands)) => {
                    self.events.put(e);
                    drop(operands);
                }
                None => return Ok(()),
            }
        }
    }

    /// Waits for everything queued, then releases every held operand.
    pub(crate) fn synchronize(&self) -> Result<()> {
        self.backend.synchronize_stream(self.raw)?;
        self.release_all_complete();
        Ok(())
    }

    /// After a synchronisation: every held operand can go.
    pub(crate) fn release_all_complete(&self) {
        let drained: Vec<_> = self.pending().drain(..).collect();
        for (e, operands) in drained {
            self.events.put(e);
            drop(operands);
        }
    }
}

impl Drop for StreamCore {
    fn drop(&mut self) {
        // Operands must outlive the work that uses them: wait, even if that can fail.
        if self.backend.synchronize_stream(self.raw).is_ok() {
            self.release_all_complete();
        } else {
            // The device failed; the operands are leaked rather than handed out again while
            // the hardware might still touch them.
            std::mem::forget(std::mem::take(&mut *self.pending()));
        }
        if self.owned {
            // SAFETY: created by the runtime for this core, never used again.
            unsafe { self.backend.destroy_stream(self.raw) };
        }
    }
}

thread_local! {
    /// The streams made current on this thread with [`Stream::enter`], innermost last.
    static CURRENT: RefCell<Vec<Arc<StreamCore>>> = const { RefCell::new(Vec::new()) };
}

/// The innermost current stream of `device_id` on this thread, if one was entered.
pub(crate) fn current_core(device_id: u64) -> Option<Arc<StreamCore>> {
    CURRENT.with(|c| c.borrow().iter().rev().find(|s| s.device_id == device_id).cloned())
}

/// A queue of work on one device. Work queued on one stream runs in order; work on different
/// streams may overlap unless ordered with events ([`Stream::record_event`],
/// [`Stream::wait_event`]).
///
/// Get one with [`Device::default_stream`], [`Device::new_stream`] or [`Device::current_stream`].
/// Cheap to clone (a shared handle); the backend stream is destroyed, after waiting for its work,
/// when the last handle goes.
///
/// On the emulator every operation completes before its call returns, so any order streams and
/// events ask for holds trivially; on HIP they are real queues.
#[derive(Clone)]
pub struct Stream {
    device: Device,
    core: Arc<StreamCore>,
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Stream({:#x} on {})", self.core.raw.0, self.device.backend())
    }
}

impl PartialEq for Stream {
    fn eq(&self, other: &Stream) -> bool {
        Arc::ptr_eq(&self.core, &other.core)
    }
}
impl Eq for Stream {}

impl Stream {
    pub(crate) fn from_core(device: Device, core: Arc<StreamCore>) -> Stream {
        Stream { device, core }
    }

    pub(crate) fn core(&self) -> &Arc<StreamCore> {
        &self.core
    }

    /// The device the stream belongs to.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Makes this the current stream of its device on this thread until the guard is dropped:
    /// every op (and copy) on tensors of that device queues here. Guards nest; the innermost
    /// wins. The guard cannot leave the thread.
    pub fn enter(&self) -> StreamGuard {
        CURRENT.with(|c| c.borrow_mut().push(self.core.clone()));
        StreamGuard { core: self.core.clone(), _not_send: PhantomData }
    }

    /// Runs `f` with this stream current (see [`Stream::enter`]).
    pub fn run<R>(&self, f: impl FnOnce() -> R) -> R {
        let _guard = self.enter();
        f()
    }

    /// Waits until everything queued on the stream has finished.
    ///
    /// # Errors
    /// The backend's error, e.g. a kernel that faulted (HIP reports those asynchronously).
    pub fn synchronize(&self) -> Result<()> {
        self.core.synchronize()
    }

    /// A new event recorded at this point of the stream (timing enabled): it completes when
    /// everything queued before it has.
    ///
    /// # Errors
    /// The backend's error.
    pub fn record_event(&self) -> Result<Event> {
        let e = Event::new(&self.device)?;
        e.record(self)?;
        Ok(e)
    }

    /// Work queued on this stream from now on waits until `event` (at its last record) completes.
    ///
    /// # Errors
    /// [`Error::ForeignHandle`] for an event of another device; the backend's error.
    pub fn wait_event(&self, event: &Event) -> Result<()> {
        if !event.device().same_device(&self.device) {
            return Err(Error::ForeignHandle { what: "the event" });
        }
        self.core.backend.stream_wait_event(self.core.raw, event.raw())
    }

    /// Releases the operands held for work the stream has already passed (the runtime does this
    /// on every launch and allocation miss; call it to return memory to the pool sooner).
    ///
    /// # Errors
    /// The backend's error.
    pub fn release_passed(&self) -> Result<()> {
        self.core.release_passed()
    }
}

/// Keeps a stream current on this thread (see [`Stream::enter`]); dropping it restores the
/// previous current stream.
#[must_use = "the stream is current only while the guard lives"]
pub struct StreamGuard {
    core: Arc<StreamCore>,
    /// Thread-local state: the guard must be dropped on the thread that made it.
    _not_send: PhantomData<*const ()>,
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        CURRENT.with(|c| {
            let mut c = c.borrow_mut();
            // Normally the last entry; guards dropped out of order remove their own.
            if let Some(i) = c.iter().rposition(|s| Arc::ptr_eq(s, &self.core)) {
                c.remove(i);
            }
        });
    }
}
