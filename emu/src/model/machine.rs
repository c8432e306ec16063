//! The MI300X figures the cycle model uses, each with where it comes from.
//!
//! "GFX942.md" is the project's data sheet (`shared/design/GFX942.md`); "SISchedule.td" is LLVM's
//! AMDGPU scheduling model (`llvm/lib/Target/AMDGPU/SISchedule.td`), whose numbers count issue
//! slots of a wave64 instruction relative to a full-rate VALU op.

/// Peak engine clock, MHz: the clock the CU simulation counts in. GFX942.md, "peak engine clock
/// 2100 MHz".
pub const CLOCK_MHZ: f64 = 2100.0;
/// The engine clock with the matrix cores busy all the time, MHz: power management lowers the
/// clock under dense MFMA load. GFX942.md, measured anchors: hipBLASLt's tuned BF16 GEMM ran
/// at 1207 MHz (708 TFLOP/s, 94% of the matrix cores' peak at that clock); the same sheet gives
/// 1.1-1.25 GHz for dense GEMM. See [`Chip::clock_under`].
pub const LOADED_CLOCK_MHZ: f64 = 1207.0;

/// Compute units. GFX942.md, "304 (8 dies x 38)".
pub const CUS: u64 = 304;
/// Compute units per die (XCD), which share one L2. GFX942.md, same line.
pub const CUS_PER_XCD: u64 = 38;
/// SIMDs per CU. GFX942.md, "4 SIMDs each".
pub const SIMDS: usize = 4;
/// Resident waves per SIMD at most. GFX942.md, "at most 8 waves per SIMD".
pub const MAX_WAVES_PER_SIMD: u32 = 8;
/// LDS bytes per CU. GFX942.md, "LDS 64 KiB per CU".
pub const LDS_BYTES: u32 = 64 * 1024;

/// Cycles between two issue opportunities of one SIMD: the sequencer serves the four SIMDs in
/// turn, one per clock, so each gets a turn every 4 clocks and a wave issues at most one
/// instruction per turn (AMD, "AMD Graphics Cores Next Architecture" white paper, 2012, the
/// CU front end; CDNA keeps the GCN CU organisation, CDNA3 ISA guide chapter 1).
pub const ISSUE_PERIOD: u64 = 4;

/// Cycles a full-rate VALU op of a wave64 holds its SIMD: 16 lanes per clock. GFX942.md
/// ("4 SIMDs each, wave64"; FP32 vector 163.4 TFLOP/s = 304 x 4 x 16 lanes x 2 (packed) x 2 (FMA)
/// x 2.1 GHz).
pub const VALU_CYCLES: u64 = 4;
/// Slowdown of transcendental ops (exp, log, rcp, rsq, sqrt, sin, cos): quarter rate.
/// SISchedule.td, `WriteTrans32` = 4 against `Write32Bit` = 1.
pub const TRANS_FACTOR: u64 = 4;
/// Slowdown of the quarter-rate integer ops (32-bit multiplies, 64-bit multiply-adds) and
/// conversions. SISchedule.td, `WriteQuarterRate32` / `WriteFloatCvt` = 4.
pub const QUARTER_RATE_FACTOR: u64 = 4;

/// Dense matrix-core FLOPs per CU per clock by input type; an MFMA's cycles are its FLOPs over a
/// quarter of this (one SIMD's matrix core). GFX942.md, "FLOPs per CU per clock: FP16/BF16 2048,
/// FP8 4096, FP32 matrix 256", and the TF32 (653.7) and FP64 matrix (163.4) TFLOP/s peaks over
/// 304 CUs x 2.1 GHz (1024 and 256). INT8 equals FP8 (2614.9 TOPS, same line).
pub const MFMA_FLOPS_PER_CU_CLOCK_F16: f64 = 2048.0;
/// See [`MFMA_FLOPS_PER_CU_CLOCK_F16`].
pub const MFMA_FLOPS_PER_CU_CLOCK_FP8: f64 = 4096.0;
/// See [`MFMA_FLOPS_PER_CU_CLOCK_F16`].
pub const MFMA_FLOPS_PER_CU_CLOCK_XF32: f64 = 1024.0;
/// See [`MFMA_FLOPS_PER_CU_CLOCK_F16`].
pub const MFMA_FLOPS_PER_CU_CLOCK_F32: f64 = 256.0;

