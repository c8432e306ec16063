//! Development probe: one GEMM on the default device, checked against the f64 reference.
use ferrocm::{Device, Tensor, bf16, ops::gemm, reference};
fn main() -> ferrocm::Result<()> {
    let dev = Device::new()?;
    let args: Vec<usize> = std::env::args().skip(1).map(|a| a.parse().unwrap()).collect();
    let (m, n, k) = (args[0], args[1], args[2]);
    let a: Vec<bf16> = (0..m * k).map(|i| bf16::from_f32(((i * 7 + 3) % 17) as f32 / 8.0 - 1.0)).collect();
    let b: Vec<bf16> = (0..k * n).map(|i| bf16::from_f32(((i * 5 + 1) % 13) as f32 / 4.0 - 1.5)).collect();
    let ta = Tensor::from_slice(&dev, &a, &[m, k])?;
    let tb = Tensor::from_slice(&dev, &b, &[n, k])?; // stored [N][K]
    let t0 = std::time::Instant::now();
    let c = gemm::gemm(&ta, &tb.transpose(0, 1)?, &gemm::GemmOptions { out_dtype: Some(ferrocm::DType::F32), ..Default::default() })?;
    let dt = t0.elapsed();
    let got = c.to_vec::<f32>()?;
    // reference with B as k x n row-major
    let mut bkn = vec![bf16::ZERO; k * n];
    for j in 0..n {
        for p in 0..k {
            bkn[p * n + j] = b[j * k + p];
        }
    }
    let want = reference::gemm::matmul(&a, &bkn, m, n, k);
    let err = got.iter().zip(&want).map(|(g, w)| (*g as f64 - w).abs()).fold(0.0, f64::max);
    println!("{m}x{n}x{k}: max abs err {err:e}, {:.3} s", dt.as_secs_f64());
    if let Some(s) = dev.as_emulator().and_then(|e| e.last_launch()) {
        println!("{}", ferrocm::emulator::launch_json(&s));
    }
    Ok(())
}
