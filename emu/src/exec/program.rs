//! A loaded code object: its image in device memory and a decode cache over its code.
//!
//! Instructions are decoded once per address, on first execution, by whichever thread gets there
//! first; later executions read the cached `Inst` without locking.

use super::error::EmuError;
use super::memory::Memory;
use crate::codeobj::CodeObject;
use crate::isa::{self, Inst};
use std::sync::{Arc, OnceLock};

/// R_AMDGPU_RELATIVE64: `*(u64 *)(base + offset) = base + addend`.
const R_AMDGPU_RELATIVE64: u32 = 13;

/// A code object loaded into an emulator's memory.
pub struct Module {
    /// The parsed code object.
    pub co: Arc<CodeObject>,
    /// Device address of the image's virtual address 0.
    pub image_base: u64,
    /// The image bytes as 32-bit words (instructions are dword-aligned).
    words: Vec<u32>,
    cache: Vec<OnceLock<Result<Inst, String>>>,
}

impl std::fmt::Debug for Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Module({} at {:#x}, {} kernels)", self.co.arch, self.image_base, self.co.kernels.len())
    }
}

impl Module {
    /// Copies the image into `mem` (applying relative relocations) and prepares the cache.
    pub fn load(mem: &Memory, co: Arc<CodeObject>) -> Result<Module, EmuError> {
        let mut image = co.load_image()?;
        let size = image.len().max(4) as u64;
        let image_base = mem.alloc(size)?;
        for r in &co.elf.relocations {
            if r.kind != R_AMDGPU_RELATIVE64 {
                return Err(EmuError::Unsupported(format!("dynamic relocation type {} at {:#x}", r.kind, r.offset)));
            }
            let at = r.offset as usize;
            if at + 8 > image.len() {
                return Err(EmuError::Unsupported(format!("relocation at {:#x} outside the image", r.offset)));
            }
            let v = image_base.wrapping_add(r.addend as u64);
            image[at..at + 8].copy_from_slice(&v.to_le_bytes());
        }
        mem.write(image_base, &image)?;
        image.resize(image.len().div_ceil(4) * 4, 0);
        let words: Vec<u32> = image.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("4"))).collect();
        let cache = (0..words.len()).map(|_| OnceLock::new()).collect();
        Ok(Module { co, image_base, words, cache })
    }

    /// The instruction at device address `pc`.
    ///
    /// # Errors
    /// A description (format, opcode, bytes) when `pc` is outside the image, misaligned, or does
    /// not decode.
    #[inline]
    pub fn fetch(&self, pc: u64) -> Result<&Inst, String> {
        let off = pc.wrapping_sub(self.image_base);
        if off % 4 != 0 || off / 4 >= self.words.len() as u64 {
            return Err(format!("pc {pc:#x} is outside the code object's image"));
        }
        let i = (off / 4) as usize;
        self.cache[i].get_or_init(|| isa::decode(&self.words[i..], pc).map_err(|e| e.to_string())).as_ref().map_err(Clone::clone)
    }

    /// Number of dwords in the image (the size of per-address tables).
    pub fn code_words(&self) -> usize {
        self.words.len()
    }

    /// The raw dwords at `pc` (for messages about instructions that did not decode).
    pub fn raw(&self, pc: u64) -> String {
        let i = (pc.wrapping_sub(self.image_base) / 4) as usize;
        self.words
            .get(i..(i + 2).min(self.words.len()))
            .map_or("?".into(), |w| w.iter().map(|d| format!("{d:08x}")).collect::<Vec<_>>().join(" "))
    }

    /// Whether any instruction in `[start, end)` performs a global/flat atomic (linear sweep;
    /// decides whether workgroups may run in parallel deterministically).
    pub fn has_global_atomics(&self, start: u64, end: u64) -> bool {
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
