//! Per-launch counters: what a profiler would report, counted exactly from the executed stream.
//!
//! Counts are per wave instruction (one `v_add_f32` issued by a wave counts once, whatever EXEC
//! is). Memory counters look at the active lanes' addresses:
//! - global traffic: bytes requested by active lanes, and the distinct 64-byte lines each memory
//!   instruction touches (a fully coalesced 128-bit load by 64 lanes touches 16 lines, one per
//!   64 bytes, so `bytes / 64 == lines` means every touched line is fully used);
//! - LDS bank conflicts: 32 banks of 4 bytes; lanes are served in phases, groups of lanes that
//!   depend on the instruction (the measured MI300X groups, see [`lds_phase`]), and within a
//!   phase, k distinct dwords on one bank cost k - 1 extra cycles (the same dword read by several
//!   lanes is a broadcast, no conflict).

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
    pub const ALL: [Class; 8] = [Class::Salu, Class::Valu, Class::Mfma, Class::Smem, Class::Vmem, Class::Ds, Class::Branch, Class::Other];

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

/// How much of [`Counters`] a launch counts ([`crate::exec::LaunchOptions::counting`]).
///
/// Counting is exact either way; `Lean` leaves out the two counts that cost the emulator most
/// per memory instruction: the 64-byte lines of every global access (and with them the
/// partially used lines and the access-width histogram) and the LDS bank-conflict replays.
/// Together they are ~8% of a model decode step's emulation and ~20% of a prefill's; a run that
/// wants only its results has no use for them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Counting {
    /// Everything but the footprints: instructions (totals, classes, MFMAs, per address),
    /// workgroups, waves, barriers, memory instructions and bytes. [`GlobalCounters::lines`],
    /// [`GlobalCounters::partially_used_line_instructions`],
    /// [`GlobalCounters::lane_accesses_by_width`], [`LdsCounters::bank_conflict_cycles`] and
    /// [`LdsCounters::conflicted_instructions`] stay at zero.
    Lean,
    /// Everything (the default): what the cycle model, profiles and the counter suites read.
    #[default]
    Full,
}

impl Counting {
    /// Lowercase name (`lean`, `full`).
    pub fn name(self) -> &'static str {
        match self {
            Counting::Lean => "lean",
            Counting::Full => "full",
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

impl GlobalCounters {
    /// One more instruction of `kind`.
    fn instruction(&mut self, kind: Access) {
        match kind {
            Access::Load => self.load_instructions += 1,
            Access::Store => self.store_instructions += 1,
            Access::Atomic => self.atomic_instructions += 1,
        }
    }

    /// One instruction's `bytes`: read, written or both as `kind` says.
    fn traffic(&mut self, kind: Access, bytes: u64) {
        match kind {
            Access::Load => self.bytes_read += bytes,
            Access::Store => self.bytes_written += bytes,
            Access::Atomic => {
                self.bytes_read += bytes;
                self.bytes_written += bytes;
            }
        }
    }

    /// One instruction's `bytes` (read, written or both as `kind` says) touching
    /// `distinct_lines` 64-byte lines that hold `distinct` of its bytes.
    fn footprint(&mut self, kind: Access, bytes: u64, distinct_lines: u64, distinct: u64) {
        self.traffic(kind, bytes);
        self.lines += distinct_lines;
        if distinct < distinct_lines * 64 {
            self.partially_used_line_instructions += 1;
        }
    }
}

/// LDS traffic.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LdsCounters {
    /// Instructions that access LDS memory: DS instructions (not the lane permutes, which use
    /// the LDS crossbar but no memory), and FLAT instructions with lanes in the LDS aperture.
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
    /// How these were counted: [`Counting::Lean`] when any launch merged in was lean (its
    /// footprint counts are missing from the totals).
    pub counting: Counting,
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
        self.counting = self.counting.min(o.counting);
    }

    /// Nothing counted yet, counting as `counting` says.
    pub fn new(counting: Counting) -> Counters {
        Counters { counting, ..Counters::default() }
    }

    /// These counts without the footprints [`Counting::Lean`] leaves out: what a lean launch of
    /// the same work counts.
    pub fn as_lean(&self) -> Counters {
        let mut c = self.clone();
        c.global.lines = 0;
        c.global.partially_used_line_instructions = 0;
        c.global.lane_accesses_by_width.clear();
        c.lds.bank_conflict_cycles = 0;
        c.lds.conflicted_instructions = 0;
        c.counting = Counting::Lean;
        c
    }

    /// Instructions of one class.
    pub fn class(&self, c: Class) -> u64 {
        self.by_class.get(&c).copied().unwrap_or(0)
    }

    /// Whether this counts [`Counting::Lean`]: a hot path may then record its accesses with
    /// [`Counters::global_traffic`] / [`Counters::lds_traffic`] and skip listing them.
    #[inline]
    pub fn is_lean(&self) -> bool {
        self.counting == Counting::Lean
    }

