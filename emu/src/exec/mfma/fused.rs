//! The fused-group arithmetic of the f16/bf16/fp8 MFMAs: `c + sum(products)` with every term
//! aligned to the group's largest exponent, truncated toward zero to 24 fraction bits, summed
//! exactly and rounded once (nearest even) to f32 (GFX942.md, after arXiv 2511.10909).
//!
//! [`group`] is the definition, one accumulator at a time. [`rows_generic`] computes the same
//! bits for a whole MFMA, an output row at a time with the row's columns side by side, in plain
//! f64 arithmetic the compiler vectorises: it is where the emulator spends most of its time on
//! matrix-core kernels (about half of a model decode step before it existed). Its baseline
//! truncation avoids float-to-integer conversions, which baseline x86-64 (SSE2) cannot
//! vectorise; `simd` compiles it (with the operand decoding) for wider vectors, where `trunc`
//! is one instruction.

/// Biased f64 exponent field of `x` (0 for zero and denormals, 2047 for inf/NaN).
#[inline(always)]
fn exp_field(x: f64) -> u64 {
    (x.to_bits() >> 52) & 0x7ff
}

/// One fused group: `c + sum(p)`, every term aligned to the largest exponent and truncated
/// toward zero to 24 fraction bits, summed exactly, rounded once (nearest even) to f32.
///
/// Implemented in fixed point: with `e` the largest exponent, each term times `2^(24 - e)` is
/// truncated to an integer (below 2^25 in magnitude), the integers are summed in i64 (exact),
/// and the sum scaled back and rounded. Infinities and NaNs fall back to plain summation, which
/// propagates them as the hardware does.
pub(crate) fn group(c: f32, products: &[f64]) -> f32 {
    let c64 = c as f64;
    let mut emax = exp_field(c64);
    let mut special = emax == 2047;
    for &p in products {
        let e = exp_field(p);
        special |= e == 2047;
        emax = emax.max(e);
    }
    if special {
        return (products.iter().sum::<f64>() + c64) as f32;
    }
    if emax == 0 {
        return c; // everything is zero: keep C, sign included
    }
    // 2^(24 - (emax - 1023)) as an f64, built from its bits (emax is a biased exponent).
    let scale = f64::from_bits((2070 - emax) << 52);
    let mut sum = (c64 * scale) as i64;
    for &p in products {
        sum += (p * scale) as i64;
    }
    if sum == 0 {
        return 0.0;
    }
    (sum as f64 / scale) as f32
}

/// `x` truncated toward zero, for `|x| < 2^52`, with adds and bit operations only: `|x| + 2^52`
/// rounds `|x|` to the nearest integer (the spacing of doubles there is 1), one step back when
/// that went up, the sign copied back.
#[inline(always)]
fn trunc(x: f64) -> f64 {
    const TWO_52: f64 = 4_503_599_627_370_496.0;
    let ax = x.abs();
    let r = (ax + TWO_52) - TWO_52;
    let r = if r > ax { r - 1.0 } else { r };
    r.copysign(x)
}

/// Exponent fields for which the vector path's scale is a normal power of two: others (zeros
/// only) go through [`group`], as do infinities and NaNs.
#[inline(always)]
fn plain(e: u64) -> bool {
    (64..2047).contains(&e)
}

