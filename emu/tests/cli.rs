//! `ferrocm-emu` on hostile command lines and closed pipes: an error message and a failing exit
//! status, or a quiet success for a reader that stopped reading; never a panic or an abort.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn fixture() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ferrocm.co").to_string_lossy().into_owned()
}

fn emu(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ferrocm-emu")).args(args).output().expect("run ferrocm-emu")
}

/// Runs `copy_u32` of the fixture with `extra` arguments; returns the failure's message.
fn run_fails(extra: &[&str]) -> String {
    let co = fixture();
    let mut args = vec!["run", &co, "--kernel", "copy_u32"];
    args.extend_from_slice(extra);
    let out = emu(&args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{args:?} succeeded");
    assert!(!err.contains("panicked") && err.starts_with("error: "), "{args:?}: {err}");
    err
}

const BUFS: [&str; 10] = ["--buf", "a=zeros:256", "--buf", "b=zeros:256", "--arg", "ptr:a", "--arg", "ptr:b", "--arg", "u32:64"];

#[test]
fn huge_buffers_are_out_of_memory_errors() {
    // The host buffer used to be allocated before the emulator's limit was checked (an abort),
    // and u64::MAX bytes panicked with "capacity overflow".
    for size in ["100000000000", "18446744073709551615"] {
        let spec = format!("a=zeros:{size}");
        let err = run_fails(&["--grid", "1", "--block", "64", "--buf", &spec, "--arg", "ptr:a"]);
        assert!(err.contains("out of emulated device memory"), "{err}");
    }
}

#[test]
fn a_duplicate_buffer_name_is_an_error() {
    let err = run_fails(&["--grid", "1", "--block", "64", "--buf", "a=zeros:4", "--buf", "a=zeros:8"]);
    assert!(err.contains("--buf a given twice"), "{err}");
}

#[test]
fn kernargs_are_bounded() {
    let err = run_fails(&["--grid", "1", "--block", "64", "--arg", "zero:1000000000"]);
    assert!(err.contains("kernarg bytes"), "{err}");
}

#[test]
fn grids_and_blocks_are_bounded() {
    let mut args = vec!["--grid", "4294967295,4294967295,4294967295", "--block", "1"];
    args.extend(BUFS);
    assert!(run_fails(&args).contains("more than 2^64 workgroups"));
    let mut args = vec!["--grid", "4000000000", "--block", "1"];
    args.extend(BUFS);
    assert!(run_fails(&args).contains("max_workgroups"));
    let mut args = vec!["--grid", "100", "--block", "64", "--max-workgroups", "10"];
    args.extend(BUFS);
    assert!(run_fails(&args).contains("100 workgroups"));
    let mut args = vec!["--grid", "1", "--block", "2147483648,2147483648,4"];
    args.extend(BUFS);
    assert!(run_fails(&args).contains("more than 2^64 work-items"));
}

#[test]
fn an_out_without_its_buffer_is_an_error_before_running() {
    assert!(run_fails(&["--grid", "1", "--block", "64", "--out", "c=/dev/null"]).contains("no --buf named c"));
}

#[test]
fn buffers_round_trip_through_files() {
    let dir = std::env::temp_dir().join(format!("ferrocm-emu-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (input, output) = (dir.join("in.bin"), dir.join("out.bin"));
    let data: Vec<u8> = (0..256u32).flat_map(|i| (i * 7 + 1).to_le_bytes()).collect();
    std::fs::write(&input, &data).unwrap();
    let (src, dst) = (format!("x=@{}", input.display()), format!("y={}", output.display()));
    let co = fixture();
    let out = emu(&[
        "run",
        &co,
        "--kernel",
        "copy_u32",
        "--grid",
        "1",
        "--block",
        "256",
        "--buf",
        &src,
        "--buf",
        "y=zeros:1024",
        "--arg",
        "ptr:x",
        "--arg",
        "ptr:y",
        "--arg",
        "u32:256",
        "--out",
        &dst,
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read(&output).unwrap(), data);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_closed_pipe_ends_listings_quietly() {
    // `ferrocm-emu disasm x.co | head -1` panicked ("failed printing to stdout").
    for cmd in ["disasm", "info"] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ferrocm-emu"))
            .args([cmd, &fixture()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
        // The reader is dropped here: the rest of the listing goes to a closed pipe.
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && err.is_empty(), "{cmd}: {:?} {err}", out.status);
        assert!(!first.is_empty());
    }
}

#[test]
fn model_gives_a_modeled_time_in_text_and_json() {
    let co = fixture();
    let base = [
        "run",
        &co,
        "--kernel",
        "copy_u32",
        "--grid",
        "1024",
        "--block",
        "256",
        "--buf",
        "x=zeros:1048576",
        "--buf",
        "y=zeros:1048576",
        "--arg",
        "ptr:x",
        "--arg",
        "ptr:y",
        "--arg",
        "u32:262144",
        "--model",
        "--sample",
        "4",
    ];
    let out = emu(&base);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("modeled MI300X (304 CUs") && text.contains("bottleneck"), "{text}");
    let mut json_args = base.to_vec();
    json_args.extend(["--cus", "80", "--stats", "json"]);
    let out = emu(&json_args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let m = &v["model"];
    assert_eq!(m["modeled"], true);
    assert_eq!(m["chip"]["cus"], 80);
    assert_eq!(m["sampled_workgroups"], 4);
    assert!(m["seconds"].as_f64().unwrap() > 0.0 && m["bottleneck"].is_string(), "{m}");
    // A sampled run's outputs are partial: --out is refused with --model.
    let mut with_out = base.to_vec();
    with_out.extend(["--out", "y=/dev/null"]);
    let out = emu(&with_out);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("--model"));
}

#[test]
fn disasm_prints_llvm_objdumps_header() {
    let out = emu(&["disasm", &fixture()]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("file format elf64-amdgpu") && text.contains("Disassembly of section .text:"),
        "{}",
        &text[..200.min(text.len())]
    );
}
