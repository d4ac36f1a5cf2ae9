//! The GGUF header (versions 2 and 3, little-endian): magic, version, tensor and metadata
//! counts, metadata key-values of every value type, tensor infos (name, dimensions, type,
//! offset) and the alignment of the data section. Only the header is read: a 20 GB file opens
//! in the time its few megabytes of header take.
//!
//! Layout (ggml's `docs/gguf.md`): `"GGUF"`, `u32` version, `u64` tensor count, `u64`
//! metadata count; each key-value is a string key (`u64` length + UTF-8 bytes), a `u32` value
//! type and the value (arrays: `u32` element type, `u64` length, elements); each tensor info
//! is a string name, `u32` dimension count, `u64` dimensions, `u32` ggml type and `u64` offset
//! into the data section, which starts at the next multiple of `general.alignment` (32 by
//! default) after the header.
//!
//! Every count and length is checked against the bytes the file has left before anything is
//! allocated for it, so a header claiming 2^60 tensors or a 2^50-byte string is an error at
//! its byte offset, not an allocation.

use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use memwall_spec::GgmlType;

use crate::ImportError;

/// Arrays longer than this are walked but not kept (the tokenizer's vocabulary and merges):
/// their element type and length are.
pub const MAX_KEPT_ARRAY: u64 = 1024;

/// ggml's `GGML_MAX_DIMS`.
pub const MAX_DIMS: u32 = 4;

/// Nesting of arrays in arrays that the reader follows.
const MAX_NESTING: u32 = 4;

/// A metadata value.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub enum Value {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    String(String),
    /// An array: element type id, length, and the elements when at most [`MAX_KEPT_ARRAY`].
    Array {
        /// Element value type (GGUF's `gguf_metadata_value_type`).
        elem: u32,
        /// Elements in the file.
        len: u64,
        /// The elements, when kept.
        values: Option<Vec<Value>>,
    },
    U64(u64),
    I64(i64),
    F64(f64),
}

impl Value {
    /// An integer value of any width and sign, as `u64` (negative values are `None`).
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::U8(v) => Some(v as u64),
            Value::U16(v) => Some(v as u64),
            Value::U32(v) => Some(v as u64),
            Value::U64(v) => Some(v),
            Value::I8(v) => u64::try_from(v).ok(),
            Value::I16(v) => u64::try_from(v).ok(),
            Value::I32(v) => u64::try_from(v).ok(),
            Value::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    /// A float or integer value as `f64`.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::F32(v) => Some(v as f64),
            Value::F64(v) => Some(v),
            _ => self.as_u64().map(|v| v as f64),
        }
    }

    /// The elements of a kept array.
    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array { values: Some(v), .. } => Some(v),
            _ => None,
        }
    }

    /// GGUF's name of the value's type.
    pub fn type_name(&self) -> &'static str {
        type_name(self.type_id())
    }

    fn type_id(&self) -> u32 {
        match self {
            Value::U8(_) => 0,
            Value::I8(_) => 1,
            Value::U16(_) => 2,
            Value::I16(_) => 3,
            Value::U32(_) => 4,
            Value::I32(_) => 5,
            Value::F32(_) => 6,
            Value::Bool(_) => 7,
            Value::String(_) => 8,
            Value::Array { .. } => 9,
            Value::U64(_) => 10,
            Value::I64(_) => 11,
            Value::F64(_) => 12,
        }
    }
}

/// GGUF's name of value type `t`.
pub fn type_name(t: u32) -> &'static str {
    match t {
        0 => "uint8",
        1 => "int8",
        2 => "uint16",
        3 => "int16",
        4 => "uint32",
        5 => "int32",
        6 => "float32",
        7 => "bool",
        8 => "string",
        9 => "array",
        10 => "uint64",
        11 => "int64",
        12 => "float64",
        _ => "unknown",
    }
}

/// Bytes of one element of a fixed-size value type (`None` for strings and arrays).
fn fixed_size(t: u32) -> Option<u64> {
    match t {
        0 | 1 | 7 => Some(1),
        2 | 3 => Some(2),
        4..=6 => Some(4),
        10..=12 => Some(8),
        _ => None,
    }
}

