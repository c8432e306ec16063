//! The one emulated GPU behind the shim: memory, loaded modules, handles, pinned host memory and
//! the sticky error of failed asynchronous work.

use crate::queue::{Event, Stream};
use crate::status::{self, HipError};
use ferrocm_emu::codeobj::CodeObject;
use ferrocm_emu::{EmuConfig, EmuError, Emulator, Module};
use std::alloc::Layout;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// A kernel handle's target: its module, name and explicit argument layout (offset, size).
pub struct Function {
    pub module: Arc<Module>,
    pub name: String,
    pub args: Vec<(usize, usize)>,
    pub max_threads: u32,
}

#[derive(Default)]
struct Handles {
    next: usize,
    streams: HashMap<usize, Arc<Stream>>,
    events: HashMap<usize, Arc<Event>>,
    modules: HashMap<usize, Arc<Module>>,
    functions: HashMap<usize, Arc<Function>>,
}

/// The process's emulated device.
pub struct Shim {
    pub emu: Emulator,
    /// The legacy null stream (handle 0).
    null_stream: Arc<Stream>,
    handles: Mutex<Handles>,
    /// The first error of asynchronous work not yet reported (HIP reports kernel faults from a
    /// later synchronising call).
    sticky: Mutex<Option<HipError>>,
    /// hipHostMalloc allocations: start address -> layout.
    pinned: Mutex<BTreeMap<usize, Layout>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// The shim, created on first use.
pub fn shim() -> &'static Shim {
    static SHIM: OnceLock<Shim> = OnceLock::new();
    SHIM.get_or_init(|| {
        // The same knobs as ferrocm's emulator backend.
        let mut config = EmuConfig::default();
        if let Some(t) = env_u64("FERROCM_EMU_THREADS") {
            config.threads = (t as usize).max(1);
        }
        if let Some(b) = env_u64("FERROCM_EMU_BUDGET") {
            config.instruction_budget = b;
        }
        if let Some(m) = env_u64("FERROCM_EMU_MEMORY") {
            config.memory_limit = m;
        }
        Shim {
            emu: Emulator::new(config),
            null_stream: Stream::new(),
            handles: Mutex::new(Handles { next: 0x1000, ..Default::default() }),
            sticky: Mutex::new(None),
            pinned: Mutex::new(BTreeMap::new()),
        }
    })
}

impl Shim {
    fn new_handle(h: &mut Handles) -> usize {
        h.next += 0x10;
        h.next
    }

    // ---- errors -------------------------------------------------------------------------------

    /// Records the failure of asynchronous work (reported by the next synchronising call).
    pub fn fail(&self, code: HipError, detail: &str) {
        eprintln!("ferrocm-hip-shim: asynchronous work failed (hipError_t {code}): {detail}");
        lock(&self.sticky).get_or_insert(code);
    }

    /// The pending asynchronous error, reported once (a real device would stay unusable; the
    /// double clears it so a test suite can go on).
    pub fn take_error(&self) -> HipError {
        lock(&self.sticky).take().unwrap_or(status::SUCCESS)
    }

    /// The code for an emulator error.
    pub fn code_of(e: &EmuError) -> HipError {
        match e {
            EmuError::Fault(_) | EmuError::HostAccess { .. } => status::ILLEGAL_ADDRESS,
            EmuError::OutOfMemory { .. } => status::OUT_OF_MEMORY,
            EmuError::BadFree { .. } => status::INVALID_DEVICE_POINTER,
            _ => status::LAUNCH_FAILURE,
        }
    }

    // ---- streams and events -------------------------------------------------------------------

    pub fn add_stream(&self) -> usize {
        let mut h = lock(&self.handles);
        let id = Self::new_handle(&mut h);
        h.streams.insert(id, Stream::new());
        id
    }

    /// The stream of handle `id` (0: the null stream, which first waits for every other stream:
    /// a simplified legacy default stream).
    pub fn stream(&self, id: usize) -> Option<Arc<Stream>> {
        if id == 0 {
            for s in self.streams() {
                s.synchronize();
            }
            return Some(self.null_stream.clone());
        }
        lock(&self.handles).streams.get(&id).cloned()
    }

    pub fn remove_stream(&self, id: usize) -> Option<Arc<Stream>> {
        lock(&self.handles).streams.remove(&id)
    }

    fn streams(&self) -> Vec<Arc<Stream>> {
        lock(&self.handles).streams.values().cloned().collect()
    }

    /// hipDeviceSynchronize: every stream drained.
    pub fn synchronize_all(&self) {
        for s in self.streams() {
            s.synchronize();
        }
        self.null_stream.synchronize();
    }

    pub fn add_event(&self, timing: bool) -> usize {
        let mut h = lock(&self.handles);
        let id = Self::new_handle(&mut h);
        h.events.insert(id, Event::new(timing));
        id
    }

    pub fn event(&self, id: usize) -> Option<Arc<Event>> {
        lock(&self.handles).events.get(&id).cloned()
    }

    pub fn remove_event(&self, id: usize) -> bool {
        lock(&self.handles).events.remove(&id).is_some()
    }

