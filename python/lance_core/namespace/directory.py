"""A namespace kept in a directory (local or on an object store), as pylance's
`DirectoryNamespace`: nested namespaces and tables recorded in the `__manifest` table at
the root, table data in directories below it.

The catalog's rules (its rows, where a table's directory is, the layout pylance keeps)
are the core's (`lance_core::namespace`, through `_lance_core._DirectoryNamespace`); this
class reads the protocol's requests, makes its responses, counts calls, and serves the
data operations (rows, versions, indices) through the dataset API at the location the
core finds.
"""

from __future__ import annotations

import io
import json
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
from ._common import OpsMetrics, error, is_true, object_id

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
        self._dir = _lance_core._DirectoryNamespace(props)
        self.root = self._dir.root
        self.storage_options = self._dir.storage_options
        self.metrics = OpsMetrics(is_true(props.get("ops_metrics_enabled"), False))
        self.context_provider = context_provider

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
        self._dir.create_namespace(self._namespace_id(req), req.get("properties"))
        return CreateNamespaceResponse(properties=req.get("properties"))

    def describe_namespace(self, request: Any) -> DescribeNamespaceResponse:
        self.metrics.count("describe_namespace")
        parts = self._namespace_id(_common.as_dict(request))
        return DescribeNamespaceResponse(properties=self._dir.describe_namespace(parts))

    def namespace_exists(self, request: Any) -> None:
        self.metrics.count("namespace_exists")
        self._dir.namespace_exists(self._namespace_id(_common.as_dict(request)))

    def drop_namespace(self, request: Any) -> DropNamespaceResponse:
        self.metrics.count("drop_namespace")
        self._dir.drop_namespace(self._namespace_id(_common.as_dict(request)))
        return DropNamespaceResponse()

    def list_namespaces(self, request: Any) -> ListNamespacesResponse:
        self.metrics.count("list_namespaces")
        req = _common.as_dict(request)
        page, token = self._dir.list_namespaces(self._namespace_id(req), req.get("page_token"), req.get("limit"))
        return ListNamespacesResponse(namespaces=page, page_token=token)

    # -- tables -------------------------------------------------------------------------

    def list_tables(self, request: Any) -> ListTablesResponse:
        self.metrics.count("list_tables")
        req = _common.as_dict(request)
        page, token = self._dir.list_tables(self._namespace_id(req), req.get("page_token"), req.get("limit"))
        return ListTablesResponse(tables=page, page_token=token)

    def create_table(self, request: Any, request_data: Optional[bytes] = None) -> CreateTableResponse:
        self.metrics.count("create_table")
        req = _common.as_dict(request)
        parts = self._table_id(req)
        if not request_data:
            raise error(ns_errors.InvalidInputError, "Request data (Arrow IPC stream) is required for create_table")
        location, version = self._dir.create_table(parts, _ipc_stream(request_data, "create_table"))
        return CreateTableResponse(location=location, version=version, storage_options=self._dir.vended_storage_options)

    def declare_table(self, request: Any) -> DeclareTableResponse:
        self.metrics.count("declare_table")
        req = _common.as_dict(request)
        location = self._dir.declare_table(self._table_id(req), req.get("location"))
        return DeclareTableResponse(location=location, storage_options=self._dir.vended_storage_options,
                                    managed_versioning=self._dir.managed_versioning)

    def describe_table(self, request: Any) -> DescribeTableResponse:
        self.metrics.count("describe_table")
        req = _common.as_dict(request)
        parts = self._table_id(req)
        location, only_declared = self._dir.describe_table(parts, bool(req.get("check_declared")))
        out: Dict[str, Any] = dict(table=parts[-1], namespace=parts[:-1], location=location, table_uri=location,
                                   storage_options=self._dir.vended_storage_options,
                                   managed_versioning=self._dir.managed_versioning)
        if req.get("load_detailed_metadata"):
            try:
                ds = self._open(location, req.get("version"))
            except (LanceError, OSError):
                pass
            else:
                out["version"] = ds.version
        if only_declared is not None:
            out["is_only_declared"] = only_declared
        return DescribeTableResponse(**out)

    def table_exists(self, request: Any) -> None:
        self.metrics.count("table_exists")
        self._dir.table_exists(self._table_id(_common.as_dict(request)))

    def drop_table(self, request: Any) -> DropTableResponse:
        self.metrics.count("drop_table")
        req = _common.as_dict(request)
        location = self._dir.drop_table(self._table_id(req))
        return DropTableResponse(id=req.get("id"), location=location)

    def register_table(self, request: Any) -> RegisterTableResponse:
        self.metrics.count("register_table")
        req = _common.as_dict(request)
        location = self._dir.register_table(self._table_id(req), req.get("location") or "")
        return RegisterTableResponse(location=location)

    def deregister_table(self, request: Any) -> DeregisterTableResponse:
        self.metrics.count("deregister_table")
        req = _common.as_dict(request)
        location = self._dir.deregister_table(self._table_id(req))
        return DeregisterTableResponse(id=req.get("id"), location=location)

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
        names, token = _lance_core._namespace_page(list(described), req.get("page_token"), req.get("limit"))
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

    @staticmethod
    def _namespace_id(req: Dict[str, Any]) -> List[str]:
        parts = req.get("id")
        if parts is None:
            raise error(ns_errors.InvalidInputError, "Namespace ID is required")
        return list(parts)

    def _table_id(self, req: Dict[str, Any]) -> List[str]:
        """The request's table id, checked by the catalog's rules (before anything else
        of the request is)."""
        parts = req.get("id")
        if parts is None:
            raise error(ns_errors.InvalidInputError, "Table ID is required")
        parts = list(parts)
        self._dir.check_table_id(parts)
        return parts

    def _locate(self, parts: List[str]) -> str:
        """The URI of table `parts` (described, not opened)."""
        return self._dir.table_location(parts)

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
