"""Arrow extension types used by Lance datasets: bfloat16 and images.

This is the lance_core counterpart of pylance's ``lance.arrow``. The extension names, storage
types and serialized parameters are the ones pylance writes, so a column written by one library
reads back as the same extension type in the other:

=========================================  ==========================  ==========================
extension name                              storage                     serialized parameters
=========================================  ==========================  ==========================
``lance.bfloat16``                          ``fixed_size_binary(2)``    ``b""``
``lance.arrow.image_uri``                   ``string``/``large_string`` ``b""``
``lance.arrow.encoded_image``               ``binary``/``large_binary`` ``b""``
``lance.arrow.fixed_shape_image_tensor``    ``fixed_size_list<T>[n]``   ``{"shape": [h, w, c]}`` (JSON)
=========================================  ==========================  ==========================

The image types, arrays and scalars are defined in ``lance_core._images`` and named here.

bfloat16 values are stored little endian: the upper 16 bits of the float32 with the same sign
and exponent, rounded to nearest (ties to even).

Registration. Importing this module registers the four types with pyarrow, so data read from a
dataset (or IPC, or any C data interface producer) comes back as these classes. pyarrow keeps one
Python class per extension name and process: if another library (pylance's ``lance.arrow``) has
already registered a name, that registration is kept and data read back in this process is of
that library's classes (its arrays still hold the same storage and extension name, and the
functions here, such as :func:`cast`, accept them). Registering first has the mirror effect on
the other library: pylance registers without catching the error, so ``import lance.arrow`` fails
in a process that imported this module before it. :data:`REGISTERED` says which names this
module owns in the current process.

Optional dependencies are imported only where they are used: numpy (conversions to and from
ndarrays), ``ml_dtypes`` (the numpy ``bfloat16`` dtype), pandas (the pandas extension array,
built on first use) and Pillow (default image decoder and encoder).
"""

from __future__ import annotations

import math
import struct
import sys
from typing import Any, Dict, Iterable, Optional, Union

import pyarrow as pa

from ._images import ENCODED_IMAGE_EXT_NAME, FIXED_SHAPE_IMAGE_TENSOR_EXT_NAME, IMAGE_URI_EXT_NAME  # noqa: F401
from ._images import (_REPR_MODULE, EncodedImageArray, EncodedImageScalar, EncodedImageType,
                      FixedShapeImageTensorArray, FixedShapeImageTensorScalar, FixedShapeImageTensorType,
                      ImageArray, ImageScalar, ImageURIArray, ImageURIScalar, ImageURIType, _is_ext)

__all__ = [
    "BFloat16",
    "BFloat16Array",
    "BFloat16Scalar",
    "BFloat16Type",
    "PandasBFloat16Array",  # noqa: F822  (served by the module __getattr__: they need pandas)
    "PandasBFloat16Type",  # noqa: F822
    "bfloat16_array",
    "cast",
    "EncodedImageArray",
    "EncodedImageScalar",
    "EncodedImageType",
    "FixedShapeImageTensorArray",
    "FixedShapeImageTensorScalar",
    "FixedShapeImageTensorType",
    "ImageArray",
    "ImageScalar",
    "ImageURIArray",
    "ImageURIScalar",
    "ImageURIType",
    "REGISTERED",
]

BFLOAT16_EXT_NAME = "lance.bfloat16"

# extension name -> True when this module's class is the one pyarrow builds for that name here.
REGISTERED: Dict[str, bool] = {}


# --------------------------------------------------------------------------------------------
# bfloat16 bit twiddling (pure Python, for scalars and small inputs)
# --------------------------------------------------------------------------------------------

def _to_float(value: Any) -> float:
    """A Python float from a number-like value (strings are refused, as a number is wanted)."""
    if isinstance(value, (str, bytes, bytearray)):
        raise TypeError(f"expected a number, got {type(value).__name__}")
    if isinstance(value, BFloat16):
        return value.as_float()
    return float(value)


