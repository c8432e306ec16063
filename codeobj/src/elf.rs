//! The parts of ELF64 an AMDGPU code object needs: header, program and section headers, symbols,
//! notes. Every read is bounds-checked and every offset, size and address from the file is added
//! and multiplied with checked arithmetic; malformed input is a [`CodeObjectError`], never a
//! panic, and the work done is linear in the input (symbol names are looked up through a hash
//! index, not by a scan per lookup).

use super::CodeObjectError;
use std::collections::HashMap;

/// `e_machine` of AMDGPU code objects.
pub const EM_AMDGPU: u16 = 0xE0;
/// `EI_OSABI` of code objects for the HSA runtime.
pub const ELFOSABI_AMDGPU_HSA: u8 = 64;
/// `e_flags` bits holding the target ("mach") id.
pub const EF_AMDGPU_MACH: u32 = 0xff;

const PT_LOAD: u32 = 1;
const PT_NOTE: u32 = 4;
/// `SHF_EXECINSTR`: a section of instructions.
pub const SHF_EXECINSTR: u64 = 4;
/// `SHT_NOBITS`: a section without file bytes (`.bss`).
pub const SHT_NOBITS: u32 = 8;
/// `SHT_PROGBITS`: a section of program bytes (code, data).
pub const SHT_PROGBITS: u32 = 1;
const SHT_SYMTAB: u32 = 2;
const SHT_NOTE: u32 = 7;
const SHT_DYNSYM: u32 = 11;
const SHT_RELA: u32 = 4;
/// `p_flags` bit of an executable segment.
pub const PF_X: u32 = 1;

/// Little-endian reads with bounds checks, naming what was being read when they fail.
pub(crate) struct Reader<'a> {
    pub bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn slice(&self, off: u64, len: u64, what: &'static str) -> Result<&'a [u8], CodeObjectError> {
        // An end past 2^64 is a corrupt offset or size, not a short file: say so rather than
        // claim the input "needs 18446744073709551615 bytes".
        let end = add(off, len, what)?;
        if end > self.bytes.len() as u64 {
            return Err(CodeObjectError::Truncated { what, need: end, have: self.bytes.len() as u64 });
        }
        Ok(&self.bytes[off as usize..end as usize])
    }
    pub fn u16(&self, off: u64, what: &'static str) -> Result<u16, CodeObjectError> {
        Ok(u16::from_le_bytes(self.slice(off, 2, what)?.try_into().expect("2 bytes")))
    }
    pub fn u32(&self, off: u64, what: &'static str) -> Result<u32, CodeObjectError> {
        Ok(u32::from_le_bytes(self.slice(off, 4, what)?.try_into().expect("4 bytes")))
    }
    pub fn u64(&self, off: u64, what: &'static str) -> Result<u64, CodeObjectError> {
        Ok(u64::from_le_bytes(self.slice(off, 8, what)?.try_into().expect("8 bytes")))
    }
}

/// `a + b` for two values read from the file, or [`CodeObjectError::Malformed`] naming `what`.
pub(crate) fn add(a: u64, b: u64, what: &str) -> Result<u64, CodeObjectError> {
    a.checked_add(b).ok_or_else(|| CodeObjectError::Malformed(format!("{what}: {a:#x} + {b:#x} overflows 64 bits")))
}

/// Bytes of symbol entries, relocations, names and notes a parse may go through, as a multiple
/// of the input's size. Tables and strings may overlap in a file (a linker merges string tails;
/// a corrupt one can point a thousand section headers at the same symbol table, or every symbol
/// at a different offset of one long string), so work proportional to the *declared* structure
/// can be quadratic in the input. An honest code object goes through each byte about once or
/// twice (`.symtab` and `.dynsym` name the same symbols); past this budget it is refused.
const WORK_PER_INPUT_BYTE: u64 = 4;
/// Work allowed on top of the per-byte budget, so tiny files are not refused for their headers.
const WORK_BASE: u64 = 1 << 20;

/// The remaining work budget of one parse.
struct Budget {
    left: u64,
}

impl Budget {
    fn for_input(len: usize) -> Budget {
        Budget { left: (len as u64).saturating_mul(WORK_PER_INPUT_BYTE).saturating_add(WORK_BASE) }
    }

    fn charge(&mut self, bytes: u64, what: &str) -> Result<(), CodeObjectError> {
        self.left = self.left.checked_sub(bytes).ok_or_else(|| {
            CodeObjectError::Malformed(format!(
                "{what}: the file's tables, names and notes add up to more than {WORK_PER_INPUT_BYTE}x its size (overlapping tables?)"
            ))
        })?;
        Ok(())
    }
}

