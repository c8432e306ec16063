//! Per-launch counters: what a profiler would report, counted exactly from the executed stream.
//!
//! Counts are per wave instruction (one `v_add_f32` issued by a wave counts once, whatever EXEC
//! is). Memory counters look at the active lanes' addresses:
//! - global traffic: bytes requested by active lanes, and the distinct 64-byte lines each memory
//!   instruction touches (a fully coalesced 128-bit load by 64 lanes touches 16 lines, one per
//!   64 bytes, so `bytes / 64 == lines` means every touched line is fully used);
//! - LDS bank conflicts: 32 banks of 4 bytes; lanes are served in phases (see `lds_phases`), and
//!   within a phase, k distinct dwords on one bank cost k - 1 extra cycles (the same dword read by
//!   several lanes is a broadcast, no conflict).

use std::collections::BTreeMap;

/// Instruction classes for the mix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    /// Scalar ALU (SOP1/SOP2/SOPK/SOPC).
    Salu,
    /// Vector ALU (VOP1/VOP2/VOPC/VOP3/VOP3P, incl. v_accvgpr moves).
    Valu,
    /// Matrix instructions (MFMA).
    Mfma,
    /// Scalar memory.
    Smem,
    /// Vector memory (FLAT/GLOBAL/SCRATCH/MUBUF).
    Vmem,
    /// LDS.
    Ds,
    /// Branches (s_branch, s_cbranch_*, s_setpc/swappc).
    Branch,
    /// Everything else in SOPP (s_waitcnt, s_nop, s_barrier, s_endpgm, ...).
    Other,
}

impl Class {
    /// All classes, in report order.
    pub const ALL: [Class; 8] =
        [Class::Salu, Class::Valu, Class::Mfma, Class::Smem, Class::Vmem, Class::Ds, Class::Branch, Class::Other];

    /// Lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            Class::Salu => "salu",
            Class::Valu => "valu",
            Class::Mfma => "mfma",
            Class::Smem => "smem",
            Class::Vmem => "vmem",
            Class::Ds => "ds",
            Class::Branch => "branch",
            Class::Other => "other",
        }
    }
}

/// Global-memory traffic.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GlobalCounters {
    /// Load instructions (incl. loads to LDS).
    pub load_instructions: u64,
    /// Store instructions.
    pub store_instructions: u64,
    /// Atomic instructions.
    pub atomic_instructions: u64,
    /// Bytes read by active lanes.
    pub bytes_read: u64,
    /// Bytes written by active lanes.
    pub bytes_written: u64,
    /// Distinct 64-byte lines touched, summed over instructions.
    pub lines: u64,
    /// Per access width in bytes (1, 2, 4, 8, 12, 16): lane-accesses of that width.
    pub lane_accesses_by_width: BTreeMap<u32, u64>,
    /// Instructions whose lines were not all fully used by the active lanes.
    pub partially_used_line_instructions: u64,
}

/// LDS traffic.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LdsCounters {
    /// DS instructions that access LDS.
    pub instructions: u64,
    /// Bytes read by active lanes.
    pub bytes_read: u64,
    /// Bytes written by active lanes.
    pub bytes_written: u64,
    /// Extra cycles lost to bank conflicts.
    pub bank_conflict_cycles: u64,
    /// Instructions that had at least one conflict.
    pub conflicted_instructions: u64,
}

/// Everything counted during one launch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Workgroups run.
    pub workgroups: u64,
    /// Waves run.
    pub waves: u64,
    /// Wave instructions executed.
    pub instructions: u64,
    /// Wave instructions per class.
    pub by_class: BTreeMap<Class, u64>,
    /// MFMA instructions per mnemonic.
    pub mfma: BTreeMap<&'static str, u64>,
    /// Global memory.
    pub global: GlobalCounters,
    /// LDS.
    pub lds: LdsCounters,
    /// `s_barrier`s executed (per wave).
    pub barriers: u64,
    /// Executions per instruction address (for hot-spot profiles).
    pub per_pc: BTreeMap<u64, u64>,
}

