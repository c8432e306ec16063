//! The resource report: a table for people, JSON for tools.

use crate::pipeline::ArchBuild;

/// The report of one architecture as pretty JSON (keys sorted, two-space indent).
///
/// Written out by hand: it is a flat record of numbers and symbol names, and this crate runs in
/// the build script of every crate depending on `ferrocm`, where a JSON library would be one
/// more build-dependency to compile.
pub fn json(b: &ArchBuild) -> String {
    let mut s = String::from("{\n");
    s += &format!("  \"arch\": {},\n", quote(&b.arch));
    let co = b.code_object.file_name().map(|n| quote(&n.to_string_lossy())).unwrap_or_else(|| "null".into());
    s += &format!("  \"code_object\": {co},\n");
    s += &format!("  \"code_object_bytes\": {},\n", b.size);
    s += &format!("  \"code_object_version\": {},\n", b.version);
    if b.kernels.is_empty() {
        s += "  \"kernels\": []\n}\n";
        return s;
    }
    s += "  \"kernels\": [\n";
    for (i, k) in b.kernels.iter().enumerate() {
        let fields = [
            ("agprs", k.agprs.to_string()),
            ("lds_static_bytes", k.lds_static.to_string()),
            ("max_waves_per_simd", k.max_waves_per_simd.to_string()),
            ("name", quote(&k.name)),
            ("scratch_bytes", k.scratch.to_string()),
            ("sgpr_spills", k.sgpr_spills.to_string()),
            ("sgprs", k.sgprs.to_string()),
            ("vgpr_spills", k.vgpr_spills.to_string()),
            ("vgprs", k.vgprs.to_string()),
        ];
        s += "    {\n";
        for (j, (key, value)) in fields.iter().enumerate() {
            let comma = if j + 1 < fields.len() { "," } else { "" };
            s += &format!("      \"{key}\": {value}{comma}\n");
        }
        s += if i + 1 < b.kernels.len() { "    },\n" } else { "    }\n" };
    }
    s += "  ]\n}\n";
    s
}

/// `text` as a JSON string literal.
fn quote(text: &str) -> String {
    let mut q = String::with_capacity(text.len() + 2);
    q.push('"');
    for c in text.chars() {
        match c {
            '"' => q += "\\\"",
            '\\' => q += "\\\\",
            '\n' => q += "\\n",
            '\r' => q += "\\r",
            '\t' => q += "\\t",
            c if (c as u32) < 0x20 => q += &format!("\\u{:04x}", c as u32),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

/// The report of one architecture as a text table.
pub fn table(b: &ArchBuild) -> String {
    let w = b.kernels.iter().map(|k| k.name.len()).max().unwrap_or(6).max(6);
    let mut s = format!(
        "{}: {} ({} bytes, code object v{})\n{:<w$}  {:>5} {:>5} {:>5} {:>10} {:>8} {:>12} {:>10}\n",
        b.arch,
        b.code_object.display(),
        b.size,
        b.version,
        "kernel",
        "VGPR",
        "AGPR",
        "SGPR",
        "LDS static",
        "scratch",
        "spills V/S",
        "waves/SIMD",
    );
    for k in &b.kernels {
        s += &format!(
            "{:<w$}  {:>5} {:>5} {:>5} {:>10} {:>8} {:>12} {:>10}\n",
            k.name,
            k.vgprs,
            k.agprs,
            k.sgprs,
            k.lds_static,
            k.scratch,
            format!("{}/{}", k.vgpr_spills, k.sgpr_spills),
            k.max_waves_per_simd,
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrocm_codeobj::KernelResources;
    use std::path::PathBuf;

    fn kernel(name: &str, vgprs: u32) -> KernelResources {
        KernelResources {
            name: name.into(),
            vgprs,
            agprs: 4,
            sgprs: 84,
            lds_static: 16384,
            scratch: 0,
            vgpr_spills: 0,
            sgpr_spills: 0,
            max_waves_per_simd: 8,
        }
    }

    #[test]
    fn the_json_report_is_sorted_pretty_json() {
        let b = ArchBuild {
            arch: "gfx942".into(),
            code_object: PathBuf::from("/x/gfx942/ferrocm.co"),
            asm: PathBuf::from("/x/gfx942/ferrocm.s"),
            report: PathBuf::from("/x/gfx942/resources.json"),
            version: 6,
            size: 1234,
            kernels: vec![kernel("gemm_bf16", 128), kernel("odd\"name", 32)],
        };
        let want = r#"{
  "arch": "gfx942",
  "code_object": "ferrocm.co",
  "code_object_bytes": 1234,
  "code_object_version": 6,
  "kernels": [
    {
      "agprs": 4,
      "lds_static_bytes": 16384,
      "max_waves_per_simd": 8,
      "name": "gemm_bf16",
      "scratch_bytes": 0,
      "sgpr_spills": 0,
      "sgprs": 84,
      "vgpr_spills": 0,
      "vgprs": 128
    },
    {
      "agprs": 4,
      "lds_static_bytes": 16384,
      "max_waves_per_simd": 8,
      "name": "odd\"name",
      "scratch_bytes": 0,
      "sgpr_spills": 0,
      "sgprs": 84,
      "vgpr_spills": 0,
      "vgprs": 32
    }
  ]
}
"#;
        assert_eq!(json(&b), want);
        let empty = ArchBuild { kernels: vec![], ..b };
        assert!(json(&empty).ends_with("\"kernels\": []\n}\n"));
    }
}
