//! Any bytes as a GGUF file: the parser returns a header or a typed error, never panics; an
//! accepted header has tensors inside the file, sized by their type, aligned and disjoint, and
//! every typed accessor answers without panicking.
#![no_main]

use ferrocm::io::gguf::GgufHeader;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(h) = GgufHeader::parse("fuzz.gguf".as_ref(), data) else { return };
    let mut ranges = Vec::new();
    for t in h.tensors() {
        let r = t.file_range();
        assert!(r.start <= r.end && r.end <= data.len() as u64);
        assert_eq!(t.ggml_type().byte_size(t.numel()), Some(r.end - r.start), "{}", t.name());
        assert_eq!(t.offset() % h.alignment(), 0);
        assert_eq!(t.shape().len(), t.dims().len());
        if r.end > r.start {
            ranges.push(r);
        }
    }
    ranges.sort_by_key(|r| r.start);
    assert!(ranges.windows(2).all(|w| w[0].end <= w[1].start), "tensor data overlaps");
    for (k, v) in h.metadata() {
        assert!(std::ptr::eq(h.get(k).unwrap(), v));
        let _ = (v.as_u64(), v.as_i64(), v.as_f32(), v.type_description());
    }
    let _ = h.tokenizer();
    let _ = (h.architecture(), h.arch_u64("block_count"), h.arch_f32("rope.freq_base"));
});