/// One output row: `acc[j] = group(acc[j], a[t] * b[t][j] for t < G)` for every column j.
///
/// The result is the bits of [`group`]: the largest exponent is that of the largest magnitude;
/// the aligned terms are integers below 2^25, so their sum (at most 17 of them) is exact in f64
/// whatever the order, and so is scaling it back by a power of two; [`trunc`] is the `as i64`
/// truncation of those values; adding +0 turns the -0 of an all-cancelling sum into the +0
/// [`group`] returns and changes nothing else.
#[inline(always)]
fn row<const M: usize, const G: usize, const HW: bool>(acc: &mut [f32; M], a: &[f64; G], b: &[[f64; M]; G]) {
    // With SSE4.1 and up (the `simd` levels) `f64::trunc` is one instruction; without, a library
    // call, and [`trunc`]'s adds vectorise instead. The same values either way.
    let trunc = |x: f64| if HW { x.trunc() } else { trunc(x) };
    // Per column: the largest magnitude (a NaN term may be missed: `nan` catches it), and
    // `nan`, which stays zero while every term is finite (`x * 0` is NaN for an infinite or
    // NaN `x`, else a zero). Both in f64 lanes: a `[bool; M]` of flags, packed to bytes,
    // cost a store-to-load stall per product and was most of an MFMA's time.
    let mut p = [[0f64; M]; G];
    let mut big = [0f64; M];
    let mut nan = [0f64; M];
    for j in 0..M {
        let c = acc[j] as f64;
        big[j] = c.abs();
        nan[j] = c * 0.0;
    }
    for t in 0..G {
        for j in 0..M {
            let x = a[t] * b[t][j];
            p[t][j] = x;
            let ax = x.abs();
            big[j] = big[j].max(ax);
            nan[j] += x * 0.0;
        }
    }
    let mut out = [0f32; M];
    let mut odd = false;
    for j in 0..M {
        let e = exp_field(big[j]);
        odd |= !(plain(e) && nan[j] == 0.0);
        // 2^(24 - (e - 1023)) and its inverse, from their bits (garbage for odd lanes, which
        // are recomputed below).
        let scale = f64::from_bits((2070u64.wrapping_sub(e) & 0x7ff) << 52);
        let inv = f64::from_bits((e.wrapping_sub(24) & 0x7ff) << 52);
        let mut s = trunc(acc[j] as f64 * scale);
        for pt in &p {
            s += trunc(pt[j] * scale);
        }
        out[j] = (s * inv) as f32 + 0.0;
    }
    if odd {
        for j in 0..M {
            if !(plain(exp_field(big[j])) && nan[j] == 0.0) {
                let col: [f64; G] = core::array::from_fn(|t| p[t][j]);
                out[j] = group(acc[j], &col);
            }
        }
    }
    *acc = out;
}

/// A whole MFMA of `KK` k-steps in groups of `G`: `acc[i][j] += sum_k a[i][k] * b[k][j]` group by
/// group, `at` A transposed (`at[k][i] = a[i][k]`) and `b` row-major `KK x M`: both as the lanes
/// hold them, runs of `M` rows (columns) per k.
///
/// A group whose A values are all zero leaves a finite accumulator row as it is, provided B's
/// group is finite, so it is skipped (the padding rows of a skinny GEMM, 15 of 16 rows of a
/// decode step's GEMV, are all such groups). Exact: every product is then `±0 * finite = ±0`,
/// and [`group`] of a finite `c` and zeros returns `c`'s bits: for `c = ±0` the largest exponent
/// field is 0 and `c` is returned as is; otherwise `c`'s exponent is the largest, `c` is `m *
/// 2^q` with `m < 2^24` an integer and `q` at least 23 below that exponent (f32 denormals
/// included, whose `q` is -149), so `c * 2^(24 - e)` is an integer, truncation keeps it, the
/// zero terms add nothing, the sum is nonzero and dividing by the power of two gives `c` back.
/// Infinite or NaN C values and non-finite B values take the general path. A row whose A group
/// and C row repeat, bit for bit, those of the row computed before it gets that row's result
/// (a skinny GEMM may pad its rows with copies of the last: the quantized GEMV's staged
/// activations do, and then every row of every MFMA is the same; when every row of A and C is
/// the same, only row 0 is computed at all). Groups run in k order for every row, as the
/// definition adds them.
#[inline(always)]
pub(super) fn rows_generic<const M: usize, const KK: usize, const G: usize, const HW: bool>(
    acc: &mut [[f32; M]; M],
    at: &[[f64; M]; KK],
    b: &[[f64; M]; KK],
    a_rows_same: bool,
) {
    const { assert!(KK % G == 0) };
    // Every row of A and of C the same, bit for bit (a GEMV's padded rows): every row's result
    // is row 0's, so only row 0 is computed, then copied. `a_rows_same` says the caller knows
    // A's rows are (from the lanes' bits).
    let same = |x: f64, y: f64| x.to_bits() == y.to_bits();
    let uniform = (a_rows_same || at.iter().all(|k| k.iter().all(|&x| same(x, k[0])))) && rows_same(acc);
    if uniform {
        let a0: [f64; KK] = core::array::from_fn(|k| at[k][0]);
        uniform_rows::<M, KK, G, HW>(acc, &a0, b);
        return;
    }
    for g in 0..KK / G {
        let bg: &[[f64; M]; G] = b[g * G..(g + 1) * G].try_into().expect("G rows");
        let b_finite = finite_group(bg);
        // Rows of A with a nonzero (or NaN) value in this group, all rows side by side.
        let mut live = [false; M];
        for k in &at[g * G..(g + 1) * G] {
            for (l, &x) in live.iter_mut().zip(k) {
                *l |= x != 0.0;
            }
        }
        // The last row computed in this group: its index, A values and C before.
        let mut last: Option<(usize, [f64; G], [f32; M])> = None;
        for i in 0..M {
            if !live[i] && b_finite && acc[i].iter().all(|c| c.abs() < f32::INFINITY) {
                continue;
            }
            let ag: [f64; G] = core::array::from_fn(|t| at[g * G + t][i]);
            if let Some((j, la, lc)) = &last
                && ag.iter().zip(la).all(|(x, y)| x.to_bits() == y.to_bits())
                && acc[i].iter().zip(lc).all(|(x, y)| x.to_bits() == y.to_bits())
            {
                // The same inputs as row j, bit for bit: the same result.
                acc[i] = acc[*j];
                continue;
            }
            let before = acc[i];
            row::<M, G, HW>(&mut acc[i], &ag, bg);
            last = Some((i, ag, before));
        }
    }
}

