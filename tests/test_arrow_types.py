"""lance_core.arrow: bfloat16 and image extension types, compared with pylance's lance.arrow.

Registration order matters. pyarrow keeps one class per extension name and process, and
pylance's ``lance.arrow`` registers its types without tolerating a name already taken, so it
must be imported before lance_core.arrow (other test files import it at collection time). In
this process pylance's classes are therefore the ones pyarrow builds when data is read back
(IPC, datasets): checks of read-back data here compare extension names, parameters and storage,
never classes. What a process without pylance gets is checked in subprocesses.

Only pyarrow, numpy and pandas are needed: ml_dtypes and Pillow are optional for
lance_core.arrow, and the tests that touch them force them absent.
"""

from __future__ import annotations

import math
import os
import pickle
import re
import struct
import subprocess
import sys
import textwrap

import lance.arrow as pylance_arrow  # noqa: I001  (first: see the module docstring)
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance
import lance_core
import lance_core.arrow as la
from lance.lance import BFloat16 as PylanceBFloat16
from lance_core.arrow import (BFloat16, BFloat16Array, BFloat16Type, EncodedImageArray, EncodedImageType,
                              FixedShapeImageTensorArray, FixedShapeImageTensorType, ImageArray, ImageURIArray,
                              ImageURIType, bfloat16_array, cast)

EXT_NAMES = ["lance.bfloat16", "lance.arrow.image_uri", "lance.arrow.encoded_image",
             "lance.arrow.fixed_shape_image_tensor"]


def bits(value) -> int:
    return int.from_bytes(BFloat16(value).to_bytes(), "little")


def f32(bits32: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits32))[0]


def ext_signature(typ: pa.DataType):
    """What identifies an extension type on the wire (name, parameters, storage), recursively
    through fixed-size lists; None for plain types."""
    if isinstance(typ, pa.ExtensionType):  # defined in Python
        return (typ.extension_name, typ.__arrow_ext_serialize__(), str(typ.storage_type))
    if isinstance(typ, pa.BaseExtensionType):  # pyarrow's own (arrow.fixed_shape_tensor)
        return (typ.extension_name, str(typ), ext_signature(typ.storage_type))
    if pa.types.is_fixed_size_list(typ):
        return ("fixed_size_list", typ.list_size, ext_signature(typ.value_type) or str(typ.value_type))
    return None


