"""Spark SQL over a directory of Lance tables: `lance_core.spark.LanceCatalog`, a catalog
over a namespace laid out as pylance's `lance.namespace.DirectoryNamespace` lays it out,
checked against pylance's namespace and datasets in both directions."""

from __future__ import annotations

import os
import shutil
import time
import uuid

import lance
import lance.namespace
import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)
import pytest
from lance_namespace import (CreateNamespaceRequest, CreateTableRequest, DescribeTableRequest, ListTablesRequest)
from pyspark.errors import AnalysisException

import lance_core.spark
from conftest import assert_same
from datagen import nested_columns, primitive_columns


@pytest.fixture(autouse=True)
def _needs_the_jvm_reader(spark):
    if not lance_core.spark.jvm_reader_loaded(spark):
        pytest.fail("the catalog is the JVM side's (not LANCE_CORE_SPARK_READER=python)")


@pytest.fixture
def catalog(spark, tmp_path):
    """A catalog named for this test over a fresh root: (its name, the root)."""
    name = "lance_" + uuid.uuid4().hex[:8]
    root = str(tmp_path / "lake")
    os.makedirs(root)
    spark.conf.set(f"spark.sql.catalog.{name}", "lance_core.spark.LanceCatalog")
    spark.conf.set(f"spark.sql.catalog.{name}.root", root)
    yield name, root
    spark.conf.unset(f"spark.sql.catalog.{name}")
    spark.conf.unset(f"spark.sql.catalog.{name}.root")


def ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


def rows(spark, sql):
    return [tuple(r) for r in spark.sql(sql).collect()]


def test_tables_made_in_sql_are_pylance_namespace_tables(spark, catalog):
    cat, root = catalog
    spark.sql(f"CREATE NAMESPACE {cat}.db WITH DBPROPERTIES ('owner_team' = 'core')")
    assert rows(spark, f"SHOW NAMESPACES IN {cat}") == [("db",)]
    spark.sql(f"""CREATE TABLE {cat}.db.people (id BIGINT NOT NULL, name STRING, score DOUBLE)
                  TBLPROPERTIES ('data_storage_version' = '2.1', 'enable_stable_row_ids' = 'true',
                                 'primary_key' = 'id', 'team' = 'search')""")
    spark.sql(f"INSERT INTO {cat}.db.people VALUES (1, 'ann', 0.5), (2, 'bob', NULL)")
    spark.sql(f"INSERT INTO {cat}.db.people SELECT 3, 'cy', 2.5")

    theirs = lance.namespace.DirectoryNamespace(root=root)
    assert theirs.list_tables(ListTablesRequest(id=["db"])).tables == ["people"]
    location = theirs.describe_table(DescribeTableRequest(id=["db", "people"])).location
    ds = lance.dataset(location)
    assert ds.version == 3  # created empty, then one version per INSERT
    assert ds.data_storage_version == "2.1"
    assert sorted(ds.to_table().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "name": "ann", "score": 0.5}, {"id": 2, "name": "bob", "score": None},
        {"id": 3, "name": "cy", "score": 2.5}]
    assert ds.schema.field("id").metadata[b"lance-schema:unenforced-primary-key"] == b"true"
    assert ds.config()["team"] == "search"

    props = dict(rows(spark, f"SHOW TBLPROPERTIES {cat}.db.people"))
    assert props["data_storage_version"] == "2.1"
    assert props["enable_stable_row_ids"] == "true"
    assert props["primary_key"] == "id"
    assert props["team"] == "search"
    assert props["version"] == "3"
    described = {r[0]: r[1] for r in rows(spark, f"DESCRIBE TABLE EXTENDED {cat}.db.people")}
    assert described["id"] == "bigint" and described["name"] == "string"
    assert described["Provider"] == "lance" and described["Location"] == location
    assert rows(spark, f"SELECT name FROM {cat}.db.people WHERE score > 1") == [("cy",)]

    # A table pylance writes through its namespace is a Spark table.
    theirs.create_table(CreateTableRequest(id=["db", "events"]),
                        ipc(pa.table({"k": pa.array([5, 6], pa.int32()), "v": ["x", "y"]})))
    assert rows(spark, f"SHOW TABLES IN {cat}.db") == [("db", "events", False), ("db", "people", False)]
    assert rows(spark, f"SELECT k, v FROM {cat}.db.events ORDER BY k") == [(5, "x"), (6, "y")]


def test_root_tables_and_tables_written_before_the_catalog(spark, catalog):
    cat, root = catalog
    lance.write_dataset(pa.table({"a": [1, 2, 3]}), os.path.join(root, "old.lance"))
    assert rows(spark, f"SHOW TABLES IN {cat}") == [("", "old", False)]
    assert rows(spark, f"SELECT sum(a) FROM {cat}.old") == [(6,)]
    spark.sql(f"CREATE TABLE {cat}.fresh (x INT)")
    spark.sql(f"INSERT INTO {cat}.fresh VALUES (7)")
    assert lance.dataset(os.path.join(root, "fresh.lance")).to_table().to_pydict() == {"x": [7]}


def test_time_travel(spark, catalog):
    cat, root = catalog
    spark.sql(f"CREATE NAMESPACE {cat}.db")
    spark.sql(f"CREATE TABLE {cat}.db.t (id INT)")
    spark.sql(f"INSERT INTO {cat}.db.t VALUES (1)")
    time.sleep(0.05)
    between = time.time()
    time.sleep(0.05)
    spark.sql(f"INSERT INTO {cat}.db.t VALUES (2)")
    location = lance.namespace.DirectoryNamespace(root=root).describe_table(
        DescribeTableRequest(id=["db", "t"])).location
    lance.dataset(location).tags.create("first", 2)

    assert rows(spark, f"SELECT id FROM {cat}.db.t ORDER BY id") == [(1,), (2,)]
    assert rows(spark, f"SELECT id FROM {cat}.db.t VERSION AS OF 2") == [(1,)]
    assert rows(spark, f"SELECT id FROM {cat}.db.t VERSION AS OF 'first'") == [(1,)]
    assert rows(spark, f"SELECT count(*) FROM {cat}.db.t VERSION AS OF 1") == [(0,)]
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(between)) + f".{int(between % 1 * 1e6):06d}"
    assert rows(spark, f"SELECT id FROM {cat}.db.t TIMESTAMP AS OF '{stamp}'") == [(1,)]
    with pytest.raises(Exception, match="no version of the table was committed at or before"):
        spark.sql(f"SELECT * FROM {cat}.db.t TIMESTAMP AS OF '2001-01-01 00:00:00'").collect()
    with pytest.raises(Exception, match="not found|no version 9|does not exist"):
        spark.sql(f"SELECT * FROM {cat}.db.t VERSION AS OF 9").collect()


def test_drops_and_refusals(spark, catalog):
    cat, root = catalog
    spark.sql(f"CREATE NAMESPACE {cat}.db")
    with pytest.raises(AnalysisException, match="SCHEMA_ALREADY_EXISTS|already exists"):
        spark.sql(f"CREATE NAMESPACE {cat}.db")
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {cat}.db")
    spark.sql(f"CREATE TABLE {cat}.db.keep (id INT)")
    spark.sql(f"INSERT INTO {cat}.db.keep VALUES (1)")
    spark.sql(f"CREATE TABLE {cat}.db.gone (id INT)")
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_ALREADY_EXISTS"):
        spark.sql(f"CREATE TABLE {cat}.db.keep (id INT)")
    spark.sql(f"CREATE TABLE IF NOT EXISTS {cat}.db.keep (id INT)")
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql(f"SELECT * FROM {cat}.db.missing")
    with pytest.raises(AnalysisException, match="SCHEMA_NOT_FOUND|NAMESPACE_NOT_FOUND"):
        spark.sql(f"CREATE TABLE {cat}.nowhere.t (id INT)")
    with pytest.raises(Exception, match="not partitioned"):
        spark.sql(f"CREATE TABLE {cat}.db.p (id INT, d STRING) PARTITIONED BY (d)")
    with pytest.raises(AnalysisException, match="SCHEMA_NOT_EMPTY|not empty"):
        spark.sql(f"DROP NAMESPACE {cat}.db")

    theirs = lance.namespace.DirectoryNamespace(root=root)
    keep = theirs.describe_table(DescribeTableRequest(id=["db", "keep"])).location
    gone = theirs.describe_table(DescribeTableRequest(id=["db", "gone"])).location
    spark.sql(f"DROP TABLE {cat}.db.keep")  # forgotten, data kept (lance-spark's DROP)
    spark.sql(f"DROP TABLE {cat}.db.gone PURGE")
    assert rows(spark, f"SHOW TABLES IN {cat}.db") == []
    assert lance.dataset(keep).count_rows() == 1
    assert not os.path.exists(gone.replace("file://", ""))
    spark.sql(f"DROP TABLE IF EXISTS {cat}.db.keep")
    spark.sql(f"CREATE TABLE {cat}.db.again (id INT)")
    spark.sql(f"DROP NAMESPACE {cat}.db CASCADE")
    assert rows(spark, f"SHOW NAMESPACES IN {cat}") == []
    assert theirs.list_tables(ListTablesRequest(id=[])).tables == []


