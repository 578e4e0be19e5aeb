"""Branches (issue 27 point 2): lines of versions kept in `<root>/tree/<name>/` and described
in `_refs/branches/`, created, written, tagged, checked out and deleted by either library
and read by the other."""

import json
import os

import lance
import pyarrow as pa
import pytest

import lance_core

LIBS = [(lance_core, lance), (lance, lance_core)]


def ids(ds):
    return sorted(ds.to_table().column("a").to_pylist())


def rows(*values):
    return pa.table({"a": list(values), "b": [f"v{v}" for v in values]})


@pytest.mark.parametrize("writer,reader", LIBS)
def test_branches_written_by_one_read_by_the_other(tmp_path, writer, reader):
    root = str(tmp_path / "t")
    ds = writer.write_dataset(rows(1, 2, 3), root)
    writer.write_dataset(rows(4), root, mode="append")
    # None: the version this object is at (1), not the latest.
    b1 = ds.create_branch("b1")
    assert (b1.version, b1.uri) == (1, os.path.join(root, "tree", "b1"))
    b1 = writer.write_dataset(rows(7, 8), b1, mode="append")
    assert b1.version == 2
    # A branch of a branch, with a '/' in its name.
    fx = b1.create_branch("feat/x", ("b1", 2))
    assert fx.version == 2 and ids(fx) == [1, 2, 3, 7, 8]
    fx.delete("a = 7")
    fx = writer.write_dataset(rows(9), fx.uri, mode="append")
    ds.tags.create("on_b1", ("b1", 1))
    ds.tags.create("on_fx", ("feat/x", None))
    assert os.path.exists(os.path.join(root, "_refs", "branches", "feat%2Fx.json"))

    other = reader.dataset(root)
    assert ids(other) == [1, 2, 3, 4]
    listed = other.branches.list()
    assert sorted(listed) == ["b1", "feat/x"]
    assert listed["b1"]["parent_branch"] is None and listed["b1"]["parent_version"] == 1
    assert listed["feat/x"]["parent_branch"] == "b1" and listed["feat/x"]["parent_version"] == 2
    lineage_b1, lineage_fx = listed["b1"]["branch_identifier"], listed["feat/x"]["branch_identifier"]
    assert [v for v, _ in lineage_fx] == [1, 2] and list(lineage_fx[0]) == list(lineage_b1[0])
    assert listed["b1"]["manifest_size"] > 0
    assert [n for n, _ in other.branches.list_ordered("asc")] == ["b1", "feat/x"]

    assert ids(other.checkout_version(("b1", None))) == [1, 2, 3, 7, 8]
    assert ids(other.checkout_version(("b1", 1))) == [1, 2, 3]
    latest_fx = other.checkout_version(("feat/x", None))
    assert latest_fx.version == 4 and ids(latest_fx) == [1, 2, 3, 8, 9]
    assert ids(other.checkout_version(("main", None))) == [1, 2, 3, 4]
    assert ids(other.checkout_version((None, 1))) == [1, 2, 3]
    tags = other.tags.list()
    assert (tags["on_b1"]["branch"], tags["on_b1"]["version"]) == ("b1", 1)
    assert (tags["on_fx"]["branch"], tags["on_fx"]["version"]) == ("feat/x", 4)
    assert ids(reader.dataset(root, version="on_fx")) == [1, 2, 3, 8, 9]
    assert ids(other.checkout_version("on_b1")) == [1, 2, 3]
    # A branch opened by its own directory: its versions, the table's tags and branches.
    direct = reader.dataset(os.path.join(root, "tree", "feat", "x"))
    assert ids(direct) == [1, 2, 3, 8, 9] and "on_b1" in direct.tags.list()
    assert sorted(direct.branches.list()) == ["b1", "feat/x"]
    assert ids(direct.checkout_version(2)) == [1, 2, 3, 7, 8]
    assert ids(direct.checkout_version(("main", None))) == [1, 2, 3, 4]

    # The reader goes on on the writer's branch; the writer reads what it committed.
    b1r = other.checkout_version(("b1", None))
    b1r = reader.write_dataset(rows(10), b1r, mode="append")
    b1r.update({"b": "'u'"}, where="a = 1")
    again = writer.dataset(root).checkout_version(("b1", None))
    assert again.version == 4 and ids(again) == [1, 2, 3, 7, 8, 10]
    assert again.to_table(filter="a = 1").column("b").to_pylist() == ["u"]
    assert ids(writer.dataset(root)) == [1, 2, 3, 4]  # main untouched


