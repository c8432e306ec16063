//! ferrocm-codeobj: AMDGPU code objects (ELF) validated and parsed: kernel descriptors, the
//! msgpack metadata note and per-kernel resources (registers, LDS, scratch, occupancy).
//!
//! One parser for every consumer: the emulator (`ferrocm-emu`) loads kernels from it, the host
//! library (`ferrocm`) validates its embedded objects and checks launches against it, and the
//! device build (`ferrocm-device-build`, behind `cargo xtask build`) prints the resource report
//! from it. It reads untrusted input: every offset and size is checked, every problem is a
//! [`CodeObjectError`], no input panics.
#![warn(missing_docs)]

mod descriptor;
mod elf;
mod metadata;
pub mod msgpack;
mod resources;

pub use descriptor::{KERNEL_DESCRIPTOR_SIZE, KernelDescriptor, UserSgprs};
pub use elf::{
    EF_AMDGPU_MACH, ELFOSABI_AMDGPU_HSA, EM_AMDGPU, Elf, PF_X, Relocation, SHF_EXECINSTR, SHT_NOBITS, SHT_PROGBITS, STT_FILE, STT_FUNC,
    STT_NOTYPE, STT_SECTION, Section, Segment, Symbol,
};
pub use metadata::{ArgMeta, KernelMeta, Metadata, ValueKind};
pub use resources::{KernelResources, MAX_WAVES_PER_SIMD, waves_per_simd};

use std::sync::Arc;

/// `NT_AMDGPU_METADATA`: the note type holding the msgpack metadata.
pub const NT_AMDGPU_METADATA: u32 = 32;

/// The largest loaded image (highest segment end) a code object may declare: 256 MiB. The
/// project's own object loads to about 2 MiB and large vendor libraries to tens of MiB; the
/// bound keeps a small corrupt file (a segment whose memory size is a few GiB) from costing
/// gigabytes before anything can fail.
pub const MAX_IMAGE_BYTES: u64 = 256 << 20;

/// Kernel entry points are 256-byte aligned: the dispatcher takes the code address as
/// `COMPUTE_PGM_LO/HI = address >> 8` (AMDGPUUsage, kernel descriptor,
/// `kernel_code_entry_byte_offset`).
pub const ENTRY_ALIGN: u64 = 256;

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
    /// The loadable segments span more than [`MAX_IMAGE_BYTES`].
    #[error("code object declares a loaded image of {size} bytes, more than the {limit}-byte limit")]
    ImageTooLarge {
        /// The end of the highest segment.
        size: u64,
        /// The limit.
        limit: u64,
    },
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
    /// Code size: the function symbol's, or where that is absent or 0, up to the next function
    /// symbol, kernel entry or section end (`kernel_code`). The code lies in the file bytes of an
    /// executable segment (checked when parsed).
    pub code_size: u64,
}

impl KernelInfo {
    /// Register, LDS and occupancy figures for the report.
    pub fn resources(&self) -> KernelResources {
        KernelResources::of(self)
    }

    /// Waves per SIMD the kernel's registers allow: the unified VGPR+AGPR allocation from the
    /// descriptor (what the dispatcher reserves; hand-written objects may leave `.agpr_count`
    /// out of the metadata) and the metadata's SGPR count; 0 when the metadata declares
    /// registers the allocation does not hold (a launch refuses such a kernel, see
    /// [`KernelInfo::register_mismatch`]).
    pub fn waves_per_simd(&self) -> u32 {
        if self.register_mismatch().is_some() {
            return 0;
        }
        waves_per_simd(self.descriptor.allocated_vgprs(), self.meta.sgpr_count)
    }

