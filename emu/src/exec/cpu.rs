//! The host CPU's vector instructions, for the emulator's hottest loops.
//!
//! The emulator is built for baseline x86-64 (SSE2) so that it runs on any x86-64 host; its
//! inner loops (64 lanes of an op, the operands of an MFMA) then use 2-wide vectors, and a fused
//! multiply-add is a library call that computes it in software (~30 cycles). The same source
//! compiled inside a function built for AVX2/FMA/F16C or AVX-512 runs 4 to 16 values a vector
//! and each FMA in one instruction. [`multiversion`] defines a function whose body is compiled
//! for each level and picks by the CPU. The results are the same values at every level: IEEE
//! operations round correctly at every width, and an FMA rounds once in software and in
//! hardware (which of two NaN operands comes out may differ, as the emulator does not model it
//! anywhere).

use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

/// How wide the host's vectors are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub(crate) enum Level {
    /// Baseline x86-64 (or another architecture): 128-bit vectors, no FMA.
    Baseline,
    /// x86-64-v3: AVX2, FMA, F16C, BMI1/2, LZCNT, POPCNT.
    V3,
    /// AVX-512 F, DQ, VL and BW on top of V3.
    Avx512,
}

impl Level {
    /// The widest level this CPU runs: detected once, then one load (every multiversioned call
    /// asks).
    #[inline]
    pub(crate) fn best() -> Level {
        static BEST: AtomicU8 = AtomicU8::new(u8::MAX);
        match BEST.load(Relaxed) {
            0 => Level::Baseline,
            1 => Level::V3,
            2 => Level::Avx512,
            _ => {
                let l = Level::detect();
                BEST.store(l as u8, Relaxed);
                l
            }
        }
    }

    fn detect() -> Level {
        #[cfg(target_arch = "x86_64")]
        {
            use std::is_x86_feature_detected as has;
            if has!("avx2") && has!("fma") && has!("f16c") && has!("bmi1") && has!("bmi2") && has!("lzcnt") && has!("popcnt") {
                if has!("avx512f") && has!("avx512dq") && has!("avx512vl") && has!("avx512bw") {
                    return Level::Avx512;
                }
                return Level::V3;
            }
        }
        Level::Baseline
    }
}

