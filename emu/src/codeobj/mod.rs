//! AMDGPU code objects: validation, kernel descriptors, metadata and per-kernel resources.
//!
//! One parser for every consumer: the emulator loads kernels from it, the host's loader validates
//! embedded objects with it, and `cargo xtask build` prints the resource report from it.

mod descriptor;
mod elf;
mod metadata;
pub mod msgpack;
mod resources;

pub use descriptor::{KERNEL_DESCRIPTOR_SIZE, KernelDescriptor, UserSgprs};
pub use elf::{EF_AMDGPU_MACH, ELFOSABI_AMDGPU_HSA, EM_AMDGPU, Elf, Relocation, Section, Segment, Symbol};
pub use metadata::{ArgMeta, KernelMeta, Metadata, ValueKind};
pub use resources::{KernelResources, MAX_WAVES_PER_SIMD, waves_per_simd};

use std::sync::Arc;

/// `NT_AMDGPU_METADATA`: the note type holding the msgpack metadata.
pub const NT_AMDGPU_METADATA: u32 = 32;

/// Why a code object was refused.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CodeObjectError {
    /// The input ends before something it declares.
    #[error("code object truncated: {what} needs {need} bytes, the input has {have}")]
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Bytes needed (an end offset).
        need: u64,
        /// Bytes available.
        have: u64,
    },
    /// No ELF magic.
    #[error("not an ELF file (bad magic)")]
    NotElf,
    /// ELF32 or an invalid class.
    #[error("not a 64-bit ELF file (class {class})")]
    NotElf64 {
        /// `EI_CLASS`.
        class: u8,
    },
    /// Big-endian ELF.
    #[error("not a little-endian ELF file")]
    NotLittleEndian,
    /// Not `EM_AMDGPU`.
    #[error("ELF machine {machine:#x} is not AMDGPU (0xe0)")]
    WrongMachine {
        /// `e_machine`.
        machine: u16,
    },
    /// Not for the HSA runtime.
    #[error("ELF OS/ABI {os_abi} is not AMDGPU HSA (64)")]
    WrongOsAbi {
        /// `EI_OSABI`.
        os_abi: u8,
    },
    /// The `e_flags` target id is not one this project knows.
    #[error("unknown AMDGPU target id {mach:#x} in e_flags")]
    UnknownArch {
        /// `e_flags & 0xff`.
        mach: u32,
    },
    /// Built for another GPU.
    #[error("code object is for {found}, expected {expected}")]
    WrongArch {
        /// The architecture asked for.
        expected: String,
        /// The architecture in `e_flags`.
        found: String,
    },
    /// No `NT_AMDGPU_METADATA` note.
    #[error("no AMDGPU metadata note")]
    NoMetadata,
    /// The metadata is not valid msgpack or lacks required fields.
    #[error("bad code object metadata: {0}")]
    BadMetadata(String),
    /// A kernel listed in the metadata has no descriptor symbol.
    #[error("kernel {kernel}: descriptor symbol {symbol} not found")]
    MissingDescriptor {
        /// The kernel.
        kernel: String,
        /// The missing symbol.
        symbol: String,
    },
    /// Structurally invalid ELF.
    #[error("malformed code object: {0}")]
    Malformed(String),
}

/// AMDGPU targets by their `e_flags` id (LLVM `EF_AMDGPU_MACH_AMDGCN_*`).
const ARCHS: &[(&str, u32)] = &[
    ("gfx900", 0x2c),
    ("gfx906", 0x2f),
    ("gfx908", 0x30),
    ("gfx90a", 0x3f),
    ("gfx940", 0x40),
    ("gfx941", 0x4b),
    ("gfx942", 0x4c),
    ("gfx950", 0x4f),
    ("gfx1030", 0x36),
    ("gfx1100", 0x41),
    ("gfx1200", 0x48),
    ("gfx1201", 0x4e),
];

/// The architecture name for an `e_flags` target id.
pub fn arch_name(mach: u32) -> Option<&'static str> {
    ARCHS.iter().find(|(_, m)| *m == mach).map(|(n, _)| *n)
}

/// The `e_flags` target id of an architecture name.
pub fn arch_mach(name: &str) -> Option<u32> {
    ARCHS.iter().find(|(n, _)| *n == name).map(|(_, m)| *m)
}

/// One kernel of a code object.
#[derive(Clone, Debug)]
pub struct KernelInfo {
    /// Its metadata.
    pub meta: KernelMeta,
    /// Its descriptor.
    pub descriptor: KernelDescriptor,
    /// Address of the descriptor in the loaded image.
    pub descriptor_vaddr: u64,
    /// Address of the first instruction in the loaded image.
    pub code_vaddr: u64,
    /// Code size from the function symbol (0 when the symbol is absent).
    pub code_size: u64,
}

impl KernelInfo {
    /// Register, LDS and occupancy figures for the report.
    pub fn resources(&self) -> KernelResources {
        KernelResources::of(self)
    }
}

