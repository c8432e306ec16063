//! The one error type of the crate.

use crate::dtype::DType;
pub use ferrocm_codeobj::CodeObjectError;

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
    #[cfg(feature = "emulator")]
    #[error(transparent)]
    Emulator(#[from] ferrocm_emu::EmuError),
    /// The cycle model could not model a profiled launch
    /// ([`EmulatorDevice::model`](crate::emulator::EmulatorDevice::model)).
    #[cfg(feature = "emulator")]
    #[error("modeling {kernel}: {source}")]
    Modeling {
        /// The kernel.
        kernel: String,
        /// Why.
        source: ferrocm_emu::model::ModelError,
    },

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

    // ---- model files ----------------------------------------------------------------------
    /// A model file (safetensors, GGUF, a sharded checkpoint's index) is malformed, cannot be
    /// read, or holds something the caller did not allow (see [`crate::io`]).
    #[error("{}{}: {kind}", path.display(), tensor.as_ref().map(|t| format!(" (tensor {t:?})")).unwrap_or_default())]
    ModelFile {
        /// The file.
        path: std::path::PathBuf,
        /// The tensor (or metadata key, as `key ...`) concerned, when there is one.
        tensor: Option<String>,
        /// What is wrong.
        kind: ModelFileError,
    },
}

/// What is wrong with a model file (the `kind` of [`Error::ModelFile`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelFileError {
    /// The operating system refused an open, a read or a mapping.
    #[error("{op}: {source}")]
    Io {
        /// What was being done (`open`, `read`, `mmap` ...).
        op: &'static str,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The file ends before something it declares.
    #[error("truncated: {what} needs bytes up to {needed}, the file has {available}")]
    Truncated {
        /// What was being read.
        what: String,
        /// The end offset needed.
        needed: u64,
        /// The file's length.
        available: u64,
    },
    /// Not the expected format (wrong magic bytes).
    #[error("not a {format} file (starts with {found:02x?})")]
    BadMagic {
        /// The format expected.
        format: &'static str,
        /// The first bytes found.
        found: Vec<u8>,
    },
    /// A format version this reader does not implement.
    #[error("{format} version {version} is not supported ({supported})")]
    UnsupportedVersion {
        /// The format.
        format: &'static str,
        /// The version found.
        version: u32,
        /// What is supported.
        supported: &'static str,
    },
    /// The header (JSON of safetensors, a key/value of GGUF) is malformed.
    #[error("malformed header: {0}")]
    Header(String),
    /// Text that must be UTF-8 is not.
    #[error("{what} is not valid UTF-8")]
    NotUtf8 {
        /// Which text.
        what: String,
    },
    /// A count or size beyond what the file (or the format) can hold.
    #[error("{what} of {value} is beyond the limit of {limit}")]
    TooLarge {
        /// What was counted.
        what: String,
        /// The value found.
        value: u64,
        /// The largest possible here (often: the bytes left in the file).
        limit: u64,
    },
    /// A tensor's data lies (partly) outside the file's data section.
    #[error("data bytes {start}..{end} lie outside the {limit} bytes of the data section")]
    OutOfRange {
        /// First byte (relative to the data section).
        start: u64,
        /// One past the last byte.
        end: u64,
        /// Size of the data section.
        limit: u64,
    },
    /// Two tensors claim the same bytes.
    #[error("its data overlaps that of tensor {other:?}")]
    Overlap {
        /// The other tensor.
        other: String,
    },
    /// Tensor data not laid out as the format requires (gaps, misaligned offsets, trailing bytes).
    #[error("bad layout: {0}")]
    Layout(String),
    /// Shape x element size differs from the tensor's byte length.
    #[error("shape {shape:?} of {dtype} needs {expected} bytes, the file gives {actual}")]
    SizeMismatch {
        /// The shape as declared.
        shape: Vec<u64>,
        /// The element type's name.
        dtype: String,
        /// Bytes the shape needs.
        expected: u64,
        /// Bytes the offsets give.
        actual: u64,
    },
    /// An element type (safetensors dtype, GGML type id, GGUF value type) the format does not define.
    #[error("unknown {what} {found}")]
    UnknownType {
        /// Which kind of type (`dtype`, `GGML type`, `GGUF value type`).
        what: &'static str,
        /// What was found.
        found: String,
    },
    /// An element type ferrocm cannot hold on the device and the load options did not allow
    /// converting.
    #[error("{dtype} cannot be held on the device; {hint}")]
    UnsupportedDType {
        /// The file's type.
        dtype: String,
        /// How to load it anyway.
        hint: String,
    },
    /// A value does not survive the requested conversion (an i64 beyond i32, an fp8 beyond the
    /// FNUZ range ...).
    #[error("conversion {conversion}: {message}")]
    Conversion {
        /// The conversion (`i64->i32` ...).
        conversion: &'static str,
        /// The offending value and where.
        message: String,
    },
    /// A tensor or metadata key the file does not have.
    #[error("not found")]
    NotFound,
    /// A metadata value of another type than asked for.
    #[error("is {found}, expected {expected}")]
    WrongType {
        /// What was asked for.
        expected: &'static str,
        /// What the file has.
        found: String,
    },
    /// The same tensor name or metadata key twice.
    #[error("appears twice")]
    Duplicate,
    /// A sharded checkpoint's index (`model.safetensors.index.json`) is malformed.
    #[error("bad index: {0}")]
    Index(String),
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
