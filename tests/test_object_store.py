"""lance_core on an S3-compatible server (moto, on 127.0.0.1) behind a counting proxy:
every operation makes no more requests than pylance's on the same table; reopening a
version keeps the storage options; a store without credentials or a server that does
not answer fails at once, saying what is wrong."""

from __future__ import annotations

import datetime
import time

import lance
import pyarrow as pa
import pytest

import lance_core
from s3_proxy import S3Server


@pytest.fixture(scope="module")
def server():
    srv = S3Server()
    yield srv
    srv.stop()


@pytest.fixture()
def proxy(server):
    p = server.proxy()
    yield p
    p.close()


def _rows(start, n):
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()),
                     "s": pa.array([f"value-{i}" for i in range(start, start + n)]),
                     "x": pa.array([i * 0.5 for i in range(start, start + n)])})


def _write_twins(opts, name, large):
    """The same table written by pylance twice, one copy per library: four small
    fragments of 1,000 rows, or (`large`) two of 200,000 rows (files of megabytes)."""
    uris = {}
    n = 200_000 if large else 1000
    for lib in ("pylance", "lance_core"):
        uri = uris[lib] = f"s3://bucket/{name}-{lib}.lance"
        lance.write_dataset(_rows(0, 3 * n), uri, storage_options=opts, max_rows_per_file=n)
        lance.write_dataset(_rows(3 * n, n), uri, storage_options=opts, mode="append")
    return uris


OPERATIONS = {
    "count_rows": lambda lib, ds, uri, opts: ds.count_rows(),
    "to_table": lambda lib, ds, uri, opts: ds.to_table(),
    "filtered scan": lambda lib, ds, uri, opts: ds.to_table(filter="id >= 3500"),
    "take": lambda lib, ds, uri, opts: ds.take([1, 1500, 3999]),
    "append": lambda lib, ds, uri, opts: lib.write_dataset(_rows(9000, 100), uri, mode="append",
                                                           storage_options=opts),
    "delete": lambda lib, ds, uri, opts: ds.delete("id < 10"),
    "update": lambda lib, ds, uri, opts: ds.update({"s": "'changed'"}, where="id = 2500"),
    "compaction": lambda lib, ds, uri, opts: ds.optimize.compact_files(),
    "cleanup": lambda lib, ds, uri, opts: ds.cleanup_old_versions(older_than=datetime.timedelta(0)),
}


def _count(proxy, uri, lib, op):
    """Requests of opening `uri` and of running `op` on it, separately."""
    module = lance if lib == "pylance" else lance_core
    opts = proxy.options()
    proxy.take()
    ds = module.dataset(uri, storage_options=opts)
    opened = proxy.take()
    op(module, ds, uri, opts)
    return opened, proxy.take()


CASES = [(name, False) for name in OPERATIONS] + [(name, True) for name in ("to_table", "filtered scan", "take")]


@pytest.mark.parametrize("name,large", CASES, ids=[f"{n}{' (large files)' if big else ''}" for n, big in CASES])
def test_no_more_requests_than_pylance(server, proxy, name, large):
    uris = _write_twins(server.options(), name.replace(" ", "-") + ("-large" if large else ""), large)
    counts = {lib: _count(proxy, uris[lib], lib, OPERATIONS[name]) for lib in uris}
    (their_open, theirs), (our_open, ours) = counts["pylance"], counts["lance_core"]
    print(f"requests, {name}{' (large files)' if large else ''}: open {len(our_open)} (pylance {len(their_open)}), "
          f"operation {len(ours)} (pylance {len(theirs)})")
    assert len(our_open) <= len(their_open), f"open: {our_open} vs pylance {their_open}"
    assert len(ours) <= len(theirs), f"{name}: lance_core {len(ours)} requests {ours}, pylance {len(theirs)} {theirs}"


def test_checkout_by_tag_keeps_storage_options(server):
    opts = server.options()
    uri = "s3://bucket/tagged.lance"
    lance.write_dataset(_rows(0, 100), uri, storage_options=opts)
    lance.write_dataset(_rows(100, 100), uri, storage_options=opts, mode="append")
    ds = lance_core.dataset(uri, storage_options=opts)
    ds.tags.create("first", 1)
    for ref in ("first", 1):
        old = ds.checkout_version(ref)
        assert old.version == 1 and old.count_rows() == 100
        # The reopened version writes with the same options too.
        old.restore()
    assert lance.dataset(uri, storage_options=opts).count_rows() == 100


def test_no_credentials_fails_without_asking_the_metadata_service(server):
    """conftest sets AWS_EC2_METADATA_DISABLED: a store given no keys fails at once."""
    t0 = time.monotonic()
    with pytest.raises(lance_core.InvalidInputError, match="AWS_EC2_METADATA_DISABLED"):
        lance_core.dataset("s3://bucket/any.lance", storage_options={"aws_endpoint": server.endpoint,
                                                                      "allow_http": "true"})
    assert time.monotonic() - t0 < 2