    /// What [`Counters::global_access`] records of an access of `bytes` in all when counting
    /// lean (the instruction and its bytes, no footprint).
    #[inline]
    pub fn global_traffic(&mut self, kind: Access, bytes: u64) {
        self.global.instruction(kind);
        self.global.traffic(kind, bytes);
    }

    /// Records a global access by the active lanes: `addrs` holds (address, bytes) per active lane.
    pub fn global_access(&mut self, kind: Access, addrs: &[(u64, u32)]) {
        if self.is_lean() {
            self.global_traffic(kind, addrs.iter().map(|&(_, n)| n as u64).sum());
            return;
        }
        let g = &mut self.global;
        g.instruction(kind);
        // The common coalesced case, lanes covering one run of consecutive accesses of one width
        // in any lane order (the quantized GEMV's lanes read the rows of a tile in turn): its
        // footprint in closed form, what the general count below gives it (a tenth of a decode
        // step's emulation went to this function).
        if let Some(a0) = consecutive_run(addrs) {
            let (lanes, width) = (addrs.len() as u64, addrs[0].1);
            let bytes = lanes * width as u64;
            *g.lane_accesses_by_width.entry(width).or_default() += lanes;
            // Every byte of the run is distinct.
            g.footprint(kind, bytes, (a0 + bytes - 1) / 64 - a0 / 64 + 1, bytes);
            return;
        }
        self.general_access(kind, addrs);
    }

    /// [`Counters::global_access`]'s count for any accesses, after the instruction count.
    fn general_access(&mut self, kind: Access, addrs: &[(u64, u32)]) {
        let g = &mut self.global;
        // Fixed-size scratch (this runs for every memory instruction): at most 64 lanes, each
        // access up to 16 bytes, so at most 2 lines per lane.
        let mut lines = [0u64; 2 * 64];
        let mut nl = 0;
        let mut spans = [(0u64, 0u64); 64];
        let mut bytes = 0u64;
        let mut width_run: Option<(u32, u64)> = None;
        for (i, &(a, n)) in addrs.iter().enumerate().take(64) {
            bytes += n as u64;
            width_run = match width_run {
                Some((w, c)) if w == n => Some((w, c + 1)),
                Some((w, c)) => {
                    *g.lane_accesses_by_width.entry(w).or_default() += c;
                    Some((n, 1))
                }
                None => Some((n, 1)),
            };
            let (first, last) = (a / 64, (a + n.max(1) as u64 - 1) / 64);
            let mut line = first;
            while line <= last && nl < lines.len() {
                lines[nl] = line;
                nl += 1;
                line += 1;
            }
            spans[i] = (a, a + n as u64);
        }
        if let Some((w, c)) = width_run {
            *g.lane_accesses_by_width.entry(w).or_default() += c;
        }
        let lines = &lines[..nl];
        let spans = &spans[..addrs.len().min(64)];
        // Lanes usually go up through memory: then both lists are sorted and one pass counts
        // them; otherwise a small table of lines and the bytes used in each does, without sorting
        // (a sort per instruction was 6% of a model prefill, whose activation loads go row by
        // row in lane order).
        let (distinct_lines, distinct) =
            if lines.is_sorted() && spans.is_sorted() { sorted_footprint(lines, spans) } else { hashed_footprint(spans) };
        g.footprint(kind, bytes, distinct_lines, distinct);
    }

    /// Records one LDS instruction: `op` says what kind of access and how wide (it decides which
    /// lanes the LDS serves together, see [`lds_phase`]), `addrs` holds every access of the
    /// active lanes (two per lane for the two-address forms).
    pub fn lds_access(&mut self, op: LdsOp, addrs: &[LdsLaneAccess]) {
        self.lds_traffic(op, addrs.iter().map(|a| a.bytes as u64).sum());
        if self.is_lean() {
            return;
        }
        let l = &mut self.lds;
        let extra = bank_conflict_cycles(op, addrs);
        l.bank_conflict_cycles += extra;
        if extra > 0 {
            l.conflicted_instructions += 1;
        }
    }

    /// What [`Counters::lds_access`] records of an instruction moving `bytes` in all when
    /// counting lean (the instruction and its bytes, no bank conflicts).
    #[inline]
    pub fn lds_traffic(&mut self, op: LdsOp, bytes: u64) {
        let l = &mut self.lds;
        l.instructions += 1;
        match op.kind {
            LdsKind::Read => l.bytes_read += bytes,
            LdsKind::Write => l.bytes_written += bytes,
            LdsKind::Atomic => {
                l.bytes_read += bytes;
                l.bytes_written += bytes;
            }
        }
    }
}

/// Distinct 64-byte lines and distinct bytes of sorted `lines` (with repeats) and byte `spans`
/// (start, end).
fn sorted_footprint(lines: &[u64], spans: &[(u64, u64)]) -> (u64, u64) {
    let distinct_lines = lines.iter().enumerate().filter(|&(i, l)| i == 0 || *l != lines[i - 1]).count() as u64;
    let mut distinct = 0u64;
    let mut end = 0u64;
    for &(s, e) in spans {
        let s = s.max(end);
        if e > s {
            distinct += e - s;
            end = e;
        }
    }
    (distinct_lines, distinct)
}

