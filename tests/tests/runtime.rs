//! The runtime: streams and events, the memory pool, pinned buffers and asynchronous copies, and
//! the rule that queued work keeps its operands alive.
//!
//! On the emulator every operation completes as it is queued; through the HIP test double
//! (`FERROCM_BACKEND=hip FERROCM_HIP_LIBRARY=.../libferrocm_hip_shim.so`, as `cargo xtask test`
//! runs this suite a second time) streams are real asynchronous queues, so these tests then
//! check the ordering and lifetime logic against work that runs later than it was queued.

use ferrocm::ops::gemm::{self, GemmOptions};
use ferrocm::ops::{elementwise as ew, softmax};
use ferrocm::{BackendKind, DType, Device, Error, Tensor, reference};
use ferrocm_tests::device;

/// A fresh device, for tests that read pool statistics (the suite's shared device is used by
/// the other tests at the same time).
fn own_device() -> Device {
    Device::new().expect("a device")
}

#[test]
fn an_event_orders_work_across_two_streams() {
    let dev = device();
    let producer = dev.new_stream().unwrap();
    let consumer = dev.new_stream().unwrap();
    let n = 64 * 1024;
    let x = Tensor::from_slice(dev, &vec![0.5f32; n], &[n]).unwrap();
    // A chain of work on the producer, long enough to still be queued when the consumer starts.
    let y = producer.run(|| {
        let mut y = x.clone();
        for _ in 0..8 {
            y = ew::affine(&y, 1.0, 1.0).unwrap();
        }
        y
    });
    let ready = producer.record_event().unwrap();
    consumer.wait_event(&ready).unwrap();
    let z = consumer.run(|| ew::mul(&y, &y).unwrap());
    consumer.synchronize().unwrap();
    let got = consumer.run(|| z.to_vec::<f32>().unwrap());
    assert!(got.iter().all(|&v| v == 8.5 * 8.5), "{:?}", &got[..4]);
    assert!(ready.is_complete().unwrap());
}

#[test]
fn events_time_the_work_between_them() {
    let dev = device();
    let s = dev.new_stream().unwrap();
    let x = Tensor::from_slice(dev, &vec![1.0f32; 1 << 16], &[256, 256]).unwrap();
    let start = s.record_event().unwrap();
    let y = s.run(|| softmax::softmax(&x).unwrap());
    let end = s.record_event().unwrap();
    end.synchronize().unwrap();
    let ms = start.elapsed_ms(&end).unwrap();
    assert!(ms.is_finite() && ms >= 0.0, "{ms}");
    drop(y);
    // Events and streams of one device are refused by another.
    let other = own_device();
    let foreign = other.new_stream().unwrap();
    assert!(matches!(foreign.wait_event(&start), Err(Error::ForeignHandle { .. })));
    assert!(matches!(start.record(&foreign), Err(Error::ForeignHandle { .. })));
}

#[test]
fn the_current_stream_follows_the_innermost_guard() {
    let dev = device();
    let (a, b) = (dev.new_stream().unwrap(), dev.new_stream().unwrap());
    assert_eq!(dev.current_stream(), dev.default_stream());
    {
        let _ga = a.enter();
        assert_eq!(dev.current_stream(), a);
        {
            let _gb = b.enter();
            assert_eq!(dev.current_stream(), b);
        }
        assert_eq!(dev.current_stream(), a);
        // Another device's current stream is unaffected.
        let other = own_device();
        assert_eq!(other.current_stream(), other.default_stream());
    }
    assert_eq!(dev.current_stream(), dev.default_stream());
    // Per thread: another thread starts on the default stream.
    let _ga = a.enter();
    let dev2 = dev.clone();
    let on_thread = std::thread::spawn(move || dev2.current_stream() == dev2.default_stream()).join().unwrap();
    assert!(on_thread);
}

