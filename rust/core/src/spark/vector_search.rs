//! `VECTOR_SEARCH(...)`, the table function of lance-spark's SQL: its arguments, by name or
//! (the first three) by position, checked and turned into a nearest-neighbour query of the
//! core. The JVM side evaluates the literals, resolves `table` in its catalog and sends the
//! named arguments with every read; a reader rebuilds the query from them (`search`).
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::query::Query;
use crate::scan::ROW_ID;
use crate::vector::{Metric, Nearest};

/// The arguments that may be given without a name, in their order.
const POSITIONAL: [&str; 3] = ["table", "query_vector", "num_results"];

/// Every argument lance-spark documents; `limit` and `k` are other names of `num_results`.
const NAMES: [&str; 20] = [
    "table",
    "query_vector",
    "vector_column",
    "num_results",
    "limit",
    "k",
    "distance_type",
    "columns",
    "filter",
    "offset",
    "version",
    "nprobes",
    "ef",
    "refine_factor",
    "lower_bound",
    "upper_bound",
    "bypass_vector_index",
    "fast_search",
    "prefilter",
    "with_row_id",
];

/// The results per query vector when no count is given.
const DEFAULT_RESULTS: u64 = 10;

/// A search as its arguments describe it.
#[derive(Debug)]
pub struct VectorSearch {
    /// The table argument: a catalog name (`cat.db.t`) or a table's path.
    pub table: String,
    /// The version to search (the catalog's current one when None).
    pub version: Option<u64>,
    pub query: Query,
}

fn invalid(message: impl std::fmt::Display) -> Error {
    Error::invalid(format!("VECTOR_SEARCH: {message}"))
}

/// The arguments by name: positional ones named by their place, names checked (case does
/// not matter), none given twice, `table` and `query_vector` present; then checked whole
/// (`VectorSearch::new`), so that a bad argument fails where the statement is analyzed.
pub fn named(given: &[(Option<String>, Value)]) -> Result<Map<String, Value>> {
    let mut named = Map::new();
    let mut seen_name = false;
    for (i, (name, value)) in given.iter().enumerate() {
        let name = match name {
            Some(n) => {
                seen_name = true;
                let n = n.to_ascii_lowercase();
                if !NAMES.contains(&n.as_str()) {
                    return Err(invalid(format!(
                        "unknown argument '{n}' (expected one of {})",
                        NAMES.join(", ")
                    )));
                }
                n
            }
            None if seen_name => {
                return Err(invalid(format!(
                    "argument {} has no name but follows named ones",
                    i + 1
                )))
            }
            None => match POSITIONAL.get(i) {
                Some(n) => n.to_string(),
                None => {
                    return Err(invalid(format!(
                        "only {} arguments may go without a name ({}); name argument {}",
                        POSITIONAL.len(),
                        POSITIONAL.join(", "),
                        i + 1
                    )))
                }
            },
        };
        let counts = ["num_results", "limit", "k"];
        let clash = match counts.contains(&name.as_str()) {
            true => counts.iter().find(|c| named.contains_key(**c)).copied(),
            false => named.contains_key(&name).then_some(name.as_str()),
        };
        if let Some(c) = clash {
            return Err(invalid(format!("'{name}' given twice (also as '{c}')")));
        }
        named.insert(name, value.clone());
    }
    VectorSearch::new(&named)?;
    Ok(named)
}