/// One tensor's info.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorInfo {
    /// Name (`blk.0.attn_q.weight`).
    pub name: String,
    /// Dimensions, `ne[0]` first (the row length).
    pub dims: Vec<u64>,
    /// Stored type.
    pub ggml: GgmlType,
    /// Offset of its data from the start of the data section.
    pub offset: u64,
    /// Bytes of its data: `ne[0] / block × type_size × ne[1] × …`.
    pub bytes: u64,
    /// Byte offset of this tensor info in the file (for messages).
    pub at: u64,
}

impl TensorInfo {
    /// Elements, the product of the dimensions.
    pub fn elements(&self) -> u64 {
        self.dims.iter().product()
    }
}

/// The header of a GGUF file.
#[derive(Debug, Clone, PartialEq)]
pub struct GgufHeader {
    /// Where it was read from (for messages).
    pub origin: String,
    /// Format version (2 or 3).
    pub version: u32,
    /// Metadata in file order.
    pub metadata: Vec<(String, Value)>,
    /// Tensor infos in file order.
    pub tensors: Vec<TensorInfo>,
    /// Alignment of the data section and of every tensor offset.
    pub alignment: u64,
    /// Byte offset of the data section.
    pub data_offset: u64,
    /// File length, bytes.
    pub file_len: u64,
}

impl GgufHeader {
    /// A metadata value by key.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Σ tensor bytes: the weights the file holds, exactly (the data section adds only the
    /// padding that aligns each tensor).
    pub fn tensor_bytes(&self) -> u64 {
        self.tensors.iter().map(|t| t.bytes).sum()
    }
}

/// Read the header of the GGUF file at `path`.
pub fn read_header(path: &Path) -> Result<GgufHeader, ImportError> {
    let io = |source| ImportError::Io { path: path.display().to_string(), source };
    let file = crate::file::open_regular(path).map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    parse(BufReader::with_capacity(1 << 20, file), len, &path.display().to_string())
}