/// [`sorted_footprint`] of spans in any order: every line a span touches goes into an
/// open-addressed table with a mask of its bytes used; the lines are the table's entries, the
/// distinct bytes the masks' bits. (Empty spans touch the line of their start and no byte, as
/// in the sorted count.)
fn hashed_footprint(spans: &[(u64, u64)]) -> (u64, u64) {
    // At most 64 spans of at most 64 bytes: at most 128 lines, in 256 slots.
    const SLOTS: usize = 256;
    let mut table = [(u64::MAX, 0u64); SLOTS];
    let mut distinct_lines = 0u64;
    for &(s, e) in spans {
        for line in s / 64..=(e.max(s + 1) - 1) / 64 {
            // The span's bytes inside this line, as offsets lo..hi.
            let (lo, hi) = (s.max(line * 64) - line * 64, e.min(line * 64 + 64).saturating_sub(line * 64));
            let mask = if hi > lo { (u64::MAX >> (64 - (hi - lo))) << lo } else { 0 };
            let mut i = (line.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as usize;
            loop {
                let slot = &mut table[i];
                if slot.0 == line {
                    slot.1 |= mask;
                    break;
                }
                if slot.0 == u64::MAX {
                    *slot = (line, mask);
                    distinct_lines += 1;
                    break;
                }
                i = (i + 1) % SLOTS;
            }
        }
    }
    let distinct = table.iter().filter(|t| t.0 != u64::MAX).map(|t| t.1.count_ones() as u64).sum();
    (distinct_lines, distinct)
}

/// The first address of the run when `addrs` (at most 64 lanes) are accesses of one nonzero
/// width `n` at `a0, a0 + n, ..`, one per lane in any order; else `None`.
fn consecutive_run(addrs: &[(u64, u32)]) -> Option<u64> {
    let &(_, n) = addrs.first()?;
    if n == 0 || addrs.len() > 64 || addrs.iter().any(|&(_, w)| w != n) {
        return None;
    }
    let a0 = addrs.iter().map(|&(a, _)| a).min()?;
    let mut seen = 0u64;
    for &(a, _) in addrs {
        let off = a - a0;
        let i = off / n as u64;
        if off % n as u64 != 0 || i >= addrs.len() as u64 || seen & (1 << i) != 0 {
            return None;
        }
        seen |= 1 << i;
    }
    Some(a0)
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

/// LDS banks (each 4 bytes wide): bank = (byte address / 4) % 32 (GFX942.md; research note
/// `cdna3_perf_facts.md` section 1.1).
pub const LDS_BANKS: u32 = 32;

/// What an LDS instruction does to memory, for the bank-conflict model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LdsKind {
    /// A load (`ds_read*`): lanes reading the same dword get it by broadcast.
    Read,
    /// A store (`ds_write*`, and the LDS side of loads to LDS): same-dword writes cost nothing
    /// extra (one of them wins).
    Write,
    /// A read-modify-write (`ds_add_u32`, `ds_wrxchg*`, ...): lanes hitting the same dword are
    /// serialised like distinct dwords ("address conflicts", research note 1.3).
    Atomic,
}

/// The shape of one LDS instruction as the phase model needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LdsOp {
    /// Load, store or atomic.
    pub kind: LdsKind,
    /// Bytes each lane moves in one access (1, 2, 4, 8, 12, 16); for the two-address forms, the
    /// size of one of the two accesses.
    pub width: u32,
}

impl LdsOp {
    /// A load of `width` bytes per lane (per address for `read2`).
    pub const fn read(width: u32) -> LdsOp {
        LdsOp { kind: LdsKind::Read, width }
    }
    /// A store of `width` bytes per lane.
    pub const fn write(width: u32) -> LdsOp {
        LdsOp { kind: LdsKind::Write, width }
    }
    /// An atomic on `width` bytes per lane.
    pub const fn atomic(width: u32) -> LdsOp {
        LdsOp { kind: LdsKind::Atomic, width }
    }
}

/// One lane's access: which lane, which of its accesses (`part` 0 or 1; 1 only for the second
/// address of `read2`/`write2`/`wrxchg2`), the byte address and the size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LdsLaneAccess {
    /// Lane 0-63.
    pub lane: u8,
    /// First (0) or second (1) address of a two-address instruction.
    pub part: u8,
    /// Byte address in the workgroup's LDS.
    pub addr: u32,
    /// Bytes accessed.
    pub bytes: u32,
}

