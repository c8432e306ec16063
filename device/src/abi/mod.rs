//! The kernel ABI shared by host and device: one `#[repr(C)]` argument struct per kernel family,
//! the element types kernels read and write, and the pointer type that carries device addresses.
//!
//! This module is the contract only: it names no kernel body and imports nothing of the kernels.
//! Every kernel is declared once, with [`kernel_abi!`](crate::kernel_abi): the macro emits the struct,
//! a typed [`Kernel`] handle per entry symbol, the layout table the host checks against the code
//! object's metadata, and (on amdgpu only) the macro with which the kernels side binds each
//! symbol's `extern "gpu-kernel"` entry point to its body.
//!
//! Why the entry points take the struct's fields one by one: on amdgcn, rustc passes an aggregate
//! argument of a `gpu-kernel` function indirectly (the kernarg segment would hold a pointer to the
//! struct, not the struct). Scalars and pointers are laid out in the kernarg segment in order, each
//! at its natural alignment, which is exactly the `repr(C)` layout of the struct; the launch check
//! compares the two field by field.

mod fp8;
mod ptr;

// `macro_use`: each module's binding macros (see `kernel_abi!`) stay in scope for the kernels.
#[macro_use]
pub mod attention;
#[macro_use]
pub mod contiguous;
#[macro_use]
pub mod elementwise;
#[macro_use]
pub mod gemm;
#[macro_use]
pub mod gemm_blockscaled;
#[macro_use]
pub mod movement;
#[macro_use]
pub mod norm;
#[macro_use]
pub mod quant;
#[macro_use]
pub mod reduce;
#[macro_use]
pub mod rope;
pub mod rowwise;
#[macro_use]
pub mod smoke;
#[macro_use]
pub mod softmax;

pub use fp8::{Fp8E4M3Fnuz, Fp8E5M2Fnuz};
pub use ptr::{Ptr, PtrMut};

#[cfg(not(target_arch = "amdgpu"))]
pub use ptr::DevPtr;

/// Every kernel symbol the device crate exports, grouped by argument struct. A test checks this
/// list against the built code object both ways, so a kernel missing here fails the build's tests.
pub const ALL_KERNELS: &[&[KernelDecl]] = &[
    <smoke::FillArgs as KernelArgs>::KERNELS,
    <smoke::CopyArgs as KernelArgs>::KERNELS,
    <smoke::SaxpyArgs as KernelArgs>::KERNELS,
    <smoke::MfmaTileArgs as KernelArgs>::KERNELS,
    <smoke::MfmaTileI8Args as KernelArgs>::KERNELS,
    <gemm::GemmArgs as KernelArgs>::KERNELS,
    <gemm::GemmReduceArgs as KernelArgs>::KERNELS,
    <gemm_blockscaled::BlockScaledArgs as KernelArgs>::KERNELS,
    <contiguous::CopyStridedArgs as KernelArgs>::KERNELS,
    <elementwise::EltArgs as KernelArgs>::KERNELS,
    <elementwise::FillPatternArgs as KernelArgs>::KERNELS,
    <movement::CopyRowsArgs as KernelArgs>::KERNELS,
    <movement::TransposeArgs as KernelArgs>::KERNELS,
    <reduce::ReduceRowsArgs as KernelArgs>::KERNELS,
    <reduce::ReduceColsArgs as KernelArgs>::KERNELS,
    <reduce::ReducePartialsArgs as KernelArgs>::KERNELS,
    <softmax::SoftmaxArgs as KernelArgs>::KERNELS,
    <norm::NormArgs as KernelArgs>::KERNELS,
    <quant::DequantArgs as KernelArgs>::KERNELS,
    <quant::QGemvArgs as KernelArgs>::KERNELS,
    <quant::QGemmArgs as KernelArgs>::KERNELS,
    <rope::RopeArgs as KernelArgs>::KERNELS,
    <attention::FlashArgs as KernelArgs>::KERNELS,
    <attention::DecodeArgs as KernelArgs>::KERNELS,
    <attention::DecodeCombineArgs as KernelArgs>::KERNELS,
    <attention::WriteKvArgs as KernelArgs>::KERNELS,
    <attention::RopeWriteKvArgs as KernelArgs>::KERNELS,
];

/// IEEE binary16 as the kernels see it (`half::f16` on the host, the native `f16` on the device).
#[cfg(not(target_arch = "amdgpu"))]
pub type F16 = half::f16;
/// IEEE binary16 as the kernels see it (`half::f16` on the host, the native `f16` on the device).
#[cfg(target_arch = "amdgpu")]
pub type F16 = f16;