/// The file offset of entry `index` of a table at `base` with `entry`-byte entries.
fn table_entry(base: u64, index: u64, entry: u64, what: &str) -> Result<u64, CodeObjectError> {
    index
        .checked_mul(entry)
        .and_then(|o| base.checked_add(o))
        .ok_or_else(|| CodeObjectError::Malformed(format!("{what}: entry {index} of {entry} bytes at {base:#x} overflows 64 bits")))
}

/// One loadable segment (what the runtime copies into device memory). `vaddr + mem_size` does
/// not overflow (checked when parsed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Virtual address relative to the load base.
    pub vaddr: u64,
    /// Bytes present in the file.
    pub file_offset: u64,
    /// Bytes taken from the file.
    pub file_size: u64,
    /// Bytes in memory (the rest after `file_size` is zero).
    pub mem_size: u64,
    /// `p_flags` (`PF_X` 1, `PF_W` 2, `PF_R` 4).
    pub flags: u32,
}

impl Segment {
    /// True for a segment holding code (`PF_X`).
    pub fn executable(&self) -> bool {
        self.flags & PF_X != 0
    }

    /// True when `[vaddr, vaddr + len)` lies in the bytes the file supplies for this segment.
    pub fn holds(&self, vaddr: u64, len: u64) -> bool {
        vaddr >= self.vaddr && vaddr.checked_add(len).is_some_and(|end| end <= self.vaddr + self.file_size)
    }
}

/// A section header, with its name resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Section {
    /// Name from the section string table.
    pub name: String,
    /// `sh_type`.
    pub kind: u32,
    /// `sh_flags` (`SHF_EXECINSTR` 4: code).
    pub flags: u64,
    /// `sh_addr`.
    pub addr: u64,
    /// `sh_offset`.
    pub offset: u64,
    /// `sh_size`.
    pub size: u64,
    /// `sh_link`.
    pub link: u32,
    /// `sh_entsize`.
    pub entsize: u64,
}

/// A symbol from `.symtab` or `.dynsym`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Symbol {
    /// The symbol's name.
    pub name: String,
    /// `st_value`: a virtual address for defined symbols.
    pub value: u64,
    /// `st_size`.
    pub size: u64,
    /// `st_info & 0xf`: 0 no type (assembler labels), 1 object, 2 function.
    pub kind: u8,
    /// `st_info >> 4`: 0 local, 1 global, 2 weak.
    pub bind: u8,
    /// `st_shndx`: the index of the section the symbol is defined in (0: undefined; 0xfff1
    /// absolute).
    pub section: u16,
}

/// `STT_NOTYPE`: a symbol without a type, as assemblers make of labels.
pub const STT_NOTYPE: u8 = 0;
/// `STT_FUNC`: a function (a kernel's code).
pub const STT_FUNC: u8 = 2;
/// `STT_SECTION`: a section's own symbol.
pub const STT_SECTION: u8 = 3;
/// `STT_FILE`: a source file name.
pub const STT_FILE: u8 = 4;

/// A dynamic relocation with an addend (`.rela.dyn`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Relocation {
    /// The address patched.
    pub offset: u64,
    /// `ELF64_R_TYPE`.
    pub kind: u32,
    /// The symbol index (`ELF64_R_SYM`).
    pub symbol: u32,
    /// The addend.
    pub addend: i64,
}

/// A parsed ELF64 little-endian file.
#[derive(Clone, Debug)]
pub struct Elf {
    /// `e_ident[EI_OSABI]`.
    pub os_abi: u8,
    /// `e_ident[EI_ABIVERSION]`: 2 = code object v4, 3 = v5, 4 = v6.
    pub abi_version: u8,
    /// `e_machine`.
    pub machine: u16,
    /// `e_flags`.
    pub flags: u32,
    /// Loadable segments.
    pub segments: Vec<Segment>,
    /// Sections.
    pub sections: Vec<Section>,
    /// Symbols of `.symtab` and `.dynsym` (duplicates merged by name).
    pub symbols: Vec<Symbol>,
    /// Note payloads: (owner name, type, descriptor bytes).
    pub notes: Vec<(String, u32, Vec<u8>)>,
    /// Dynamic relocations.
    pub relocations: Vec<Relocation>,
    /// Index into `symbols` by name.
    by_name: HashMap<String, usize>,
}

