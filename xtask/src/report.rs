//! The resource report: a table for people, JSON for tools.

use crate::device_build::ArchBuild;
use serde_json::json;

/// The report of one architecture as pretty JSON.
pub fn json(b: &ArchBuild) -> String {
    let kernels: Vec<_> = b
        .kernels
        .iter()
        .map(|k| {
            json!({
                "name": k.name,
                "vgprs": k.vgprs,
                "agprs": k.agprs,
                "sgprs": k.sgprs,
                "lds_static_bytes": k.lds_static,
                "scratch_bytes": k.scratch,
                "vgpr_spills": k.vgpr_spills,
                "sgpr_spills": k.sgpr_spills,
                "max_waves_per_simd": k.max_waves_per_simd,
            })
        })
        .collect();
    let v = json!({
        "arch": b.arch,
        "code_object": b.code_object.file_name().map(|n| n.to_string_lossy().into_owned()),
        "code_object_version": b.version,
        "code_object_bytes": b.size,
        "kernels": kernels,
    });
    serde_json::to_string_pretty(&v).expect("JSON of plain values") + "\n"
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
