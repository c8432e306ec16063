//! MUBUF on hand-written kernels (tests/asm/buffer.s): each row of the output is computed here
//! from the ISA's addressing rules and the hardware's range checks (SOFFSET and the instruction
//! offset count, each dword's end is checked; ROCm/rocm-systems PR #10928) and compared with the
//! device's.

#[path = "asm/harness.rs"]
mod harness;

use harness::Gpu;

/// The input every kernel reads: in[i] = 3i + 1.
fn input(gpu: &Gpu) -> (Vec<u32>, u64) {
    let v: Vec<u32> = (0..1024).map(|i| 3 * i + 1).collect();
    let a = gpu.upload_u32(&v);
    (v, a)
}

fn rows(gpu: &Gpu, out: u64, n: usize) -> Vec<Vec<u32>> {
    gpu.u32s(out, 64 * n).chunks(64).map(|c| c.to_vec()).collect()
}

fn expect(row: &[u32], f: impl Fn(usize) -> u32, what: &str) {
    for (l, &got) in row.iter().enumerate() {
        assert_eq!(got, f(l), "{what}: lane {l}");
    }
}

#[test]
fn raw_buffers_check_offsets_per_dword_including_soffset() {
    let gpu = Gpu::new("buffer");
    let (inp, a) = input(&gpu);
    let out = gpu.zeros(64 * 8);
    gpu.launch("buf_raw", 1, 64, &[a, out]);
    let r = rows(&gpu, out, 7);
    expect(&r[0], |l| if 4 * l < 100 { inp[l] } else { 0 }, "offset check");
    expect(&r[1], |l| if 4 * l + 40 + 4 <= 100 { inp[l + 10] } else { 0 }, "soffset inside the check");
    expect(&r[2], |l| if 4 * l + 8 < 100 { inp[l + 2] } else { 0 }, "instruction offset inside the check");
    expect(&r[3], |l| if 8 * l < 100 { inp[2 * l] } else { 0 }, "dwordx2, first dword");
    expect(&r[4], |l| if 8 * l + 4 < 100 { inp[2 * l + 1] } else { 0 }, "dwordx2, second dword");
    expect(&r[5], |l| if l < 10 { l as u32 + 1000 } else { 0 }, "stores past num_records are dropped");
    expect(&r[6], |_| 0, "data format 0 is an unbound resource");
}

#[test]
fn structured_swizzled_and_add_tid_addressing() {
    let gpu = Gpu::new("buffer");
    let (inp, a) = input(&gpu);
    let out = gpu.zeros(64 * 8);
    gpu.launch("buf_struct", 1, 64, &[a, out]);
    let r = rows(&gpu, out, 7);
    expect(&r[0], |l| if l < 5 { inp[4 * l + 1] } else { 0 }, "structured index check");
    expect(&r[1], |l| if l < 5 { inp[4 * l + 5] } else { 0 }, "offset past the stride is not checked");
    expect(&r[2], |l| if l < 5 { inp[4 * l + 2] } else { 0 }, "idxen with an instruction offset");
    // Swizzled: byte (index/8 * stride + offset/4 * 4) * 8 + index%8 * 4 + offset%4, stride 8.
    let swz = |l: usize, off: usize| inp[((l / 8 * 8 + off / 4 * 4) * 8 + l % 8 * 4) / 4];
    expect(&r[3], |l| swz(l, 4), "swizzled dword");
    expect(&r[4], |l| swz(l, 0), "swizzled dwordx2, element 0");
    expect(&r[5], |l| swz(l, 4), "swizzled dwordx2, element 1");
    expect(&r[6], |l| inp[l + 1], "add_tid private buffer");
}