@pytest.mark.parametrize("lib", [lance_core, lance])
def test_deleting_branches(tmp_path, lib):
    root = str(tmp_path / "t")
    ds = lance_core.write_dataset(rows(1), root)
    b1 = ds.create_branch("b1")
    lance_core.write_dataset(rows(2), b1, mode="append")
    ds.create_branch("a/b/c", ("b1", 2))
    ds.create_branch("a/d")
    ds = lib.dataset(root)
    with pytest.raises((OSError, ValueError), match="b1"):
        ds.branches.delete("b1")  # a/b/c was made from it
    ds.branches.delete("a/b/c")
    # a/ stays for a/d; nothing of a/b is left.
    assert os.listdir(os.path.join(root, "tree", "a")) == ["d"]
    ds.branches.delete("b1")
    assert sorted(os.listdir(os.path.join(root, "tree"))) == ["a"]
    assert sorted(lance.dataset(root).branches.list()) == ["a/d"]
    assert sorted(lance_core.dataset(root).branches.list()) == ["a/d"]
    with pytest.raises((OSError, ValueError), match="does not exist"):
        ds.branches.delete("b1")


def test_branch_errors_name_what_is_wrong(tmp_path):
    root = str(tmp_path / "t")
    ds = lance_core.write_dataset(rows(1), root)
    for bad in ["main", "", "a//b", "/a", "x.lock", "a b", "../up"]:
        with pytest.raises(ValueError, match="invalid branch name"):
            ds.create_branch(bad)
    ds.create_branch("b1")
    with pytest.raises(ValueError, match="branch 'b1' already exists"):
        ds.create_branch("b1")
    with pytest.raises(OSError, match="does not exist"):
        ds.checkout_version(("nope", None))
    with pytest.raises(OSError, match="does not exist"):
        ds.checkout_version("branch_not_exists")
    with pytest.raises(Exception, match="version 9"):
        ds.create_branch("b2", 9)
    assert sorted(ds.branches.list()) == ["b1"]


def test_branch_description_is_pylance_json(tmp_path):
    root = str(tmp_path / "t")
    ds = lance_core.write_dataset(rows(1), root)
    lance_core.write_dataset(rows(2), root, mode="append")
    ds.create_branch("b1", 2)
    with open(os.path.join(root, "_refs", "branches", "b1.json")) as f:
        d = json.load(f)
    assert set(d) == {"parentBranch", "identifier", "parentVersion", "createAt", "manifestSize", "metadata"}
    assert d["parentBranch"] is None and d["parentVersion"] == 2
    [[version, uid]] = d["identifier"]["version_mapping"]
    assert version == 2 and len(uid) == 32 and int(uid, 16) >= 0
    # The branch's manifests carry its name; its first version is the one it starts from.
    b = lance.dataset(os.path.join(root, "tree", "b1"))
    assert b.version == 2 and b.versions()[0]["version"] == 2
    assert lance_core.dataset(root).checkout_version(("b1", None)).branch == "b1"
    assert lance_core.dataset(root).branch is None


@pytest.mark.parametrize("cleaner", [lance_core, lance])
def test_cleanup_keeps_what_branches_use(tmp_path, cleaner):
    root = str(tmp_path / "t")
    lance_core.write_dataset(rows(1, 2, 3), root)
    ds = lance_core.write_dataset(rows(4, 5), root, mode="append")
    b1 = ds.create_branch("b1")
    lance_core.write_dataset(rows(6), b1, mode="append")
    # Main moves on: its first files are replaced and their versions cleaned up.
    ds = lance_core.write_dataset(rows(7), root, mode="overwrite")
    ds.delete("a = 7")
    cleaner.dataset(root).cleanup_old_versions(older_than=__import__("datetime").timedelta(0),
                                               delete_unverified=True)
    assert [v["version"] for v in lance_core.dataset(root).versions()] == [2, 4]
    for lib in (lance_core, lance):
        branch = lib.dataset(root).checkout_version(("b1", None))
        assert ids(branch) == [1, 2, 3, 4, 5, 6]
    # Cleaning the branch itself keeps its latest version and the files it uses.
    b1 = lance_core.dataset(root).checkout_version(("b1", None))
    b1.delete("a = 6")
    cleaner.dataset(root).checkout_version(("b1", None)).cleanup_old_versions(
        older_than=__import__("datetime").timedelta(0), delete_unverified=True)
    for lib in (lance_core, lance):
        assert ids(lib.dataset(root).checkout_version(("b1", None))) == [1, 2, 3, 4, 5]
    assert ids(lance.dataset(root)) == []


def test_clone_of_a_branch_and_overwrite_on_a_branch(tmp_path):
    root = str(tmp_path / "t")
    ds = lance_core.write_dataset(rows(1, 2), root)
    lance_core.write_dataset(rows(3), root, mode="overwrite")
    branch = ds.create_branch("b", 2)
    lance_core.write_dataset(rows(7, 8), branch.uri, mode="overwrite")
    clone = branch.shallow_clone(str(tmp_path / "c"), 3)
    for lib in (lance_core, lance):
        assert ids(lib.dataset(str(tmp_path / "c"))) == [7, 8]
        assert ids(lib.dataset(root).checkout_version(("b", None))) == [7, 8]
        assert ids(lib.dataset(root)) == [3]
    assert ids(clone) == [7, 8]
