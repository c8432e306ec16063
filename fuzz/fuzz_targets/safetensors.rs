//! Any bytes as a safetensors file: the parser returns a header or a typed error, never panics,
//! and an accepted header describes tensors that tile the data section exactly.
#![no_main]

use ferrocm::io::safetensors::SafetensorsHeader;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(h) = SafetensorsHeader::parse("fuzz.safetensors".as_ref(), data) else { return };
    let mut at = h.data_start();
    for t in h.tensors() {
        let r = t.file_range();
        assert_eq!(r.start, at, "tensors are contiguous and in order");
        let numel = t.shape().iter().map(|&d| d as u128).product::<u128>();
        assert_eq!(numel * t.dtype().bitsize() as u128, (r.end - r.start) as u128 * 8, "{}", t.name());
        assert!(std::ptr::eq(h.tensor(t.name()).unwrap(), t));
        at = r.end;
    }
    assert_eq!(at, data.len() as u64, "the data section is covered exactly");
});