def test_a_closed_port_says_connection_refused():
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    opts = {"aws_endpoint": f"http://127.0.0.1:{port}", "aws_access_key_id": "k", "aws_secret_access_key": "s",
            "aws_region": "us-east-1", "allow_http": "true", "client_max_retries": "1"}
    with pytest.raises(lance_core.LanceIOError) as err:
        lance_core.dataset("s3://bucket/t.lance", storage_options=opts)
    text = str(err.value)
    assert "connection refused" in text and f"127.0.0.1:{port}" in text and "after 1 retries" in text, text


def test_a_server_that_does_not_answer_says_timed_out():
    """A server that accepts connections and never answers: the `timeout` storage option
    ends each attempt, and the error says so, where, and after how many retries."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)  # connections queue in the backlog; nothing ever reads them
        port = s.getsockname()[1]
        opts = {"aws_endpoint": f"http://127.0.0.1:{port}", "aws_access_key_id": "k", "aws_secret_access_key": "s",
                "aws_region": "us-east-1", "allow_http": "true", "client_max_retries": "1", "timeout": "1s"}
        t0 = time.monotonic()
        with pytest.raises(lance_core.LanceIOError) as err:
            lance_core.dataset("s3://bucket/t.lance", storage_options=opts)
        elapsed = time.monotonic() - t0
    text = str(err.value)
    assert "timed out" in text and f"127.0.0.1:{port}" in text and "after 1 retries" in text, text
    assert elapsed < 10, elapsed


def test_https_checks_the_servers_certificate(server):
    """Over HTTPS (the proxy's certificate is self-signed): refused, saying why, until the
    user accepts invalid certificates; then written and read as over HTTP."""
    p = server.proxy(tls=True)
    try:
        uri, table = "s3://bucket/over-tls.lance", _rows(0, 100)
        opts = {**p.options(), "client_max_retries": "0"}
        with pytest.raises(lance_core.LanceIOError, match="(?i)certificate") as err:
            lance_core.write_dataset(table, uri, storage_options=opts)
        assert p.endpoint.startswith("https://127.0.0.1:") and "127.0.0.1" in str(err.value), err.value
        assert not p.take(), "no request may pass an unverified connection"
        opts["allow_invalid_certificates"] = "true"
        lance_core.write_dataset(table, uri, storage_options=opts)
        assert lance_core.dataset(uri, storage_options=opts).to_table().equals(table)
        assert any(method == "PUT" for method, *_ in p.take())
        assert lance.dataset(uri, storage_options={**server.options()}).to_table().equals(table)
    finally:
        p.close()


def test_open_and_append_make_the_same_requests_at_10_and_1200_versions(server, proxy, tmp_path):
    """Manifests named in the V2 scheme sort newest first, so one page of the listing
    finds the latest version: opening and appending at 1,200 versions (past a listing
    page of 1,000 names) make exactly the requests they make at 10."""
    counts = {}
    for n in (10, 1200):
        local = str(tmp_path / f"v{n}.lance")
        ds = lance_core.write_dataset(_rows(0, 100), local)
        for _ in range(n - 1):
            ds.delete("id < 0")  # a version that changes no row
        uri = server.upload(local, f"versions-{n}.lance")
        proxy.take()
        assert lance_core.dataset(uri, storage_options=proxy.options()).version == n
        opened = proxy.take()
        lance_core.write_dataset(_rows(100, 10), uri, mode="append", storage_options=proxy.options())
        appended = proxy.take()
        counts[n] = (len(opened), len(appended))
        ds = lance_core.dataset(uri, storage_options=server.options())
        assert (ds.version, ds.count_rows()) == (n + 1, 110)
        assert lance.dataset(uri, storage_options=server.options()).version == n + 1
    assert counts[10] == counts[1200], counts


def test_late_materialization_reads_ahead_on_s3(server):
    """Filtered reads on an object store read many fragments ahead at once; the rows are
    still exactly pylance's, whatever the offset and limit."""
    from test_filter_delete import MIXED_READS, _mixed_selectivity_table

    opts, uri = server.options(), "s3://bucket/mixed-selectivity.lance"
    lance.write_dataset(_mixed_selectivity_table(), uri, storage_options=opts, max_rows_per_file=200)
    lance.dataset(uri, storage_options=opts).delete("id % 13 = 0")
    ref, ours = lance.dataset(uri, storage_options=opts), lance_core.dataset(uri, storage_options=opts)
    for kw in MIXED_READS:
        assert ours.to_table(filter="k < 5", **kw) == ref.to_table(filter="k < 5", **kw), kw


def test_small_files_and_full_scans_read_each_file_in_one_request(server, proxy):
    """On an object store a file of 256 KiB or less is read whole by the request that
    opens it, and a scan of every column reads each file (up to 8 MiB) in one request
    instead of its tail and then its pages; the session keeps only the metadata of
    those files, so a later take reads just the ranges it wants."""
    opts = server.options()
    small, large = "s3://bucket/one-request-small.lance", "s3://bucket/one-request-large.lance"
    lance.write_dataset(_rows(0, 24_000), small, storage_options=opts, max_rows_per_file=8000)
    lance.write_dataset(_rows(0, 400_000), large, storage_options=opts, max_rows_per_file=200_000)
    popts = proxy.options()
    sizes = {uri: [f.file_size_bytes for fr in lance.dataset(uri, storage_options=opts).get_fragments()
                   for f in fr.metadata.files] for uri in (small, large)}
    # Small files larger than a tail read (64 KiB); large ones over 1 MiB, under 8 MiB.
    assert all(64 << 10 < n <= 256 << 10 for n in sizes[small]), sizes
    assert all(1 << 20 < n <= 8 << 20 for n in sizes[large]), sizes

    def data_gets(requests):
        return [(path, rng) for method, path, _, rng in requests if method == "GET" and "/data/" in path]

    for uri, files in ((small, 3), (large, 2)):
        # A session of its own: no file of this table is known yet.
        ds = lance_core.dataset(uri, storage_options=popts, metadata_cache_size_bytes=64 << 20)
        proxy.take()
        assert ds.to_table() == lance.dataset(uri, storage_options=opts).to_table()
        gets = data_gets(proxy.take())
        assert len(gets) == files and len({p for p, _ in gets}) == files, (uri, gets)
        assert all(rng.startswith("bytes=0-") for _, rng in gets), gets

    # A take on small files: one request for each file it touches, nothing else.
    ds = lance_core.dataset(small, storage_options=popts, metadata_cache_size_bytes=64 << 20)
    proxy.take()
    assert ds.take([5, 20_000]).to_pylist() == lance.dataset(small, storage_options=opts).take([5, 20_000]).to_pylist()
    assert len(data_gets(proxy.take())) == 2

    # After a full scan (files read whole), the session knows the large files' metadata
    # but does not keep their bytes: a take asks for a few ranges, no whole file.
    ds = lance_core.dataset(large, storage_options=popts, metadata_cache_size_bytes=64 << 20)
    ds.to_table()
    proxy.take()
    assert ds.take([7, 300_000]).to_pylist() == lance.dataset(large, storage_options=opts).take([7, 300_000]).to_pylist()
    gets = data_gets(proxy.take())
    assert gets and not any(rng.startswith("bytes=0-") and int(rng.split("-")[1]) > 1 << 20 for _, rng in gets), gets


def test_takes_and_filtered_scans_read_small_files_whole(server, proxy):
    """A take whose ranges in a file would be joined into about one read of it anyway
    (the store joins ranges less than 1 MiB apart: here two rows of three columns in a
    3.6 MB file) reads the file whole when it opens it, instead of its tail, its pages'
    metadata and then the ranges; one row in such a file is still read by its ranges. A
    filtered scan of a table whose files are small starts by reading them whole, each in
    one request. The rows are pylance's."""
    opts = server.options()
    uri = "s3://bucket/small-table-reads.lance"
    lance.write_dataset(_rows(0, 400_000), uri, storage_options=opts, max_rows_per_file=200_000)
    ref = lance.dataset(uri, storage_options=opts)
    sizes = [f.file_size_bytes for fr in ref.get_fragments() for f in fr.metadata.files]
    assert all(3 << 20 < n <= 6 << 20 for n in sizes), sizes
    popts = proxy.options()

    def data_gets():
        return [(path, rng) for method, path, _, rng in proxy.take() if method == "GET" and "/data/" in path]

    def whole(rng):  # from the start to past 3 MiB: the file, less the tail at most
        return rng.startswith("bytes=0-") and int(rng.split("-")[1]) >= 3 << 20

    def fresh():
        # A session of its own: no file of this table is known yet.
        ds = lance_core.dataset(uri, storage_options=popts, metadata_cache_size_bytes=64 << 20)
        proxy.take()
        return ds

    rows = [7, 150_000, 200_005, 399_999]
    assert fresh().take(rows).to_pylist() == ref.take(rows).to_pylist()
    gets = data_gets()
    assert len(gets) == 2 and all(whole(rng) for _, rng in gets), gets

    assert fresh().take([7, 300_000]).to_pylist() == ref.take([7, 300_000]).to_pylist()
    gets = data_gets()
    assert len(gets) > 2 and not any(whole(rng) for _, rng in gets), gets

    for kw in ({}, {"limit": 5}, {"offset": 3, "limit": 4}, {"columns": ["s", "x"]}):
        assert fresh().to_table(filter="id >= 390000", **kw) == ref.to_table(filter="id >= 390000", **kw), kw
        gets = data_gets()
        if kw in ({}, {"columns": ["s", "x"]}):
            # Every column is read (the filter's and the projection's).
            assert len(gets) == 2 and all(whole(rng) for _, rng in gets), (kw, gets)
