"""Filters answered from the scalar indices pylance builds (issue 24, point 1): the rows are
exactly those of a full scan, in both libraries, whatever happened to the table after
the index was built (deletions, appends, compactions, stable row ids, file formats)."""

from __future__ import annotations

import os
import shutil

import lance
import pyarrow as pa
import pytest
from lance.indices import IndexConfig

import lance_core

FILTERS = [
    "id = 777",
    "id < 30",
    "id >= 2990",
    "id BETWEEN 1000 AND 1040",
    "id IN (1, 500, 999, 1000, 2500, 12345)",
    "id IN (3, 4)",
    "id IS NULL",
    "id IS NOT NULL AND id < 10",
    "NOT (id > 5)",
    "id <> 5",
    "id NOT IN (1, 2, 3, 4)",
    "id NOT BETWEEN 10 AND 2980",
    "cat = 'c3'",
    "cat IS NULL",
    "cat IN ('c1', 'c2') AND id < 300",
    "cat = 'c1' OR id = 5",
    "NOT cat = 'c1'",
    "cat <> 'c2' AND id > 2900",
    "id > 2950 OR cat IS NULL",
    "x > 5 AND id = 3",
    "(id < 100 OR id > 2900) AND NOT (cat = 'c0')",
    "lower(cat) = 'c5' AND id < 2000",
    "cat LIKE 'c1%' OR id < 10",
    "id = 777 OR x < 3",
    "array_has_any(tags, ['t1', 't2'])",
    "array_has_all(tags, ['t0', 't3'])",
    "NOT array_has(tags, 't4')",
    "array_has_any(tags, ['t5']) AND id < 1500",
    "array_has_any(tags, [NULL]) OR cat = 'c2'",
    "NOT (array_has_all(tags, ['t1', 't2']) OR id > 1000)",
]


def _table(start: int, n: int) -> pa.Table:
    ids = [None if i % 97 == 0 else (i * 7919) % 3000 for i in range(start, start + n)]
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "cat": pa.array([None if i % 51 == 0 else f"c{i % 8}" for i in range(start, start + n)]),
        "x": pa.array([float(i) for i in range(start, start + n)]),
        "payload": pa.array([f"row {i}" for i in range(start, start + n)]),
        "tags": pa.array([None if i % 43 == 0 else [None if (i + k) % 29 == 0 else f"t{(i * (k + 1)) % 6}"
                                                    for k in range(i % 4)] for i in range(start, start + n)],
                         pa.list_(pa.string())),
    })


def _index(ds) -> None:
    # Small pages, so that page selection matters on a small table.
    ds.create_scalar_index("id", IndexConfig(index_type="btree", parameters={"zone_size": 64}))
    ds.create_scalar_index("cat", "BITMAP")
    ds.create_scalar_index("tags", "LABEL_LIST")


def _index_with(builder: str, uri: str) -> None:
    """The indices of `_index`, built by pylance or by lance_core."""
    if builder == "pylance":
        _index(lance.dataset(uri))
    else:
        ds = lance_core.dataset(uri)
        ds.create_scalar_index("id", "BTREE", zone_size=64)
        ds.create_scalar_index("cat", "BITMAP")
        ds.create_scalar_index("tags", "LABEL_LIST")


def _check(uri: str, filters=FILTERS, indexed: bool = True, pylance_indexed: bool = True) -> None:
    ours, ref = lance_core.dataset(uri), lance.dataset(uri)
    for f in filters:
        want = ref.to_table(filter=f, with_row_id=True, use_scalar_index=False)
        got = ours.to_table(filter=f, with_row_id=True)
        assert got.equals(want), f
        assert ours.to_table(filter=f, with_row_id=True, use_scalar_index=False).equals(want), f
        if pylance_indexed:
            assert ref.to_table(filter=f, with_row_id=True).sort_by("_rowid").equals(want.sort_by("_rowid")), f
        assert ours.count_rows(f) == want.num_rows, f
        # A narrow projection, and an offset and limit, through the index too.
        assert ours.to_table(columns=["payload"], filter=f).column(0).equals(want.column("payload")), f
        assert ours.to_table(filter=f, offset=2, limit=3, with_row_id=True).equals(want.slice(2, 3)), f
    if indexed:
        plan = ours.scanner(filter="id = 777").explain_plan()
        assert "ScalarIndexQuery: query=[id = 777]@id_idx(BTree)" in plan, plan
        plan = ours.scanner(filter="cat = 'c1'").explain_plan()
        assert "@cat_idx(Bitmap)" in plan, plan
        plan = ours.scanner(filter="array_has_any(tags, ['t1'])").explain_plan()
        assert "@tags_idx(LabelList)" in plan, plan
        assert "ScalarIndexQuery" not in ours.scanner(filter="x > 3").explain_plan()


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("stable", [False, True])
def test_pylance_indices_answer_filters_as_a_scan(tmp_path, version, stable):
    uri = str(tmp_path / "t.lance")
    ds = lance.write_dataset(_table(0, 3000), uri, max_rows_per_file=1000, data_storage_version=version,
                             enable_stable_row_ids=stable)
    _index(ds)
    _check(uri)
    # Deleted rows never come back; appended fragments are scanned.
    ds = lance.dataset(uri)
    ds.delete("id % 10 = 7 OR id = 777")
    lance.write_dataset(_table(3000, 700), uri, mode="append")
    ds = lance.dataset(uri)
    ds.delete("x = 3500")
    _check(uri)
    plan = lance_core.dataset(uri).scanner(filter="id = 5").explain_plan(verbose=True)
    assert "fragments [0, 1, 2]" in plan and "Filtered scan of 1 fragments: [3]" in plan, plan
    # pylance's compaction remaps the indices; then its incremental update covers the rest.
    lance.dataset(uri).optimize.compact_files(target_rows_per_fragment=2000)
    _check(uri)
    lance.dataset(uri).optimize.optimize_indices()
    _check(uri)
    # Turning the index off reads every fragment.
    plan = lance_core.dataset(uri).scanner(filter="id = 5", use_scalar_index=False).explain_plan()
    assert "ScalarIndexQuery" not in plan


