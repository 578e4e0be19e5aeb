"""A namespace kept in a directory (local or on an object store), as pylance's
`DirectoryNamespace`: nested namespaces and tables recorded in the `__manifest` table at
the root, table data in directories below it.

Layout (pylance's): a table at the root lives in `<name>.lance` and is also found by
listing the root (tables pylance or anyone wrote there before a catalog existed); a table
in a child namespace lives in `<8 random hex digits>_<object id>`; a declared table's
directory holds an empty `.lance-reserved` file until data is written. Namespaces are
catalog rows only.
"""

from __future__ import annotations

import io
import json
import random
import re
from typing import Any, Dict, List, Optional

import pyarrow as pa
from lance_namespace import (
    CreateNamespaceResponse,
    CreateTableIndexResponse,
    CreateTableResponse,
    DeclareTableResponse,
    DeregisterTableResponse,
    DescribeNamespaceResponse,
    DescribeTableIndexStatsResponse,
    DescribeTableResponse,
    DropNamespaceResponse,
    DropTableResponse,
    InsertIntoTableResponse,
    LanceNamespace,
    ListNamespacesResponse,
    ListTableIndicesResponse,
    ListTablesResponse,
    ListTableVersionsResponse,
    RegisterTableResponse,
    TableVersion,
)
from lance_namespace import errors as ns_errors

from .. import _lance_core
from ..dataset import dataset
from ..errors import DatasetNotFoundError, LanceError
from ..write import write_dataset
from . import _common
from ._common import DELIMITER, OpsMetrics, error, full_uri, is_true, object_id, paginate
from .manifest import NAMESPACE, TABLE, ManifestTable

RESERVED = ".lance-reserved"
DEREGISTERED = ".lance-deregistered"
_U64_MAX = 2**64 - 1

# Index types a namespace request may name, as pylance maps them.
_INDEX_TYPES = {
    "SCALAR": "BTREE", "BTREE": "BTREE", "BITMAP": "BITMAP", "LABEL_LIST": "LABEL_LIST",
    "LABELLIST": "LABEL_LIST", "INVERTED": "INVERTED", "FTS": "INVERTED", "NGRAM": "NGRAM",
    "ZONEMAP": "ZONEMAP", "ZONE_MAP": "ZONEMAP", "BLOOMFILTER": "BLOOMFILTER", "BLOOM_FILTER": "BLOOMFILTER",
    "VECTOR": "IVF_PQ", "IVF_PQ": "IVF_PQ", "IVF_FLAT": "IVF_FLAT", "IVF_SQ": "IVF_SQ",
}
_SCALAR = {"BTREE", "BITMAP", "LABEL_LIST", "INVERTED", "NGRAM", "ZONEMAP", "BLOOMFILTER"}


