//! Decoded values before they become Arrow arrays, and the builders that decoders append
//! to. A page's chunks decode straight into one builder, so a page costs one copy of its
//! values (none at all where a buffer can be handed to Arrow as it is).
use arrow_array::{make_array, Array, ArrayRef};
use arrow_buffer::{BooleanBufferBuilder, Buffer, MutableBuffer, NullBuffer};
use arrow_data::ArrayDataBuilder;
use arrow_schema::DataType;

use crate::error::{corrupt, unsupported, Result};

/// Where decoded values are appended. The variant is chosen from the Arrow type being
/// read (or, for dictionary indices, from the index encoding).
#[derive(Debug)]
pub enum ValuesBuilder {
    /// Fixed-width values of `bits` bits; `bits == 1` are booleans packed LSB-first.
    Fixed(FixedBuilder),
    /// Variable-width values (strings, binary) with i32 or i64 offsets.
    Variable(VariableBuilder),
    /// Fixed-size lists of `dim` items with optional per-item validity.
    FixedSizeList {
        dim: usize,
        validity: Option<BooleanBufferBuilder>,
        child: Box<ValuesBuilder>,
        len: usize,
    },
    /// A packed struct: each row's fields are split into one child per field.
    Struct {
        children: Vec<ValuesBuilder>,
        len: usize,
    },
}

#[derive(Debug)]
pub struct FixedBuilder {
    pub bits: u32,
    /// Byte-aligned values (unused for booleans).
    pub data: MutableBuffer,
    /// Booleans (only when `bits == 1`).
    bools: BooleanBufferBuilder,
    /// Values appended.
    pub len: usize,
}

#[derive(Debug)]
pub struct VariableBuilder {
    pub large: bool,
    /// i32 or i64 offsets, starting with 0.
    pub offsets: MutableBuffer,
    pub data: Vec<u8>,
    pub len: usize,
}

/// Builders reserve room for the values they are told to expect up to this many bytes
/// per buffer, and grow past it as values arrive: a count read from a corrupt page then
/// costs nothing until values back it.
const RESERVE_BYTES: usize = 8 << 20;

/// Bytes to reserve for `count` values of `width` bytes.
fn reserve(count: usize, width: usize) -> usize {
    count.saturating_mul(width).min(RESERVE_BYTES)
}

impl FixedBuilder {
    pub fn new(bits: u32, capacity: usize) -> Self {
        if bits == 1 {
            return FixedBuilder {
                bits,
                data: MutableBuffer::new(0),
                bools: BooleanBufferBuilder::new(reserve(capacity, 1)),
                len: 0,
            };
        }
        FixedBuilder {
            bits,
            data: MutableBuffer::with_capacity(reserve(capacity, bits as usize / 8)),
            bools: BooleanBufferBuilder::new(0),
            len: 0,
        }
    }

    pub fn byte_width(&self) -> usize {
        self.bits as usize / 8
    }

    /// Append `n` byte-aligned values given as raw little-endian bytes.
    pub fn append_bytes(&mut self, bytes: &[u8], n: usize) -> Result<()> {
        if self.bits == 1 {
            return self.append_bits(bytes, 0, n);
        }
        let need = n * self.byte_width();
        if bytes.len() < need {
            return Err(corrupt(format!(
                "{n} values of {} bits need {need} bytes, have {}",
                self.bits,
                bytes.len()
            )));
        }
        self.data.extend_from_slice(&bytes[..need]);
        self.len += n;
        Ok(())
    }

    /// Append `n` booleans starting at bit `offset` of `bits` (LSB-first).
    pub fn append_bits(&mut self, bits: &[u8], offset: usize, n: usize) -> Result<()> {
        if bits.len() * 8 < offset + n {
            return Err(corrupt(format!(
                "{n} booleans need {} bytes, have {}",
                (offset + n).div_ceil(8),
                bits.len()
            )));
        }
        self.bools.append_packed_range(offset..offset + n, bits);
        self.len += n;
        Ok(())
    }

