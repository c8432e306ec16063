//! Which device sources a code object was built from.
//!
//! Every build writes `sources.sha256` next to its code object: a SHA-256 over everything that
//! decides the machine code (the device crate's Rust sources, its manifest, its toolchain pin, and
//! this crate's pipeline). Wherever an object built earlier is embedded (`FERROCM_PREBUILT_DIR`,
//! the objects a published package carries), the host's build script recomputes the hash from
//! the device sources it compiles the ABI from and refuses a mismatch: a stale object would run
//! kernels that disagree with the host's argument structs, or simply not be the code under test.

use crate::pipeline::BuildError;
use std::path::{Path, PathBuf};

/// The file next to each `ferrocm.co` holding the hash of the sources it was built from.
pub const SOURCES_FILE: &str = "sources.sha256";

/// The pipeline's own code takes part in the hash: a change to how the object is produced
/// (launch bounds, llc flags) makes earlier objects stale just as a kernel change does.
const PIPELINE_SOURCE: &str = include_str!("pipeline.rs");

/// The files of `device_dir` the hash covers, as (name in the hash, path), in hash order:
/// the toolchain pin, the manifest as written (`Cargo.toml.orig` in a packaged crate, where
/// cargo rewrote `Cargo.toml`), and every `.rs` file under `src/`, sorted by relative path.
///
/// # Errors
/// [`BuildError::Io`] when the directory cannot be read.
pub fn hashed_files(device_dir: &Path) -> Result<Vec<(String, PathBuf)>, BuildError> {
    let manifest = match device_dir.join("Cargo.toml.orig") {
        orig if orig.is_file() => orig,
        _ => device_dir.join("Cargo.toml"),
    };
    let mut files = vec![("rust-toolchain.toml".to_string(), device_dir.join("rust-toolchain.toml")), ("Cargo.toml".to_string(), manifest)];
    let mut sources = Vec::new();
    collect_rs(&device_dir.join("src"), "src", &mut sources)?;
    sources.sort();
    files.extend(sources);
    Ok(files)
}

fn collect_rs(dir: &Path, rel: &str, out: &mut Vec<(String, PathBuf)>) -> Result<(), BuildError> {
    let entries = std::fs::read_dir(dir).map_err(|e| BuildError::Io(dir.to_path_buf(), e))?;
    for entry in entries {
        let entry = entry.map_err(|e| BuildError::Io(dir.to_path_buf(), e))?;
        let path = entry.path();
        let name = format!("{rel}/{}", entry.file_name().to_string_lossy());
        let kind = entry.file_type().map_err(|e| BuildError::Io(path.clone(), e))?;
        if kind.is_dir() {
            collect_rs(&path, &name, out)?;
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push((name, path));
        }
    }
    Ok(())
}

/// The hex SHA-256 of the device sources in `device_dir` (see [`hashed_files`]) and the
/// pipeline.
///
/// # Errors
/// [`BuildError::Io`] when a file cannot be read (a missing toolchain pin or manifest included:
/// the directory is then not the device crate).
pub fn sources_hash(device_dir: &Path) -> Result<String, BuildError> {
    let mut input = Vec::new();
    let mut add = |name: &str, bytes: &[u8]| {
        // Name and length first: no two different file sets hash the same bytes.
        input.extend_from_slice(name.as_bytes());
        input.push(0);
        input.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        input.extend_from_slice(bytes);
    };
    add("pipeline", PIPELINE_SOURCE.as_bytes());
    for (name, path) in hashed_files(device_dir)? {
        let bytes = std::fs::read(&path).map_err(|e| BuildError::Io(path.clone(), e))?;
        add(&name, &bytes);
    }
    Ok(hex(&sha256(&input)))
}

/// Writes `<dir>/sources.sha256` (unless it already says so: build scripts watch the file).
///
/// # Errors
/// [`BuildError::Io`].
pub fn record(dir: &Path, hash: &str) -> Result<(), BuildError> {
    crate::pipeline::write_if_changed(&dir.join(SOURCES_FILE), format!("{hash}\n").as_bytes())
}

