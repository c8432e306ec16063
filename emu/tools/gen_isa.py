#!/usr/bin/env python3
"""Generate emu/src/isa/tables.rs and emu/tests/fixtures/samples.s from LLVM's gfx942 disassembler.

Usage: python3 emu/tools/gen_isa.py            (needs llvm-mc-19 and llvm-objdump-19)

Every opcode of every supported format is fed to llvm-objdump-19 with many operand values
(see probe.py); what LLVM accepts and how it prints it becomes the opcode tables of the
decoder and the per-form facts the disassembler needs. The same run writes a corpus of
assembly samples (one line per learned encoding variant) for the round-trip test.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle  # noqa: E402
from probe import (LIT, Field, learn_fields, probe_bits, parse, reg, invalid, classify_type,  # noqa: E402
                   TYPE_INLINES, TYPE_LITERALS, strip_mods)

HERE = os.path.dirname(os.path.abspath(__file__))
EMU = os.path.dirname(HERE)

SAMPLES = []  # assembly lines for the round-trip test


def sample(text):
    if text and "/*" not in text:
        SAMPLES.append(text)


def src_types(lrs, encode, field_names, base_of):
    """Learn how each constant-capable source prints its constants (its operand type)."""
    variants = []
    for fname in field_names:
        for c in TYPE_INLINES:
            variants.append(((fname, "inline", c), {fname: c}))
        for v in TYPE_LITERALS:
            variants.append(((fname, "literal", v), {fname: 255, "lit": v}))
    res = probe_bits(lrs, encode, base_of, [(k, e) for k, e in variants])
    types = {}
    for op, lr in lrs.items():
        for fname in field_names:
            info = lr.fields[fname]
            if info["use"] != "used" or "C" not in info["cls"]:
                continue
            obs = []
            for (fn, kind, v), _ in variants:
                if fn != fname:
                    continue
                if kind == "literal" and "L" not in info["cls"]:
                    continue
                text, _ = res[op][(fn, kind, v)]
                if text is None:
                    continue
                _, ops, _ = parse(text)
                printed = [strip_mods(t) for t in ops]
                # The constant is the operand at the position the field's marker had.
                idx = lr.fields[fname]["pos"]
                obs.append((kind, v, printed[idx]))
                if kind == "inline" and v in (240, 248):
                    sample(text)
                if kind == "literal" and v in (0x3F800000, 0x3C00, 0xFFFFFFEF, 0x40400000):
                    sample(text)
            fits = classify_type(obs)
            if not fits:
                raise SystemExit("%s %s: no operand type explains %r" % (lr.mnem, fname, obs))
            info["ty"] = fits[0]
    return types


def positions(lr, fields):
    """Record, for each used field, the index of its operand in the representative text."""
    from probe import marker
    vals, text, _ = lr.best
    _, ops, _ = parse(text)
    for f in fields:
        info = lr.fields[f.name]
        if info["use"] != "used":
            continue
        label, value = vals[f.name]
        idx = [i for i, t in enumerate(ops) if label != "0" and marker(label, value, t, f.shown)]
        info["pos"] = idx[0] if idx else None
    lr.template = ops


# ---------------------------------------------------------------------------------------------
# Scalar ALU

def enc_sop1(op, v):
    w = [0xBE800000 | (v.get("sdst", 0) << 16) | (op << 8) | v.get("ssrc0", 0)]
    return w + [v.get("lit", LIT)]


def enc_sop2(op, v):
    w = [0x80000000 | (op << 23) | (v.get("sdst", 0) << 16) | (v.get("ssrc1", 0) << 8)
         | v.get("ssrc0", 0)]
    return w + [v.get("lit", LIT)]


def enc_sopc(op, v):
    return [0xBF000000 | (op << 16) | (v.get("ssrc1", 0) << 8) | v.get("ssrc0", 0),
            v.get("lit", LIT)]


def enc_sopk(op, v):
    return [0xB0000000 | (op << 23) | (v.get("sdst", 0) << 16) | v.get("simm16", 0),
            v.get("lit", LIT)]


def enc_sopp(op, v):
    return [0xBF800000 | (op << 16) | v.get("simm16", 0)]


SDST = Field("sdst", [("0", 0), ("S", 20)])


def SSRC(name, n, c):
    return Field(name, [("0", 0), ("S", n), ("C", c), ("L", 255)])


IMM_VALUES = [0, 1, 0x12, 0x40, 0x41, 0x7FFF, 0x8000, 0xFFF0, 0xFFFF]


def imm_style(texts):
    """Classify how a 16-bit immediate prints, from {value: printed operand or None}."""
    def fits(fn):
        return all(t == fn(v) for v, t in texts.items() if t is not None)
    styles = [
        ("hex", lambda v: "0x%x" % v),
        ("dec", lambda v: "%d" % v),
        ("imm", lambda v: "%d" % v if v <= 64 else "0x%x" % v),
    ]
    for name, fn in styles:
        if fits(fn):
            return name
    return None


def learn_scalar():
    forms = []
    sop1 = learn_fields([SDST, SSRC("ssrc0", 12, 129)], enc_sop1, range(256))
    sop2 = learn_fields([SDST, SSRC("ssrc0", 12, 129), SSRC("ssrc1", 8, 130)], enc_sop2,
                        range(0x60))
    sopc = learn_fields([SSRC("ssrc0", 12, 129), SSRC("ssrc1", 8, 130)], enc_sopc, range(128))
    for name, lrs, enc, flds in (("SOP1", sop1, enc_sop1, ["sdst", "ssrc0"]),
                                 ("SOP2", sop2, enc_sop2, ["sdst", "ssrc0", "ssrc1"]),
                                 ("SOPC", sopc, enc_sopc, ["ssrc0", "ssrc1"])):
        fl = {"SOP1": [SDST, SSRC("ssrc0", 12, 129)],
              "SOP2": [SDST, SSRC("ssrc0", 12, 129), SSRC("ssrc1", 8, 130)],
              "SOPC": [SSRC("ssrc0", 12, 129), SSRC("ssrc1", 8, 130)]}[name]
        for lr in lrs.values():
            positions(lr, fl)
        srcs = [f for f in flds if f.startswith("ssrc")]
        src_types(lrs, enc, srcs,
                  lambda lr: {k: (v if lr.fields[k]["use"] == "used" else 0)
                              for k, (_, v) in lr.best[0].items()})
        for op, lr in sorted(lrs.items()):
            for _, text, _ in lr.accepted:
                sample(text)
            forms.append(dict(fmt=name, op=op, mnem=lr.mnem, fields=lr.fields, enc=enc,
                              base={k: v for k, (_, v) in lr.best[0].items()},
                              template=lr.template))
    # SOPC op 0x11 (s_set_gpr_idx_on) takes a mode mask in ssrc1: learn it like an immediate.
    return forms


def learn_imm16(lrs, enc, base_of, field="simm16", pos_of=lambda lr: -1):
    """Classify how each opcode prints its 16-bit immediate.

    Returns {op: style}, style one of none (only 0 accepted, nothing printed), endpgm (printed
    only when nonzero), hex, dec, imm, or a special printer: waitcnt, sendmsg, hwreg, gpr_idx.
    """
    variants = [(v, {field: v}) for v in IMM_VALUES]
    res = probe_bits(lrs, enc, base_of, variants)
    styles = {}
    for op, lr in lrs.items():
        texts = {}
        for v in IMM_VALUES:
            t, _ = res[op][v]
            if t is not None:
                sample(t)
            _, ops, _ = parse(t) if t else (None, [], [])
            texts[v] = t
        full = [t for t in texts.values() if t]
        if any("waitcnt" in t or "vmcnt(" in t for t in full):
            styles[op] = "waitcnt"
        elif any("sendmsg" in t for t in full):
            styles[op] = "sendmsg"
        elif any("hwreg(" in t for t in full):
            styles[op] = "hwreg"
        elif any("gpr_idx(" in t for t in full):
            styles[op] = "gpr_idx"
        elif all(texts[v] is None for v in IMM_VALUES if v):
            styles[op] = "none"
        elif len(parse(texts[0])[1]) < len(parse(texts[1])[1]):
            styles[op] = "endpgm"
        else:
            ops_ = {v: parse(t)[1][pos_of(lr)] for v, t in texts.items() if t}
            st = imm_style(ops_)
            if st is None:
                raise SystemExit("%s: unknown immediate style %r" % (lr.mnem, ops_))
            styles[op] = st
    return styles


def learn_sopk_sopp():
    forms = []
    sopk = learn_fields([SDST], enc_sopk, range(0x1D))
    for lr in sopk.values():
        positions(lr, [SDST])
    styles = learn_imm16(sopk, enc_sopk, lambda lr: {"sdst": 20},
                         pos_of=lambda lr: -1 if lr.fields["sdst"].get("pos") != 1 else 0)
    for op, lr in sorted(sopk.items()):
        lit = lr.best[2] == 2
        forms.append(dict(fmt="SOPK", op=op, mnem=lr.mnem, fields=lr.fields, imm=styles[op],
                          enc=enc_sopk, base={"sdst": 20},
                          lit=lit, template=lr.template))
    sopp = learn_fields([], enc_sopp, range(128))
    for lr in sopp.values():
        lr.template = []
    styles = learn_imm16(sopp, enc_sopp, lambda lr: {})
    for op, lr in sorted(sopp.items()):
        forms.append(dict(fmt="SOPP", op=op, mnem=lr.mnem, fields={}, imm=styles[op]))
    return forms


# ---------------------------------------------------------------------------------------------
# Scalar memory

def enc_smem(op, v):
    return [0xC0000000 | (op << 18) | (v.get("imm", 1) << 17) | (v.get("glc", 0) << 16)
            | (v.get("nv", 0) << 15) | (v.get("soe", 0) << 14) | (v.get("sdata", 0) << 6)
            | v.get("sbase", 0),
            v.get("offset", 0x24) | (v.get("soff", 0) << 25)]


SMEM_MODES = [
    ("imm", {"imm": 1, "soe": 0, "offset": 0x24, "soff": 0}),
    ("sgpr", {"imm": 0, "soe": 0, "offset": 12, "soff": 0}),
    ("soe", {"imm": 0, "soe": 1, "offset": 0, "soff": 12}),
    ("soe_imm", {"imm": 1, "soe": 1, "offset": 0x24, "soff": 12}),
]


def learn_smem():
    flds = [Field("sdata", [("0", 0), ("S", 20)]),
            Field("sbase", [("0", 0), ("S", 4)], shown=lambda v: 2 * v)]
    forms = []
    lrs = {}
    for mname, mode in SMEM_MODES:
        got = learn_fields(flds, lambda op, v: enc_smem(op, dict(mode, **v)), range(256))
        for op, lr in got.items():
            lr.mode = mname
            if op not in lrs:
                lrs[op] = {}
            lrs[op][mname] = lr
    for op, by_mode in sorted(lrs.items()):
        any_lr = next(iter(by_mode.values()))
        modes = sorted(by_mode)
        # Widths and field usage do not depend on the offset mode; take the first.
        lr = by_mode[modes[0]]
        positions(lr, flds)
        base = {k: v for k, (_, v) in lr.best[0].items()}
        mode = dict(SMEM_MODES)[modes[0]]
        bits = {}
        for b in ("glc", "nv"):
            t = oracle.disassemble([enc_smem(op, dict(mode, **dict(base, **{b: 1})))])[0][0]
            plain = lr.best[1]
            bits[b] = "bad" if invalid(t) else ("ign" if t == plain else "ok")
            sample(t)
        for m in modes:
            for _, t, _ in by_mode[m].accepted:
                sample(t)
        forms.append(dict(fmt="SMEM", op=op, mnem=any_lr.mnem, fields=lr.fields, modes=modes,
                          enc=enc_smem, base=dict(mode, **base),
                          bits=bits, template=lr.template))
    return forms


# ---------------------------------------------------------------------------------------------
# Vector ALU

def enc_vop1(op, v):
    return [0x7E000000 | (v.get("vdst", 0) << 17) | (op << 9) | v.get("src0", 0), v.get("lit", LIT)]


def enc_vop2(op, v):
    return [(op << 25) | (v.get("vdst", 0) << 17) | (v.get("vsrc1", 0) << 9) | v.get("src0", 0),
            v.get("lit", LIT)]


def enc_vopc(op, v):
    return [0x7C000000 | (op << 17) | (v.get("vsrc1", 0) << 9) | v.get("src0", 0), v.get("lit", LIT)]


def enc_vop3(op, v):
    hi = (v.get("clamp", 0) << 15) | (v.get("opsel", 0) << 11) | (v.get("abs", 0) << 8) \
        | (v.get("sdst", 0) << 8)
    return [0xD0000000 | (op << 16) | hi | v.get("vdst", 0),
            (v.get("neg", 0) << 29) | (v.get("omod", 0) << 27) | (v.get("src2", 0) << 18)
            | (v.get("src1", 0) << 9) | v.get("src0", 0)]


def enc_vop3p(op, v):
    hi = (v.get("clamp", 0) << 15) | (((v.get("opsel_hi", 7) >> 2) & 1) << 14) \
        | (v.get("opsel", 0) << 11) | (v.get("neg_hi", 0) << 8)
    return [0xD3800000 | (op << 16) | hi | v.get("vdst", 0),
            (v.get("neg", 0) << 29) | ((v.get("opsel_hi", 7) & 3) << 27) | (v.get("src2", 0) << 18)
            | (v.get("src1", 0) << 9) | v.get("src0", 0)]


def enc_mai(op, v):
    hi = (v.get("acc_cd", 0) << 15) | (v.get("abid", 0) << 11) | (v.get("cbsz", 0) << 8)
    return [0xD3800000 | (op << 16) | hi | v.get("vdst", 0),
            (v.get("blgp", 0) << 29) | (v.get("acc", 0) << 27) | (v.get("src2", 0) << 18)
            | (v.get("src1", 0) << 9) | v.get("src0", 0)]


def SRC9(name, n, c, lit=True):
    cands = [("0", 0), ("V", 256 + n), ("S", n), ("C", c)]
    return Field(name, cands + ([("L", 255)] if lit else []))


VDST = Field("vdst", [("0", 0), ("V", 32)])
VSRC1 = Field("vsrc1", [("0", 0), ("V", 16)])


def e32_facts(fmt, lrs, fields, enc):
    for lr in lrs.values():
        positions(lr, fields)
    srcs = [f.name for f in fields if f.name.startswith("src")]
    src_types(lrs, enc, srcs, lambda lr: {k: v for k, (_, v) in lr.best[0].items()})
    out = {}
    for op, lr in sorted(lrs.items()):
        for _, text, _ in lr.accepted:
            sample(text)
        # Tokens that are not a field: implicit vcc operands.
        vals, text, size = lr.best
        implicit = [i for i, t in enumerate(lr.template)
                    if t == "vcc" and not any(lr.fields[f.name].get("pos") == i for f in fields)]
        out[op] = dict(fmt=fmt, op=op, mnem=lr.mnem, fields=lr.fields, template=lr.template,
                       enc=enc, base={k: v for k, (_, v) in vals.items()},
                       implicit_vcc=implicit, klit=(size == 2 and vals["src0"][0] != "L"))
    return out


def learn_vop_e32():
    vop1 = learn_fields([VDST, SRC9("src0", 8, 129)], enc_vop1, range(256))
    vop2 = learn_fields([VDST, SRC9("src0", 8, 129), VSRC1], enc_vop2, range(0x3E))
    vopc = learn_fields([SRC9("src0", 8, 129), VSRC1], enc_vopc, range(256))
    return (e32_facts("VOP1", vop1, [VDST, SRC9("src0", 8, 129)], enc_vop1),
            e32_facts("VOP2", vop2, [VDST, SRC9("src0", 8, 129), VSRC1], enc_vop2),
            e32_facts("VOPC", vopc, [SRC9("src0", 8, 129), VSRC1], enc_vopc))


VOP3_FIELDS = [VDST, SRC9("src0", 8, 129, lit=False), SRC9("src1", 16, 130, lit=False),
               SRC9("src2", 24, 131, lit=False), Field("sdst", [("0", 0), ("S", 40)])]


def existing_ops(enc, nops, fields):
    """Opcodes LLVM accepts with at least one cheap combination (all-zero or all-register)."""
    probes, keys = [], []
    for op in range(nops):
        for pick in range(4):
            v = {}
            for f in fields:
                labels = dict(f.cands)
                if pick == 0:
                    v[f.name] = 0
                elif pick == 1:
                    v[f.name] = labels.get("V", labels.get("S", 0))
                elif pick == 2:
                    v[f.name] = labels.get("V", 0) if f.name != "sdst" else 0
                else:
                    v[f.name] = labels.get("S", 0)
            probes.append(enc(op, v))
            keys.append(op)
    res = oracle.disassemble(probes)
    return sorted({k for k, (t, _) in zip(keys, res) if t is not None})


MOD_TEXTS = {}


def mod_probe(lrs, enc, variants, base_of=None):
    base_of = base_of or (lambda lr: {k: v for k, (_, v) in lr.best[0].items()})
    res = probe_bits(lrs, enc, base_of, variants)
    out = {}
    for op, lr in lrs.items():
        MOD_TEXTS[(enc.__name__, op)] = {name: res[op][name][0] for name, _ in variants}
        d = {}
        for name, _ in variants:
            t, _ = res[op][name]
            if t is None:
                d[name] = "bad"
            elif t == lr.best[1]:
                d[name] = "ign"
            else:
                d[name] = "ok"
                sample(t)
        out[op] = d
    return out


def learn_vop3():
    ops = existing_ops(enc_vop3, 0x380, VOP3_FIELDS)
    lrs = learn_fields(VOP3_FIELDS, enc_vop3, ops)
    for lr in lrs.values():
        positions(lr, VOP3_FIELDS)
    variants = [("clamp", {"clamp": 1}), ("omod1", {"omod": 1}), ("omod2", {"omod": 2}),
                ("omod3", {"omod": 3})]
    variants += [("neg%d" % i, {"neg": 1 << i}) for i in range(3)]
    variants += [("abs%d" % i, {"abs": 1 << i}) for i in range(3)]
    variants += [("opsel%d" % i, {"opsel": 1 << i}) for i in range(4)]
    mods = mod_probe(lrs, enc_vop3, variants)
    # Inline constants: one per used source, for the type and for the samples.
    srcs = ["src0", "src1", "src2"]
    src_types(lrs, enc_vop3, srcs, lambda lr: {k: v for k, (_, v) in lr.best[0].items()})
    out = {}
    for op, lr in sorted(lrs.items()):
        for _, text, _ in lr.accepted:
            sample(text)
        texts = MOD_TEXTS[("enc_vop3", op)]
        sext = [i for i in range(3) if "sext(" in (texts.get("neg%d" % i) or "")]
        nopsel = 0
        for i in range(4):
            t = texts.get("opsel%d" % i) or ""
            mm = re.search(r"op_sel:\[([01,]*)\]", t)
            if mm and mods[op]["opsel%d" % i] == "ok":
                nopsel = len(mm.group(1).split(","))
        out[op] = dict(fmt="VOP3", op=op, mnem=lr.mnem, fields=lr.fields, mods=mods[op],
                       enc=enc_vop3, base={k: v for k, (_, v) in lr.best[0].items()},
                       template=lr.template, sext=sext, nopsel=nopsel)
    return out


VOP3P_FIELDS = [VDST, SRC9("src0", 8, 129, lit=False), SRC9("src1", 16, 130, lit=False),
                SRC9("src2", 24, 131, lit=False)]


def learn_vop3p():
    ops = existing_ops(enc_vop3p, 0x80, VOP3P_FIELDS)
    plain = learn_fields(VOP3P_FIELDS, enc_vop3p, ops)
    out = {}
    mai_ops = [op for op, lr in plain.items()
               if lr.mnem.startswith(("v_mfma", "v_smfmac", "v_accvgpr"))]
    # MAI: the acc bits pick AGPRs for A/B (acc) and for C/D (acc_cd).
    mai = {}
    for acc in range(4):
        for acc_cd in range(2):
            got = learn_fields(VOP3P_FIELDS,
                               lambda op, v: enc_mai(op, dict(v, acc=acc, acc_cd=acc_cd)), mai_ops)
            for op, lr in got.items():
                positions(lr, VOP3P_FIELDS)
                mai.setdefault(op, {})[(acc, acc_cd)] = lr
                for _, text, _ in lr.accepted:
                    sample(text)
    base_mai = {op: (mai[op].get((0, 0)) or next(iter(mai[op].values()))) for op in mai_ops}
    src_types(base_mai, enc_mai, ["src0", "src1", "src2"],
              lambda lr: {k: v for k, (_, v) in lr.best[0].items()})
    for op in mai_ops:
        by = mai[op]
        lr = base_mai[op]
        mods = {}
        base = {k: v for k, (_, v) in lr.best[0].items()}
        probes, names = [], []
        for name, extra in [("cbsz%d" % i, {"cbsz": i}) for i in range(1, 8)] + \
                           [("abid%d" % i, {"abid": i}) for i in range(1, 16)] + \
                           [("blgp%d" % i, {"blgp": i}) for i in range(1, 8)]:
            probes.append(enc_mai(op, dict(base, **extra)))
            names.append(name)
        for name, (t, _) in zip(names, oracle.disassemble(probes)):
            mods[name] = "bad" if invalid(t) else ("ign" if t == lr.best[1] else "ok")
            sample(t)
        accs = {"%d%d" % k: {f: (v["use"], v["w"], v["file"], sorted(v["cls"]))
                             for f, v in l.fields.items()} for k, l in by.items()}
        out[op] = dict(fmt="VOP3P", op=op, mnem=lr.mnem, fields=lr.fields, mai=True, accs=accs,
                       enc=enc_mai, base=base,
                       mods=mods, template=lr.template)
    rest = {op: lr for op, lr in plain.items() if op not in mai_ops}
    for lr in rest.values():
        positions(lr, VOP3P_FIELDS)
    variants = [("clamp", {"clamp": 1})]
    variants += [("opsel%d" % i, {"opsel": 1 << i}) for i in range(3)]
    variants += [("opsel_hi%d" % i, {"opsel_hi": 7 ^ (1 << i)}) for i in range(3)]
    variants += [("neg%d" % i, {"neg": 1 << i}) for i in range(3)]
    variants += [("neg_hi%d" % i, {"neg_hi": 1 << i}) for i in range(3)]
    mods = mod_probe(rest, enc_vop3p, variants)
    src_types(rest, enc_vop3p, ["src0", "src1", "src2"],
              lambda lr: {k: v for k, (_, v) in lr.best[0].items()})
    for op, lr in sorted(rest.items()):
        for _, text, _ in lr.accepted:
            sample(text)
        texts = MOD_TEXTS[("enc_vop3p", op)]
        mix = "|" in (texts.get("neg_hi0") or "")
        hi_default0 = "op_sel_hi" in lr.best[1]
        nlist = 0
        for name in ("opsel0", "opsel1", "opsel2", "neg0", "neg1", "neg2"):
            mm = re.search(r"(?:op_sel|neg_lo):\[([01,]*)\]", texts.get(name) or "")
            if mm:
                nlist = max(nlist, len(mm.group(1).split(",")))
        out[op] = dict(fmt="VOP3P", op=op, mnem=lr.mnem, fields=lr.fields, mai=False,
                       enc=enc_vop3p, base={k: v for k, (_, v) in lr.best[0].items()},
                       mods=mods[op], template=lr.template, mix=mix, hi_default0=hi_default0,
                       nlist=nlist)
    return out


# ---------------------------------------------------------------------------------------------
# Vector memory

def enc_ds(op, v):
    return [0xD8000000 | (v.get("acc", 0) << 25) | (op << 17) | (v.get("gds", 0) << 16)
            | (v.get("offset1", 0x12) << 8) | v.get("offset0", 0x34),
            (v.get("vdst", 0) << 24) | (v.get("data1", 0) << 16) | (v.get("data0", 0) << 8)
            | v.get("addr", 0)]


DS_FIELDS = [Field("vdst", [("0", 0), ("V", 32)]), Field("addr", [("0", 0), ("V", 4)]),
             Field("data0", [("0", 0), ("V", 8)]), Field("data1", [("0", 0), ("V", 16)])]


def learn_ds():
    """DS forms: fields per opcode, and which of gds / nonzero offsets it takes."""
    by = {}
    for gds in (0, 1):
        for offs in ((0, 0), (0x34, 0x12)):
            base = dict(gds=gds, offset0=offs[0], offset1=offs[1])
            enc = (lambda b: lambda op, v: enc_ds(op, dict(b, **v)))(base)
            for op, lr in learn_fields(DS_FIELDS, enc, range(256)).items():
                positions(lr, DS_FIELDS)
                lr.enc = enc
                by.setdefault(op, {})[(gds, offs[0] != 0)] = lr
    out = {}
    probes, keys = [], []
    for op, d in sorted(by.items()):
        k = sorted(d, key=lambda k: (-k[1], k[0]))[0]
        lr = d[k]
        base = {kk: v for kk, (_, v) in lr.best[0].items()}
        for name, extra in (("acc", {"acc": 1}), ("offlo", {"offset0": 0x34, "offset1": 0}),
                            ("offhi", {"offset0": 0, "offset1": 0x12})):
            probes.append(enc_ds(op, dict(base, gds=k[0], **dict({"offset0": 0x34, "offset1": 0x12}, **extra))))
            keys.append((op, name))
    res = dict(zip(keys, oracle.disassemble(probes)))
    for op, d in sorted(by.items()):
        k = sorted(d, key=lambda k: (-k[1], k[0]))[0]
        lr = d[k]
        for l in d.values():
            for _, text, _ in l.accepted:
                sample(text)
        gds = "need" if all(g for g, _ in d) else ("no" if all(not g for g, _ in d) else "ign")
        mods = {}
        for name in ("acc", "offlo", "offhi"):
            t = res[(op, name)][0]
            mods[name] = "bad" if invalid(t) else ("ign" if t == lr.best[1] else "ok")
            sample(t)
        t = lr.best[1]
        offs = "two" if "offset0:" in t else ("swizzle" if "swizzle(" in t else
                                              ("one" if "offset:" in t else "none"))
        acc_addr = False
        ta = res[(op, "acc")][0]
        if ta and lr.fields["addr"]["use"] == "used":
            pos = lr.fields["addr"]["pos"]
            acc_addr = parse(ta)[1][pos].startswith("a")
        out[op] = dict(fmt="DS", op=op, mnem=lr.mnem, fields=lr.fields, mods=mods, offs=offs,
                       gds=gds, template=lr.template, acc_addr=acc_addr)
    return out


def enc_flat(op, v):
    return [0xDC000000 | (v.get("sc1", 0) << 25) | (op << 18) | (v.get("nt", 0) << 17)
            | (v.get("sc0", 0) << 16) | (v.get("seg", 0) << 14) | (v.get("sve", 0) << 13)
            | v.get("offset", 0x10),
            (v.get("vdst", 0) << 24) | (v.get("acc", 0) << 23) | (v.get("saddr", 0) << 16)
            | (v.get("vdata", 0) << 8) | v.get("vaddr", 0)]


FLAT_FIELDS = [Field("vdst", [("0", 0), ("V", 32)]), Field("vaddr", [("0", 0), ("V", 8)]),
               Field("vdata", [("0", 0), ("V", 16)])]


def learn_flat():
    """Per segment, per saddr mode (off or SGPR), per scratch SVE and per sc0 (atomic return)."""
    out = {}
    for seg, fmt in ((0, "FLAT"), (1, "SCRATCH"), (2, "GLOBAL")):
        modes = {}
        for saddr in ((0,) if seg == 0 else (0x7F, 4)):
            for sve in ((0, 1) if seg == 1 else (0,)):
                for sc0 in (0, 1):
                    base = dict(seg=seg, saddr=saddr, sve=sve, sc0=sc0)
                    enc = (lambda b: lambda op, v: enc_flat(op, dict(b, **v)))(base)
                    got = learn_fields(FLAT_FIELDS, enc, range(128))
                    for op, lr in got.items():
                        positions(lr, FLAT_FIELDS)
                        lr.enc = enc
                        modes.setdefault(op, {})[(saddr, sve, sc0)] = lr
        variants = [("sc1", {"sc1": 1}), ("nt", {"nt": 1}), ("acc", {"acc": 1}),
                    ("lds", {"sve": 1}), ("offneg", {"offset": 0x1FFF}), ("off0", {"offset": 0})]
        probes, keys = [], []
        for op, by in sorted(modes.items()):
            lr = by[sorted(by)[0]]
            base = {k: v for k, (_, v) in lr.best[0].items()}
            for name, extra in variants:
                if name == "lds" and seg == 1:
                    continue
                probes.append(lr.enc(op, dict(base, **extra)))
                keys.append((op, name))
        res = dict(zip(keys, oracle.disassemble(probes)))
        for op, by in sorted(modes.items()):
            lr0 = next(iter(by.values()))
            for (saddr, sve, sc0), lr in by.items():
                for _, text, _ in lr.accepted:
                    sample(text)
            lr = by[sorted(by)[0]]
            mods = {}
            for name, _ in variants:
                if (op, name) not in res:
                    continue
                t = res[(op, name)][0]
                mods[name] = "bad" if invalid(t) else ("ign" if t == lr.best[1] else "ok")
                sample(t)
            by_mode = {"%s/%d/%d" % ("off" if s == 0x7F else ("s" if s == 4 else "-"), sv, c):
                       {f: (v["use"], v["w"], v["file"], v.get("pos")) for f, v in l.fields.items()}
                       for (s, sv, c), l in by.items()}
            out[(seg, op)] = dict(fmt=fmt, op=op, seg=seg, mnem=lr0.mnem, modes=by_mode, mods=mods,
                                  template=lr.template)
    return out


def enc_mubuf(op, v):
    return [0xE0000000 | (op << 18) | (v.get("nt", 0) << 17) | (v.get("lds", 0) << 16)
            | (v.get("sc1", 0) << 15) | (v.get("sc0", 0) << 14) | (v.get("idxen", 0) << 13)
            | (v.get("offen", 0) << 12) | v.get("offset", 0x10),
            (v.get("soffset", 0) << 24) | (v.get("acc", 0) << 23) | (v.get("srsrc", 0) << 16)
            | (v.get("vdata", 0) << 8) | v.get("vaddr", 0)]


MUBUF_FIELDS = [Field("vdata", [("0", 0), ("V", 16)]), Field("vaddr", [("0", 0), ("V", 8)]),
                Field("srsrc", [("0", 0), ("S", 5)], shown=lambda v: 4 * v),
                Field("soffset", [("0", 0), ("S", 12), ("C", 129)])]


def learn_mubuf():
    out = {}
    modes = {}
    for offen, idxen in ((1, 0), (0, 1), (1, 1), (0, 0)):
        for sc0 in (0, 1):
            for lds in (0, 1):
                base = dict(offen=offen, idxen=idxen, sc0=sc0, lds=lds)
                enc = (lambda b: lambda op, v: enc_mubuf(op, dict(b, **v)))(base)
                got = learn_fields(MUBUF_FIELDS, enc, range(128))
                for op, lr in got.items():
                    positions(lr, MUBUF_FIELDS)
                    lr.enc = enc
                    modes.setdefault(op, {})[(offen, idxen, sc0, lds)] = lr
    variants = [("sc1", {"sc1": 1}), ("nt", {"nt": 1}), ("acc", {"acc": 1}),
                ("off0", {"offset": 0}), ("offmax", {"offset": 0xFFF})]
    probes, keys = [], []
    for op, by in sorted(modes.items()):
        lr0 = by.get((1, 0, 0, 0)) or next(iter(by.values()))
        base = {k: v for k, (_, v) in lr0.best[0].items()}
        for name, extra in variants:
            probes.append(lr0.enc(op, dict(base, **extra)))
            keys.append((op, name))
    res = dict(zip(keys, oracle.disassemble(probes)))
    for op, by in sorted(modes.items()):
        lr0 = by.get((1, 0, 0, 0)) or next(iter(by.values()))
        for lr in by.values():
            for _, text, _ in lr.accepted:
                sample(text)
        mods = {}
        for name, _ in variants:
            t = res[(op, name)][0]
            mods[name] = "bad" if invalid(t) else ("ign" if t == lr0.best[1] else "ok")
            sample(t)
        by_mode = {"%d%d%d%d" % k: {f: (v["use"], v["w"], v["file"], v.get("pos"),
                                        sorted(v["cls"])) for f, v in l.fields.items()}
                   for k, l in by.items()}
        out[op] = dict(fmt="MUBUF", op=op, mnem=lr0.mnem, modes=by_mode, mods=mods,
                       enc=lr0.enc, base={k: v for k, (_, v) in lr0.best[0].items()},
                       template=lr0.template)
    return out


# ---------------------------------------------------------------------------------------------
# SDWA and DPP extensions of VOP1/VOP2/VOPC

def sdwa_word(v):
    return (v.get("src0", 8) | (v.get("dst_sel", 6) << 8) | (v.get("dst_unused", 0) << 11)
            | (v.get("clamp", 0) << 13) | (v.get("omod", 0) << 14) | (v.get("src0_sel", 6) << 16)
            | (v.get("src0_sext", 0) << 19) | (v.get("src0_neg", 0) << 20)
            | (v.get("src0_abs", 0) << 21) | (v.get("b22", 0) << 22) | (v.get("s0", 0) << 23)
            | (v.get("src1_sel", 6) << 24) | (v.get("src1_sext", 0) << 27)
            | (v.get("src1_neg", 0) << 28) | (v.get("src1_abs", 0) << 29) | (v.get("b30", 0) << 30)
            | (v.get("s1", 0) << 31) | (v.get("sdst_bits", 0) << 8))


def dpp_word(v):
    return (v.get("src0", 8) | (v.get("ctrl", 0xE4) << 8) | (v.get("b17", 0) << 17)
            | (v.get("bound", 0) << 19) | (v.get("src0_neg", 0) << 20) | (v.get("src0_abs", 0) << 21)
            | (v.get("src1_neg", 0) << 22) | (v.get("src1_abs", 0) << 23)
            | (v.get("bank", 0xF) << 24) | (v.get("row", 0xF) << 28))


def ext_first(fmt, op, vdst, vsrc1, src0code):
    if fmt == "VOP1":
        return 0x7E000000 | (vdst << 17) | (op << 9) | src0code
    if fmt == "VOP2":
        return (op << 25) | (vdst << 17) | (vsrc1 << 9) | src0code
    return 0x7C000000 | (op << 17) | (vsrc1 << 9) | src0code


SDWA_BASES = [dict(), dict(src1_sel=0), dict(dst_unused=2), dict(src1_sel=0, dst_unused=2),
              dict(dst_sel=0, dst_unused=0, src1_sel=0), dict(dst_sel=0, dst_unused=0)]


def learn_ext(e32):
    """e32: {fmt: {op: form}}. Returns ({(fmt, op): sdwa facts}, {(fmt, op): dpp facts})."""
    ops = [(fmt, op, f) for fmt in ("VOP1", "VOP2", "VOPC") for op, f in e32[fmt].items()]
    # Find a base SDWA word LLVM accepts for each op.
    probes, keys = [], []
    for fmt, op, f in ops:
        for i, b in enumerate(SDWA_BASES):
            if fmt == "VOPC":
                b = dict(b, dst_sel=0, dst_unused=0)
            probes.append([ext_first(fmt, op, 32, 16, 0xF9), sdwa_word(b)])
            keys.append((fmt, op, i))
    res = dict(zip(keys, oracle.disassemble(probes)))
    sdwa = {}
    base_of = {}
    for fmt, op, f in ops:
        for i, b in enumerate(SDWA_BASES):
            t = res[(fmt, op, i)][0]
            if not invalid(t):
                base_of[(fmt, op)] = (b, t)
                break
    # base_of values keep the SDWA_BASES entry (VOPC zeroes its sdst bits separately).
    variants = []
    for k in range(7):
        variants += [("dst_sel%d" % k, {"dst_sel": k}), ("src0_sel%d" % k, {"src0_sel": k}),
                     ("src1_sel%d" % k, {"src1_sel": k})]
    variants += [("dst_unused%d" % k, {"dst_unused": k}) for k in range(3)]
    variants += [("clamp", {"clamp": 1})] + [("omod%d" % k, {"omod": k}) for k in (1, 2, 3)]
    for s in ("src0", "src1"):
        variants += [(s + "_sext", {s + "_sext": 1}), (s + "_neg", {s + "_neg": 1}),
                     (s + "_abs", {s + "_abs": 1})]
    variants += [("s0", {"s0": 1, "src0": 12}), ("s0c", {"s0": 1, "src0": 129}),
                 ("s1", {"s1": 1, "vsrc1": 16}), ("s1c", {"s1": 1, "vsrc1": 130}),
                 ("b22", {"b22": 1}), ("b30", {"b30": 1}),
                 ("sd", {"sdst_bits": (1 << 7) | 40}), ("sdst_nosd", {"sdst_bits": 40})]
    probes, keys = [], []
    for (fmt, op), (b, _) in base_of.items():
        for name, extra in variants:
            v = dict(b, **extra)
            if "sdst_bits" in extra and fmt != "VOPC":
                continue
            if fmt == "VOPC":
                v["dst_sel"] = 0
                v["dst_unused"] = 0
                v.setdefault("sdst_bits", 0)
                if name.startswith(("dst_", "clamp", "omod")):
                    # For VOPC these bits are sdst/sd: probe them through the sd variants only.
                    continue
            vs1 = v.pop("vsrc1", 16)
            probes.append([ext_first(fmt, op, 32, vs1, 0xF9), sdwa_word(v)])
            keys.append((fmt, op, name))
    res = dict(zip(keys, oracle.disassemble(probes)))
    for (fmt, op), (b, t0) in base_of.items():
        d = {}
        for name, _ in variants:
            if (fmt, op, name) not in res:
                continue
            t = res[(fmt, op, name)][0]
            d[name] = "bad" if invalid(t) else ("ign" if t == t0 else "ok")
            sample(t)
        sample(t0)
        sdwa[(fmt, op)] = dict(base=b, text=t0, mods=d, base_index=SDWA_BASES.index(b))
    # DPP: which dpp_ctrl values, which modifier bits.
    probes, keys = [], []
    for fmt, op, f in ops:
        for ctrl in range(512):
            probes.append([ext_first(fmt, op, 32, 16, 0xFA), dpp_word({"ctrl": ctrl})])
            keys.append((fmt, op, ctrl))
    res = dict(zip(keys, oracle.disassemble(probes)))
    dpp = {}
    for fmt, op, f in ops:
        ok = [c for c in range(512) if not invalid(res[(fmt, op, c)][0])]
        if not ok:
            continue
        for c in (0xE4, 0x1B, 0x101, 0x111, 0x121, 0x130, 0x134, 0x138, 0x13C, 0x140, 0x141, 0x142,
                  0x143, 0x150, 0x15F):
            if c in ok:
                sample(res[(fmt, op, c)][0])
        dpp[(fmt, op)] = dict(ctrls=ok, text=res[(fmt, op, ok[0])][0], ctrl0=ok[0])
    dvariants = [("bound", {"bound": 1}), ("src0_neg", {"src0_neg": 1}), ("src0_abs", {"src0_abs": 1}),
                 ("src1_neg", {"src1_neg": 1}), ("src1_abs", {"src1_abs": 1}), ("b17", {"b17": 1}),
                 ("b18", {"b17": 2}), ("row0", {"row": 0}), ("bank0", {"bank": 0}),
                 ("rowa", {"row": 0xA}), ("bank5", {"bank": 5})]
    probes, keys = [], []
    for (fmt, op), d in dpp.items():
        for name, extra in dvariants:
            probes.append([ext_first(fmt, op, 32, 16, 0xFA), dpp_word(dict({"ctrl": d["ctrl0"]}, **extra))])
            keys.append((fmt, op, name))
    res = dict(zip(keys, oracle.disassemble(probes)))
    for (fmt, op), d in dpp.items():
        m = {}
        for name, _ in dvariants:
            t = res[(fmt, op, name)][0]
            m[name] = "bad" if invalid(t) else ("ign" if t == d["text"] else "ok")
            sample(t)
        d["mods"] = m
        d["sext"] = [i for i in range(2) if "sext(" in (res[(fmt, op, "src%d_neg" % i)][0] or "")]
    return sdwa, dpp


# ---------------------------------------------------------------------------------------------
# Rust emission

TY = {None: 0, "b32": 0, "b64": 1, "f64": 2, "f16": 3, "i16": 4, "v2f16": 5}
CLS = {"V": 1, "S": 2, "C": 4, "L": 8}
USE = {"zero": 0, "ignored": 1, "used": 2}
NOFLD = (0, 0, 0, 0)


def fld(info, vector8=False):
    """Learned field facts -> (use, width, cls bits, type)."""
    if info is None:
        return NOFLD
    u = USE[info["use"]]
    c = 0
    for label in info["cls"]:
        c |= CLS.get(label, 0)
    if info.get("file") == "a":
        c |= 16
    if vector8 and info.get("file") == "s":
        c = (c & ~1) | 2
    return (u, info["w"], c, TY[info.get("ty")])


def bits(mods, names):
    ok = ign = 0
    for i, n in enumerate(names):
        if n is None:
            continue
        v = mods.get(n, "bad")
        if v == "ok":
            ok |= 1 << i
        elif v == "ign":
            ign |= 1 << i
    return ok, ign


V3_MODS = ["clamp", "omod1", "omod2", "omod3", "neg0", "neg1", "neg2", "abs0", "abs1", "abs2",
           "opsel0", "opsel1", "opsel2", "opsel3"]
P_MODS = ["clamp", "opsel0", "opsel1", "opsel2", "opsel_hi0", "opsel_hi1", "opsel_hi2",
          "neg0", "neg1", "neg2", "neg_hi0", "neg_hi1", "neg_hi2"]
MAI_MODS = ["cbsz%d" % i for i in range(1, 8)] + ["abid%d" % i for i in range(1, 16)] + \
    ["blgp%d" % i for i in range(1, 8)]
SDWA_MODS = (["dst_sel%d" % i for i in range(7)] + ["src0_sel%d" % i for i in range(7)]
             + ["src1_sel%d" % i for i in range(7)] + ["dst_unused%d" % i for i in range(3)]
             + ["clamp", "omod1", "omod2", "omod3", "src0_sext", "src0_neg", "src0_abs",
                "src1_sext", "src1_neg", "src1_abs", "s0", "s0c", "s1", "s1c", "sd", "b22", "b30"])
DPP_MODS = ["bound", "src0_neg", "src0_abs", "src1_neg", "src1_abs"]
SMEM_MODS = ["glc", "nv"]
DS_MODS = ["acc", "offlo", "offhi"]
FLAT_MODS = ["sc1", "nt", "acc", "lds", "offneg"]
BUF_MODS = ["sc1", "nt", "acc", "offmax"]
IMM_STYLES = {"none": 0, "endpgm": 1, "hex": 2, "dec": 3, "imm": 4, "waitcnt": 5, "sendmsg": 6,
              "hwreg": 7, "gpr_idx": 8}
TIED = re.compile(r"^v_(mac|fmac|pk_fmac|dot\dc)_")


def base_name(mnem):
    for suf in ("_e32", "_e64", "_sdwa", "_dpp"):
        if mnem.endswith(suf):
            return mnem[: -len(suf)]
    return mnem


def variant(name):
    return "".join(p[:1].upper() + p[1:] for p in name.split("_"))


def build_forms():
    forms = []  # (table, index, dict)

    learned = {}  # (table, op) -> (encode, base values, {slot: (field name, scale)})

    def add(table, idx, mnem, f, ok=0, ign=0, x=0):
        f = list(f) + [NOFLD] * (5 - len(f))
        forms.append((table, idx, dict(mnem=mnem, base=base_name(mnem), f=f, ok=ok, ign=ign, x=x)))

    def remember(table, fm, slots):
        learned[(table, fm["op"])] = (fm["enc"], fm["base"], slots)

    for fm in learn_scalar():
        F = fm["fields"]
        x = 0
        if fm["mnem"] == "s_set_gpr_idx_on":
            x = 1
            F["ssrc1"] = dict(use="ignored", w=0, cls=set())
        if fm["fmt"] == "SOPC":
            add("SOPC", fm["op"], fm["mnem"], [NOFLD, fld(F["ssrc0"]), fld(F["ssrc1"])], x=x)
            remember("SOPC", fm, {1: ("ssrc0", 1), 2: ("ssrc1", 1)})
        elif fm["fmt"] == "SOP1":
            add("SOP1", fm["op"], fm["mnem"], [fld(F["sdst"]), fld(F["ssrc0"])], x=x)
            remember("SOP1", fm, {0: ("sdst", 1), 1: ("ssrc0", 1)})
        else:
            add("SOP2", fm["op"], fm["mnem"], [fld(F["sdst"]), fld(F["ssrc0"]), fld(F["ssrc1"])], x=x)
            remember("SOP2", fm, {0: ("sdst", 1), 1: ("ssrc0", 1), 2: ("ssrc1", 1)})
    for fm in learn_sopk_sopp():
        x = IMM_STYLES[fm["imm"]]
        if fm["fmt"] == "SOPK":
            if fm["lit"]:
                x |= 1 << 8
            if fm["fields"]["sdst"].get("pos") == 1:
                x |= 1 << 9
            add("SOPK", fm["op"], fm["mnem"], [fld(fm["fields"]["sdst"])], x=x)
            remember("SOPK", fm, {0: ("sdst", 1)})
        else:
            add("SOPP", fm["op"], fm["mnem"], [], x=x)
    for fm in learn_smem():
        x = 0
        for i, m in enumerate(("imm", "sgpr", "soe", "soe_imm")):
            if m in fm["modes"]:
                x |= 1 << i
        F = fm["fields"]
        if fm["template"] and re.match(r"^\d+$", fm["template"][0]):
            x |= 16
            F["sdata"] = dict(use="used", w=1, cls={"C"})
        ok, ign = bits(fm["bits"], SMEM_MODS)
        add("SMEM", fm["op"], fm["mnem"], [fld(F["sdata"]), fld(F["sbase"])], ok, ign, x)
        remember("SMEM", fm, {0: ("sdata", 1), 1: ("sbase", 2)})

    v1, v2, vc = learn_vop_e32()
    e32 = {"VOP1": v1, "VOP2": v2, "VOPC": vc}
    for fmt, d in e32.items():
        for op, fm in d.items():
            F = fm["fields"]
            x = 0
            imp = fm["implicit_vcc"]
            tmpl = fm["template"]
            if fmt == "VOPC" and 0 in imp:
                x |= 4
            if fmt == "VOP2":
                if 1 in imp:
                    x |= 1
                if any(i > 1 for i in imp):
                    x |= 2
                if fm["klit"]:
                    x |= 8 if F["vsrc1"]["pos"] == 3 else 16
            if TIED.match(fm["mnem"]):
                x |= 32
            if fmt == "VOPC":
                f = [NOFLD, fld(F["src0"]), fld(F["vsrc1"])]
            elif fmt == "VOP1":
                f = [fld(F["vdst"], True), fld(F["src0"])]
            else:
                f = [fld(F["vdst"], True), fld(F["src0"]), fld(F["vsrc1"])]
            add(fmt, op, fm["mnem"], f, x=x)
            remember(fmt, fm, {0: ("vdst", 1), 1: ("src0", 1)})
    for op, fm in learn_vop3().items():
        F = fm["fields"]
        ok, ign = bits(fm["mods"], V3_MODS)
        x = 32 if TIED.match(fm["mnem"]) else 0
        for i in fm["sext"]:
            x |= 1 << (8 + i)
        x |= fm["nopsel"] << 11
        add("VOP3", op, fm["mnem"], [fld(F["vdst"], True), fld(F["src0"]), fld(F["src1"]),
                                     fld(F["src2"]), fld(F["sdst"])], ok, ign, x)
        remember("VOP3", fm, {0: ("vdst", 1), 1: ("src0", 1), 2: ("src1", 1), 3: ("src2", 1),
                              4: ("sdst", 1)})
    for op, fm in learn_vop3p().items():
        F = fm["fields"]
        if fm["mai"]:
            ok, ign = bits(fm["mods"], MAI_MODS)
            x = 1
            a = fm["accs"]
            if a["10"]["src0"][2] == "a" and a["00"]["src0"][2] == "v":
                x |= 2
            if a["20"]["src1"][2] == "a" and a["00"]["src1"][2] == "v":
                x |= 4
            if a["01"]["vdst"][2] == "a" and a["00"]["vdst"][2] == "v":
                x |= 8
            if a["01"]["src2"][2] == "a" and a["00"]["src2"][2] == "v":
                x |= 16
        else:
            ok, ign = bits(fm["mods"], P_MODS)
            x = (32 if fm["mix"] else 0) | (64 if fm["hi_default0"] else 0) | (fm["nlist"] << 8)
        add("VOP3P", op, fm["mnem"], [fld(F["vdst"], True), fld(F["src0"]), fld(F["src1"]),
                                      fld(F["src2"])], ok, ign, x)
        remember("VOP3P", fm, {1: ("src0", 1), 2: ("src1", 1), 3: ("src2", 1)})
    sdwa, dpp = learn_ext(e32)
    ctrl_classes = []
    vop3_of = {"VOP1": 0x140, "VOP2": 0x100, "VOPC": 0}
    by_key = {(t, i): fm for (t, i, fm) in forms}
    for (fmt, op), s in sdwa.items():
        base = dict(by_key[(fmt, op)])
        # Constants in SDWA sources print with the operand types of the op's VOP3 form.
        v3 = by_key.get(("VOP3", vop3_of[fmt] + op))
        if v3:
            f = list(base["f"])
            for slot in (1, 2):
                if f[slot][0] == 2 and v3["f"][slot][0] == 2:
                    f[slot] = tuple(f[slot][:3]) + (v3["f"][slot][3],) + tuple(f[slot][4:])
            base["f"] = f
        ok, ign = bits(s["mods"], SDWA_MODS)
        mn = parse(s["text"])[0]
        no_dst = 0 if ("dst_sel:" in s["text"] or fmt == "VOPC") else 1 << 16
        add("SDWA" + fmt[3:], op, mn, base["f"], ok, ign, base["x"] | (s["base_index"] << 8) | no_dst)
    for (fmt, op), d in dpp.items():
        base = [fm for (t, i, fm) in forms if t == fmt and i == op][0]
        ok, ign = bits(d["mods"], DPP_MODS)
        ctrls = tuple(d["ctrls"])
        if ctrls not in ctrl_classes:
            ctrl_classes.append(ctrls)
        mn = parse(d["text"])[0]
        # Ignored reserved bits 17/18 are accepted by LLVM: remember them as ignorable.
        if d["mods"].get("b17") == "ign" and d["mods"].get("b18") == "ign":
            ign |= 1 << 5
        sext = sum(1 << (16 + i) for i in d["sext"])
        add("DPP" + fmt[3:], op, mn, base["f"], ok, ign,
            base["x"] | (ctrl_classes.index(ctrls) << 8) | sext)
    for op, fm in learn_ds().items():
        F = fm["fields"]
        ok, ign = bits(fm["mods"], DS_MODS)
        x = {"none": 0, "one": 1, "two": 2, "swizzle": 3}[fm["offs"]]
        x |= {"need": 4, "ign": 8, "no": 0}[fm["gds"]]
        if fm["acc_addr"]:
            x |= 16
        add("DS", op, fm["mnem"], [fld(F["vdst"]), fld(F["addr"]), fld(F["data0"]), fld(F["data1"])],
            ok, ign, x)
    for (seg, op), fm in learn_flat().items():
        modes = fm["modes"]
        table = fm["fmt"]
        # vdst: always an operand, never, or only for returning atomics (sc0 set).
        def m(key):
            return modes.get(key)
        keys0 = [k for k in modes if k.endswith("/0")]
        keys1 = [k for k in modes if k.endswith("/1")]
        v0 = {modes[k]["vdst"][0] for k in keys0}
        v1 = {modes[k]["vdst"][0] for k in keys1}
        x = 0
        if v0 == {"used"}:
            x = 1
        elif v1 == {"used"} and v0 == {"ignored"}:
            x = 2
        any_mode = modes[sorted(modes)[0]]
        vdst = any_mode["vdst"] if x != 2 else modes[keys1[0]]["vdst"]
        vdata = any_mode["vdata"]
        if table == "SCRATCH":
            va = modes.get("off/1/0") or modes.get("off/1/1")
            vaddr = va["vaddr"]
        elif table == "GLOBAL":
            vaddr = (modes.get("off/0/0") or modes.get("off/0/1"))["vaddr"]
        else:
            vaddr = any_mode["vaddr"]

        def t(info):
            return dict(use=info[0], w=info[1], cls={"V"} if info[0] == "used" else set(), file=info[2])
        ok, ign = bits(fm["mods"], FLAT_MODS)
        add(table, op, fm["mnem"], [fld(t(vdst)), fld(t(vaddr)), fld(t(vdata))], ok, ign, x)
    for op, fm in learn_mubuf().items():
        modes = fm["modes"]
        x = 0
        if any(k[3] == "1" for k in modes):
            x |= 1
        if all(k[3] == "1" for k in modes):
            x |= 2
        any_mode = modes[sorted(modes)[0]]
        if all(v[0] == "ignored" for v in any_mode.values()):
            x |= 4
        if not any(k[2] == "1" for k in modes):
            x |= 8

        def t(info, file="v"):
            return dict(use=info[0], w=info[1], cls=set(info[4]), file=info[2] or file)
        key = "1000" if "1000" in modes else sorted(modes)[0]
        mm = modes[key]
        ok, ign = bits(fm["mods"], BUF_MODS)
        add("MUBUF", op, fm["mnem"], [fld(t(mm["vdata"])), fld(t(mm["vaddr"])), fld(t(mm["srsrc"])),
                                      fld(t(mm["soffset"]))], ok, ign, x)
        remember("MUBUF", fm, {2: ("srsrc", 4), 3: ("soffset", 1)})
    special_sregs(forms, learned)
    return forms, ctrl_classes


def special_sregs(forms, learned):
    """Which scalar codes 96..=127 and which special codes 235..=255 each field accepts.

    Below 96 an SGPR is valid whenever it is aligned for its width; above, acceptance depends
    on the register class (SMEM data excludes m0 and exec, quads stop at s103, ...), and LLVM
    takes the hardware values (null, apertures, vccz, execz, scc) in many fields that hold no
    scalar register otherwise. Bit n of the mask is code 96 + n for n < 32 and 235 + n - 32
    above.
    """
    codes = list(range(96, 128)) + list(range(235, 256))
    probes, keys = [], []
    for i, (table, op, fm) in enumerate(forms):
        if (table, op) not in learned:
            continue
        enc, base, slots = learned[(table, op)]
        for slot, (name, scale) in slots.items():
            u, w, c, t = fm["f"][slot][:4]
            if u != 2:
                continue
            nine_bit = name.startswith("src") and table not in ("SOP1", "SOP2", "SOPC")
            eight_bit = name in ("ssrc0", "ssrc1", "soffset") or nine_bit or \
                (name == "vdst" and c & 2)
            if not (c & 2) and not nine_bit:
                continue
            for code in codes:
                if code >= 128 and not eight_bit:
                    continue
                if code % scale or code == 255:
                    continue
                v = dict(base)
                v[name] = code // scale
                probes.append(enc(op, v))
                keys.append((i, slot, code))
    res = oracle.disassemble(probes)
    masks = {}
    for (i, slot, code), (t, _) in zip(keys, res):
        masks.setdefault((i, slot), 0)
        if not invalid(t):
            bit = code - 96 if code < 128 else 32 + code - 235
            masks[(i, slot)] |= 1 << bit
    for (i, slot), mask in masks.items():
        fm = forms[i][2]
        u, w, c, t = fm["f"][slot][:4]
        fm["f"][slot] = (u, w, c, t, mask)


TABLES = [("SOP1", 256), ("SOP2", 128), ("SOPK", 32), ("SOPC", 128), ("SOPP", 128), ("SMEM", 256),
          ("VOP1", 256), ("VOP2", 64), ("VOPC", 256), ("VOP3", 1024), ("VOP3P", 128),
          ("SDWA1", 256), ("SDWA2", 64), ("SDWAC", 256), ("DPP1", 256), ("DPP2", 64), ("DPPC", 256),
          ("DS", 256), ("FLAT", 128), ("GLOBAL", 128), ("SCRATCH", 128), ("MUBUF", 128)]


def emit(forms, ctrl_classes):
    names = []
    for _, _, fm in forms:
        if fm["base"] not in names:
            names.append(fm["base"])
    variants = [variant(n) for n in names]
    assert len(set(variants)) == len(variants), "two mnemonics map to one Op variant"
    idx = {n: i for i, n in enumerate(names)}
    out = []
    w = out.append
    w("// @generated by emu/tools/gen_isa.py from llvm-objdump-19 --mcpu=gfx942. Do not edit.")
    w("// Regenerate with `python3 emu/tools/gen_isa.py` (needs llvm-mc-19 and llvm-objdump-19).")
    w("")
    w("use super::form::{Fld, Form};")
    pass
    w("")
    w("/// Every gfx942 mnemonic, indexed by `Op as usize`.")
    w("pub(crate) static OP_NAMES: [&str; %d] = [" % len(names))
    for n in names:
        w('    "%s",' % n)
    w("];")
    w("")
    w("/// One variant per gfx942 mnemonic (LLVM's spelling, encoding suffix dropped, CamelCase).")
    w("///")
    w("/// Each variant's mnemonic is `Op::name()`; the variants need no further documentation.")
    w("#[allow(missing_docs)]")
    w("#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]")
    w("#[repr(u16)]")
    w("pub enum Op {")
    for v in variants:
        w("    %s," % v)
    w("}")
    w("")
    w("/// All ops, indexed by `Op as usize`.")
    w("pub(crate) static ALL_OPS: [Op; %d] = [" % len(names))
    for v in variants:
        w("    Op::%s," % v)
    w("];")
    w("")
    w("const fn f(u: u8, w: u8, c: u8, t: u8, sx: u64) -> Fld {")
    w("    Fld::new(u, w, c, t, sx)")
    w("}")
    w("")
    w("/// Every form of every encoding; the per-encoding tables below index into it.")
    w("pub(crate) static FORMS: [Form; %d] = [" % len(forms))
    order = {}
    for i, (table, op, fm) in enumerate(forms):
        order[(table, op)] = i
        fs = ", ".join("f(%d, %d, %d, %d, %#x)" % (tuple(x) + ((0x1F_FFFF_FFFF_FFFF,) if len(x) == 4 else ()))
                       for x in fm["f"])
        w('    Form { op: Op::%s, mnem: "%s", f: [%s], ok: %#x, ign: %#x, x: %#x }, // %s %#x'
          % (variant(fm["base"]), fm["mnem"], fs, fm["ok"], fm["ign"], fm["x"], table, op))
    w("];")
    w("")
    w("/// No form at this opcode.")
    w("pub(crate) const NO_FORM: u16 = u16::MAX;")
    for table, size in TABLES:
        w("")
        w("/// %s opcode -> index into FORMS." % table)
        w("pub(crate) static T_%s: [u16; %d] = [" % (table, size))
        row = []
        for op in range(size):
            row.append(str(order[(table, op)]) if (table, op) in order else "NO_FORM")
        for i in range(0, size, 8):
            w("    " + ", ".join(row[i:i + 8]) + ",")
        w("];")
    w("")
    w("/// Accepted dpp_ctrl values per DPP control class (bit n of word n/64).")
    w("pub(crate) static DPP_CTRLS: [[u64; 8]; %d] = [" % len(ctrl_classes))
    for ctrls in ctrl_classes:
        words = [0] * 8
        for c in ctrls:
            words[c // 64] |= 1 << (c % 64)
        w("    [" + ", ".join("%#x" % x for x in words) + "],")
    w("];")
    return "\n".join(out) + "\n"


def learn_hwreg_names():
    probes = [[0xB0000000 | (0x11 << 23) | (20 << 16) | i | (31 << 11)] for i in range(64)]
    names = {}
    for i, (t, _) in enumerate(oracle.disassemble(probes)):
        m = re.search(r"hwreg\(([A-Z_0-9]+)\)", t or "")
        if m:
            names[i] = m.group(1)
    return names


ENC_SLOTS = {"SOP1": 0, "SOP2": 1, "SOPK": 2, "SOPC": 3, "SOPP": 4, "SMEM": 5, "VOP1": 6, "VOP2": 7,
             "VOPC": 8, "VOP3": 9, "VOP3P": 10, "SDWA1": 11, "SDWA2": 11, "SDWAC": 11, "DPP1": 12,
             "DPP2": 12, "DPPC": 12, "DS": 13, "FLAT": 14, "GLOBAL": 15, "SCRATCH": 16, "MUBUF": 17}


def emit_reverse(forms):
    """Op x encoding slot -> form index, for the printer (an Inst knows its Op and Enc)."""
    names = []
    for _, _, fm in forms:
        if fm["base"] not in names:
            names.append(fm["base"])
    rev = [["NO_FORM"] * 18 for _ in names]
    for i, (table, op, fm) in enumerate(forms):
        slot = ENC_SLOTS[table]
        row = rev[names.index(fm["base"])]
        if row[slot] != "NO_FORM":
            raise SystemExit("%s appears twice in encoding %s" % (fm["base"], table))
        row[slot] = str(i)
    out = ["", "/// Op -> form index per encoding slot (see `Form` lookup in disasm.rs).",
           "pub(crate) static OP_FORMS: [[u16; 18]; %d] = [" % len(names)]
    for r in rev:
        out.append("    [" + ", ".join(r) + "],")
    out.append("];")
    return "\n".join(out) + "\n"


def learn_sendmsg():
    probes = [[0xBF800000 | (0x10 << 16) | v] for v in range(1024)]
    res = oracle.disassemble(probes)
    out = []
    for v, (t, _) in enumerate(res):
        arg = t.split(" ", 1)[1]
        out.append(arg if arg.startswith("sendmsg(") and not re.match(r"sendmsg\(\d", arg) else None)
    return out


def main():
    forms, ctrl_classes = build_forms()
    text = emit(forms, ctrl_classes)
    text += emit_reverse(forms)
    sm = learn_sendmsg()
    text += "\n/// Symbolic s_sendmsg operands by the low 10 bits of simm16 (None: printed numerically).\n"
    text += "pub(crate) static SENDMSG: [Option<&str>; 1024] = [\n"
    for s in sm:
        text += ("    Some(\"%s\"),\n" % s) if s else "    None,\n"
    text += "];\n"
    hw = learn_hwreg_names()
    text += "\n/// Symbolic hwreg names LLVM prints, by register id.\n"
    text += "pub(crate) static HWREG_NAMES: [(u16, &str); %d] = [\n" % len(hw)
    for k, v in sorted(hw.items()):
        text += '    (%d, "%s"),\n' % (k, v)
    text += "];\n"
    with open(os.path.join(EMU, "src", "isa", "tables.rs"), "w") as f:
        f.write(text)
    # One sample per operand shape (register numbers aside): enough to cover every form and
    # modifier while keeping the round-trip test to a few seconds.
    seen = set()
    per = {}
    lines = []
    for s in SAMPLES:
        mn, _, rest = s.partition(" ")
        key = mn + " " + re.sub(r"\d+", "#", rest)
        if key in seen or per.get(mn, 0) >= 64:
            continue
        seen.add(key)
        per[mn] = per.get(mn, 0) + 1
        lines.append(s)
    os.makedirs(os.path.join(EMU, "tests", "fixtures"), exist_ok=True)
    with open(os.path.join(EMU, "tests", "fixtures", "samples.s"), "w") as f:
        f.write("// @generated by emu/tools/gen_isa.py: one gfx942 instruction per line, as LLVM prints it.\n")
        f.write("\n".join(lines) + "\n")
    print("forms: %d, samples: %d" % (len(forms), len(lines)))


if __name__ == "__main__":
    main()