impl Counters {
    /// Adds another launch's (or workgroup's) counts.
    pub fn merge(&mut self, o: &Counters) {
        self.workgroups += o.workgroups;
        self.waves += o.waves;
        self.instructions += o.instructions;
        for (k, v) in &o.by_class {
            *self.by_class.entry(*k).or_default() += v;
        }
        for (k, v) in &o.mfma {
            *self.mfma.entry(k).or_default() += v;
        }
        let (g, og) = (&mut self.global, &o.global);
        g.load_instructions += og.load_instructions;
        g.store_instructions += og.store_instructions;
        g.atomic_instructions += og.atomic_instructions;
        g.bytes_read += og.bytes_read;
        g.bytes_written += og.bytes_written;
        g.lines += og.lines;
        g.partially_used_line_instructions += og.partially_used_line_instructions;
        for (k, v) in &og.lane_accesses_by_width {
            *g.lane_accesses_by_width.entry(*k).or_default() += v;
        }
        let (l, ol) = (&mut self.lds, &o.lds);
        l.instructions += ol.instructions;
        l.bytes_read += ol.bytes_read;
        l.bytes_written += ol.bytes_written;
        l.bank_conflict_cycles += ol.bank_conflict_cycles;
        l.conflicted_instructions += ol.conflicted_instructions;
        self.barriers += o.barriers;
        for (k, v) in &o.per_pc {
            *self.per_pc.entry(*k).or_default() += v;
        }
    }

    /// Instructions of one class.
    pub fn class(&self, c: Class) -> u64 {
        self.by_class.get(&c).copied().unwrap_or(0)
    }

    /// Records a global access by the active lanes: `addrs` holds (address, bytes) per active lane.
    pub fn global_access(&mut self, kind: Access, addrs: &[(u64, u32)]) {
        let g = &mut self.global;
        match kind {
            Access::Load => g.load_instructions += 1,
            Access::Store => g.store_instructions += 1,
            Access::Atomic => g.atomic_instructions += 1,
        }
        let mut lines: Vec<u64> = Vec::with_capacity(addrs.len() * 2);
        let mut bytes = 0u64;
        for &(a, n) in addrs {
            bytes += n as u64;
            *g.lane_accesses_by_width.entry(n).or_default() += 1;
            let (first, last) = (a / 64, (a + n as u64 - 1) / 64);
            for line in first..=last {
                lines.push(line);
            }
        }
        lines.sort_unstable();
        lines.dedup();
        match kind {
            Access::Load => g.bytes_read += bytes,
            Access::Store => g.bytes_written += bytes,
            Access::Atomic => {
                g.bytes_read += bytes;
                g.bytes_written += bytes;
            }
        }
        g.lines += lines.len() as u64;
        // Distinct bytes (lanes may read the same address) against the bytes of the lines.
        let mut spans: Vec<(u64, u64)> = addrs.iter().map(|&(a, n)| (a, a + n as u64)).collect();
        spans.sort_unstable();
        let mut distinct = 0u64;
        let mut end = 0u64;
        for (s, e) in spans {
            let s = s.max(end);
            if e > s {
                distinct += e - s;
                end = e;
            }
        }
        if distinct < lines.len() as u64 * 64 {
            g.partially_used_line_instructions += 1;
        }
    }

    /// Records an LDS access: `addrs` holds (lane, byte address, bytes) for every access of the
    /// active lanes (two per lane for read2/write2), `lane_bytes` the bytes each lane moves.
    pub fn lds_access(&mut self, write: bool, addrs: &[(u32, u32, u32)], lane_bytes: u32) {
        let l = &mut self.lds;
        l.instructions += 1;
        let bytes: u64 = addrs.iter().map(|a| a.2 as u64).sum();
        if write {
            l.bytes_written += bytes;
        } else {
            l.bytes_read += bytes;
        }
        let extra = bank_conflict_cycles(addrs, lane_bytes);
        l.bank_conflict_cycles += extra;
        if extra > 0 {
            l.conflicted_instructions += 1;
        }
    }
}