/// bfloat16 as the kernels see it (`half::bf16` on the host, raw bits on the device, where Rust has
/// no native bf16; the DSL converts with shifts and the hardware's conversion instructions).
#[cfg(not(target_arch = "amdgpu"))]
pub type Bf16 = half::bf16;
/// bfloat16 as the kernels see it (`half::bf16` on the host, raw bits on the device, where Rust has
/// no native bf16; the DSL converts with shifts and the hardware's conversion instructions).
#[cfg(target_arch = "amdgpu")]
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Bf16(pub u16);

/// A typed handle naming one kernel symbol and the argument struct it takes.
///
/// Obtained from the constants that [`kernel_abi!`](crate::kernel_abi) declares (for example
/// [`smoke::SAXPY_F32`]); the host's launch takes a `Kernel<A>` and an `&A`, so passing the wrong
/// struct to a kernel does not compile.
pub struct Kernel<A> {
    name: &'static str,
    max_threads: u32,
    _args: core::marker::PhantomData<fn(A)>,
}

impl<A> Kernel<A> {
    /// A handle for the kernel symbol `name` taking `A`, launchable with up to 1024 work-items
    /// per workgroup. Use the constants of the `abi` modules.
    pub const fn new(name: &'static str) -> Self {
        Self::with_max_threads(name, DEFAULT_MAX_THREADS)
    }

    /// A handle whose kernel was compiled for at most `max_threads` work-items per workgroup.
    pub const fn with_max_threads(name: &'static str, max_threads: u32) -> Self {
        Kernel { name, max_threads, _args: core::marker::PhantomData }
    }

    /// The kernel's symbol name in the code object (its descriptor is `<name>.kd`).
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The largest workgroup the kernel was compiled for.
    pub const fn max_threads(&self) -> u32 {
        self.max_threads
    }
}

impl<A> Clone for Kernel<A> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<A> Copy for Kernel<A> {}

impl<A> core::fmt::Debug for Kernel<A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Kernel({})", self.name)
    }
}

/// The workgroup size bound of kernels that declare none (the hardware maximum).
pub const DEFAULT_MAX_THREADS: u32 = 1024;

/// A declared kernel: its symbol and the largest workgroup it is compiled for.
///
/// Why the bound matters: LLVM sizes a kernel's register budget for its largest workgroup. At
/// 1024 work-items (16 waves, 4 per SIMD) a wave gets 128 registers; at 256 (1 wave per SIMD
/// minimum) it may use all 512. The device build passes the bound to LLVM as
/// `amdgpu-flat-work-group-size`, so it also lands in the code object's metadata and launches
/// with larger workgroups are refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelDecl {
    /// The entry symbol.
    pub name: &'static str,
    /// The largest workgroup (work-items) it may be launched with.
    pub max_threads: u32,
}

/// Where one field of an argument struct lives (what the launch compares with the metadata).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldLayout {
    /// The field's name.
    pub name: &'static str,
    /// Byte offset in the struct and in the kernarg segment.
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
}

/// Implemented by every argument struct declared with [`kernel_abi!`](crate::kernel_abi).
pub trait KernelArgs: Copy {
    /// The struct's name, for error messages.
    const NAME: &'static str;
    /// The kernels that take this struct.
    const KERNELS: &'static [KernelDecl];
    /// The struct's fields in declaration order.
    const FIELDS: &'static [FieldLayout];

    /// Writes the kernarg bytes: every field at its offset, padding zeroed.
    ///
    /// `out` must be `size_of::<Self>()` bytes long; the host launch path guarantees it.
    #[cfg(not(target_arch = "amdgpu"))]
    fn write_kernargs(&self, out: &mut [u8]);
}

/// A value that can be a kernel argument: a scalar or a device pointer, written little-endian.
#[cfg(not(target_arch = "amdgpu"))]
pub trait KernArg: Copy {
    /// Writes the value's bytes at the start of `out`.
    fn write_le(&self, out: &mut [u8]);
}

#[cfg(not(target_arch = "amdgpu"))]
macro_rules! impl_kernarg_scalar {
    ($($t:ty),*) => {$(
        impl KernArg for $t {
            fn write_le(&self, out: &mut [u8]) {
                let bytes = self.to_le_bytes();
                out[..bytes.len()].copy_from_slice(&bytes);
            }
        }
    )*};
}
#[cfg(not(target_arch = "amdgpu"))]
impl_kernarg_scalar!(u8, u16, u32, u64, i8, i16, i32, i64, f32, f64);

#[cfg(not(target_arch = "amdgpu"))]
impl KernArg for half::f16 {
    fn write_le(&self, out: &mut [u8]) {
        self.to_bits().write_le(out)
    }
}

#[cfg(not(target_arch = "amdgpu"))]
impl KernArg for half::bf16 {
    fn write_le(&self, out: &mut [u8]) {
        self.to_bits().write_le(out)
    }
}

