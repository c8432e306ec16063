//! Atomics on hand-written kernels (tests/asm/atomics.s): every GLOBAL atomic of gfx942 with
//! and without return, buffer/flat/scalar atomics, and the faults of misaligned atomics and
//! wild addresses. Expected values come from a reference written here, lanes in order.

#[path = "asm/harness.rs"]
mod harness;

use ferrocm_emu::EmuError;
use ferrocm_emu::exec::{FaultKind, Space};
use half::{bf16, f16};
use harness::Gpu;

const OPS: [&str; 32] = [
    "swap",
    "cmpswap",
    "add",
    "sub",
    "smin",
    "umin",
    "smax",
    "umax",
    "and",
    "or",
    "xor",
    "inc",
    "dec",
    "add_f32",
    "pk_add_f16",
    "pk_add_bf16",
    "swap_x2",
    "cmpswap_x2",
    "add_x2",
    "sub_x2",
    "smin_x2",
    "umin_x2",
    "smax_x2",
    "umax_x2",
    "and_x2",
    "or_x2",
    "xor_x2",
    "inc_x2",
    "dec_x2",
    "add_f64",
    "min_f64",
    "max_f64",
];

fn hash32(l: u64) -> u64 {
    (l as u32).wrapping_mul(2_654_435_761) as u64
}
fn hash64(l: u64) -> u64 {
    l.wrapping_mul(0x9E37_79B9_7F4A_7C15)
}
fn pk(lo: u16, hi: u16) -> u64 {
    (lo as u64) | (hi as u64) << 16
}

/// (initial cell, per-lane (data, compare)) of op `k`.
fn case(k: usize) -> (u64, Vec<(u64, u64)>) {
    let lanes = |f: &dyn Fn(u64) -> (u64, u64)| (0..64).map(f).collect::<Vec<_>>();
    let d32 = |l: u64| ((l * 37 % 64) as i32 - 32) as u32 as u64;
    let d64 = |l: u64| ((l as i64 - 32) * 0x1_0000_0001) as u64;
    let fd = |l: u64| ((l * 37 % 64) as f64 - 31.5).to_bits();
    match OPS[k] {
        "swap" => (9, lanes(&|l| (l + 1, 0))),
        "cmpswap" => (0, lanes(&|l| (l + 1, l))),
        "add" => (7, lanes(&|l| (l + 1, 0))),
        "sub" => (1000, lanes(&|l| (3 * l, 0))),
        "smin" => (5, lanes(&|l| (d32(l), 0))),
        "umin" => (0xffff_fff0, lanes(&|l| (hash32(l), 0))),
        "smax" => ((-100i32) as u32 as u64, lanes(&|l| (d32(l), 0))),
        "umax" => (0, lanes(&|l| (hash32(l), 0))),
        "and" => (0xffff_ffff, lanes(&|l| (!(1u32 << (l % 32)) as u64, 0))),
        "or" => (0, lanes(&|l| (1u64 << (l % 32), 0))),
        "xor" => (0x1234, lanes(&|l| ((l as u32).wrapping_mul(0x9E37_79B9) as u64, 0))),
        "inc" => (0, lanes(&|_| (10, 0))),
        "dec" => (3, lanes(&|_| (10, 0))),
        "add_f32" => (1f32.to_bits() as u64, lanes(&|l| ((l as f32 * 0.5 + 0.25).to_bits() as u64, 0))),
        "pk_add_f16" => (
            pk(f16::from_f32(1.0).to_bits(), f16::from_f32(2.0).to_bits()),
            lanes(&|l| (pk(f16::from_f32(l as f32 * 0.5).to_bits(), f16::from_f32(-(l as f32)).to_bits()), 0)),
        ),
        "pk_add_bf16" => (0, lanes(&|l| (pk(bf16::from_f32(l as f32).to_bits(), bf16::from_f32(0.25).to_bits()), 0))),
        "swap_x2" => (1, lanes(&|l| (l << 32 | l, 0))),
        "cmpswap_x2" => (0, lanes(&|l| ((l + 1) << 33, l << 33))),
        "add_x2" => (1, lanes(&|l| (0xffff_ffff + l, 0))),
        "sub_x2" => (0, lanes(&|l| (l << 31, 0))),
        "smin_x2" => (0, lanes(&|l| (d64(l), 0))),
        "umin_x2" => (u64::MAX, lanes(&|l| (hash64(l), 0))),
        "smax_x2" => (i64::MIN as u64, lanes(&|l| (d64(l), 0))),
        "umax_x2" => (0, lanes(&|l| (hash64(l), 0))),
        "and_x2" => (u64::MAX, lanes(&|l| (!(1u64 << l), 0))),
        "or_x2" => (0, lanes(&|l| (1u64 << l, 0))),
        "xor_x2" => (0, lanes(&|l| (hash64(l), 0))),
        "inc_x2" => (0, lanes(&|_| (5, 0))),
        "dec_x2" => (0, lanes(&|_| (5, 0))),
        "add_f64" => (0.5f64.to_bits(), lanes(&|l| ((l as f64 * 0.125).to_bits(), 0))),
        "min_f64" | "max_f64" => (0, lanes(&|l| (fd(l), 0))),
        op => unreachable!("{op}"),
    }
}