/// Temporaries made inside ops (contiguous copies of views, split-K partials) and inputs dropped
/// right after the call go back to the pool only once the stream has passed the launches that
/// read them. Work alternates between two streams, which the HIP test double runs concurrently:
/// a block released early by one stream would be handed to the other stream's next op and
/// overwritten while the first stream's queued kernels still read it. (Reuse by later work on
/// the same stream would be safe: that runs in order.)
#[test]
fn queued_work_keeps_its_operands_alive() {
    let dev = device();
    let streams = [dev.new_stream().unwrap(), dev.new_stream().unwrap()];
    let (m, n, k) = (33, 40, 64);
    // Inputs first: uploads from pageable memory wait for the stream, and the loop below must
    // queue work far ahead of the device (the HIP test double runs it on another thread).
    let inputs: Vec<_> = (0..24)
        .map(|it| {
            let a_vals: Vec<f32> = (0..m * k).map(|i| ((i * 7 + it) % 13) as f32 / 8.0 - 0.75).collect();
            let w_vals: Vec<f32> = (0..n * k).map(|i| ((i * 5 + 3 * it) % 11) as f32 / 8.0 - 0.625).collect();
            let a = Tensor::from_slice(dev, &a_vals, &[m, k]).unwrap();
            let w = Tensor::from_slice(dev, &w_vals, &[n, k]).unwrap();
            let bias = Tensor::from_slice(dev, &[it as f32], &[1]).unwrap();
            (a_vals, w_vals, a, w, bias)
        })
        .collect();
    let mut outputs = Vec::new();
    for (it, (a_vals, w_vals, a, w, bias)) in inputs.into_iter().enumerate() {
        let _on = streams[it % 2].enter();
        let bias = bias.broadcast_to(&[n]).unwrap();
        let split = gemm::GemmConfig { splits: 2, ..gemm::tiled_config(DType::F32, 1, m, n, k) };
        let opts = GemmOptions { bias: Some(&bias), config: Some(split), ..Default::default() };
        let y = gemm::gemm(&a, &w.transpose(0, 1).unwrap(), &opts).unwrap();
        // A strided input: softmax makes a contiguous copy first.
        let p = softmax::softmax(&y.transpose(0, 1).unwrap()).unwrap();
        drop((a, w, bias, y));
        outputs.push((a_vals, w_vals, p));
    }
    dev.synchronize().unwrap();
    for (it, (a_vals, w_vals, p)) in outputs.iter().enumerate() {
        let a64: Vec<f64> = a_vals.iter().map(|&v| v as f64).collect();
        let w64: Vec<f64> = w_vals.iter().map(|&v| v as f64).collect();
        let mut yt = vec![0.0; n * m]; // y transposed: [n, m]
        for i in 0..m {
            for j in 0..n {
                let dot: f64 = (0..k).map(|q| a64[i * k + q] * w64[j * k + q]).sum();
                yt[j * m + i] = dot + it as f64;
            }
        }
        let want = reference::softmax::softmax(&yt, m);
        let got = p.to_vec::<f32>().unwrap();
        for (g, w) in got.iter().zip(&want) {
            assert!((*g as f64 - w).abs() <= 1e-5 * w.abs() + 1e-7, "iteration {it}: {g} vs {w}");
        }
    }
}

#[test]
fn the_pool_reuses_blocks_and_counts() {
    let dev = own_device();
    let pool = dev.memory_pool();
    assert!(pool.caching());
    let before = pool.stats();
    assert_eq!((before.in_use_bytes, before.cached_bytes), (0, 0));
    let t = Tensor::zeros(&dev, &[1000], DType::F32).unwrap();
    let s = pool.stats();
    assert!(s.in_use_bytes >= 4000 && s.in_use_bytes <= 5120, "{s:?}");
    assert_eq!(s.device_allocations, 1);
    drop(t);
    dev.synchronize().unwrap();
    let s = pool.stats();
    assert_eq!(s.in_use_bytes, 0);
    assert!(s.cached_bytes >= 4000, "{s:?}");
    // The same size again: the cached block, no device allocation.
    let t = Tensor::zeros(&dev, &[1000], DType::F32).unwrap();
    let s = pool.stats();
    assert_eq!((s.device_allocations, s.reuses), (1, 1), "{s:?}");
    assert!(t.to_vec::<f32>().unwrap().iter().all(|&v| v == 0.0), "zeros on a reused block are zeros");
    // Another size class: a new block.
    let u = Tensor::zeros(&dev, &[100_000], DType::F32).unwrap();
    let s = pool.stats();
    assert_eq!(s.device_allocations, 2);
    assert!(s.peak_in_use_bytes >= s.in_use_bytes && s.in_use_bytes >= 404_000);
    drop((t, u));
    dev.synchronize().unwrap();
    let cached = pool.stats().cached_bytes;
    assert!(cached >= 404_000);
    // trim keeps at most what it is told, releasing the largest blocks first.
    pool.trim(10_000);
    let s = pool.stats();
    assert!(s.cached_bytes <= 10_000 && s.cached_bytes >= 4000, "{s:?}");
    assert_eq!(s.device_frees, 1);
    pool.empty_cache();
    assert_eq!(pool.stats().cached_bytes, 0);
    // Caching off: every free goes straight back to the device.
    pool.set_caching(false);
    let frees = pool.stats().device_frees;
    drop(Tensor::zeros(&dev, &[10], DType::F32).unwrap());
    dev.synchronize().unwrap();
    let s = pool.stats();
    assert_eq!((s.cached_bytes, s.device_frees), (0, frees + 1), "{s:?}");
    pool.reset_peak();
    assert_eq!(pool.stats().peak_in_use_bytes, 0);
}