impl VectorSearch {
    /// The search the named arguments (as `named` returns them) describe.
    pub fn new(args: &Map<String, Value>) -> Result<Self> {
        let table = match args.get("table") {
            Some(Value::String(t)) if !t.trim().is_empty() => t.trim().to_string(),
            None | Some(Value::Null) => return Err(invalid("the table argument is missing")),
            Some(other) => {
                return Err(invalid(format!(
                    "table must be a table's name as a string, not {other}"
                )))
            }
        };
        let (query, num_queries, batch) = vectors(args.get("query_vector"))?;
        let count = ["num_results", "limit", "k"]
            .iter()
            .find_map(|n| args.get(*n).filter(|v| !v.is_null()).map(|v| (*n, v)));
        let results = match count {
            Some((name, v)) => positive(name, v)?,
            None => DEFAULT_RESULTS,
        };
        let offset = whole(args, "offset")?.unwrap_or(0);
        if batch && offset > 0 {
            return Err(invalid(
                "offset is not supported with several query vectors",
            ));
        }
        let column = text(args, "vector_column")?.unwrap_or_else(|| "vector".to_string());
        let mut nearest = Nearest::new(column, query, (results + offset) as usize);
        nearest.num_queries = num_queries;
        nearest.batch = batch;
        nearest.metric = text(args, "distance_type")?
            .map(|m| Metric::parse(&m).map_err(|e| invalid(format!("distance_type: {e}"))))
            .transpose()?;
        nearest.nprobes = whole(args, "nprobes")?.map(|n| n as usize);
        nearest.ef = whole(args, "ef")?.map(|n| n as usize);
        nearest.refine_factor = whole(args, "refine_factor")?.map(|n| n as usize);
        nearest.distance_range = (number(args, "lower_bound")?, number(args, "upper_bound")?);
        nearest.use_index = !flag(args, "bypass_vector_index")?;
        nearest.fast_search = flag(args, "fast_search")?;
        nearest.prefilter = flag(args, "prefilter")?;
        let mut query = Query {
            nearest: Some(nearest),
            ..Default::default()
        };
        let scan = &mut query.scan;
        scan.with_row_id = flag(args, "with_row_id")?;
        scan.columns = columns(args.get("columns"))?;
        if let Some(cols) = &mut scan.columns {
            if let Some(i) = cols.iter().position(|c| c == ROW_ID) {
                cols.remove(i);
                scan.with_row_id = true;
            }
        }
        scan.filter = text(args, "filter")?
            .filter(|f| !f.trim().is_empty())
            .map(|f| crate::expr::parse(&f).map_err(|e| invalid(format!("filter: {e}"))))
            .transpose()?;
        scan.offset = (offset > 0).then_some(offset);
        Ok(VectorSearch {
            table,
            version: whole(args, "version")?,
            query,
        })
    }
}

/// The query vector (one list of numbers) or vectors (a list of lists, all one length):
/// their values one after another, how many, and whether several were given.
fn vectors(value: Option<&Value>) -> Result<(Vec<f64>, usize, bool)> {
    let items = match value {
        Some(Value::Array(items)) if !items.is_empty() => items,
        None | Some(Value::Null) => return Err(invalid("the query_vector argument is missing")),
        Some(other) => {
            return Err(invalid(format!(
                "query_vector must be array(numbers) or array(array(numbers)), not {other}"
            )))
        }
    };
    let numbers = |list: &[Value]| -> Result<Vec<f64>> {
        list.iter()
            .map(|v| {
                v.as_f64().ok_or_else(|| {
                    invalid(format!("query_vector holds {v}, which is not a number"))
                })
            })
            .collect()
    };
    if !items[0].is_array() {
        return Ok((numbers(items)?, 1, false));
    }
    let mut values = Vec::new();
    let mut dim = None;
    for item in items {
        let Value::Array(list) = item else {
            return Err(invalid(format!(
                "query_vector mixes vectors and numbers ({item})"
            )));
        };
        if *dim.get_or_insert(list.len()) != list.len() || list.is_empty() {
            return Err(invalid(
                "the query vectors must all have one length, above 0",
            ));
        }
        values.extend(numbers(list)?);
    }
    Ok((values, items.len(), true))
}

/// `columns`: None for all (no argument, or `array('*')`).
fn columns(value: Option<&Value>) -> Result<Option<Vec<String>>> {
    let items = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(invalid(format!(
                "columns must be array('name', ...), not {other}"
            )))
        }
    };
    let names: Vec<String> = items
        .iter()
        .map(|v| {
            v.as_str()
                .map(String::from)
                .ok_or_else(|| invalid(format!("columns holds {v}, which is not a name")))
        })
        .collect::<Result<_>>()?;
    Ok(match names.as_slice() {
        [star] if star == "*" => None,
        _ => Some(names),
    })
}

fn text(args: &Map<String, Value>, name: &str) -> Result<Option<String>> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(invalid(format!("{name} must be a string, not {other}"))),
    }
}

fn whole(args: &Map<String, Value>, name: &str) -> Result<Option<u64>> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| invalid(format!("{name} must be a whole number ≥ 0, not {v}"))),
    }
}

fn positive(name: &str, v: &Value) -> Result<u64> {
    v.as_u64()
        .filter(|n| *n > 0)
        .ok_or_else(|| invalid(format!("{name} must be a whole number above 0, not {v}")))
}

