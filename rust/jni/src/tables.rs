//! Tables as the JVM reader asks for them: the request (JSON from `LanceScanBuilder`),
//! the datasets opened for it, and what planning needs (`describe`).
//!
//! A request names the table (`uri`, `version` as a number or tag, `storage_options`) and
//! the read (`columns`, `keep_structs`, `with_row_id`, `blob_handling`, `timestamp_nanos`, `predicate`,
//! `filters` to translate, and for a partition `fragment_id` (or `fragment_ids`), `start`, `end`, `limit`,
//! `batch_size`); or, instead of the read, `search`: the named arguments of a
//! `VECTOR_SEARCH` (`lance_core::spark::vector_search`), read whole by one partition.
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use lance_core::blob::BlobRead;
use lance_core::query::order::ColumnOrdering;
use lance_core::scan::{ROW_ADDRESS, ROW_ID};
use lance_core::spark::types::Nanos;
use lance_core::spark::vector_search::VectorSearch;
use lance_core::{Dataset, Query, ScanOptions, VersionRef};
use serde_json::{json, Map, Value};

pub type Outcome<T> = std::result::Result<T, String>;

pub struct Request(Map<String, Value>);

impl Request {
    pub fn parse(bytes: &[u8]) -> Outcome<Self> {
        match serde_json::from_slice(bytes) {
            Ok(Value::Object(map)) => Ok(Request(map)),
            Ok(_) | Err(_) => {
                Err("lance_core: the JVM reader sent a request that is not a JSON object".into())
            }
        }
    }

    pub fn uri(&self) -> Outcome<&str> {
        self.str("uri")
            .ok_or_else(|| "the lance data source needs a path: .load(uri)".to_string())
    }

    pub fn str(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(Value::as_str)
    }

    pub fn u64(&self, key: &str) -> Option<u64> {
        self.0.get(key).and_then(Value::as_u64)
    }

    pub fn flag(&self, key: &str) -> bool {
        self.0.get(key).and_then(Value::as_bool).unwrap_or(false)
    }

    /// A JSON list of strings (other values are ignored; none: empty).
    pub fn strings(&self, key: &str) -> Vec<String> {
        match self.get(key) {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect(),
            _ => vec![],
        }
    }