impl Elf {
    /// Parses the headers, sections, symbols and notes of `bytes`.
    pub fn parse(bytes: &[u8]) -> Result<Elf, CodeObjectError> {
        let r = Reader { bytes };
        let ident = r.slice(0, 16, "ELF identification")?;
        if &ident[0..4] != b"\x7fELF" {
            return Err(CodeObjectError::NotElf);
        }
        if ident[4] != 2 {
            return Err(CodeObjectError::NotElf64 { class: ident[4] });
        }
        if ident[5] != 1 {
            return Err(CodeObjectError::NotLittleEndian);
        }
        let os_abi = ident[7];
        let abi_version = ident[8];
        let machine = r.u16(18, "ELF header")?;
        let flags = r.u32(48, "ELF header")?;
        let phoff = r.u64(32, "ELF header")?;
        let shoff = r.u64(40, "ELF header")?;
        let phentsize = r.u16(54, "ELF header")? as u64;
        let phnum = r.u16(56, "ELF header")? as u64;
        let shentsize = r.u16(58, "ELF header")? as u64;
        let shnum = r.u16(60, "ELF header")? as u64;
        let shstrndx = r.u16(62, "ELF header")? as u64;
        if phnum > 0 && phentsize < 56 {
            return Err(CodeObjectError::Malformed(format!("program header entry size {phentsize}")));
        }
        if shnum > 0 && shentsize < 64 {
            return Err(CodeObjectError::Malformed(format!("section header entry size {shentsize}")));
        }

        let mut budget = Budget::for_input(bytes.len());
        let mut segments = Vec::new();
        let mut notes = Vec::new();
        for i in 0..phnum {
            let h = table_entry(phoff, i, phentsize, "program header table")?;
            // In bounds after this, so h + 40 cannot overflow.
            r.slice(h, 56, "program header table")?;
            let kind = r.u32(h, "program header")?;
            let flags = r.u32(h + 4, "program header")?;
            let offset = r.u64(h + 8, "program header")?;
            let vaddr = r.u64(h + 16, "program header")?;
            let filesz = r.u64(h + 32, "program header")?;
            let memsz = r.u64(h + 40, "program header")?;
            match kind {
                PT_LOAD => {
                    r.slice(offset, filesz, "loadable segment")?;
                    if memsz < filesz {
                        return Err(CodeObjectError::Malformed(format!("segment at {vaddr:#x}: memory size {memsz} < file size {filesz}")));
                    }
                    add(vaddr, memsz, "loadable segment's address range")?;
                    segments.push(Segment { vaddr, file_offset: offset, file_size: filesz, mem_size: memsz, flags });
                }
                PT_NOTE => parse_notes(r.slice(offset, filesz, "note segment")?, &mut notes, &mut budget)?,
                _ => {}
            }
        }

        let mut raw_sections = Vec::new();
        for i in 0..shnum {
            let h = table_entry(shoff, i, shentsize, "section header table")?;
            r.slice(h, 64, "section header table")?;
            raw_sections.push((
                r.u32(h, "section header")?,
                Section {
                    name: String::new(),
                    kind: r.u32(h + 4, "section header")?,
                    flags: r.u64(h + 8, "section header")?,
                    addr: r.u64(h + 16, "section header")?,
                    offset: r.u64(h + 24, "section header")?,
                    size: r.u64(h + 32, "section header")?,
                    link: r.u32(h + 40, "section header")?,
                    entsize: r.u64(h + 56, "section header")?,
                },
            ));
        }
        let mut sections = Vec::with_capacity(raw_sections.len());
        let shstr = raw_sections.get(shstrndx as usize).map(|(_, s)| s.clone());
        for (name_off, mut s) in raw_sections {
            if let Some(strtab) = &shstr {
                s.name = read_str(&r, strtab, name_off as u64, &mut budget)?;
            }
            sections.push(s);
        }

        let mut symbols: Vec<Symbol> = Vec::new();
        let mut by_name: HashMap<String, usize> = HashMap::new();
        let mut relocations = Vec::new();
        for s in &sections {
            match s.kind {
                SHT_SYMTAB | SHT_DYNSYM => {
                    let strtab = sections
                        .get(s.link as usize)
                        .ok_or_else(|| CodeObjectError::Malformed(format!("symbol table {} has no string table", s.name)))?;
                    let data = r.slice(s.offset, s.size, "symbol table")?;
                    budget.charge(data.len() as u64, "symbol table")?;
                    for e in data.chunks_exact(24) {
                        let name_off = u32::from_le_bytes(e[0..4].try_into().expect("4"));
                        let sym = Symbol {
                            name: read_str(&r, strtab, name_off as u64, &mut budget)?,
                            kind: e[4] & 0xf,
                            bind: e[4] >> 4,
                            section: u16::from_le_bytes(e[6..8].try_into().expect("2")),
                            value: u64::from_le_bytes(e[8..16].try_into().expect("8")),
                            size: u64::from_le_bytes(e[16..24].try_into().expect("8")),
                        };
                        if !sym.name.is_empty() && !by_name.contains_key(&sym.name) {
                            by_name.insert(sym.name.clone(), symbols.len());
                            symbols.push(sym);
                        }
                    }
                }
                SHT_NOTE if notes.is_empty() => {
                    parse_notes(r.slice(s.offset, s.size, "note section")?, &mut notes, &mut budget)?;
                }
                SHT_RELA if s.name.starts_with(".rela.dyn") => {
                    let data = r.slice(s.offset, s.size, "relocation table")?;
                    budget.charge(data.len() as u64, "relocation table")?;
                    for e in data.chunks_exact(24) {
                        let info = u64::from_le_bytes(e[8..16].try_into().expect("8"));
                        relocations.push(Relocation {
                            offset: u64::from_le_bytes(e[0..8].try_into().expect("8")),
                            kind: (info & 0xffff_ffff) as u32,
                            symbol: (info >> 32) as u32,
                            addend: i64::from_le_bytes(e[16..24].try_into().expect("8")),
                        });
                    }
                }
                _ => {}
            }
        }
        Ok(Elf { os_abi, abi_version, machine, flags, segments, sections, symbols, notes, relocations, by_name })
    }