fn number(args: &Map<String, Value>, name: &str) -> Result<Option<f32>> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_f64()
            .map(|f| Some(f as f32))
            .ok_or_else(|| invalid(format!("{name} must be a number, not {v}"))),
    }
}

fn flag(args: &Map<String, Value>, name: &str) -> Result<bool> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(invalid(format!(
            "{name} must be true or false, not {other}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn given(args: &[(Option<&str>, Value)]) -> Vec<(Option<String>, Value)> {
        args.iter()
            .map(|(n, v)| (n.map(String::from), v.clone()))
            .collect()
    }

    #[test]
    fn positional_and_named_arguments() {
        let named = named(&given(&[
            (None, json!("lance.db.items")),
            (None, json!([0.5, 1.0])),
            (None, json!(5)),
            (Some("VECTOR_COLUMN"), json!("emb")),
            (Some("offset"), json!(2)),
            (Some("columns"), json!(["id", "_rowid"])),
            (Some("filter"), json!("id > 3")),
            (Some("distance_type"), json!("cosine")),
        ]))
        .unwrap();
        let search = VectorSearch::new(&named).unwrap();
        assert_eq!(search.table, "lance.db.items");
        let nearest = search.query.nearest.as_ref().unwrap();
        assert_eq!(nearest.column, "emb");
        assert_eq!(nearest.k, 7, "offset rows are found, then skipped");
        assert_eq!(search.query.scan.offset, Some(2));
        assert_eq!(nearest.metric, Some(Metric::Cosine));
        assert_eq!(search.query.scan.columns, Some(vec!["id".to_string()]));
        assert!(search.query.scan.with_row_id);
        assert!(search.query.scan.filter.is_some());
    }

    #[test]
    fn batch_queries_and_defaults() {
        let named = named(&given(&[
            (Some("table"), json!("t")),
            (Some("query_vector"), json!([[1, 2], [3, 4], [5, 6]])),
            (Some("columns"), json!(["*"])),
        ]))
        .unwrap();
        let search = VectorSearch::new(&named).unwrap();
        let nearest = search.query.nearest.unwrap();
        assert!(nearest.batch);
        assert_eq!(nearest.num_queries, 3);
        assert_eq!(nearest.query, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(nearest.k, 10);
        assert_eq!(nearest.column, "vector");
        assert_eq!(search.query.scan.columns, None);
    }

    #[test]
    fn bad_arguments_are_named() {
        let err = |args: &[(Option<&str>, Value)]| named(&given(args)).unwrap_err().to_string();
        let base = (Some("table"), json!("t"));
        let q = (Some("query_vector"), json!([1.0]));
        assert!(err(&[base.clone(), q.clone(), (Some("nprobe"), json!(2))])
            .contains("unknown argument 'nprobe'"));
        assert!(err(&[
            base.clone(),
            q.clone(),
            (Some("k"), json!(2)),
            (Some("limit"), json!(3))
        ])
        .contains("given twice"));
        assert!(err(std::slice::from_ref(&base)).contains("query_vector argument is missing"));
        assert!(err(&[
            base.clone(),
            (Some("query_vector"), json!([[1.0], [1.0, 2.0]]))
        ])
        .contains("one length"));
        assert!(err(&[base.clone(), q.clone(), (Some("k"), json!(0))]).contains("above 0"));
        assert!(err(&[
            base.clone(),
            q.clone(),
            (Some("distance_type"), json!("manhattan"))
        ])
        .contains("distance_type"));
        assert!(
            err(&[base.clone(), q.clone(), (Some("prefilter"), json!("yes"))])
                .contains("true or false")
        );
        assert!(err(&[
            base.clone(),
            (Some("query_vector"), json!([[1.0], [2.0]])),
            (Some("offset"), json!(1))
        ])
        .contains("offset is not supported"));
        assert!(err(&[(Some("table"), json!("t")), (None, json!([1.0]))])
            .contains("follows named ones"));
        assert!(err(&[
            (None, json!("t")),
            (None, json!([1.0])),
            (None, json!(3)),
            (None, json!("v"))
        ])
        .contains("name argument 4"));
        assert!(err(&[base, q, (Some("filter"), json!("id >"))]).contains("filter"));
    }
}
