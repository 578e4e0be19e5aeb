"""Every field encoding the schema spec names is honoured on write, as pylance 14 honours
it: packed structs (`lance-encoding:packed`), compression (`zstd`, `lz4`, `fsst`, `none`,
with a level), `structural-encoding`, and the extension types pylance writes (bfloat16,
images, JSON). The pages are checked as pylance's file reader describes them; an unknown
or invalid setting is an error naming the field, and leaves no table behind."""

from __future__ import annotations

import glob
import os

import lance
import pyarrow as pa
import pytest
from lance.arrow import EncodedImageType, FixedShapeImageTensorType, ImageArray, bfloat16_array
from lance.file import LanceFileReader

import lance_core
from lance_core.errors import InvalidInputError, UnsupportedFeatureError

PACKED = {"lance-encoding:packed": "true"}


def _page_encodings(path: str, column: int) -> list:
    """The encoding text of each page of `column` in the table's data files (pylance's
    reader), without white space."""
    out = []
    for f in sorted(glob.glob(os.path.join(path, "data", "*.lance"))):
        meta = LanceFileReader(f).metadata()
        out += ["".join(p.encoding.split()) for p in meta.columns[column].pages]
    return out


def _both(table: pa.Table, tmp_path, name: str, version: str):
    """Write `table` with both libraries; the two paths."""
    ours, theirs = str(tmp_path / f"{name}_ours"), str(tmp_path / f"{name}_ref")
    lance_core.write_dataset(table, ours, data_storage_version=version)
    lance.write_dataset(table, theirs, data_storage_version=version)
    return ours, theirs


def _packed_cases():
    fixed = pa.struct([("a", pa.int32()), ("b", pa.float64()), ("c", pa.uint8()), ("d", pa.date32())])
    variable = pa.struct([("a", pa.int32()), ("s", pa.string()), ("l", pa.large_binary())])
    vectors = pa.struct([("id", pa.int64()), ("v", pa.list_(pa.float32(), 3)), ("t", pa.timestamp("us"))])
    n = 3000
    return {
        "fixed": (fixed, [{"a": i, "b": i / 2, "c": i % 7, "d": i} if i % 5 else None for i in range(n)]),
        "variable": (variable, [{"a": i, "s": "x" * (i % 9), "l": bytes(i % 4)} if i % 5 else None
                                for i in range(n)]),
        "vectors": (vectors, [{"id": i, "v": [i, 0.5, -i], "t": i} for i in range(n)]),
    }


@pytest.mark.parametrize("case", ["fixed", "variable", "vectors"])
@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_packed_structs_as_pylance_writes_them(tmp_path, case, version):
    """A packed struct is one column of whole rows: fixed-width fields as mini-block
    `PackedStruct` rows (2.1, 2.2), variable-width or list fields as full-zip
    `VariablePackedStruct` rows (2.2; refused in 2.1, as pylance refuses them)."""
    typ, values = _packed_cases()[case]
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("s", typ, metadata=PACKED)])
    table = pa.table({"id": pa.array(range(len(values)), pa.int64()), "s": pa.array(values, typ)}, schema=schema)
    if case != "fixed" and version == "2.1":
        with pytest.raises(UnsupportedFeatureError, match="packed struct field 's' in format 2.1"):
            lance_core.write_dataset(table, str(tmp_path / "t"), data_storage_version=version)
        with pytest.raises(OSError, match="Variable packed struct"):
            lance.write_dataset(table, str(tmp_path / "r"), data_storage_version=version)
        assert not os.path.exists(tmp_path / "t" / "_versions")
        return
    ours, theirs = _both(table, tmp_path, case, version)
    assert lance.dataset(ours).to_table().equals(table)
    assert lance_core.dataset(ours).to_table().equals(table)
    assert lance.dataset(ours).schema == lance.dataset(theirs).schema
    assert _page_encodings(ours, 1) == _page_encodings(theirs, 1)
    assert ("VariablePackedStruct" in _page_encodings(ours, 1)[0]) == (case != "fixed")
    # appends in both directions keep it packed
    lance.write_dataset(table, ours, mode="append")
    lance_core.write_dataset(table, theirs, mode="append")
    for path in (ours, theirs):
        assert lance.dataset(path).to_table().equals(pa.concat_tables([table, table]))