/// LDS bytes per clock per CU. GFX942.md, "32 banks of 4 bytes, 128 B/clock".
pub const LDS_BYTES_PER_CLOCK: u64 = 128;
/// Clocks from an LDS instruction leaving the LDS pipe to its data in registers (lgkmcnt
/// decrement). SISchedule.td, `WriteLDS`: "Can be between 2 and 64"; the model takes the upper
/// end (no MI300X figure in the project's sources).
pub const LDS_LATENCY: u64 = 64;
/// Clocks for a scalar load to return. SISchedule.td, `WriteSMEM` = 5 issue slots of 4 clocks.
pub const SMEM_LATENCY: u64 = 5 * ISSUE_PERIOD;
/// Clocks from a vector memory instruction's last byte leaving the CU's memory path to its
/// completion (vmcnt decrement): 0.32 us at the peak clock (672). Source: AMD's TraceLens
/// microbenchmark (AMD-AGI/TraceLens PR #964) measured 0.32 us per dependent HBM load on MI210
/// (a Triton pointer chase over a 64 MiB table). MI300X puts its Infinity Cache and fabric
/// between L2 and HBM, so its miss latency is no lower: this is a lower bound for HBM and an
/// upper one for L2 hits, which the model does not tell apart. (It replaced LLVM's scheduling
/// figure, `WriteVMEM` = 80 issue slots = 320 clocks, which is a compiler heuristic, not a
/// measurement; calibration on AITER's kernels showed latency-bound kernels modeled 3x fast.)
pub const VMEM_LATENCY: u64 = 672;
/// Clocks a taken branch costs its wave before the next instruction. SISchedule.td,
/// `WriteBranch` = 8 (in the same issue-slot units as the rest: 2 turns of 4 clocks).
pub const BRANCH_CYCLES: u64 = 2 * ISSUE_PERIOD;
/// Clocks per `s_sleep` unit. CDNA3 ISA guide, S_SLEEP: "approximately 64 clocks" per unit.
pub const SLEEP_UNIT_CYCLES: u64 = 64;
/// Outstanding vector memory instructions a wave may have (6-bit vmcnt). CDNA3 ISA guide,
/// S_WAITCNT.
pub const MAX_VMCNT: usize = 63;
/// Outstanding LDS/scalar-memory instructions a wave may have (4-bit lgkmcnt). CDNA3 ISA guide,
/// S_WAITCNT.
pub const MAX_LGKMCNT: usize = 15;

/// HBM bandwidth the model gives the whole GPU, bytes per second: the measured copy figure, not
/// the 5.3 TB/s theoretical one. GFX942.md, "HBM copy (BabelStream) ~4.1 TB/s".
pub const HBM_SUSTAINED_BYTES_PER_S: f64 = 4.1e12;
/// Theoretical HBM3 bandwidth, bytes per second (the roofline's bandwidth roof). GFX942.md,
/// "HBM3 192 GB, 5.3 TB/s theoretical".
pub const HBM_PEAK_BYTES_PER_S: f64 = 5.3e12;
/// L2 bytes per clock per die: 16 channels of 128 bytes. AMD CDNA 3 architecture white paper
/// (2023), "the L2 ... 16 channels ... 128B/clock" per XCD.
pub const L2_BYTES_PER_CLOCK_PER_XCD: f64 = 16.0 * 128.0;
/// Bytes per memory transaction the model charges: the 64-byte lines the counters report
/// (`GlobalCounters::lines`, a partially used line costs a whole one).
pub const LINE_BYTES: u64 = 64;

/// The chip a launch is modeled on: how many CUs share the grid, how they group into dies
/// (each with its L2), and the clock and HBM bandwidth. Everything per CU (SIMDs, LDS, pipes,
/// latencies) is the CDNA3 CU of the constants above, the same on every gfx942 part.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Chip {
    /// Name for reports.
    pub name: &'static str,
    /// Compute units.
    pub cus: u64,
    /// Dies (XCDs), each with its own L2.
    pub xcds: u64,
    /// Peak engine clock, MHz.
    pub clock_mhz: f64,
    /// Engine clock with the matrix cores busy all the time, MHz.
    pub loaded_clock_mhz: f64,
    /// Sustained HBM bandwidth, bytes per second.
    pub hbm_bytes_per_s: f64,
}