    /// Extend by `n` values and return their bytes for the caller to fill in.
    pub fn extend_uninit(&mut self, n: usize) -> &mut [u8] {
        let w = self.byte_width();
        let start = self.data.len();
        self.data.resize(start + n * w, 0);
        self.len += n;
        &mut self.data.as_slice_mut()[start..]
    }

    /// Drop values beyond `len` (used after unpacking whole blocks).
    pub fn truncate(&mut self, len: usize) {
        self.len = len;
        self.data.truncate(len * self.byte_width());
    }

    /// The finished values buffer.
    fn into_buffer(mut self) -> Buffer {
        if self.bits == 1 {
            self.bools.finish().into_inner()
        } else {
            self.data.into()
        }
    }
}

impl VariableBuilder {
    pub fn new(large: bool, capacity: usize) -> Self {
        let w = if large { 8 } else { 4 };
        let mut offsets = MutableBuffer::with_capacity(reserve(capacity.saturating_add(1), w));
        if large {
            offsets.push(0i64);
        } else {
            offsets.push(0i32);
        }
        VariableBuilder {
            large,
            offsets,
            data: Vec::new(),
            len: 0,
        }
    }

    #[inline]
    fn push_end(&mut self) -> Result<()> {
        let end = self.data.len();
        if self.large {
            self.offsets.push(end as i64);
        } else {
            let e = i32::try_from(end).map_err(|_| {
                corrupt("more than 2 GiB of string data in one page for a 32-bit offset type")
            })?;
            self.offsets.push(e);
        }
        self.len += 1;
        Ok(())
    }

    /// Append one value.
    pub fn append(&mut self, value: &[u8]) -> Result<()> {
        self.data.extend_from_slice(value);
        self.push_end()
    }

    /// Append one value written by `f` at the end of the data.
    pub fn append_fn(&mut self, f: impl FnOnce(&mut Vec<u8>) -> Result<()>) -> Result<()> {
        f(&mut self.data)?;
        self.push_end()
    }

    /// Append a null (or empty) value: an empty range.
    pub fn append_empty(&mut self) -> Result<()> {
        self.push_end()
    }

    /// Append values given as `n + 1` offsets (of any base) into `bytes`.
    pub fn append_with_offsets<O: Copy + Into<u64>>(
        &mut self,
        offsets: &[O],
        bytes: &[u8],
    ) -> Result<()> {
        let n = offsets.len().saturating_sub(1);
        if n == 0 {
            return Ok(());
        }
        let first: u64 = offsets[0].into();
        let last: u64 = offsets[n].into();
        if first > last || last as usize > bytes.len() {
            return Err(corrupt(format!(
                "string offsets {first}..{last} outside a buffer of {} bytes",
                bytes.len()
            )));
        }
        let base = self.data.len() as u64;
        self.data
            .extend_from_slice(&bytes[first as usize..last as usize]);
        let shift = |o: O| -> Result<u64> {
            let o: u64 = o.into();
            if o < first || o > last {
                return Err(corrupt("string offsets are not increasing"));
            }
            Ok(o - first + base)
        };
        if self.large {
            self.offsets.reserve(n * 8);
            let mut prev = base;
            for &o in &offsets[1..] {
                let v = shift(o)?;
                if v < prev {
                    return Err(corrupt("string offsets are not increasing"));
                }
                prev = v;
                self.offsets.push(v as i64);
            }
        } else {
            if base + (last - first) > i32::MAX as u64 {
                return Err(corrupt(
                    "more than 2 GiB of string data in one page for a 32-bit offset type",
                ));
            }
            self.offsets.reserve(n * 4);
            let mut prev = base;
            for &o in &offsets[1..] {
                let v = shift(o)?;
                if v < prev {
                    return Err(corrupt("string offsets are not increasing"));
                }
                prev = v;
                self.offsets.push(v as i32);
            }
        }
        self.len += n;
        Ok(())
    }
}

