//! Scalar memory on a hand-written kernel (tests/asm/smem.s): buffer range checks, address
//! alignment, stores, and the s_memtime counter.

#[path = "asm/harness.rs"]
mod harness;

use harness::Gpu;

#[test]
fn scalar_buffer_ranges_alignment_and_time() {
    let gpu = Gpu::new("smem");
    let buf: Vec<u32> = (0..16).map(|i| 0xa000 + i).collect();
    let b = gpu.upload_u32(&buf);
    let out = gpu.zeros(32);
    gpu.launch("smem_ops", 1, 64, &[b, out]);
    let o = gpu.u32s(out, 24);
    // 20-byte raw buffer: dwords whose offset is below 20 load, the rest read 0.
    assert_eq!(&o[..8], &[0xa000, 0xa001, 0xa002, 0xa003, 0xa004, 0, 0, 0]);
    assert_eq!(o[8], 0xa004, "soffset 16 is in range");
    assert_eq!(o[9], 0xa001, "s_load ignores the two low address bits");
    assert!(o[10] > 0, "s_memtime advances");
    // Stride 8 x 3 records = 24 bytes.
    assert_eq!(&o[16..24], &[0xa000, 0xa001, 0xa002, 0xa003, 0xa004, 0xa005, 0, 0]);
    // The buffer store: dwords at 12 and 16 written (with buf[0], buf[1]), 20 and 24 dropped.
    let after = gpu.u32s(b, 8);
    assert_eq!(&after[..8], &[0xa000, 0xa001, 0xa002, 0xa000, 0xa001, 0xa005, 0xa006, 0xa007]);
}