def _f32_bits(value: float) -> int:
    """The bits of ``value`` rounded to float32 (overflow gives a signed infinity)."""
    try:
        packed = struct.pack("<f", value)
    except OverflowError:
        packed = struct.pack("<f", math.copysign(math.inf, value))
    return struct.unpack("<I", packed)[0]


def _bf16_bits_from_f32_bits(bits: int) -> int:
    """Round float32 bits to bfloat16 bits, to nearest with ties to even; a NaN stays a NaN
    (its top payload bits are kept and the quiet bit is set)."""
    if bits & 0x7FFFFFFF > 0x7F800000:
        return (bits >> 16) | 0x0040
    upper = bits >> 16
    lower = bits & 0xFFFF
    if lower > 0x8000 or (lower == 0x8000 and upper & 1):
        upper += 1  # a carry into the exponent is the correct rounding (up to infinity)
    return upper & 0xFFFF


def _bf16_bits(value: Any) -> int:
    if isinstance(value, BFloat16):
        return value._bits
    return _bf16_bits_from_f32_bits(_f32_bits(_to_float(value)))


def _bf16_bits_to_float(bits: int) -> float:
    return _f32_from_bits((bits & 0xFFFF) << 16)


def _f32_from_bits(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def _display_f32(value: float) -> str:
    """Format a float32 value as Rust's ``Display`` does: the fewest significant digits that
    read back (as a float32, rounding to nearest) to the same value, the closest such decimal
    (a tie rounds up), written out without an exponent."""
    from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_UP, Context, Decimal

    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    value = abs(value)
    if value == 0:
        return sign + "0"
    bits = _f32_bits(value)
    exact = Decimal(value)
    wide = Context(prec=200)
    # neighbours of a positive, finite float32 (the one above the largest is infinity)
    below, above = _f32_from_bits(bits - 1), _f32_from_bits(bits + 1)
    if math.isinf(above):  # the largest float32: its upper neighbour would be 2**128
        above = math.ldexp(1.0, 128)
    low = wide.divide(wide.add(exact, Decimal(below)), 2)
    high = wide.divide(wide.add(exact, Decimal(above)), 2)
    even = bits % 2 == 0  # a decimal exactly half way reads back to the even neighbour

    def reads_back(d):
        return low < d < high or (even and (d == low or d == high))

    for digits in range(1, 10):
        nearest = Context(prec=digits, rounding=ROUND_HALF_UP).plus(exact)
        if reads_back(nearest):
            break
        other_rounding = ROUND_FLOOR if nearest > exact else ROUND_CEILING
        other = Context(prec=digits, rounding=other_rounding).plus(exact)
        if reads_back(other):
            nearest = other
            break
    text = f"{nearest:e}"
    mantissa, _, exponent = text.partition("e")
    mantissa = mantissa.replace(".", "")
    # mantissa holds the significant digits d0 d1 d2 ..., the value is d0.d1d2... * 10**exp
    point = int(exponent) + 1
    if point <= 0:
        body = "0." + "0" * (-point) + mantissa
    elif point >= len(mantissa):
        body = mantissa + "0" * (point - len(mantissa))
    else:
        body = mantissa[:point] + "." + mantissa[point:]
    if "." in body:
        body = body.rstrip("0").rstrip(".")
    return sign + body


class BFloat16:
    """A bfloat16 number (8 bits of exponent, 7 of mantissa).

    ``BFloat16(x)`` rounds ``x`` to float32 and then to bfloat16 (to nearest, ties to even).
    Values compare with each other like floats (NaN is unequal to everything, ``-0 == 0``);
    ``str`` gives the shortest decimal that reads back as the same value.
    """

    __slots__ = ("_bits",)

    def __init__(self, value: Any):
        object.__setattr__(self, "_bits", _bf16_bits(value))

    def __setattr__(self, name, value):
        raise AttributeError("BFloat16 is immutable")

    @classmethod
    def from_bytes(cls, data: bytes) -> "BFloat16":
        """The value stored in 2 little-endian bytes (one element of the Arrow storage)."""
        data = bytes(data)
        if len(data) != 2:
            raise ValueError(f"BFloat16.from_bytes: expected 2 bytes, got {len(data)}")
        return cls._from_bits(int.from_bytes(data, "little"))

    @classmethod
    def _from_bits(cls, bits: int) -> "BFloat16":
        obj = cls.__new__(cls)
        object.__setattr__(obj, "_bits", bits & 0xFFFF)
        return obj

    def to_bytes(self) -> bytes:
        """The 2 little-endian bytes of this value."""
        return self._bits.to_bytes(2, "little")

    def as_float(self) -> float:
        """The value as a float (exact: every bfloat16 is a float32)."""
        return _bf16_bits_to_float(self._bits)

    def __float__(self) -> float:
        return self.as_float()

    def __repr__(self) -> str:
        return _display_f32(self.as_float())

    __str__ = __repr__

    def __hash__(self) -> int:
        return hash(self.as_float())

    def __reduce__(self):
        return (BFloat16.from_bytes, (self.to_bytes(),))

    def _compare(self, other, op):
        if not isinstance(other, BFloat16):
            return NotImplemented
        return op(self.as_float(), other.as_float())

    def __eq__(self, other):
        return self._compare(other, lambda a, b: a == b)

    def __ne__(self, other):
        return self._compare(other, lambda a, b: a != b)

    def __lt__(self, other):
        return self._compare(other, lambda a, b: a < b)

    def __le__(self, other):
        return self._compare(other, lambda a, b: a <= b)

    def __gt__(self, other):
        return self._compare(other, lambda a, b: a > b)

    def __ge__(self, other):
        return self._compare(other, lambda a, b: a >= b)


# --------------------------------------------------------------------------------------------
# bfloat16 with numpy (vectorized; numpy imported by the callers only)
# --------------------------------------------------------------------------------------------

def _np():
    import numpy

    return numpy


def _bf16_numpy_dtype():
    """ml_dtypes' numpy bfloat16 dtype, or None without ml_dtypes."""
    try:
        from ml_dtypes import bfloat16
    except ImportError:
        return None
    return _np().dtype(bfloat16)


def _is_bf16_numpy_dtype(dtype) -> bool:
    return dtype.name == "bfloat16" and dtype.itemsize == 2


def _bits_from_floats(values) -> "Any":
    """uint16 bfloat16 bits of a numpy array of numbers: through float32, then to nearest with
    ties to even; NaN becomes the quiet NaN of its sign (as ml_dtypes converts it)."""
    np = _np()
    with np.errstate(over="ignore", invalid="ignore"):
        f32 = np.ascontiguousarray(values, dtype=np.float32)
    bits = f32.view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    nan_bits = np.where(bits >> 31 == 1, 0xFFC0, 0x7FC0)
    return np.where(np.isnan(f32), nan_bits, rounded).astype(np.uint16)


def _floats_from_bits(bits) -> "Any":
    """float32 numpy array from uint16 bfloat16 bits (exact)."""
    np = _np()
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def _validity_buffer(valid) -> Optional[pa.Buffer]:
    """An Arrow validity bitmap from a numpy bool array (None when every value is valid)."""
    np = _np()
    if valid is None or bool(np.all(valid)):
        return None
    return pa.py_buffer(np.packbits(np.asarray(valid, dtype=bool), bitorder="little").tobytes())


def _bf16_array_from_bits(bits, valid=None) -> "BFloat16Array":
    np = _np()
    bits = np.ascontiguousarray(bits, dtype="<u2")
    validity = _validity_buffer(valid)
    null_count = 0 if validity is None else int(len(bits) - np.count_nonzero(valid))
    storage = pa.Array.from_buffers(pa.binary(2), len(bits), [validity, pa.py_buffer(bits.tobytes())],
                                    null_count=null_count)
    return pa.ExtensionArray.from_storage(BFloat16Type(), storage)


def _storage_bits(arr: pa.Array):
    """uint16 numpy view of the bits of a bfloat16 array (nulls hold arbitrary bits)."""
    np = _np()
    storage = arr.storage if isinstance(arr, pa.ExtensionArray) else arr
    data = storage.buffers()[1]
    if data is None or len(storage) == 0:
        return np.zeros(0, dtype="<u2")
    return np.frombuffer(data, dtype="<u2", count=len(storage), offset=storage.offset * 2)


# --------------------------------------------------------------------------------------------
# bfloat16 Arrow extension type
# --------------------------------------------------------------------------------------------

def _is_bf16_type(typ: Any) -> bool:
    return _is_ext(typ, BFLOAT16_EXT_NAME)


class BFloat16Type(pa.ExtensionType):
    """Arrow extension type ``lance.bfloat16``: bfloat16 values in ``fixed_size_binary(2)``."""

    def __init__(self):
        super().__init__(pa.binary(2), BFLOAT16_EXT_NAME)

    def __arrow_ext_serialize__(self) -> bytes:
        return b""

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type, serialized):
        if storage_type != pa.binary(2):
            raise TypeError(f"{BFLOAT16_EXT_NAME} needs fixed_size_binary(2) storage, got {storage_type}")
        return cls()

    def __arrow_ext_class__(self):
        return BFloat16Array

    def __arrow_ext_scalar_class__(self):
        return BFloat16Scalar

    def to_pandas_dtype(self):
        return _pandas_classes()[0]()