@pytest.mark.parametrize("settings, message", [
    ({}, "needs its root"),
    ({"impl": "rest"}, "needs its server"),
    ({"impl": "glue", "root": "/tmp"}, "impl 'glue' is not supported"),
])
def test_a_catalog_without_its_settings_is_refused(spark, settings, message):
    cat = "lance_unset_" + uuid.uuid4().hex[:8]
    spark.conf.set(f"spark.sql.catalog.{cat}", "lance_core.spark.LanceCatalog")
    for k, v in settings.items():
        spark.conf.set(f"spark.sql.catalog.{cat}.{k}", v)
    try:
        with pytest.raises(Exception, match=message):
            spark.sql(f"SHOW NAMESPACES IN {cat}").collect()
    finally:
        spark.conf.unset(f"spark.sql.catalog.{cat}")
        for k in settings:
            spark.conf.unset(f"spark.sql.catalog.{cat}.{k}")


def test_namespaces_pylance_makes_are_spark_namespaces(spark, catalog):
    cat, root = catalog
    theirs = lance.namespace.DirectoryNamespace(root=root)
    theirs.create_namespace(CreateNamespaceRequest(id=["a"], properties={"k": "v"}))
    theirs.create_namespace(CreateNamespaceRequest(id=["a", "b"]))
    assert rows(spark, f"SHOW NAMESPACES IN {cat}") == [("a",)]
    assert rows(spark, f"SHOW NAMESPACES IN {cat}.a") == [("a.b",)]
    described = {r[0]: r[1] for r in rows(spark, f"DESCRIBE NAMESPACE EXTENDED {cat}.a")}
    assert "(k,v)" in described.get("Properties", "")
    spark.sql(f"CREATE TABLE {cat}.a.b.t (id INT)")
    assert theirs.list_tables(ListTablesRequest(id=["a", "b"])).tables == ["t"]


def location_of(root, *table_id):
    return lance.namespace.DirectoryNamespace(root=root).describe_table(
        DescribeTableRequest(id=list(table_id))).location


def data_files(location):
    data = os.path.join(location.replace("file://", ""), "data")
    return sorted(os.listdir(data)) if os.path.isdir(data) else []


def test_every_type_written_back_in_the_tables_types(spark, catalog):
    """Rows the JVM reader gives Spark, written back through the JVM writer, are the
    table's types again (decimal(20,0) to uint64, float to halffloat, lists to vectors,
    string to large_string, ...): pylance reads the copy equal to the original."""
    cat, root = catalog
    cols = primitive_columns(300)
    cols.update(nested_columns(300))
    cols["vector"] = pa.FixedSizeListArray.from_arrays(pa.array(np.arange(1200, dtype=np.float32)), 4)
    cols["id"] = pa.array(range(300), pa.int64())
    lance.write_dataset(pa.table(cols), os.path.join(root, "types.lance"))
    before = lance.dataset(os.path.join(root, "types.lance"))
    spark.sql(f"INSERT INTO {cat}.types SELECT * FROM {cat}.types")
    after = lance.dataset(os.path.join(root, "types.lance"))
    assert after.version == before.version + 1
    assert after.schema == before.schema
    new_rows = pa.concat_tables([f.to_table() for f in after.get_fragments()[1:]]).sort_by("id")
    expected = before.to_table().sort_by("id")
    for i, f in enumerate(expected.schema):
        if getattr(f.type, "unit", None) == "ns":  # Spark holds microseconds
            coarse = pa.compute.cast(expected.column(i), _in_micros(f.type), safe=False)
            expected = expected.set_column(i, f, coarse.cast(f.type))
    assert_same(new_rows, expected, "written back")


def _in_micros(t: pa.DataType) -> pa.DataType:
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", t.tz)
    if pa.types.is_duration(t):
        return pa.duration("us")
    return pa.time64("us")


def test_writes_in_sql_are_one_version_each(spark, catalog):
    cat, root = catalog
    spark.sql(f"CREATE NAMESPACE {cat}.db")
    spark.sql(f"""CREATE TABLE {cat}.db.c TBLPROPERTIES ('data_storage_version' = '2.1', 'primary_key' = 'id')
                  AS SELECT id, cast(id AS string) AS s FROM range(0, 1000, 1, 2)""")
    location = location_of(root, "db", "c")
    ds = lance.dataset(location)
    assert (ds.version, ds.count_rows(), ds.data_storage_version) == (1, 1000, "2.1")
    assert ds.schema.field("id").metadata[b"lance-schema:unenforced-primary-key"] == b"true"
    assert len(ds.get_fragments()) == 2  # a fragment per task

    spark.sql(f"INSERT INTO {cat}.db.c SELECT id, 'x' FROM range(1000, 1010)")
    spark.range(5).selectExpr("id + 2000 AS id", "'w' AS s").writeTo(f"{cat}.db.c").append()
    assert lance.dataset(location).version == 3
    assert lance.dataset(location).count_rows() == 1015

    # INSERT OVERWRITE keeps the table (its schema, format version and place): one version.
    spark.sql(f"INSERT OVERWRITE {cat}.db.c SELECT id, 'o' FROM range(3)")
    ds = lance.dataset(location)
    assert (ds.version, ds.count_rows(), ds.data_storage_version) == (4, 3, "2.1")
    spark.range(2).selectExpr("id", "'p' AS s").writeTo(f"{cat}.db.c").overwritePartitions()
    assert sorted(lance.dataset(location).to_table().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 0, "s": "p"}, {"id": 1, "s": "p"}]

    # REPLACE TABLE: the same table, a new version with the new schema.
    spark.sql(f"CREATE OR REPLACE TABLE {cat}.db.c AS SELECT 7 AS z")
    ds = lance.dataset(location)
    assert (ds.version, ds.schema.names, ds.to_table().to_pydict()) == (6, ["z"], {"z": [7]})
    spark.sql(f"REPLACE TABLE {cat}.db.c (q STRING)")
    ds = lance.dataset(location)
    assert (ds.version, ds.schema.names, ds.count_rows()) == (7, ["q"], 0)
    assert location_of(root, "db", "c") == location
    assert rows(spark, f"SELECT count(*) FROM {cat}.db.c VERSION AS OF 6") == [(1,)]

    spark.range(3).selectExpr("id").writeTo(f"{cat}.db.v2").create()
    assert lance.dataset(location_of(root, "db", "v2")).version == 1
    spark.range(4).selectExpr("id").writeTo(f"{cat}.db.v2").createOrReplace()
    assert lance.dataset(location_of(root, "db", "v2")).count_rows() == 4


