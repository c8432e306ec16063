//! The roofline plot: arithmetic intensity (FLOPs per compulsory HBM byte) against modeled
//! FLOP/s, log-log, with MI300X's compute roofs (one per math kind present) and HBM roof.

use crate::run::CaseReport;
use ferrocm_emu::model::machine::HBM_PEAK_BYTES_PER_S;
use std::collections::BTreeMap;
use std::fmt::Write;

const W: f64 = 900.0;
const H: f64 = 560.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 250.0;
const TOP: f64 = 30.0;
const BOTTOM: f64 = 60.0;
/// Axes: 10^-2 .. 10^4 FLOP/byte, 10^10 .. 10^16 FLOP/s.
const X_DECADES: (i32, i32) = (-2, 4);
const Y_DECADES: (i32, i32) = (10, 16);
const COLORS: [&str; 8] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"];

fn x_of(ai: f64) -> f64 {
    let (a, b) = X_DECADES;
    LEFT + (ai.log10() - a as f64) / (b - a) as f64 * (W - LEFT - RIGHT)
}

fn y_of(f: f64) -> f64 {
    let (a, b) = Y_DECADES;
    H - BOTTOM - (f.log10() - a as f64) / (b - a) as f64 * (H - TOP - BOTTOM)
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// The SVG document. Kernels without FLOPs (fill, copy) have no place on the intensity axis;
/// they are listed under the legend with their modeled bandwidth.
pub fn svg(cases: &[CaseReport]) -> String {
    let mut s = String::new();
    let _ = write!(s, r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">"#);
    let _ = write!(s, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let _ = write!(s, r#"<text x="{}" y="18" font-size="14">ferrocm on MI300X (modeled): roofline</text>"#, LEFT);
    let (x0, x1, y0, y1) = (LEFT, W - RIGHT, TOP, H - BOTTOM);
    for d in X_DECADES.0..=X_DECADES.1 {
        let x = x_of(10f64.powi(d));
        let _ = write!(
            s,
            r##"<line x1="{x}" y1="{y0}" x2="{x}" y2="{y1}" stroke="#ddd"/><text x="{x}" y="{}" text-anchor="middle">1e{d}</text>"##,
            y1 + 16.0
        );
    }
    for d in Y_DECADES.0..=Y_DECADES.1 {
        let y = y_of(10f64.powi(d));
        let _ = write!(
            s,
            r##"<line x1="{x0}" y1="{y}" x2="{x1}" y2="{y}" stroke="#ddd"/><text x="{}" y="{}" text-anchor="end">1e{d}</text>"##,
            x0 - 6.0,
            y + 4.0
        );
    }
    let _ = write!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">arithmetic intensity (FLOP per compulsory HBM byte)</text>"#,
        (x0 + x1) / 2.0,
        H - 20.0
    );
    let _ = write!(s, r#"<text transform="translate(18,{}) rotate(-90)" text-anchor="middle">modeled FLOP/s</text>"#, (y0 + y1) / 2.0);
    // Roofs: min(peak, ai * HBM peak) for each compute roof present.
    let mut roofs: BTreeMap<&str, f64> = BTreeMap::new();
    for c in cases.iter().filter(|c| c.flops > 0.0) {
        roofs.insert(c.math, c.peak_flops);
    }
    let (amin, amax) = (10f64.powi(X_DECADES.0), 10f64.powi(X_DECADES.1));
    for (name, &peak) in &roofs {
        let ridge = peak / HBM_PEAK_BYTES_PER_S;
        let _ = write!(
            s,
            r##"<polyline fill="none" stroke="#444" stroke-width="1.5" points="{},{} {},{} {},{}"/><text x="{}" y="{}" text-anchor="end" fill="#444">{} peak {:.0} TFLOP/s</text>"##,
            x_of(amin),
            y_of(amin * HBM_PEAK_BYTES_PER_S),
            x_of(ridge),
            y_of(peak),
            x_of(amax),
            y_of(peak),
            x_of(amax) - 4.0,
            y_of(peak) - 5.0,
            esc(name),
            peak / 1e12
        );
    }
    let _ = write!(
        s,
        r##"<text x="{}" y="{}" fill="#444" transform="rotate(-27 {} {})">HBM {:.1} TB/s</text>"##,
        x_of(0.05),
        y_of(0.05 * HBM_PEAK_BYTES_PER_S) - 6.0,
        x_of(0.05),
        y_of(0.05 * HBM_PEAK_BYTES_PER_S) - 6.0,
        HBM_PEAK_BYTES_PER_S / 1e12
    );
    // Points and legend.
    let mut ly = TOP + 10.0;
    for (i, c) in cases.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let label = format!("{} {}", c.op, c.shape);
        if c.flops > 0.0 {
            let (x, y) = (x_of(c.intensity()), y_of(c.flops_per_s));
            let _ = write!(
                s,
                r#"<circle cx="{x:.1}" cy="{y:.1}" r="5" fill="{color}"><title>{} : {:.1} TFLOP/s modeled, {:.1}% of roof</title></circle>"#,
                esc(&label),
                c.flops_per_s / 1e12,
                100.0 * c.roof_fraction
            );
            let _ = write!(
                s,
                r#"<circle cx="{}" cy="{ly}" r="5" fill="{color}"/><text x="{}" y="{}">{} ({:.0}%)</text>"#,
                W - RIGHT + 15.0,
                W - RIGHT + 25.0,
                ly + 4.0,
                esc(&label),
                100.0 * c.roof_fraction
            );
        } else {
            let _ = write!(
                s,
                r#"<text x="{}" y="{}" fill="{color}">{}: {:.2} TB/s, no FLOPs ({:.0}%)</text>"#,
                W - RIGHT + 10.0,
                ly + 4.0,
                esc(&label),
                c.bytes_per_s / 1e12,
                100.0 * c.roof_fraction
            );
        }
        ly += 18.0;
    }
    s += "</svg>\n";
    s
}
