//! Streams and events with HIP's semantics: a stream is an in-order queue drained by its own
//! worker thread, so work really runs after the enqueueing call has returned (a launch's
//! operands freed too early, or a missing wait between streams, show up as faults or wrong
//! results, as on a GPU); an event completes when its stream reaches it.

use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

/// One piece of queued work.
pub type Work = Box<dyn FnOnce() + Send>;

/// How far a stream has got: tickets are handed out in queue order.
#[derive(Default)]
struct Progress {
    queued: u64,
    done: u64,
}

/// An in-order queue with a worker thread.
pub struct Stream {
    tx: Mutex<Option<Sender<(u64, Work)>>>,
    progress: Arc<(Mutex<Progress>, Condvar)>,
    worker: Mutex<Option<JoinHandle<()>>>,
}

impl Stream {
    pub fn new() -> Arc<Stream> {
        let (tx, rx) = channel::<(u64, Work)>();
        let progress: Arc<(Mutex<Progress>, Condvar)> = Arc::default();
        let p = progress.clone();
        let worker = std::thread::Builder::new()
            .name("hip-shim-stream".into())
            .spawn(move || {
                for (ticket, work) in rx {
                    work();
                    let (m, cv) = &*p;
                    m.lock().unwrap_or_else(|e| e.into_inner()).done = ticket;
                    cv.notify_all();
                }
            })
            .expect("spawning a stream worker");
        Arc::new(Stream { tx: Mutex::new(Some(tx)), progress, worker: Mutex::new(Some(worker)) })
    }

    /// Queues `work`; returns its ticket.
    pub fn enqueue(&self, work: Work) -> u64 {
        let tx = self.tx.lock().unwrap_or_else(|e| e.into_inner());
        let mut p = self.progress.0.lock().unwrap_or_else(|e| e.into_inner());
        p.queued += 1;
        let ticket = p.queued;
        drop(p);
        if let Some(tx) = tx.as_ref() {
            // The worker only ends when the sender is dropped (in `shutdown`).
            let _ = tx.send((ticket, work));
        }
        ticket
    }

    /// Blocks until the work queued so far has run.
    pub fn synchronize(&self) {
        let (m, cv) = &*self.progress;
        let mut p = m.lock().unwrap_or_else(|e| e.into_inner());
        let target = p.queued;
        while p.done < target {
            p = cv.wait(p).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Drains the queue and stops the worker (hipStreamDestroy).
    pub fn shutdown(&self) {
        self.synchronize();
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(w) = self.worker.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = w.join();
        }
    }
}

#[derive(Default)]
struct EventState {
    /// How many times the event was recorded.
    recorded: u64,
    /// The latest record the queue has reached, and when.
    completed: u64,
    time: Option<Instant>,
}

/// A `hipEvent_t`.
pub struct Event {
    pub timing: bool,
    state: Arc<(Mutex<EventState>, Condvar)>,
}

impl Event {
    pub fn new(timing: bool) -> Arc<Event> {
        Arc::new(Event { timing, state: Arc::default() })
    }

    /// hipEventRecord: queues the marker on `stream`.
    pub fn record(&self, stream: &Stream) {
        let generation = {
            let mut s = self.state.0.lock().unwrap_or_else(|e| e.into_inner());
            s.recorded += 1;
            s.recorded
        };
        let state = self.state.clone();
        stream.enqueue(Box::new(move || {
            let (m, cv) = &*state;
            let mut s = m.lock().unwrap_or_else(|e| e.into_inner());
            if generation > s.completed {
                s.completed = generation;
                s.time = Some(Instant::now());
            }
            cv.notify_all();
        }));
    }

    /// True when the last record has been reached (or there was none).
    pub fn complete(&self) -> bool {
        let s = self.state.0.lock().unwrap_or_else(|e| e.into_inner());
        s.completed >= s.recorded
    }

    /// Blocks until the record current at the call is reached.
    pub fn synchronize(&self) {
        let (m, cv) = &*self.state;
        let mut s = m.lock().unwrap_or_else(|e| e.into_inner());
        let target = s.recorded;
        while s.completed < target {
            s = cv.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// hipStreamWaitEvent: work queued on `stream` afterwards waits for the current record.
    pub fn make_wait(&self, stream: &Stream) {
        let target = self.state.0.lock().unwrap_or_else(|e| e.into_inner()).recorded;
        let state = self.state.clone();
        stream.enqueue(Box::new(move || {
            let (m, cv) = &*state;
            let mut s = m.lock().unwrap_or_else(|e| e.into_inner());
            while s.completed < target {
                s = cv.wait(s).unwrap_or_else(|e| e.into_inner());
            }
        }));
    }

    /// When the last record was reached, if it was.
    pub fn time(&self) -> Option<Instant> {
        let s = self.state.0.lock().unwrap_or_else(|e| e.into_inner());
        if s.recorded > 0 && s.completed >= s.recorded { s.time } else { None }
    }
}