def test_an_insert_into_a_table_pylance_made_keeps_its_types(spark, catalog):
    cat, root = catalog
    theirs = lance.namespace.DirectoryNamespace(root=root)
    theirs.create_namespace(CreateNamespaceRequest(id=["db"]))
    vectors = pa.FixedSizeListArray.from_arrays(pa.array([1.0, 2.0, 3.0, 4.0], pa.float32()), 2)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.large_string()),
                        pa.field("v", vectors.type)])
    theirs.create_table(CreateTableRequest(id=["db", "items"]),
                        ipc(pa.table({"id": [1, 2], "name": ["a", "b"], "v": vectors}, schema=schema)))
    spark.sql(f"INSERT INTO {cat}.db.items VALUES (3, 'c', array(5.0, 6.0))")
    location = location_of(root, "db", "items")
    ds = lance.dataset(location)
    assert ds.schema == schema
    assert ds.to_table().sort_by("id").to_pydict() == {
        "id": [1, 2, 3], "name": ["a", "b", "c"], "v": [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]}
    files = data_files(location)
    with pytest.raises(Exception, match="column 'v': every list must have 2 items"):
        spark.sql(f"INSERT INTO {cat}.db.items VALUES (4, 'd', array(1.0))")
    with pytest.raises(Exception, match="NOT_NULL_ASSERT_VIOLATION|column 'id' is not nullable"):
        spark.sql(f"INSERT INTO {cat}.db.items SELECT * FROM VALUES (CAST(NULL AS BIGINT), 'e', array(1.0, 2.0))")
    assert lance.dataset(location).version == ds.version
    assert data_files(location) == files  # the failed jobs left nothing behind


def test_a_failed_job_leaves_no_table_and_no_file(spark, catalog):
    cat, root = catalog
    spark.sql(f"CREATE NAMESPACE {cat}.db")
    # One task of two fails after the other has written its rows.
    failing = "SELECT id, assert_true(id < 15000) AS ok FROM range(0, 20000, 1, 2)"
    with pytest.raises(Exception, match="is not true"):
        spark.sql(f"CREATE TABLE {cat}.db.ctas AS {failing}")
    assert rows(spark, f"SHOW TABLES IN {cat}.db") == []
    assert sorted(os.listdir(root)) == ["__manifest"]

    spark.sql(f"CREATE TABLE {cat}.db.t (id BIGINT, ok STRING)")
    spark.sql(f"INSERT INTO {cat}.db.t VALUES (1, 'a')")
    location = location_of(root, "db", "t")
    files = data_files(location)
    with pytest.raises(Exception, match="is not true"):
        spark.sql(f"INSERT INTO {cat}.db.t SELECT id, cast(assert_true(id < 15000) AS string) FROM range(0, 20000, 1, 2)")
    assert lance.dataset(location).version == 2
    assert data_files(location) == files


def test_delete_from_writes_deletion_files_only(spark, catalog):
    cat, root = catalog
    spark.sql(f"CREATE TABLE {cat}.d AS SELECT id, id % 10 AS k, cast(id AS string) AS s FROM range(0, 1000, 1, 2)")
    location = location_of(root, "d")
    files = data_files(location)
    spark.sql(f"DELETE FROM {cat}.d WHERE k = 3 AND s <> '13'")
    ds = lance.dataset(location)
    assert ds.version == 2 and ds.count_rows() == 901
    assert data_files(location) == files  # no data file rewritten
    assert all(f.deletion_file() is not None for f in ds.get_fragments())
    assert ds.to_table(filter="k = 3").column("id").to_pylist() == [13]
    spark.sql(f"DELETE FROM {cat}.d WHERE id IN (1, 2) OR s LIKE '99%'")
    assert lance.dataset(location).count_rows() == 901 - 2 - 10
    assert rows(spark, f"SELECT count(*) FROM {cat}.d WHERE id < 3") == [(1,)]
    spark.sql(f"DELETE FROM {cat}.d")
    assert lance.dataset(location).count_rows() == 0
    assert lance.dataset(location).version == 4


def test_update_merge_and_delete_by_rows_spark_plans(spark, catalog):
    """UPDATE, MERGE INTO (every clause Spark's grammar has) and a DELETE whose condition
    Spark cannot hand over: Spark plans the rows, the write deletes the old ones by address
    and appends the new ones, one version each; the MERGE gives what pylance's
    merge_insert gives on a copy of the table."""
    cat, root = catalog
    spark.sql(f"CREATE TABLE {cat}.t AS SELECT id, id % 7 AS k, cast(id AS string) AS s FROM range(0, 2000, 1, 2)")
    location = location_of(root, "t")
    copy = os.path.join(root, "..", "reference.lance")
    lance.write_dataset(lance.dataset(location).to_table(), copy)

    spark.sql(f"UPDATE {cat}.t SET s = concat(s, '!'), k = k + 100 WHERE k = 3")
    ds = lance.dataset(location)
    assert ds.version == 2 and ds.count_rows() == 2000
    assert ds.count_rows("k = 103 AND s LIKE '%!'") == len(range(3, 2000, 7))
    assert ds.count_rows("k = 3") == 0
    lance.dataset(copy).update({"s": "concat(s, '!')", "k": "k + 100"}, where="k = 3")

    source = [(i, 1000 + i, f"new{i}") for i in range(1990, 2010)] + [(5, 0, "gone")]
    spark.createDataFrame(source, "id long, k long, s string").createOrReplaceTempView("src")
    spark.sql(f"""MERGE INTO {cat}.t AS t USING src ON t.id = src.id
                  WHEN MATCHED AND src.s = 'gone' THEN DELETE
                  WHEN MATCHED THEN UPDATE SET *
                  WHEN NOT MATCHED THEN INSERT *
                  WHEN NOT MATCHED BY SOURCE AND t.id < 3 THEN DELETE""")
    ds = lance.dataset(location)
    assert ds.version == 3
    src = pa.table({"id": [r[0] for r in source], "k": [r[1] for r in source], "s": [r[2] for r in source]})
    ref = lance.dataset(copy)
    src = src.cast(ref.schema)
    ref.delete("id = 5")
    (ref.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
        .when_not_matched_by_source_delete("id < 3").execute(src.filter(pa.compute.field("s") != "gone")))
    assert_same(ds.to_table().sort_by("id"), lance.dataset(copy).to_table().sort_by("id"), "MERGE INTO")

    # A condition with a part Spark keeps (a Python UDF cannot be a Lance predicate).
    spark.udf.register("is_odd", lambda v: v % 2 == 1, "boolean")
    spark.sql(f"DELETE FROM {cat}.t WHERE is_odd(id) AND id > 1900")
    assert lance.dataset(location).count_rows("id > 1900 AND id % 2 = 1") == 0
    assert lance.dataset(location).version == 4
    assert rows(spark, f"SELECT count(*) FROM {cat}.t WHERE s LIKE 'new%'") == [(10,)]


def _lineage(location):
    t = lance.dataset(location).to_table(
        columns=["id", "k", "_rowid", "_row_created_at_version", "_row_last_updated_at_version"])
    return {r["id"]: r for r in t.to_pylist()}


def test_update_and_merge_keep_stable_row_ids(spark, catalog):
    """On a table with stable row ids, a row UPDATE or MERGE INTO changes keeps its id and
    its creation version (its last update is the new version), as pylance's update and
    merge_insert keep them; inserted rows get new ids."""
    cat, root = catalog
    spark.sql(f"""CREATE TABLE {cat}.s TBLPROPERTIES ('enable_stable_row_ids' = 'true')
                  AS SELECT id, id % 7 AS k FROM range(0, 300, 1, 3)""")
    location = location_of(root, "s")
    copy = os.path.join(root, "..", "reference.lance")
    shutil.copytree(location.replace("file://", ""), copy)
    before = _lineage(location)

    spark.sql(f"UPDATE {cat}.s SET k = k + 100 WHERE k = 3")
    lance.dataset(copy).update({"k": "k + 100"}, where="k = 3")
    after, ref = _lineage(location), _lineage(copy)
    assert lance.dataset(location).version == 2 and len(after) == 300
    for i, row in after.items():
        assert row["_rowid"] == before[i]["_rowid"] == ref[i]["_rowid"]
        assert row["k"] == ref[i]["k"] == (before[i]["k"] + 100 if before[i]["k"] == 3 else before[i]["k"])
        assert row["_row_created_at_version"] == ref[i]["_row_created_at_version"] == 1
        assert row["_row_last_updated_at_version"] == ref[i]["_row_last_updated_at_version"], i

    source = [(i, 1000 + i) for i in range(290, 310)]
    spark.createDataFrame(source, "id long, k long").createOrReplaceTempView("src_stable")
    spark.sql(f"""MERGE INTO {cat}.s AS t USING src_stable AS src ON t.id = src.id
                  WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *""")
    merged = _lineage(location)
    assert lance.dataset(location).version == 3 and len(merged) == 310
    for i in range(290, 300):  # updated: the same id, created at 1, updated at 3
        assert (merged[i]["k"], merged[i]["_rowid"], merged[i]["_row_created_at_version"],
                merged[i]["_row_last_updated_at_version"]) == (1000 + i, before[i]["_rowid"], 1, 3)
    new_ids = [merged[i]["_rowid"] for i in range(300, 310)]
    assert len(set(new_ids)) == 10 and min(new_ids) > max(r["_rowid"] for r in before.values())
    assert all(merged[i]["_row_created_at_version"] == 3 for i in range(300, 310))
    for i in range(0, 290):
        assert merged[i]["_rowid"] == before[i]["_rowid"] and merged[i]["k"] == after[i]["k"]
    # pylance finds the rows by their ids.
    ds = lance.dataset(location)
    assert ds._take_rows([before[295]["_rowid"]], columns=["id", "k"]).to_pylist() == [{"id": 295, "k": 1295}]