    /// Why the metadata's VGPR and AGPR counts (a cross-check only: hand-written objects may
    /// omit `.agpr_count`) do not fit the descriptor's allocation, if they do not: more
    /// registers than the unified allocation, or more ArchVGPRs than lie below ACCUM_OFFSET.
    pub fn register_mismatch(&self) -> Option<String> {
        let (m, d) = (&self.meta, &self.descriptor);
        let (unified, acc) = (d.allocated_vgprs() as u64, d.accum_offset() as u64);
        // LLVM writes the unified count as `.vgpr_count` (ArchVGPRs rounded to 4, then the
        // AGPRs: 292 for 256 + 36); hand-written metadata may give the ArchVGPRs alone. Either
        // reading that fits the descriptor passes.
        let (v, a) = (m.vgpr_count as u64, m.agpr_count as u64);
        let as_total = v <= unified && a <= v && (a == 0 || v - a <= acc);
        let as_arch = v.div_ceil(4) * 4 + a <= unified && (a == 0 || v <= acc);
        (!as_total && !as_arch).then(|| {
            format!(
                "the metadata declares {v} VGPRs and {a} AGPRs, which the descriptor's allocation of {unified} registers \
                 with AGPRs from {acc} does not hold"
            )
        })
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
        if image_size > MAX_IMAGE_BYTES {
            return Err(CodeObjectError::ImageTooLarge { size: image_size, limit: MAX_IMAGE_BYTES });
        }
        let mut found = Vec::with_capacity(metadata.kernels.len());
        for meta in &metadata.kernels {
            let kd = elf
                .symbol(&meta.symbol)
                .ok_or_else(|| CodeObjectError::MissingDescriptor { kernel: meta.name.clone(), symbol: meta.symbol.clone() })?;
            let kd_bytes = image_slice(&elf, bytes, kd.value, KERNEL_DESCRIPTOR_SIZE as u64)?;
            found.push((meta, kd.value, KernelDescriptor::parse(kd_bytes)?));
        }
        // Every kernel's entry first: a kernel without a sized symbol ends where the next begins.
        let entries: Vec<u64> = found.iter().filter_map(|(_, kd, d)| kd.checked_add_signed(d.kernel_code_entry_byte_offset)).collect();
        let mut kernels = Vec::with_capacity(found.len());
        for (meta, kd, descriptor) in found {
            let (code_vaddr, code_size) = kernel_code(&elf, &meta.name, kd, descriptor.kernel_code_entry_byte_offset, &entries)?;
            kernels.push(KernelInfo { meta: meta.clone(), descriptor, descriptor_vaddr: kd, code_vaddr, code_size });
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

    /// The loaded image (segments at their virtual addresses, at most [`MAX_IMAGE_BYTES`]).
    pub fn load_image(&self) -> Result<Vec<u8>, CodeObjectError> {
        self.elf.load_image(&self.bytes, MAX_IMAGE_BYTES)
    }

    /// The file bytes at virtual addresses `[vaddr, vaddr + len)`, when one loadable segment
    /// holds them all (the code of a kernel, say), without building the whole image.
    pub fn file_bytes_at(&self, vaddr: u64, len: u64) -> Option<&[u8]> {
        let s = self.elf.segment_holding(vaddr, len)?;
        // Validated when parsed: the segment's file bytes lie inside the input.
        let off = (s.file_offset + (vaddr - s.vaddr)) as usize;
        self.bytes.get(off..off.checked_add(len as usize)?)
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
    match elf.segment_holding(vaddr, len) {
        // vaddr - s.vaddr < file_size, and file_offset + file_size was checked against the input.
        Some(s) => elf::Reader { bytes }.slice(s.file_offset + (vaddr - s.vaddr), len, "kernel descriptor"),
        None => Err(CodeObjectError::Malformed(format!(
            "kernel descriptor at {vaddr:#x} ({len} bytes) is not inside the file bytes of a loadable segment"
        ))),
    }
}

/// A kernel's entry address and code size: the descriptor's address plus its signed entry
/// offset, which must land 256-byte aligned in an executable segment; the function symbol's
/// size, which must keep the code inside that segment's file bytes, or where the symbol is
/// missing or has size 0 (hand-written code objects, AMD's AITER kernels among them), the
/// extent [`implicit_code_size`] finds. Every consumer (the emulator's decode cache and atomics
/// scan, `disasm`) then walks only real code. `others` are the entries of the object's kernels.
fn kernel_code(elf: &Elf, name: &str, kd_vaddr: u64, entry_offset: i64, others: &[u64]) -> Result<(u64, u64), CodeObjectError> {
    let malformed = |what: String| CodeObjectError::Malformed(format!("kernel {name}: {what}"));
    let entry = kd_vaddr.checked_add_signed(entry_offset).ok_or_else(|| {
        let sign = if entry_offset < 0 { "-" } else { "+" };
        malformed(format!(
            "entry offset {sign}{:#x} from the descriptor at {kd_vaddr:#x} leaves the address space",
            entry_offset.unsigned_abs()
        ))
    })?;
    if entry % ENTRY_ALIGN != 0 {
        return Err(malformed(format!("entry {entry:#x} is not {ENTRY_ALIGN}-byte aligned")));
    }
    let segment = elf
        .segments
        .iter()
        .find(|s| s.executable() && s.holds(entry, 4))
        .ok_or_else(|| malformed(format!("entry {entry:#x} is not in the file bytes of an executable segment")))?;
    let size = match elf.symbol(name).map_or(0, |s| s.size) {
        0 => implicit_code_size(elf, entry, segment, others),
        n => n,
    };
    if !segment.holds(entry, size) {
        return Err(malformed(format!(
            "code of {size} bytes at {entry:#x} runs past its segment (which ends at {:#x})",
            segment.vaddr + segment.file_size
        )));
    }
    Ok((entry, size))
}

/// The code of a kernel whose function symbol gives no size: from its entry to the first of
/// the next function symbol, the next kernel entry and the end of the section (or, without
/// section headers, the segment's file bytes) holding the entry. This is what llvm-objdump
/// disassembles as the function's body (it too runs to the next symbol), minus the local
/// labels, which lie inside the code.
fn implicit_code_size(elf: &Elf, entry: u64, segment: &Segment, others: &[u64]) -> u64 {
    let segment_end = segment.vaddr + segment.file_size;
    let section_end = elf
        .sections
        .iter()
        .filter(|s| s.kind == SHT_PROGBITS && s.addr <= entry && entry - s.addr < s.size)
        .map(|s| s.addr.saturating_add(s.size))
        .min()
        .unwrap_or(segment_end)
        .min(segment_end);
    let next_function = elf.symbols.iter().filter(|s| s.kind == STT_FUNC).map(|s| s.value);
    next_function.chain(others.iter().copied()).filter(|&a| a > entry).fold(section_end, u64::min) - entry
}
