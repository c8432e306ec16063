//! One wave computes a 32x32 f32 tile `C = A * B` (A 32xK, B Kx32, f16) on the matrix cores.
//!
//! The smallest kernel that uses every piece a GEMM needs: global loads into LDS, a barrier, MFMA
//! operand fragments read back from LDS in the instruction's lane layout, accumulation over K and
//! the scatter of the accumulator layout to row-major C.

use crate::abi::F16;
use crate::abi::smoke::{MFMA_TILE, MFMA_TILE_K_STEP, MfmaTileArgs};
use crate::dsl::lds::LdsArena;
use crate::dsl::mfma::mfma_32x32x8_f16;
use crate::dsl::simd::{F16x4, F32x16};
use crate::dsl::sync::barrier;
use crate::dsl::wave::lane_id;

const M: usize = MFMA_TILE as usize;
const KS: usize = MFMA_TILE_K_STEP as usize;

/// Launch: one workgroup of 64 work-items, `MFMA_TILE_LDS_BYTES` of dynamic LDS.
#[inline(always)]
pub fn mfma_tile_32x32_f16(args: MfmaTileArgs) {
    let mut lds = LdsArena::new();
    // A slab stored row-major [32][8]; B slab stored transposed [32 (j)][8 (k)] so both operands
    // are read as 4 consecutive halves (one ds_read_b64) per lane.
    let a_s = lds.take::<F16>(M * KS);
    let b_s = lds.take::<F16>(M * KS);

    let l = lane_id() as usize;
    // 32x32x8 layout (GFX942.md): A[i][k] in lane 32*(k/4) + i, B[k][j] in lane 32*(k/4) + j;
    // lane l holds row/column l%32 and k = 4*(l/32) .. +4.
    let row = l % 32;
    let k0 = 4 * (l / 32);
    // Global -> LDS: the 256 halves of each slab are 64 lanes x 4.
    let (ga_row, ga_k) = (l / 2, 4 * (l % 2));
    let (gb_k, gb_col) = (l / 8, 4 * (l % 8));

    let mut acc = F32x16::splat(0.0);
    let k = args.k as usize;
    let mut kb = 0;
    while kb < k {
        // SAFETY: indices are within the 32 x k and k x 32 inputs (k is a multiple of 8, host
        // checked) and within the two LDS slabs; the barriers order the LDS traffic.
        unsafe {
            let a4: [F16; 4] = (args.a.add(ga_row * k + kb + ga_k) as *const [F16; 4]).read();
            a_s.write_as(ga_row * KS + ga_k, a4);
            let b4: [F16; 4] = (args.b.add((kb + gb_k) * M + gb_col) as *const [F16; 4]).read();
            let mut c = 0;
            while c < 4 {
                b_s.write((gb_col + c) * KS + gb_k, b4[c]);
                c += 1;
            }
            barrier();
            let af: [F16; 4] = a_s.read_as(row * KS + k0);
            let bf: [F16; 4] = b_s.read_as(row * KS + k0);
            acc = mfma_32x32x8_f16(F16x4::from_array(af), F16x4::from_array(bf), acc);
            barrier();
        }
        kb += KS;
    }

    // C[i][j] is in register 4*(i/8) + i%4 of lane (32*(i/4))%64 + j: register r of lane l holds
    // i = 8*(r/4) + 4*(l/32) + r%4, j = l%32.
    let c = acc.to_array();
    let mut r = 0;
    while r < 16 {
        let i = 8 * (r / 4) + 4 * (l / 32) + r % 4;
        // SAFETY: i, row < 32; C holds 32x32.
        unsafe { args.c.add(i * M + row).write(c[r]) };
        r += 1;
    }
}