def test_packed_structs_in_lists_and_bad_fields(tmp_path):
    """Packed structs inside lists; fields that cannot be packed, and NULL fields in a
    valid row, are refused naming the field."""
    item = pa.field("item", pa.struct([("a", pa.int32()), ("s", pa.string())]), metadata=PACKED)
    lists = pa.array([[{"a": 1, "s": "x"}, None], [], None, [{"a": 3, "s": "yy"}]], pa.list_(item))
    table = pa.table({"l": lists})
    ours, theirs = _both(table, tmp_path, "lists", "2.2")
    assert lance.dataset(ours).to_table().equals(table) and lance_core.dataset(ours).to_table().equals(table)
    assert _page_encodings(ours, 0) == _page_encodings(theirs, 0)
    for typ, what in ((pa.bool_(), "Boolean"), (pa.list_(pa.int32()), "List"), (pa.struct([("x", pa.int8())]), "Struct")):
        st = pa.struct([("a", pa.int32()), ("z", typ)])
        bad = pa.table({"s": pa.nulls(1, st)}, schema=pa.schema([pa.field("s", st, metadata=PACKED)]))
        with pytest.raises(UnsupportedFeatureError, match=f"packed struct field 's': its field 'z' is {what}"):
            lance_core.write_dataset(bad, str(tmp_path / "bad"))
    st = pa.struct([("a", pa.int32()), ("b", pa.int64())])
    with_null = pa.StructArray.from_arrays([pa.array([1, None], pa.int32()), pa.array([1, 2])], fields=list(st))
    with pytest.raises(InvalidInputError, match="packed struct field 's': 'a' has NULL values"):
        lance_core.write_dataset(pa.table({"s": with_null}, schema=pa.schema([pa.field("s", st, metadata=PACKED)])),
                                 str(tmp_path / "bad"))
    assert not os.path.exists(tmp_path / "bad" / "_versions")


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_compression_and_structural_settings_reach_the_pages(tmp_path, version):
    """zstd (with its level) and lz4 wrap the values; `none` keeps strings plain where
    they would be FSST-compressed; `fsst` keeps them out of a dictionary; fullzip and
    miniblock pick the layout. pylance reads every column back."""
    n = 20_000
    md = lambda **kw: {f"lance-encoding:{k.replace('_', '-')}": v for k, v in kw.items()}  # noqa: E731
    urls = [f"https://example.com/catalogue/item/{i}/details?ref={i * 7919 % 100_000}" for i in range(n)]
    repeated = [f"category-{i % 12}" for i in range(n)]
    schema = pa.schema([
        pa.field("z", pa.int64(), metadata=md(compression="zstd", compression_level="7")),
        pa.field("l", pa.int64(), metadata=md(compression="lz4")),
        pa.field("plain", pa.string(), metadata=md(compression="none")),
        pa.field("fsst", pa.string(), metadata=md(compression="fsst")),
        pa.field("fz", pa.int32(), metadata=md(structural_encoding="fullzip")),
        pa.field("mb", pa.string(), metadata=md(structural_encoding="miniblock")),
        pa.field("auto", pa.string()),
    ])
    table = pa.table([pa.array([i * 3 for i in range(n)]), pa.array([i % 1000 for i in range(n)]),
                      pa.array(urls), pa.array(repeated), pa.array(range(n), pa.int32()),
                      pa.array([u * 5 for u in urls[:n]]), pa.array(urls)], schema=schema)
    path = str(tmp_path / "t")
    lance_core.write_dataset(table, path, data_storage_version=version)
    assert lance.dataset(path).to_table().equals(table)
    pages = {name: _page_encodings(path, i) for i, name in enumerate(schema.names)}
    assert all("CompressionAlgorithmZstd" in p and "level:Some(7" in p for p in pages["z"])
    assert all("CompressionAlgorithmLz4" in p for p in pages["l"])
    assert not any("Fsst" in p for p in pages["plain"]) and any("Fsst" in p for p in pages["auto"])
    assert not any("dictionary:Some" in p for p in pages["fsst"])
    assert all("FullZipLayout" in p for p in pages["fz"])
    assert all("MiniBlockLayout" in p for p in pages["mb"])