class BFloat16Scalar(pa.ExtensionScalar):
    """One element of a :class:`BFloat16Array`; ``as_py()`` gives a :class:`BFloat16` or None."""

    def as_py(self, **kwargs) -> Optional[BFloat16]:
        raw = self.value.as_py(**kwargs) if self.value is not None else None
        return None if raw is None else BFloat16.from_bytes(raw)

    def __eq__(self, other):
        if isinstance(other, pa.Scalar) and not _is_bf16_type(other.type):
            return super().__eq__(other)
        mine = self.as_py()
        if isinstance(other, pa.Scalar):  # a bfloat16 scalar, maybe of another library's class
            raw = other.value.as_py() if other.value is not None else None
            return mine == (None if raw is None else BFloat16.from_bytes(raw))
        if isinstance(other, BFloat16):
            return mine == other
        if type(other).__name__ == "bfloat16" and hasattr(other, "tobytes"):  # an ml_dtypes scalar
            return mine == BFloat16.from_bytes(other.tobytes())
        return False

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = pa.ExtensionScalar.__hash__


class BFloat16Array(pa.ExtensionArray):
    """Arrow array of bfloat16 values (``lance.bfloat16``)."""

    _EDGE = 10  # values shown at each end when the array is too long to show whole

    def __str__(self) -> str:
        n = len(self)
        if n <= 2 * self._EDGE + 1:
            lines = [f"  {v}" for v in self]
        else:
            lines = [f"  {v}" for v in self[: self._EDGE]] + ["..."]
            lines += [f"  {v}" for v in self[n - self._EDGE:]]
        return "[\n" + ",\n".join(lines) + "\n]" if lines else "[]"

    def __repr__(self) -> str:
        return f"<{_REPR_MODULE}.{type(self).__name__} object at 0x{id(self):016x}>\n{self}"

    def to_numpy(self, zero_copy_only: bool = False, writable: bool = False):
        """The values as a numpy array of ml_dtypes' ``bfloat16`` (a view of the Arrow buffer
        unless ``writable``). Without ml_dtypes installed: float32 values (a copy; so
        ``zero_copy_only=True`` then raises). Nulls cannot be represented: they raise
        ValueError."""
        if self.null_count:
            raise ValueError("cannot convert a bfloat16 array with nulls to numpy")
        bits = _storage_bits(self)
        dtype = _bf16_numpy_dtype()
        if dtype is None:
            if zero_copy_only:
                raise ValueError("a zero-copy bfloat16 numpy array needs the ml_dtypes package")
            return _floats_from_bits(bits)
        if writable:
            return bits.view(dtype).copy()
        values = bits.view(dtype)
        values.flags.writeable = False  # a view of Arrow memory, which is immutable
        return values

    @classmethod
    def from_numpy(cls, array) -> "BFloat16Array":
        """A BFloat16Array from a 1-d numpy array of ml_dtypes' ``bfloat16`` (bits copied as
        they are; convert other floats with :func:`cast` or :func:`bfloat16_array`)."""
        np = _np()
        array = np.asarray(array)
        if not _is_bf16_numpy_dtype(array.dtype):
            raise ValueError(f"expected a numpy array of dtype bfloat16, got {array.dtype}")
        if array.ndim != 1:
            raise ValueError(f"expected a 1-d array, got {array.ndim} dimensions")
        return _bf16_array_from_bits(array.view(np.uint16))


