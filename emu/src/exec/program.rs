//! A loaded code object: its image in device memory and a decode cache over its code.
//!
//! Instructions are decoded once per address, on first execution, by whichever thread gets there
//! first; later executions read the cached `Inst` without locking. The cache (and the per-address
//! counters of a launch) cover only the file bytes of the executable segments: their size is
//! bounded by the input's, while the image can be much larger (a segment's zero-filled tail
//! costs the image, not a cache entry per dword of it).

use super::counters::Class;
use super::error::EmuError;
use super::memory::Memory;
use super::step::class_of;
use crate::codeobj::CodeObject;
use crate::isa::{self, Inst};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// R_AMDGPU_RELATIVE64: `*(u64 *)(base + offset) = base + addend`.
const R_AMDGPU_RELATIVE64: u32 = 13;

/// The code of one executable segment: its dwords as loaded (relocations applied) and their
/// decode cache.
struct Code {
    /// Image-relative address of `words[0]` (4-byte aligned).
    start: u64,
    /// Counter slot of `words[0]`: slots number the dwords of every window in turn.
    first_slot: usize,
    words: Vec<u32>,
    /// Per dword: the instruction starting there and its counter class (worked out with the
    /// decode, not per execution).
    cache: Vec<OnceLock<Result<(Inst, Class), String>>>,
}

impl Code {
    /// The word index of image offset `off`, if this window holds it (`off` 4-byte aligned).
    #[inline]
    fn index(&self, off: u64) -> Option<usize> {
        let i = off.checked_sub(self.start)? / 4;
        (i < self.words.len() as u64).then_some(i as usize)
    }
}

/// A code object loaded into an emulator's memory.
pub struct Module {
    /// The parsed code object.
    pub co: Arc<CodeObject>,
    /// Device address of the image's virtual address 0.
    pub image_base: u64,
    /// The executable segments' code (one window for a linked code object).
    code: Vec<Code>,
    slots: usize,
    /// Per kernel, whether its code has global atomics ([`Module::kernel_has_global_atomics`]),
    /// swept once on first use.
    atomics: Mutex<HashMap<String, bool>>,
}

impl std::fmt::Debug for Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Module({} at {:#x}, {} kernels)", self.co.arch, self.image_base, self.co.kernels.len())
    }
}

impl Module {
    /// Copies the image into `mem` (applying relative relocations) and prepares the cache.
    ///
    /// # Errors
    /// [`EmuError::OutOfMemory`] when the image does not fit the emulator's memory limit (checked
    /// before anything image-sized is allocated); [`EmuError::Unsupported`] for a relocation
    /// other than `R_AMDGPU_RELATIVE64` or one outside the image.
    pub fn load(mem: &Memory, co: Arc<CodeObject>) -> Result<Module, EmuError> {
        // At most MAX_IMAGE_BYTES (checked by the parser); rounded to whole dwords so every
        // code window below can be read back as dwords.
        let size = co.elf.image_size().max(4).next_multiple_of(4);
        let image_base = mem.alloc(size)?;
        let loaded = Self::fill(mem, &co, image_base, size);
        let code = match loaded {
            Ok(code) => code,
            Err(e) => {
                mem.free(image_base)?;
                return Err(e);
            }
        };
        let slots = code.iter().map(|c| c.words.len()).sum();
        Ok(Module { co, image_base, code, slots, atomics: Mutex::new(HashMap::new()) })
    }

