//! The runtime: [`Device`](crate::Device) (backend, code object, kernel cache), its memory
//! ([`MemoryPool`](crate::MemoryPool), [`Buffer`](crate::Buffer), [`PinnedBuffer`](crate::PinnedBuffer)),
//! its queues ([`Stream`](crate::Stream), [`Event`](crate::Event)), asynchronous copies, and the
//! launch checks. The invariant everything here keeps: memory that queued work reads or writes
//! is not freed, reused or handed back to the host until the stream has passed that work.

pub(crate) mod buffer;
mod copy;
pub(crate) mod device;
pub(crate) mod event;
pub(crate) mod launch;
pub(crate) mod pinned;
pub(crate) mod pool;
pub(crate) mod stream;
