"""Datasets written by old pylance releases (0.7.5 ... 0.30.0) are read, and committed to,
as pylance 14 does. The releases themselves write the datasets (tests/old_releases: installed
from the package index into a cache, generated once per script version; the tests fail
when the index cannot be reached); every expected answer comes from pylance 14.

What each dataset is for:
  0.7.5/basic, 0.7.5/types          no data_format, files (0,0): reported as "0.1"; 0.7.5
                                    deletion files without num_deleted_rows
  migrated/v0.7.5_with_deletions    no physical_rows, no writer_version: a commit must
                                    recompute them as pylance does before stamping a writer
  migrated/v0.8.0_migrated_*        0.8.0 stored physical_rows = rows after deletions and no
                                    writer_version: pylance ignores them (92 rows, not 82)
  0.13.0/*_v2                       0.3 files: "2.0"; strings/binaries as list<u8> over two
                                    columns; empty_v2 (writer flag 4, no files): "2.2";
                                    basic_v2 mixes 0.3 and legacy files: opening fails
  0.14.1/*_v2                       Binary/Dictionary pages whose bytes are Nullable-wrapped
  0.16.1/wrong_version_*            data_format "0.1" over 0.3 files: a commit rewrites it
                                    to "2.0"; with a legacy file mixed in the commit fails
  0.30.0/*_dsvlegacy                legacy files whose recorded file_size_bytes is wrong

Not covered on purpose: files pylance 14 cannot read at all (0.10 experimental files,
early 2.1 files of 0.16-0.30, pre-stable 2.2 files of 0.39 / 1.0): lance_core reads
some of them more leniently (the pre-stable 2.2 ones), which is not pylance's behaviour
to copy.
"""

from __future__ import annotations

import shutil

import pyarrow.compute as pc
import pytest

import lance_core
import old_releases
from conftest import assert_same, lance

# pylance 14's own answers (rows, data_storage_version): they pin down that each dataset
# is the case it is meant to be, whatever both libraries then agree on.
EXPECTED = {
    "0.7.5/basic": (94, "0.1"),
    "0.7.5/types": (26, "0.1"),
    "migrated/v0.7.5_with_deletions": (90, "0.1"),
    "migrated/v0.8.0_migrated_from_v0.7.5": (92, "0.1"),
    "migrated/v0.8.0_migrated_multi": (90, "0.1"),
    "0.13.0/types_v2": (26, "2.0"),
    "0.13.0/strings_v2": (225, "2.0"),
    "0.13.0/empty_v2": (0, "2.2"),
    "0.14.1/types_v2": (26, "2.0"),
    "0.14.1/strings_v2": (225, "2.0"),
    "0.16.1/wrong_version_can_fix": (6, "0.1"),
    "0.16.1/wrong_version_no_fix": (7, "0.1"),
    "0.30.0/types_dsvlegacy": (26, "0.1"),
    "0.30.0/basic_dsvlegacy": (94, "0.1"),
}
# pylance 14 refuses to open these ("All data files must have the same version"); so must we.
OPEN_FAILS = {"0.13.0/basic_v2"}
assert set(EXPECTED) | OPEN_FAILS == set(old_releases.DATASETS)

READABLE = sorted(EXPECTED)
# pylance 14 bug: its filtered scans (and so a delete with a real predicate) open these 0.3
# files with the v1 reader the manifest's "0.1" names ("Cannot open file ... with the v1
# reader because it has version 2.0"), while its unfiltered scans read them fine. There the
# reference is pylance's unfiltered table filtered by pyarrow, and for a delete what pylance
# does once delete("false") has repaired the version.
V1_READER_BUG = {"0.16.1/wrong_version_can_fix", "0.16.1/wrong_version_no_fix"}
FILTERS = {  # by first column
    "x": "(x >= 15 AND x < 60) OR x > 100",
    "i": "i % 3 = 1 AND s IS NOT NULL",
    "id": "cat = 'red' OR id > 240",
}


@pytest.fixture(scope="session")
def old_data():
    # No skip when the releases cannot be installed: the README says these tests run.
    return old_releases.build()


def attempt(fn):
    try:
        return fn(), None
    except Exception as e:  # noqa: BLE001
        return None, e


def ours(what, fn):
    """lance_core's answer; an exception becomes a failure that names the dataset."""
    try:
        return fn()
    except Exception as e:  # noqa: BLE001
        raise AssertionError(f"{what}: lance_core raised {type(e).__name__}: {e}") from e


def compare(what, our_fn, ref_fn):
    """lance_core's answer equals pylance 14's, or both raise."""
    ref, err = attempt(ref_fn)
    if err is not None:
        got, our_err = attempt(our_fn)
        assert our_err is not None, f"{what}: pylance 14 raises ({err}), lance_core returned {got!r:.300}"
        return
    got = ours(what, our_fn)
    if hasattr(ref, "num_rows"):
        assert_same(got, ref, what)
    else:
        assert got == ref, f"{what}: lance_core {got!r}, pylance 14 {ref!r}"


def fragments(ds):
    return [(f.fragment_id, f.physical_rows, f.count_rows(), f.num_deletions) for f in ds.get_fragments()]