/// Defines a function whose body runs compiled for AVX-512 or x86-64-v3 (AVX2, FMA, F16C, BMI)
/// when the CPU has them, and as it is otherwise (module docs). The body is an
/// `#[inline(always)]` function inlined into a `#[target_feature]` one, so it and everything it
/// inlines (closures, `#[inline(always)]` helpers) get the features; a closure handed to a
/// generic wrapper instead may stay a separate baseline function.
macro_rules! multiversion {
    ($(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block) => {
        $(#[$meta])*
        $vis fn $name($($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            fn body($($arg: $ty),*) $(-> $ret)? $body
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,fma,f16c,bmi1,bmi2,lzcnt,popcnt")]
            unsafe fn v3($($arg: $ty),*) $(-> $ret)? {
                body($($arg),*)
            }
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f,avx512dq,avx512vl,avx512bw,avx2,fma,f16c,bmi1,bmi2,lzcnt,popcnt")]
            unsafe fn avx512($($arg: $ty),*) $(-> $ret)? {
                body($($arg),*)
            }
            #[cfg(target_arch = "x86_64")]
            match $crate::exec::cpu::Level::best() {
                // SAFETY: the CPU has every feature `avx512` is compiled for.
                $crate::exec::cpu::Level::Avx512 => return unsafe { avx512($($arg),*) },
                // SAFETY: the CPU has every feature `v3` is compiled for.
                $crate::exec::cpu::Level::V3 => return unsafe { v3($($arg),*) },
                $crate::exec::cpu::Level::Baseline => {}
            }
            body($($arg),*)
        }
    };
}
pub(crate) use multiversion;

multiversion! {
    /// `*dst = *src` for a vector register: with AVX2/AVX-512 a few wide moves, where baseline
    /// x86-64 calls `memmove` for 256 bytes (nearly every VALU result goes through here).
    pub(crate) fn copy_reg(dst: &mut [u32; 64], src: &[u32; 64]) {
        *dst = *src;
    }
}

/// `out[l] = f(srcs[0][l], .., srcs[N - 1][l])` for every lane, the loop compiled for the
/// widest vectors the CPU has (as [`multiversion`], for a generic `f`: per-lane shifts, which
/// baseline x86-64 has no vector form of, and 64-bit arithmetic vectorise only there). `f` is
/// inlined into each build.
#[inline(always)]
pub(crate) fn map_lanes<const N: usize, F: Fn([u32; N]) -> u32>(out: &mut [u32; 64], srcs: [&[u32; 64]; N], f: F) {
    #[inline(always)]
    fn body<const N: usize, F: Fn([u32; N]) -> u32>(out: &mut [u32; 64], srcs: [&[u32; 64]; N], f: F) {
        for (l, o) in out.iter_mut().enumerate() {
            *o = f(core::array::from_fn(|i| srcs[i][l]));
        }
    }
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx2,fma,f16c,bmi1,bmi2,lzcnt,popcnt")]
        unsafe fn v3<const N: usize, F: Fn([u32; N]) -> u32>(out: &mut [u32; 64], srcs: [&[u32; 64]; N], f: F) {
            body(out, srcs, f)
        }
        #[target_feature(enable = "avx512f,avx512dq,avx512vl,avx512bw,avx2,fma,f16c,bmi1,bmi2,lzcnt,popcnt")]
        unsafe fn avx512<const N: usize, F: Fn([u32; N]) -> u32>(out: &mut [u32; 64], srcs: [&[u32; 64]; N], f: F) {
            body(out, srcs, f)
        }
        match Level::best() {
            // SAFETY: the CPU has every feature `avx512` is compiled for.
            Level::Avx512 => return unsafe { avx512(out, srcs, f) },
            // SAFETY: the CPU has every feature `v3` is compiled for.
            Level::V3 => return unsafe { v3(out, srcs, f) },
            Level::Baseline => {}
        }
    }
    body(out, srcs, f)
}

/// The 64-lane mask whose bit `l` is `f(l)`, the loop compiled for the widest vectors the CPU
/// has (as [`map_lanes`]: a lane compare and the packing of its bits vectorise only there).
#[inline(always)]
pub(crate) fn mask_lanes<F: Fn(usize) -> bool>(f: F) -> u64 {
    #[inline(always)]
    fn body<F: Fn(usize) -> bool>(f: F) -> u64 {
        let mut bits = 0u64;
        for l in 0..64 {
            bits |= (f(l) as u64) << l;
        }
        bits
    }
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx2,fma,f16c,bmi1,bmi2,lzcnt,popcnt")]
        unsafe fn v3<F: Fn(usize) -> bool>(f: F) -> u64 {
            body(f)
        }
        #[target_feature(enable = "avx512f,avx512dq,avx512vl,avx512bw,avx2,fma,f16c,bmi1,bmi2,lzcnt,popcnt")]
        unsafe fn avx512<F: Fn(usize) -> bool>(f: F) -> u64 {
            body(f)
        }
        match Level::best() {
            // SAFETY: the CPU has every feature `avx512` is compiled for.
            Level::Avx512 => return unsafe { avx512(f) },
            // SAFETY: the CPU has every feature `v3` is compiled for.
            Level::V3 => return unsafe { v3(f) },
            Level::Baseline => {}
        }
    }
    body(f)
}

/// Eight f16 values as f32 through F16C's `vcvtph2ps`: exact, signalling NaNs quieted with
/// their payload kept, as `valu::f16_to_f64` (the scalar decoding, which the MFMA vector-width
/// test compares it with). For functions built for x86-64-v3 or AVX-512, which inline it.
///
/// # Safety
/// The CPU has F16C.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) unsafe fn f16x8_to_f32(h: [u16; 8]) -> [f32; 8] {
    use core::arch::x86_64::{__m128i, _mm_loadu_si128, _mm256_cvtph_ps};
    // SAFETY: 16 readable bytes; the caller's CPU has F16C; 32 bytes of f32 either way.
    unsafe { core::mem::transmute(_mm256_cvtph_ps(_mm_loadu_si128(h.as_ptr() as *const __m128i))) }
}