    /// The symbol called `name`.
    pub fn symbol(&self, name: &str) -> Option<&Symbol> {
        self.by_name.get(name).and_then(|&i| self.symbols.get(i))
    }

    /// The end of the highest loadable segment: the size of the loaded image (saturating; a
    /// parsed file's segments end below 2^64).
    pub fn image_size(&self) -> u64 {
        self.segments.iter().map(|s| s.vaddr.saturating_add(s.mem_size)).max().unwrap_or(0)
    }

    /// The loadable segment whose file bytes hold `[vaddr, vaddr + len)`.
    pub fn segment_holding(&self, vaddr: u64, len: u64) -> Option<&Segment> {
        self.segments.iter().find(|s| s.holds(vaddr, len))
    }

    /// The loaded image: every loadable segment copied to its virtual address, zero elsewhere.
    ///
    /// # Errors
    /// [`CodeObjectError::ImageTooLarge`] for an image above `limit` bytes (checked before
    /// anything is allocated); the segment reads' errors.
    pub fn load_image(&self, bytes: &[u8], limit: u64) -> Result<Vec<u8>, CodeObjectError> {
        let size = self.image_size();
        if size > limit {
            return Err(CodeObjectError::ImageTooLarge { size, limit });
        }
        let mut image = vec![0u8; size as usize];
        let r = Reader { bytes };
        for s in &self.segments {
            let data = r.slice(s.file_offset, s.file_size, "loadable segment")?;
            // vaddr + file_size <= vaddr + mem_size <= size: in bounds.
            image[s.vaddr as usize..(s.vaddr + s.file_size) as usize].copy_from_slice(data);
        }
        Ok(image)
    }
}

fn read_str(r: &Reader<'_>, strtab: &Section, off: u64, budget: &mut Budget) -> Result<String, CodeObjectError> {
    if off >= strtab.size {
        return Err(CodeObjectError::Malformed(format!("string offset {off} outside its table")));
    }
    let data = r.slice(add(strtab.offset, off, "string table offset")?, strtab.size - off, "string table")?;
    let end = data.iter().position(|&b| b == 0).ok_or_else(|| CodeObjectError::Malformed("unterminated string".into()))?;
    budget.charge(end as u64 + 1, "string table")?;
    Ok(String::from_utf8_lossy(&data[..end]).into_owned())
}