@pytest.mark.parametrize("name", old_releases.DATASETS)
def test_read(old_data, name):
    path = str(old_data / f"{name}.lance")
    if name in OPEN_FAILS:
        with pytest.raises(Exception):  # noqa: B017 - pylance's class varies
            lance.dataset(path)
        _, err = attempt(lambda: lance_core.dataset(path))
        assert err is not None, f"{name}: pylance 14 cannot open it, lance_core opens it"
        return
    ref = lance.dataset(path)
    assert (ref.count_rows(), ref.data_storage_version) == EXPECTED[name], f"{name}: not the intended dataset"
    ds = ours(name, lambda: lance_core.dataset(path))
    compare(f"{name}: data_storage_version", lambda: ds.data_storage_version, lambda: ref.data_storage_version)
    compare(f"{name}: count_rows()", ds.count_rows, ref.count_rows)
    compare(f"{name}: fragments (id, physical_rows, count_rows, num_deletions)",
            lambda: fragments(ds), lambda: fragments(ref))
    compare(f"{name}: to_table()", ds.to_table, ref.to_table)
    compare(f"{name}: row ids", lambda: ds.to_table(columns=[], with_row_id=True),
            lambda: ref.to_table(columns=[], with_row_id=True))
    for col in ref.schema.names:
        compare(f"{name}: to_table(columns=[{col!r}])",
                lambda col=col: ds.to_table(columns=[col]), lambda col=col: ref.to_table(columns=[col]))
    flt = FILTERS[ref.schema.names[0]]
    if name in V1_READER_BUG:
        with pytest.raises(Exception, match="v1 reader"):
            ref.to_table(filter=flt)
        x = pc.field("x")
        expected = ref.to_table().filter(((x >= 15) & (x < 60)) | (x > 100))
        compare(f"{name}: to_table(filter={flt!r})", lambda: ds.to_table(filter=flt), lambda: expected)
        compare(f"{name}: count_rows({flt!r})", lambda: ds.count_rows(flt), lambda: expected.num_rows)
        return
    compare(f"{name}: to_table(filter={flt!r})", lambda: ds.to_table(filter=flt), lambda: ref.to_table(filter=flt))
    compare(f"{name}: count_rows({flt!r})", lambda: ds.count_rows(flt), lambda: ref.count_rows(flt))


def state(ds):
    return {"version": ds.version, "data_storage_version": ds.data_storage_version, "count_rows": ds.count_rows(),
            "fragments": fragments(ds)}


def stored(path):
    """What the manifest records per fragment, as pylance 14 decodes it (a commit fills in
    missing physical_rows, num_deleted_rows and file sizes)."""
    out = []
    for f in lance.dataset(path).get_fragments():
        m = f.metadata
        out.append((f.fragment_id, m.physical_rows, m.deletion_file and m.deletion_file.num_deleted_rows,
                    [(d.file_major_version, d.file_minor_version, d.file_size_bytes) for d in m.files]))
    return out


def listing(path):
    return sorted((p.name, p.stat().st_size) for p in (path / "_versions").iterdir())


@pytest.mark.parametrize("predicate", ["false", "some"])
@pytest.mark.parametrize("name", READABLE)
def test_commit(old_data, name, predicate, tmp_path):
    """A delete committed by lance_core leaves what pylance 14's own delete leaves: the
    same data_storage_version (now recorded), row counts, recomputed physical_rows and
    num_deleted_rows, rows; where pylance's commit fails, lance_core's fails and changes
    nothing."""
    src = old_data / f"{name}.lance"
    ref_path, our_path = tmp_path / "by_pylance.lance", tmp_path / "by_lance_core.lance"
    shutil.copytree(src, ref_path)
    shutil.copytree(src, our_path)
    pred = "false" if predicate == "false" else f"{lance.dataset(str(src)).schema.names[0]} % 5 = 2"
    what = f"{name}: delete({pred!r})"

    _, ref_err = attempt(lambda: lance.dataset(str(ref_path)).delete(pred))
    lenient = False
    if ref_err is not None and name in V1_READER_BUG and "v1 reader" in str(ref_err):
        shutil.rmtree(ref_path)
        shutil.copytree(src, ref_path)
        _, ref_err = attempt(lambda: [lance.dataset(str(ref_path)).delete(p) for p in ("false", pred)])
        lenient = ref_err is None  # lance_core may fail like pylance 14, or delete as intended

    before, version = listing(our_path), lance.dataset(str(our_path)).version
    _, err = attempt(lambda: lance_core.dataset(str(our_path)).delete(pred))
    if ref_err is not None or (lenient and err is not None):
        assert err is not None, f"{what}: pylance 14's commit fails ({ref_err}), lance_core's succeeds"
        assert listing(our_path) == before, f"{what}: lance_core's failed commit changed _versions"
        assert lance.dataset(str(our_path)).version == version
        return
    assert err is None, f"{what}: lance_core raised {type(err).__name__}: {err}"

    ref_state = state(lance.dataset(str(ref_path)))
    expected = dict(ref_state, version=version + 1) if lenient else ref_state  # pylance needed two commits
    by_pylance = f"{what}: pylance 14 reading lance_core's commit"
    got, err = attempt(lambda: state(lance.dataset(str(our_path))))
    assert err is None, f"{by_pylance} raised {type(err).__name__}: {err}"
    assert got == expected, by_pylance
    assert stored(str(our_path)) == stored(str(ref_path)), \
        f"{what}: fragment metadata recorded by lance_core vs pylance 14"
    compare(f"{what}, read by lance_core", lambda: state(lance_core.dataset(str(our_path))), lambda: expected)
    compare(f"{what}, pylance's commit read by lance_core", lambda: state(lance_core.dataset(str(ref_path))),
            lambda: ref_state)
    table = lance.dataset(str(ref_path)).to_table()
    compare(f"{what}: to_table() by lance_core", lambda: lance_core.dataset(str(our_path)).to_table(), lambda: table)
    assert_same(lance.dataset(str(our_path)).to_table(), table, by_pylance)
