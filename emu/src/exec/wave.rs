//! The state of one wave64: scalar and vector registers, EXEC/VCC/SCC/M0, mode, program counter,
//! and the typed operand reads and writes every instruction family uses.

use super::error::FaultKind;
use super::memory::{APERTURE_SIZE, PRIVATE_APERTURE, SHARED_APERTURE};
use crate::isa::{Inst, Opnd};

/// Lanes per wave.
pub const LANES: usize = 64;
/// Architectural SGPRs a wave can address (s0..s101).
pub const NUM_SGPRS: usize = 102;

/// Scalar register codes of the special registers (the 8-bit source encoding).
pub mod reg {
    /// FLAT_SCRATCH low/high.
    pub const FLAT_SCRATCH_LO: usize = 102;
    /// VCC low half.
    pub const VCC_LO: usize = 106;
    /// VCC high half.
    pub const VCC_HI: usize = 107;
    /// First trap temporary.
    pub const TTMP0: usize = 108;
    /// M0.
    pub const M0: usize = 124;
    /// EXEC low half.
    pub const EXEC_LO: usize = 126;
    /// EXEC high half.
    pub const EXEC_HI: usize = 127;
}

/// One 64-lane vector register.
pub type VReg = [u32; LANES];

/// A register of zeros, for operands an instruction does not read.
pub(crate) static ZERO_VREG: VReg = [0; LANES];

/// Operand width classes, which decide how inline constants and literals expand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    /// 16-bit float (inline floats are f16 values).
    F16,
    /// 16-bit integer or untyped 16-bit.
    B16,
    /// 32-bit float.
    F32,
    /// 32-bit integer or untyped.
    B32,
    /// 64-bit float (a literal is the high half).
    F64,
    /// 64-bit unsigned or untyped (a literal is zero-extended).
    U64,
    /// 64-bit signed (a literal is sign-extended).
    I64,
}

/// f32, f16 and f64 bit patterns of the inline float constants 240..=248
/// (0.5, -0.5, 1, -1, 2, -2, 4, -4, 1/(2*pi)).
const INLINE_F32: [u32; 9] =
    [0x3F00_0000, 0xBF00_0000, 0x3F80_0000, 0xBF80_0000, 0x4000_0000, 0xC000_0000, 0x4080_0000, 0xC080_0000, 0x3E22_F983];
const INLINE_F16: [u16; 9] = [0x3800, 0xB800, 0x3C00, 0xBC00, 0x4000, 0xC000, 0x4400, 0xC400, 0x3118];
const INLINE_F64: [u64; 9] = [
    0x3FE0_0000_0000_0000,
    0xBFE0_0000_0000_0000,
    0x3FF0_0000_0000_0000,
    0xBFF0_0000_0000_0000,
    0x4000_0000_0000_0000,
    0xC000_0000_0000_0000,
    0x4010_0000_0000_0000,
    0xC010_0000_0000_0000,
    0x3FC4_5F30_6DC9_C882,
];

/// Why a wave is not running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaveStatus {
    /// Ready to execute.
    Running,
    /// Waiting at `s_barrier`.
    AtBarrier,
    /// Executed `s_endpgm`.
    Ended,
}

/// Float mode bits (the MODE hardware register), initialised from COMPUTE_PGM_RSRC1.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FloatMode {
    /// f32 rounding (0 nearest even, 1 +inf, 2 -inf, 3 zero).
    pub round32: u8,
    /// f16/f64 rounding.
    pub round16_64: u8,
    /// f32 denormals: 0 flush in and out, 1 flush out... 3 keep.
    pub denorm32: u8,
    /// f16/f64 denormals.
    pub denorm16_64: u8,
    /// DX10 clamp: clamp maps NaN to 0.
    pub dx10_clamp: bool,
    /// IEEE mode: min/max quiet signalling NaNs.
    pub ieee: bool,
    /// FP16_OVFL: fp8/bf8 conversions saturate overflow (and infinities) to the maximum instead
    /// of producing NaN.
    pub fp16_ovfl: bool,
    /// VSKIP (bit 28, set by `s_setvskip`): vector instructions (VALU, MFMA, LDS, vector
    /// memory) are not issued; skipped memory instructions do not count toward the wait
    /// counters (CDNA3 ISA, S_SETVSKIP).
    pub vskip: bool,
}