impl ValuesBuilder {
    /// A builder for values read as `data_type`, sized for `capacity` values.
    pub fn for_type(data_type: &DataType, capacity: usize) -> Result<Self> {
        Ok(match data_type {
            DataType::Boolean => ValuesBuilder::Fixed(FixedBuilder::new(1, capacity)),
            DataType::Utf8 | DataType::Binary => {
                ValuesBuilder::Variable(VariableBuilder::new(false, capacity))
            }
            DataType::LargeUtf8 | DataType::LargeBinary => {
                ValuesBuilder::Variable(VariableBuilder::new(true, capacity))
            }
            DataType::FixedSizeBinary(n) => {
                let bits = u32::try_from(*n)
                    .ok()
                    .and_then(|n| n.checked_mul(8))
                    .ok_or_else(|| corrupt(format!("values of type {data_type}")))?;
                ValuesBuilder::Fixed(FixedBuilder::new(bits, capacity))
            }
            DataType::FixedSizeList(item, dim) => {
                let dim = usize::try_from(*dim)
                    .map_err(|_| corrupt(format!("values of type {data_type}")))?;
                ValuesBuilder::FixedSizeList {
                    dim,
                    validity: None,
                    child: Box::new(Self::for_type(
                        item.data_type(),
                        capacity.saturating_mul(dim),
                    )?),
                    len: 0,
                }
            }
            DataType::Struct(fields) => ValuesBuilder::Struct {
                children: fields
                    .iter()
                    .map(|f| Self::for_type(f.data_type(), capacity))
                    .collect::<Result<_>>()?,
                len: 0,
            },
            DataType::Null => ValuesBuilder::Fixed(FixedBuilder::new(8, 0)),
            dt => match dt.primitive_width() {
                Some(w) => ValuesBuilder::Fixed(FixedBuilder::new(w as u32 * 8, capacity)),
                None => {
                    return Err(crate::error::unsupported(format!(
                        "reading values of type {dt}"
                    )))
                }
            },
        })
    }