def test_alter_table(spark, catalog):
    cat, root = catalog
    spark.sql(f"CREATE TABLE {cat}.a AS SELECT id, cast(id AS int) AS n, cast(id AS string) AS s FROM range(10)")
    location = location_of(root, "a")
    files = data_files(location)
    spark.sql(f"ALTER TABLE {cat}.a ADD COLUMNS (note string, score double)")
    ds = lance.dataset(location)
    assert ds.schema.names == ["id", "n", "s", "note", "score"] and data_files(location) == files
    assert ds.to_table(columns=["note"]).column(0).null_count == 10
    spark.sql(f"ALTER TABLE {cat}.a RENAME COLUMN s TO label")
    spark.sql(f"ALTER TABLE {cat}.a DROP COLUMN score")
    spark.sql(f"ALTER TABLE {cat}.a ALTER COLUMN n TYPE bigint")
    ds = lance.dataset(location)
    assert ds.schema.names == ["id", "n", "label", "note"]
    assert ds.schema.field("n").type == pa.int64()
    assert ds.to_table(columns=["n"]).column(0).to_pylist() == list(range(10))
    assert not lance.dataset(location).schema.field("id").nullable
    spark.sql(f"ALTER TABLE {cat}.a ALTER COLUMN id DROP NOT NULL")
    assert lance.dataset(location).schema.field("id").nullable
    spark.sql(f"ALTER TABLE {cat}.a SET TBLPROPERTIES ('owner_team' = 'search', 'x' = '1')")
    spark.sql(f"ALTER TABLE {cat}.a UNSET TBLPROPERTIES ('x')")
    assert lance.dataset(location).config().get("owner_team") == "search"
    assert "x" not in lance.dataset(location).config()
    props = dict(rows(spark, f"SHOW TBLPROPERTIES {cat}.a"))
    assert props["owner_team"] == "search"
    assert [r[0] for r in rows(spark, f"DESCRIBE TABLE {cat}.a")][:4] == ["id", "n", "label", "note"]
    spark.sql(f"INSERT INTO {cat}.a VALUES (10, 10, '10', 'late')")
    assert rows(spark, f"SELECT note FROM {cat}.a WHERE id = 10") == [("late",)]


def test_the_sql_steps_the_cluster_and_connect_runs_repeat(spark, tmp_path):
    """`spark_steps.sql_steps`, which the standalone-cluster and Spark Connect tests run and
    compare with local mode, gives the right answers here."""
    import spark_steps

    groups, first, version, tables, tags, fragments, indices, sevens, nearest = spark_steps.sql_steps(
        spark, str(tmp_path))
    assert groups == [(2, 199, 0), (3, 199, 0), (4, 199, 0), (7, 20, 0), (11, 199, 0)]
    assert first == [(1000,)]
    assert version == [("version", "9")]  # OPTIMIZE: two versions, as pylance's compaction
    assert indices == [("k_idx", ["k"], "btree", 816)]
    assert sevens == [(20,)]
    assert tables == [("db", "t", False), ("db", "v", False)]
    assert nearest == [(50, 0.04), (51, 1.64), (49, 2.44)]
    assert tags == [("steps_tag", 6)]
    assert fragments == [(1, 816)]


def _table(spark, cat, root, name="t"):
    """db.<name> in SQL: 3 appends of 4 rows, row 5 deleted; pylance's dataset of it."""
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {cat}.db")
    spark.sql(f"CREATE TABLE {cat}.db.{name} (id BIGINT, s STRING)")
    for i in range(3):
        spark.sql(f"INSERT INTO {cat}.db.{name} SELECT id, CAST(id AS STRING) FROM range({4 * i}, {4 * i + 4}, 1, 1)")
    spark.sql(f"DELETE FROM {cat}.db.{name} WHERE id = 5")
    location = lance.namespace.DirectoryNamespace(root=root).describe_table(
        DescribeTableRequest(id=["db", name])).location
    return lance.dataset(location)


def test_metadata_tables_are_what_pylance_sees(spark, catalog):
    cat, root = catalog
    ds = _table(spark, cat, root)
    ds.create_scalar_index("id", "BTREE", name="id_idx")
    spark.sql(f"INSERT INTO {cat}.db.t VALUES (100, 'late')")  # a fragment the index misses
    ds = lance.dataset(ds.uri)
    ds.tags.create("first", 2)
    t = f"{cat}.db.t"

    versions = rows(spark, f"SELECT version, timestamp, metadata['total_rows'] FROM {t}.versions")
    assert [v for v, _, _ in versions] == [v["version"] for v in ds.versions()]
    assert [int(n) for _, _, n in versions] == [lance.dataset(ds.uri, version=v).count_rows() for v, _, _ in versions]
    assert all(abs(a.replace(tzinfo=None) - b["timestamp"].replace(tzinfo=None)).total_seconds() < 1
               for (_, a, _), b in zip(versions, ds.versions()))

    fragments = rows(spark, f"SELECT id, num_rows, physical_rows, num_deletions, data_files, deletion_file "
                            f"FROM {t}.fragments ORDER BY id")
    theirs = ds.get_fragments()
    assert [f[0] for f in fragments] == [f.fragment_id for f in theirs]
    assert [f[1:4] for f in fragments] == [(f.count_rows(), f.physical_rows, f.physical_rows - f.count_rows())
                                            for f in theirs]
    assert [f[4] for f in fragments] == [[d.path for d in f.data_files()] for f in theirs]
    assert [f[5] is not None for f in fragments] == [f.metadata.deletion_file is not None for f in theirs]

    assert rows(spark, f"SELECT name, branch, version, manifest_size FROM {t}.tags") == [
        ("first", None, 2, ds.tags.list()["first"]["manifest_size"])]
    assert rows(spark, f"SELECT * FROM {t}.indices") == [("id_idx", ["id"], "btree", 3, 11, 1, 1)]
    # At an older version, and a table named like a metadata table comes first.
    assert rows(spark, f"SELECT count(*) FROM {t}.fragments VERSION AS OF 2") == [(1,)]
    spark.sql(f"CREATE TABLE {cat}.db.versions (x INT)")
    assert rows(spark, f"SELECT count(*) FROM {cat}.db.versions") == [(0,)]
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql(f"SELECT * FROM {cat}.db.nope.versions")