impl Chip {
    /// MI300X: 304 CUs on 8 XCDs of 38 (GFX942.md, the machine), [`CLOCK_MHZ`],
    /// [`HBM_SUSTAINED_BYTES_PER_S`].
    pub const MI300X: Chip = Chip {
        name: "MI300X",
        cus: CUS,
        xcds: CUS / CUS_PER_XCD,
        clock_mhz: CLOCK_MHZ,
        loaded_clock_mhz: LOADED_CLOCK_MHZ,
        hbm_bytes_per_s: HBM_SUSTAINED_BYTES_PER_S,
    };

    /// MI308X: the same gfx942 die with 80 CUs enabled (AITER's tuned tables list it as
    /// `cu_num` 80 and its dispatchers load the `MI308/` kernel builds for 80 or 64 CUs). The
    /// project's sources give no MI308X data sheet, so everything but the CU count is MI300X's:
    /// 8 XCDs (10 CUs each), the same peak and loaded clocks and the same HBM. A weak spot,
    /// named in the model README.
    pub const MI308X: Chip = Chip { name: "MI308X", cus: 80, ..Chip::MI300X };

    /// The chip with `cus` CUs: MI300X for 304, MI308X for 80, else MI300X's per-CU figures
    /// on that many CUs.
    pub fn with_cus(cus: u64) -> Chip {
        match cus {
            CUS => Chip::MI300X,
            80 => Chip::MI308X,
            n => Chip { name: "gfx942", cus: n.max(1), ..Chip::MI300X },
        }
    }

    /// The clock a kernel runs at whose matrix cores are busy `mfma_busy` of the time (0..=1,
    /// at the peak clock): from the peak with idle matrix cores down to [`LOADED_CLOCK_MHZ`] when
    /// they never rest, linearly. The line between the two measured end points is the model's
    /// assumption (dynamic power under GEMM grows with matrix-core activity, and the clock falls
    /// to hold the power limit); it is not a measured curve.
    pub fn clock_under(&self, mfma_busy: f64) -> f64 {
        self.clock_mhz - (self.clock_mhz - self.loaded_clock_mhz) * mfma_busy.clamp(0.0, 1.0)
    }

    /// CUs per XCD (rounded up).
    pub fn cus_per_xcd(&self) -> u64 {
        self.cus.div_ceil(self.xcds.max(1))
    }
}

/// Peak dense FLOP/s of the matrix cores for an input type at [`CLOCK_MHZ`] (the roofline's
/// compute roofs). GFX942.md, "dense peak TFLOP/s".
pub fn peak_flops(kind: MathKind) -> f64 {
    let per_cu_clock = match kind {
        MathKind::F16 => MFMA_FLOPS_PER_CU_CLOCK_F16,
        MathKind::Fp8 => MFMA_FLOPS_PER_CU_CLOCK_FP8,
        MathKind::Xf32 => MFMA_FLOPS_PER_CU_CLOCK_XF32,
        MathKind::F32 | MathKind::F64 => MFMA_FLOPS_PER_CU_CLOCK_F32,
        // FP32 vector: 163.4 TFLOP/s with packed FMA (GFX942.md), 512 per CU per clock.
        MathKind::Vector => 512.0,
    };
    per_cu_clock * CUS as f64 * CLOCK_MHZ * 1e6
}

/// [`peak_flops`] on `chip` (its CUs at its clock).
pub fn peak_flops_on(kind: MathKind, chip: &Chip) -> f64 {
    peak_flops(kind) / (CUS as f64 * CLOCK_MHZ) * (chip.cus as f64 * chip.clock_mhz)
}

/// What a kernel's arithmetic runs on, for its compute roof.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MathKind {
    /// f16/bf16 matrix cores.
    F16,
    /// fp8/bf8/int8 matrix cores.
    Fp8,
    /// xf32 (tf32) matrix cores.
    Xf32,
    /// f32 matrix cores.
    F32,
    /// f64 matrix cores.
    F64,
    /// The vector ALUs (f32, packed).
    Vector,
}

impl MathKind {
    /// Short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            MathKind::F16 => "f16/bf16 MFMA",
            MathKind::Fp8 => "fp8 MFMA",
            MathKind::Xf32 => "xf32 MFMA",
            MathKind::F32 => "f32 MFMA",
            MathKind::F64 => "f64 MFMA",
            MathKind::Vector => "f32 vector",
        }
    }
}