    /// Writes the segments and relocations at `image_base` and reads the code windows back.
    fn fill(mem: &Memory, co: &CodeObject, image_base: u64, size: u64) -> Result<Vec<Code>, EmuError> {
        let bytes = co.bytes();
        for s in &co.elf.segments {
            // The parser checked the file range and vaddr + mem_size <= image size.
            let data = &bytes[s.file_offset as usize..(s.file_offset + s.file_size) as usize];
            mem.write(image_base + s.vaddr, data)?;
        }
        for r in &co.elf.relocations {
            if r.kind != R_AMDGPU_RELATIVE64 {
                return Err(EmuError::Unsupported(format!("dynamic relocation type {} at {:#x}", r.kind, r.offset)));
            }
            if r.offset.checked_add(8).is_none_or(|end| end > size) {
                return Err(EmuError::Unsupported(format!("relocation at {:#x} outside the image ({size} bytes)", r.offset)));
            }
            let v = image_base.wrapping_add(r.addend as u64);
            mem.write(image_base + r.offset, &v.to_le_bytes())?;
        }
        let mut code = Vec::new();
        let mut first_slot = 0;
        for s in co.elf.segments.iter().filter(|s| s.executable() && s.file_size > 0) {
            let start = s.vaddr & !3;
            let end = (s.vaddr + s.file_size).next_multiple_of(4).min(size);
            let mut raw = vec![0u8; (end - start) as usize];
            mem.read(image_base + start, &mut raw)?;
            let words: Vec<u32> = raw.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("4"))).collect();
            let cache = (0..words.len()).map(|_| OnceLock::new()).collect();
            let n = words.len();
            code.push(Code { start, first_slot, words, cache });
            first_slot += n;
        }
        Ok(code)
    }

    /// The window and word index holding device address `pc`.
    #[inline]
    fn locate(&self, pc: u64) -> Result<(&Code, usize), String> {
        let off = pc.wrapping_sub(self.image_base);
        if off % 4 != 0 {
            return Err(format!("pc {pc:#x} is not 4-byte aligned"));
        }
        self.code
            .iter()
            .find_map(|c| c.index(off).map(|i| (c, i)))
            .ok_or_else(|| format!("pc {pc:#x} is outside the code object's executable segments"))
    }

    /// The instruction at device address `pc`.
    ///
    /// # Errors
    /// A description (format, opcode, bytes) when `pc` is outside the code, misaligned, or does
    /// not decode.
    #[inline]
    pub fn fetch(&self, pc: u64) -> Result<&Inst, String> {
        self.fetch_slot(pc).map(|(_, inst, _)| inst)
    }

    /// As [`Module::fetch`], with the instruction's counter slot (`0..code_words()`) and class
    /// ([`class_of`]).
    #[inline]
    pub(crate) fn fetch_slot(&self, pc: u64) -> Result<(usize, &Inst, Class), String> {
        let (c, i) = self.locate(pc)?;
        let (inst, class) = c.cache[i]
            .get_or_init(|| isa::decode(&c.words[i..], pc).map(|inst| (inst, class_of(&inst))).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(Clone::clone)?;
        Ok((c.first_slot + i, inst, *class))
    }

    /// Number of dwords of code (the size of per-address tables).
    pub fn code_words(&self) -> usize {
        self.slots
    }

    /// The device address of counter slot `slot`.
    pub(crate) fn slot_pc(&self, slot: usize) -> u64 {
        let c = self.code.iter().rev().find(|c| c.first_slot <= slot).expect("slot 0 is in the first window");
        self.image_base + c.start + 4 * (slot - c.first_slot) as u64
    }

    /// The raw dwords at `pc` (for messages about instructions that did not decode).
    pub fn raw(&self, pc: u64) -> String {
        match self.locate(pc) {
            Ok((c, i)) => c.words[i..(i + 2).min(c.words.len())].iter().map(|d| format!("{d:08x}")).collect::<Vec<_>>().join(" "),
            Err(_) => "?".into(),
        }
    }

    /// Whether kernel `name`'s code performs a global/flat atomic, which decides whether its
    /// workgroups may run in parallel deterministically (and how a sampled launch is sampled);
    /// false for a kernel the module does not have. A linear sweep of the kernel's code, once per
    /// kernel: launches ask every time.
    pub fn kernel_has_global_atomics(&self, name: &str) -> bool {
        let mut known = self.atomics.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(&a) = known.get(name) {
            return a;
        }
        let a = self.co.kernel(name).is_some_and(|k| {
            let start = self.image_base + k.code_vaddr;
            self.has_global_atomics(start, start + k.code_size.max(4))
        });
        known.insert(name.to_string(), a);
        a
    }

    /// Whether any instruction in `[start, end)` performs a global/flat atomic (linear sweep).
    fn has_global_atomics(&self, start: u64, end: u64) -> bool {
        let mut pc = start;
        while pc < end {
            match self.fetch(pc) {
                Ok(inst) => {
                    if super::vmem::is_atomic(inst) {
                        return true;
                    }
                    pc += inst.size as u64;
                }
                Err(_) => pc += 4,
            }
        }
        false
    }
}