class DirectoryNamespace(LanceNamespace):
    """A catalog of Lance tables below `root` (a path or URI). Properties, as pylance's
    (strings): `manifest_enabled` (the `__manifest` catalog, default true),
    `dir_listing_enabled` (root tables found by listing the root, default true),
    `dir_listing_to_manifest_migration_enabled` (root lookups try the catalog first),
    `commit_retries`, `table_version_tracking_enabled`, `ops_metrics_enabled`,
    `storage.<key>` (options of the store, given to every table)."""

    def __init__(self, session: Any = None, context_provider: Any = None, **properties: Any):
        props = {k: str(v) for k, v in properties.items() if not k.startswith("dynamic_context_provider.")}
        root = props.get("root")
        if not root:
            raise ValueError("Failed to create DirectoryNamespace: Invalid input: "
                             "Missing required property 'root' for directory namespace")
        self.root = root.rstrip("/") or root
        self.storage_options = {k[len("storage."):]: v for k, v in props.items() if k.startswith("storage.")} or None
        self.manifest_enabled = is_true(props.get("manifest_enabled"), True)
        self.dir_listing = is_true(props.get("dir_listing_enabled"), True)
        self.migration = is_true(props.get("dir_listing_to_manifest_migration_enabled"), False)
        self.version_tracking = is_true(props.get("table_version_tracking_enabled"), False)
        self.vend_options = is_true(props.get("vend_input_storage_options"), False)
        try:
            retries = int(props.get("commit_retries", "20"))
        except ValueError:
            retries = 20
        self.metrics = OpsMetrics(is_true(props.get("ops_metrics_enabled"), False))
        self.context_provider = context_provider
        self.manifest = ManifestTable(self._uri("__manifest"), self.storage_options, max(retries, 0))

    # -- identity ---------------------------------------------------------------------

    def namespace_id(self) -> str:
        return f"DirectoryNamespace {{ root: {json.dumps(self.root)} }}"

    def __repr__(self) -> str:
        return f"DirectoryNamespace({self.namespace_id()})"

    def retrieve_ops_metrics(self) -> Dict[str, int]:
        return self.metrics.snapshot()

    def reset_ops_metrics(self) -> None:
        self.metrics.reset()

    # -- namespaces ---------------------------------------------------------------------

    def create_namespace(self, request: Any) -> CreateNamespaceResponse:
        self.metrics.count("create_namespace")
        req = _common.as_dict(request)
        parts = self._namespace_id(req)
        if not parts:
            raise error(ns_errors.NamespaceAlreadyExistsError, "root namespace")
        self._need_manifest("Child namespaces are only supported when manifest mode is enabled")
        self._check_parents(parts)
        oid = object_id(parts)
        self.manifest.insert(oid, NAMESPACE, None, req.get("properties"),
                             lambda _row: error(ns_errors.NamespaceAlreadyExistsError, oid))
        return CreateNamespaceResponse(properties=req.get("properties"))

    def describe_namespace(self, request: Any) -> DescribeNamespaceResponse:
        self.metrics.count("describe_namespace")
        parts = self._namespace_id(_common.as_dict(request))
        if not parts:
            return DescribeNamespaceResponse(properties={})
        row = self._namespace_row(parts)
        return DescribeNamespaceResponse(properties=json.loads(row["metadata"]) if row["metadata"] else None)

    def namespace_exists(self, request: Any) -> None:
        self.metrics.count("namespace_exists")
        parts = self._namespace_id(_common.as_dict(request))
        if parts and (not self.manifest_enabled or self.manifest.get(object_id(parts)) is None):
            raise error(ns_errors.NamespaceNotFoundError, object_id(parts))

    def drop_namespace(self, request: Any) -> DropNamespaceResponse:
        self.metrics.count("drop_namespace")
        parts = self._namespace_id(_common.as_dict(request))
        if not parts:
            raise error(ns_errors.InvalidInputError, "Root namespace cannot be dropped")
        self._namespace_row(parts)
        oid = object_id(parts)
        children = [r for r in self.manifest.rows() if r["object_id"].startswith(oid + DELIMITER)]
        if children:
            raise error(ns_errors.NamespaceNotEmptyError, f"'{oid}' (contains {len(children)} child objects)")
        self.manifest.delete(oid)
        return DropNamespaceResponse()

    def list_namespaces(self, request: Any) -> ListNamespacesResponse:
        self.metrics.count("list_namespaces")
        req = _common.as_dict(request)
        parts = self._namespace_id(req)
        names = self._children(parts, NAMESPACE) if self.manifest_enabled else []
        page, token = paginate(names, req.get("page_token"), req.get("limit"))
        return ListNamespacesResponse(namespaces=page, page_token=token)

    # -- tables -------------------------------------------------------------------------

    def list_tables(self, request: Any) -> ListTablesResponse:
        self.metrics.count("list_tables")
        req = _common.as_dict(request)
        parts = self._namespace_id(req)
        if parts:
            self._need_manifest("Directory namespace only supports root namespace operations")
            names = self._children(parts, TABLE)
        else:
            names = set()
            if self.manifest_enabled and (not self.dir_listing or self.migration):
                names |= set(self._children([], TABLE))
            if self.dir_listing:
                names |= set(self._listed_root_tables())
            names = list(names)
        page, token = paginate(names, req.get("page_token"), req.get("limit"))
        return ListTablesResponse(tables=page, page_token=token)

    def create_table(self, request: Any, request_data: Optional[bytes] = None) -> CreateTableResponse:
        self.metrics.count("create_table")
        req = _common.as_dict(request)
        parts = self._table_id(req)
        if not request_data:
            raise error(ns_errors.InvalidInputError, "Request data (Arrow IPC stream) is required for create_table")
        reader = _ipc_stream(request_data, "create_table")
        oid = object_id(parts)
        row = self.manifest.get(oid) if self.manifest_enabled else None
        if row is not None and not self._only_declared(row["location"]):
            raise error(ns_errors.TableAlreadyExistsError, parts[-1])
        relative = row["location"] if row is not None else self._new_table_dir(parts)
        ds = self._write(reader, self._uri(relative), "create")
        if self.manifest_enabled and row is None:
            self.manifest.insert(oid, TABLE, relative, None,
                                 lambda _row: error(ns_errors.TableAlreadyExistsError, parts[-1]))
        return CreateTableResponse(location=full_uri(self.root, relative), version=ds.version,
                                   storage_options=self._vended())

    def declare_table(self, request: Any) -> DeclareTableResponse:
        self.metrics.count("declare_table")
        req = _common.as_dict(request)
        parts = self._table_id(req)
        oid = object_id(parts)
        relative = self._new_table_dir(parts)
        location = full_uri(self.root, relative)
        asked = req.get("location")
        if asked and asked.rstrip("/") != location:
            raise error(ns_errors.InvalidInputError,
                        f"Cannot declare table {parts[-1]} at location {asked}, must be at location {location}")
        if self.manifest_enabled:
            if self.manifest.get(oid) is not None:
                raise error(ns_errors.TableAlreadyExistsError, parts[-1])
        elif self._listing(relative)[1]:
            raise error(ns_errors.TableAlreadyExistsError, parts[-1])
        _lance_core._put_object(self._uri(relative), RESERVED, b"", self.storage_options)
        if self.manifest_enabled:
            self.manifest.insert(oid, TABLE, relative, None,
                                 lambda _row: error(ns_errors.TableAlreadyExistsError, parts[-1]))
        return DeclareTableResponse(location=location, storage_options=self._vended(),
                                    managed_versioning=True if self.version_tracking else None)

    def describe_table(self, request: Any) -> DescribeTableResponse:
        self.metrics.count("describe_table")
        req = _common.as_dict(request)
        parts = self._table_id(req)
        location = self._locate(parts)
        out: Dict[str, Any] = dict(table=parts[-1], namespace=parts[:-1], location=location, table_uri=location,
                                   storage_options=self._vended(),
                                   managed_versioning=True if self.version_tracking else None)
        if req.get("load_detailed_metadata"):
            try:
                ds = self._open(location, req.get("version"))
            except (LanceError, OSError):
                pass
            else:
                out["version"] = ds.version
        if req.get("check_declared"):
            out["is_only_declared"] = self._only_declared_uri(location)
        return DescribeTableResponse(**out)

    def table_exists(self, request: Any) -> None:
        self.metrics.count("table_exists")
        parts = self._table_id(_common.as_dict(request))
        if self._root_by_listing(parts):
            self._listed_root_table(parts[0])
        elif self.manifest.get(object_id(parts)) is None:
            raise error(ns_errors.TableNotFoundError, f"table id '{object_id(parts)}'")

    def drop_table(self, request: Any) -> DropTableResponse:
        self.metrics.count("drop_table")
        req = _common.as_dict(request)
        parts = self._table_id(req)
        if self.manifest_enabled:
            row = self.manifest.get(object_id(parts))
            if row is None or row["object_type"] != TABLE:
                raise error(ns_errors.TableNotFoundError, parts[-1])
            relative = row["location"]
            self.manifest.delete(object_id(parts))
        else:
            relative = f"{parts[-1]}.lance"
            self._listed_root_table(parts[-1])
        _lance_core._drop_dataset(self._uri(relative), self.storage_options)
        return DropTableResponse(id=req.get("id"), location=full_uri(self.root, relative))

    def register_table(self, request: Any) -> RegisterTableResponse:
        self.metrics.count("register_table")
        req = _common.as_dict(request)
        parts = self._table_id(req)
        location = req.get("location") or ""
        rule = "Location must be a relative path within the root directory"
        if "://" in location:
            raise error(ns_errors.InvalidInputError,
                        f"Absolute URIs are not allowed for register_table. {rule}: {location}")
        if location.startswith("/"):
            raise error(ns_errors.InvalidInputError,
                        f"Absolute paths are not allowed for register_table. {rule}: {location}")
        if ".." in location:
            raise error(ns_errors.InvalidInputError, f"Path traversal is not allowed. {rule}: {location}")
        if not self.manifest_enabled:
            raise error(ns_errors.UnsupportedOperationError,
                        "register_table is only supported when manifest mode is enabled")
        self._check_parents(parts)
        oid = object_id(parts)
        self.manifest.insert(oid, TABLE, location, None, lambda _row: error(ns_errors.TableAlreadyExistsError, oid))
        return RegisterTableResponse(location=location)

    def deregister_table(self, request: Any) -> DeregisterTableResponse:
        self.metrics.count("deregister_table")
        req = _common.as_dict(request)
        parts = self._table_id(req)
        if self.manifest_enabled:
            oid = object_id(parts)
            row = self.manifest.get(oid)
            if row is None or row["object_type"] != TABLE:
                raise error(ns_errors.TableNotFoundError, oid)
            self.manifest.delete(oid)
            return DeregisterTableResponse(id=req.get("id"), location=full_uri(self.root, row["location"]))
        relative = f"{parts[-1]}.lance"
        self._listed_root_table(parts[-1])
        _lance_core._put_object(self._uri(relative), DEREGISTERED, b"", self.storage_options)
        return DeregisterTableResponse(id=req.get("id"), location=full_uri(self.root, relative))

    # -- data -----------------------------------------------------------------------------

    def count_table_rows(self, request: Any) -> int:
        self.metrics.count("count_table_rows")
        req = _common.as_dict(request)
        ds = self._open(self._locate(self._table_id(req)), req.get("version"))
        return ds.count_rows(filter=req.get("predicate") or None)

    def insert_into_table(self, request: Any, request_data: Optional[bytes] = None) -> InsertIntoTableResponse:
        self.metrics.count("insert_into_table")
        req = _common.as_dict(request)
        location = self._locate(self._table_id(req))
        if not request_data:
            raise error(ns_errors.InvalidInputError,
                        "Request data (Arrow IPC stream) is required for insert_into_table")
        mode = (req.get("mode") or "append").lower()
        if mode not in ("append", "overwrite"):
            raise error(ns_errors.InvalidInputError,
                        f"Unsupported write mode '{req.get('mode')}'. Supported modes are: 'append', 'overwrite'")
        self._write(_ipc_stream(request_data, "insert_into_table"), location, mode)
        return InsertIntoTableResponse()

    def query_table(self, request: Any) -> bytes:
        """The rows a query asks for, as Arrow IPC file bytes: `filter`, `columns`
        (`column_names`, or `column_aliases` of expressions), `k` and `offset`, a nearest
        search when `vector` holds one, `with_row_id`, `version`."""
        self.metrics.count("query_table")
        req = _common.as_dict(request)
        ds = self._open(self._locate(self._table_id(req)), req.get("version"))
        columns: Any = None
        spec = req.get("columns") or {}
        if spec.get("column_aliases"):
            columns = dict(spec["column_aliases"])
        elif spec.get("column_names"):
            columns = list(spec["column_names"])
        vector = req.get("vector") or {}
        query = vector.get("single_vector") or (vector.get("multi_vector") or [None])[0]
        k = req.get("k") or 0
        scan: Dict[str, Any] = dict(columns=columns, filter=req.get("filter") or None,
                                    with_row_id=bool(req.get("with_row_id")))
        if query:
            nearest: Dict[str, Any] = {"column": req.get("vector_column") or "vector", "q": query,
                                       "k": k if k > 0 else 10}
            for key in ("nprobes", "ef", "refine_factor"):
                if req.get(key) is not None:
                    nearest[key] = req[key]
            if req.get("distance_type"):
                nearest["metric"] = req["distance_type"]
            if req.get("bypass_vector_index"):
                nearest["use_index"] = False
            scan["nearest"] = nearest
        elif k > 0:
            scan["limit"] = k
            scan["offset"] = req.get("offset") or None
        table = ds.to_table(**scan)
        sink = io.BytesIO()
        with pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table.combine_chunks())
        return sink.getvalue()

    # -- versions --------------------------------------------------------------------------

    def list_table_versions(self, request: Any) -> ListTableVersionsResponse:
        self.metrics.count("list_table_versions")
        req = _common.as_dict(request)
        versions = self._version_files(self._locate(self._table_id(req)))
        versions.sort(key=lambda v: v.version, reverse=bool(req.get("descending")))
        if req.get("limit") is not None:
            versions = versions[: max(int(req["limit"]), 0)]
        return ListTableVersionsResponse(versions=versions)

    def describe_table_version(self, request: Any) -> Dict[str, Any]:
        self.metrics.count("describe_table_version")
        req = _common.as_dict(request)
        parts = self._table_id(req)
        location = self._locate(parts)
        version = req.get("version")
        if version is not None and int(version) < 0:
            raise error(ns_errors.InvalidInputError, f"version must not be negative: {version}")
        ds = self._open(location, version, not_found=ns_errors.TableVersionNotFoundError)
        for v in self._version_files(location):
            if v.version == ds.version:
                described = {k: x for k, x in v.to_dict().items() if x is not None}
                return {"version": described}
        raise error(ns_errors.TableVersionNotFoundError, f"version {ds.version} for table id '{object_id(parts)}'")

    # -- indices ---------------------------------------------------------------------------

    def create_table_index(self, request: Any) -> CreateTableIndexResponse:
        self.metrics.count("create_table_index")
        req = _common.as_dict(request)
        ds = self._open(self._locate(self._table_id(req)))
        asked = str(req.get("index_type") or "").strip().upper()
        kind = _INDEX_TYPES.get(asked)
        if kind is None:
            raise error(ns_errors.InvalidInputError, f"Unsupported index_type '{asked}'")
        column, name = req.get("column"), req.get("name")
        try:
            if kind in _SCALAR:
                ds.create_scalar_index(column, kind, name, replace=False)
            else:
                extra = {k: req[k] for k in ("num_partitions", "num_sub_vectors") if req.get(k) is not None}
                ds.create_index(column, kind, name, metric=req.get("distance_type") or "l2", replace=False, **extra)
        except (LanceError, ValueError, TypeError) as e:
            raise error(ns_errors.InvalidInputError, f"Failed to create index on '{column}': {e}") from e
        return CreateTableIndexResponse()

    def list_table_indices(self, request: Any) -> ListTableIndicesResponse:
        self.metrics.count("list_table_indices")
        req = _common.as_dict(request)
        ds = self._open(self._locate(self._table_id(req)), req.get("version"))
        from lance_namespace_urllib3_client.models import IndexContent

        described = {d.name: d for d in ds.describe_indices()}
        names, token = paginate(list(described), req.get("page_token"), req.get("limit"))
        indexes = [IndexContent(index_name=n, index_uuid=described[n].segments[0].uuid,
                                columns=list(described[n].field_names), status="SUCCEEDED",
                                index_type=described[n].index_type, num_indexed_rows=described[n].num_rows_indexed,
                                num_segments=len(described[n].segments)) for n in names]
        return ListTableIndicesResponse(indexes=indexes, page_token=token)

    def describe_table_index_stats(self, request: Any) -> DescribeTableIndexStatsResponse:
        self.metrics.count("describe_table_index_stats")
        req = _common.as_dict(request)
        name = req.get("index_name")
        if not name:
            raise error(ns_errors.InvalidInputError, "Index name is required for describe_table_index_stats")
        ds = self._open(self._locate(self._table_id(req)), req.get("version"))
        try:
            stats = ds.index_statistics(name)
        except (LanceError, ValueError, KeyError) as e:
            raise error(ns_errors.TableIndexNotFoundError, f"{name}: {e}") from e
        return DescribeTableIndexStatsResponse(
            index_type=stats.get("index_type"), distance_type=stats.get("distance_type"),
            num_indexed_rows=stats.get("num_indexed_rows"), num_unindexed_rows=stats.get("num_unindexed_rows"),
            num_indices=stats.get("num_indices"))

    # -- helpers ---------------------------------------------------------------------------

    def _uri(self, relative: str) -> str:
        return f"{self.root}/{relative}"

    def _vended(self) -> Optional[Dict[str, str]]:
        return dict(self.storage_options) if self.vend_options and self.storage_options else None

    def _need_manifest(self, what: str) -> None:
        if not self.manifest_enabled:
            raise error(ns_errors.UnsupportedOperationError, what)

    @staticmethod
    def _namespace_id(req: Dict[str, Any]) -> List[str]:
        parts = req.get("id")
        if parts is None:
            raise error(ns_errors.InvalidInputError, "Namespace ID is required")
        return list(parts)

    def _table_id(self, req: Dict[str, Any]) -> List[str]:
        parts = req.get("id")
        if parts is None:
            raise error(ns_errors.InvalidInputError, "Table ID is required")
        if not parts:
            raise error(ns_errors.InvalidInputError, "Table ID cannot be empty")
        if len(parts) > 1 and not self.manifest_enabled:
            raise error(ns_errors.UnsupportedOperationError,
                        f"Multi-level table IDs are only supported when manifest mode is enabled, but got: {parts}")
        return list(parts)

    def _namespace_row(self, parts: List[str]) -> Dict[str, Any]:
        row = self.manifest.get(object_id(parts)) if self.manifest_enabled else None
        if row is None or row["object_type"] != NAMESPACE:
            raise error(ns_errors.NamespaceNotFoundError, object_id(parts))
        return row

    def _check_parents(self, parts: List[str]) -> None:
        """Every namespace above `parts` must exist."""
        for depth in range(1, len(parts)):
            parent = object_id(parts[:depth])
            row = self.manifest.get(parent)
            if row is None or row["object_type"] != NAMESPACE:
                raise error(ns_errors.NamespaceNotFoundError, f"parent namespace '{parent}'")

    def _children(self, parts: List[str], kind: str) -> List[str]:
        """The names of the direct children of namespace `parts` of type `kind`."""
        prefix = object_id(parts) + DELIMITER if parts else ""
        out = []
        for row in self.manifest.rows(f"object_type = '{kind}'"):
            oid = row["object_id"]
            if oid.startswith(prefix) and DELIMITER not in oid[len(prefix):]:
                out.append(oid[len(prefix):])
        return out

    def _new_table_dir(self, parts: List[str]) -> str:
        if len(parts) == 1 and (self.dir_listing or not self.manifest_enabled):
            return f"{parts[0]}.lance"
        return f"{random.getrandbits(32):08x}_{object_id(parts)}"

    def _root_by_listing(self, parts: List[str]) -> bool:
        """Whether a root table is looked up by listing the root (pylance's default)."""
        return len(parts) == 1 and (not self.manifest_enabled or (self.dir_listing and not self.migration))

    def _listing(self, relative: str) -> tuple:
        dirs, files = _lance_core._store_list(self.root, relative, False, self.storage_options)
        names = [f.rstrip("/").rsplit("/", 1)[-1] for f in files]
        return dirs, names

    def _listed_root_table(self, name: str) -> str:
        """The location of root table `name` found in its directory."""
        dirs, files = self._listing(f"{name}.lance")
        if not dirs and not files:
            raise error(ns_errors.TableNotFoundError, f"table id '{name}'")
        if DEREGISTERED in files:
            raise error(ns_errors.InvalidTableStateError, f"Table is deregistered: table id '{name}'")
        return f"{self.root}/{name}.lance"

    def _listed_root_tables(self) -> List[str]:
        dirs, _ = _lance_core._store_list(self.root, "", False, self.storage_options)
        names = [d.rstrip("/").rsplit("/", 1)[-1] for d in dirs]
        return [n[: -len(".lance")] for n in names if n.endswith(".lance") and len(n) > len(".lance")]

    def _locate(self, parts: List[str]) -> str:
        """The URI of table `parts` (described, not opened)."""
        if self._root_by_listing(parts):
            return self._listed_root_table(parts[0])
        row = self.manifest.get(object_id(parts))
        if row is None or row["object_type"] != TABLE:
            if len(parts) == 1 and self.dir_listing and self.migration:
                return self._listed_root_table(parts[0])
            raise error(ns_errors.TableNotFoundError, f"table id '{object_id(parts)}'")
        return full_uri(self.root, row["location"])

    def _only_declared(self, relative: str) -> bool:
        return self._only_declared_uri(self._uri(relative))

    def _only_declared_uri(self, uri: str) -> bool:
        """A declared table's directory: the reserved marker and no versions yet."""
        try:
            _, files = _lance_core._store_list(uri, "_versions", False, self.storage_options)
        except LanceError:
            files = []
        return not files

    def _open(self, location: str, version: Any = None, not_found: Any = ns_errors.TableNotFoundError) -> Any:
        try:
            return dataset(location, version=None if version is None else int(version),
                           storage_options=self.storage_options)
        except (DatasetNotFoundError, ValueError) as e:
            what = f"version {version} for table at '{location}'" if version is not None else f"table at '{location}'"
            raise error(not_found, f"Failed to open {what}: {e}") from e

    def _write(self, reader: pa.RecordBatchReader, uri: str, mode: str) -> Any:
        return write_dataset(reader, uri, mode=mode, storage_options=self.storage_options)

    def _version_files(self, location: str) -> List[TableVersion]:
        listed = _lance_core._store_list_meta(location, "_versions", self.storage_options)
        out = []
        for name, path, size, modified_ms, e_tag in listed:
            match = re.fullmatch(r"(\d+)\.manifest", name)
            if match is None:
                continue
            number = int(match.group(1))
            version = _U64_MAX - number if number > _U64_MAX // 2 else number
            out.append(TableVersion(version=version, manifest_path=path, manifest_size=size, e_tag=e_tag,
                                    timestamp_millis=modified_ms))
        return out


def _ipc_stream(data: bytes, operation: str) -> pa.RecordBatchReader:
    try:
        return pa.ipc.open_stream(data)
    except (pa.ArrowInvalid, OSError) as e:
        raise error(ns_errors.InvalidInputError, f"Invalid Arrow IPC stream for {operation}: {e}") from e
