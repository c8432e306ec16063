use ferrocm::ops::{norm, reduce, rope, softmax};
use ferrocm::DType;
use ferrocm_tests::tensors::*;
use ferrocm_tests::device;

fn stats(what: &str) {
    let s = device().as_emulator().unwrap().last_launch().unwrap();
    let c = &s.counters;
    println!("{what}: {:.2}s instr {} read {} written {} lines {} partial {} lds conflicts {} by_class {:?}", s.wall_time.as_secs_f64(), c.instructions, c.global.bytes_read, c.global.bytes_written, c.global.lines, c.global.partially_used_line_instructions, c.lds.bank_conflict_cycles, c.by_class);
}

#[test]
fn smoke() {
    let mut seed = 1;
    let (x, xv) = random(&[1 << 20], DType::F32, 1.0, &mut seed);
    let t = std::time::Instant::now();
    let s = reduce::sum(&x, None).unwrap();
    println!("sum 1M: {:?} want {} in {:?}", read(&s), xv.iter().sum::<f64>(), t.elapsed());
    stats("partials");
    let (x, xv) = random(&[64, 1000], DType::Bf16, 1.0, &mut seed);
    let m = reduce::argmax(&x, Some(1)).unwrap();
    let want = ferrocm::reference::reduce::arg_reduce(&xv, &[64, 1000], reduce::ReduceOp::ArgMax, Some(1));
    assert_eq!(m.to_vec::<i32>().unwrap().iter().map(|&i| i as usize).collect::<Vec<_>>(), want);
    stats("argmax rows");
    let m = reduce::sum(&x, Some(0)).unwrap();
    stats("sum cols");
    let want = ferrocm::reference::reduce::reduce(&xv, &[64, 1000], reduce::ReduceOp::Sum, Some(0));
    let got = read(&m);
    for i in 0..1000 { assert!((got[i]-want[i]).abs() < 0.1, "{i} {} {}", got[i], want[i]); }
    let (x, xv) = random(&[16, 1024], DType::F32, 3.0, &mut seed);
    let p = softmax::softmax(&x).unwrap();
    stats("softmax");
    let want = ferrocm::reference::softmax::softmax(&xv, 1024);
    let got = read(&p);
    for i in 0..got.len() { assert!((got[i]-want[i]).abs() < 1e-6, "{i} {} {}", got[i], want[i]); }
    let y = norm::rms_norm(&x, None, 1e-6).unwrap();
    stats("rms");
    let want = ferrocm::reference::norm::rms_norm(&xv, 1024, None, 1e-6);
    let got = read(&y);
    for i in 0..got.len() { assert!((got[i]-want[i]).abs() < 1e-5, "{i} {} {}", got[i], want[i]); }
    let (q, _qv) = random(&[2, 8, 4, 64], DType::F16, 1.0, &mut seed);
    let _ = rope::rope(&q, &Default::default()).unwrap();
    stats("rope");
}