/// Parse a GGUF header from `r`, a stream of `len` bytes in all.
pub fn parse<R: Read + Seek>(r: R, len: u64, origin: &str) -> Result<GgufHeader, ImportError> {
    let mut c = Cursor { r, pos: 0, len, origin };
    let magic = c.bytes_fixed::<4>("magic")?;
    if &magic != b"GGUF" {
        return Err(c.err(0, format!("not a GGUF file: magic {magic:02x?}, expected \"GGUF\"")));
    }
    let version = c.u32("version")?;
    match version {
        2 | 3 => {}
        1 => {
            return Err(c.err(
                4,
                "GGUF version 1 (32-bit counts) is not supported; convert the file with a current llama.cpp".into(),
            ));
        }
        v if v.swap_bytes() == 2 || v.swap_bytes() == 3 => {
            return Err(c.err(4, "a big-endian GGUF file; only little-endian files are read".into()));
        }
        v => return Err(c.err(4, format!("unknown GGUF version {v} (versions 2 and 3 are read)"))),
    }
    let at = c.pos;
    let n_tensors = c.u64("tensor count")?;
    // Smallest tensor info: empty name (8), 1 dimension (4 + 8), type (4), offset (8).
    if n_tensors > c.left() / 32 {
        return Err(c.err(at, format!("tensor count {n_tensors} cannot fit in the {} bytes left", c.left())));
    }
    let at = c.pos;
    let n_kv = c.u64("metadata count")?;
    // Smallest key-value: empty key (8) and a type (4) with a 1-byte value.
    if n_kv > c.left() / 13 {
        return Err(c.err(at, format!("metadata count {n_kv} cannot fit in the {} bytes left", c.left())));
    }
    let mut metadata: Vec<(String, Value)> = Vec::with_capacity(n_kv.min(4096) as usize);
    for i in 0..n_kv {
        let at = c.pos;
        let key = c.string(&format!("metadata key {i}"))?;
        if metadata.iter().any(|(k, _)| *k == key) {
            return Err(c.err(at, format!("duplicate metadata key `{key}`")));
        }
        let t_at = c.pos;
        let t = c.u32(&format!("type of `{key}`"))?;
        if t > 12 {
            return Err(c.err(t_at, format!("metadata `{key}` has unknown value type {t}")));
        }
        let v = c.value(t, &key, 0)?;
        metadata.push((key, v));
    }
    let mut alignment = 32;
    if let Some(v) = metadata.iter().find(|(k, _)| k == "general.alignment").map(|(_, v)| v) {
        match v {
            Value::U32(a) if *a > 0 && a.is_power_of_two() => alignment = *a as u64,
            other => {
                return Err(c.err(0, format!("`general.alignment` = {other:?}: must be a uint32 power of two")));
            }
        }
    }
    let mut tensors: Vec<TensorInfo> = Vec::with_capacity(n_tensors.min(1 << 16) as usize);
    let mut names = std::collections::HashSet::new();
    for i in 0..n_tensors {
        let at = c.pos;
        let name = c.string(&format!("tensor {i} name"))?;
        if !names.insert(name.clone()) {
            return Err(c.err(at, format!("duplicate tensor name `{name}`")));
        }
        let d_at = c.pos;
        let n_dims = c.u32(&format!("dimension count of `{name}`"))?;
        if n_dims == 0 || n_dims > MAX_DIMS {
            return Err(c.err(d_at, format!("tensor `{name}` has {n_dims} dimensions (1 to {MAX_DIMS} allowed)")));
        }
        let mut dims = Vec::with_capacity(n_dims as usize);
        for k in 0..n_dims {
            let at = c.pos;
            let d = c.u64(&format!("dimension {k} of `{name}`"))?;
            if d == 0 {
                return Err(c.err(at, format!("tensor `{name}` has a zero dimension {k}")));
            }
            dims.push(d);
        }
        let t_at = c.pos;
        let id = c.u32(&format!("type of `{name}`"))?;
        let ggml = GgmlType::from_id(id)
            .ok_or_else(|| c.err(t_at, format!("tensor `{name}` has unknown ggml type id {id}")))?;
        let o_at = c.pos;
        let offset = c.u64(&format!("offset of `{name}`"))?;
        if !offset.is_multiple_of(alignment) {
            return Err(
                c.err(o_at, format!("tensor `{name}` offset {offset} is not a multiple of the alignment {alignment}"))
            );
        }
        let block = ggml.block_size();
        if !dims[0].is_multiple_of(block) {
            return Err(c.err(
                d_at,
                format!(
                    "tensor `{name}`: row length {} is not a multiple of {}'s block of {block}",
                    dims[0],
                    ggml.name()
                ),
            ));
        }
        let bytes = dims[1..]
            .iter()
            .fold((dims[0] / block).checked_mul(ggml.type_size()), |acc, d| acc.and_then(|a| a.checked_mul(*d)))
            .filter(|b| *b <= len)
            .ok_or_else(|| {
                c.err(d_at, format!("tensor `{name}` of shape {dims:?} is larger than the file ({len} bytes)"))
            })?;
        tensors.push(TensorInfo { name, dims, ggml, offset, bytes, at });
    }
    let data_offset = c.pos.div_ceil(alignment) * alignment;
    // Every tensor's data lies in the file, and no two overlap.
    let mut order: Vec<&TensorInfo> = tensors.iter().collect();
    order.sort_by_key(|t| t.offset);
    let mut end = 0u64;
    let mut prev: Option<&str> = None;
    for t in order {
        if t.offset < end {
            return Err(c.err(
                t.at,
                format!(
                    "tensor `{}` (data at {}) overlaps tensor `{}` (which ends at {end})",
                    t.name,
                    t.offset,
                    prev.unwrap_or("?")
                ),
            ));
        }
        end = t.offset.saturating_add(t.bytes);
        prev = Some(&t.name);
        let last = data_offset.saturating_add(end);
        if last > len {
            return Err(c.err(
                t.at,
                format!(
                    "tensor `{}` ends at byte {last}, past the end of the file ({len} bytes): the file is truncated",
                    t.name
                ),
            ));
        }
    }
    Ok(GgufHeader { origin: origin.to_string(), version, metadata, tensors, alignment, data_offset, file_len: len })
}

struct Cursor<'a, R> {
    r: R,
    pos: u64,
    len: u64,
    origin: &'a str,
}