/// The phase in which the LDS serves `lane`'s access number `part` of an `op` instruction. Lanes
/// are checked against each other for bank conflicts only within a phase; each phase moves at
/// most 128 bytes (32 banks x 4 bytes).
///
/// The groups are the ones measured on MI300X, not a contiguous "128 bytes per phase" rule
/// (research note `cdna3_perf_facts.md`, table 1.2; S-numbers are the note's source tags):
/// - `ds_read_b32` (and sub-dword reads, which use the b32 phases on their dword; inference in
///   the note): lanes 0-31, 32-63. Measured (S2, S3).
/// - `ds_read_b64`: 16 contiguous lanes per phase. Measured (S2, S3, S5).
/// - `ds_read_b96`/`ds_read_b128`: 8 lanes per phase, not contiguous: {0-3, 20-23},
///   {4-7, 16-19}, {8-11, 28-31}, {12-15, 24-27}, and the same plus 32. Measured (S1, S2, S5),
///   Triton PR (S4); b96 is assumed to follow b128 (measured on gfx950 only (S13)).
/// - `ds_write_b128` (and, by inference, `ds_write_b96`): contiguous groups of 8 (S1, S14).
/// - `ds_write_b64`: contiguous groups of 16 (gfx950 measurement, rocRoller (S11, S13)).
/// - `ds_write_b32` and sub-dword writes: lanes 0-31, 32-63 (S11, S12).
/// - Atomics: no source; we use the write phases of their width (32-bit atomics 0-31/32-63,
///   64-bit atomics groups of 16).
/// - Two-address forms (`read2`, `write2`, `read2st64`, `write2st64`, `wrxchg2*`): the note
///   gives `ds_read2_b64` as "the first b64 in 4 x 16 lanes, then the second in the same 4
///   groups" (S3) and, for the rest, suggests (inference) two back-to-back single-width
///   accesses. We do exactly that for all of them: part 0 of every lane in the phases of the
///   single-width instruction, then part 1 in its own, separate phases, so the two addresses of
///   one lane never conflict with each other.
pub fn lds_phase(op: LdsOp, lane: u32, part: u32) -> u32 {
    let lane = lane % 64;
    let within = match (op.kind, op.width) {
        (LdsKind::Read, 12 | 16) => {
            // Quads q = lane/4 of each half pair up as (0,5), (1,4), (2,7), (3,6).
            let q = (lane % 32) / 4;
            (lane / 32) * 4 + ((q & 3) ^ (q >> 2))
        }
        (LdsKind::Read, 8) => lane / 16,
        (LdsKind::Write | LdsKind::Atomic, 12 | 16) => lane / 8,
        (LdsKind::Write | LdsKind::Atomic, 8) => lane / 16,
        _ => lane / 32,
    };
    // Eight phases at most per part (b96/b128); part 1 follows all of part 0's.
    part * 8 + within
}

/// Extra LDS cycles an instruction loses to bank conflicts: for every phase (see
/// [`lds_phase`]), the largest number of distinct dwords any one bank must deliver, minus one.
/// Reads of one dword by several lanes are a broadcast and count once; so are same-dword
/// writes; atomics count every lane.
///
/// This is the quantity MI300X's `SQ_LDS_BANK_CONFLICT` counter reports (research note 1.3,
/// (S2)): a fully conflicted `ds_read_b32` gives 62 (2 phases x 31), `ds_read_b64` 60 (4 x 15),
/// `ds_read_b128` 56 (8 x 7).
pub fn bank_conflict_cycles(op: LdsOp, addrs: &[LdsLaneAccess]) -> u64 {
    if linear(op, addrs) || disjoint_or_repeated(op, addrs) {
        return 0;
    }
    conflicts_by_phase(op, addrs)
}

/// True when every lane moves `op.width` (4, 8 or 16) bytes at `base + lane * width`, one access
/// each, from a dword-aligned base: most LDS instructions of tiled kernels. Such an access never
/// conflicts (each phase of [`lds_phase`] then covers 32 consecutive dwords, one per bank; the
/// 128-bit read's paired quads lie 16 dwords apart modulo 32), so the per-phase count is
/// skipped (`linear_accesses_never_conflict` checks the claim against it).
fn linear(op: LdsOp, addrs: &[LdsLaneAccess]) -> bool {
    let w = op.width;
    let Some(first) = addrs.first() else { return true };
    if !matches!(w, 4 | 8 | 16) || first.addr % 4 != 0 {
        return false;
    }
    let base = first.addr.wrapping_sub(first.lane as u32 * w);
    addrs.iter().all(|a| a.part == 0 && a.bytes == w && a.addr == base.wrapping_add(a.lane as u32 * w))
}