/// Declares a kernel argument struct and the kernel entry symbols that take it: the contract
/// between host and device. It names no kernel body; the kernels side binds bodies to the symbols
/// (see below).
///
/// ```ignore
/// kernel_abi! {
///     /// Arguments of y = a*x + y.
///     pub struct SaxpyArgs {
///         /// x, n elements.
///         pub x: Ptr<f32>,
///         /// y, n elements, updated in place.
///         pub y: PtrMut<f32>,
///         /// The scale a.
///         pub a: f32,
///         /// Element count.
///         pub n: u32,
///     }
///     kernels {
///         /// y = a*x + y over f32.
///         SAXPY_F32 = "saxpy_f32" @ 256,
///     }
/// }
/// ```
/// Fields must be scalars or [`Ptr`]/[`PtrMut`] of scalars or of the ABI's element types (the
/// entry point names those types at the binding site). `NAME = "symbol" @ 256` declares a kernel
/// compiled for workgroups of at most 256 work-items (see [`KernelDecl`]); without `@` the bound
/// is 1024.
///
/// On amdgpu the macro also defines a binding macro named like the struct (macros live in their
/// own namespace), in textual scope after the declaration: the kernels side writes
/// `SaxpyArgs! { SAXPY_F32 => saxpy_f32, }` to export the `extern "gpu-kernel"` entry point
/// `saxpy_f32` that takes the struct's fields and calls the body (any expression callable as
/// `fn(SaxpyArgs)`, with `SaxpyArgs` in scope; the ABI's element types `Bf16`, `F16` and the fp8
/// types are in scope in it). A name the declaration does not list matches no
/// rule and does not compile; a declared kernel left unbound is missing from the code object,
/// which the code-object tests report.
#[macro_export]
macro_rules! kernel_abi {
    (
        $(#[$meta:meta])*
        pub struct $name:ident { $( $(#[$fmeta:meta])* pub $field:ident : $ty:ty ),* $(,)? }
        kernels { $( $(#[$kmeta:meta])* $konst:ident = $sym:literal $(@ $mt:literal)? ),* $(,)? }
    ) => {
        $(#[$meta])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug)]
        pub struct $name { $( $(#[$fmeta])* pub $field: $ty ),* }

        impl $crate::abi::KernelArgs for $name {
            const NAME: &'static str = stringify!($name);
            const KERNELS: &'static [$crate::abi::KernelDecl] = &[ $(
                $crate::abi::KernelDecl { name: $sym, max_threads: $crate::kernel_abi!(@bound $($mt)?) }
            ),* ];
            const FIELDS: &'static [$crate::abi::FieldLayout] = &[ $(
                $crate::abi::FieldLayout {
                    name: stringify!($field),
                    offset: ::core::mem::offset_of!($name, $field),
                    size: ::core::mem::size_of::<$ty>(),
                }
            ),* ];

            #[cfg(not(target_arch = "amdgpu"))]
            fn write_kernargs(&self, out: &mut [u8]) {
                out.fill(0);
                $( $crate::abi::KernArg::write_le(
                    &self.$field, &mut out[::core::mem::offset_of!($name, $field)..]); )*
            }
        }

        $(
            $(#[$kmeta])*
            pub const $konst: $crate::abi::Kernel<$name> =
                $crate::abi::Kernel::with_max_threads($sym, $crate::kernel_abi!(@bound $($mt)?));
        )*

        $crate::kernel_abi!(@binder [$] $name ( $( $field: $ty ),* ) { $( $field ),* } $( $konst = $sym ),*);
    };

    (@bound) => { $crate::abi::DEFAULT_MAX_THREADS };
    (@bound $mt:literal) => { $mt };

    // The binding macro. `$d` is a `$` token (passed in brackets, where it is not read as the
    // start of a metavariable), so the generated macro can have metavariables of its own; the fields travel as two token groups, the entry's parameter list and the struct
    // literal's field list.
    (@binder [$d:tt] $name:ident $params:tt $inits:tt $( $konst:ident = $sym:literal ),*) => {
        #[cfg(target_arch = "amdgpu")]
        #[allow(unused_macros)]
        macro_rules! $name {
            () => {};
            $(
                ($konst => $d body:expr $d(, $d($d rest:tt)*)?) => {
                    const _: () = {
                        // The field types as written in the declaration resolve here, at the
                        // binding site: the ABI's value types are the only non-primitive ones.
                        #[allow(unused_imports)]
                        use $crate::abi::{Bf16, F16, Fp8E4M3Fnuz, Fp8E5M2Fnuz, Ptr, PtrMut};
                        #[unsafe(export_name = $sym)]
                        extern "gpu-kernel" fn entry $params {
                            ($d body)($name $inits)
                        }
                    };
                    $name! { $d($d($d rest)*)? }
                };
            )*
        }
    };
}