impl<R: Read + Seek> Cursor<'_, R> {
    fn err(&self, offset: u64, what: String) -> ImportError {
        ImportError::Gguf { origin: self.origin.to_string(), offset, what }
    }

    fn left(&self) -> u64 {
        self.len.saturating_sub(self.pos)
    }

    /// Fail unless `n` more bytes exist.
    fn need(&self, n: u64, what: &str) -> Result<(), ImportError> {
        if n > self.left() {
            return Err(self.err(
                self.pos,
                format!("truncated: {what} needs {n} bytes, {} left in the {}-byte file", self.left(), self.len),
            ));
        }
        Ok(())
    }

    fn bytes_fixed<const N: usize>(&mut self, what: &str) -> Result<[u8; N], ImportError> {
        self.need(N as u64, what)?;
        let mut b = [0u8; N];
        self.r.read_exact(&mut b).map_err(|e| self.err(self.pos, format!("reading {what}: {e}")))?;
        self.pos += N as u64;
        Ok(b)
    }

    /// Skip `n` bytes: small runs are read through the buffer (a seek would discard it, and
    /// the tokenizer's hundred thousand strings would each refill it), long ones seeked over.
    fn skip(&mut self, n: u64, what: &str) -> Result<(), ImportError> {
        self.need(n, what)?;
        if n <= 1 << 16 {
            let copied = std::io::copy(&mut (&mut self.r).take(n), &mut std::io::sink())
                .map_err(|e| self.err(self.pos, format!("skipping {what}: {e}")))?;
            if copied != n {
                return Err(self.err(self.pos, format!("truncated: {what} needs {n} bytes")));
            }
        } else {
            let n_i64 = i64::try_from(n).map_err(|_| self.err(self.pos, format!("{what}: {n} bytes")))?;
            self.r.seek(SeekFrom::Current(n_i64)).map_err(|e| self.err(self.pos, format!("skipping {what}: {e}")))?;
        }
        self.pos += n;
        Ok(())
    }

    fn u32(&mut self, what: &str) -> Result<u32, ImportError> {
        Ok(u32::from_le_bytes(self.bytes_fixed(what)?))
    }

    fn u64(&mut self, what: &str) -> Result<u64, ImportError> {
        Ok(u64::from_le_bytes(self.bytes_fixed(what)?))
    }

    fn string(&mut self, what: &str) -> Result<String, ImportError> {
        let at = self.pos;
        let n = self.u64(&format!("length of {what}"))?;
        self.need(n, what)?;
        let mut b = vec![0u8; n as usize];
        self.r.read_exact(&mut b).map_err(|e| self.err(self.pos, format!("reading {what}: {e}")))?;
        self.pos += n;
        String::from_utf8(b).map_err(|e| self.err(at, format!("{what} is not UTF-8: {e}")))
    }

    /// A string inside a long array: its length is checked and its bytes skipped.
    fn skip_string(&mut self, what: &str) -> Result<(), ImportError> {
        let n = self.u64(&format!("length of {what}"))?;
        self.skip(n, what)
    }

    fn value(&mut self, t: u32, key: &str, depth: u32) -> Result<Value, ImportError> {
        let what = || format!("value of `{key}`");
        Ok(match t {
            0 => Value::U8(self.bytes_fixed::<1>(&what())?[0]),
            1 => Value::I8(self.bytes_fixed::<1>(&what())?[0] as i8),
            2 => Value::U16(u16::from_le_bytes(self.bytes_fixed(&what())?)),
            3 => Value::I16(i16::from_le_bytes(self.bytes_fixed(&what())?)),
            4 => Value::U32(u32::from_le_bytes(self.bytes_fixed(&what())?)),
            5 => Value::I32(i32::from_le_bytes(self.bytes_fixed(&what())?)),
            6 => Value::F32(f32::from_le_bytes(self.bytes_fixed(&what())?)),
            7 => {
                let at = self.pos;
                match self.bytes_fixed::<1>(&what())?[0] {
                    0 => Value::Bool(false),
                    1 => Value::Bool(true),
                    b => return Err(self.err(at, format!("`{key}`: bool byte {b} (0 or 1 expected)"))),
                }
            }
            8 => Value::String(self.string(&what())?),
            9 => {
                let at = self.pos;
                if depth >= MAX_NESTING {
                    return Err(self.err(at, format!("`{key}`: arrays nested deeper than {MAX_NESTING}")));
                }
                let elem = self.u32(&format!("element type of `{key}`"))?;
                if elem > 12 {
                    return Err(self.err(at, format!("`{key}`: array of unknown value type {elem}")));
                }
                let l_at = self.pos;
                let len = self.u64(&format!("length of `{key}`"))?;
                // Every element takes at least one byte (strings and arrays at least 8).
                let min = fixed_size(elem).unwrap_or(8);
                if len > self.left() / min {
                    return Err(self.err(
                        l_at,
                        format!(
                            "`{key}`: an array of {len} {} cannot fit in the {} bytes left",
                            type_name(elem),
                            self.left()
                        ),
                    ));
                }
                if len <= MAX_KEPT_ARRAY {
                    let mut values = Vec::with_capacity(len as usize);
                    for _ in 0..len {
                        values.push(self.value(elem, key, depth + 1)?);
                    }
                    Value::Array { elem, len, values: Some(values) }
                } else {
                    match (fixed_size(elem), elem) {
                        (Some(size), _) => self.skip(len * size, &what())?,
                        (None, 8) => {
                            for _ in 0..len {
                                self.skip_string(&what())?;
                            }
                        }
                        _ => {
                            for _ in 0..len {
                                self.value(elem, key, depth + 1)?;
                            }
                        }
                    }
                    Value::Array { elem, len, values: None }
                }
            }
            10 => Value::U64(self.u64(&what())?),
            11 => Value::I64(i64::from_le_bytes(self.bytes_fixed(&what())?)),
            12 => Value::F64(f64::from_le_bytes(self.bytes_fixed(&what())?)),
            _ => return Err(self.err(self.pos, format!("`{key}`: unknown value type {t}"))),
        })
    }
}

