"""lance_core.namespace: a directory catalog in pylance's layout (each library reads the
other's), the REST protocol both ways, and datasets opened and written by table id."""

import io
import threading

import lance
import lance.namespace
import pyarrow as pa
import pytest
from lance_namespace import (
    CountTableRowsRequest,
    CreateNamespaceRequest,
    CreateTableRequest,
    DeclareTableRequest,
    DeregisterTableRequest,
    DescribeNamespaceRequest,
    DescribeTableRequest,
    DropNamespaceRequest,
    DropTableRequest,
    InsertIntoTableRequest,
    ListNamespacesRequest,
    ListTablesRequest,
    ListTableVersionsRequest,
    QueryTableRequest,
    RegisterTableRequest,
    TableExistsRequest,
)
from lance_namespace.errors import (
    ConcurrentModificationError,
    InvalidInputError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
    TableAlreadyExistsError,
    TableNotFoundError,
)

import lance_core
from lance_core import namespace as ns


def ipc(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue()


PEOPLE = pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"], "age": [30, 25, 35]})


def build_catalog(client):
    """The same catalog, through either library's client."""
    client.create_namespace(CreateNamespaceRequest(id=["ws"], properties={"owner": "u"}))
    client.create_namespace(CreateNamespaceRequest(id=["ws", "inner"]))
    client.create_table(CreateTableRequest(id=["ws", "t1"]), ipc(PEOPLE))
    client.create_table(CreateTableRequest(id=["root_t"]), ipc(PEOPLE))
    client.declare_table(DeclareTableRequest(id=["ws", "declared"]))


def read_catalog(client):
    """What a client sees of the catalog `build_catalog` made."""
    return {
        "namespaces": client.list_namespaces(ListNamespacesRequest(id=[])).namespaces,
        "children": client.list_namespaces(ListNamespacesRequest(id=["ws"])).namespaces,
        "props": client.describe_namespace(DescribeNamespaceRequest(id=["ws"])).properties,
        "ws_tables": client.list_tables(ListTablesRequest(id=["ws"])).tables,
        "root_tables": client.list_tables(ListTablesRequest(id=[])).tables,
        "t1_rows": lance.dataset(client.describe_table(DescribeTableRequest(id=["ws", "t1"])).location)
        .to_table().to_pylist(),
        "root_rows": lance.dataset(client.describe_table(DescribeTableRequest(id=["root_t"])).location).count_rows(),
    }


@pytest.mark.parametrize("writer", ["lance_core", "pylance"])
def test_catalog_read_by_the_other_library(tmp_path, writer):
    ours = ns.DirectoryNamespace(root=str(tmp_path))
    theirs = lance.namespace.DirectoryNamespace(root=str(tmp_path))
    build_catalog(ours if writer == "lance_core" else theirs)
    expected = {"namespaces": ["ws"], "children": ["inner"], "props": {"owner": "u"},
                "ws_tables": ["declared", "t1"], "root_tables": ["root_t"], "t1_rows": PEOPLE.to_pylist(),
                "root_rows": 3}
    assert read_catalog(theirs) == expected
    assert read_catalog(ours) == expected
    # The other library changes the catalog further: both see the change.
    other = theirs if writer == "lance_core" else ours
    other.drop_table(DropTableRequest(id=["ws", "t1"]))
    other.create_table(CreateTableRequest(id=["ws", "t2"]), ipc(PEOPLE))
    for client in (ours, theirs):
        assert client.list_tables(ListTablesRequest(id=["ws"])).tables == ["declared", "t2"]
        with pytest.raises(TableNotFoundError):
            client.table_exists(TableExistsRequest(id=["ws", "t1"]))


def test_errors_and_rules(tmp_path):
    client = ns.connect("dir", {"root": f"file://{tmp_path}"})
    assert client.namespace_id() == f'DirectoryNamespace {{ root: "file://{tmp_path}" }}'
    client.create_namespace(CreateNamespaceRequest(id=["ws"]))
    with pytest.raises(NamespaceAlreadyExistsError, match="Namespace already exists: ws"):
        client.create_namespace(CreateNamespaceRequest(id=["ws"]))
    with pytest.raises(NamespaceNotFoundError, match="parent namespace 'nope'"):
        client.create_namespace(CreateNamespaceRequest(id=["nope", "x"]))
    client.create_table(CreateTableRequest(id=["ws", "t"]), ipc(PEOPLE))
    with pytest.raises(TableAlreadyExistsError):
        client.create_table(CreateTableRequest(id=["ws", "t"]), ipc(PEOPLE))
    with pytest.raises(NamespaceNotEmptyError, match="contains 1 child objects"):
        client.drop_namespace(DropNamespaceRequest(id=["ws"]))
    with pytest.raises(InvalidInputError, match="Table ID cannot be empty"):
        client.create_table(CreateTableRequest(id=[]), ipc(PEOPLE))
    with pytest.raises(InvalidInputError, match="Arrow IPC"):
        client.create_table(CreateTableRequest(id=["ws", "u"]), b"")
    for location, message in [("s3://b/t.lance", "Absolute URIs"), ("/tmp/t.lance", "Absolute paths"),
                              ("../t.lance", "Path traversal")]:
        with pytest.raises(InvalidInputError, match=message):
            client.register_table(RegisterTableRequest(id=["ws", "r"], location=location))
    with pytest.raises(TableNotFoundError, match="table id 'ws\\$missing'"):
        client.describe_table(DescribeTableRequest(id=["ws", "missing"]))
    # Register the table's directory under a second name; deregistering keeps the data.
    location = client.describe_table(DescribeTableRequest(id=["ws", "t"])).location
    relative = location.rsplit("/", 1)[-1]
    assert client.register_table(RegisterTableRequest(id=["ws", "alias"], location=relative)).location == relative
    out = client.deregister_table(DeregisterTableRequest(id=["ws", "alias"]))
    assert out.location == location and out.id == ["ws", "alias"]
    assert lance_core.dataset(location).count_rows() == 3


def test_data_operations_and_versions(tmp_path):
    client = ns.DirectoryNamespace(root=str(tmp_path))
    client.create_namespace(CreateNamespaceRequest(id=["ws"]))
    client.create_table(CreateTableRequest(id=["ws", "t"]), ipc(PEOPLE))
    assert client.count_table_rows(CountTableRowsRequest(id=["ws", "t"], predicate="age > 28")) == 2
    client.insert_into_table(InsertIntoTableRequest(id=["ws", "t"]), ipc(PEOPLE))
    assert client.count_table_rows(CountTableRowsRequest(id=["ws", "t"])) == 6
    versions = client.list_table_versions(ListTableVersionsRequest(id=["ws", "t"], descending=True)).versions
    assert [v.version for v in versions] == [2, 1]
    assert versions[0].manifest_path.endswith("_versions/18446744073709551613.manifest")
    described = client.describe_table_version({"id": ["ws", "t"], "version": 1})
    assert described["version"]["version"] == 1
    query = QueryTableRequest(id=["ws", "t"], k=2, vector={}, filter="age >= 30",
                              columns={"column_names": ["id", "name"]})
    got = pa.ipc.open_file(client.query_table(query)).read_all()
    assert got.column_names == ["id", "name"] and got.num_rows == 2
    client.insert_into_table(InsertIntoTableRequest(id=["ws", "t"], mode="overwrite"), ipc(PEOPLE.slice(0, 1)))
    assert client.count_table_rows(CountTableRowsRequest(id=["ws", "t"])) == 1


def test_datasets_by_table_id(tmp_path):
    client = ns.DirectoryNamespace(root=str(tmp_path))
    client.create_namespace(CreateNamespaceRequest(id=["ws"]))
    ds = lance_core.write_dataset(PEOPLE, namespace_client=client, table_id=["ws", "t"])
    lance_core.write_dataset(PEOPLE, namespace_client=client, table_id=["ws", "t"], mode="append")
    assert lance_core.dataset(namespace_client=client, table_id=["ws", "t"]).count_rows() == 6
    assert lance_core.dataset(namespace_client=client, table_id=["ws", "t"], version=1).count_rows() == 3
    # pylance opens the same table through its own catalog client.
    theirs = lance.namespace.DirectoryNamespace(root=str(tmp_path))
    assert lance.dataset(namespace_client=theirs, table_id=["ws", "t"]).count_rows() == 6
    assert ds.uri.endswith("_ws$t")
    with pytest.raises(ValueError, match="Cannot specify both"):
        lance_core.dataset(str(tmp_path), namespace_client=client, table_id=["ws", "t"])
    with pytest.raises(ValueError, match="must be provided together"):
        lance_core.dataset(table_id=["ws", "t"])


def test_concurrent_writers_of_one_catalog(tmp_path):
    """Threads with their own clients create and drop tables in one namespace: every
    change commits (a writer that lost a race commits again on top of the winner)."""
    ns.DirectoryNamespace(root=str(tmp_path)).create_namespace(CreateNamespaceRequest(id=["ws"]))
    failures = []

    def work(i):
        try:
            client = ns.DirectoryNamespace(root=str(tmp_path))
            client.create_table(CreateTableRequest(id=["ws", f"t{i}"]), ipc(PEOPLE))
            if i % 2:
                client.drop_table(DropTableRequest(id=["ws", f"t{i}"]))
        except Exception as e:  # noqa: BLE001 - collected and asserted below
            failures.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    listed = ns.DirectoryNamespace(root=str(tmp_path)).list_tables(ListTablesRequest(id=["ws"])).tables
    assert listed == ["t0", "t2", "t4"]


def _race_to_create(clients, name):
    """Each client creates namespace `name` at the same moment; what each was told."""
    start = threading.Barrier(len(clients))
    outcomes = []

    def create(client):
        start.wait()
        try:
            client.create_namespace(CreateNamespaceRequest(id=name))
            outcomes.append("created")
        except NamespaceAlreadyExistsError:
            outcomes.append("exists")
        except ConcurrentModificationError:
            # pylance's client, when its merge lost the race, says so instead of reading
            # the catalog again (ours reads it and says the id exists).
            outcomes.append("exists" if isinstance(client, lance.namespace.DirectoryNamespace) else "lost")
        except Exception as e:  # noqa: BLE001 - asserted by the caller
            outcomes.append(repr(e))

    threads = [threading.Thread(target=create, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sorted(outcomes)


def test_racing_creators_of_one_id_leave_one_row(tmp_path):
    """Clients of both libraries create the same namespace at once, again and again: one
    of them creates it and the others are told it exists; the catalog never holds the id
    twice (a check of the catalog, then an append, let three of four racers append)."""
    root = str(tmp_path)
    ns.DirectoryNamespace(root=root).create_namespace(CreateNamespaceRequest(id=["base"]))
    for i in range(8):
        clients = [ns.DirectoryNamespace(root=root) for _ in range(3)] + [lance.namespace.DirectoryNamespace(root=root)]
        outcomes = _race_to_create(clients, ["base", f"n{i}"])
        assert outcomes == ["created"] + ["exists"] * (len(clients) - 1), outcomes
    ids = lance.dataset(f"{root}/__manifest").to_table(columns=["object_id"])["object_id"].to_pylist()
    assert sorted(ids) == sorted(["base"] + [f"base$n{i}" for i in range(8)]), ids


@pytest.mark.parametrize("server", ["lance_core", "pylance"])
@pytest.mark.parametrize("client_of", ["lance_core", "pylance"])
def test_rest_protocol(tmp_path, server, client_of):
    """Our REST client and server each work with pylance's."""
    adapter_type = ns.RestAdapter if server == "lance_core" else lance.namespace.RestAdapter
    with adapter_type("dir", {"root": str(tmp_path)}, port=0) as adapter:
        uri = f"http://127.0.0.1:{adapter.port}"
        client = ns.RestNamespace(uri=uri) if client_of == "lance_core" else lance.namespace.RestNamespace(uri=uri)
        build_catalog(client)
        assert client.list_tables(ListTablesRequest(id=["ws"])).tables == ["declared", "t1"]
        assert client.list_namespaces(ListNamespacesRequest(id=["ws"])).namespaces == ["inner"]
        assert client.describe_namespace(DescribeNamespaceRequest(id=["ws"])).properties == {"owner": "u"}
        client.table_exists(TableExistsRequest(id=["ws", "t1"]))
        with pytest.raises(TableNotFoundError, match="not found"):
            client.describe_table(DescribeTableRequest(id=["ws", "missing"]))
        with pytest.raises(NamespaceNotEmptyError):
            client.drop_namespace(DropNamespaceRequest(id=["ws"]))
        with pytest.raises(InvalidInputError, match="Path traversal"):
            client.register_table(RegisterTableRequest(id=["ws", "r"], location="../x"))
        dropped = client.drop_table(DropTableRequest(id=["ws", "t1"]))
        assert dropped.location.endswith("_ws$t1")
        with pytest.raises(TableNotFoundError):
            client.table_exists(TableExistsRequest(id=["ws", "t1"]))


def test_tables_open_and_write_without_the_namespace_package(tmp_path):
    """lance-namespace is an optional extra: a plain install opens, writes and scans
    tables by URI without it, and only `lance_core.namespace` asks for it."""
    import subprocess
    import sys

    code = f"""
import sys
sys.modules["lance_namespace"] = None  # as if the extra were not installed
import pyarrow as pa
import lance_core
uri = {str(tmp_path / "t.lance")!r}
lance_core.write_dataset(pa.table({{"a": [1, 2, 3]}}), uri)
lance_core.write_dataset(pa.table({{"a": [4]}}), uri, mode="append")
assert lance_core.dataset(uri).to_table()["a"].to_pylist() == [1, 2, 3, 4]
try:
    import lance_core.namespace
except ImportError as e:
    assert "lance-namespace" in str(e), e
else:
    raise AssertionError("lance_core.namespace imported without lance-namespace")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