    // ---- modules ------------------------------------------------------------------------------

    /// Loads the code object at `image` (its length read from the ELF headers, as the runtime
    /// does).
    ///
    /// # Safety
    /// `image` points at a complete ELF file.
    pub unsafe fn load_module(&self, image: *const u8) -> Result<usize, HipError> {
        // SAFETY: per the contract.
        let len = unsafe { elf_len(image) }.ok_or(status::INVALID_IMAGE)?;
        // SAFETY: `len` bytes belong to the image per its own headers.
        let bytes = unsafe { std::slice::from_raw_parts(image, len) };
        let co = CodeObject::parse_for(bytes, "gfx942").map_err(|_| status::INVALID_IMAGE)?;
        let module = self.emu.load(Arc::new(co)).map_err(|_| status::INVALID_IMAGE)?;
        let mut h = lock(&self.handles);
        let id = Self::new_handle(&mut h);
        h.modules.insert(id, Arc::new(module));
        Ok(id)
    }

    pub fn unload_module(&self, id: usize) -> bool {
        let mut h = lock(&self.handles);
        let Some(m) = h.modules.remove(&id) else { return false };
        h.functions.retain(|_, f| !Arc::ptr_eq(&f.module, &m));
        true
    }

    pub fn get_function(&self, module: usize, name: &str) -> Result<usize, HipError> {
        let mut h = lock(&self.handles);
        let m = h.modules.get(&module).cloned().ok_or(status::INVALID_HANDLE)?;
        let k = m.co.kernel(name).ok_or(status::NOT_FOUND)?;
        let args = k.meta.explicit_args().map(|a| (a.offset as usize, a.size as usize)).collect();
        let f = Function { module: m.clone(), name: name.to_string(), args, max_threads: k.meta.max_flat_workgroup_size };
        let id = Self::new_handle(&mut h);
        h.functions.insert(id, Arc::new(f));
        Ok(id)
    }

    pub fn function(&self, id: usize) -> Option<Arc<Function>> {
        lock(&self.handles).functions.get(&id).cloned()
    }

    // ---- host memory --------------------------------------------------------------------------

    pub fn add_pinned(&self, addr: usize, layout: Layout) {
        lock(&self.pinned).insert(addr, layout);
    }

    pub fn remove_pinned(&self, addr: usize) -> Option<Layout> {
        lock(&self.pinned).remove(&addr)
    }

    /// True when `[addr, addr + len)` lies inside one hipHostMalloc allocation.
    pub fn is_pinned(&self, addr: usize, len: usize) -> bool {
        let p = lock(&self.pinned);
        p.range(..=addr).next_back().is_some_and(|(&start, l)| addr + len <= start + l.size())
    }

    /// True when `addr` is inside an allocation of the emulated device (for hipMemcpyDefault).
    pub fn is_device(&self, addr: u64) -> bool {
        self.emu.memory().view().find(addr, 1).is_some()
    }
}

/// The length of the ELF64 file at `p`: the furthest end of its header, section headers and
/// program segments.
///
/// # Safety
/// `p` points at an ELF file at least as long as its headers say.
unsafe fn elf_len(p: *const u8) -> Option<usize> {
    // SAFETY: the 64-byte ELF64 header is read first; the rest as its fields direct.
    unsafe {
        let hdr = std::slice::from_raw_parts(p, 64);
        if &hdr[..4] != b"\x7fELF" || hdr[4] != 2 {
            return None;
        }
        let u16_at = |o: usize| u16::from_le_bytes([hdr[o], hdr[o + 1]]) as usize;
        let u64_at = |o: usize| u64::from_le_bytes(hdr[o..o + 8].try_into().expect("8 bytes")) as usize;
        let (phoff, shoff) = (u64_at(0x20), u64_at(0x28));
        let (phentsize, phnum, shentsize, shnum) = (u16_at(0x36), u16_at(0x38), u16_at(0x3A), u16_at(0x3C));
        let mut end = 64usize.max(shoff.checked_add(shentsize.checked_mul(shnum)?)?).max(phoff.checked_add(phentsize.checked_mul(phnum)?)?);
        for i in 0..phnum {
            let ph = std::slice::from_raw_parts(p.add(phoff + i * phentsize), phentsize.min(56));
            let off = u64::from_le_bytes(ph[8..16].try_into().ok()?) as usize;
            let filesz = u64::from_le_bytes(ph[32..40].try_into().ok()?) as usize;
            end = end.max(off.checked_add(filesz)?);
        }
        for i in 0..shnum {
            let sh = std::slice::from_raw_parts(p.add(shoff + i * shentsize), shentsize.min(64));
            let kind = u32::from_le_bytes(sh[4..8].try_into().ok()?);
            const SHT_NOBITS: u32 = 8;
            if kind != SHT_NOBITS {
                let off = u64::from_le_bytes(sh[24..32].try_into().ok()?) as usize;
                let size = u64::from_le_bytes(sh[32..40].try_into().ok()?) as usize;
                end = end.max(off.checked_add(size)?);
            }
        }
        Some(end)
    }
}