    pub fn len(&self) -> usize {
        match self {
            ValuesBuilder::Fixed(b) => b.len,
            ValuesBuilder::Variable(b) => b.len,
            ValuesBuilder::FixedSizeList { len, .. } | ValuesBuilder::Struct { len, .. } => *len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn fixed(&mut self) -> Result<&mut FixedBuilder> {
        match self {
            ValuesBuilder::Fixed(b) => Ok(b),
            other => Err(corrupt(format!(
                "a fixed-width encoding cannot produce {}",
                other.kind()
            ))),
        }
    }

    pub fn variable(&mut self) -> Result<&mut VariableBuilder> {
        match self {
            ValuesBuilder::Variable(b) => Ok(b),
            other => Err(corrupt(format!(
                "a variable-width encoding cannot produce {}",
                other.kind()
            ))),
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            ValuesBuilder::Fixed(_) => "fixed-width values",
            ValuesBuilder::Variable(_) => "variable-width values",
            ValuesBuilder::FixedSizeList { .. } => "fixed-size lists",
            ValuesBuilder::Struct { .. } => "struct values",
        }
    }

    /// Append `n` rows whose every byte is zero (placeholder values under nulls).
    pub fn append_zeros(&mut self, n: usize) -> Result<()> {
        match self {
            ValuesBuilder::Fixed(b) => {
                if b.bits == 1 {
                    let zeros = vec![0u8; n.div_ceil(8)];
                    b.append_bits(&zeros, 0, n)?;
                } else {
                    b.extend_uninit(n);
                }
            }
            ValuesBuilder::Variable(b) => {
                for _ in 0..n {
                    b.append_empty()?;
                }
            }
            ValuesBuilder::FixedSizeList {
                dim,
                validity,
                child,
                len,
            } => {
                if let Some(v) = validity {
                    v.append_n(n * *dim, true);
                }
                child.append_zeros(n * *dim)?;
                *len += n;
            }
            ValuesBuilder::Struct { children, len } => {
                for c in children {
                    c.append_zeros(n)?;
                }
                *len += n;
            }
        }
        Ok(())
    }

    /// Turn the values into an Arrow array of `data_type`, with `nulls` as its validity.
    pub fn finish(self, data_type: &DataType, nulls: Option<NullBuffer>) -> Result<ArrayRef> {
        let len = self.len();
        if let Some(n) = &nulls {
            if n.len() != len {
                return Err(corrupt(format!(
                    "{} validity bits for {len} values",
                    n.len()
                )));
            }
        }
        let nulls = nulls.filter(|n| n.null_count() > 0);
        let data = match (self, data_type) {
            (_, DataType::Null) => return Ok(arrow_array::new_null_array(&DataType::Null, len)),
            (ValuesBuilder::Fixed(b), dt) => {
                let expected = match dt {
                    DataType::Boolean => 1,
                    DataType::FixedSizeBinary(n) => (*n as u32).wrapping_mul(8),
                    dt => dt.primitive_width().map(|w| w as u32 * 8).unwrap_or(0),
                };
                if expected != b.bits {
                    return Err(corrupt(format!(
                        "{}-bit values cannot be read as {dt}",
                        b.bits
                    )));
                }
                ArrayDataBuilder::new(dt.clone())
                    .len(len)
                    .add_buffer(b.into_buffer())
                    .nulls(nulls)
            }
            (
                ValuesBuilder::Variable(b),
                dt @ (DataType::Utf8
                | DataType::Binary
                | DataType::LargeUtf8
                | DataType::LargeBinary),
            ) => {
                let large = matches!(dt, DataType::LargeUtf8 | DataType::LargeBinary);
                if large != b.large {
                    return Err(corrupt(format!("offset width mismatch reading {dt}")));
                }
                if matches!(dt, DataType::Utf8 | DataType::LargeUtf8) {
                    check_utf8(&b)?;
                }
                let data = ArrayDataBuilder::new(dt.clone())
                    .len(len)
                    .add_buffer(b.offsets.into())
                    .add_buffer(Buffer::from_vec(b.data))
                    .nulls(nulls);
                // SAFETY: offsets start at 0, never decrease and end within the data (the
                // builder checks each append); UTF-8 was checked above for string types.
                return Ok(make_array(unsafe { data.build_unchecked() }));
            }
            (
                ValuesBuilder::FixedSizeList {
                    dim,
                    validity,
                    child,
                    len: n,
                },
                DataType::FixedSizeList(item, d),
            ) => {
                if *d as usize != dim {
                    return Err(corrupt(format!(
                        "fixed-size lists of {dim} items cannot be read as {data_type}"
                    )));
                }
                let item_nulls = validity.map(|mut v| NullBuffer::new(v.finish()));
                let child = child.finish(item.data_type(), item_nulls)?;
                ArrayDataBuilder::new(data_type.clone())
                    .len(n)
                    .add_child_data(child.to_data())
                    .nulls(nulls)
            }
            (ValuesBuilder::Struct { children, len: n }, DataType::Struct(fields)) => {
                if children.len() != fields.len() {
                    return Err(corrupt(format!(
                        "{} packed fields cannot be read as {data_type}",
                        children.len()
                    )));
                }
                let mut b = ArrayDataBuilder::new(data_type.clone()).len(n).nulls(nulls);
                for (c, f) in children.into_iter().zip(fields.iter()) {
                    b = b.add_child_data(c.finish(f.data_type(), None)?.to_data());
                }
                b
            }
            (other, dt) => return Err(corrupt(format!("{} cannot be read as {dt}", other.kind()))),
        };
        Ok(make_array(data.build()?))
    }
}

/// UTF-8 check for a whole string page: the bytes must be valid UTF-8 and every value
/// boundary must fall on a character boundary. Cheaper than checking value by value.
fn check_utf8(b: &VariableBuilder) -> Result<()> {
    let text = std::str::from_utf8(&b.data)
        .map_err(|e| corrupt(format!("string data is not valid UTF-8: {e}")))?;
    let bytes = text.as_bytes();
    let on_boundary = |o: usize| o == bytes.len() || (bytes[o] as i8) >= -0x40;
    let ok = if b.large {
        b.offsets
            .typed_data::<i64>()
            .iter()
            .all(|&o| on_boundary(o as usize))
    } else {
        b.offsets
            .typed_data::<i32>()
            .iter()
            .all(|&o| on_boundary(o as usize))
    };
    if ok {
        Ok(())
    } else {
        Err(corrupt("a string value boundary splits a UTF-8 character"))
    }
}

/// A string or binary array of `dt` over `data` as it is (no copy): `ends` are the
/// `n + 1` offsets from 0 (checked by the caller to rise and stay within `data`), `valid`
/// each value's validity. `build` checks the offsets again and, for strings, UTF-8.
pub fn variable_array(
    dt: &DataType,
    ends: &[u64],
    data: bytes::Bytes,
    valid: Vec<bool>,
) -> Result<ArrayRef> {
    let last = ends.last().copied().unwrap_or(0);
    let offsets = match dt {
        DataType::LargeUtf8 | DataType::LargeBinary => {
            Buffer::from_vec(ends.iter().map(|&e| e as i64).collect::<Vec<_>>())
        }
        DataType::Utf8 | DataType::Binary => {
            if last > i32::MAX as u64 {
                return Err(corrupt(format!(
                    "{last} bytes of strings in one page, too many for {dt} (read it as large)"
                )));
            }
            Buffer::from_vec(ends.iter().map(|&e| e as i32).collect::<Vec<_>>())
        }
        dt => return Err(corrupt(format!("string values cannot be read as {dt}"))),
    };
    let nulls = Some(NullBuffer::from(valid)).filter(|v| v.null_count() > 0);
    let array = ArrayDataBuilder::new(dt.clone())
        .len(ends.len().saturating_sub(1))
        .add_buffer(offsets)
        .add_buffer(Buffer::from(data.slice(0..last as usize)))
        .nulls(nulls)
        .build()?;
    Ok(make_array(array))
}

/// Bytes per value of a fixed-width type (plain values, vectors of them, packed struct
/// fields).
pub fn fixed_width(dt: &DataType) -> Result<usize> {
    let bad = || corrupt(format!("values of type {dt}"));
    match dt {
        DataType::FixedSizeBinary(w) => usize::try_from(*w).map_err(|_| bad()),
        DataType::FixedSizeList(item, d) => usize::try_from(*d)
            .ok()
            .and_then(|d| fixed_width(item.data_type()).ok()?.checked_mul(d))
            .ok_or_else(bad),
        dt => dt
            .primitive_width()
            .ok_or_else(|| unsupported(format!("{dt} as fixed-width values"))),
    }
}

/// `n` values of fixed-width type `dt` in `data`, without copying when it is aligned.
pub fn fixed_array(dt: &DataType, n: usize, data: Buffer) -> Result<ArrayRef> {
    let width = fixed_width(dt)?;
    if n.checked_mul(width).is_none_or(|size| data.len() < size) {
        return Err(corrupt(format!(
            "{} bytes for {n} values of {dt}",
            data.len()
        )));
    }
    let data = data.slice_with_length(0, n * width);
    let built = match dt {
        DataType::FixedSizeList(item, d) => {
            let count = n
                .checked_mul(*d as usize)
                .ok_or_else(|| corrupt(format!("{n} lists of {d} items")))?;
            let items = fixed_array(item.data_type(), count, data)?;
            ArrayDataBuilder::new(dt.clone())
                .len(n)
                .add_child_data(items.to_data())
        }
        _ => ArrayDataBuilder::new(dt.clone()).len(n).add_buffer(data),
    };
    Ok(make_array(built.align_buffers(true).build()?))
}

/// Replace an array's validity (the array came without one).
pub fn with_nulls(a: ArrayRef, nulls: Option<NullBuffer>) -> Result<ArrayRef> {
    let Some(nulls) = nulls.filter(|n| n.null_count() > 0) else {
        return Ok(a);
    };
    if nulls.len() != a.len() {
        return Err(corrupt(format!(
            "{} validity bits for {} values",
            nulls.len(),
            a.len()
        )));
    }
    let data = a.to_data().into_builder().nulls(Some(nulls)).build()?;
    Ok(arrow_array::make_array(data))
}
