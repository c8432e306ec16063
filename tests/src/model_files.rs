//! Tiny model files for the io suites: safetensors bytes from (name, dtype, shape, data)
//! entries, written by hand so that tests can also break them on purpose; a scratch directory.
//! (GGUF files come from `ferrocm::io::gguf::GgufWriter`.)

use std::path::{Path, PathBuf};

/// One safetensors entry: name, dtype name, shape, raw little-endian bytes.
pub type Entry<'a> = (&'a str, &'a str, &'a [usize], Vec<u8>);

/// A safetensors file holding `entries` in order (contiguous data, offsets from 0) and the
/// given `__metadata__` strings.
pub fn safetensors_bytes(entries: &[Entry<'_>], metadata: &[(&str, &str)]) -> Vec<u8> {
    let mut json = String::from("{");
    let mut off = 0;
    if !metadata.is_empty() {
        let kv: Vec<String> = metadata.iter().map(|(k, v)| format!("\"{k}\":\"{v}\"")).collect();
        json.push_str(&format!("\"__metadata__\":{{{}}},", kv.join(",")));
    }
    let mut parts = Vec::new();
    for (name, dtype, shape, data) in entries {
        parts.push(format!("\"{name}\":{{\"dtype\":\"{dtype}\",\"shape\":{shape:?},\"data_offsets\":[{off},{}]}}", off + data.len()));
        off += data.len();
    }
    json.push_str(&parts.join(","));
    json.push('}');
    safetensors_raw(&json, &entries.iter().flat_map(|e| e.3.iter().copied()).collect::<Vec<_>>())
}

/// A safetensors file of an arbitrary JSON header text and data bytes.
pub fn safetensors_raw(json: &str, data: &[u8]) -> Vec<u8> {
    let mut out = (json.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(json.as_bytes());
    out.extend_from_slice(data);
    out
}

/// Little-endian bytes of a slice of plain values.
pub fn le_bytes<T: bytemuck::Pod>(v: &[T]) -> Vec<u8> {
    bytemuck::cast_slice(v).to_vec()
}

/// A fresh directory under the system temp dir, removed when dropped.
pub struct ScratchDir(PathBuf);

impl ScratchDir {
    /// A new empty directory whose name starts with `tag`.
    pub fn new(tag: &str) -> ScratchDir {
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("ferrocm-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        ScratchDir(dir)
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Writes `bytes` to `name` inside and returns the path.
    pub fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, bytes).expect("write scratch file");
        p
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