/// The hash recorded in `<dir>/sources.sha256`, if there is one.
pub fn recorded(dir: &Path) -> Option<String> {
    std::fs::read_to_string(dir.join(SOURCES_FILE)).ok().map(|s| s.trim().to_string())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 (FIPS 180-4). Written out here rather than taken from a crate because this code runs
/// in the build script of every crate depending on `ferrocm`, where each build-dependency is
/// compiled once more; the tests check it against the standard's vectors.
pub fn sha256(data: &[u8]) -> [u8; 32] {
    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be,
        0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa,
        0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85,
        0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3,
        0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f,
        0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ];
    let mut h: [u32; 8] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
    // Padding: a 1 bit, zeros to 56 mod 64 bytes, the bit length big-endian.
    let mut msg = data.to_vec();
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&((data.len() as u64).wrapping_mul(8)).to_be_bytes());
    for block in msg.chunks_exact(64) {
        let mut w = [0u32; 64];
        for (i, word) in block.chunks_exact(4).enumerate() {
            w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16].wrapping_add(s0).wrapping_add(w[i - 7]).wrapping_add(s1);
        }
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut hh] = h;
        for i in 0..64 {
            let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
            let ch = (e & f) ^ (!e & g);
            let t1 = hh.wrapping_add(s1).wrapping_add(ch).wrapping_add(K[i]).wrapping_add(w[i]);
            let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
            let maj = (a & b) ^ (a & c) ^ (b & c);
            let t2 = s0.wrapping_add(maj);
            (hh, g, f, e, d, c, b, a) = (g, f, e, d.wrapping_add(t1), c, b, a, t1.wrapping_add(t2));
        }
        for (x, y) in h.iter_mut().zip([a, b, c, d, e, f, g, hh]) {
            *x = x.wrapping_add(y);
        }
    }
    let mut out = [0u8; 32];
    for (chunk, word) in out.chunks_exact_mut(4).zip(h) {
        chunk.copy_from_slice(&word.to_be_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_matches_the_standard_vectors() {
        // FIPS 180-4 examples (and the empty message).
        assert_eq!(hex(&sha256(b"")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(hex(&sha256(b"abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(
            hex(&sha256(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
        assert_eq!(hex(&sha256(&vec![b'a'; 1_000_000])), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    }

    fn scratch_device(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ferrocm-sources-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("src/kernels")).unwrap();
        std::fs::write(dir.join("rust-toolchain.toml"), "[toolchain]\nchannel = \"nightly\"\n").unwrap();
        std::fs::write(dir.join("Cargo.toml"), "[package]\nname = \"x\"\n").unwrap();
        std::fs::write(dir.join("src/lib.rs"), "pub mod kernels;\n").unwrap();
        std::fs::write(dir.join("src/kernels/mod.rs"), "// a kernel\n").unwrap();
        dir
    }

    #[test]
    fn the_hash_follows_every_source_and_nothing_else() {
        let dir = scratch_device("follow");
        let names: Vec<String> = hashed_files(&dir).unwrap().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["rust-toolchain.toml", "Cargo.toml", "src/kernels/mod.rs", "src/lib.rs"]);
        let base = sources_hash(&dir).unwrap();
        assert_eq!(base.len(), 64);
        // Files that are not sources do not count; a new kernel file, an edit and the pin do.
        std::fs::write(dir.join("src/notes.txt"), "x").unwrap();
        assert_eq!(sources_hash(&dir).unwrap(), base);
        std::fs::write(dir.join("src/kernels/attention.rs"), "").unwrap();
        let added = sources_hash(&dir).unwrap();
        assert_ne!(added, base);
        std::fs::write(dir.join("src/kernels/mod.rs"), "// a kernel, edited\n").unwrap();
        assert_ne!(sources_hash(&dir).unwrap(), added);
        let edited = sources_hash(&dir).unwrap();
        std::fs::write(dir.join("rust-toolchain.toml"), "[toolchain]\nchannel = \"nightly-2030-01-01\"\n").unwrap();
        assert_ne!(sources_hash(&dir).unwrap(), edited);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_packaged_crate_hashes_its_manifest_as_written() {
        let dir = scratch_device("orig");
        let checkout = sources_hash(&dir).unwrap();
        // What `cargo package` does: the manifest as written moves to Cargo.toml.orig and a
        // normalized one takes its place.
        std::fs::rename(dir.join("Cargo.toml"), dir.join("Cargo.toml.orig")).unwrap();
        std::fs::write(dir.join("Cargo.toml"), "# normalized by cargo\n[package]\nname = \"x\"\n").unwrap();
        assert_eq!(sources_hash(&dir).unwrap(), checkout);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn recorded_hashes_round_trip() {
        let dir = scratch_device("record");
        assert_eq!(recorded(&dir), None);
        record(&dir, "ab12").unwrap();
        assert_eq!(recorded(&dir).as_deref(), Some("ab12"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