def bfloat16_array(values: Iterable[Any]) -> BFloat16Array:
    """A :class:`BFloat16Array` of numbers (None for a null), each rounded as
    :class:`BFloat16` rounds."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        result = cast(values, BFloat16Type())
        return result.combine_chunks() if isinstance(result, pa.ChunkedArray) else result
    if type(values).__module__ == "numpy" and getattr(values, "ndim", None) == 1:
        if _is_bf16_numpy_dtype(values.dtype):
            return BFloat16Array.from_numpy(values)
        if values.dtype.kind in "fiu":
            return _bf16_array_from_bits(_bits_from_floats(values))
    if isinstance(values, (str, bytes)):
        raise TypeError("bfloat16_array needs a sequence of numbers")
    items = [None if v is None else struct.pack("<H", _bf16_bits(v)) for v in values]
    return pa.ExtensionArray.from_storage(BFloat16Type(), pa.array(items, type=pa.binary(2)))


# --------------------------------------------------------------------------------------------
# pandas: an extension dtype and array for bfloat16 (built the first time they are needed)
# --------------------------------------------------------------------------------------------

_PANDAS: list = []


def _pandas_classes():
    """(PandasBFloat16Type, PandasBFloat16Array), defined and registered with pandas once."""
    if _PANDAS:
        return _PANDAS[0]
    import numpy as np
    from pandas.api.extensions import ExtensionArray, ExtensionDtype, register_extension_dtype
    from pandas.api.indexers import check_array_indexer

    class PandasBFloat16Type(ExtensionDtype):
        """pandas dtype ``lance.bfloat16``: scalars are :class:`BFloat16`, missing is None."""

        name = BFLOAT16_EXT_NAME
        type = BFloat16
        kind = "f"
        na_value = None
        _is_numeric = True

        @classmethod
        def construct_array_type(cls):
            return PandasBFloat16Array

        @classmethod
        def construct_from_string(cls, string):
            if not isinstance(string, str):
                raise TypeError(f"'construct_from_string' expects a string, got {type(string)}")
            if string == cls.name:
                return cls()
            raise TypeError(f"Cannot construct a '{cls.__name__}' from '{string}'")

        def __from_arrow__(self, array):
            return PandasBFloat16Array(array)

    class PandasBFloat16Array(ExtensionArray):
        """pandas extension array of bfloat16 backed by a :class:`BFloat16Array`."""

        def __init__(self, data):
            if isinstance(data, pa.ChunkedArray):
                data = data.combine_chunks() if data.num_chunks else pa.array([], type=BFloat16Type())
            if not isinstance(data, pa.Array) or not _is_bf16_type(data.type):
                data = bfloat16_array(data)
            self.data = data

        @property
        def dtype(self):
            return PandasBFloat16Type()

        # construction
        @classmethod
        def _from_sequence(cls, scalars, *, dtype=None, copy=False):
            if isinstance(scalars, cls):
                return cls(scalars.data)
            if isinstance(scalars, (pa.Array, pa.ChunkedArray)):
                return cls(scalars)
            values = [None if _is_missing(v) else v for v in scalars]
            return cls(bfloat16_array(values))

        @classmethod
        def _from_factorized(cls, values, original):
            return cls._from_sequence(values, dtype=original.dtype)

        @classmethod
        def _concat_same_type(cls, to_concat):
            arrays = [a.data for a in to_concat]
            if not arrays:
                return cls(pa.array([], type=BFloat16Type()))
            return cls(pa.chunked_array(arrays, type=arrays[0].type))

        @classmethod
        def from_numpy(cls, array):
            """From a numpy array of ml_dtypes' bfloat16, or of other numbers (rounded)."""
            return cls(bfloat16_array(np.asarray(array)))

        # element access
        def __getitem__(self, item):
            if isinstance(item, (int, np.integer)):
                return self.data[int(item)].as_py()
            if isinstance(item, slice):
                return type(self)(self.data[item])
            item = check_array_indexer(self, item)
            if item.dtype == np.bool_:
                return type(self)(self.data.filter(pa.array(item)))
            return type(self)(self.data.take(pa.array(item)))

        def __len__(self):
            return len(self.data)

        def __iter__(self):
            for scalar in self.data:
                yield scalar.as_py()

        @property
        def nbytes(self):
            return self.data.nbytes

        def isna(self):
            return self.data.is_null().to_numpy(zero_copy_only=False)

        def take(self, indices, allow_fill=False, fill_value=None):
            from pandas.api.extensions import take

            positions = np.arange(len(self))
            taken = take(positions, indices, allow_fill=allow_fill, fill_value=-1)
            mask = taken < 0
            result = self.data.take(pa.array(np.where(mask, 0, taken), mask=mask if mask.any() else None))
            if allow_fill and fill_value is not None and mask.any():
                filled = [fill_value if m else v for m, v in zip(mask, type(self)(result))]
                return type(self)._from_sequence(filled)
            return type(self)(result)

        def copy(self):
            return type(self)(self.data)

        # conversions
        def __arrow_array__(self, type=None):
            return self.data

        def to_numpy(self, dtype=None, copy=False, na_value=None):
            if dtype is not None and np.dtype(dtype) == np.dtype(object):
                return np.array(list(self), dtype=object)
            if self.data.null_count:
                values = _floats_from_bits(_storage_bits(self.data)).copy()
                values[self.isna()] = np.nan if na_value is None else na_value
                return values if dtype is None else values.astype(dtype)
            values = BFloat16Array.to_numpy(self.data)
            return values if dtype is None else values.astype(dtype)

        def __array__(self, dtype=None, copy=None):
            return self.to_numpy(dtype=object if dtype is None else dtype)

        def __eq__(self, other):
            mine = _floats_from_bits(_storage_bits(self.data))
            if isinstance(other, PandasBFloat16Array):
                theirs = _floats_from_bits(_storage_bits(other.data))
                missing = self.isna() | other.isna()
            elif isinstance(other, BFloat16):
                theirs, missing = other.as_float(), self.isna()
            else:
                return NotImplemented
            return (mine == theirs) & ~missing

    # Named as module attributes (served by __getattr__), so that pickle finds them.
    for cls in (PandasBFloat16Type, PandasBFloat16Array):
        cls.__qualname__ = cls.__name__
        cls.__module__ = __name__
    register_extension_dtype(PandasBFloat16Type)
    _PANDAS.append((PandasBFloat16Type, PandasBFloat16Array))
    return _PANDAS[0]


