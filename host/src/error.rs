//! The one error type of the crate.

use crate::dtype::DType;
pub use ferrocm_emu::codeobj::CodeObjectError;

/// Everything that can go wrong in ferrocm. Each launch-validation failure is its own variant, so
/// callers (and tests) can tell them apart.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    // ---- backends -------------------------------------------------------------------------
    /// libamdhip64 could not be opened: ROCm is not installed or not on the loader path.
    #[error("HIP runtime not found: could not open {tried} ({reason}); install ROCm 6+ or set FERROCM_HIP_LIBRARY")]
    HipNotFound {
        /// The library names tried, comma separated.
        tried: String,
        /// The loader's last message.
        reason: String,
    },
    /// libamdhip64 lacks a function ferrocm needs (a ROCm older than 6.0).
    #[error("HIP runtime {library} lacks {symbol} (ferrocm needs ROCm 6.0 or newer)")]
    HipSymbolMissing {
        /// The library opened.
        library: String,
        /// The missing function.
        symbol: &'static str,
    },
    /// A HIP call failed.
    #[error("{call} failed: {message} (hipError_t {code})")]
    Hip {
        /// The HIP function.
        call: &'static str,
        /// The hipError_t value.
        code: i32,
        /// `hipGetErrorString` of the code.
        message: String,
    },
    /// HIP works but reports no GPU.
    #[error("HIP found no GPU")]
    NoDevice,
    /// A device index beyond the devices present.
    #[error("device {index} requested, {count} present")]
    DeviceIndex {
        /// The index asked for.
        index: usize,
        /// Devices present.
        count: usize,
    },
    /// A backend cannot be used here, with the reason.
    #[error("the {backend} backend is not available: {reason}")]
    BackendUnavailable {
        /// `hip` or `emulator`.
        backend: &'static str,
        /// Why not.
        reason: String,
    },
    /// FERROCM_BACKEND holds something other than `hip` or `emu`.
    #[error("FERROCM_BACKEND={value:?} is not one of `hip`, `emu`")]
    BadBackendVariable {
        /// The value found.
        value: String,
    },

    /// The emulator refused a launch or a kernel faulted on it (the fault names kernel, pc,
    /// instruction and lane).
    #[error(transparent)]
    Emulator(#[from] ferrocm_emu::EmuError),

    // ---- code objects ---------------------------------------------------------------------
    /// A code object failed validation.
    #[error(transparent)]
    CodeObject(#[from] CodeObjectError),
    /// No code object was embedded for the device's architecture.
    #[error(
        "no ferrocm code object for {arch} (built for: {available}); rebuild with FERROCM_ARCHS={arch} or `cargo xtask build --arch {arch}`"
    )]
    NoCodeObjectForArch {
        /// The device's architecture.
        arch: String,
        /// The embedded architectures, comma separated.
        available: String,
    },

    // ---- launch validation ----------------------------------------------------------------
    /// The kernel is not in the code object of this device.
    #[error("kernel {kernel} not found in the {arch} code object")]
    KernelNotFound {
        /// The kernel.
        kernel: String,
        /// The device's architecture.
        arch: String,
    },
    /// The argument struct's size differs from the explicit kernarg size in the metadata.
    #[error("kernel {kernel}: argument struct {args} is {struct_size} bytes, the code object expects {expected} explicit kernarg bytes")]
    KernargSizeMismatch {
        /// The kernel.
        kernel: String,
        /// The struct's name.
        args: &'static str,
        /// `size_of` the struct.
        struct_size: usize,
        /// Explicit kernarg bytes per the metadata, rounded up to the struct's alignment.
        expected: usize,
    },
    /// A field of the argument struct is not where the kernel reads it.
    #[error("kernel {kernel}: field {field} of {args} is at offset {offset} size {size}, the code object has {expected}")]
    KernargLayoutMismatch {
        /// The kernel.
        kernel: String,
        /// The struct's name.
        args: &'static str,
        /// The field.
        field: &'static str,
        /// Its offset in the struct.
        offset: usize,
        /// Its size.
        size: usize,
        /// What the metadata says at that position.
        expected: String,
    },
    /// More work-items per workgroup than the kernel supports.
    #[error("kernel {kernel}: block {block:?} has {threads} work-items, the kernel allows at most {max}")]
    BlockTooLarge {
        /// The kernel.
        kernel: String,
        /// The block.
        block: [u32; 3],
        /// Its work-item count (`u64::MAX` for a count past it).
        threads: u64,
        /// `.max_flat_workgroup_size`.
        max: u32,
    },
    /// A block dimension of zero.
    #[error("kernel {kernel}: block {block:?} has a zero dimension")]
    EmptyBlock {
        /// The kernel.
        kernel: String,
        /// The block.
        block: [u32; 3],
    },
    /// Static plus dynamic LDS above the 64 KiB a workgroup can have.
    #[error("kernel {kernel}: {static_lds} static + {dynamic_lds} dynamic LDS bytes exceed the {limit}-byte limit")]
    LdsTooLarge {
        /// The kernel.
        kernel: String,
        /// The kernel's static LDS.
        static_lds: u32,
        /// The launch's dynamic LDS.
        dynamic_lds: u32,
        /// The limit (65536).
        limit: u32,
    },
    /// A grid dimension of zero.
    #[error("kernel {kernel}: grid {grid:?} is empty")]
    EmptyGrid {
        /// The kernel.
        kernel: String,
        /// The grid in workgroups.
        grid: [u32; 3],
    },
    /// grid x block exceeds the 32-bit work-item counts of the dispatch packet.
    #[error("kernel {kernel}: grid {grid:?} x block {block:?} exceeds 2^32 work-items in a dimension")]
    GridTooLarge {
        /// The kernel.
        kernel: String,
        /// The grid in workgroups.
        grid: [u32; 3],
        /// The block.
        block: [u32; 3],
    },

    // ---- buffers and tensors --------------------------------------------------------------
    /// Element counts differ between a buffer and a slice or another buffer.
    #[error("length mismatch: expected {expected} elements, got {actual}")]
    LengthMismatch {
        /// The length needed.
        expected: usize,
        /// The length given.
        actual: usize,
    },
    /// An operand lives on another device than the operation runs on (each device has its own
    /// memory: an address of one means nothing, or something else, on another).
    #[error("{op}: {operand} lives on another device than the operation's")]
    DeviceMismatch {
        /// The operation.
        op: &'static str,
        /// Which operand.
        operand: &'static str,
    },
    /// An allocation too large to address.
    #[error("allocation of {elements} elements of {elem_size} bytes overflows")]
    AllocationOverflow {
        /// Elements asked for.
        elements: usize,
        /// Bytes per element.
        elem_size: usize,
    },
    /// The device ran out of memory (after the memory pool returned its cached blocks and the
    /// device finished its queued work).
    #[error("out of device memory: {requested} bytes requested, {free} bytes free")]
    OutOfMemory {
        /// The request in bytes.
        requested: u64,
        /// Free device memory in bytes when the request failed.
        free: u64,
    },
    /// The host could not allocate a buffer (a pinned buffer or its pageable fallback, the
    /// staging of a copy): reported instead of aborting.
    #[error("out of host memory allocating {bytes} bytes")]
    HostOutOfMemory {
        /// The request in bytes (saturating at `u64::MAX`).
        bytes: u64,
    },
    /// A stream, event or buffer of one device used with another.
    #[error("{what} belongs to another device")]
    ForeignHandle {
        /// What was passed.
        what: &'static str,
    },
    /// An operand's dtype is not one the operation takes.
    #[error("{op}: {what} has dtype {got}, expected {expected}")]
    DTypeMismatch {
        /// The operation.
        op: &'static str,
        /// Which operand.
        what: &'static str,
        /// Its dtype.
        got: DType,
        /// What was expected.
        expected: String,
    },
    /// Shapes that do not fit together.
    #[error("{op}: {message}")]
    Shape {
        /// The operation.
        op: &'static str,
        /// What is wrong.
        message: String,
    },
    /// A parameter outside its allowed range (axis, epsilon, tile size ...).
    #[error("{op}: {message}")]
    InvalidArgument {
        /// The operation.
        op: &'static str,
        /// What is wrong.
        message: String,
    },
    /// Strides that overlap, overflow, or are not supported by the operation.
    #[error("{op}: {message}")]
    Layout {
        /// The operation.
        op: &'static str,
        /// What is wrong.
        message: String,
    },
    /// A gather index outside the indexed axis (found by the kernel, which zero-fills that row;
    /// the output is discarded).
    #[error("{op}: index {index} at position {position} is out of range for an axis of size {size}")]
    IndexOutOfRange {
        /// The operation.
        op: &'static str,
        /// Position of the offending index in the index tensor (one of them, if several).
        position: usize,
        /// The index found there.
        index: i64,
        /// The size of the indexed axis.
        size: usize,
    },
    /// The operation is known but not implemented for this case (never a silent no-op).
    #[error("{op}: not implemented: {what}")]
    Unsupported {
        /// The operation.
        op: &'static str,
        /// The missing case.
        what: String,
    },
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