/// Whether every row of `acc` is row 0, bit for bit.
#[inline(always)]
pub(super) fn rows_same<const M: usize>(acc: &[[f32; M]; M]) -> bool {
    // (Plain loops folding a flag, here and below, which vectorise.)
    let mut same = true;
    for r in acc {
        for (x, y) in r.iter().zip(&acc[0]) {
            same &= x.to_bits() == y.to_bits();
        }
    }
    same
}

/// Whether every value of a group of B is finite.
#[inline(always)]
fn finite_group<const M: usize, const G: usize>(bg: &[[f64; M]; G]) -> bool {
    let mut finite = true;
    for r in bg {
        for x in r {
            finite &= x.abs() < f64::INFINITY;
        }
    }
    finite
}

/// [`rows_generic`] when every row of A is `a` (its k values) and every row of `acc` the same
/// (see [`rows_same`]): row 0 alone is computed, with the same skip rule, then copied to every
/// row. The quantized decode GEMV's MFMAs all take this path; its caller builds `a` straight
/// from the lanes, not A's whole `KK x M`.
#[inline(always)]
pub(super) fn uniform_rows<const M: usize, const KK: usize, const G: usize, const HW: bool>(
    acc: &mut [[f32; M]; M],
    a: &[f64; KK],
    b: &[[f64; M]; KK],
) {
    const { assert!(KK % G == 0) };
    let mut r0 = acc[0];
    for g in 0..KK / G {
        let bg: &[[f64; M]; G] = b[g * G..(g + 1) * G].try_into().expect("G rows");
        let ag: [f64; G] = a[g * G..(g + 1) * G].try_into().expect("G values");
        let mut skip = finite_group(bg);
        for &x in &ag {
            skip &= x == 0.0;
        }
        for c in &r0 {
            skip &= c.abs() < f32::INFINITY;
        }
        if skip {
            continue;
        }
        row::<M, G, HW>(&mut r0, &ag, bg);
    }
    acc.fill(r0);
}