#[test]
fn out_of_memory_names_the_request_and_the_free_bytes() {
    let dev = own_device();
    let elems = 1usize << 40; // 4 TiB of f32: more than any device here
    match Tensor::empty(&dev, &[elems], DType::F32) {
        Err(Error::OutOfMemory { requested, free }) => {
            assert_eq!(requested, 4 << 40);
            assert!(free > 0 && free < requested, "free = {free}");
            let msg = Error::OutOfMemory { requested, free }.to_string();
            assert!(msg.contains(&requested.to_string()) && msg.contains(&free.to_string()), "{msg}");
        }
        other => panic!("expected OutOfMemory, got {other:?}"),
    }
    // The device is still usable.
    assert_eq!(Tensor::from_slice(&dev, &[1.0f32, 2.0], &[2]).unwrap().to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
}

#[test]
fn pinned_round_trips_through_buffers_and_tensors() {
    let dev = device();
    let s = dev.new_stream().unwrap();
    let n = 10_007;
    let mut host = dev.alloc_pinned::<f32>(n).unwrap();
    assert_eq!(host.is_pinned(), dev.backend() == BackendKind::Hip, "pinned on HIP, the pageable fallback on the emulator");
    assert!(host.as_slice().unwrap().iter().all(|&v| v == 0.0), "zero-filled");
    host.as_mut_slice().unwrap().iter_mut().enumerate().for_each(|(i, v)| *v = i as f32 * 0.25);
    let buf = dev.alloc::<f32>(n).unwrap();
    s.copy_htod(&host, &buf).unwrap();
    let mut back = dev.alloc_pinned::<f32>(n).unwrap();
    s.copy_dtoh(&buf, &mut back).unwrap();
    // Reading waits for the copy; the source may then be overwritten.
    assert_eq!(back.as_slice().unwrap(), host.as_slice().unwrap());
    host.as_mut_slice().unwrap().fill(-1.0);
    assert_eq!(back.as_slice().unwrap()[n - 1], (n - 1) as f32 * 0.25);

    // Bytes into the middle of a tensor, chunk by chunk (as a model loader does).
    let t = Tensor::zeros(dev, &[4, 100], DType::F32).unwrap();
    // The zeros are written on the current (default) stream, the copies below go on `s`: without
    // this wait the memset could land after them (seen on the HIP test double under load).
    s.wait_event(&dev.current_stream().record_event().unwrap()).unwrap();
    let mut bytes = dev.alloc_pinned::<u8>(400).unwrap();
    let chunk: Vec<u8> = (0..100u32).flat_map(|i| (i as f32).to_le_bytes()).collect();
    bytes.as_mut_slice().unwrap().copy_from_slice(&chunk);
    s.copy_htod_bytes(&bytes, 0..400, &t, 400).unwrap(); // row 1
    s.copy_htod_bytes(&bytes, 40..80, &t, 1200).unwrap(); // row 3, elements 0..10 = 10..20
    let mut out = dev.alloc_pinned::<u8>(1600).unwrap();
    s.copy_dtoh_bytes(&t, 0, &mut out, 0..1600).unwrap();
    let vals: Vec<f32> = out.as_slice().unwrap().chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
    assert!(vals[..100].iter().all(|&v| v == 0.0));
    assert_eq!(vals[100..200], (0..100).map(|i| i as f32).collect::<Vec<_>>()[..]);
    assert_eq!(vals[300..310], (10..20).map(|i| i as f32).collect::<Vec<_>>()[..]);
    assert!(vals[310..].iter().all(|&v| v == 0.0));

    // Bad ranges and foreign memory are refused.
    assert!(matches!(s.copy_htod_bytes(&bytes, 0..400, &t, 1300), Err(Error::InvalidArgument { .. })));
    assert!(matches!(s.copy_htod_bytes(&bytes, 300..500, &t, 0), Err(Error::InvalidArgument { .. })));
    assert!(matches!(s.copy_htod_bytes(&bytes, 0..4, &t.transpose(0, 1).unwrap(), 0), Err(Error::Layout { .. })));
    let other = own_device();
    let far = other.alloc::<f32>(n).unwrap();
    assert!(matches!(s.copy_htod(&host, &far), Err(Error::DeviceMismatch { .. })));
    let far_host = other.alloc_pinned::<f32>(n).unwrap();
    assert!(matches!(s.copy_htod(&far_host, &buf), Err(Error::ForeignHandle { .. })));
    let short = dev.alloc_pinned::<f32>(3).unwrap();
    assert!(matches!(s.copy_htod(&short, &buf), Err(Error::LengthMismatch { .. })));
}

#[test]
fn raw_launches_still_run_on_the_current_stream() {
    use ferrocm::LaunchConfig;
    use ferrocm::abi::smoke::{SAXPY_F32, STREAM_BLOCK, SaxpyArgs};
    let dev = device();
    let x = dev.from_slice(&[1.0f32; 100]).unwrap();
    let y = dev.from_slice(&[2.0f32; 100]).unwrap();
    let args = SaxpyArgs { x: x.as_ptr(), y: y.as_ptr(), a: 3.0, n: 100 };
    // SAFETY: both buffers hold 100 elements and outlive the launch (synchronised below).
    unsafe { dev.launch(SAXPY_F32, LaunchConfig::for_items(100, STREAM_BLOCK), &args).unwrap() };
    dev.synchronize().unwrap();
    assert_eq!(y.to_vec().unwrap(), vec![5.0; 100]);
}