impl FloatMode {
    /// The MODE register value (hwreg 1) of these settings.
    pub fn to_bits(self) -> u32 {
        (self.round32 as u32)
            | (self.round16_64 as u32) << 2
            | (self.denorm32 as u32) << 4
            | (self.denorm16_64 as u32) << 6
            | (self.dx10_clamp as u32) << 8
            | (self.ieee as u32) << 9
            | (self.fp16_ovfl as u32) << 23
            | (self.vskip as u32) << 28
    }

    /// Settings from a MODE register value.
    pub fn from_bits(v: u32) -> FloatMode {
        FloatMode {
            round32: (v & 3) as u8,
            round16_64: ((v >> 2) & 3) as u8,
            denorm32: ((v >> 4) & 3) as u8,
            denorm16_64: ((v >> 6) & 3) as u8,
            dx10_clamp: v & (1 << 8) != 0,
            ieee: v & (1 << 9) != 0,
            fp16_ovfl: v & (1 << 23) != 0,
            vskip: v & (1 << 28) != 0,
        }
    }
}

/// One wave's architectural state.
pub struct Wave {
    /// Scalar registers by code: SGPRs 0-101, then FLAT_SCRATCH, XNACK_MASK, VCC, TTMPs, M0, -, EXEC.
    pub s: [u32; 128],
    /// The wave's slice of the unified vector register file, `v[r][lane]`: ArchVGPR `r` is
    /// `v[r]`, AGPR `r` is `v[acc + r]` (gfx90a/gfx942: one 512-entry file per lane, AGPRs from
    /// the descriptor's ACCUM_OFFSET; GFX942.md, registers).
    pub v: Vec<VReg>,
    /// Where the AGPRs start in `v` (ACCUM_OFFSET).
    pub acc: usize,
    /// Scalar condition code.
    pub scc: bool,
    /// Program counter (device address).
    pub pc: u64,
    /// Float mode.
    pub mode: FloatMode,
    /// Running, waiting or ended.
    pub status: WaveStatus,
    /// Index of the wave in its workgroup.
    pub index: u32,
    /// Instructions executed.
    pub executed: u64,
    /// Scratch bytes per lane (the private segment size of the launch).
    pub scratch_per_lane: u32,
    /// The wave's scratch memory, lane-major: `scratch[lane * scratch_per_lane + offset]`.
    pub scratch: Vec<u8>,
    /// Trap status written by `s_setreg` to TRAPSTS (kept so reads return it).
    pub trapsts: u32,
}

impl Wave {
    /// A wave with `vgprs` architectural VGPRs and `agprs` AGPRs after them, all zero.
    pub fn new(vgprs: usize, agprs: usize) -> Wave {
        Wave {
            s: [0; 128],
            v: vec![[0; LANES]; vgprs + agprs],
            acc: vgprs,
            scc: false,
            pc: 0,
            mode: FloatMode::default(),
            status: WaveStatus::Running,
            index: 0,
            executed: 0,
            scratch_per_lane: 0,
            scratch: Vec::new(),
            trapsts: 0,
        }
    }

    /// Resets for reuse with `unified` vector registers, AGPRs from `acc`.
    pub fn reset(&mut self, unified: usize, acc: usize) {
        self.s = [0; 128];
        self.v.clear();
        self.v.resize(unified, [0; LANES]);
        self.acc = acc;
        self.scc = false;
        self.status = WaveStatus::Running;
        self.executed = 0;
        self.trapsts = 0;
    }

    /// EXEC as a 64-bit mask.
    #[inline]
    pub fn exec(&self) -> u64 {
        self.s[reg::EXEC_LO] as u64 | (self.s[reg::EXEC_HI] as u64) << 32
    }

    /// Sets EXEC.
    #[inline]
    pub fn set_exec(&mut self, v: u64) {
        self.s[reg::EXEC_LO] = v as u32;
        self.s[reg::EXEC_HI] = (v >> 32) as u32;
    }

    /// VCC as a 64-bit mask.
    #[inline]
    pub fn vcc(&self) -> u64 {
        self.s[reg::VCC_LO] as u64 | (self.s[reg::VCC_HI] as u64) << 32
    }

    /// Sets VCC.
    #[inline]
    pub fn set_vcc(&mut self, v: u64) {
        self.s[reg::VCC_LO] = v as u32;
        self.s[reg::VCC_HI] = (v >> 32) as u32;
    }

