//! [`Event`]: a marker in a stream, for ordering across streams and for GPU-side timing.

use super::device::Device;
use super::stream::Stream;
use crate::backend::RawEvent;
use crate::error::{Error, Result};

/// A point in a stream. It completes when everything queued on the stream before its last
/// [`record`](Event::record) has; other streams can wait for it ([`Stream::wait_event`]) and two
/// of them time the work between ([`Event::elapsed_ms`]).
///
/// Get one with [`Stream::record_event`] (new and recorded) or [`Event::new`] (not yet recorded).
///
/// ```no_run
/// use ferrocm::{Device, Tensor, ops::softmax};
/// let dev = Device::new()?;
/// let s = dev.current_stream();
/// let x = Tensor::from_slice(&dev, &vec![1.0f32; 4096], &[64, 64])?;
/// let start = s.record_event()?;
/// let y = softmax::softmax(&x)?;
/// let end = s.record_event()?;
/// end.synchronize()?;
/// println!("softmax: {:.3} ms", start.elapsed_ms(&end)?); // GPU time on HIP, wall time on the emulator
/// # Ok::<(), ferrocm::Error>(())
/// ```
pub struct Event {
    device: Device,
    raw: RawEvent,
}

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Event({:#x} on {})", self.raw.0, self.device.backend())
    }
}

impl Event {
    /// A new event of `device`, not yet recorded (waiting for it returns at once), with timing.
    ///
    /// # Errors
    /// The backend's error.
    pub fn new(device: &Device) -> Result<Event> {
        let raw = device.backend_impl().create_event(true)?;
        Ok(Event { device: device.clone(), raw })
    }

    /// A new event without timing (cheaper on HIP), recorded on `stream`: for knowing when the
    /// stream has passed some work.
    pub(crate) fn recorded_untimed(stream: &Stream) -> Result<Event> {
        let device = stream.device();
        let raw = device.backend_impl().create_event(false)?;
        let e = Event { device: device.clone(), raw };
        e.record(stream)?;
        Ok(e)
    }

    pub(crate) fn raw(&self) -> RawEvent {
        self.raw
    }

    /// The device of the event.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Records the event at the current end of `stream` (replacing any earlier record).
    ///
    /// # Errors
    /// [`Error::ForeignHandle`] for a stream of another device; the backend's error.
    pub fn record(&self, stream: &Stream) -> Result<()> {
        if !stream.device().same_device(&self.device) {
            return Err(Error::ForeignHandle { what: "the stream" });
        }
        self.device.backend_impl().record_event(self.raw, stream.core().raw)
    }

    /// True once the recorded work has completed (always true before the first record).
    ///
    /// # Errors
    /// The backend's error (a failed kernel surfaces here on HIP).
    pub fn is_complete(&self) -> Result<bool> {
        self.device.backend_impl().event_complete(self.raw)
    }

    /// Blocks until the recorded work has completed.
    ///
    /// # Errors
    /// The backend's error.
    pub fn synchronize(&self) -> Result<()> {
        self.device.backend_impl().synchronize_event(self.raw)
    }

    /// Milliseconds from this event to `end`, both recorded and complete: GPU time on HIP, host
    /// wall time between the two records on the emulator (where work completes as it is queued).
    ///
    /// # Errors
    /// [`Error::ForeignHandle`] for events of different devices; the backend's error for events
    /// not recorded or not complete.
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32> {
        if !end.device.same_device(&self.device) {
            return Err(Error::ForeignHandle { what: "the end event" });
        }
        self.device.backend_impl().elapsed_ms(self.raw, end.raw)
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once. HIP releases a pending event's resources
        // when it completes; the emulator's events are plain records.
        unsafe { self.device.backend_impl().destroy_event(self.raw) };
    }
}