/// `c + sum_k a[k] * b[k]` group by group, with [`uniform_rows`]' skip rule: an MFMA's element
/// when every row of A is `a`, every column of B is `b` and every element of C is `c` (the
/// one-row quantized GEMV's activation sums, `x . 1`).
#[inline(always)]
pub(super) fn one_element<const KK: usize, const G: usize, const HW: bool>(c: f32, a: &[f64; KK], b: &[f64; KK]) -> f32 {
    const { assert!(KK % G == 0) };
    let mut c = [c];
    for g in 0..KK / G {
        let bg: [[f64; 1]; G] = core::array::from_fn(|t| [b[g * G + t]]);
        let ag: [f64; G] = a[g * G..(g + 1) * G].try_into().expect("G values");
        let mut skip = finite_group(&bg) && c[0].abs() < f32::INFINITY;
        for &x in &ag {
            skip &= x == 0.0;
        }
        if skip {
            continue;
        }
        row::<1, G, HW>(&mut c, &ag, &bg);
    }
    c[0]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_truncates_small_terms_then_rounds_once() {
        // 1 + 2^-30: the small product is below the 24-bit window and is truncated away.
        assert_eq!(group(1.0, &[2f64.powi(-30)]), 1.0);
        // Exact small sums are kept.
        assert_eq!(group(0.0, &[1.0, 2.0, 3.0]), 6.0);
        // Round-to-nearest-even of the exact window sum: 1 + 2^-24 ties to 1.
        assert_eq!(group(1.0, &[2f64.powi(-24)]), 1.0);
        // 1 + 3*2^-24 rounds up to 1 + 2^-22.
        assert_eq!(group(1.0, &[3.0 * 2f64.powi(-24)]), 1.0 + 2f32.powi(-22));
        assert!(group(1.0, &[f64::INFINITY]).is_infinite());
        assert!(group(f32::NAN, &[1.0]).is_nan());
    }

    #[test]
    fn trunc_rounds_toward_zero() {
        for (x, t) in [(2.5, 2.0), (-2.5, -2.0), (2.999, 2.0), (-0.75, -0.0), (3.0, 3.0), (33554431.5, 33554431.0), (0.0, 0.0)] {
            assert_eq!(trunc(x), t, "{x}");
            assert_eq!(trunc(x), (x as i64) as f64, "{x}");
        }
    }

    /// A tiny deterministic generator (xorshift), so the test needs no dependency.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        /// Values an f16/bf16/fp8 product can take: mostly ordinary magnitudes, some exact
        /// zeros, huge and tiny values, cancelling pairs, and now and then an infinity or NaN.
        fn value(&mut self) -> f64 {
            let r = self.next();
            let mant = 1.0 + (r >> 40) as f64 / (1u64 << 24) as f64;
            let sign = if r & 1 == 0 { 1.0 } else { -1.0 };
            match r % 97 {
                0 => 0.0,
                1 => f64::INFINITY * sign,
                2 => f64::NAN,
                3..=6 => sign * mant * 2f64.powi(-130 + (r >> 8) as i32 % 20),
                7..=10 => sign * mant * 2f64.powi(100 + (r >> 8) as i32 % 27),
                _ => sign * mant * 2f64.powi((r >> 8) as i32 % 40 - 20),
            }
        }
    }

    /// [`rows_generic`] against [`group`] on random operands. With `sparse`, the operands
    /// of a skinny GEMM's padding: about half of A's row groups are zeros (either sign), B is
    /// finite in most rounds, and C takes zeros of both signs, f32 denormals, infinities and
    /// NaNs, so that the all-zero-group skip is taken and its edges are crossed; and about half
    /// of the rows repeat the previous one (A in some or all groups, C or not), for the reuse
    /// of a repeated row's result.
    fn check<const M: usize, const KK: usize, const G: usize>(seed: u64, sparse: bool) {
        let mut rng = Rng(seed);
        for round in 0..200 {
            let mut a: [[f64; KK]; M] = core::array::from_fn(|_| core::array::from_fn(|_| rng.value()));
            let mut b: [[f64; M]; KK] = core::array::from_fn(|_| core::array::from_fn(|_| rng.value()));
            let mut c: [[f32; M]; M] = core::array::from_fn(|_| core::array::from_fn(|_| rng.value() as f32));
            if sparse {
                for row in a.iter_mut() {
                    for grp in row.chunks_mut(G) {
                        if rng.next() % 2 == 0 {
                            for x in grp.iter_mut() {
                                *x = if rng.next() % 3 == 0 { -0.0 } else { 0.0 };
                            }
                        }
                    }
                }
                if round % 4 != 0 {
                    for x in b.iter_mut().flatten().filter(|x| !x.is_finite()) {
                        *x = 1.5;
                    }
                }
                for x in c.iter_mut().flatten() {
                    let r = rng.next();
                    *x = match r % 16 {
                        0 => 0.0,
                        1 => -0.0,
                        2 => f32::from_bits((r >> 32) as u32 & 0x807f_ffff),
                        3 => f32::INFINITY,
                        4 => f32::NEG_INFINITY,
                        5 => f32::NAN,
                        _ => *x,
                    };
                }
                // Rows repeating the previous one (a skinny GEMM that pads with copies of its
                // last row), in some groups or all, with C repeated too or not.
                for i in 1..M {
                    let r = rng.next();
                    if r % 2 == 0 {
                        for g in 0..KK / G {
                            if r >> 8 & 3 != 0 || g % 2 == 0 {
                                let prev = a[i - 1];
                                a[i][g * G..(g + 1) * G].copy_from_slice(&prev[g * G..(g + 1) * G]);
                            }
                        }
                        if r >> 4 & 3 != 0 {
                            c[i] = c[i - 1];
                        }
                    }
                }
                // Every row the same (a GEMV of one row padded with copies), but now and then
                // one C value that differs.
                if round % 5 == 1 {
                    for i in 1..M {
                        a[i] = a[0];
                        c[i] = c[0];
                    }
                    if round % 10 == 1 {
                        c[M - 1][M / 2] = c[0][M / 2] + 1.0;
                    }
                }
            }
            let mut want = c;
            for i in 0..M {
                for j in 0..M {
                    for g in 0..KK / G {
                        let p: Vec<f64> = (g * G..(g + 1) * G).map(|k| a[i][k] * b[k][j]).collect();
                        want[i][j] = group(want[i][j], &p);
                    }
                }
            }
            // The vector-width variants are checked against this one in `simd`.
            let at: [[f64; M]; KK] = core::array::from_fn(|k| core::array::from_fn(|i| a[i][k]));
            {
                let name = "rows_generic";
                let mut got = c;
                // What the caller knows from the lanes' bits: whether every row of A is the same.
                let a_rows_same = a.iter().all(|r| r.iter().zip(&a[0]).all(|(x, y)| x.to_bits() == y.to_bits()));
                rows_generic::<M, KK, G, false>(&mut got, &at, &b, a_rows_same);
                for i in 0..M {
                    for j in 0..M {
                        if want[i][j].is_nan() {
                            // Which NaN comes out depends on operand order in the products
                            // (x86 passes the first NaN's payload on); only NaN-ness is defined.
                            assert!(got[i][j].is_nan(), "{name} {M}x{M}x{KK} [{i}][{j}]: {} vs NaN", got[i][j]);
                            continue;
                        }
                        assert_eq!(
                            got[i][j].to_bits(),
                            want[i][j].to_bits(),
                            "{name} {M}x{M}x{KK} [{i}][{j}]: {} vs {}",
                            got[i][j],
                            want[i][j]
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn rows_give_the_bits_of_the_definition_for_every_fused_shape() {
        check::<32, 8, 8>(0x9e37_79b9_7f4a_7c15, false);
        check::<16, 16, 8>(0xd1b5_4a32_d192_ed03, false);
        check::<16, 32, 16>(0x8cb9_2ba7_2f3d_8dd7, false);
        check::<32, 16, 16>(0xa076_1d64_78bd_642f, false);
    }

    #[test]
    fn rows_skip_zero_groups_with_the_bits_of_the_definition() {
        check::<32, 8, 8>(0x2545_f491_4f6c_dd1d, true);
        check::<16, 16, 8>(0x9e37_79b9_7f4a_7c15, true);
        check::<16, 32, 16>(0xd1b5_4a32_d192_ed03, true);
        check::<32, 16, 16>(0x8cb9_2ba7_2f3d_8dd7, true);
    }
}
