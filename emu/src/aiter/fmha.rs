//! AITER's flash-attention forward v3 (`fmha_v3_fwd`): head dim 128, bf16, batch mode.
//!
//! Facts from the wheel: `hsa/gfx942/fmha_v3_fwd/codegen.py` (the `fmha_fwd_v3_args` fill-in,
//! the grid of `fmha_fwd_v3_kernel::launch_kernel`, the tile sizes `ts_qo` 256 and `ts_kv` 32,
//! `MI300/` kernels for 304 CUs and `MI308/` for 80 or 64), `csrc/include/mha_fwd.h` (the packed
//! argument struct) and `csrc/py_itfs_cu/asm_mha_fwd.cu` (the tensor layouts and strides).
//!
//! Layouts (row-major, element strides): Q and O `[b, sq, hq, 128]`, K and V `[b, sk, hk, 128]`
//! (bf16), LSE `[b, hq, sq]` (f32, natural log). Query head `h` reads key/value head
//! `h / (hq / hk)` (GQA).

use super::{Args, Launch, symbol};

/// Query rows per workgroup (`FmhaFwdV3Ts::ts_qo`).
pub const TS_QO: u32 = 256;
/// Key rows per inner step (`FmhaFwdV3Ts::ts_kv`).
pub const TS_KV: u32 = 32;
/// The one head dimension these kernels take.
pub const HEAD_DIM: u32 = 128;

/// Which chip's build of the kernels: AITER picks `MI300/` on 304 CUs and `MI308/` on 80 or 64.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chip {
    /// MI300X, 304 CUs.
    Mi300,
    /// MI308X, 80 CUs.
    Mi308,
}

impl Chip {
    /// The build AITER loads on a GPU of `cu_num` CUs, if any.
    pub fn for_cus(cu_num: u32) -> Option<Chip> {
        match cu_num {
            304 => Some(Chip::Mi300),
            80 | 64 => Some(Chip::Mi308),
            _ => None,
        }
    }

    fn dir(self) -> &'static str {
        match self {
            Chip::Mi300 => "MI300",
            Chip::Mi308 => "MI308",
        }
    }
}

/// How the kernels round the bf16 output: the `_rtne`/`_rtna`/`_rtz` builds (`how_v3_bf16_cvt`
/// 0, 1, 2), and the plain build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rounding {
    /// `fwd_hd128_bf16[_causal].co`.
    Plain,
    /// Round to nearest even.
    Rtne,
    /// Round to nearest, ties away.
    Rtna,
    /// Round toward zero.
    Rtz,
}

/// One attention forward launch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Attention {
    /// Batch.
    pub batch: u32,
    /// Query heads.
    pub heads_q: u32,
    /// Key/value heads (divides `heads_q`).
    pub heads_kv: u32,
    /// Query rows.
    pub seq_q: u32,
    /// Key/value rows.
    pub seq_kv: u32,
    /// Causal mask (bottom-right aligned when `seq_q != seq_kv`).
    pub causal: bool,
    /// Write the log-sum-exp of each query row.
    pub lse: bool,
    /// Softmax scale (usually `1/sqrt(128)`).
    pub scale: f32,
}

impl Attention {
    /// The code object (relative to `hsa/gfx942/`) and kernel name for `chip` and `rounding`.
    pub fn kernel(&self, chip: Chip, rounding: Rounding) -> (String, String) {
        let mut name = String::from("fwd_hd128_bf16");
        if self.causal {
            name.push_str("_causal");
        }
        match rounding {
            Rounding::Plain => {}
            Rounding::Rtne => name.push_str("_rtne"),
            Rounding::Rtna => name.push_str("_rtna"),
            Rounding::Rtz => name.push_str("_rtz"),
        }
        (format!("fmha_v3_fwd/{}/{name}.co", chip.dir()), format!("fmha_{name}"))
    }

    /// Forward FLOPs by the usual convention (4 * sq * sk * d per head; causal counts half).
    pub fn flops(&self) -> f64 {
        let full = 4.0 * self.batch as f64 * self.heads_q as f64 * self.seq_q as f64 * self.seq_kv as f64 * HEAD_DIM as f64;
        if self.causal { full / 2.0 } else { full }
    }

    /// The launch `fmha_fwd_v3_dispatcher` makes for tensors at `o`, `q`, `k`, `v`, `lse` (0
    /// when not written): 512 work-items (8 waves) per 256 query rows of one head of one batch
    /// (x over query tiles, pairs of tiles when causal; y over heads; z over the batch).
    ///
    /// # Panics
    /// If `heads_kv` does not divide `heads_q` or a size is zero (the host code refuses both).
    pub fn launch(&self, chip: Chip, rounding: Rounding, o: u64, q: u64, k: u64, v: u64, lse: u64) -> Launch {
        assert!(self.heads_kv > 0 && self.heads_q % self.heads_kv == 0, "{} query heads over {} kv heads", self.heads_q, self.heads_kv);
        assert!(self.batch > 0 && self.seq_q > 0 && self.seq_kv > 0, "empty attention {self:?}");
        let (d, hq, hk, sq, sk) = (HEAD_DIM, self.heads_q, self.heads_kv, self.seq_q, self.seq_kv);
        // Element strides of the [b, s, h, d] layouts, in bytes (the dispatcher doubles them).
        let (q_seq, q_head, q_batch) = (2 * hq * d, 2 * d, 2 * sq * hq * d);
        let (k_seq, k_head, k_batch) = (2 * hk * d, 2 * d, 2 * sk * hk * d);
        // `tune_opt` 5, or 3 for a causal kernel when the heads are not a multiple of 8 or the
        // sequence exceeds 16K (the dispatcher's comment: "downgrade").
        let opt = if self.causal && (hq % 8 != 0 || sq > 16384) { 3 } else { 5 };
        let kernargs = Args::new()
            .ptr(o)
            .ptr(q)
            .ptr(k)
            .ptr(v)
            .ptr(lse)
            .f32(self.scale)
            .u32(sq)
            .u32(q_seq)
            .u32(TS_QO * q_seq)
            .u32(q_head)
            .u32(q_batch)
            .u32(hq / hk)
            .u32(k_seq)
            .u32(k_head)
            .u32(k_batch)
            .u32(opt)
            .u32(self.lse as u32)
            .u32(sk)
            .u32(d)
            .u32(d)
            .u32(hq)
            .u32(k_seq) // V strides: V is laid out as K
            .u32(k_head)
            .u32(k_batch)
            .u32(q_seq) // O strides: O is laid out as Q
            .u32(q_head)
            .u32(q_batch)
            .ptr(0) // seqstart pointers: batch mode has none
            .ptr(0)
            .u32(4 * sq) // LSE head stride in bytes
            .ptr(0)
            .ptr(0)
            .bytes();
        let tiles = sq.div_ceil(TS_QO);
        let gx = if self.causal { tiles.div_ceil(2) } else { tiles };
        let (_, name) = self.kernel(chip, rounding);
        Launch { kernel: symbol(&name), grid: [gx, hq, self.batch], block: [512, 1, 1], kernargs }
    }
}
