//! The code object metadata (AMDGPUUsage "Code Object V3+ Metadata"): per kernel, its arguments
//! (offsets, sizes, value kinds including the hidden ones the runtime fills) and resource counts.

use super::CodeObjectError;
use super::msgpack::Value;

/// How the runtime treats one kernel argument (`.value_kind`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ValueKind {
    /// An explicit value copied into the kernarg segment.
    ByValue,
    /// An explicit pointer to global memory.
    GlobalBuffer,
    /// An explicit pointer to dynamically allocated LDS.
    DynamicSharedPointer,
    /// Hidden: workgroups in the grid along x, y, z (v5+).
    HiddenBlockCount(u8),
    /// Hidden: workgroup size along x, y, z (u16, v5+).
    HiddenGroupSize(u8),
    /// Hidden: size of the last (partial) workgroup along x, y, z (u16, v5+).
    HiddenRemainder(u8),
    /// Hidden: global offset along x, y, z.
    HiddenGlobalOffset(u8),
    /// Hidden: number of grid dimensions (u16).
    HiddenGridDims,
    /// Hidden: dynamic LDS bytes of the launch (u32).
    HiddenDynamicLdsSize,
    /// Hidden: the LDS aperture base (u32, flat-address high half).
    HiddenSharedBase,
    /// Hidden: the scratch aperture base (u32).
    HiddenPrivateBase,
    /// Hidden: the HSA queue address.
    HiddenQueuePtr,
    /// Hidden: a padding slot the runtime leaves zero.
    HiddenNone,
    /// Any other kind (printf/hostcall buffers, heap, multigrid ...), kept by name.
    Other(String),
}

impl ValueKind {
    fn parse(s: &str) -> ValueKind {
        match s {
            "by_value" => ValueKind::ByValue,
            "global_buffer" => ValueKind::GlobalBuffer,
            "dynamic_shared_pointer" => ValueKind::DynamicSharedPointer,
            "hidden_block_count_x" => ValueKind::HiddenBlockCount(0),
            "hidden_block_count_y" => ValueKind::HiddenBlockCount(1),
            "hidden_block_count_z" => ValueKind::HiddenBlockCount(2),
            "hidden_group_size_x" => ValueKind::HiddenGroupSize(0),
            "hidden_group_size_y" => ValueKind::HiddenGroupSize(1),
            "hidden_group_size_z" => ValueKind::HiddenGroupSize(2),
            "hidden_remainder_x" => ValueKind::HiddenRemainder(0),
            "hidden_remainder_y" => ValueKind::HiddenRemainder(1),
            "hidden_remainder_z" => ValueKind::HiddenRemainder(2),
            "hidden_global_offset_x" => ValueKind::HiddenGlobalOffset(0),
            "hidden_global_offset_y" => ValueKind::HiddenGlobalOffset(1),
            "hidden_global_offset_z" => ValueKind::HiddenGlobalOffset(2),
            "hidden_grid_dims" => ValueKind::HiddenGridDims,
            "hidden_dynamic_lds_size" => ValueKind::HiddenDynamicLdsSize,
            "hidden_shared_base" => ValueKind::HiddenSharedBase,
            "hidden_private_base" => ValueKind::HiddenPrivateBase,
            "hidden_queue_ptr" => ValueKind::HiddenQueuePtr,
            "hidden_none" => ValueKind::HiddenNone,
            other => ValueKind::Other(other.to_string()),
        }
    }

    /// True for the kinds the runtime fills (everything named `hidden_*`).
    pub fn is_hidden(&self) -> bool {
        match self {
            ValueKind::ByValue | ValueKind::GlobalBuffer | ValueKind::DynamicSharedPointer => false,
            ValueKind::Other(s) => s.starts_with("hidden_"),
            _ => true,
        }
    }
}

/// One kernel argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgMeta {
    /// `.name`, when the compiler recorded one.
    pub name: Option<String>,
    /// Byte offset in the kernarg segment.
    pub offset: u32,
    /// Size in bytes.
    pub size: u32,
    /// `.value_kind`.
    pub value_kind: ValueKind,
    /// `.address_space` for pointers (`global`, `generic`, ...).
    pub address_space: Option<String>,
}

/// One kernel's metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelMeta {
    /// `.name`.
    pub name: String,
    /// `.symbol`: the descriptor's symbol (`<name>.kd`).
    pub symbol: String,
    /// `.args` in offset order.
    pub args: Vec<ArgMeta>,
    /// `.kernarg_segment_size`: explicit and hidden arguments.
    pub kernarg_segment_size: u32,
    /// `.kernarg_segment_align`.
    pub kernarg_segment_align: u32,
    /// `.group_segment_fixed_size`: static LDS bytes.
    pub group_segment_fixed_size: u32,
    /// `.private_segment_fixed_size`: scratch bytes per work-item.
    pub private_segment_fixed_size: u32,
    /// `.wavefront_size`.
    pub wavefront_size: u32,
    /// `.sgpr_count` (including VCC, flat scratch and XNACK SGPRs).
    pub sgpr_count: u32,
    /// `.vgpr_count` (architectural VGPRs).
    pub vgpr_count: u32,
    /// `.agpr_count` (accumulation VGPRs).
    pub agpr_count: u32,
    /// `.sgpr_spill_count`.
    pub sgpr_spill_count: u32,
    /// `.vgpr_spill_count`.
    pub vgpr_spill_count: u32,
    /// `.max_flat_workgroup_size`.
    pub max_flat_workgroup_size: u32,
    /// `.uses_dynamic_stack`.
    pub uses_dynamic_stack: bool,
}