/// Writing GGUF headers, for tests and the fuzzer: the inverse of [`parse`] for the values it
/// keeps, with zero-filled tensor data.
pub mod write {
    use super::Value;

    fn string(out: &mut Vec<u8>, s: &str) {
        out.extend((s.len() as u64).to_le_bytes());
        out.extend(s.as_bytes());
    }

    fn value(out: &mut Vec<u8>, v: &Value) {
        match v {
            Value::U8(x) => out.push(*x),
            Value::I8(x) => out.push(*x as u8),
            Value::U16(x) => out.extend(x.to_le_bytes()),
            Value::I16(x) => out.extend(x.to_le_bytes()),
            Value::U32(x) => out.extend(x.to_le_bytes()),
            Value::I32(x) => out.extend(x.to_le_bytes()),
            Value::F32(x) => out.extend(x.to_le_bytes()),
            Value::Bool(x) => out.push(*x as u8),
            Value::String(s) => string(out, s),
            Value::Array { elem, values, .. } => {
                let values = values.as_deref().unwrap_or(&[]);
                out.extend(elem.to_le_bytes());
                out.extend((values.len() as u64).to_le_bytes());
                for v in values {
                    value(out, v);
                }
            }
            Value::U64(x) => out.extend(x.to_le_bytes()),
            Value::I64(x) => out.extend(x.to_le_bytes()),
            Value::F64(x) => out.extend(x.to_le_bytes()),
        }
    }

    /// A version-3 GGUF file with `metadata` and `tensors` (name, dimensions, type), tensors
    /// laid out in order at 32-byte alignment, data zero-filled.
    pub fn file(metadata: &[(&str, Value)], tensors: &[(&str, &[u64], memwall_spec::GgmlType)]) -> Vec<u8> {
        let mut out = b"GGUF".to_vec();
        out.extend(3u32.to_le_bytes());
        out.extend((tensors.len() as u64).to_le_bytes());
        out.extend((metadata.len() as u64).to_le_bytes());
        for (k, v) in metadata {
            string(&mut out, k);
            out.extend(v.type_id().to_le_bytes());
            value(&mut out, v);
        }
        let mut offset = 0u64;
        let mut sizes = Vec::new();
        for (name, dims, t) in tensors {
            string(&mut out, name);
            out.extend((dims.len() as u32).to_le_bytes());
            for d in *dims {
                out.extend(d.to_le_bytes());
            }
            out.extend(t.id().to_le_bytes());
            out.extend(offset.to_le_bytes());
            let bytes = dims[1..].iter().product::<u64>() * dims[0] / t.block_size() * t.type_size();
            sizes.push(bytes);
            offset += bytes.div_ceil(32) * 32;
        }
        out.resize(out.len().div_ceil(32) * 32, 0);
        out.resize(out.len() + offset as usize, 0);
        out
    }
}