    /// M0.
    #[inline]
    pub fn m0(&self) -> u32 {
        self.s[reg::M0]
    }

    // ---- scalar sources ------------------------------------------------------------------

    /// A 32-bit value from the scalar-source code space (registers, constants, literal).
    #[inline]
    pub fn sval32(&self, op: Opnd, lit: u32, ty: Ty) -> Result<u32, FaultKind> {
        let c = op.0 as usize;
        Ok(match c {
            0..=101 | 102..=107 | 108..=123 | 124 | 126 | 127 => self.s[c],
            128 => 0,
            129..=192 => (c - 128) as u32,
            193..=208 => (-((c - 192) as i32)) as u32,
            235 => (SHARED_APERTURE >> 32) as u32,
            236 => ((SHARED_APERTURE + APERTURE_SIZE - 1) >> 32) as u32,
            237 => (PRIVATE_APERTURE >> 32) as u32,
            238 => ((PRIVATE_APERTURE + APERTURE_SIZE - 1) >> 32) as u32,
            240..=248 => match ty {
                Ty::F16 | Ty::B16 => INLINE_F16[c - 240] as u32,
                _ => INLINE_F32[c - 240],
            },
            251 => (self.vcc() == 0) as u32,
            252 => (self.exec() == 0) as u32,
            253 => self.scc as u32,
            255 => lit,
            _ => return Err(FaultKind::Invalid(format!("operand code {c} cannot be read as a 32-bit scalar"))),
        })
    }

    /// A 64-bit value from the scalar-source code space.
    #[inline]
    pub fn sval64(&self, op: Opnd, lit: u32, ty: Ty) -> Result<u64, FaultKind> {
        let c = op.0 as usize;
        Ok(match c {
            0..=126 if c % 2 == 0 && c != 124 => self.s[c] as u64 | (self.s[c + 1] as u64) << 32,
            128 => 0,
            129..=192 => (c - 128) as u64,
            193..=208 => (-((c - 192) as i64)) as u64,
            235 => SHARED_APERTURE,
            236 => SHARED_APERTURE + APERTURE_SIZE - 1,
            237 => PRIVATE_APERTURE,
            238 => PRIVATE_APERTURE + APERTURE_SIZE - 1,
            240..=248 => match ty {
                Ty::F64 | Ty::U64 | Ty::I64 => INLINE_F64[c - 240],
                _ => INLINE_F32[c - 240] as u64,
            },
            251 => (self.vcc() == 0) as u64,
            252 => (self.exec() == 0) as u64,
            253 => self.scc as u64,
            255 => match ty {
                Ty::F64 => (lit as u64) << 32,
                Ty::I64 => lit as i32 as i64 as u64,
                _ => lit as u64,
            },
            _ => return Err(FaultKind::Invalid(format!("operand code {c} cannot be read as a 64-bit scalar"))),
        })
    }

    /// Writes a 32-bit scalar destination.
    #[inline]
    pub fn set_s32(&mut self, op: Opnd, v: u32) -> Result<(), FaultKind> {
        let c = op.0 as usize;
        match c {
            0..=101 | 102..=107 | 108..=123 | 124 | 126 | 127 => {
                self.s[c] = v;
                Ok(())
            }
            _ => Err(FaultKind::Invalid(format!("operand code {c} is not a writable scalar register"))),
        }
    }

    /// Writes a 64-bit scalar destination (an aligned pair).
    #[inline]
    pub fn set_s64(&mut self, op: Opnd, v: u64) -> Result<(), FaultKind> {
        let c = op.0 as usize;
        if c < 128 && c % 2 == 0 && c != 124 {
            self.s[c] = v as u32;
            self.s[c + 1] = (v >> 32) as u32;
            Ok(())
        } else {
            Err(FaultKind::Invalid(format!("operand code {c} is not a writable scalar register pair")))
        }
    }

    /// Reads `n` consecutive scalar registers starting at `op` (an SMEM base, a buffer resource).
    pub fn sregs<const N: usize>(&self, op: Opnd) -> Result<[u32; N], FaultKind> {
        let c = op.0 as usize;
        if c + N > 128 {
            return Err(FaultKind::Register(format!("s[{c}:{}]", c + N - 1)));
        }
        let mut out = [0; N];
        out.copy_from_slice(&self.s[c..c + N]);
        Ok(out)
    }

