//! LLVM as a black-box oracle for the ISA tests: llvm-mc-19 assembles, llvm-objdump-19
//! disassembles. Every helper runs one process for a whole batch.
#![allow(dead_code)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

pub const MC: &str = "llvm-mc-19";
pub const OBJDUMP: &str = "llvm-objdump-19";

/// Panics with a clear message when an LLVM tool is missing.
pub fn require_tools() {
    for tool in [MC, OBJDUMP] {
        let ok =
            Command::new(tool).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().map(|s| s.success()).unwrap_or(false);
        assert!(
            ok,
            "{tool} not found: these tests use LLVM 19 as the oracle \
                     (Debian/Ubuntu: apt-get install llvm-19)"
        );
    }
}

pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests").join("fixtures").join(name)
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "ferrocm-isa-{}-{}-{}",
        tag,
        std::process::id(),
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// One assembled line: the canonical text LLVM prints for it and its encoding.
pub struct Assembled {
    pub line: String,
    pub text: String,
    pub words: Vec<u32>,
}

/// Assembles each line on its own with `llvm-mc -show-encoding`. Lines LLVM rejects are
/// returned in the second vector.
pub fn assemble(lines: &[String]) -> (Vec<Assembled>, Vec<String>) {
    let mut child = Command::new(MC)
        .args(["-triple=amdgcn-amd-amdhsa", "-mcpu=gfx942", "-show-encoding"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run llvm-mc-19");
    let input = lines.join("\n") + "\n";
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()).unwrap());
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut bad = std::collections::BTreeSet::new();
    for l in stderr.lines() {
        if let Some(rest) = l.strip_prefix("<stdin>:")
            && rest.contains(": error:")
        {
            let n: usize = rest.split(':').next().unwrap().parse().unwrap();
            bad.insert(n - 1);
        }
    }
    let mut encs = stdout.lines().filter_map(|l| {
        let (text, enc) = l.split_once("; encoding: [")?;
        let bytes: Vec<u8> =
            enc.trim_end_matches(']').split(',').map(|b| u8::from_str_radix(b.trim().trim_start_matches("0x"), 16).unwrap()).collect();
        let words = bytes.chunks(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        Some((text.trim().to_string(), words))
    });
    let mut ok = Vec::new();
    let mut rejected = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if bad.contains(&i) {
            rejected.push(line.clone());
            continue;
        }
        let (text, words) = encs.next().expect("llvm-mc output does not line up with its input");
        ok.push(Assembled { line: line.clone(), text, words });
    }
    assert!(encs.next().is_none(), "llvm-mc printed more instructions than it was given");
    (ok, rejected)
}

/// Parses `llvm-objdump -d` output into (address, text, words) rows.
pub fn parse_objdump(out: &str) -> Vec<(u64, String, Vec<u32>)> {
    let mut rows = Vec::new();
    for line in out.lines() {
        let Some(body) = line.strip_prefix('\t') else {
            continue;
        };
        // "text   // 000000001D00: C0020140 00000004 <sym+0x10>"
        let Some(pos) = body.rfind("// ") else {
            continue;
        };
        let (text, tail) = body.split_at(pos);
        let tail = &tail[3..];
        let Some((addr, rest)) = tail.split_once(": ") else {
            continue;
        };
        let Ok(addr) = u64::from_str_radix(addr, 16) else {
            continue;
        };
        let words: Vec<u32> =
            rest.split_whitespace().take_while(|w| w.len() == 8).filter_map(|w| u32::from_str_radix(w, 16).ok()).collect();
        rows.push((addr, text.trim().to_string(), words));
    }
    rows
}

pub fn objdump_file(path: &std::path::Path) -> String {
    try_objdump_file(path).unwrap_or_else(|e| panic!("llvm-objdump failed: {e}"))
}

fn try_objdump_file(path: &std::path::Path) -> Result<String, String> {
    let out = Command::new(OBJDUMP).args(["-d", "--mcpu=gfx942"]).arg(path).output().expect("run llvm-objdump-19");
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(String::from_utf8(out.stdout).unwrap())
}

/// LLVM's verdict on one probe.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Decoded: the text and how many dwords it took.
    Text(String, usize),
    /// Not an instruction to LLVM (or only with an "Invalid register" complaint).
    Rejected,
    /// llvm-objdump-19 crashes on it (a bug in LLVM 19's disassembler).
    Crash,
}

/// What LLVM makes of each probe: its text and dword count, or None when it rejects it (or
/// decodes it only with an "Invalid register" complaint, or crashes on it).
pub fn disassemble(probes: &[Vec<u32>]) -> Vec<Option<(String, usize)>> {
    verdicts(probes)
        .into_iter()
        .map(|v| match v {
            Verdict::Text(t, n) => Some((t, n)),
            _ => None,
        })
        .collect()
}

/// Like [`disassemble`], telling rejections and LLVM crashes apart. A batch on which
/// llvm-objdump crashes is split in halves until the crashing probes are isolated.
pub fn verdicts(probes: &[Vec<u32>]) -> Vec<Verdict> {
    // Batches of a few thousand keep a crash from re-running the whole set many times.
    if probes.len() > 8192 {
        return probes.chunks(8192).flat_map(verdicts).collect();
    }
    if probes.is_empty() {
        return Vec::new();
    }
    const S_NOP: u32 = 0xBF80_0000;
    let slot = probes.iter().map(|p| p.len()).max().unwrap_or(1) + 1;
    let dir = tmpdir("probe");
    let src = dir.join("p.s");
    let obj = dir.join("p.o");
    let mut s = String::from(".text\n");
    for p in probes {
        s.push_str(".long ");
        let words: Vec<String> = p.iter().copied().chain(std::iter::repeat(S_NOP)).take(slot).map(|w| format!("{w:#010x}")).collect();
        s.push_str(&words.join(","));
        s.push('\n');
    }
    std::fs::write(&src, s).unwrap();
    let st = Command::new(MC)
        .args(["-triple=amdgcn-amd-amdhsa", "-mcpu=gfx942", "-filetype=obj"])
        .arg(&src)
        .arg("-o")
        .arg(&obj)
        .status()
        .expect("run llvm-mc-19");
    assert!(st.success());
    let dumped = try_objdump_file(&obj);
    std::fs::remove_dir_all(&dir).ok();
    let Ok(dumped) = dumped else {
        if probes.len() == 1 {
            return vec![Verdict::Crash];
        }
        let (a, b) = probes.split_at(probes.len() / 2);
        let mut v = verdicts(a);
        v.extend(verdicts(b));
        return v;
    };
    let mut by_addr = std::collections::HashMap::new();
    for (a, t, w) in parse_objdump(&dumped) {
        by_addr.insert(a, (t, w.len()));
    }
    // llvm-objdump appends "; Warning: ... isn't aligned" to encodings it decodes although
    // they are invalid (misaligned register tuples): those count as rejected.
    let warned: std::collections::HashSet<u64> = dumped
        .lines()
        .filter(|l| l.contains("; Warning:"))
        .filter_map(|l| {
            let tail = &l[l.rfind("// ")? + 3..];
            u64::from_str_radix(tail.split(':').next()?, 16).ok()
        })
        .collect();
    (0..probes.len())
        .map(|i| match by_addr.get(&((i * slot * 4) as u64)) {
            Some((t, n)) if !t.starts_with(".long") && !t.contains("/*") && !warned.contains(&((i * slot * 4) as u64)) => {
                Verdict::Text(t.clone(), *n)
            }
            _ => Verdict::Rejected,
        })
        .collect()
}

/// Collapses runs of whitespace, the only normalisation the comparisons allow.
pub fn norm(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