/// True when, within every phase, each lane's access either touches banks no earlier lane of the
/// phase touched or repeats an earlier lane's access exactly (same address and size; a
/// broadcast, so not for atomics): then every bank delivers at most one distinct dword per phase
/// and nothing conflicts. Swizzled tiles and lanes sharing rows (a skinny GEMM's padding reads
/// one activation row 16 times) are such accesses; checking them lane by lane with bank masks
/// is much cheaper than counting dword by dword (the count was 7% of a model decode step). A
/// `false` says only that the exact count must decide (`disjoint_or_repeated_accesses_never_conflict`).
fn disjoint_or_repeated(op: LdsOp, addrs: &[LdsLaneAccess]) -> bool {
    const PHASES: usize = 16;
    let mut used = [0u32; PHASES];
    // Accesses that set bits of `used`: (phase, address, bytes).
    let mut seen = [(0u8, 0u32, 0u32); 128];
    let mut n = 0;
    // The previous access of each phase: lanes sharing a row come in runs, so a repeat is
    // usually of it, found without scanning `seen`.
    let mut last = [(u32::MAX, 0u32); PHASES];
    for a in addrs {
        let p = lds_phase(op, a.lane as u32, a.part as u32) as usize;
        if p < PHASES && op.kind != LdsKind::Atomic && last[p] == (a.addr, a.bytes) {
            continue;
        }
        let first = a.addr / 4;
        let dwords = ((a.addr as u64 + a.bytes.max(1) as u64 - 1) / 4) as u32 - first + 1;
        if p >= PHASES || dwords >= LDS_BANKS || n == seen.len() {
            return false;
        }
        let mask = ((1u32 << dwords) - 1).rotate_left(first % LDS_BANKS);
        last[p] = (a.addr, a.bytes);
        if used[p] & mask == 0 {
            used[p] |= mask;
            seen[n] = (p as u8, a.addr, a.bytes);
            n += 1;
        } else if op.kind == LdsKind::Atomic || !seen[..n].iter().any(|&(sp, sa, sb)| sp as usize == p && sa == a.addr && sb == a.bytes) {
            return false;
        }
    }
    true
}

/// [`bank_conflict_cycles`] counted phase by phase.
fn conflicts_by_phase(op: LdsOp, addrs: &[LdsLaneAccess]) -> u64 {
    /// Phases per instruction: 8 per part (b96/b128), two parts.
    const PHASES: usize = 16;
    /// Dwords one phase can touch: 128 bytes, plus one straddled dword per lane of 8.
    const PER_PHASE: usize = 48;
    if addrs.is_empty() {
        return 0;
    }
    let mut dwords = [[0u32; PER_PHASE]; PHASES];
    let mut count = [0usize; PHASES];
    // Banks used so far in each phase, to find phases without any collision cheaply.
    let mut used = [0u32; PHASES];
    let mut collided = [false; PHASES];
    // The previous access of each phase: a lane repeating it adds no distinct dword (for reads
    // and writes; atomics count every lane), so it is skipped before the dword loop.
    let mut last = [(u32::MAX, 0u32); PHASES];
    for a in addrs {
        let p = lds_phase(op, a.lane as u32, a.part as u32) as usize;
        if op.kind != LdsKind::Atomic && last[p] == (a.addr, a.bytes) {
            continue;
        }
        last[p] = (a.addr, a.bytes);
        let first = a.addr / 4;
        let last = ((a.addr as u64 + a.bytes.max(1) as u64 - 1) / 4) as u32;
        for d in first..=last {
            let bit = 1u32 << (d % LDS_BANKS);
            collided[p] |= used[p] & bit != 0;
            used[p] |= bit;
            if count[p] < PER_PHASE {
                dwords[p][count[p]] = d;
                count[p] += 1;
            } else {
                // More dwords than a phase can move only happens for patterns the lane groups
                // do not expect (e.g. more than two parts); count the excess as conflicts.
                collided[p] = true;
            }
        }
    }
    let mut extra = 0u64;
    for p in (0..PHASES).filter(|&p| collided[p]) {
        let ds = &mut dwords[p][..count[p]];
        if op.kind != LdsKind::Atomic && one_dword_per_bank(ds) {
            // A broadcast (lanes sharing dwords, no two dwords in a bank): every bank counts
            // one dword below, so the phase adds nothing. Skips the sort.
            continue;
        }
        ds.sort_unstable();
        let mut per_bank = [0u32; LDS_BANKS as usize];
        let mut prev = None;
        for &d in ds.iter() {
            // Reads and writes of one dword by several lanes count once; atomics do not.
            if op.kind != LdsKind::Atomic && prev == Some(d) {
                continue;
            }
            prev = Some(d);
            per_bank[(d % LDS_BANKS) as usize] += 1;
        }
        extra += per_bank.iter().max().copied().unwrap_or(0).saturating_sub(1) as u64;
    }
    extra
}