    /// A JSON list of whole numbers (other values are ignored; none: empty).
    pub fn u64s(&self, key: &str) -> Vec<u64> {
        match self.get(key) {
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_u64).collect(),
            _ => vec![],
        }
    }

    /// A JSON object of strings as a map (other values are ignored; none: empty).
    pub fn string_map(&self, key: &str) -> HashMap<String, String> {
        let Some(Value::Object(map)) = self.get(key) else {
            return HashMap::new();
        };
        map.iter()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
            .collect()
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }

    pub fn version(&self) -> Option<VersionRef> {
        match self.0.get("version")? {
            Value::Number(n) => n.as_u64().map(VersionRef::Number),
            Value::String(s) if s.trim().is_empty() => None,
            Value::String(s) => Some(match s.trim().parse::<u64>() {
                Ok(n) => VersionRef::Number(n),
                Err(_) => VersionRef::Tag(s.clone()),
            }),
            _ => None,
        }
    }

    pub fn storage_options(&self) -> HashMap<String, String> {
        let Some(Value::Object(map)) = self.0.get("storage_options") else {
            return HashMap::new();
        };
        map.iter()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
            .collect()
    }

    pub fn nanos(&self) -> Outcome<Nanos> {
        match self
            .str("timestamp_nanos")
            .map(|s| s.trim().to_lowercase())
            .as_deref()
        {
            None | Some("truncate") => Ok(Nanos::Truncate),
            Some("error") => Ok(Nanos::Error),
            Some(other) => Err(format!(
                "option timestamp_nanos is 'truncate' or 'error', not '{other}'"
            )),
        }
    }

    /// The columns to read (all of them when the request names none), and whether the
    /// row id and the row address are among them (Spark's metadata columns).
    pub fn columns(&self) -> (Option<Vec<String>>, bool, bool) {
        let Some(Value::Array(names)) = self.0.get("columns") else {
            return (None, self.flag("with_row_id"), false);
        };
        let names: Vec<String> = names
            .iter()
            .filter_map(|n| n.as_str().map(String::from))
            .collect();
        let with_row_id = self.flag("with_row_id") || names.iter().any(|n| n == ROW_ID);
        let with_row_address = names.iter().any(|n| n == ROW_ADDRESS);
        (
            Some(names.into_iter().filter(|n| !is_row_locator(n)).collect()),
            with_row_id,
            with_row_address,
        )
    }

    /// A top-N's sort keys (`order_by`: `{column, ascending, nulls_first}` each), none
    /// when the request has no order.
    pub fn order_by(&self) -> Outcome<Vec<ColumnOrdering>> {
        let Some(keys) = self.get("order_by") else {
            return Ok(vec![]);
        };
        let keys = keys
            .as_array()
            .ok_or_else(|| format!("order_by is a list of sort keys, not {keys}"))?;
        keys.iter()
            .map(|k| {
                let column = k.get("column").and_then(Value::as_str);
                let flag = |name: &str| k.get(name).and_then(Value::as_bool);
                match (column, flag("ascending"), flag("nulls_first")) {
                    (Some(column), Some(ascending), Some(nulls_first)) => Ok(ColumnOrdering {
                        column: column.to_string(),
                        ascending,
                        nulls_first,
                    }),
                    _ => Err(format!(
                        "a sort key is {{column, ascending, nulls_first}}, not {k}"
                    )),
                }
            })
            .collect()
    }

    /// The query for this request's columns, blobs and sort keys (no filter, rows or limit
    /// yet).
    pub fn query(&self) -> Outcome<Query> {
        if let Some(Value::Object(arguments)) = self.get("search") {
            return VectorSearch::new(arguments)
                .map(|s| s.query)
                .map_err(|e| e.to_string());
        }
        let (columns, with_row_id, with_row_address) = self.columns();
        let blobs = match self.str("blob_handling") {
            None | Some("blobs_descriptions") | Some("all_descriptions") => BlobRead::Descriptors,
            Some("all_binary") => BlobRead::Bytes,
            Some(other) => {
                return Err(format!(
                    "option blob_handling is 'blobs_descriptions' or 'all_binary', not '{other}'"
                ))
            }
        };
        Ok(Query {
            scan: ScanOptions {
                columns,
                // Dotted columns are Spark's pruned structs: kept inside their struct.
                keep_structs: self.flag("keep_structs"),
                with_row_id,
                with_row_address,
                ..Default::default()
            },
            blobs,
            order_by: self.order_by()?,
            ..Default::default()
        })
    }

    /// The dataset this request reads: a version given by number is opened once per
    /// process (it never changes); the latest, or a tag, is looked up each time.
    pub fn open(&self) -> Outcome<Arc<Dataset>> {
        self.open_version(self.version())
    }

    /// The table at `version` (opened once per process, as `open`).
    pub fn open_at(&self, version: u64) -> Outcome<Arc<Dataset>> {
        self.open_version(Some(VersionRef::Number(version)))
    }

    fn open_version(&self, version: Option<VersionRef>) -> Outcome<Arc<Dataset>> {
        let uri = self.uri()?.to_string();
        let options = self.storage_options();
        let key = match version {
            Some(VersionRef::Number(n)) => {
                let mut opts: Vec<_> = options.iter().map(|(k, v)| format!("{k}={v}")).collect();
                opts.sort();
                Some(format!("{uri}\u{0}{n}\u{0}{}", opts.join("\u{0}")))
            }
            _ => None,
        };
        if let Some(k) = &key {
            if let Some(ds) = opened().lock().unwrap_or_else(|e| e.into_inner()).get(k) {
                return Ok(ds.clone());
            }
        }
        let ds = lance_core::threads::io_runtime()
            .block_on(Dataset::open(&uri, version, options))
            .map_err(|e| e.to_string())?;
        let ds = Arc::new(ds);
        if let Some(k) = key {
            let mut cache = opened().lock().unwrap_or_else(|e| e.into_inner());
            if cache.len() >= 64 {
                cache.clear();
            }
            cache.insert(k, ds.clone());
        }
        Ok(ds)
    }
}

/// Whether a column is `_rowid` or `_rowaddr` (Spark's long, read as the scan adds it).
pub fn is_row_locator(name: &str) -> bool {
    name == ROW_ID || name == ROW_ADDRESS
}

/// Datasets opened at a fixed version, by (uri, version, storage options): Spark's tasks
/// for a query all read the version it was planned on.
fn opened() -> &'static Mutex<HashMap<String, Arc<Dataset>>> {
    static OPENED: OnceLock<Mutex<HashMap<String, Arc<Dataset>>>> = OnceLock::new();
    OPENED.get_or_init(Default::default)
}

