"""Write small datasets with pylance, for `write_corpus` (rust/core/src/fuzzing/smoke.rs) to
cut into seed inputs: every file version (legacy 0.1, 2.0, 2.1, 2.2), the encodings pylance
picks for common types and the ones field metadata asks for, deletion files of both
kinds and stable row ids. Usage: python fuzz/make_datasets.py OUT_DIR"""
import shutil
import sys
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa


def field(name, typ, **md):
    meta = {f"lance-encoding:{k.replace('_', '-')}": v for k, v in md.items()}
    return pa.field(name, typ, metadata=meta or None)


def table(n, version):
    rng = np.random.default_rng(7)
    ints = pa.array([None if i % 13 == 0 else i * 7 % 1000 for i in range(n)], pa.int32())
    strs = pa.array([None if i % 11 == 0 else f"value {i % 97} of the column" for i in range(n)])
    cols = {
        "i64": pa.array(np.arange(n, dtype=np.int64) * 3),
        "i32": ints,
        "u8": pa.array((np.arange(n) % 200).astype(np.uint8)),
        "f64": pa.array(np.round(rng.normal(100, 5, n), 2)),
        "f32": pa.array(rng.random(n).astype(np.float32)),
        "bool": pa.array([None if i % 7 == 0 else i % 3 == 0 for i in range(n)]),
        "str": strs,
        "lowcard": pa.array([["red", "green", "blue", None][i % 4] for i in range(n)]),
        "bin": pa.array([bytes([i % 256]) * (i % 9) for i in range(n)], pa.binary()),
        "fsb": pa.array([bytes([i % 256]) * 8 for i in range(n)], pa.binary(8)),
        "date": pa.array(np.arange(n, dtype=np.int32), pa.date32()),
        "ts": pa.array(np.arange(n, dtype=np.int64) * 1000, pa.timestamp("us", tz="UTC")),
        "dec": pa.array([i * 100 for i in range(n)], pa.decimal128(12, 2)),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 8).astype(np.float32)), 8),
        "list": pa.array([None if i % 5 == 0 else list(range(i % 4)) for i in range(n)], pa.list_(pa.int32())),
        "list_str": pa.array([None if i % 6 == 0 else ["a" * (i % 3), None][: i % 3] for i in range(n)],
                             pa.list_(pa.string())),
        "struct": pa.StructArray.from_arrays([ints, strs], names=["a", "b"],
                                             mask=pa.array([i % 9 == 4 and version >= "2.1" for i in range(n)])),
        "list_struct": pa.array([None if i % 4 == 0 else [{"x": i, "y": str(i)}] * (i % 3) for i in range(n)],
                                pa.list_(pa.struct([("x", pa.int64()), ("y", pa.string())]))),
        "large_str": pa.array([f"L{i}" * (i % 5) for i in range(n)], pa.large_string()),
        "all_null": pa.array([None] * n, pa.int32()),
        "const": pa.array([7] * n, pa.int64()),
    }
    if version == "2.2":
        cols["map"] = pa.array([[("k", i)] * (i % 2) for i in range(n)], pa.map_(pa.string(), pa.int64()))
    if version != "legacy":
        cols["long_str"] = pa.array([None if i % 17 == 0 else "x" * (250 + i % 50) + str(i) for i in range(n)])
        cols["dict"] = pa.array([["a", "b", None][i % 3] for i in range(n)]).dictionary_encode()
    else:
        cols["dict"] = pa.array([["a", "b", "c"][i % 3] for i in range(n)]).dictionary_encode()
    return pa.table(cols)


def metadata_table(n):
    """Encodings chosen through field metadata (2.1+)."""
    rng = np.random.default_rng(3)
    doubles = pa.array(np.round(rng.normal(100, 5, n), 2))
    ints = pa.array(np.arange(n, dtype=np.int64))
    strs = pa.array([f"value number {i % 77} of the column" for i in range(n)])
    runs = pa.array((np.arange(n) // 100).astype(np.int32))
    fields = [
        field("zstd_double", pa.float64(), compression="zstd", bss="on"),
        field("lz4_int", pa.int64(), compression="lz4"),
        field("zstd_str", pa.string(), compression="zstd"),
        field("rle_int", pa.int32(), rle_threshold="0.9"),
        field("fullzip_int", pa.int64(), structural_encoding="fullzip"),
        field("fullzip_str", pa.string(), structural_encoding="fullzip"),
        field("dict_zstd", pa.string(), dict_values_compression="zstd"),
        field("blob", pa.large_binary(), blob="true"),
        field("packed", pa.struct([("a", pa.int32()), ("b", pa.float64())]), packed="true"),
    ]
    blobs = pa.array([None if i % 5 == 0 else b"b" * (i % 40) for i in range(n)], pa.large_binary())
    packed = pa.StructArray.from_arrays([pa.array(np.arange(n, dtype=np.int32)), doubles], names=["a", "b"])
    lowcard = pa.array([["red", "green", None][i % 3] for i in range(n)])
    data = [doubles, ints, strs, runs, ints, strs, lowcard, blobs, packed]
    return pa.table(data, schema=pa.schema(fields))


def main(out):
    out = Path(out)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for version in ["legacy", "2.0", "2.1", "2.2"]:
        name = version.replace(".", "_")
        uri = str(out / f"types_{name}.lance")
        lance.write_dataset(table(600, version), uri, data_storage_version=version, max_rows_per_file=300)
        ds = lance.dataset(uri)
        ds.delete("i64 % 9 = 0")  # a small (Arrow) deletion file per fragment
        if version != "legacy":
            uri = str(out / f"meta_{name}.lance")
            lance.write_dataset(metadata_table(1500), uri, data_storage_version=version)
    uri = str(out / "rowids.lance")
    t = pa.table({"id": pa.array(np.arange(12000, dtype=np.int64))})
    lance.write_dataset(t, uri, enable_stable_row_ids=True, max_rows_per_file=6000)
    ds = lance.dataset(uri)
    ds.delete("id % 2 = 0")  # 3000 per fragment: Arrow files
    ds.delete("id < 5500")  # the first fragment now has a bitmap
    ds.update({"id": "id + 1"}, where="id > 11990")  # rows move: row ids with holes
    # Fixed-size lists of structs (2.2).
    items = pa.StructArray.from_arrays(
        [pa.array([None if k % 7 == 0 else k for k in range(400)], pa.int32())], names=["a"])
    rows = pa.FixedSizeListArray.from_arrays(items, 2)
    lance.write_dataset(pa.table({"f": rows}), str(out / "fsl_struct.lance"), data_storage_version="2.2")


if __name__ == "__main__":
    main(sys.argv[1])