def test_tags_optimize_vacuum_and_indices_in_sql(spark, catalog):
    cat, root = catalog
    ds = _table(spark, cat, root)
    t = f"{cat}.db.t"
    assert rows(spark, f"ALTER TABLE {t} CREATE TAG v2 AS OF VERSION 2") == [("v2",)]
    spark.sql(f"ALTER TABLE {t} CREATE TAG latest")
    spark.sql(f"ALTER TABLE {t} CREATE TAG IF NOT EXISTS latest AS OF VERSION 1")  # kept as it is
    spark.sql(f"ALTER TABLE {t} CREATE TAG `copy-of.v2` AS OF TAG v2;")
    assert {n: v["version"] for n, v in lance.dataset(ds.uri).tags.list().items()} == {
        "v2": 2, "latest": 5, "copy-of.v2": 2}
    assert rows(spark, f"SHOW TAGS FROM {t}") == rows(spark, f"SHOW TAG IN {t}")
    assert [(r[0], r[2]) for r in rows(spark, f"SHOW TAGS IN {t}")] == [("copy-of.v2", 2), ("latest", 5), ("v2", 2)]
    assert rows(spark, f"SELECT count(*) FROM {t} VERSION AS OF 'v2'") == [(4,)]
    spark.sql(f"ALTER TABLE {t} DROP TAG `copy-of.v2`")
    spark.sql(f"ALTER TABLE {t} DROP TAG IF EXISTS `copy-of.v2`")
    with pytest.raises(Exception, match="tag 'copy-of.v2' does not exist"):
        spark.sql(f"ALTER TABLE {t} DROP TAG `copy-of.v2`")
    spark.sql(f"ALTER TABLE {t} DROP TAG latest")

    # OPTIMIZE: lance-spark's output; pylance reads the compacted table.
    assert rows(spark, f"OPTIMIZE {t} WITH (target_rows_per_fragment = 1000, materialize_deletions = TRUE)") == [
        (3, 1, 4, 1)]  # the files removed count the deletion file, as pylance's metrics
    ds = lance.dataset(ds.uri)
    assert ds.version == 7 and len(ds.get_fragments()) == 1  # two versions, as pylance's compaction
    assert sorted(ds.to_table()["id"].to_pylist()) == [i for i in range(12) if i != 5]

    # VACUUM: versions below 5 go but the tagged one (2); pylance agrees.
    old = rows(spark, f"VACUUM {t} WITH (before_version = 5, delete_unverified = true)")
    assert old[0][1] == 3 and old[0][0] > 0
    assert [v["version"] for v in lance.dataset(ds.uri).versions()] == [2, 5, 6, 7]
    assert rows(spark, f"VACUUM {t}") == [(0, 0)]  # nothing is two weeks old

    # SHOW INDEXES and DROP INDEX on an index pylance built.
    lance.dataset(ds.uri).create_scalar_index("s", "BITMAP", name="s_idx")
    spark.sql(f"USE {cat}.db")
    assert rows(spark, "SHOW INDEXES IN t") == [("s_idx", ["s"], "bitmap", 1, 11, 0, 0)]
    assert rows(spark, f"ALTER TABLE {t} DROP INDEX s_idx") == [("s_idx", "dropped")]
    assert lance.dataset(ds.uri).describe_indices() == []
    spark.sql("USE spark_catalog.default")


@pytest.mark.parametrize("sql, message", [
    ("OPTIMIZE {t} WITH (target_rows = 5)", "OPTIMIZE .*: unknown option 'target_rows'"),
    ("OPTIMIZE {t} WITH (batch_size = many)", "option batch_size must be a whole number, not 'many'"),
    ("VACUUM {t} WITH (delete_unverified = maybe)", "delete_unverified must be TRUE or FALSE"),
    ("VACUUM {t} WITH (before_version = 3", "cannot parse .*expected , or \\), found the end"),
    ("SHOW TAGS {t}", "expected FROM or IN, found"),
    ("ALTER TABLE {t} CREATE TAG x AS OF BRANCH", "expected a branch name"),
    ("ALTER TABLE {t} DROP INDEX nope", "there is no index named 'nope'"),
    ("OPTIMIZE {cat}.db.nope", "catalog .* has no table db.nope"),
])
def test_sql_statements_refuse_bad_input_saying_what(spark, catalog, sql, message):
    cat, root = catalog
    spark.sql(f"CREATE NAMESPACE {cat}.db")
    spark.sql(f"CREATE TABLE {cat}.db.t (id BIGINT)")
    with pytest.raises(Exception, match=message):
        spark.sql(sql.format(t=f"{cat}.db.t", cat=cat)).collect()


def test_ctas_and_rtas_keep_their_table_properties(spark, catalog):
    cat, root = catalog
    spark.sql(f"CREATE NAMESPACE {cat}.db")
    spark.sql(f"""CREATE TABLE {cat}.db.t TBLPROPERTIES ('team' = 'search', 'max_rows_per_file' = '4',
                  'enable_stable_row_ids' = 'true') AS SELECT id FROM range(0, 10, 1, 1)""")
    location = lance.namespace.DirectoryNamespace(root=root).describe_table(
        DescribeTableRequest(id=["db", "t"])).location
    ds = lance.dataset(location)
    assert ds.version == 1 and ds.config()["team"] == "search"
    assert [f.count_rows() for f in ds.get_fragments()] == [4, 4, 2]
    assert ds.has_stable_row_ids
    assert dict(rows(spark, f"SHOW TBLPROPERTIES {cat}.db.t"))["team"] == "search"
    # An INSERT's options are not the table's properties.
    spark.range(3).writeTo(f"{cat}.db.t").option("team", "other").append()
    assert lance.dataset(location).config()["team"] == "search"
    spark.sql(f"CREATE OR REPLACE TABLE {cat}.db.t TBLPROPERTIES ('team' = 'ads') AS SELECT 1 AS one")
    ds = lance.dataset(location)
    assert ds.config()["team"] == "ads" and ds.to_table().to_pylist() == [{"one": 1}]


def test_create_index_on_the_executors_is_pylance_s_index(spark, catalog):
    cat, root = catalog
    spark.sql(f"CREATE NAMESPACE {cat}.db")
    spark.sql(f"""CREATE TABLE {cat}.db.t AS SELECT id, id % 7 AS k, CAST(id % 50 AS STRING) AS s
                  FROM range(0, 2000, 1, 4)""")
    t = f"{cat}.db.t"
    location = lance.namespace.DirectoryNamespace(root=root).describe_table(
        DescribeTableRequest(id=["db", "t"])).location
    # One segment per task (local[2]: 2 tasks over the 4 fragments), committed once.
    assert rows(spark, f"ALTER TABLE {t} CREATE INDEX id_idx USING btree (id) WITH (zone_size = 64)") == [
        (4, "id_idx")]
    spark.sql(f"ALTER TABLE {t} CREATE INDEX k_zm USING zonemap (k) WITH (rows_per_zone = 100)")
    spark.sql(f"ALTER TABLE {t} CREATE INDEX s_bm USING BITMAP (s);")
    ds = lance.dataset(location)
    assert ds.version == 4
    described = {d.name: d for d in ds.describe_indices()}
    assert sorted(described) == ["id_idx", "k_zm", "s_bm"]
    assert [described[n].num_rows_indexed for n in ("id_idx", "k_zm", "s_bm")] == [2000, 2000, 2000]
    assert len(described["id_idx"].segments) == 2 and described["id_idx"].field_names == ["id"]
    for where, expected in (("id = 1234", [1234]), ("s = '7'", list(range(7, 2000, 50)))):
        assert "ScalarIndexQuery" in ds.scanner(filter=where).explain_plan()
        assert sorted(ds.to_table(filter=where)["id"].to_pylist()) == expected
    assert rows(spark, f"SELECT count(*) FROM {t} WHERE k = 3 AND id < 100") == [(14,)]
    # The same name again replaces the index.
    spark.sql(f"ALTER TABLE {t} CREATE INDEX id_idx USING btree (id)")
    assert sorted(d.name for d in lance.dataset(location).describe_indices()) == ["id_idx", "k_zm", "s_bm"]
    # An empty table gets its (empty) index.
    spark.sql(f"CREATE TABLE {cat}.db.empty (id BIGINT)")
    assert rows(spark, f"ALTER TABLE {cat}.db.empty CREATE INDEX e USING btree (id)") == [(0, "e")]
    assert rows(spark, f"SELECT name, num_indexed_rows FROM {cat}.db.empty.indices") == [("e", 0)]