/// What the driver plans a query with: the version read, the Spark schema of the
/// requested columns (as a scan returns them: blob columns as descriptors or bytes), the
/// fragments with their rows and bytes (and those the request's `predicate` surely
/// misses), the predicate for each of `filters` (null where Spark must filter itself),
/// and the `extremes` asked for that indices answer.
pub fn describe(request: &Request) -> Outcome<Value> {
    let ds = request.open()?;
    let mut query = request.query()?;
    query.scan.limit = Some(0);
    let schema = {
        let _enter = lance_core::threads::io_runtime().enter();
        lance_core::query(ds.clone(), query)
            .map_err(|e| e.to_string())?
            .schema
    };
    let mut fields: Vec<Value> = Vec::new();
    for f in schema.fields() {
        let t = if is_row_locator(f.name()) {
            json!("long")
        } else {
            lance_core::spark::types::spark_type(f, f.name())
                .map_err(|e| format!("{}: {e}", ds.uri()))?
        };
        fields.push(json!({"name": f.name(), "type": t, "nullable": f.is_nullable() || is_row_locator(f.name()), "metadata": {}}));
    }
    let fragments: Vec<Value> = ds
        .fragments()
        .iter()
        .map(|f| {
            let deleted = f.deletion_file.as_ref().map(|d| d.num_deleted_rows).unwrap_or(0);
            let bytes: u64 = f.files.iter().map(|d| d.file_size_bytes).sum();
            json!({"id": f.id, "physical_rows": f.physical_rows, "live_rows": f.physical_rows.saturating_sub(deleted),
                   "bytes": bytes})
        })
        .collect();
    let predicates: Vec<Value> = match request.get("filters") {
        Some(Value::Array(filters)) => filters
            .iter()
            .map(|f| {
                lance_core::spark::filters::to_predicate(f, ds.arrow_schema.fields())
                    .map_or(Value::Null, Value::String)
            })
            .collect(),
        _ => Vec::new(),
    };
    // With the query's predicate: the fragments its indices prove hold no match.
    let without_matches = match request.str("predicate").filter(|p| !p.trim().is_empty()) {
        Some(p) => {
            let filter = lance_core::expr::parse(p).map_err(|e| e.to_string())?;
            lance_core::threads::io_runtime()
                .block_on(lance_core::index::search::fragments_without_matches(
                    &ds, &filter,
                ))
                .map_err(|e| e.to_string())?
        }
        None => Vec::new(),
    };
    let extremes = match request.get("extremes") {
        Some(Value::Array(asked)) => extremes(request, &ds, asked)?,
        _ => Vec::new(),
    };
    Ok(json!({
        "version": ds.version(),
        "extremes": extremes,
        "fragments_without_matches": without_matches,
        "schema": {"type": "struct", "fields": fields},
        "fragments": fragments,
        "predicates": predicates,
    }))
}

/// The live rows for which the request's predicate holds.
pub fn count_rows(request: &Request) -> Outcome<u64> {
    let ds = request.open()?;
    let filter = match request.str("predicate").filter(|p| !p.trim().is_empty()) {
        Some(p) => Some(lance_core::expr::parse(p).map_err(|e| e.to_string())?),
        None => None,
    };
    lance_core::threads::io_runtime()
        .block_on(lance_core::query::count_rows(ds, filter, None))
        .map_err(|e| e.to_string())
}

/// For each `{"fn": "min" | "max", "column": name}` asked for, `{"value": v}` in Spark's
/// terms when the column's index answers it (see `lance_core::query::extremes`), else null.
fn extremes(request: &Request, ds: &Arc<Dataset>, asked: &[Value]) -> Outcome<Vec<Value>> {
    use lance_core::query::extremes::{extreme, Extreme};
    let nanos = request.nanos()?;
    let mut out = Vec::with_capacity(asked.len());
    for a in asked {
        let which = match a.get("fn").and_then(Value::as_str) {
            Some("min") => Extreme::Min,
            Some("max") => Extreme::Max,
            _ => {
                out.push(Value::Null);
                continue;
            }
        };
        let column = a.get("column").and_then(Value::as_str).unwrap_or_default();
        let found = lance_core::threads::io_runtime()
            .block_on(extreme(ds, column, which))
            .map_err(|e| e.to_string())?;
        let value = match (found, ds.arrow_schema.field_with_name(column)) {
            (Some(v), Ok(field)) => lance_core::spark::types::spark_value(&v, field, nanos)
                .map_err(|e| e.to_string())?,
            _ => None,
        };
        out.push(value.map_or(Value::Null, |v| json!({ "value": v })));
    }
    Ok(out)
}
