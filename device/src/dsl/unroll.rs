//! Guaranteed loop unrolling.
//!
//! Why: register arrays (fragments, prefetch stages, accumulators) must only ever be indexed with
//! constants, or LLVM keeps them in scratch memory. LLVM unrolls constant-trip loops only when
//! its size heuristics agree, and Rust has no `#pragma unroll`, so kernels spell the copies out.

/// Runs `body` with `i` bound to each constant `0, 1, ...` below `n` (at most 16), as straight-line
/// code: `unroll!(i < N => { acc[i] = ...; })`. `n` should be a constant; each copy is guarded by
/// `i < n`, which then folds away.
#[macro_export]
macro_rules! unroll {
    ($i:ident < $n:expr => $body:block) => {
        $crate::unroll!(@each $i, $n, $body, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
    };
    (@each $i:ident, $n:expr, $body:block, $($k:literal)*) => {
        $( {
            #[allow(non_upper_case_globals)]
            const $i: usize = $k;
            if $i < $n $body
        } )*
    };
}

/// [`unroll!`] with a stated bound on `n`: `unroll_max!(i < n, 4 => { .. })` emits only the
/// copies `0..4` (bounds 1, 2, 3, 4, 6, 8 and 16). Nested `unroll!`s multiply their 16 copies
/// before LLVM folds the guards, which can exhaust the compiler's memory; small loops say how
/// small they are.
#[macro_export]
macro_rules! unroll_max {
    ($i:ident < $n:expr, 1 => $body:block) => { $crate::unroll!(@each $i, $n, $body, 0) };
    ($i:ident < $n:expr, 2 => $body:block) => { $crate::unroll!(@each $i, $n, $body, 0 1) };
    ($i:ident < $n:expr, 3 => $body:block) => { $crate::unroll!(@each $i, $n, $body, 0 1 2) };
    ($i:ident < $n:expr, 4 => $body:block) => { $crate::unroll!(@each $i, $n, $body, 0 1 2 3) };
    ($i:ident < $n:expr, 6 => $body:block) => { $crate::unroll!(@each $i, $n, $body, 0 1 2 3 4 5) };
    ($i:ident < $n:expr, 8 => $body:block) => { $crate::unroll!(@each $i, $n, $body, 0 1 2 3 4 5 6 7) };
    ($i:ident < $n:expr, 16 => $body:block) => { $crate::unroll!($i < $n => $body) };
}