def _is_missing(value) -> bool:
    if value is None:
        return True
    if "pandas" in sys.modules and not isinstance(value, BFloat16):
        import pandas

        return value is pandas.NA or value is pandas.NaT
    return False


def __getattr__(name: str):
    # The pandas classes exist only once pandas is imported (see _pandas_classes).
    if name == "PandasBFloat16Type":
        return _pandas_classes()[0]
    if name == "PandasBFloat16Array":
        return _pandas_classes()[1]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --------------------------------------------------------------------------------------------
# cast
# --------------------------------------------------------------------------------------------

def _resolve_type(target_type: Union[pa.DataType, str]) -> Union[pa.DataType, str]:
    if isinstance(target_type, str):
        if target_type.lower() in ("bfloat16", "bf16", BFLOAT16_EXT_NAME):
            return BFloat16Type()
        return pa.type_for_alias(target_type)
    return target_type


def cast(arr: Union[pa.Array, pa.ChunkedArray], target_type: Union[pa.DataType, str], *args, **kwargs):
    """``pyarrow.compute.cast`` that also knows bfloat16.

    - numbers (floating or integer) to bfloat16: ``target_type`` is ``"bfloat16"``, ``"bf16"``
      or a :class:`BFloat16Type` (values round to nearest; nulls stay null);
    - bfloat16 to a floating type (exact), or to any type pyarrow casts float32 to;
    - fixed-size lists of either to fixed-size lists of the other, with the same list size.

    Anything else is passed to ``pyarrow.compute.cast`` with ``args`` and ``kwargs``. Arrays
    with the ``lance.bfloat16`` extension name are accepted whichever library's class they
    are of.
    """
    import pyarrow.compute as pc

    target = _resolve_type(target_type)
    if isinstance(arr, pa.ChunkedArray):
        chunks = [cast(chunk, target, *args, **kwargs) for chunk in arr.chunks]
        out_type = chunks[0].type if chunks else (target if isinstance(target, pa.DataType) else None)
        return pa.chunked_array(chunks, type=out_type)

    source = arr.type
    if _is_bf16_type(source):
        if _is_bf16_type(target):
            return arr if isinstance(arr, BFloat16Array) else pa.ExtensionArray.from_storage(BFloat16Type(), arr.storage)
        np = _np()
        valid = arr.is_valid().to_numpy(zero_copy_only=False)
        floats = pa.array(_floats_from_bits(_storage_bits(arr)), mask=None if valid.all() else ~valid)
        if pa.types.is_floating(target):
            if target == pa.float16():
                return pa.array(floats.to_numpy(zero_copy_only=False).astype(np.float16),
                                mask=None if valid.all() else ~valid)
            return floats.cast(target)
        return pc.cast(floats, target, *args, **kwargs)

    if _is_bf16_type(target):
        if not (pa.types.is_floating(source) or pa.types.is_integer(source)):
            raise ValueError(f"only numbers cast to bfloat16, got {source}")
        valid = arr.is_valid().to_numpy(zero_copy_only=False)
        if pa.types.is_integer(source):
            arr = arr.cast(pa.float64())
        values = arr.to_numpy(zero_copy_only=False)
        return _bf16_array_from_bits(_bits_from_floats(values), valid)

    if pa.types.is_fixed_size_list(source) and isinstance(target, pa.DataType) \
            and pa.types.is_fixed_size_list(target) \
            and (_is_bf16_type(source.value_type) or _is_bf16_type(target.value_type)):
        if source.list_size != target.list_size:
            raise ValueError(f"fixed-size lists cast only to the same size: {source} to {target}")
        size = source.list_size
        values = arr.values.slice(arr.offset * size, len(arr) * size)
        values = cast(values, target.value_type, *args, **kwargs)
        mask = arr.is_null() if arr.null_count else None
        return pa.FixedSizeListArray.from_arrays(values, type=target, mask=mask)

    return pc.cast(arr, target, *args, **kwargs)


# --------------------------------------------------------------------------------------------
# registration with pyarrow (and with pandas, if pandas is already loaded)
# --------------------------------------------------------------------------------------------

def _register(ext_type: pa.ExtensionType) -> None:
    try:
        pa.register_extension_type(ext_type)
    except pa.ArrowKeyError:  # the name is taken (by pylance's lance.arrow): keep that one
        REGISTERED[ext_type.extension_name] = False
    else:
        REGISTERED[ext_type.extension_name] = True


for _ext_type in (BFloat16Type(), ImageURIType(), EncodedImageType(), FixedShapeImageTensorType(pa.uint8(), (0,))):
    _register(_ext_type)
del _ext_type

if "pandas" in sys.modules:  # cheap then; else the pandas classes are built on first use
    try:
        _pandas_classes()
    except ImportError:
        pass
