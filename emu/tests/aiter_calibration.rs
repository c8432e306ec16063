//! `src/model/CALIBRATION.md` against the cycle model as it is: a few of its rows, modeled again,
//! must give the figures it states. A change to the model that moves them regenerates the table
//! (`cargo xtask aiter calibrate --markdown emu/src/model/CALIBRATION.md`) and the summary in the
//! model README; without this check the committed table drifted from the model unnoticed.
//! Skipped without AMD's AITER wheel (CI fetches it).

#[path = "aiter/common.rs"]
mod common;

use ferrocm_emu::aiter::calibrate::{model_row, rows};

/// The committed table's modeled microseconds by `table:line`, as printed.
fn committed() -> Vec<(String, String)> {
    include_str!("../src/model/CALIBRATION.md")
        .lines()
        .filter(|l| l.starts_with("| ") && l.contains(".csv:"))
        .map(|l| {
            let cols: Vec<&str> = l.split('|').map(str::trim).collect();
            (cols[1].to_string(), cols[6].to_string())
        })
        .collect()
}

#[test]
fn committed_calibration_rows_are_what_the_model_gives() {
    let Some(wheel) = common::wheel() else { return };
    let table = committed();
    assert!(table.len() > 100, "{} rows read from CALIBRATION.md", table.len());
    let (all, _) = rows(&wheel).unwrap();
    // The first row of each kernel family: a split-K bf16 GEMM, an MoE stage 1, a one-stage MoE.
    let families: [fn(&str) -> bool; 3] = [|k| k.contains("bf16gemm"), |k| k.contains("stage1"), |k| k.contains("fmoe_bf16_")];
    for is in families {
        let row = all.iter().find(|r| is(&r.kernel)).expect("a row of the family");
        let key = format!("{}:{}", row.table, row.line);
        let want = &table.iter().find(|(k, _)| *k == key).unwrap_or_else(|| panic!("{key} is not in CALIBRATION.md")).1;
        // The calibration's own sample (16 workgroups), printed as the table prints it.
        let got = model_row(&wheel, row, 16).unwrap_or_else(|e| panic!("{key}: {e}")).modeled_us();
        assert_eq!(&format!("{got:.1}"), want, "{key} ({}): the model gives {got:.3} us: regenerate CALIBRATION.md", row.what);
    }
}