def test_extension_types_as_pylance_writes_them(tmp_path):
    """bfloat16 (a column, and fixed-size lists of it), image URIs, encoded images, image
    tensors and JSON: pylance's schema and values, in both formats."""
    n = 4
    table = pa.table({
        "bf16": bfloat16_array([1.5, None, 3.25, -2.0]),
        "bf16_vec": pa.FixedSizeListArray.from_arrays(bfloat16_array([float(i) for i in range(2 * n)]), 2),
        "uri": ImageArray.from_array(["file:///a.png", None, "s3://b/c.jpg", "https://x/y.webp"]),
        "encoded": pa.ExtensionArray.from_storage(EncodedImageType(pa.binary()),
                                                  pa.array([b"\x89PNG", None, b"\xff\xd8", b""])),
        "tensor": pa.ExtensionArray.from_storage(FixedShapeImageTensorType(pa.uint8(), (2, 2, 1)),
                                                 pa.array([[1, 2, 3, 4], None, [5, 6, 7, 8], [0] * 4],
                                                          pa.list_(pa.uint8(), 4))),
        "json": pa.array(['{"a": 1}', None, "[1, 2]", '"s"'], pa.json_(pa.utf8())),
    })
    for version in ("2.1", "2.2"):
        ours, theirs = _both(table, tmp_path, version, version)
        assert lance.dataset(ours).schema == lance.dataset(theirs).schema, version
        assert lance.dataset(ours).to_table().equals(lance.dataset(theirs).to_table()), version
        assert lance_core.dataset(ours).to_table().equals(lance.dataset(theirs).to_table()), version
        # JSON is stored as JSONB and read back as normalised text, as pylance's is
        assert lance.dataset(ours).to_table()["json"].to_pylist() == ['{"a":1}', None, "[1,2]", '"s"']


@pytest.mark.parametrize("key,value,expected", [
    ("compression", "brotli", "expected none, fsst, zstd or lz4"),
    ("compression-level", "high", "expected an integer"),
    ("structural-encoding", "columnar", "expected miniblock or fullzip"),
    ("packed", "yes", "expected true or false"),
    ("blob", "false", "expected true"),
])
def test_invalid_settings_name_the_field(tmp_path, key, value, expected):
    field = pa.field("s", pa.string(), metadata={f"lance-encoding:{key}": value})
    table = pa.table({"s": pa.array(["a", "b"])}, schema=pa.schema([field]))
    path = str(tmp_path / "t")
    with pytest.raises(InvalidInputError, match=f"field 's': lance-encoding:{key} is '{value}', {expected}"):
        lance_core.write_dataset(table, path)
    assert not os.path.exists(os.path.join(path, "_versions"))


def test_settings_checked_against_the_field(tmp_path):
    """A zstd level outside zstd's range and a blob marking on a non-binary field are
    refused."""
    level = pa.field("z", pa.int64(), metadata={"lance-encoding:compression": "zstd",
                                                "lance-encoding:compression-level": "99"})
    with pytest.raises(InvalidInputError, match="field 'z'.*a zstd level from"):
        lance_core.write_dataset(pa.table({"z": [1]}, schema=pa.schema([level])), str(tmp_path / "a"))
    text = pa.field("s", pa.string(), metadata={"lance-encoding:blob": "true"})
    with pytest.raises(InvalidInputError, match="field 's': lance-encoding:blob is set on a string field"):
        lance_core.write_dataset(pa.table({"s": ["x"]}, schema=pa.schema([text])), str(tmp_path / "b"))