/// The ISA's result of op `name` on `old` with `(src, cmp)`.
fn reference(name: &str, old: u64, src: u64, cmp: u64) -> u64 {
    let wide = name.ends_with("_x2") || name.ends_with("_f64");
    let (o32, s32) = (old as u32, src as u32);
    let f16add = |a: u64, b: u64| f16::from_f32(f16::from_bits(a as u16).to_f32() + f16::from_bits(b as u16).to_f32()).to_bits();
    let bfadd = |a: u64, b: u64| bf16::from_f32(bf16::from_bits(a as u16).to_f32() + bf16::from_bits(b as u16).to_f32()).to_bits();
    let r32: u32 = match name {
        "swap" => s32,
        "cmpswap" => {
            if o32 == cmp as u32 {
                s32
            } else {
                o32
            }
        }
        "add" => o32.wrapping_add(s32),
        "sub" => o32.wrapping_sub(s32),
        "smin" => (o32 as i32).min(s32 as i32) as u32,
        "umin" => o32.min(s32),
        "smax" => (o32 as i32).max(s32 as i32) as u32,
        "umax" => o32.max(s32),
        "and" => o32 & s32,
        "or" => o32 | s32,
        "xor" => o32 ^ s32,
        "inc" => {
            if o32 >= s32 {
                0
            } else {
                o32 + 1
            }
        }
        "dec" => {
            if o32 == 0 || o32 > s32 {
                s32
            } else {
                o32 - 1
            }
        }
        "add_f32" => (f32::from_bits(o32) + f32::from_bits(s32)).to_bits(),
        "pk_add_f16" => pk(f16add(old, src), f16add(old >> 16, src >> 16)) as u32,
        "pk_add_bf16" => pk(bfadd(old, src), bfadd(old >> 16, src >> 16)) as u32,
        _ => {
            assert!(wide);
            0
        }
    };
    if !wide {
        return (old & !0xffff_ffff) | r32 as u64;
    }
    let (fo, fs) = (f64::from_bits(old), f64::from_bits(src));
    match name {
        "swap_x2" => src,
        "cmpswap_x2" => {
            if old == cmp {
                src
            } else {
                old
            }
        }
        "add_x2" => old.wrapping_add(src),
        "sub_x2" => old.wrapping_sub(src),
        "smin_x2" => (old as i64).min(src as i64) as u64,
        "umin_x2" => old.min(src),
        "smax_x2" => (old as i64).max(src as i64) as u64,
        "umax_x2" => old.max(src),
        "and_x2" => old & src,
        "or_x2" => old | src,
        "xor_x2" => old ^ src,
        "inc_x2" => {
            if old >= src {
                0
            } else {
                old + 1
            }
        }
        "dec_x2" => {
            if old == 0 || old > src {
                src
            } else {
                old - 1
            }
        }
        "add_f64" => (fo + fs).to_bits(),
        "min_f64" => fo.min(fs).to_bits(),
        "max_f64" => fo.max(fs).to_bits(),
        op => unreachable!("{op}"),
    }
}

#[test]
fn every_global_atomic_with_and_without_return() {
    let gpu = Gpu::new("atomics");
    let mut cells = vec![0u64; 128];
    let mut data = vec![0u32; 32 * 64 * 4];
    for k in 0..32 {
        let (init, lanes) = case(k);
        cells[k] = init;
        cells[64 + k] = init;
        for (l, (src, cmp)) in lanes.iter().enumerate() {
            let at = (k * 64 + l) * 4;
            let wide = OPS[k].ends_with("_x2") || OPS[k].ends_with("_f64");
            // 32-bit ops read v2 (and v3, the compare); 64-bit ops v[2:3] (and v[4:5]).
            let words =
                if wide { [*src as u32, (*src >> 32) as u32, *cmp as u32, (*cmp >> 32) as u32] } else { [*src as u32, *cmp as u32, 0, 0] };
            data[at..at + 4].copy_from_slice(&words);
        }
    }
    let c = gpu.upload(&cells.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>());
    let d = gpu.upload_u32(&data);
    let out = gpu.zeros(32 * 64 * 2);
    let stats = gpu.launch("global_atomics", 1, 64, &[c, d, out]);
    let rets = gpu.u64s(out, 32 * 64);
    let finals = gpu.u64s(c, 128);
    for (k, name) in OPS.iter().enumerate() {
        let (mut v, lanes) = case(k);
        for (l, (src, cmp)) in lanes.iter().enumerate() {
            let wide = name.ends_with("_x2") || name.ends_with("_f64");
            let want = if wide { v } else { v & 0xffff_ffff };
            assert_eq!(rets[k * 64 + l], want, "global_atomic_{name} sc0: lane {l} returns the old value");
            v = reference(name, v, *src, *cmp);
        }
        assert_eq!(finals[k], v, "global_atomic_{name} sc0: final value");
        assert_eq!(finals[64 + k], v, "global_atomic_{name}: final value");
    }
    assert_eq!(stats.counters.global.atomic_instructions, 64);
    assert!(stats.sequential, "a kernel with global atomics runs its workgroups in order");
}