@pytest.mark.parametrize("statement, message", [
    ("CREATE INDEX x USING btree (id, k)", "a BTree index is on one column, not 2"),
    ("CREATE INDEX x USING btree (nope)", "cannot index 'nope': there is no such column"),
    ("CREATE INDEX x USING zonemap (k) WITH (zone_size = 3)", "CREATE INDEX .*: unknown option 'zone_size'"),
    ("CREATE INDEX x USING btree (id) WITH (build_mode = 'range')", "build_mode 'range' is not supported"),
    ("CREATE INDEX x USING ivf_pq (k)", "column 'k' is Int64; a IVF_PQ index needs a fixed-size list"),
    ("CREATE INDEX x USING ivf_hnsw_sq (k)", "not supported: building a IVF_HNSW_SQ index"),
    ("CREATE INDEX x USING btree id", "expected \\( and the indexed columns"),
])
def test_create_index_refusals(spark, catalog, statement, message):
    cat, root = catalog
    spark.sql(f"CREATE NAMESPACE {cat}.db")
    spark.sql(f"CREATE TABLE {cat}.db.t AS SELECT id, id % 7 AS k FROM range(10)")
    with pytest.raises(Exception, match=message):
        spark.sql(f"ALTER TABLE {cat}.db.t {statement}").collect()
    assert rows(spark, f"SELECT count(*) FROM {cat}.db.t.indices") == [(0,)]
    location = lance.namespace.DirectoryNamespace(root=root).describe_table(
        DescribeTableRequest(id=["db", "t"])).location
    assert not os.path.exists(os.path.join(location, "_indices"))  # refused before any task ran


def test_branches_in_sql_are_pylance_s(spark, catalog):
    cat, root = catalog
    ds = _table(spark, cat, root)  # versions 1 to 5
    t = f"{cat}.db.t"
    assert rows(spark, f"ALTER TABLE {t} CREATE BRANCH exp AS OF VERSION 2") == [("exp",)]
    spark.sql(f"ALTER TABLE {t} CREATE BRANCH IF NOT EXISTS exp")  # kept as it is
    spark.sql(f"ALTER TABLE {t} CREATE TAG t3 AS OF VERSION 3")
    spark.sql(f"ALTER TABLE {t} CREATE BRANCH from_tag AS OF TAG t3")
    spark.sql(f"ALTER TABLE {t} CREATE BRANCH head")
    spark.sql(f"ALTER TABLE {t} CREATE TAG on_exp AS OF BRANCH exp")
    theirs = lance.dataset(ds.uri).branches.list()
    assert {n: (b["parent_branch"], b["parent_version"]) for n, b in theirs.items()} == {
        "exp": (None, 2), "from_tag": (None, 3), "head": (None, 5)}
    assert lance.dataset(ds.uri).tags.list()["on_exp"]["branch"] == "exp"
    shown = rows(spark, f"SHOW BRANCHES IN {t}")
    assert shown == rows(spark, f"SELECT * FROM {t}.branches")
    assert [(r[0], r[1], r[2], r[4]) for r in shown] == [
        (n, None, theirs[n]["parent_version"], theirs[n]["manifest_size"]) for n in ("exp", "from_tag", "head")]
    assert [r[3] for r in shown] == [theirs[n]["create_at"] for n in ("exp", "from_tag", "head")]
    spark.sql(f"ALTER TABLE {t} DROP BRANCH from_tag")
    spark.sql(f"ALTER TABLE {t} DROP BRANCH IF EXISTS from_tag")
    with pytest.raises(Exception, match="branch 'from_tag' does not exist"):
        spark.sql(f"ALTER TABLE {t} DROP BRANCH from_tag")
    with pytest.raises(Exception, match="already exists"):
        spark.sql(f"ALTER TABLE {t} CREATE BRANCH exp")
    assert sorted(lance.dataset(ds.uri).branches.list()) == ["exp", "head"]


def _vectors_table(root):
    """db.items, written by pylance through its namespace: 600 rows of 8-d vectors, an
    IVF_FLAT index over the first 512, then 88 rows appended (not indexed)."""
    rng = np.random.default_rng(7)
    vectors = rng.random((600, 8), dtype=np.float32)
    table = pa.table({"id": pa.array(range(600), pa.int64()),
                      "title": pa.array([f"t{i % 13}" for i in range(600)]),
                      "embedding": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), 8)})
    theirs = lance.namespace.DirectoryNamespace(root=root)
    theirs.create_namespace(CreateNamespaceRequest(id=["db"]))
    location = theirs.create_table(CreateTableRequest(id=["db", "items"]), ipc(table.slice(0, 512))).location
    ds = lance.dataset(location)
    ds.create_index("embedding", index_type="IVF_FLAT", num_partitions=4)
    ds = lance.write_dataset(table.slice(512), location, mode="append")
    return ds, vectors


def test_vector_search_is_pylance_s_nearest(spark, catalog):
    """VECTOR_SEARCH with lance-spark's arguments gives what pylance's nearest gives."""
    cat, root = catalog
    ds, vectors = _vectors_table(root)
    q = vectors[550]  # an unindexed row: found only by the flat part of the search
    qs = "array(" + ", ".join(f"{v!r}" for v in q.tolist()) + ")"
    t = f"'{cat}.db.items'"

    def theirs(**kw):
        got = ds.to_table(nearest={"column": "embedding", "q": q, **kw.pop("nearest", {})}, **kw)
        return [tuple(r.values()) for r in got.to_pylist()]

    # Named arguments, the index searched (and the unindexed rows), columns chosen.
    got = rows(spark, f"""SELECT id, title, _distance FROM VECTOR_SEARCH(table => {t}, query_vector => {qs},
                             vector_column => 'embedding', num_results => 5, distance_type => 'l2',
                             columns => array('id', 'title')) ORDER BY _distance""")
    want = theirs(nearest={"k": 5, "metric": "l2"}, columns=["id", "title"])
    assert [r[:2] for r in got] == [r[:2] for r in want] and got[0][0] == 550
    assert np.allclose([r[2] for r in got], [r[2] for r in want])
    # Positional form: every column, _distance last.
    got = spark.sql(f"SELECT * FROM VECTOR_SEARCH({t}, {qs}, 3, vector_column => 'embedding')")
    assert got.columns == ["id", "title", "embedding", "_distance"]
    assert [r.id for r in got.collect()] == [r[0] for r in theirs(nearest={"k": 3})]
    # A filter (post-filter, then pre-filter), offset, row ids, the index bypassed.
    for pre in (False, True):
        got = rows(spark, f"""SELECT id FROM VECTOR_SEARCH(table => {t}, query_vector => {qs}, vector_column =>
                                 'embedding', k => 6, filter => 'id % 2 = 0', prefilter => {str(pre).lower()},
                                 columns => array('id'))""")
        assert got == [r[:1] for r in theirs(nearest={"k": 6}, columns=["id"], filter="id % 2 = 0", prefilter=pre)]
    got = rows(spark, f"""SELECT id, _rowid FROM VECTOR_SEARCH(table => {t}, query_vector => {qs},
                             vector_column => 'embedding', limit => 3, offset => 2, columns => array('id', '_rowid'),
                             bypass_vector_index => true)""")
    exact = theirs(nearest={"k": 5, "use_index": False}, columns=["id"], with_row_id=True)
    assert [r[0] for r in got] == [r[0] for r in exact][2:]
    assert [r[1] for r in got] == [r[2] for r in exact][2:]
    # fast_search: only the indexed rows, as pylance's.
    got = rows(spark, f"""SELECT id FROM VECTOR_SEARCH(table => {t}, query_vector => {qs},
                             vector_column => 'embedding', k => 4, fast_search => true, columns => array('id'))""")
    assert got == [r[:1] for r in theirs(nearest={"k": 4}, columns=["id"], fast_search=True)]
    assert 550 not in [r[0] for r in got]
    # Several query vectors: a leading query_index.
    q2 = vectors[3]
    batch = f"array({qs}, array(" + ", ".join(f"{v!r}" for v in q2.tolist()) + "))"
    got = rows(spark, f"""SELECT query_index, id FROM VECTOR_SEARCH(table => {t}, query_vector => {batch},
                             vector_column => 'embedding', num_results => 2) ORDER BY query_index, _distance""")
    want = ds.to_table(nearest={"column": "embedding", "q": np.stack([q, q2]), "k": 2}, columns=["id"])
    assert got == list(zip(want["query_index"].to_pylist(), want["id"].to_pylist()))
    assert [r[0] for r in got] == [0, 0, 1, 1]
    # A version: the table as it was (before the append), the catalog's name unqualified.
    spark.sql(f"USE {cat}.db")
    try:
        got = rows(spark, f"""SELECT id FROM VECTOR_SEARCH(table => 'items', query_vector => {qs},
                                 vector_column => 'embedding', k => 3, version => 2, columns => array('id'))""")
    finally:
        spark.sql("USE spark_catalog.default")
    old = lance.dataset(ds.uri, version=2).to_table(nearest={"column": "embedding", "q": q, "k": 3}, columns=["id"])
    assert got == [(i,) for i in old["id"].to_pylist()]
    # A table's path works too.
    got = rows(spark, f"SELECT id FROM VECTOR_SEARCH('{ds.uri}', {qs}, 1, vector_column => 'embedding')")
    assert got == [(550,)]