/// Kinds of global accesses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// A load.
    Load,
    /// A store.
    Store,
    /// A read-modify-write.
    Atomic,
}

/// LDS banks and their width.
pub const LDS_BANKS: u32 = 32;

/// Lanes served together by the LDS for an access of `bytes` per lane: 128 bytes per clock
/// (GFX942.md: 32 banks x 4 bytes), so 32 lanes of dwords, 16 lanes of 64-bit, 8 lanes of
/// 128-bit accesses per phase.
pub fn lds_phase_lanes(bytes: u32) -> u32 {
    (128 / bytes.max(4)).max(1)
}

/// Extra cycles from bank conflicts for one LDS instruction moving `lane_bytes` per lane.
pub fn bank_conflict_cycles(addrs: &[(u32, u32, u32)], lane_bytes: u32) -> u64 {
    if addrs.is_empty() {
        return 0;
    }
    let per_phase = lds_phase_lanes(lane_bytes);
    let mut extra = 0u64;
    let mut phase_start = 0;
    while phase_start < 64 {
        // Distinct dwords per bank within this phase.
        let mut per_bank: [Vec<u32>; LDS_BANKS as usize] = Default::default();
        for &(lane, addr, n) in addrs.iter().filter(|a| a.0 >= phase_start && a.0 < phase_start + per_phase) {
            let _ = lane;
            let mut d = addr / 4;
            while d * 4 < addr + n {
                let bank = (d % LDS_BANKS) as usize;
                if !per_bank[bank].contains(&d) {
                    per_bank[bank].push(d);
                }
                d += 1;
            }
        }
        let worst = per_bank.iter().map(Vec::len).max().unwrap_or(0) as u64;
        extra += worst.saturating_sub(1);
        phase_start += per_phase;
    }
    extra
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bank_conflicts_of_classic_patterns() {
        // 64 lanes reading consecutive dwords: conflict-free.
        let linear: Vec<_> = (0..64).map(|l| (l, l * 4, 4)).collect();
        assert_eq!(bank_conflict_cycles(&linear, 4), 0);
        // Stride of 2 dwords: lanes l and l+16 of a phase share a bank -> 2-way.
        let stride2: Vec<_> = (0..64).map(|l| (l, l * 8, 4)).collect();
        assert_eq!(bank_conflict_cycles(&stride2, 4), 2); // one extra cycle per 32-lane phase
        // Stride of 32 dwords: all 32 lanes of a phase on bank 0 -> 32-way.
        let column: Vec<_> = (0..64).map(|l| (l, l * 128, 4)).collect();
        assert_eq!(bank_conflict_cycles(&column, 4), 62);
        // Broadcast: every lane reads the same dword.
        let bcast: Vec<_> = (0..64).map(|l| (l, 0, 4)).collect();
        assert_eq!(bank_conflict_cycles(&bcast, 4), 0);
        // 128-bit reads of consecutive 16-byte chunks: 8 lanes per phase cover 32 banks once.
        let b128: Vec<_> = (0..64).map(|l| (l, l * 16, 16)).collect();
        assert_eq!(bank_conflict_cycles(&b128, 16), 0);
    }

    #[test]
    fn coalescing_counts_lines() {
        let mut c = Counters::default();
        let full: Vec<_> = (0..64u64).map(|l| (0x1000 + l * 16, 16)).collect();
        c.global_access(Access::Load, &full);
        assert_eq!(c.global.lines, 16);
        assert_eq!(c.global.partially_used_line_instructions, 0);
        let strided: Vec<_> = (0..64u64).map(|l| (0x1000 + l * 256, 4)).collect();
        c.global_access(Access::Load, &strided);
        assert_eq!(c.global.lines, 16 + 64);
        assert_eq!(c.global.partially_used_line_instructions, 1);
    }
}