#[test]
fn buffer_flat_and_scalar_atomics() {
    let gpu = Gpu::new("atomics");
    let mut cells = vec![0u8; 512];
    let mut put = |at: usize, b: &[u8]| cells[at..at + b.len()].copy_from_slice(b);
    for (i, v) in [100u32, 200, 300, 400].iter().enumerate() {
        put(4 * i, &v.to_le_bytes());
    }
    put(64, &0xffff_ffffu64.to_le_bytes());
    put(72, &(-1f64).to_bits().to_le_bytes());
    put(104, &35u32.to_le_bytes());
    let c = gpu.upload(&cells);
    let out = gpu.zeros(64 * 9);
    gpu.launch("other_atomics", 1, 64, &[c, out]);
    let rows: Vec<Vec<u32>> = gpu.u32s(out, 64 * 9).chunks(64).map(|x| x.to_vec()).collect();
    let mut acc = [100u32, 200, 300, 400];
    for l in 0..64u32 {
        let slot = (l % 8) as usize;
        let want = if slot < 4 {
            let old = acc[slot];
            acc[slot] += l + 1;
            old
        } else {
            0 // out of range: dropped, reads 0
        };
        assert_eq!(rows[0][l as usize], want, "buffer_atomic_add, lane {l}");
        assert_eq!(rows[1][l as usize], l.wrapping_sub(1), "buffer_atomic_cmpswap_x2 chain, lane {l}");
        let max_old = if l == 0 { -1.0 } else { (l - 1) as f64 };
        assert_eq!(rows[2][l as usize], (max_old.to_bits() >> 32) as u32, "buffer_atomic_max_f64, lane {l}");
        let h = f16::from_f32(l as f32).to_bits() as u32;
        assert_eq!(rows[3][l as usize], h | h << 16, "buffer_atomic_pk_add_f16, lane {l}");
        let sum = (l * l.saturating_sub(1) / 2) as f64;
        assert_eq!(rows[4][l as usize], (sum.to_bits() >> 32) as u32, "flat_atomic_add_f64, lane {l}");
        let b = bf16::from_f32(l as f32).to_bits() as u32;
        assert_eq!(rows[5][l as usize], b | b << 16, "flat_atomic_pk_add_bf16, lane {l}");
        assert_eq!(rows[6][l as usize], 35, "s_atomic_add glc returns the old value");
        assert_eq!(rows[7][l as usize], 0, "s_buffer_atomic_add in range");
        assert_eq!(rows[8][l as usize], 9, "s_buffer_atomic_add out of range leaves SDATA");
    }
    let words = gpu.u32s(c, 128);
    assert_eq!(&words[..4], &acc, "buffer_atomic_add finals");
    assert_eq!(words[16] as u64 | (words[17] as u64) << 32, 63);
    assert_eq!(words[26], 35 + 5 + 7, "scalar adds with and without glc");
    assert_eq!(words[27], 3, "s_buffer_atomic_add: one in range, one dropped");
}

#[test]
fn misaligned_atomics_and_wild_addresses_fault_naming_lane_and_address() {
    let gpu = Gpu::new("atomics");
    let c = gpu.zeros(64);
    match gpu.try_launch("misaligned_atomic", 1, 64, &[c]) {
        Err(EmuError::Fault(f)) => {
            assert_eq!(f.lane, Some(5), "{f}");
            assert_eq!(f.kind, FaultKind::Misaligned { space: Space::Global, addr: c + 2, align: 4 }, "{f}");
        }
        other => panic!("expected a misalignment fault, got {other:?}"),
    }
    match gpu.try_launch("wild_load", 1, 64, &[c]) {
        Err(EmuError::Fault(f)) => {
            assert_eq!(f.lane, Some(7), "{f}");
            assert_eq!(f.kind, FaultKind::OutOfBounds { space: Space::Global, addr: c + 0x10_0000, size: 4 }, "{f}");
            assert!(f.to_string().contains("lane 7"), "{f}");
        }
        other => panic!("expected an out-of-bounds fault, got {other:?}"),
    }
}

#[test]
fn unaligned_plain_accesses_are_byte_exact() {
    let gpu = Gpu::new("atomics");
    let bytes: Vec<u8> = (0..1024u32).map(|i| (i * 7 + 3) as u8).collect();
    let a = gpu.upload(&bytes);
    let out = gpu.zeros(1024);
    gpu.launch("unaligned", 1, 64, &[a, out]);
    let mut got = vec![0u8; 4096];
    gpu.emu.memory().read(out, &mut got).unwrap();
    for l in 0..64 {
        assert_eq!(&got[4 * l + 3..4 * l + 7], &bytes[4 * l + 1..4 * l + 5], "dword at +1, lane {l}");
        assert_eq!(&got[1024 + 8 * l..1024 + 8 * l + 8], &bytes[8 * l + 6..8 * l + 14], "dwordx2 at +6, lane {l}");
    }
}