    // ---- vector sources ------------------------------------------------------------------

    /// Where an operand's vector register lies in the unified file. An ArchVGPR may lie at or
    /// above ACCUM_OFFSET (it is then the same storage as an AGPR, as on the hardware, which
    /// adds the index to the wave's VGPR base and checks only the allocation's end).
    #[inline]
    fn unified_index(&self, op: Opnd) -> Result<usize, FaultKind> {
        let i = match op.0 {
            256..=511 => (op.0 - 256) as usize,
            512..=767 => self.acc + (op.0 - 512) as usize,
            _ => return Err(FaultKind::Invalid(format!("{op:?} is not a vector register"))),
        };
        if i < self.v.len() { Ok(i) } else { Err(self.reg_fault(op)) }
    }

    /// The vector register an operand names (VGPR or AGPR), bounds-checked.
    #[inline]
    pub fn vreg(&self, op: Opnd) -> Result<&VReg, FaultKind> {
        let i = self.unified_index(op)?;
        Ok(&self.v[i])
    }

    /// Mutable access to the vector register an operand names.
    #[inline]
    pub fn vreg_mut(&mut self, op: Opnd) -> Result<&mut VReg, FaultKind> {
        let i = self.unified_index(op)?;
        Ok(&mut self.v[i])
    }

    /// The vector register `k` registers after `op` (for multi-dword operands).
    #[inline]
    pub fn vreg_at(&self, op: Opnd, k: u16) -> Result<&VReg, FaultKind> {
        self.vreg(Opnd(op.0 + k))
    }

    /// Mutable access to the register `k` after `op`.
    #[inline]
    pub fn vreg_at_mut(&mut self, op: Opnd, k: u16) -> Result<&mut VReg, FaultKind> {
        let o = Opnd(op.0 + k);
        self.vreg_mut(o)
    }

    #[cold]
    fn reg_fault(&self, op: Opnd) -> FaultKind {
        FaultKind::Register(format!(
            "{op:?} (the wave has {} vector registers, AGPRs from {}: {} VGPRs below them and {} AGPRs)",
            self.v.len(),
            self.acc,
            self.acc.min(self.v.len()),
            self.v.len().saturating_sub(self.acc)
        ))
    }

    /// A 32-bit source for every lane: a vector register, or a scalar value broadcast.
    #[inline]
    pub fn src32(&self, op: Opnd, lit: u32, ty: Ty) -> Result<Src32<'_>, FaultKind> {
        if op.0 >= 256 && op.0 != 0xFFFF { Ok(Src32::Vec(self.vreg(op)?)) } else { Ok(Src32::Uni(self.sval32(op, lit, ty)?)) }
    }

    /// A 64-bit source for every lane: a register pair, or a scalar value broadcast.
    #[inline]
    pub fn src64(&self, op: Opnd, lit: u32, ty: Ty) -> Result<Src64<'_>, FaultKind> {
        if op.0 >= 256 && op.0 != 0xFFFF {
            Ok(Src64::Vec(self.vreg(op)?, self.vreg_at(op, 1)?))
        } else {
            Ok(Src64::Uni(self.sval64(op, lit, ty)?))
        }
    }

    /// Source `i` of `inst` as 32 bits.
    #[inline]
    pub fn src32_of(&self, inst: &Inst, i: usize, ty: Ty) -> Result<Src32<'_>, FaultKind> {
        self.src32(inst.src[i], inst.literal, ty)
    }

    /// Source `i` of `inst` as 64 bits.
    #[inline]
    pub fn src64_of(&self, inst: &Inst, i: usize, ty: Ty) -> Result<Src64<'_>, FaultKind> {
        self.src64(inst.src[i], inst.literal, ty)
    }

    /// Writes `vals` to the lanes of `dst` selected by `mask`.
    #[inline]
    pub fn write_v32(&mut self, dst: Opnd, mask: u64, vals: &VReg) -> Result<(), FaultKind> {
        let d = self.vreg_mut(dst)?;
        if mask == u64::MAX {
            super::cpu::copy_reg(d, vals);
        } else {
            // A select per lane, not a branch: the loop vectorises.
            for (l, (x, &v)) in d.iter_mut().zip(vals).enumerate() {
                *x = if mask >> l & 1 == 1 { v } else { *x };
            }
        }
        Ok(())
    }

    /// Writes 64-bit `vals` (as lo/hi registers) to the lanes selected by `mask`.
    #[inline]
    pub fn write_v64(&mut self, dst: Opnd, mask: u64, vals: &[u64; LANES]) -> Result<(), FaultKind> {
        let mut lo = [0u32; LANES];
        let mut hi = [0u32; LANES];
        for l in 0..LANES {
            lo[l] = vals[l] as u32;
            hi[l] = (vals[l] >> 32) as u32;
        }
        self.write_v32(dst, mask, &lo)?;
        self.write_v32(Opnd(dst.0 + 1), mask, &hi)
    }
}

