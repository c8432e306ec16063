"""Black-box access to LLVM's gfx942 disassembler (llvm-mc-19 + llvm-objdump-19).

Probes are raw dword sequences. Each probe is placed in its own fixed-size slot of a code
section padded with `s_nop 0`, so every probe starts at a known address and a probe that
LLVM rejects shows up as a `.long` line at that address instead of shifting the rest.
"""
import os
import re
import subprocess
import tempfile

MC = os.environ.get("LLVM_MC", "llvm-mc-19")
OBJDUMP = os.environ.get("LLVM_OBJDUMP", "llvm-objdump-19")
S_NOP = 0xBF800000
LINE = re.compile(r"^\t(.*?)\s*// ([0-9A-F]{12}): ((?:[0-9A-F]{8} ?)+)(?:<.*>)?\s*$")


def disassemble(probes, slot_dwords=None):
    """Return, for each probe, (text, dwords_consumed) or (None, 0) when LLVM rejects it."""
    if not probes:
        return []
    if slot_dwords is None:
        slot_dwords = max(len(p) for p in probes) + 1
    src = [".text"]
    for p in probes:
        assert len(p) < slot_dwords or len(p) == slot_dwords
        words = list(p) + [S_NOP] * (slot_dwords - len(p))
        src.append(".long " + ",".join("0x%08x" % w for w in words))
    with tempfile.TemporaryDirectory() as d:
        s = os.path.join(d, "p.s")
        o = os.path.join(d, "p.o")
        with open(s, "w") as f:
            f.write("\n".join(src) + "\n")
        subprocess.run([MC, "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx942", "-filetype=obj", s, "-o", o],
                       check=True)
        out = subprocess.run([OBJDUMP, "-d", "--mcpu=gfx942", o], check=True,
                             capture_output=True, text=True).stdout
    at = {}
    for line in out.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        addr = int(m.group(2), 16)
        at[addr] = (m.group(1), len(m.group(3).split()))
    res = []
    for i, _ in enumerate(probes):
        text, n = at.get(i * slot_dwords * 4, (None, 0))
        if text is None or text.startswith(".long"):
            res.append((None, 0))
        else:
            res.append((text, n))
    return res


def assemble(lines):
    """Assemble each line on its own; return (text_or_None, dwords) per line.

    The canonical text is what LLVM prints back when it disassembles its own encoding; that is
    the form an objdump listing shows.
    """
    src = "\n".join(lines) + "\n"
    r = subprocess.run([MC, "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx942", "-show-encoding"],
                       input=src, capture_output=True, text=True)
    bad = set()
    for m in re.finditer(r"<stdin>:(\d+):\d+: error", r.stderr):
        bad.add(int(m.group(1)) - 1)
    encs = re.findall(r"; encoding: \[([^\]]*)\]", r.stdout)
    res = []
    k = 0
    for i in range(len(lines)):
        if i in bad:
            res.append(None)
            continue
        b = [int(x, 16) for x in encs[k].split(",")]
        k += 1
        res.append([int.from_bytes(bytes(b[j:j + 4]), "little") for j in range(0, len(b), 4)])
    assert k == len(encs), "assembler output does not line up with its input"
    return res