def plain(col):
    """An array or chunked array with every extension type replaced by its storage (values
    compare whatever class pyarrow built)."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if isinstance(col, pa.ExtensionArray):
        return plain(col.storage)
    if pa.types.is_fixed_size_list(col.type) and isinstance(col.type.value_type, pa.BaseExtensionType):
        size = col.type.list_size
        values = plain(col.values.slice(col.offset * size, len(col) * size))
        return pa.FixedSizeListArray.from_arrays(values, size, mask=col.is_null() if col.null_count else None)
    return col


def assert_same_data(got: pa.Table, want: pa.Table):
    assert got.column_names == want.column_names
    for name in want.column_names:
        assert ext_signature(got.schema.field(name).type) == ext_signature(want.schema.field(name).type), name
        assert plain(got.column(name)).equals(plain(want.column(name))), name


def run_python(code: str) -> str:
    """Run code in a fresh interpreter (its own extension type registry); its stdout."""
    env = dict(os.environ)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


# ---------------------------------------------------------------------------------------------
# BFloat16 scalars
# ---------------------------------------------------------------------------------------------

def test_bfloat16_rounds_to_nearest_even():
    assert bits(1.0) == 0x3F80
    assert bits(1.1) == 0x3F8D  # float32 0x3F8CCCCD: the dropped half is above the midpoint
    assert bits(f32(0x3F808000)) == 0x3F80  # a tie, already even: kept
    assert bits(f32(0x3F818000)) == 0x3F82  # a tie on an odd value: rounds up to even
    assert bits(f32(0x3F80_7FFF)) == 0x3F80
    assert bits(-2.0) == 0xC000
    assert bits(3.4e38) == 0x7F80  # above the largest bfloat16 (3.3895e38): infinity
    assert bits(1e39) == 0x7F80 and bits(-1e39) == 0xFF80  # beyond float32 too
    assert bits(float("inf")) == 0x7F80
    assert math.isnan(BFloat16(float("nan")).as_float())
    assert bits(-0.0) == 0x8000
    assert BFloat16(5) == BFloat16(5.0)
    assert BFloat16(np.float32(2.5)) == BFloat16(2.5)
    assert BFloat16(BFloat16(1.1)) == BFloat16(1.1)
    assert BFloat16(1.124565).as_float() == 1.125
    with pytest.raises(TypeError):
        BFloat16("1.0")


def test_bfloat16_str_matches_pylance_for_every_value():
    for b in range(1 << 16):
        raw = b.to_bytes(2, "little")
        assert str(BFloat16.from_bytes(raw)) == str(PylanceBFloat16.from_bytes(raw)), hex(b)
    assert str(BFloat16(1.124565)) == "1.125"
    assert str(BFloat16(1.1)) == repr(BFloat16(1.1)) == "1.1015625"
    assert str(BFloat16(-0.0)) == "-0"
    assert str(BFloat16(1e30)) == "1000255550000000000000000000000"
    assert str(BFloat16(float("nan"))) == "NaN" and str(BFloat16(float("-inf"))) == "-inf"


def test_bfloat16_conversion_matches_pylance():
    rng = np.random.default_rng(7)
    values = list(rng.uniform(-100, 100, 2000)) + list(rng.standard_normal(2000) * 10.0 ** rng.integers(-40, 38, 2000))
    values += [0.0, -0.0, 1e-45, 1e-40, 3.3895e38, 3.39e38, 3.4e38, 1e39, float("inf"), float("-inf")]
    values += [f32((0x3F80 + m) << 16 | 0x8000) for m in range(64)]  # ties
    for v in values:
        assert BFloat16(v).to_bytes() == bytes(pylance_bfloat16_bytes(v)), v
    assert bfloat16_array(values).storage.equals(pylance_arrow.bfloat16_array(values).storage)


def pylance_bfloat16_bytes(v):
    return pylance_arrow.bfloat16_array([v]).storage[0].as_py()


def test_bfloat16_comparisons():
    one, more = BFloat16(1.0), BFloat16(1.1)
    assert more > one and more >= one and more != one and one < more and one <= more
    assert not (more < one or more <= one or more == one or one >= more)
    assert BFloat16(0.0) == BFloat16(-0.0)
    nan = BFloat16(float("nan"))
    assert nan != nan and not (nan == nan) and not (nan < one) and not (nan >= one)
    assert (BFloat16(1.0) == 1.0) is False  # only BFloat16 values compare equal
    with pytest.raises(TypeError):
        BFloat16(1.0) < 1.0  # noqa: B015
    assert sorted([BFloat16(3), BFloat16(-1), BFloat16(2)]) == [BFloat16(-1), BFloat16(2), BFloat16(3)]


def test_bfloat16_value_object():
    x = BFloat16(2.75)
    assert float(x) == 2.75 and x.as_float() == 2.75
    assert hash(x) == hash(2.75) and hash(BFloat16(0.0)) == hash(BFloat16(-0.0))
    assert {BFloat16(1.0), BFloat16(1.0), BFloat16(2.0)} == {BFloat16(1.0), BFloat16(2.0)}
    assert pickle.loads(pickle.dumps(x)) == x
    assert BFloat16.from_bytes(x.to_bytes()) == x
    with pytest.raises(ValueError):
        BFloat16.from_bytes(b"\x00")
    with pytest.raises(AttributeError):
        x.foo = 1


# ---------------------------------------------------------------------------------------------
# bfloat16 arrays
# ---------------------------------------------------------------------------------------------

def test_bfloat16_array_type_and_values():
    arr = bfloat16_array([1.1, None, 3.4])
    assert isinstance(arr, BFloat16Array) and isinstance(arr.type, BFloat16Type)
    assert arr.type.extension_name == "lance.bfloat16"
    assert arr.type.storage_type == pa.binary(2)
    assert arr.type.__arrow_ext_serialize__() == b""
    assert arr.storage.to_pylist() == [b"\x8d\x3f", None, b"\x5a\x40"]
    assert arr.null_count == 1
    assert arr.to_pylist() == [BFloat16(1.1), None, BFloat16(3.4)]
    assert arr[0].as_py() == BFloat16(1.1) and arr[1].as_py() is None
    assert arr[0] == BFloat16(1.1) and arr[0] == arr[0] and arr[0] != arr[2]
    assert arr[0] == pylance_arrow.bfloat16_array([1.1])[0]  # a scalar of pylance's class
    assert bfloat16_array(np.array([1.5, 2.5], np.float32)).to_pylist() == [BFloat16(1.5), BFloat16(2.5)]
    assert bfloat16_array(pa.array([1.5, None])).to_pylist() == [BFloat16(1.5), None]
    assert len(bfloat16_array([])) == 0
    with pytest.raises(TypeError):
        bfloat16_array("abc")


def test_bfloat16_array_str_and_repr():
    arr = bfloat16_array([1.1, None, 3.4])
    assert str(arr) == "[\n  1.1015625,\n  None,\n  3.40625\n]"
    assert re.fullmatch(r"<lance\.arrow\.BFloat16Array object at 0x[0-9a-f]+>\n\[\n  1\.1015625,\n  None,\n"
                        r"  3\.40625\n\]", repr(arr))
    assert str(bfloat16_array([1.0, 2.0, 3.0])) == "[\n  1,\n  2,\n  3\n]"
    long = str(bfloat16_array(list(range(30)))).split("\n")
    assert long[1:3] == ["  0,", "  1,"] and "..." in long[11] and long[-2] == "  29"
    assert str(bfloat16_array([])) == "[]"


def test_bfloat16_to_numpy(monkeypatch):
    arr = bfloat16_array([1.0, 2.5, -3.0, 4.0])
    # with or without ml_dtypes, the values read as float32 are exact
    np.testing.assert_array_equal(np.asarray(arr.to_numpy(), dtype=np.float32), [1.0, 2.5, -3.0, 4.0])
    np.testing.assert_array_equal(np.asarray(arr.slice(1, 2).to_numpy(), dtype=np.float32), [2.5, -3.0])
    with pytest.raises(ValueError):
        bfloat16_array([1.0, None]).to_numpy()
    with pytest.raises(ValueError):
        BFloat16Array.from_numpy(np.array([1.0], np.float32))

    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # as without ml_dtypes installed
    values = arr.slice(1).to_numpy()
    assert values.dtype == np.float32
    np.testing.assert_array_equal(values, [2.5, -3.0, 4.0])
    with pytest.raises(ValueError):
        arr.to_numpy(zero_copy_only=True)


def test_bfloat16_numpy_dtype_when_available():
    """ml_dtypes is optional: when installed, to_numpy gives its bfloat16 and from_numpy takes it."""
    dtype = la._bf16_numpy_dtype()
    arr = bfloat16_array([1.5, -2.0, 7.0])
    if dtype is None:
        assert arr.to_numpy().dtype == np.float32
    else:
        values = arr.to_numpy()
        assert values.dtype == dtype and not values.flags.writeable
        assert arr.to_numpy(writable=True).flags.writeable
        back = BFloat16Array.from_numpy(values)
        assert back == arr and isinstance(back, BFloat16Array)
        assert la.PandasBFloat16Array.from_numpy(values).data == arr
    assert la.PandasBFloat16Array.from_numpy(np.array([1.5, -2.0, 7.0])).data == arr


def test_array_pickle_and_ipc():
    arr = bfloat16_array([1.5, None, 2.0])
    again = pickle.loads(pickle.dumps(arr))
    assert isinstance(again, BFloat16Array) and again.equals(arr)

    # IPC rebuilds the type from the registry: pylance's class in this process (see the docstring)
    sink = pa.BufferOutputStream()
    table = pa.table({"x": arr})
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    back = pa.ipc.open_stream(sink.getvalue()).read_all()
    assert ext_signature(back.schema.field("x").type) == ext_signature(arr.type)
    assert plain(back.column("x")).equals(arr.storage)
    owner = la if la.REGISTERED["lance.bfloat16"] else pylance_arrow
    assert isinstance(back.column("x").chunk(0), owner.BFloat16Array)


# ---------------------------------------------------------------------------------------------
# cast
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_cast_floats_to_and_from_bfloat16(dtype):
    floats = pa.array(np.array([1.0, 2.0, 3.0, 4.0], dtype=dtype))
    for target in ("bfloat16", "bf16", BFloat16Type(), pylance_arrow.BFloat16Type()):
        bf16 = cast(floats, target)
        assert isinstance(bf16, BFloat16Array)
        assert bf16.to_pylist() == [BFloat16(1.0), BFloat16(2.0), BFloat16(3.0), BFloat16(4.0)]
    assert cast(bf16, floats.type).equals(floats)
    assert cast(bf16, str(floats.type)).equals(floats)


def test_cast_rounds_like_pylance():
    rng = np.random.default_rng(3)
    values = rng.standard_normal(5000) * 10.0 ** rng.integers(-30, 30, 5000)
    ours = cast(pa.array(values), "bfloat16")
    assert ours.storage.equals(pylance_arrow.bfloat16_array(list(values)).storage)
    back = cast(ours, pa.float32()).to_numpy()
    np.testing.assert_allclose(back, values.astype(np.float32), rtol=2 ** -8)


def test_cast_keeps_nulls_and_offsets():
    floats = pa.array([1.0, None, 2.5, None, -4.0], pa.float64())
    bf16 = cast(floats.slice(1), "bf16")
    assert bf16.to_pylist() == [None, BFloat16(2.5), None, BFloat16(-4.0)]
    assert cast(bf16.slice(1), pa.float64()).to_pylist() == [2.5, None, -4.0]
    assert cast(bf16, pa.float16()).to_pylist() == [None, 2.5, None, -4.0]
    assert cast(bf16, pa.string()).to_pylist() == [None, "2.5", None, "-4"]
    assert cast(pa.array([1, 2, None]), "bfloat16").to_pylist() == [BFloat16(1), BFloat16(2), None]
    chunked = cast(pa.chunked_array([[1.0, 2.0], [None, 3.0]]), "bf16")
    assert isinstance(chunked, pa.ChunkedArray) and chunked.num_chunks == 2
    assert chunked.to_pylist() == [BFloat16(1.0), BFloat16(2.0), None, BFloat16(3.0)]
    with pytest.raises(ValueError):
        cast(pa.array(["a"]), "bfloat16")


def test_cast_fixed_size_lists():
    values = pa.array(np.arange(8, dtype=np.float32))
    fsl = pa.FixedSizeListArray.from_arrays(values, 2, mask=pa.array([False, True, False, False]))
    bf16_type = pa.list_(BFloat16Type(), 2)
    bf16 = cast(fsl, bf16_type)
    assert bf16.type == bf16_type
    assert bf16.to_pylist() == [[BFloat16(0), BFloat16(1)], None, [BFloat16(4), BFloat16(5)], [BFloat16(6), BFloat16(7)]]
    assert cast(bf16, fsl.type).equals(fsl)
    assert cast(fsl.slice(2), bf16_type).to_pylist() == bf16.slice(2).to_pylist()
    assert cast(bf16.slice(1), fsl.type).equals(fsl.slice(1))
    with pytest.raises(ValueError):
        cast(fsl, pa.list_(BFloat16Type(), 4))


def test_cast_accepts_pylance_arrays_and_falls_back_to_pyarrow():
    theirs = pylance_arrow.bfloat16_array([1.5, None])
    assert cast(theirs, pa.float32()).to_pylist() == [1.5, None]
    assert isinstance(cast(theirs, BFloat16Type()), BFloat16Array)
    assert cast(pa.array([1, 2]), pa.float32()).equals(pa.array([1.0, 2.0], pa.float32()))
    assert cast(pa.array(["1"]), pa.int64(), safe=True).equals(pc.cast(pa.array(["1"]), pa.int64()))


# ---------------------------------------------------------------------------------------------
# pandas
# ---------------------------------------------------------------------------------------------

def test_pandas_series_roundtrip():
    arr = bfloat16_array([1.1, None, 3.4])
    series = arr.to_pandas()
    assert isinstance(series.array, la.PandasBFloat16Array)
    assert series.dtype == la.PandasBFloat16Type() and str(series.dtype) == "lance.bfloat16"
    assert series[0] == BFloat16(1.1) and series[1] is None and series[2] == BFloat16(3.4)
    assert series.isna().tolist() == [False, True, False]

    same = pd.Series(series, dtype=la.PandasBFloat16Type())
    pd.testing.assert_series_equal(series, same)
    # By name, pandas takes the first dtype registered as "lance.bfloat16": pylance's here.
    by_name = pd.Series(series, dtype="lance.bfloat16")
    assert [str(v) for v in by_name] == ["1.1015625", "None", "3.40625"]

    back = pa.array(series)
    assert isinstance(back, BFloat16Array) and back == arr
    pd.testing.assert_series_equal(back.to_pandas(), series)


def test_pandas_array_operations():
    series = bfloat16_array([1.0, None, 3.0, 4.0]).to_pandas()
    assert series.iloc[::-1].tolist() == [BFloat16(4.0), BFloat16(3.0), None, BFloat16(1.0)]
    assert series.take([3, 0]).tolist() == [BFloat16(4.0), BFloat16(1.0)]
    assert series[series.notna()].tolist() == [BFloat16(1.0), BFloat16(3.0), BFloat16(4.0)]
    assert pd.concat([series, series]).tolist() == series.tolist() * 2
    assert (series == series).tolist() == [True, False, True, True]
    assert series.to_numpy(dtype=object).tolist() == series.tolist()
    assert pickle.loads(pickle.dumps(series)).tolist() == series.tolist()
    reindexed = series.reindex([0, 5])
    assert reindexed.tolist() == [BFloat16(1.0), None]

    frame = pd.DataFrame({"x": series, "y": [1, 2, 3, 4]})
    table = pa.Table.from_pandas(frame, preserve_index=False)
    assert ext_signature(table.schema.field("x").type) == ("lance.bfloat16", b"", "fixed_size_binary[2]")
    assert table.column("x").to_pylist() == series.tolist()
    assert la.PandasBFloat16Array._from_sequence([BFloat16(2.0), None, 3]).data.to_pylist() == \
        [BFloat16(2.0), None, BFloat16(3.0)]


# ---------------------------------------------------------------------------------------------
# images
# ---------------------------------------------------------------------------------------------

@pytest.fixture
def image_files(tmp_path):
    paths = []
    for i in range(3):
        path = tmp_path / f"img{i}.bin"
        path.write_bytes(bytes([i]) * (i + 2))
        paths.append(path)
    return paths


def test_image_uri_arrays(image_files):
    uris = ["file://" + str(p) for p in image_files]
    from_list = ImageURIArray.from_uris(uris)
    assert isinstance(from_list, ImageURIArray) and from_list.type == ImageURIType()
    assert from_list.type.extension_name == "lance.arrow.image_uri"
    assert from_list.type.__arrow_ext_serialize__() == b""
    assert from_list.to_pylist() == uris
    large = ImageURIArray.from_uris(pa.array(uris, pa.large_string()))
    assert large.type.storage_type == pa.large_string() and large.to_pylist() == uris
    assert ImageURIArray.from_uris(image_files).to_pylist() == [str(p) for p in image_files]  # Path objects
    assert ImageURIArray.from_uris(pa.array(uris)).to_pylist() == uris
    with pytest.raises(TypeError):
        ImageURIArray.from_uris(pa.array([1, 2]))
    with pytest.raises(ValueError):
        ImageURIType(pa.binary())

    encoded = from_list.read_uris()
    assert isinstance(encoded, EncodedImageArray) and encoded.type == EncodedImageType()
    assert encoded.to_pylist() == [p.read_bytes() for p in image_files]
    # plain local paths, nulls, large_binary storage
    mixed = ImageURIArray.from_uris([str(image_files[0]), None, uris[2]])
    read = mixed.read_uris(pa.large_binary())
    assert read.type == EncodedImageType(pa.large_binary())
    assert read.to_pylist() == [image_files[0].read_bytes(), None, image_files[2].read_bytes()]
    assert re.match(r"<lance\.arrow\.ImageURIArray object at 0x[0-9a-f]+>\n\['", repr(from_list))


def test_image_array_from_array(image_files):
    uris = [str(p) for p in image_files]
    uri_array = ImageArray.from_array(uris)
    assert isinstance(uri_array, ImageURIArray)
    assert ImageArray.from_array(uri_array) is uri_array
    assert isinstance(ImageArray.from_array(pa.array(uris, pa.large_string())), ImageURIArray)

    encoded = uri_array.read_uris()
    assert ImageArray.from_array(encoded) is encoded
    assert ImageArray.from_array(encoded.storage) == encoded
    large = ImageArray.from_array(encoded.storage.cast(pa.large_binary()))
    assert isinstance(large, EncodedImageArray) and large.to_pylist() == encoded.to_pylist()
    assert isinstance(ImageArray.from_array([b"\x89PNG", None]), EncodedImageArray)

    # pylance's classes are re-typed as ours
    theirs = pylance_arrow.ImageURIArray.from_uris(uris)
    assert type(ImageArray.from_array(theirs)) is ImageURIArray

    tensors = pa.FixedShapeTensorArray.from_numpy_ndarray(np.arange(24, dtype=np.uint8).reshape(2, 2, 2, 3))
    images = ImageArray.from_array(tensors)
    assert isinstance(images, FixedShapeImageTensorArray)
    assert images.type.shape == (2, 2, 3) and images.storage.equals(tensors.storage)
    with pytest.raises(TypeError):
        ImageArray.from_array(pa.array([1, 2]))
    with pytest.raises(TypeError):
        ImageArray.from_array(42)


def test_fixed_shape_image_tensor_type():
    typ = FixedShapeImageTensorType(pa.uint8(), (2, 3, 4))
    assert typ.extension_name == "lance.arrow.fixed_shape_image_tensor"
    assert typ.storage_type == pa.list_(pa.uint8(), 24)
    assert typ.__arrow_ext_serialize__() == b'{"shape": [2, 3, 4]}'  # the bytes pylance writes
    assert pylance_arrow.FixedShapeImageTensorType(pa.uint8(), (2, 3, 4)).__arrow_ext_serialize__() == \
        typ.__arrow_ext_serialize__()
    again = FixedShapeImageTensorType.__arrow_ext_deserialize__(typ.storage_type, typ.__arrow_ext_serialize__())
    assert again == typ and again.shape == (2, 3, 4) and again.arrow_type == pa.uint8()
    assert FixedShapeImageTensorType(pa.uint8(), [4, 6]) != typ  # same storage, other shape
    assert pickle.loads(pickle.dumps(typ)) == typ
    with pytest.raises(TypeError):
        FixedShapeImageTensorType.__arrow_ext_deserialize__(pa.list_(pa.uint8(), 5), typ.__arrow_ext_serialize__())
    with pytest.raises(ValueError):
        FixedShapeImageTensorType(pa.uint8(), ())


def test_image_tensors_decode_and_encode(monkeypatch):
    pixels = np.arange(2 * 2 * 3, dtype=np.uint8).reshape(1, 2, 2, 3).repeat(3, axis=0)
    pixels[1] += 100

    def encoder(images):  # a stand-in codec: shape-less raw bytes
        return pa.array([img.tobytes() for img in images], pa.binary())

    def decoder(data):
        return np.stack([np.frombuffer(b, np.uint8).reshape(2, 2, 3) for b in data.to_pylist()])

    tensor_type = FixedShapeImageTensorType(pa.uint8(), (2, 2, 3))
    tensors = pa.ExtensionArray.from_storage(
        tensor_type, pa.FixedShapeTensorArray.from_numpy_ndarray(pixels).storage)
    assert isinstance(tensors, FixedShapeImageTensorArray)
    np.testing.assert_array_equal(tensors.to_numpy(), pixels)
    assert tensors[1].as_py() == pixels[1].ravel().tolist()

    encoded = tensors.to_encoded(encoder)
    assert isinstance(encoded, EncodedImageArray) and encoded[0].as_py() == pixels[0].tobytes()
    assert encoded.to_tensor(decoder) == tensors
    as_lists = tensors.to_encoded(lambda images: [img.tobytes() for img in images], pa.large_binary())
    assert as_lists.type == EncodedImageType(pa.large_binary())

    def arrow_decoder(data):  # a decoder may return an Arrow fixed_shape_tensor array
        return pa.FixedShapeTensorArray.from_numpy_ndarray(decoder(data))

    assert encoded.to_tensor(arrow_decoder) == tensors
    assert re.match(r"<lance\.arrow\.EncodedImageArray object at 0x[0-9a-f]+>", repr(encoded))

    monkeypatch.setitem(sys.modules, "PIL", None)  # as without Pillow installed
    with pytest.raises(ValueError, match="decoder"):
        encoded.to_tensor()
    with pytest.raises(ValueError, match="encoder"):
        tensors.to_encoded()


def test_image_arrays_pickle(image_files):
    uri_array = ImageURIArray.from_uris([str(p) for p in image_files])
    tensors = pa.ExtensionArray.from_storage(
        FixedShapeImageTensorType(pa.uint8(), (1, 1, 4)),
        pa.FixedShapeTensorArray.from_numpy_ndarray(np.ones((3, 1, 1, 4), np.uint8)).storage)
    for arr in (uri_array, uri_array.read_uris(), tensors):
        again = pickle.loads(pickle.dumps(arr))
        assert type(again) is type(arr) and again == arr


# ---------------------------------------------------------------------------------------------
# datasets: lance_core and pylance read each other's extension columns
# ---------------------------------------------------------------------------------------------

def extension_table(ns) -> pa.Table:
    """A table of every extension type, built with the classes of module ns (either library)."""
    values = ns.bfloat16_array([1.5, None, -2.25, 3.0])
    vectors = pa.FixedSizeListArray.from_arrays(ns.bfloat16_array([float(i) for i in range(8)]), 2)
    uris = ns.ImageURIArray.from_uris(["/tmp/a.png", "s3://bucket/b.png", "http://x/c.jpg", "d.png"])
    encoded = ns.EncodedImageArray.from_storage(ns.EncodedImageType(), pa.array([b"\x89PNG", b"", b"ab", b"c"]))
    tensors = ns.FixedShapeImageTensorArray.from_storage(
        ns.FixedShapeImageTensorType(pa.uint8(), (1, 2, 1)),
        pa.FixedSizeListArray.from_arrays(pa.array(range(8), pa.uint8()), 2))
    canonical = pa.ExtensionArray.from_storage(pa.fixed_shape_tensor(values.type, [2]), vectors)
    return pa.table({"bf16": values, "vec": vectors, "uri": uris, "enc": encoded, "ten": tensors, "canon": canonical})


def test_dataset_roundtrip_lance_core(tmp_path):
    data = extension_table(la)
    lance_core.write_dataset(data, tmp_path / "ds")
    ds = lance_core.dataset(str(tmp_path / "ds"))
    assert_same_data(ds.to_table(), data)
    assert_same_data(ds.take([2, 0]), data.take([2, 0]))
    assert_same_data(ds.to_table(filter="bf16 IS NULL"), data.slice(1, 1))


def test_pylance_reads_lance_core_and_back(tmp_path):
    ours = extension_table(la)
    lance_core.write_dataset(ours, tmp_path / "ours")
    assert_same_data(lance.dataset(str(tmp_path / "ours")).to_table(), ours)

    theirs = extension_table(pylance_arrow)
    lance.write_dataset(theirs, tmp_path / "theirs")
    read = lance_core.dataset(str(tmp_path / "theirs")).to_table()
    assert_same_data(read, theirs)
    assert_same_data(read, ours)  # the same data, whichever library built it
    assert read.column("ten").type.__arrow_ext_serialize__() == b'{"shape": [1, 2, 1]}'


def test_registration_in_this_process():
    # pylance's lance.arrow was imported first (at the top of this file): its classes own the names
    assert set(la.REGISTERED) == set(EXT_NAMES)
    assert la.REGISTERED == {name: False for name in EXT_NAMES}
    assert "lance_core.arrow" in sys.modules


def test_without_pylance_lance_core_classes_are_read_back(tmp_path):
    out = run_python(f"""
        import sys
        import pyarrow as pa
        import lance_core
        import lance_core.arrow as la
        assert all(la.REGISTERED.values()), la.REGISTERED
        values = la.bfloat16_array([1.5, None])
        uris = la.ImageURIArray.from_uris(["a.png", "b.png"])
        tensors = la.FixedShapeImageTensorArray.from_storage(
            la.FixedShapeImageTensorType(pa.uint8(), (1, 1, 2)),
            pa.FixedSizeListArray.from_arrays(pa.array([1, 2, 3, 4], pa.uint8()), 2))
        table = pa.table({{"bf16": values, "uri": uris, "ten": tensors}})
        lance_core.write_dataset(table, {str(tmp_path / "ds")!r})
        back = lance_core.dataset({str(tmp_path / "ds")!r}).to_table()
        assert back == table and back.schema == table.schema
        assert isinstance(back.column("bf16").chunk(0), la.BFloat16Array)
        assert isinstance(back.column("uri").chunk(0), la.ImageURIArray)
        assert back.column("ten").type.shape == (1, 1, 2)
        assert "lance" not in sys.modules  # lance_core never imports pylance
        print("ok")
        """)
    assert out.strip() == "ok"


def test_pylance_registered_first_is_tolerated():
    out = run_python("""
        import lance.arrow
        import lance_core.arrow as la
        print(sorted(la.REGISTERED.items()))
        print(type(la.bfloat16_array([1.0])).__module__)
        """)
    lines = out.splitlines()
    assert lines[0] == str(sorted((name, False) for name in EXT_NAMES))
    assert lines[1] == "lance_core.arrow"  # arrays built here are still ours


def test_lance_core_registered_first_breaks_pylance_import():
    """Known limitation, documented in lance_core.arrow: pylance's lance.arrow does not tolerate
    a registered name, so it cannot be imported after lance_core.arrow in one process."""
    out = run_python("""
        import lance_core.arrow
        try:
            import lance.arrow
        except Exception as exc:
            print(type(exc).__name__)
        else:
            print("imported")
        """)
    assert out.strip() == "ArrowKeyError"


def test_import_is_light():
    out = run_python("""
        import sys
        import lance_core
        before = set(sys.modules)
        import lance_core.arrow
        new = set(sys.modules) - before
        print(sorted(m for m in new if m.split(".")[0] in ("lance", "ml_dtypes", "PIL", "polars", "duckdb")))
        """)
    assert out.strip() == "[]"