@pytest.mark.parametrize("arguments, message", [
    ("{t}, array(1.0, 2.0), 3, vector_column => 'embedding'", "dimension|8"),
    ("{t}, array(0.5), 3, 'embedding'", "only 3 arguments may go without a name"),
    ("{t}, array(0.5), k => 0", "k must be a whole number above 0"),
    ("{t}, array(0.5), nprobe => 3", "unknown argument 'nprobe'"),
    ("{t}, array(0.5), vector_column => 'title'", "title"),
    ("'{cat}.db.nope', array(0.5)", "no table"),
    ("{t}, array(0.5), distance_type => 'manhattan'", "distance_type"),
    ("{t}, array(0.5), vector_column => 'embedding', filter => 'id >'", "filter"),
])
def test_vector_search_refuses_bad_arguments_saying_what(spark, catalog, arguments, message):
    cat, root = catalog
    _vectors_table(root)
    sql = "SELECT * FROM VECTOR_SEARCH(" + arguments.format(t=f"'{cat}.db.items'", cat=cat) + ")"
    with pytest.raises(Exception, match=message):
        spark.sql(sql).collect()


def test_vector_columns_made_in_sql_are_vectors(spark, catalog):
    """lance-spark's `<column>.arrow.fixed-size-list.size` property makes an array column a
    vector (pylance's fixed-size list), in CREATE TABLE and CTAS alike; VECTOR_SEARCH
    finds its rows."""
    cat, root = catalog
    spark.sql(f"CREATE NAMESPACE {cat}.db")
    spark.sql(f"""CREATE TABLE {cat}.db.v (id INT NOT NULL, vector ARRAY<FLOAT> NOT NULL)
                  TBLPROPERTIES ('vector.arrow.fixed-size-list.size' = '4')""")
    spark.sql(f"""INSERT INTO {cat}.db.v VALUES (0, array(0.0, 0.0, 0.0, 0.0)), (1, array(1.0, 1.0, 1.0, 1.0)),
                  (2, array(10.0, 10.0, 10.0, 10.0))""")
    ds = lance.dataset(location_of(root, "db", "v"))
    assert ds.schema.field("vector").type == pa.list_(pa.float32(), 4)
    assert ds.to_table(nearest={"column": "vector", "q": [1, 1, 1, 0.9], "k": 2})["id"].to_pylist() == [1, 0]
    got = rows(spark, f"SELECT id, _distance FROM VECTOR_SEARCH('{cat}.db.v', array(1.0, 1.0, 1.0, 0.9), 2)")
    assert [r[0] for r in got] == [1, 0] and abs(got[0][1] - 0.01) < 1e-6
    with pytest.raises(Exception, match="vector"):
        spark.sql(f"INSERT INTO {cat}.db.v VALUES (3, array(1.0, 2.0))").collect()
    assert rows(spark, f"SELECT count(*) FROM {cat}.db.v") == [(3,)]

    spark.sql(f"""CREATE TABLE {cat}.db.w TBLPROPERTIES ('emb.arrow.fixed-size-list.size' = '2')
                  AS SELECT id, array(CAST(id AS DOUBLE), 0D) AS emb FROM range(10)""")
    ds = lance.dataset(location_of(root, "db", "w"))
    assert ds.schema.field("emb").type == pa.list_(pa.float64(), 2)
    assert ds.to_table(columns=["emb"])["emb"].to_pylist()[3] == [3.0, 0.0]
    with pytest.raises(Exception, match="names no column"):
        spark.sql(f"""CREATE TABLE {cat}.db.x (id INT) TBLPROPERTIES ('vec.arrow.fixed-size-list.size' = '2')""")


def test_vector_index_in_sql_is_built_on_the_executors_as_pylance_s(spark, catalog):
    """CREATE INDEX ... USING ivf_flat|ivf_pq|ivf_sq: the driver trains the model, tasks
    encode their fragments, one commit replacing an index of the same name; pylance
    searches through it, and no staged file stays."""
    cat, root = catalog
    ds, vectors = _vectors_table(root)
    t = f"{cat}.db.items"
    # Replaces pylance's index (512 rows) with one over all 600, built by 2 tasks.
    assert rows(spark, f"""ALTER TABLE {t} CREATE INDEX embedding_idx USING ivf_pq (embedding)
                           WITH (num_partitions = 4, num_sub_vectors = 4, num_segments = 2)""") == [
        (2, "embedding_idx")]
    ds = lance.dataset(ds.uri)
    (index,) = ds.describe_indices()
    assert (index.name, index.index_type, index.num_rows_indexed, len(index.segments)) == (
        "embedding_idx", "IVF_PQ", 600, 1)
    stats = ds.stats.index_stats("embedding_idx")
    assert stats["indices"][0]["num_partitions"] == 4
    plan = ds.scanner(nearest={"column": "embedding", "q": vectors[550], "k": 3}).explain_plan()
    assert f"uuid={next(iter(index.segments)).uuid}" in plan and "LanceScan" not in plan  # all rows indexed
    # pylance's search through it, and ours from SQL, agree; the appended row is found.
    want = ds.to_table(nearest={"column": "embedding", "q": vectors[550], "k": 5, "nprobes": 4,
                                "refine_factor": 5}, columns=["id"])["id"].to_pylist()
    qs = "array(" + ", ".join(f"{v!r}" for v in vectors[550].tolist()) + ")"
    got = rows(spark, f"""SELECT id FROM VECTOR_SEARCH(table => '{t}', query_vector => {qs}, vector_column =>
                             'embedding', k => 5, nprobes => 4, refine_factor => 5, columns => array('id'))""")
    assert [r[0] for r in got] == want and want[0] == 550

    spark.sql(f"ALTER TABLE {t} CREATE INDEX e_flat USING ivf_flat (embedding) WITH (num_partitions = 3, "
              "distance_type = 'cosine')")
    spark.sql(f"ALTER TABLE {t} CREATE INDEX e_sq USING IVF_SQ (embedding) WITH (num_partitions = 2)")
    ds = lance.dataset(ds.uri)
    described = {i.name: i for i in ds.describe_indices()}
    assert {n: (i.index_type, i.num_rows_indexed) for n, i in described.items()} == {
        "embedding_idx": ("IVF_PQ", 600), "e_flat": ("IVF_FLAT", 600), "e_sq": ("IVF_SQ", 600)}
    assert ds.stats.index_stats("e_flat")["indices"][0]["metric_type"] == "cosine"
    assert rows(spark, f"SELECT name, index_type FROM {t}.indices ORDER BY name") == [
        ("e_flat", "ivf_flat"), ("e_sq", "ivf_sq"), ("embedding_idx", "ivf_pq")]
    # Only the committed segments' directories are left (the staged models are gone).
    live = {str(s.uuid) for i in described.values() for s in i.segments}
    indices_dir = os.path.join(ds.uri.replace("file://", ""), "_indices")
    for d in os.listdir(indices_dir):
        assert not any(f.startswith("encoded-") for f in os.listdir(os.path.join(indices_dir, d))), d
    assert live <= set(os.listdir(indices_dir))

    # A table without rows: nothing to train on, no segment (as lance-spark).
    spark.sql(f"""CREATE TABLE {cat}.db.empty (id INT, vector ARRAY<FLOAT>)
                  TBLPROPERTIES ('vector.arrow.fixed-size-list.size' = '4')""")
    assert rows(spark, f"ALTER TABLE {cat}.db.empty CREATE INDEX e USING ivf_flat (vector)") == [(0, "e")]
    assert rows(spark, f"SELECT count(*) FROM {cat}.db.empty.indices") == [(0,)]


