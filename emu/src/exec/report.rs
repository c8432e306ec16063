//! Counters and launch statistics as JSON (for the CLI and benchmark tooling).

use super::counters::{Class, Counters};
use super::launch::LaunchStats;
use serde_json::{Value, json};

/// A JSON value (re-exported so users need no serde_json dependency to print reports).
pub type Json = Value;

/// The counters as a JSON object.
pub fn counters_json(c: &Counters) -> Value {
    let classes: serde_json::Map<String, Value> = Class::ALL.iter().map(|&k| (k.name().to_string(), json!(c.class(k)))).collect();
    let widths: serde_json::Map<String, Value> = c.global.lane_accesses_by_width.iter().map(|(w, n)| (format!("{w}"), json!(n))).collect();
    json!({
        "workgroups": c.workgroups,
        "waves": c.waves,
        "instructions": c.instructions,
        "by_class": classes,
        "mfma": c.mfma,
        "global": {
            "load_instructions": c.global.load_instructions,
            "store_instructions": c.global.store_instructions,
            "atomic_instructions": c.global.atomic_instructions,
            "bytes_read": c.global.bytes_read,
            "bytes_written": c.global.bytes_written,
            "lines_64b": c.global.lines,
            "partially_used_line_instructions": c.global.partially_used_line_instructions,
            "lane_accesses_by_width_bytes": widths,
        },
        "lds": {
            "instructions": c.lds.instructions,
            "bytes_read": c.lds.bytes_read,
            "bytes_written": c.lds.bytes_written,
            "bank_conflict_cycles": c.lds.bank_conflict_cycles,
            "conflicted_instructions": c.lds.conflicted_instructions,
        },
        "barriers": c.barriers,
        "counting": c.counting.name(),
    })
}

/// A launch's statistics as a JSON object.
pub fn launch_json(s: &LaunchStats) -> Value {
    json!({
        "wall_time_s": s.wall_time.as_secs_f64(),
        "threads": s.threads,
        "sequential": s.sequential,
        "instructions_per_second": s.counters.instructions as f64 / s.wall_time.as_secs_f64().max(1e-9),
        "counters": counters_json(&s.counters),
    })
}