/// A 32-bit source operand across lanes.
#[derive(Clone, Copy)]
pub enum Src32<'a> {
    /// The same value in every lane.
    Uni(u32),
    /// A vector register.
    Vec(&'a VReg),
}

impl Src32<'_> {
    /// The value in lane `l`.
    #[inline(always)]
    pub fn get(&self, l: usize) -> u32 {
        match self {
            Src32::Uni(v) => *v,
            Src32::Vec(r) => r[l],
        }
    }

    /// All lanes, copied.
    #[inline]
    pub fn lanes(&self) -> VReg {
        match self {
            Src32::Uni(v) => [*v; LANES],
            Src32::Vec(r) => **r,
        }
    }
}

/// A 64-bit source operand across lanes.
#[derive(Clone, Copy)]
pub enum Src64<'a> {
    /// The same value in every lane.
    Uni(u64),
    /// A register pair (low, high).
    Vec(&'a VReg, &'a VReg),
}

impl Src64<'_> {
    /// The value in lane `l`.
    #[inline(always)]
    pub fn get(&self, l: usize) -> u64 {
        match self {
            Src64::Uni(v) => *v,
            Src64::Vec(lo, hi) => lo[l] as u64 | (hi[l] as u64) << 32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_constants_expand_by_type() {
        let w = Wave::new(4, 0);
        assert_eq!(w.sval32(Opnd(128), 0, Ty::B32).unwrap(), 0);
        assert_eq!(w.sval32(Opnd(192), 0, Ty::B32).unwrap(), 64);
        assert_eq!(w.sval32(Opnd(193), 0, Ty::B32).unwrap(), u32::MAX);
        assert_eq!(w.sval32(Opnd(208), 0, Ty::B32).unwrap(), (-16i32) as u32);
        assert_eq!(f32::from_bits(w.sval32(Opnd(242), 0, Ty::F32).unwrap()), 1.0);
        assert_eq!(w.sval32(Opnd(242), 0, Ty::F16).unwrap(), 0x3C00);
        // The hardware constant is 0x3FC45F306DC9C882, one ulp below the nearest f64 to 1/(2 pi).
        assert_eq!(w.sval64(Opnd(248), 0, Ty::F64).unwrap(), 0x3FC4_5F30_6DC9_C882);
        assert_eq!(f32::from_bits(w.sval32(Opnd(248), 0, Ty::F32).unwrap()), 0.15915494);
        assert_eq!(w.sval64(Opnd(193), 0, Ty::U64).unwrap(), u64::MAX);
        assert_eq!(w.sval64(Opnd::LITERAL, 0x4000_0000, Ty::F64).unwrap(), 0x4000_0000_0000_0000);
        assert_eq!(w.sval64(Opnd::LITERAL, 0xFFFF_FFFF, Ty::U64).unwrap(), 0xFFFF_FFFF);
        assert_eq!(w.sval64(Opnd::LITERAL, 0xFFFF_FFFF, Ty::I64).unwrap(), u64::MAX);
    }

    #[test]
    fn vector_registers_are_bounds_checked() {
        let mut w = Wave::new(4, 2);
        assert!(w.vreg(Opnd::vgpr(3)).is_ok());
        assert!(w.vreg(Opnd::agpr(1)).is_ok());
        assert!(matches!(w.vreg(Opnd::agpr(2)), Err(FaultKind::Register(_))));
        // One unified file: an ArchVGPR at or above ACCUM_OFFSET is the AGPR stored there.
        w.vreg_mut(Opnd::agpr(1)).unwrap()[0] = 7;
        assert_eq!(w.vreg(Opnd::vgpr(5)).unwrap()[0], 7);
        assert!(matches!(w.vreg(Opnd::vgpr(6)), Err(FaultKind::Register(_))));
    }
}