/// A validated AMDGPU code object.
#[derive(Clone, Debug)]
pub struct CodeObject {
    bytes: Arc<[u8]>,
    /// The parsed ELF.
    pub elf: Elf,
    /// The architecture from `e_flags`, e.g. `gfx942`.
    pub arch: &'static str,
    /// Code object version (4, 5 or 6) from `EI_ABIVERSION`.
    pub version: u32,
    /// The metadata note.
    pub metadata: Metadata,
    /// Every kernel, in metadata order.
    pub kernels: Vec<KernelInfo>,
}

impl CodeObject {
    /// Validates and parses a code object for any known architecture.
    ///
    /// # Errors
    /// Every structural problem is a [`CodeObjectError`] naming it; no input panics.
    pub fn parse(bytes: &[u8]) -> Result<CodeObject, CodeObjectError> {
        let elf = Elf::parse(bytes)?;
        if elf.machine != EM_AMDGPU {
            return Err(CodeObjectError::WrongMachine { machine: elf.machine });
        }
        if elf.os_abi != ELFOSABI_AMDGPU_HSA {
            return Err(CodeObjectError::WrongOsAbi { os_abi: elf.os_abi });
        }
        let mach = elf.flags & EF_AMDGPU_MACH;
        let arch = arch_name(mach).ok_or(CodeObjectError::UnknownArch { mach })?;
        let version = match elf.abi_version {
            2 => 4,
            3 => 5,
            4 => 6,
            v => return Err(CodeObjectError::Malformed(format!("unsupported HSA ABI version {v}"))),
        };
        let note = elf
            .notes
            .iter()
            .find(|(owner, kind, _)| owner == "AMDGPU" && *kind == NT_AMDGPU_METADATA)
            .ok_or(CodeObjectError::NoMetadata)?;
        let metadata = Metadata::from_value(&msgpack::decode(&note.2)?)?;
        let image_size = elf.image_size();
        let mut kernels = Vec::with_capacity(metadata.kernels.len());
        for meta in &metadata.kernels {
            let kd = elf
                .symbol(&meta.symbol)
                .ok_or_else(|| CodeObjectError::MissingDescriptor { kernel: meta.name.clone(), symbol: meta.symbol.clone() })?;
            let kd_bytes = image_slice(&elf, bytes, kd.value, KERNEL_DESCRIPTOR_SIZE as u64)?;
            let descriptor = KernelDescriptor::parse(kd_bytes)?;
            let code_vaddr = kd.value.wrapping_add(descriptor.kernel_code_entry_byte_offset as u64);
            if code_vaddr >= image_size {
                return Err(CodeObjectError::Malformed(format!(
                    "kernel {}: entry {code_vaddr:#x} outside the image ({image_size:#x} bytes)",
                    meta.name
                )));
            }
            let code_size = elf.symbol(&meta.name).map(|s| s.size).unwrap_or(0);
            kernels.push(KernelInfo { meta: meta.clone(), descriptor, descriptor_vaddr: kd.value, code_vaddr, code_size });
        }
        Ok(CodeObject { bytes: bytes.into(), elf, arch, version, metadata, kernels })
    }

    /// As [`CodeObject::parse`], and checks the object was built for `arch`.
    pub fn parse_for(bytes: &[u8], arch: &str) -> Result<CodeObject, CodeObjectError> {
        // Check the header's target first so a foreign file is reported as such even when the
        // rest of it would not parse for this project.
        let co = CodeObject::parse(bytes)?;
        if co.arch != arch {
            return Err(CodeObjectError::WrongArch { expected: arch.to_string(), found: co.arch.to_string() });
        }
        Ok(co)
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The kernel called `name`.
    pub fn kernel(&self, name: &str) -> Option<&KernelInfo> {
        self.kernels.iter().find(|k| k.meta.name == name)
    }

    /// The loaded image (segments at their virtual addresses).
    pub fn load_image(&self) -> Result<Vec<u8>, CodeObjectError> {
        self.elf.load_image(&self.bytes)
    }

    /// `xnack` and `sramecc` target feature settings from `e_flags` (v4+ encoding):
    /// `None` = any, `Some(on)`.
    pub fn target_features(&self) -> (Option<bool>, Option<bool>) {
        let field = |shift: u32| match (self.elf.flags >> shift) & 3 {
            2 => Some(false),
            3 => Some(true),
            _ => None,
        };
        (field(8), field(10))
    }
}

/// `len` bytes at virtual address `vaddr`, read through the loadable segments.
fn image_slice<'a>(elf: &Elf, bytes: &'a [u8], vaddr: u64, len: u64) -> Result<&'a [u8], CodeObjectError> {
    for s in &elf.segments {
        if vaddr >= s.vaddr && vaddr.saturating_add(len) <= s.vaddr + s.file_size {
            let off = s.file_offset + (vaddr - s.vaddr);
            return elf::Reader { bytes }.slice(off, len, "kernel descriptor");
        }
    }
    Err(CodeObjectError::Truncated { what: "kernel descriptor", need: vaddr.saturating_add(len), have: bytes.len() as u64 })
}
