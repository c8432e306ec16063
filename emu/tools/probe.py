"""Learning gfx942 instruction facts from LLVM's disassembler, one encoding format at a time.

Everything here is black-box: an encoding is built from field values, LLVM prints it (or
rejects it), and the printed text is parsed back into operands. For every opcode that LLVM
knows in a format we learn:
  - the mnemonic as printed (with its _e32/_e64 suffix or none);
  - for every operand field: used (and how wide, which register files and constants it takes,
    how constants print), ignored (any value accepted, nothing printed) or must-be-zero;
  - for every modifier bit: printed, ignored or rejected.
The per-format knowledge (where fields sit, which values are worth trying) lives in FORMATS.
"""
import itertools
import re

import oracle

LIT = 0x5678  # prints as 0x5678 whatever the operand type (even 16-bit and f64 operands)

# ---------------------------------------------------------------------------------------------
# Parsing LLVM's text


def split_top(s, sep):
    """Split on `sep` outside brackets and parentheses."""
    out, depth, cur, i = [], 0, "", 0
    while i < len(s):
        c = s[i]
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        if depth == 0 and s.startswith(sep, i):
            out.append(cur)
            cur = ""
            i += len(sep)
            continue
        cur += c
        i += 1
    out.append(cur)
    return out


def parse(text):
    """(mnemonic, [operands], [trailing modifiers])."""
    if " " not in text:
        return text, [], []
    mnem, rest = text.split(" ", 1)
    ops = split_top(rest, ", ")
    last = split_top(ops[-1], " ")
    ops[-1] = last[0]
    mods = [m for m in last[1:] if m]
    return mnem, ops, mods


REG = re.compile(r"^(v|s|a|ttmp)(\d+)$|^(v|s|a|ttmp)\[(\d+):(\d+)\]$")


def strip_mods(tok):
    """Remove source modifiers: -x, |x|, neg(x), sext(x)."""
    t = tok
    for _ in range(3):
        if t.startswith("neg(") and t.endswith(")"):
            t = t[4:-1]
        elif t.startswith("sext(") and t.endswith(")"):
            t = t[5:-1]
        elif t.startswith("-") and len(t) > 1 and not t[1].isdigit():
            t = t[1:]
        elif t.startswith("|") and t.endswith("|"):
            t = t[1:-1]
    return t


def reg(tok):
    """(file, first, count) for a register token, else None."""
    m = REG.match(strip_mods(tok))
    if not m:
        return None
    if m.group(1):
        return m.group(1), int(m.group(2)), 1
    return m.group(3), int(m.group(4)), int(m.group(5)) - int(m.group(4)) + 1


def invalid(text):
    return text is None or "/*" in text


# ---------------------------------------------------------------------------------------------
# Constants as LLVM prints them, per operand type. The same rules are implemented in Rust
# (disasm.rs); the generator only uses them to recognise which type an operand has.

F32_NAMES = {0x3F000000: "0.5", 0xBF000000: "-0.5", 0x3F800000: "1.0", 0xBF800000: "-1.0",
             0x40000000: "2.0", 0xC0000000: "-2.0", 0x40800000: "4.0", 0xC0800000: "-4.0",
             0x3E22F983: "0.15915494"}
F16_NAMES = {0x3800: "0.5", 0xB800: "-0.5", 0x3C00: "1.0", 0xBC00: "-1.0", 0x4000: "2.0",
             0xC000: "-2.0", 0x4400: "4.0", 0xC400: "-4.0", 0x3118: "0.15915494"}
F64_HI_NAMES = {0x3FE00000: "0.5", 0xBFE00000: "-0.5", 0x3FF00000: "1.0", 0xBFF00000: "-1.0",
                0x40000000: "2.0", 0xC0000000: "-2.0", 0x40100000: "4.0", 0xC0100000: "-4.0"}
FLOAT_CODES = {240: 0, 241: 1, 242: 2, 243: 3, 244: 4, 245: 5, 246: 6, 247: 7, 248: 8}
F16_BITS = [0x3800, 0xB800, 0x3C00, 0xBC00, 0x4000, 0xC000, 0x4400, 0xC400, 0x3118]
F32_BITS = [0x3F000000, 0xBF000000, 0x3F800000, 0xBF800000, 0x40000000, 0xC0000000, 0x40800000,
            0xC0800000, 0x3E22F983]
FLOAT_TEXT = ["0.5", "-0.5", "1.0", "-1.0", "2.0", "-2.0", "4.0", "-4.0"]


def s32(v):
    return v - (1 << 32) if v & 0x80000000 else v


def s16(v):
    v &= 0xFFFF
    return v - (1 << 16) if v & 0x8000 else v


def inline_text(code, ty):
    if 128 <= code <= 192:
        return str(code - 128)
    if 193 <= code <= 208:
        return str(192 - code)
    i = FLOAT_CODES[code]
    if ty in ("b64", "f64"):
        return FLOAT_TEXT[i] if i < 8 else "0.15915494309189532"
    if ty == "i16":
        return "0x%x" % F16_BITS[i]
    return FLOAT_TEXT[i] if i < 8 else "0.15915494"


def literal_text(v, ty):
    if ty == "b32":
        if -16 <= s32(v) <= 64:
            return str(s32(v))
        if v in F32_NAMES:
            return F32_NAMES[v]
        return "0x%x" % v
    if ty == "b64":
        if v <= 64:
            return str(v)
        return "0x%x" % v
    if ty == "f64":
        if v in F64_HI_NAMES:
            return F64_HI_NAMES[v]
        if v == 0:
            return "0"
        return "0x%x" % v
    if ty == "f16":
        lo = v & 0xFFFF
        if -16 <= s16(lo) <= 64:
            return str(s16(lo))
        if lo in F16_NAMES:
            return F16_NAMES[lo]
        return "0x%x" % lo
    if ty == "i16":
        if -16 <= s32(v) <= 64:
            return str(s32(v))
        if v in F32_NAMES:
            return F32_NAMES[v]
        return "0x%x" % (v & 0xFFFF)
    if ty == "v2f16":
        if -16 <= s32(v) <= 64:
            return str(s32(v))
        if v in F16_NAMES:
            return F16_NAMES[v]
        return "0x%x" % v
    raise ValueError(ty)