def test_compaction_with_deferred_index_remapping(tmp_path):
    uri = str(tmp_path / "t.lance")
    ds = lance.write_dataset(_table(0, 3000), uri, max_rows_per_file=500)
    _index(ds)
    ds = lance.dataset(uri)
    ds.delete("id % 3 = 0")
    ds.optimize.compact_files(target_rows_per_fragment=1500, defer_index_remap=True)
    _check(uri, indexed=False)


def test_delta_segments_and_wholly_deleted_fragments(tmp_path):
    uri = str(tmp_path / "t.lance")
    ds = lance.write_dataset(_table(0, 2000), uri, max_rows_per_file=500)
    _index(ds)
    lance.write_dataset(_table(2000, 1000), uri, mode="append", max_rows_per_file=500)
    lance.dataset(uri).optimize.optimize_indices(num_indices_to_merge=0)
    assert len([i for i in lance_core.dataset(uri).list_indices() if i["name"] == "id_idx"]) == 2
    lance.dataset(uri).delete("x < 500")
    _check(uri)


def test_a_damaged_index_is_an_error_naming_its_file(tmp_path):
    uri = str(tmp_path / "t.lance")
    ds = lance.write_dataset(_table(0, 3000), uri)
    _index(ds)
    want = lance.dataset(uri).count_rows("cat = 'c1'")
    idx = {i["name"]: i["uuid"] for i in lance_core.dataset(uri).list_indices()}
    # Index files never change once written (their data is kept in memory between
    # queries), so they are damaged before anything reads them.
    pages = os.path.join(uri, "_indices", idx["id_idx"], "page_data.lance")
    with open(pages, "r+b") as f:
        f.truncate(os.path.getsize(pages) // 2)
    ds = lance_core.dataset(uri)
    with pytest.raises(Exception, match="page_data.lance"):
        ds.to_table(filter="id = 5")
    # The index can be left out, and other indices still work.
    assert ds.to_table(filter="id = 5", use_scalar_index=False).num_rows == 1
    assert ds.count_rows("cat = 'c1'") == want
    # A lookup file overwritten with garbage.
    uri2 = str(tmp_path / "t2.lance")
    ds = lance.write_dataset(_table(0, 3000), uri2)
    _index(ds)
    idx = {i["name"]: i["uuid"] for i in lance_core.dataset(uri2).list_indices()}
    lookup = os.path.join(uri2, "_indices", idx["cat_idx"], "bitmap_page_lookup.lance")
    size = os.path.getsize(lookup)
    with open(lookup, "r+b") as f:
        f.seek(size - 200)
        f.write(b"\x07" * 200)
    with pytest.raises(Exception, match="bitmap_page_lookup.lance"):
        lance_core.dataset(uri2).to_table(filter="cat = 'c1'")
    # A truncated NGRAM postings file.
    uri3 = str(tmp_path / "t3.lance")
    lance.write_dataset(_table(0, 3000), uri3).create_scalar_index("payload", "NGRAM")
    want = lance.dataset(uri3).count_rows("contains(payload, 'row 12')")
    uuid = lance_core.dataset(uri3).list_indices()[0]["uuid"]
    postings = os.path.join(uri3, "_indices", uuid, "ngram_postings.lance")
    with open(postings, "r+b") as f:
        f.truncate(os.path.getsize(postings) - 100)
    with pytest.raises(Exception, match="ngram_postings.lance"):
        lance_core.dataset(uri3).to_table(filter="contains(payload, 'row 12')")
    assert lance_core.dataset(uri3).count_rows("contains(payload, 'row 12')", use_scalar_index=False) == want


def test_range_partitioned_btree_as_older_pylance_wrote_it(tmp_path):
    """Older pylance split a BTREE's pages over one file per range of pages
    (`part_<id>_page_data.lance`, the lookup saying how many pages each holds); pylance 14
    still reads them. Made here by splitting pylance 14's own files."""
    from lance.file import LanceFileReader, LanceFileWriter

    uri = str(tmp_path / "t.lance")
    ds = lance.write_dataset(_table(0, 3000), uri)
    _index(ds)
    uuid = {i["name"]: i["uuid"] for i in lance_core.dataset(uri).list_indices()}["id_idx"]
    d = os.path.join(uri, "_indices", uuid)
    pages = LanceFileReader(os.path.join(d, "page_data.lance")).read_all().to_table()
    lookup = LanceFileReader(os.path.join(d, "page_lookup.lance")).read_all().to_table()
    per_page = 64
    split = 20  # pages in the first part
    for part, rows in ((0, pages.slice(0, split * per_page)), (1 << 32, pages.slice(split * per_page))):
        w = LanceFileWriter(os.path.join(d, f"part_{part}_page_data.lance"), rows.schema)
        w.write_batch(rows)
        w.close()
    os.remove(os.path.join(d, "page_data.lance"))
    os.remove(os.path.join(d, "page_lookup.lance"))
    n = lookup.num_rows
    meta = {"batch_size": str(per_page), "range_partitioned": "true",
            "page_num_per_range_partition": f"[[0,{split}],[{1 << 32},{n - split}]]"}
    w = LanceFileWriter(os.path.join(d, "page_lookup.lance"), lookup.schema.with_metadata(meta))
    w.write_batch(lookup)
    w.close()
    # (pylance checks the files' sizes the manifest records, which changed here.)
    _check(uri, filters=FILTERS[:12], indexed=False, pylance_indexed=False)
    assert "@id_idx(BTree)" in lance_core.dataset(uri).scanner(filter="id = 2999").explain_plan()


def _pylance_uses(uri: str, filters=FILTERS) -> None:
    """pylance answers from the indices (its plan says so) with a full scan's rows."""
    ref = lance.dataset(uri)
    for f in filters:
        want = ref.to_table(filter=f, with_row_id=True, use_scalar_index=False).sort_by("_rowid")
        assert ref.to_table(filter=f, with_row_id=True).sort_by("_rowid").equals(want), f
        assert ref.count_rows(f) == want.num_rows, f
    assert "ScalarIndexQuery: query=[id = 5]@id_idx(BTree)" in ref.scanner(filter="id = 5").explain_plan()
    assert "@cat_idx(Bitmap)" in ref.scanner(filter="cat = 'c1'").explain_plan()
    assert "@tags_idx(LabelList)" in ref.scanner(filter="array_has_any(tags, ['t1'])").explain_plan()


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("stable", [False, True])
def test_indices_we_build_are_used_by_pylance(tmp_path, version, stable):
    uri = str(tmp_path / "t.lance")
    lance.write_dataset(_table(0, 3000), uri, max_rows_per_file=1000, data_storage_version=version,
                        enable_stable_row_ids=stable)
    lance.dataset(uri).delete("id % 10 = 7")
    ds = lance_core.dataset(uri)
    ds.create_scalar_index("id", IndexConfig(index_type="btree", parameters={"zone_size": 64}))
    ds.create_scalar_index("cat", "BITMAP")
    ds.create_scalar_index("tags", "LABEL_LIST")
    _check(uri)
    _pylance_uses(uri)
    described = {d.name: d for d in lance.dataset(uri).describe_indices()}
    assert described["id_idx"].num_rows_indexed == lance.dataset(uri).count_rows() and described["cat_idx"].field_names == ["cat"]
    stats = lance.dataset(uri).stats.index_stats("id_idx")
    assert stats["num_indexed_fragments"] == 3 and stats["indices"][0]["num_pages"] == 43
    # New rows are scanned until the index covers them, in both libraries.
    lance.write_dataset(_table(3000, 500), uri, mode="append")
    _check(uri)
    _pylance_uses(uri)
    # Replacing, refusing to replace, dropping.
    ds = lance_core.dataset(uri)
    with pytest.raises(lance_core.errors.InvalidInputError, match="already exists"):
        ds.create_scalar_index("id", "BTREE", replace=False)
    ds.create_scalar_index("id", "BTREE")
    assert [i["fragment_ids"] for i in lance.dataset(uri).list_indices() if i["name"] == "id_idx"] == [{0, 1, 2, 3}]
    _check(uri)
    ds.drop_index("cat_idx")
    assert sorted(d.name for d in lance.dataset(uri).describe_indices()) == ["id_idx", "tags_idx"]
    assert "ScalarIndexQuery" not in lance_core.dataset(uri).scanner(filter="cat = 'c1'").explain_plan()
    _check(uri, indexed=False)


def test_bad_index_requests_are_clear_errors(tmp_path):
    uri = str(tmp_path / "t.lance")
    lance.write_dataset(pa.table({"id": [1, 2], "tags": [["a"], ["b"]]}), uri)
    ds = lance_core.dataset(uri)
    with pytest.raises(lance_core.errors.InvalidInputError, match="no such column"):
        ds.create_scalar_index("nope", "BTREE")
    with pytest.raises(lance_core.errors.InvalidInputError, match="cannot be built on column 'tags'"):
        ds.create_scalar_index("tags", "BTREE")
    with pytest.raises(lance_core.errors.InvalidInputError, match="LABEL_LIST index needs a list column, and 'id'"):
        ds.create_scalar_index("id", "LABEL_LIST")
    with pytest.raises(lance_core.errors.InvalidInputError, match="not built by lance_core"):
        ds.create_scalar_index("id", "IVF_PQ")
    with pytest.raises(lance_core.errors.InvalidInputError, match="zone_size"):
        ds.create_scalar_index("id", "BTREE", zone_size=0)
    with pytest.raises(Exception, match="no index named 'x'"):
        ds.drop_index("x")
    assert lance.dataset(uri).describe_indices() == []


def test_an_index_built_while_pylance_compacts_is_built_again(tmp_path):
    """A compaction committed after the index read its rows moved them: the commit
    conflicts, and the index is built again from the compacted table."""
    uri = str(tmp_path / "t.lance")
    lance.write_dataset(_table(0, 3000), uri, max_rows_per_file=500)
    lance.dataset(uri).delete("id % 3 = 0")
    stale = lance_core.dataset(uri)
    lance.dataset(uri).optimize.compact_files(target_rows_per_fragment=1500)
    stale.create_scalar_index("id", "BTREE")
    stale.create_scalar_index("cat", "BITMAP")
    stale.create_scalar_index("tags", "LABEL_LIST")
    fragments = {f.fragment_id for f in lance.dataset(uri).get_fragments()}
    assert [i["fragment_ids"] for i in lance.dataset(uri).list_indices()] == [fragments] * 3
    _check(uri)
    _pylance_uses(uri)


def _same_descriptions(uri: str) -> None:
    ref, ours = lance.dataset(uri), lance_core.dataset(uri)
    theirs = {d.name: d for d in ref.describe_indices()}
    mine = {d.name: d for d in ours.describe_indices()}
    assert sorted(theirs) == sorted(mine)
    for name, d in theirs.items():
        m = mine[name]
        for k in ("type_url", "index_type", "num_rows_indexed", "fields", "field_names", "total_size_bytes",
                  "details"):
            assert getattr(m, k) == getattr(d, k), (name, k)
        for a, b in zip(sorted(d.segments, key=lambda s: s.uuid), sorted(m.segments, key=lambda s: s.uuid)):
            for k in ("uuid", "fragment_ids", "index_version", "created_at", "dataset_version_at_last_update",
                      "size_bytes", "base_id"):
                assert getattr(b, k) == getattr(a, k), (name, k)
        want, got = ref.stats.index_stats(name), ours.index_statistics(name)
        assert got == want, name


def test_describe_and_statistics_as_pylance(tmp_path):
    uri = str(tmp_path / "t.lance")
    ds = lance.write_dataset(_table(0, 3000), uri, max_rows_per_file=1000)
    _index(ds)
    lance_core.dataset(uri).create_scalar_index("x", "BTREE")
    lance_core.dataset(uri).create_scalar_index("payload", "BITMAP")
    lance.write_dataset(_table(3000, 500), uri, mode="append")
    lance.dataset(uri).optimize.optimize_indices(index_names=["id_idx"], num_indices_to_merge=0)
    lance.dataset(uri).delete("id % 5 = 1")
    _same_descriptions(uri)


def _ops():
    """lance_core's operations that move, delete or replace rows, or change columns."""
    def merge(ds):
        src = _table(2990, 40).drop_columns(["payload"]).append_column("payload", pa.array(["merged"] * 40))
        src = src.set_column(0, "id", pa.array(range(2990, 3030), pa.int64()))
        ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(src)

    def restore(ds):
        v = ds.version
        ds.delete("id < 100")
        ds.checkout_version(v).restore()

    return {
        "delete": lambda ds: ds.delete("id % 4 = 1 OR cat = 'c3'"),
        "update": lambda ds: ds.update({"id": "id + 1", "cat": "'c9'"}, where="id < 500"),
        "merge_insert": merge,
        "compaction": lambda ds: ds.optimize.compact_files(target_rows_per_fragment=2000),
        "overwrite": lambda ds: lance_core.write_dataset(_table(5000, 800), ds.uri, mode="overwrite"),
        "restore": restore,
        "alter_columns": lambda ds: ds.alter_columns({"path": "cat", "name": "cat2"}),
        "drop_columns": lambda ds: ds.drop_columns(["cat"]),
        "cleanup": lambda ds: (ds.delete("id < 50"), ds.cleanup_old_versions(older_than=__import__("datetime").timedelta(0))),
    }


@pytest.mark.parametrize("builder", ["pylance", "lance_core"])
@pytest.mark.parametrize("op", list(_ops()))
def test_indices_stay_true_through_every_change(tmp_path, op, builder):
    """After each operation lance_core commits, a filter through the indices (those
    pylance built, and ours) gives a full scan's rows in both libraries: an index is
    either still right for the fragments it lists or no longer lists them."""
    uri = str(tmp_path / "t.lance")
    lance.write_dataset(_table(0, 3000), uri, max_rows_per_file=1000)
    _index_with(builder, uri)
    # And the kinds that only narrow rows down: trigrams, zones, Bloom filters.
    lib = lance if builder == "pylance" else lance_core
    lib.dataset(uri).create_scalar_index("payload", "NGRAM")
    lib.dataset(uri).create_scalar_index("x", "BLOOMFILTER")
    _ops()[op](lance_core.dataset(uri))
    names = set(lance_core.dataset(uri).schema.names)
    filters = [f for f in FILTERS if ("cat" in f) <= ("cat" in names)]
    filters += ["contains(payload, 'row 12')", "payload LIKE '%w 29%'", "x = 55.0", "x IN (7.0, 2999.0)"]
    if "cat2" in names:
        filters += ["cat2 = 'c1'", "cat2 IS NULL OR id < 10"]
    _check(uri, filters=filters, indexed=False)


def test_cleanup_removes_replaced_and_dropped_index_files(tmp_path):
    import datetime

    uri = str(tmp_path / "t.lance")
    lance.write_dataset(_table(0, 3000), uri, max_rows_per_file=1000)
    ds = lance_core.dataset(uri)
    ds.create_scalar_index("id", "BTREE")
    ds.create_scalar_index("cat", "BITMAP")
    old = {i["name"]: i["uuid"] for i in ds.list_indices()}
    ds.create_scalar_index("id", "BTREE")  # replaced: a new directory
    ds.drop_index("cat_idx")
    new = ds.list_indices()[0]["uuid"]
    ds.cleanup_old_versions(older_than=datetime.timedelta(0))
    assert sorted(os.listdir(os.path.join(uri, "_indices"))) == [new] != [old["id_idx"]]
    _check(uri, filters=FILTERS[:8], indexed=False)


def test_row_ranges_of_a_fragment_use_the_index(tmp_path):
    """A Spark task reads a range of a fragment's rows: the index answers there too."""
    uri = str(tmp_path / "t.lance")
    ds = lance.write_dataset(_table(0, 3000), uri, max_rows_per_file=1000)
    _index(ds)
    ds.delete("id % 10 = 3")
    ours = lance_core.dataset(uri)
    for f in ["id < 300", "cat = 'c1' AND id > 100", "NOT (id > 5)", "id = 777"]:
        for frag in ours.get_fragments():
            for start, end in [(0, 1000), (100, 400), (999, 1000), (500, 500)]:
                got = frag.to_table(filter=f, row_range=(start, end), with_row_id=True)
                want = frag.to_table(filter=f, row_range=(start, end), with_row_id=True, use_scalar_index=False)
                assert got.equals(want), (f, frag.fragment_id, start, end)


def test_spark_reads_through_the_index(spark, tmp_path):
    uri = str(tmp_path / "t.lance")
    ds = lance.write_dataset(_table(0, 3000), uri, max_rows_per_file=1000)
    _index(ds)
    df = spark.read.format("lance").load(uri)
    ref = lance.dataset(uri)
    # Only the fragment holding id 777 is planned.
    assert df.filter("id = 777").rdd.getNumPartitions() == 1
    assert df.filter("id < 0").count() == 0
    for f in ["id = 777", "id < 300 AND cat = 'c1'", "cat IS NULL"]:
        got = sorted(r["x"] for r in df.filter(f).select("x").collect())
        want = sorted(ref.to_table(filter=f, use_scalar_index=False)["x"].to_pylist())
        assert got == want, f


@pytest.mark.parametrize("builder", ["pylance", "lance_core"])
@pytest.mark.parametrize("merge", [0, 1])
def test_optimize_indices_covers_new_fragments(tmp_path, builder, merge):
    """Our optimize_indices over pylance's indices and ours: a delta segment over the new
    fragments, or one segment over all; both libraries use the result."""
    uri = str(tmp_path / "t.lance")
    lance.write_dataset(_table(0, 2000), uri, max_rows_per_file=1000)
    _index_with(builder, uri)
    lance.write_dataset(_table(2000, 1000), uri, mode="append", max_rows_per_file=500)
    lance.dataset(uri).delete("id % 9 = 2")
    ds = lance_core.dataset(uri)
    version = ds.version
    ds.optimize.optimize_indices(num_indices_to_merge=merge)
    listed = lance.dataset(uri).list_indices()
    segments = {n: [i["fragment_ids"] for i in listed if i["name"] == n] for n in ("id_idx", "cat_idx")}
    if merge:
        assert segments == {"id_idx": [{0, 1, 2, 3}], "cat_idx": [{0, 1, 2, 3}]}
    else:
        assert all(sorted(map(sorted, s)) == [[0, 1], [2, 3]] for s in segments.values()), segments
    plan = lance_core.dataset(uri).scanner(filter="id = 5").explain_plan()
    assert "Filtered scan of 0 fragments" in plan, plan
    _check(uri)
    _pylance_uses(uri)
    _same_descriptions(uri)
    # Up to date: nothing to commit.
    ds.optimize.optimize_indices()
    assert lance_core.dataset(uri).version == version + 1


ZONE_FILTERS = [
    "x = 300", "x < 600", "x BETWEEN 9000 AND 9100", "x IN (3, 9999, 12000)", "x IS NULL", "x IS NOT NULL AND id < 100",
    "NOT x > 50", "x > 17000 OR x IS NULL", "x <> 300", "f = 0.0", "f > 99", "f IS NULL", "f = 'NaN'::double",
    "f < -99", "s = 'k0500'", "s >= 'k0990'", "s LIKE 'k09%'", "starts_with(s, 'k01')", "s LIKE 'k1_0%'",
    "d = DATE '1970-01-05'", "d < DATE '1969-12-13'", "x = 300 AND s = 'k0001'",
]


def _zone_table(n: int, seed: int) -> pa.Table:
    import random
    rng = random.Random(seed)
    return pa.table({
        "id": pa.array(range(n)),
        "x": pa.array([None if rng.random() < 0.05 else i * 3 for i in range(n)], pa.int64()),
        "f": pa.array([None if rng.random() < 0.05 else rng.choice([float("nan"), -0.0, 0.0, 1.5, rng.uniform(-100, 100)])
                       for _ in range(n)]),
        "s": pa.array([None if rng.random() < 0.05 else f"k{rng.randint(0, 999):04d}" for _ in range(n)]),
        "d": pa.array([rng.randint(-20, 20) for _ in range(n)], pa.int32()).cast(pa.date32()),
    })


@pytest.mark.parametrize("builder", ["pylance", "lance_core"])
@pytest.mark.parametrize("stable", [False, True])
def test_zonemaps_narrow_filters_to_zones_in_both_libraries(tmp_path, builder, stable):
    """ZONEMAP indices (per zone of rows: value range, NULL and NaN counts; the exact NULL
    rows): built by either library, used by both with a full scan's rows; the zones are by
    row address, stable row ids or not."""
    uri = str(tmp_path / "t.lance")
    lance.write_dataset(_zone_table(6000, 5), uri, max_rows_per_file=2500, enable_stable_row_ids=stable)
    lance.dataset(uri).delete("id % 11 = 0")
    for c in ("x", "f", "s", "d"):
        if builder == "pylance":
            lance.dataset(uri).create_scalar_index(c, IndexConfig("zonemap", {"rows_per_zone": 300}))
        else:
            lance_core.dataset(uri).create_scalar_index(c, "ZONEMAP", rows_per_zone=300)
    lance.dataset(uri).delete("id % 13 = 0")

    def check():
        ref, ours = lance.dataset(uri), lance_core.dataset(uri)
        def rows(t):  # NaN equal to NaN
            return repr(t.sort_by("_rowid").to_pylist())

        for f in ZONE_FILTERS:
            want = ref.to_table(filter=f, with_row_id=True, use_scalar_index=False)
            assert rows(ours.to_table(filter=f, with_row_id=True)) == rows(want), f
            assert rows(ref.to_table(filter=f, with_row_id=True)) == rows(want), f
            assert ours.count_rows(f) == want.num_rows, f
            # Both consult the index for the same filters.
            assert ("ScalarIndexQuery" in ours.scanner(filter=f).explain_plan()) == \
                ("ScalarIndexQuery" in ref.scanner(filter=f).explain_plan()), f

    check()
    assert "@x_idx(ZoneMap), fragments [0, 1, 2], rechecked" in \
        lance_core.dataset(uri).scanner(filter="x = 300").explain_plan()
    _same_descriptions(uri)
    assert lance.dataset(uri).stats.index_stats("x_idx")["indices"] == [{"num_zones": 20, "rows_per_zone": 300}]
    # New fragments are scanned, then indexed.
    lance.write_dataset(_zone_table(1000, 6), uri, mode="append")
    check()
    lance_core.dataset(uri).optimize.optimize_indices(num_indices_to_merge=0)
    check()
    _same_descriptions(uri)


def test_bloom_filters_as_pylance_builds_them(tmp_path):
    """BLOOMFILTER indices: ours hold the very filters pylance's do (same zones, same bits),
    and each library's answers equality, IN and IS NULL through the other's, with a full
    scan's rows."""
    import random
    rng = random.Random(7)
    n = 5000
    table = pa.table({
        "id": pa.array(range(n)),
        "x": pa.array([None if rng.random() < 0.05 else rng.randint(0, 2000) for _ in range(n)], pa.int64()),
        "i8": pa.array([rng.randint(-100, 100) for _ in range(n)], pa.int8()),
        "f": pa.array([None if rng.random() < 0.05 else rng.choice([float("nan"), -0.0, 0.0, 1.5, rng.uniform(-9, 9)])
                       for _ in range(n)]),
        "s": pa.array([None if rng.random() < 0.05 else f"k{rng.randint(0, 999):04d}" for _ in range(n)]),
        "d": pa.array([rng.randint(-20, 20) for _ in range(n)], pa.int32()).cast(pa.date32()),
        "ts": pa.array([rng.randint(0, 10 ** 12) for _ in range(n)], pa.timestamp("us", tz="UTC")),
    })
    columns = ["x", "i8", "f", "s", "d", "ts"]
    filters = ["x = 300", "x IN (3, 999, 1500)", "x IS NULL", "x = 300 OR x IS NULL", "i8 = -5", "f = 0.0", "f = -0.0",
               "f = 1.5", "f IS NULL", "s = 'k0500'", "s IN ('k0001', 'k0002')", "d = DATE '1970-01-05'", "x <> 300",
               "x < 10", "s = 'zz'", "x = 7 AND s = 'k0001'"]
    contents = {}
    for builder in ("pylance", "lance_core"):
        uri = str(tmp_path / builder)
        lance.write_dataset(table, uri, max_rows_per_file=2000)
        lance.dataset(uri).delete("id % 11 = 0")
        for c in columns:
            if builder == "pylance":
                lance.dataset(uri).create_scalar_index(
                    c, IndexConfig("bloomfilter", {"number_of_items": 256, "probability": 0.01}))
            else:
                lance_core.dataset(uri).create_scalar_index(c, "BLOOMFILTER", number_of_items=256, probability=0.01)
        lance.dataset(uri).delete("id % 13 = 0")
        ref, ours = lance.dataset(uri), lance_core.dataset(uri)

        def rows(t):  # NaN equal to NaN
            return repr(t.sort_by("_rowid").to_pylist())

        for f in filters:
            want = ref.to_table(filter=f, with_row_id=True, use_scalar_index=False)
            assert rows(ours.to_table(filter=f, with_row_id=True)) == rows(want), (builder, f)
            assert rows(ref.to_table(filter=f, with_row_id=True)) == rows(want), (builder, f)
            assert ours.count_rows(f) == want.num_rows, (builder, f)
            assert ("ScalarIndexQuery" in ours.scanner(filter=f).explain_plan()) == \
                ("ScalarIndexQuery" in ref.scanner(filter=f).explain_plan()), (builder, f)
        _same_descriptions(uri)
        contents[builder] = {
            d.name: lance.file.LanceFileReader(
                os.path.join(uri, "_indices", d.segments[0].uuid, "bloomfilter.lance")).read_all().to_table()
            for d in ref.describe_indices()}
    for name, theirs in contents["pylance"].items():
        assert contents["lance_core"][name].equals(theirs), name
        assert contents["lance_core"][name].schema.metadata == theirs.schema.metadata, name
    with pytest.raises(lance_core.errors.InvalidInputError, match="BLOOMFILTER index cannot be built on column 'b'"):
        lance_core.write_dataset(pa.table({"b": [True, False]}), str(tmp_path / "bool")).create_scalar_index(
            "b", "BLOOMFILTER")


NGRAM_FILTERS = [
    "contains(t, 'abc')", "contains(t, 'ABC')", "contains(t, 'crème')", "contains(t, 'xy')", "contains(t, 'a b')",
    "t LIKE '%bcd%'", "t LIKE 'abc%'", "t LIKE '%z9q'", "t LIKE 'a%bc%de'", "t LIKE 'c_t%'", "t LIKE '%100\\%%'",
    "starts_with(t, 'strasse')", "ends_with(t, 'moon')", "contains(t, 'abc') AND contains(t, 'bcd')",
    "contains(t, 'abc') OR contains(t, 'moo')", "NOT contains(t, 'abc')", "contains(t, 'abc') AND id < 2000",
    "t LIKE '%qqq%'", "t IS NULL OR contains(t, 'goodbye')", "contains(t, 'ﬁsh')",
]


def _text_table(n: int, seed: int) -> pa.Table:
    import random
    rng = random.Random(seed)
    words = ["abc", "ABCD", "bcd", "crème", "Crème", "goodbye-moon", "strasse", "Straße", "ﬁsh", "fish", "z9q",
             "100%", "cat", "cut", "xy", "a b", "ℂat", "moon", "abcde"]
    return pa.table({
        "id": pa.array(range(n)),
        "t": pa.array([None if rng.random() < 0.05 else " ".join(rng.choice(words) for _ in range(rng.randint(0, 4)))
                       for _ in range(n)]),
    })


@pytest.mark.parametrize("builder", ["pylance", "lance_core"])
@pytest.mark.parametrize("stable", [False, True])
def test_ngram_indices_answer_like_and_contains_in_both_libraries(tmp_path, builder, stable):
    """NGRAM indices (the rows of each trigram of the folded text): ours hold the very
    tokens and posting lists pylance's do; each library answers LIKE, contains,
    starts_with and ends_with through the other's, with a full scan's rows, through
    deletions, appends, pylance's compaction (which remaps them) and our optimize."""
    uri = str(tmp_path / "t.lance")
    lance.write_dataset(_text_table(6000, 3), uri, max_rows_per_file=2500, enable_stable_row_ids=stable)
    lance.dataset(uri).delete("id % 11 = 0")
    other = str(tmp_path / "other.lance")
    shutil.copytree(uri, other)
    for path, library in ((uri, builder), (other, "lance_core" if builder == "pylance" else "pylance")):
        (lance if library == "pylance" else lance_core).dataset(path).create_scalar_index("t", "NGRAM")

    def postings(path):
        d = lance.dataset(path).describe_indices()[0]
        return lance.file.LanceFileReader(
            os.path.join(path, "_indices", d.segments[0].uuid, "ngram_postings.lance")).read_all().to_table()
    # The same tokens and posting lists as the other library builds over the same rows.
    assert postings(other).equals(postings(uri))
    lance.dataset(uri).delete("id % 13 = 0")

    def check():
        ref, ours = lance.dataset(uri), lance_core.dataset(uri)
        for f in NGRAM_FILTERS:
            want = ref.to_table(filter=f, with_row_id=True, use_scalar_index=False).sort_by("_rowid")
            assert ours.to_table(filter=f, with_row_id=True).sort_by("_rowid").equals(want), f
            assert ref.to_table(filter=f, with_row_id=True).sort_by("_rowid").equals(want), f
            assert ours.count_rows(f) == want.num_rows, f
        for f in ("contains(t, 'abc')", "t LIKE '%bcd%'", "t LIKE 'abc%'"):
            assert "@t_idx(NGram)" in ref.scanner(filter=f).explain_plan(), f
        assert "@t_idx(NGram), fragments [" in ours.scanner(filter="contains(t, 'abc')").explain_plan()
        for f in ("contains(t, 'xy')", "NOT contains(t, 'abc')", "t LIKE 'c_t%'"):
            assert "ScalarIndexQuery" not in ours.scanner(filter=f).explain_plan(), f

    check()
    _same_descriptions(uri)
    lance.write_dataset(_text_table(1000, 4), uri, mode="append")
    check()
    lance.dataset(uri).optimize.compact_files(target_rows_per_fragment=4000)
    check()
    lance_core.dataset(uri).optimize.optimize_indices(num_indices_to_merge=0)
    check()
    _same_descriptions(uri)
    with pytest.raises(lance_core.errors.InvalidInputError, match="NGRAM index needs a string column, and 'id'"):
        lance_core.dataset(uri).create_scalar_index("id", "NGRAM")


@pytest.mark.parametrize("builder", ["pylance", "lance_core"])
@pytest.mark.parametrize("stable", [False, True])
def test_our_compaction_remaps_indices_as_pylances_does(tmp_path, builder, stable):
    """A compaction by lance_core leaves every index covering what pylance's compaction
    of the same table leaves covered: BTREE, BITMAP, LABEL_LIST and NGRAM move onto the
    new fragments (rewritten for the new addresses, or as they are where they hold stable
    row ids), a ZONEMAP stops covering them; filters through them give a full scan's
    rows in both libraries, and pylance's plans use them."""
    import random
    words = ["abc", "bcd", "crème", "moon", "xyz1", "goodbye"]
    paths = {}
    for lib in ("lance", "lance_core"):
        uri = str(tmp_path / f"{lib}.lance")
        table = _table(0, 3000).append_column(
            "t", pa.array([None if i % 37 == 0 else " ".join(random.Random(i).choice(words) for _ in range(2))
                           for i in range(3000)]))
        lance.write_dataset(table, uri, max_rows_per_file=400, enable_stable_row_ids=stable)
        lance.dataset(uri).delete("id % 9 = 4")
        if builder == "pylance":
            _index(lance.dataset(uri))
            lance.dataset(uri).create_scalar_index("t", "NGRAM")
            lance.dataset(uri).create_scalar_index("payload", IndexConfig("zonemap", {"rows_per_zone": 100}))
        else:
            _index_with("lance_core", uri)
            lance_core.dataset(uri).create_scalar_index("t", "NGRAM")
            lance_core.dataset(uri).create_scalar_index("payload", "ZONEMAP", rows_per_zone=100)
        lance.dataset(uri).delete("id % 11 = 2")
        paths[lib] = uri
    lance.dataset(paths["lance"]).optimize.compact_files(target_rows_per_fragment=1000)
    lance_core.dataset(paths["lance_core"]).optimize.compact_files(target_rows_per_fragment=1000)
    coverage = {}
    for lib, uri in paths.items():
        ds = lance.dataset(uri)
        live = {f.fragment_id for f in ds.get_fragments()}
        coverage[lib] = {d.name: sorted(set().union(*(s.fragment_ids for s in d.segments)) & live)
                         for d in ds.describe_indices()}
    assert coverage["lance_core"] == coverage["lance"]
    assert coverage["lance"]["id_idx"] and not coverage["lance"]["payload_idx"]
    uri = paths["lance_core"]
    _check(uri, filters=FILTERS + NGRAM_FILTERS + ["payload < 'row 5'", "payload = 'row 77'"], indexed=True)
    _pylance_uses(uri)
    assert "@t_idx(NGram)" in lance.dataset(uri).scanner(filter="contains(t, 'abc')").explain_plan()
    # pylance goes on from our compaction: more rows, another compaction, an optimize.
    lance.write_dataset(lance.dataset(uri).to_table(limit=500), uri, mode="append")
    lance.dataset(uri).optimize.compact_files(target_rows_per_fragment=2000)
    lance.dataset(uri).optimize.optimize_indices()
    _check(uri, filters=FILTERS + NGRAM_FILTERS)