impl KernelMeta {
    /// The explicit (non-hidden) arguments.
    pub fn explicit_args(&self) -> impl Iterator<Item = &ArgMeta> {
        self.args.iter().filter(|a| !a.value_kind.is_hidden())
    }

    /// The end of the last explicit argument: the bytes the caller's argument struct supplies
    /// (before its trailing padding).
    /// (In u64: offset and size are 32-bit values from the file and their sum may not fit.)
    pub fn explicit_args_end(&self) -> u64 {
        self.explicit_args().map(|a| a.offset as u64 + a.size as u64).max().unwrap_or(0)
    }
}

/// The whole metadata note.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Metadata {
    /// `amdhsa.version` (1.2 = code object v5 and v6).
    pub version: (u32, u32),
    /// `amdhsa.target`, e.g. `amdgcn-amd-amdhsa--gfx942`.
    pub target: Option<String>,
    /// Every kernel.
    pub kernels: Vec<KernelMeta>,
}

fn bad(what: impl Into<String>) -> CodeObjectError {
    CodeObjectError::BadMetadata(what.into())
}

fn req_u32(map: &Value, key: &str, kernel: &str) -> Result<u32, CodeObjectError> {
    let v = map.get(key).ok_or_else(|| bad(format!("kernel {kernel}: missing {key}")))?;
    v.as_u64().and_then(|x| u32::try_from(x).ok()).ok_or_else(|| bad(format!("kernel {kernel}: {key} is not a 32-bit unsigned integer")))
}

fn opt_u32(map: &Value, key: &str, kernel: &str, default: u32) -> Result<u32, CodeObjectError> {
    if map.get(key).is_none() { Ok(default) } else { req_u32(map, key, kernel) }
}

impl Metadata {
    /// Interprets the decoded note.
    pub fn from_value(v: &Value) -> Result<Metadata, CodeObjectError> {
        if !matches!(v, Value::Map(_)) {
            return Err(bad("the metadata is not a map"));
        }
        let part =
            |x: &Value| x.as_u64().and_then(|x| u32::try_from(x).ok()).ok_or_else(|| bad("amdhsa.version is not two 32-bit numbers"));
        let version = match v.get("amdhsa.version").and_then(Value::as_array) {
            Some([a, b]) => (part(a)?, part(b)?),
            _ => return Err(bad("missing or malformed amdhsa.version")),
        };
        let target = v.get("amdhsa.target").and_then(Value::as_str).map(str::to_string);
        let kernels_v = v.get("amdhsa.kernels").and_then(Value::as_array).ok_or_else(|| bad("missing amdhsa.kernels"))?;
        let mut kernels = Vec::with_capacity(kernels_v.len());
        for k in kernels_v {
            let name = k.get(".name").and_then(Value::as_str).ok_or_else(|| bad("a kernel without .name"))?;
            let symbol = k.get(".symbol").and_then(Value::as_str).ok_or_else(|| bad(format!("kernel {name}: missing .symbol")))?;
            let mut args = Vec::new();
            if let Some(list) = k.get(".args") {
                let list = list.as_array().ok_or_else(|| bad(format!("kernel {name}: .args is not an array")))?;
                for a in list {
                    let kind = a
                        .get(".value_kind")
                        .and_then(Value::as_str)
                        .ok_or_else(|| bad(format!("kernel {name}: an argument without .value_kind")))?;
                    args.push(ArgMeta {
                        name: a.get(".name").and_then(Value::as_str).map(str::to_string),
                        offset: req_u32(a, ".offset", name)?,
                        size: req_u32(a, ".size", name)?,
                        value_kind: ValueKind::parse(kind),
                        address_space: a.get(".address_space").and_then(Value::as_str).map(str::to_string),
                    });
                }
            }
            args.sort_by_key(|a| a.offset);
            kernels.push(KernelMeta {
                name: name.to_string(),
                symbol: symbol.to_string(),
                args,
                kernarg_segment_size: req_u32(k, ".kernarg_segment_size", name)?,
                kernarg_segment_align: req_u32(k, ".kernarg_segment_align", name)?,
                group_segment_fixed_size: req_u32(k, ".group_segment_fixed_size", name)?,
                private_segment_fixed_size: req_u32(k, ".private_segment_fixed_size", name)?,
                wavefront_size: req_u32(k, ".wavefront_size", name)?,
                sgpr_count: req_u32(k, ".sgpr_count", name)?,
                vgpr_count: req_u32(k, ".vgpr_count", name)?,
                agpr_count: opt_u32(k, ".agpr_count", name, 0)?,
                sgpr_spill_count: opt_u32(k, ".sgpr_spill_count", name, 0)?,
                vgpr_spill_count: opt_u32(k, ".vgpr_spill_count", name, 0)?,
                max_flat_workgroup_size: req_u32(k, ".max_flat_workgroup_size", name)?,
                uses_dynamic_stack: k.get(".uses_dynamic_stack").and_then(Value::as_bool).unwrap_or(false),
            });
        }
        Ok(Metadata { version, target, kernels })
    }
}