TYPES = ["b32", "b64", "f64", "f16", "i16", "v2f16"]
TYPE_INLINES = [240, 243, 248, 193, 160]
TYPE_LITERALS = [0x3F800000, 0x3C00, 0x3FF00000, 0x5, 0xFFFFFFF0, 0xFFF0, 0x3118, 0xFFFFFFEF,
                 0x40400000, 0x3E22F983, 0, 0x40, 0xBC00, 0xFFFFFFFF]


# ---------------------------------------------------------------------------------------------
# Field learning


class Field:
    """An operand field of a format and the values worth trying in it.

    cands: list of (label, value). Label "0" is the all-zero value (which may still print as a
    register, e.g. s0); "V"/"S"/"A" registers, "C" an inline constant, "L" the literal marker,
    "off" the format's "no register" value. Register values are chosen so that no two fields
    of one format print the same register number.
    """

    def __init__(self, name, cands, shown=None):
        self.name = name
        self.cands = cands
        # The register number LLVM prints for a value (e.g. SMEM sbase holds the pair index).
        self.shown = shown or (lambda v: v - 256 if v >= 256 else v)


def marker(label, value, tok, shown=lambda v: v - 256 if v >= 256 else v):
    """Does operand token `tok` show this field's value?"""
    t = strip_mods(tok)
    if label == "L":
        return t == "0x%x" % LIT
    if label == "C":
        return t == inline_text(value, "b32")
    if label == "off":
        return t == "off"
    r = reg(tok)
    if r is None:
        return False
    return r[1] == shown(value)


class Learned:
    def __init__(self, op):
        self.op = op
        self.mnem = None
        self.fields = {}  # name -> dict(use, w, cls, file, lit)
        self.best = None  # (vals, text, size)
        self.accepted = []  # (vals, text, size)
        self.notes = []


def learn_fields(fields, encode, ops, extra=None):
    """Probe every combination of field candidates for each opcode.

    extra(op) may return additional fixed settings merged into vals (e.g. a segment).
    Returns {op: Learned} for opcodes LLVM accepts at least once.
    """
    probes, keys = [], []
    for op in ops:
        for combo in itertools.product(*[f.cands for f in fields]):
            vals = {f.name: c for f, c in zip(fields, combo)}
            probes.append(encode(op, {k: v for k, (_, v) in vals.items()}))
            keys.append((op, vals))
    res = oracle.disassemble(probes)
    out = {}
    for (op, vals), (text, size) in zip(keys, res):
        if invalid(text):
            continue
        lr = out.setdefault(op, Learned(op))
        lr.accepted.append((vals, text, size))
    for op, lr in out.items():
        mnems = {parse(t)[0] for _, t, _ in lr.accepted}
        if len(mnems) != 1:
            raise SystemExit("opcode %#x prints as several mnemonics: %s" % (op, sorted(mnems)))
        lr.mnem = mnems.pop()
        for f in fields:
            info = {"use": "zero", "w": 0, "cls": set(), "file": None}
            seen_nonzero = False
            for vals, text, size in lr.accepted:
                label, value = vals[f.name]
                if label == "0":
                    continue
                seen_nonzero = True
                _, ops_, _ = parse(text)
                hit = [t for t in ops_ if marker(label, value, t, f.shown)]
                if hit:
                    info["use"] = "used"
                    info["cls"].add(label)
                    r = reg(hit[0])
                    if r:
                        info["w"] = max(info["w"], r[2])
                        info["file"] = r[0] if label != "S" else "s"
            if info["use"] == "zero" and seen_nonzero:
                info["use"] = "ignored"
            lr.fields[f.name] = info
        # The representative probe: the accepted one that shows the most used fields with
        # register values (so that widths and files are visible), fewest constants.
        def score(item):
            vals, text, size = item
            s = 0
            for f in fields:
                label, _ = vals[f.name]
                if lr.fields[f.name]["use"] == "used" and label in ("V", "S", "A"):
                    s += 10
                if lr.fields[f.name]["use"] == "ignored" and label == "0":
                    s += 1
            return s
        lr.best = max(lr.accepted, key=score)
    return out


def probe_bits(lrs, encode, base_vals_of, variants):
    """For each learned opcode, apply each named variant on top of its representative probe.

    variants: list of (name, dict of extra encode arguments). Returns {op: {name: (text, size)}}.
    """
    probes, keys = [], []
    for op, lr in lrs.items():
        base = base_vals_of(lr)
        for name, extra in variants:
            v = dict(base)
            v.update(extra)
            probes.append(encode(op, v))
            keys.append((op, name))
    res = oracle.disassemble(probes)
    out = {}
    for (op, name), (text, size) in zip(keys, res):
        out.setdefault(op, {})[name] = (None if invalid(text) else text, size)
    return out


def classify_type(results):
    """results: list of (kind, value, printed) with kind "inline"/"literal"."""
    fits = []
    for ty in TYPES:
        ok = True
        for kind, value, printed in results:
            want = inline_text(value, ty) if kind == "inline" else literal_text(value, ty)
            if want != printed:
                ok = False
                break
        if ok:
            fits.append(ty)
    return fits