fn parse_notes(mut data: &[u8], out: &mut Vec<(String, u32, Vec<u8>)>, budget: &mut Budget) -> Result<(), CodeObjectError> {
    budget.charge(data.len() as u64, "notes")?;
    let align4 = |n: usize| (n + 3) & !3;
    while data.len() >= 12 {
        let namesz = u32::from_le_bytes(data[0..4].try_into().expect("4")) as usize;
        let descsz = u32::from_le_bytes(data[4..8].try_into().expect("4")) as usize;
        let kind = u32::from_le_bytes(data[8..12].try_into().expect("4"));
        let name_end = 12usize.checked_add(align4(namesz));
        let desc_end = name_end.and_then(|n| n.checked_add(align4(descsz)));
        let (Some(name_end), Some(desc_end)) = (name_end, desc_end) else {
            return Err(CodeObjectError::Malformed("note sizes overflow".into()));
        };
        if desc_end > data.len() && name_end + descsz > data.len() {
            return Err(CodeObjectError::Truncated { what: "note", need: desc_end as u64, have: data.len() as u64 });
        }
        let name = &data[12..12 + namesz];
        let name = String::from_utf8_lossy(name.split(|&b| b == 0).next().unwrap_or(&[])).into_owned();
        out.push((name, kind, data[name_end..name_end + descsz].to_vec()));
        data = &data[desc_end.min(data.len())..];
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An ELF64 with one string table, one symbol table of `symbols` entries (names `s0`,
    /// `s1`, ...) and `extra` more section headers pointing at that same symbol table.
    fn overlapping_symbol_tables(symbols: usize, extra: usize) -> Vec<u8> {
        let mut strtab = vec![0u8];
        let mut symtab = Vec::new();
        for i in 0..symbols {
            let mut e = [0u8; 24];
            e[0..4].copy_from_slice(&(strtab.len() as u32).to_le_bytes());
            strtab.extend(format!("s{i}\0").bytes());
            symtab.extend(e);
        }
        let mut f = vec![0u8; 64];
        f[0..4].copy_from_slice(b"\x7fELF");
        (f[4], f[5]) = (2, 1);
        let (str_off, sym_off) = (64u64, 64 + strtab.len() as u64);
        f.extend(&strtab);
        f.extend(&symtab);
        let shoff = f.len() as u64;
        let shnum = 2 + extra;
        let header = |kind: u32, off: u64, size: u64, link: u32| {
            let mut h = [0u8; 64];
            h[4..8].copy_from_slice(&kind.to_le_bytes());
            h[24..32].copy_from_slice(&off.to_le_bytes());
            h[32..40].copy_from_slice(&size.to_le_bytes());
            h[40..44].copy_from_slice(&link.to_le_bytes());
            h
        };
        f.extend(header(3, str_off, strtab.len() as u64, 0));
        for _ in 0..1 + extra {
            f.extend(header(SHT_SYMTAB, sym_off, symtab.len() as u64, 0));
        }
        f[40..48].copy_from_slice(&shoff.to_le_bytes());
        f[58..60].copy_from_slice(&64u16.to_le_bytes());
        f[60..62].copy_from_slice(&(shnum as u16).to_le_bytes());
        f[62..64].copy_from_slice(&u16::MAX.to_le_bytes()); // no section name table
        f
    }

    #[test]
    fn many_distinct_symbols_parse_in_linear_time() {
        // 200k names: the old duplicate check compared each with every earlier one (2e10
        // string comparisons).
        let started = std::time::Instant::now();
        let elf = Elf::parse(&overlapping_symbol_tables(200_000, 0)).unwrap();
        assert_eq!(elf.symbols.len(), 200_000);
        assert_eq!(elf.symbol("s199999").map(|s| s.name.as_str()), Some("s199999"));
        assert!(started.elapsed().as_secs() < 10);
    }

    #[test]
    fn tables_declared_over_and_over_exceed_the_work_budget() {
        // Two headers naming one table are fine (`.symtab` and `.dynsym` overlap in spirit);
        // thousands are an input that asks for quadratic work.
        Elf::parse(&overlapping_symbol_tables(1000, 1)).unwrap();
        match Elf::parse(&overlapping_symbol_tables(1000, 3000)) {
            Err(CodeObjectError::Malformed(m)) => assert!(m.contains("overlapping tables"), "{m}"),
            other => panic!("expected the work budget to refuse it, got {other:?}"),
        }
    }

    #[test]
    fn header_tables_at_the_top_of_the_address_space_are_malformed() {
        let mut f = overlapping_symbol_tables(1, 0);
        f[40..48].copy_from_slice(&(u64::MAX - 8).to_le_bytes());
        match Elf::parse(&f) {
            Err(CodeObjectError::Malformed(m)) => assert!(m.contains("overflows 64 bits"), "{m}"),
            other => panic!("{other:?}"),
        }
    }
}
