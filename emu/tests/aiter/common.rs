//! Shared pieces of the AITER suites: the wheel (or a printed reason to skip), an emulator with
//! a kernel loaded, deterministic inputs, bf16 and fp8 conversions.
#![allow(dead_code)]

use ferrocm_emu::aiter::{Launch, Wheel};
use ferrocm_emu::{EmuConfig, Emulator, LaunchStats, Module};

/// The extracted wheel, or `None` after printing why the suite is skipped (no wheel here: CI
/// fetches and caches it with `cargo xtask aiter fetch`).
pub fn wheel() -> Option<Wheel> {
    match Wheel::locate() {
        Ok(w) => Some(w),
        Err(e) => {
            eprintln!("skipped: {e}");
            None
        }
    }
}

/// Mapped bytes after every buffer. AITER's kernels prefetch whole K steps past the end of
/// their inputs (the MoE kernels move a buffer's base by 128 bytes a step and keep its
/// `num_records`, so the last prefetches pass the range check and read past the tensor; the
/// values are discarded). On a GPU those reads land in memory PyTorch's caching allocator has
/// mapped (it hands out blocks rounded to 512 bytes from segments of 2 MiB); the emulator
/// faults on unmapped addresses, so the suites give every buffer a caching allocator's slack.
pub const SLACK: u64 = 64 << 10;

/// An emulator with the wheel's code object `rel` loaded.
pub struct Gpu {
    pub emu: Emulator,
    pub module: Module,
}

impl Gpu {
    pub fn new(wheel: &Wheel, rel: &str) -> Gpu {
        let emu = Emulator::new(EmuConfig { memory_limit: 4 << 30, ..EmuConfig::default() });
        let co = wheel.code_object(rel).unwrap_or_else(|e| panic!("{e}"));
        let module = emu.load(co).unwrap_or_else(|e| panic!("loading {rel}: {e}"));
        Gpu { emu, module }
    }

    /// A device buffer holding `bytes`, followed by [`SLACK`] mapped bytes.
    pub fn upload(&self, bytes: &[u8]) -> u64 {
        let a = self.emu.alloc(bytes.len() as u64 + SLACK).unwrap();
        self.emu.memory().write(a, bytes).unwrap();
        a
    }

    pub fn upload_u16(&self, v: &[u16]) -> u64 {
        self.upload(&v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>())
    }

    pub fn upload_f32(&self, v: &[f32]) -> u64 {
        self.upload(&v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>())
    }

    pub fn upload_u32(&self, v: &[u32]) -> u64 {
        self.upload(&v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>())
    }

    pub fn zeros(&self, bytes: usize) -> u64 {
        self.emu.alloc(bytes as u64 + SLACK).unwrap()
    }

    pub fn read(&self, addr: u64, bytes: usize) -> Vec<u8> {
        let mut v = vec![0u8; bytes];
        self.emu.memory().read(addr, &mut v).unwrap();
        v
    }

    pub fn f32s(&self, addr: u64, n: usize) -> Vec<f32> {
        self.read(addr, 4 * n).chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
    }

    pub fn u16s(&self, addr: u64, n: usize) -> Vec<u16> {
        self.read(addr, 2 * n).chunks(2).map(|c| u16::from_le_bytes(c.try_into().unwrap())).collect()
    }

    pub fn run(&self, l: &Launch) -> LaunchStats {
        self.emu.launch(&self.module, &l.kernel, &l.params()).unwrap_or_else(|e| panic!("{}: {e}", l.kernel))
    }
}

/// A small deterministic generator (xorshift64*) with normal samples (Box-Muller).
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform().max(1e-300), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// bf16 bits of `x`, rounded to nearest even.
pub fn bf16(x: f32) -> u16 {
    half::bf16::from_f32(x).to_bits()
}

/// The value of bf16 bits.
pub fn from_bf16(b: u16) -> f64 {
    half::bf16::from_bits(b).to_f32() as f64
}

/// `n` normal samples as bf16 bits and their exact values.
pub fn bf16_normal(rng: &mut Rng, n: usize, scale: f64) -> (Vec<u16>, Vec<f64>) {
    let bits: Vec<u16> = (0..n).map(|_| bf16((rng.normal() * scale) as f32)).collect();
    let vals = bits.iter().map(|&b| from_bf16(b)).collect();
    (bits, vals)
}

/// Checks `got` against `want` elementwise with a tolerance of `rel * scale` (the scale of the
/// reference values), naming the worst element.
pub fn assert_close(what: &str, got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    let (mut worst, mut at) = (0.0f64, 0);
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let e = (g - w).abs();
        if !(e <= worst) {
            worst = e;
            at = i;
        }
    }
    assert!(worst <= tol, "{what}: worst error {worst:.3e} (tolerance {tol:.3e}) at {at}: got {} want {}", got[at], want[at]);
}