@pytest.fixture
def rest_server(tmp_path):
    """pylance's namespace REST server over a directory namespace, on loopback: (its URL,
    the directory)."""
    root = str(tmp_path / "served")
    os.makedirs(root)
    server = lance.namespace.RestAdapter("dir", {"root": root}, host="127.0.0.1", port=0)
    server.start()
    try:
        yield f"http://127.0.0.1:{server.port}", root
    finally:
        server.stop()


def test_a_rest_namespace_catalog_is_pylance_s(spark, rest_server):
    """`impl=rest`: the catalog is a client of a namespace REST server (here pylance's
    RestAdapter over a directory); what SQL makes, pylance's RestNamespace finds, and the
    reverse."""
    url, root = rest_server
    cat = "rest_" + uuid.uuid4().hex[:8]
    spark.conf.set(f"spark.sql.catalog.{cat}", "lance_core.spark.LanceCatalog")
    spark.conf.set(f"spark.sql.catalog.{cat}.impl", "rest")
    spark.conf.set(f"spark.sql.catalog.{cat}.uri", url)
    try:
        spark.sql(f"CREATE NAMESPACE {cat}.db WITH DBPROPERTIES ('team' = 'core')")
        assert rows(spark, f"SHOW NAMESPACES IN {cat}") == [("db",)]
        assert ("Properties", "((team,core))") in rows(spark, f"DESCRIBE NAMESPACE EXTENDED {cat}.db")
        spark.sql(f"""CREATE TABLE {cat}.db.people (id BIGINT NOT NULL, name STRING)
                      TBLPROPERTIES ('data_storage_version' = '2.1', 'enable_stable_row_ids' = 'true')""")
        spark.sql(f"INSERT INTO {cat}.db.people VALUES (1, 'ann'), (2, 'bob')")
        spark.sql(f"CREATE TABLE {cat}.db.copy AS SELECT id * 10 AS id FROM {cat}.db.people")
        assert rows(spark, f"SHOW TABLES IN {cat}.db") == [("db", "copy", False), ("db", "people", False)]

        theirs = lance.namespace.RestNamespace(uri=url)
        assert sorted(theirs.list_tables(ListTablesRequest(id=["db"])).tables) == ["copy", "people"]
        ds = lance.dataset(theirs.describe_table(DescribeTableRequest(id=["db", "people"])).location)
        assert ds.data_storage_version == "2.1" and ds.to_table().to_pydict() == {"id": [1, 2], "name": ["ann", "bob"]}
        copy = lance.dataset(theirs.describe_table(DescribeTableRequest(id=["db", "copy"])).location)
        assert sorted(copy.to_table()["id"].to_pylist()) == [10, 20] and copy.version == 1
        # The server's directory is pylance's directory namespace.
        assert lance.namespace.DirectoryNamespace(root=root).list_tables(
            ListTablesRequest(id=["db"])).tables == ["copy", "people"]

        # A table pylance creates through the server is a Spark table.
        theirs.create_table(CreateTableRequest(id=["db", "theirs"]), ipc(pa.table({"x": [7, 8, 9]})))
        assert rows(spark, f"SELECT sum(x) FROM {cat}.db.theirs") == [(24,)]
        spark.sql(f"DELETE FROM {cat}.db.theirs WHERE x = 8")
        assert rows(spark, f"SELECT count(*) FROM {cat}.db.theirs VERSION AS OF 1") == [(3,)]
        assert rows(spark, f"SELECT count(*) FROM {cat}.db.theirs") == [(2,)]

        # A table the write refuses leaves nothing declared on the server.
        with pytest.raises(Exception, match="9.9"):
            spark.sql(f"CREATE TABLE {cat}.db.bad (id INT) TBLPROPERTIES ('data_storage_version' = '9.9')")
        assert "bad" not in theirs.list_tables(ListTablesRequest(id=["db"])).tables
        spark.sql(f"CREATE TABLE {cat}.db.bad (id INT)")
        spark.sql(f"DROP TABLE {cat}.db.bad")

        # Vectors made in SQL, searched and indexed through the server's table.
        spark.sql(f"""CREATE TABLE {cat}.db.v (id INT NOT NULL, vector ARRAY<FLOAT> NOT NULL)
                      TBLPROPERTIES ('vector.arrow.fixed-size-list.size' = '2')""")
        spark.sql(f"INSERT INTO {cat}.db.v SELECT id, array(id, 0) FROM range(0, 50)")
        spark.sql(f"ALTER TABLE {cat}.db.v CREATE INDEX v_idx USING ivf_flat (vector) WITH (num_partitions = 2)")
        assert rows(spark, f"SELECT id FROM VECTOR_SEARCH('{cat}.db.v', array(20.2, 0.0), 2)") == [(20,), (21,)]
        assert rows(spark, f"SELECT name, index_type FROM {cat}.db.v.indices") == [("v_idx", "ivf_flat")]
        spark.sql(f"DROP TABLE {cat}.db.v")

        with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_ALREADY_EXISTS|already exists"):
            spark.sql(f"CREATE TABLE {cat}.db.people (id BIGINT)")
        with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND|cannot be found"):
            spark.sql(f"SELECT * FROM {cat}.db.nope").collect()
        with pytest.raises(AnalysisException, match="SCHEMA_NOT_EMPTY|not empty"):
            spark.sql(f"DROP NAMESPACE {cat}.db")
        for t in ("people", "copy", "theirs"):
            spark.sql(f"DROP TABLE {cat}.db.{t}")
        spark.sql(f"DROP NAMESPACE {cat}.db")
        assert rows(spark, f"SHOW NAMESPACES IN {cat}") == []
    finally:
        for key in ("", ".impl", ".uri"):
            spark.conf.unset(f"spark.sql.catalog.{cat}{key}")



def test_a_table_named_by_its_path_in_the_catalog(spark, catalog, tmp_path):
    """lance-spark's ``SELECT * FROM lance.`/path/t.lance` VERSION AS OF n``: a table outside
    the catalog, named by its path, read (at a version too) and written."""
    cat, _ = catalog
    path = str(tmp_path / "outside.lance")
    lance.write_dataset(pa.table({"id": [1, 2, 3]}), path)
    lance.write_dataset(pa.table({"id": [4]}), path, mode="append")
    assert rows(spark, f"SELECT sum(id) FROM {cat}.`{path}`") == [(10,)]
    assert rows(spark, f"SELECT count(*) FROM {cat}.`{path}` VERSION AS OF 1") == [(3,)]
    spark.sql(f"INSERT INTO {cat}.`{path}` VALUES (5)")
    assert lance.dataset(path).version == 3 and lance.dataset(path).count_rows() == 5
    assert rows(spark, f"SELECT count(*) FROM {cat}.`{path}`.versions") == [(3,)]
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND|cannot be found"):
        spark.sql(f"SELECT * FROM {cat}.`{tmp_path}/nope.lance`").collect()


def test_a_branch_is_a_table_of_its_own_in_sql(spark, catalog):
    """Iceberg's names for branches: ``db.t.branch_<name>`` reads and writes branch <name>
    (its own line of versions, pylance's), leaving main as it was."""
    cat, root = catalog
    ds = _table(spark, cat, root)
    t = f"{cat}.db.t"
    spark.sql(f"ALTER TABLE {t} CREATE BRANCH exp")
    spark.sql(f"INSERT INTO {t}.branch_exp VALUES (100, 'on exp')")
    spark.sql(f"DELETE FROM {t}.branch_exp WHERE id < 4")
    assert rows(spark, f"SELECT count(*) FROM {t}") == [(11,)]
    assert rows(spark, f"SELECT count(*), max(id) FROM {t}.branch_exp") == [(8, 100)]
    theirs = lance.dataset(ds.uri).checkout_version(("exp", None))
    assert sorted(theirs.to_table()["id"].to_pylist()) == [4, 6, 7, 8, 9, 10, 11, 100]
    assert lance.dataset(ds.uri).count_rows() == 11
    # Its versions count on the branch; VERSION AS OF too.
    branch_versions = [r[0] for r in rows(spark, f"SELECT version FROM {t}.branch_exp.versions")]
    assert rows(spark, f"SELECT count(*) FROM {t}.branch_exp VERSION AS OF {branch_versions[-2]}") == [(12,)]
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND|cannot be found"):
        spark.sql(f"SELECT * FROM {t}.branch_nope").collect()