#[test]
fn typed_loads_and_stores_convert_through_the_resource_format() {
    let gpu = Gpu::new("buffer");
    let bytes: Vec<u8> = (0..4096u32).map(|i| (i * 37 % 256) as u8).collect();
    let a = gpu.upload(&bytes);
    let out = gpu.zeros(64 * 10);
    gpu.launch("buf_format", 1, 64, &[a, out]);
    let r = rows(&gpu, out, 10);
    let unorm = |l: usize, c: usize| if l < 16 { (bytes[4 * l + c] as f32 / 255.0).to_bits() } else { 0 };
    for (row, chan) in [(0, 3), (1, 2), (2, 1), (3, 0)] {
        expect(&r[row], |l| unorm(l, chan), &format!("8_8_8_8 unorm, dst_sel channel {chan}"));
    }
    let h = |l: usize, c: usize| half::f16::from_f32(f32::from_bits(unorm(l, c))).to_bits() as u32;
    expect(&r[4], |l| h(l, 3) | h(l, 2) << 16, "d16_xy packs two halves");
    expect(&r[5], |l| h(l, 3) << 16 | 0x5678, "d16_hi_x keeps the low half");
    let word = |l: usize| u32::from_le_bytes(bytes[4 * l..4 * l + 4].try_into().unwrap());
    expect(&r[6], |l| if l < 16 { word(l) } else { 0 }, "32 uint");
    expect(&r[7], |_| 1, "dst_sel 1 reads integer 1, in range or not (ISA 9.1.5.1 note 1)");
    let stored = gpu.u32s(out + 9 * 256, 32);
    for l in 0..64 {
        let got = (stored[l / 2] >> (16 * (l % 2))) as u16;
        assert_eq!(got, half::f16::from_f32(l as f32).to_bits(), "16 float store, lane {l}");
    }
    expect(&r[8], |_| 0, "the row before the store stays zero");
}

#[test]
fn loads_to_lds_use_m0_and_the_instruction_offset() {
    let gpu = Gpu::new("buffer");
    let (inp, a) = input(&gpu);
    let out = gpu.zeros(64 * 4);
    gpu.launch("buf_lds", 1, 64, &[a, out]);
    let r = rows(&gpu, out, 3);
    expect(&r[0], |l| inp[l + 1], "buffer_load_dword ... lds");
    let byte = |l: usize| inp[l].to_le_bytes()[0] as i8 as i32 as u32;
    expect(&r[1], byte, "buffer_load_sbyte ... lds writes the sign-extended dword");
    expect(&r[2], |l| if l == 0 { 0 } else { inp[l] }, "buffer_store_lds_dword");
}

#[test]
fn the_runtime_scratch_vsharp_reaches_private_memory() {
    let gpu = Gpu::new("buffer");
    let (_, a) = input(&gpu);
    let out = gpu.zeros(64 * 3);
    gpu.launch("buf_scratch", 1, 64, &[a, out]);
    let r = rows(&gpu, out, 3);
    expect(&r[0], |l| l as u32, "swizzled store, scratch load");
    expect(&r[1], |l| l as u32 + 500, "wave-scaled soffset");
    expect(&r[2], |l| l as u32 + 500, "swizzled load");
}

#[test]
fn byte_checks_cover_strided_offen_zero_strides_and_loads_to_lds() {
    let gpu = Gpu::new("buffer");
    let (inp, a) = input(&gpu);
    let out = gpu.zeros(64 * 4);
    gpu.launch("buf_checks", 1, 64, &[a, out]);
    let r = rows(&gpu, out, 4);
    expect(&r[0], |_| inp[0], "idxen with stride 0 is checked by bytes");
    expect(&r[1], |l| if 4 * l + 4 <= 100 { inp[l] } else { 0 }, "OFFEN only through a strided buffer");
    expect(&r[2], |l| if 4 * l + 6 <= 100 { inp[l] >> 16 | inp[l + 1] << 16 } else { 0 }, "a dword past the end by 2 bytes");
    expect(&r[3], |l| if 4 * l + 64 <= 100 { inp[l + 15] } else { 0 }, "out-of-range lanes of a load to LDS write zeros");
}