/// True when no bank holds two different dwords of `ds`.
fn one_dword_per_bank(ds: &[u32]) -> bool {
    // Dword indices are LDS byte addresses / 4, far below u32::MAX.
    let mut first = [u32::MAX; LDS_BANKS as usize];
    for &d in ds {
        let f = &mut first[(d % LDS_BANKS) as usize];
        if *f == u32::MAX {
            *f = d;
        } else if *f != d {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lanes(f: impl Fn(u32) -> u32, bytes: u32) -> Vec<LdsLaneAccess> {
        (0..64).map(|l| LdsLaneAccess { lane: l as u8, part: 0, addr: f(l), bytes }).collect()
    }

    #[test]
    fn bank_conflicts_of_classic_patterns() {
        let r32 = LdsOp::read(4);
        // 64 lanes reading consecutive dwords: conflict-free.
        assert_eq!(bank_conflict_cycles(r32, &lanes(|l| l * 4, 4)), 0);
        // Stride of 2 dwords: lanes l and l+16 of a phase share a bank -> 2-way, one extra cycle
        // per 32-lane phase (the research note's "2-way ds_read_b32 counts 2").
        assert_eq!(bank_conflict_cycles(r32, &lanes(|l| l * 8, 4)), 2);
        // Broadcast: every lane reads the same dword.
        assert_eq!(bank_conflict_cycles(r32, &lanes(|_| 0, 4)), 0);
        // ... but 64 atomics on one dword serialise.
        assert_eq!(bank_conflict_cycles(LdsOp::atomic(4), &lanes(|_| 0, 4)), 62);
        // Same-dword writes do not.
        assert_eq!(bank_conflict_cycles(LdsOp::write(4), &lanes(|_| 0, 4)), 0);
        // Lanes reading in pairs (a broadcast per pair) are conflict-free; one lane moved to
        // another dword of bank 0 makes that bank 2-way in its phase.
        assert_eq!(bank_conflict_cycles(r32, &lanes(|l| l / 2 * 4, 4)), 0);
        assert_eq!(bank_conflict_cycles(r32, &lanes(|l| if l == 1 { 128 } else { l / 2 * 4 }, 4)), 1);
        // 128-bit reads of consecutive 16-byte chunks.
        assert_eq!(bank_conflict_cycles(LdsOp::read(16), &lanes(|l| l * 16, 16)), 0);
    }

    /// The premise of `linear`'s shortcut: lanes moving 4, 8 or 16 bytes at `base + lane *
    /// width` (any dword-aligned base, any subset of lanes, reads, writes and atomics) never
    /// conflict when counted phase by phase; and a pattern the shortcut must not take (a 12-byte
    /// stride, two parts, a misaligned base) still goes through the count.
    /// A small deterministic generator (xorshift64) for the random-pattern tests.
    fn xorshift(seed: u64) -> impl FnMut() -> u64 {
        let mut x = seed;
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    #[test]
    fn unsorted_footprints_count_what_sorted_ones_do() {
        // Random lane accesses (widths 0-16, shared lines, repeats, line-straddling spans) in any
        // order: the table's count equals the sorted pass's on the sorted lists.
        let mut next = xorshift(0x1234_5678_9abc_def1);
        for _ in 0..3000 {
            let n = 1 + next() % 64;
            let spans: Vec<(u64, u64)> = (0..n)
                .map(|_| {
                    let a = 0x1000 + next() % 700;
                    let w = [0, 1, 2, 4, 8, 12, 16][(next() % 7) as usize];
                    (a, a + w)
                })
                .collect();
            let mut lines: Vec<u64> = spans.iter().flat_map(|&(s, e)| s / 64..=(e.max(s + 1) - 1) / 64).collect();
            lines.sort_unstable();
            let mut sorted = spans.clone();
            sorted.sort_unstable();
            assert_eq!(hashed_footprint(&spans), sorted_footprint(&lines, &sorted), "{spans:?}");
        }
    }

    #[test]
    fn disjoint_or_repeated_accesses_never_conflict() {
        // Random patterns built to be disjoint-or-repeated half of the time (rows shared by
        // groups of lanes, swizzled offsets) and arbitrary otherwise: whenever the quick check
        // says conflict-free, the exact count agrees; and it does say so for the built ones.
        let mut next64 = xorshift(0x2545_f491);
        let mut next = move || next64() as u32;
        let mut claimed = 0;
        for i in 0..6000u32 {
            let w = [1, 2, 4, 8, 12, 16][(i % 6) as usize];
            let op = [LdsOp::read(w), LdsOp::write(w), LdsOp::atomic(w)][(i / 6 % 3) as usize];
            let r = next();
            let on = (next() as u64) << 32 | next() as u64 | 0x1;
            let noise: Vec<u32> = (0..64).map(|_| next()).collect();
            let accesses: Vec<_> = (0..64u32)
                .filter(|l| on >> l & 1 == 1)
                .map(|l| {
                    let addr = match r % 4 {
                        // Groups of lanes sharing one address (a broadcast row).
                        0 => (l / (1 + r % 16)) * 256 % 4096,
                        // A swizzle: lane-distinct rows, XOR-permuted columns.
                        1 => ((l * 64) ^ ((l % 8) * 16)) % 4096,
                        // Arbitrary addresses.
                        2 => noise[l as usize] % 4096,
                        // One address for all.
                        _ => r % 4096 & !3,
                    };
                    LdsLaneAccess { lane: l as u8, part: 0, addr: addr - addr % w.min(4), bytes: w }
                })
                .collect();
            let exact = conflicts_by_phase(op, &accesses);
            if disjoint_or_repeated(op, &accesses) {
                claimed += 1;
                assert_eq!(exact, 0, "{op:?} {accesses:?}");
            }
            if op.kind == LdsKind::Read && r % 4 == 3 {
                assert!(disjoint_or_repeated(op, &accesses), "a broadcast is recognised");
            }
        }
        assert!(claimed > 1000, "{claimed}");
    }

    #[test]
    fn linear_accesses_never_conflict() {
        let mut x = 0x9e37_79b9u32;
        for i in 0..3000u32 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let w = [4, 8, 16][(i % 3) as usize];
            let op = [LdsOp::read(w), LdsOp::write(w), LdsOp::atomic(w)][(i / 3 % 3) as usize];
            let base = (x % 4096) & !3;
            let exec = (x as u64) << 32 | x.rotate_left(7) as u64;
            let accesses: Vec<_> = (0..64)
                .filter(|l| exec >> l & 1 == 1)
                .map(|l| LdsLaneAccess { lane: l as u8, part: 0, addr: base + l * w, bytes: w })
                .collect();
            assert!(linear(op, &accesses));
            assert_eq!(conflicts_by_phase(op, &accesses), 0, "{op:?} base {base} exec {exec:#x}");
        }
        let stride12 = lanes(|l| l * 12, 12);
        assert!(!linear(LdsOp::read(12), &stride12));
        let misaligned = lanes(|l| 2 + l * 4, 4);
        assert!(!linear(LdsOp::read(4), &misaligned));
        let mut two = lanes(|l| l * 4, 4);
        two[5].part = 1;
        assert!(!linear(LdsOp::read(4), &two));
    }

    #[test]
    fn fully_conflicted_reads_match_the_mi300x_counter() {
        // Every lane on bank 0 (a 128-byte stride): the measured SQ_LDS_BANK_CONFLICT values.
        assert_eq!(bank_conflict_cycles(LdsOp::read(4), &lanes(|l| l * 128, 4)), 62);
        assert_eq!(bank_conflict_cycles(LdsOp::read(8), &lanes(|l| l * 128, 8)), 60);
        assert_eq!(bank_conflict_cycles(LdsOp::read(16), &lanes(|l| l * 128, 16)), 56);
        // Writes with the same pattern, in their own phases.
        assert_eq!(bank_conflict_cycles(LdsOp::write(4), &lanes(|l| l * 128, 4)), 62);
        assert_eq!(bank_conflict_cycles(LdsOp::write(8), &lanes(|l| l * 128, 8)), 60);
        assert_eq!(bank_conflict_cycles(LdsOp::write(16), &lanes(|l| l * 128, 16)), 56);
    }

    #[test]
    fn b128_read_phases_are_the_measured_lane_groups() {
        let groups: [&[u32]; 4] = [
            &[0, 1, 2, 3, 20, 21, 22, 23],
            &[4, 5, 6, 7, 16, 17, 18, 19],
            &[8, 9, 10, 11, 28, 29, 30, 31],
            &[12, 13, 14, 15, 24, 25, 26, 27],
        ];
        for (g, members) in groups.iter().enumerate() {
            for &l in *members {
                assert_eq!(lds_phase(LdsOp::read(16), l, 0), g as u32, "lane {l}");
                assert_eq!(lds_phase(LdsOp::read(16), l + 32, 0), g as u32 + 4, "lane {}", l + 32);
                assert_eq!(lds_phase(LdsOp::read(12), l, 0), g as u32);
            }
        }
        // Each group's 8 lanes read one 128-byte row (rank within the group picks the 16-byte
        // slot): conflict-free for the measured groups ...
        let rank = |l: u32| groups.iter().find_map(|m| m.iter().position(|&x| x == l % 32)).unwrap() as u32;
        let group = |l: u32| lds_phase(LdsOp::read(16), l, 0);
        let addr = |l: u32| group(l) * 128 + rank(l) * 16;
        assert_eq!(bank_conflict_cycles(LdsOp::read(16), &lanes(addr, 16)), 0);
        // ... while lanes 0-3 and 4-7 (one phase under a contiguous model) share banks 0-15, so
        // the same layout written with contiguous groups of 8 is 2-way conflicted.
        assert_eq!(bank_conflict_cycles(LdsOp::write(16), &lanes(addr, 16)), 8);
        // The plain row-major pattern l*16 is conflict-free under both.
        assert_eq!(bank_conflict_cycles(LdsOp::write(16), &lanes(|l| l * 16, 16)), 0);
    }

    #[test]
    fn two_address_forms_use_separate_phases_per_address() {
        // read2_b32 with offsets 0 and 32 dwords: both addresses of a lane sit on the same bank,
        // but they are served in different phases, so no conflict.
        let mut acc = lanes(|l| l * 4, 4);
        acc.extend((0..64).map(|l| LdsLaneAccess { lane: l, part: 1, addr: l as u32 * 4 + 128, bytes: 4 }));
        assert_eq!(bank_conflict_cycles(LdsOp::read(4), &acc), 0);
        // read2_b64 as two b64 accesses: 16 lanes x 8 bytes fill the banks once per phase.
        let mut acc = lanes(|l| l * 8, 8);
        acc.extend((0..64).map(|l| LdsLaneAccess { lane: l, part: 1, addr: 4096 + l as u32 * 8, bytes: 8 }));
        assert_eq!(bank_conflict_cycles(LdsOp::read(8), &acc), 0);
        // Column access by read2_b32 (stride 32 dwords in both parts): 31 extra per phase, 4 phases.
        let mut acc = lanes(|l| l * 128, 4);
        acc.extend((0..64).map(|l| LdsLaneAccess { lane: l, part: 1, addr: l as u32 * 128 + 4, bytes: 4 }));
        assert_eq!(bank_conflict_cycles(LdsOp::read(4), &acc), 4 * 31);
    }

    #[test]
    fn sub_dword_accesses_count_their_dword() {
        // Bytes of one dword read by 4 lanes: a broadcast of that dword.
        assert_eq!(bank_conflict_cycles(LdsOp::read(1), &lanes(|l| l, 1)), 0);
        // Shorts with a 64-byte stride: lanes l and l+2 share a bank in each 32-lane phase.
        assert_eq!(bank_conflict_cycles(LdsOp::read(2), &lanes(|l| l * 64, 2)), 2 * 15);
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

    /// The closed form for lanes covering a run of consecutive accesses counts what the general
    /// count does, for runs in lane order and reversed; a lane repeated or off the run takes
    /// the general count.
    #[test]
    fn consecutive_lanes_count_as_the_general_path_does() {
        for width in [1u32, 2, 4, 8, 12, 16] {
            for lanes in [1u64, 2, 5, 16, 63, 64] {
                for start in [0u64, 1, 3, 62, 64, 0x1000 + 40, (1 << 40) + 17] {
                    let run: Vec<_> = (0..lanes).map(|l| (start + l * width as u64, width)).collect();
                    let reversed: Vec<_> = run.iter().rev().copied().collect();
                    assert_eq!(consecutive_run(&run), Some(start));
                    assert_eq!(consecutive_run(&reversed), Some(start));
                    if lanes < 64 {
                        let mut repeated = reversed.clone();
                        repeated.push(run[0]);
                        let mut gapped = reversed.clone();
                        gapped.push((start + (lanes + 1) * width as u64, width));
                        assert_eq!(consecutive_run(&repeated), None);
                        assert_eq!(consecutive_run(&gapped), None);
                    }
                    for (addrs, kind) in [(&run, Access::Load), (&reversed, Access::Store), (&reversed, Access::Atomic)] {
                        let (mut fast, mut general) = (Counters::default(), Counters::default());
                        fast.global_access(kind, addrs);
                        general.general_access(kind, addrs);
                        // (`general_access` leaves the instruction count to its caller.)
                        general.global.load_instructions = fast.global.load_instructions;
                        general.global.store_instructions = fast.global.store_instructions;
                        general.global.atomic_instructions = fast.global.atomic_instructions;
                        assert_eq!(fast.global, general.global, "width {width}, {lanes} lanes from {start}");
                    }
                }
            }
        }
        // Mixed widths are no run.
        assert_eq!(consecutive_run(&[(0, 4), (4, 8)]), None);
    }

    /// Lean counting keeps every count but the footprints, and a total with a lean launch in
    /// it says so.
    #[test]
    fn lean_counting_leaves_out_only_the_footprints() {
        let (mut full, mut lean) = (Counters::new(Counting::Full), Counters::new(Counting::Lean));
        let strided: Vec<_> = (0..64u64).map(|l| (0x1000 + l * 256, 4)).collect();
        let run: Vec<_> = (0..64u64).map(|l| (0x1000 + l * 16, 16)).collect();
        let conflicted = lanes(|l| l * 128, 4);
        for c in [&mut full, &mut lean] {
            c.global_access(Access::Load, &strided);
            c.global_access(Access::Store, &run);
            c.global_access(Access::Atomic, &run[..3]);
            c.lds_access(LdsOp::read(4), &conflicted);
            c.lds_access(LdsOp::write(4), &conflicted);
        }
        assert!(full.global.lines > 0 && full.lds.bank_conflict_cycles > 0);
        let mut expected = full.clone();
        expected.global.lines = 0;
        expected.global.partially_used_line_instructions = 0;
        expected.global.lane_accesses_by_width.clear();
        expected.lds.bank_conflict_cycles = 0;
        expected.lds.conflicted_instructions = 0;
        expected.counting = Counting::Lean;
        assert_eq!(lean, expected);
        assert_eq!(full.as_lean(), expected);

        let mut total = Counters::default();
        total.merge(&full);
        assert_eq!(total.counting, Counting::Full);
        total.merge(&lean);
        assert_eq!(total.counting, Counting::Lean);
        total.merge(&full);
        assert_eq!(total.counting, Counting::Lean);
    }
}
