//! Row-level changes a catalog's table makes from Spark SQL: `DELETE FROM ... WHERE`
//! with filters Spark hands over whole (`deleteWhere`), applied by the core's delete
//! (deletion files, no data file rewritten) at the latest version, re-run on a conflict as
//! pylance's delete is.
use lance_core::spark::filters::to_predicate;
use serde_json::{json, Value};

use crate::tables::{Outcome, Request};

/// How often a delete that loses to a concurrent commit of the same fragments is re-run
/// (pylance's default `conflict_retries`).
const CONFLICT_RETRIES: u32 = 10;

/// Whether every filter of the request (`filters`, Spark's JSON) has an exact predicate
/// on the table: only then may Spark hand the delete over.
pub fn can_delete(request: &Request) -> Outcome<bool> {
    let ds = request.open()?;
    Ok(predicate(request, &ds).is_some())
}

/// Delete the rows every filter holds for (all rows without filters); the new version and
/// how many rows went.
pub fn delete(request: &Request) -> Outcome<Value> {
    let ds = request.open()?;
    let Some(predicate) = predicate(request, &ds) else {
        return Err(format!(
            "{}: a DELETE condition lance_core cannot evaluate exactly was handed over",
            ds.uri()
        ));
    };
    let filter = lance_core::expr::parse(&predicate).map_err(|e| e.to_string())?;
    let (done, count) = lance_core::threads::io_runtime()
        .block_on(lance_core::write::delete_counted(
            &ds,
            &filter,
            CONFLICT_RETRIES,
        ))
        .map_err(|e| e.to_string())?;
    Ok(json!({"version": done.version(), "num_deleted_rows": count}))
}

/// The filters ANDed as one predicate on `ds` ("true" for none), None when one has no
/// exact predicate.
fn predicate(request: &Request, ds: &lance_core::Dataset) -> Option<String> {
    let filters = match request.get("filters") {
        Some(Value::Array(f)) => f.clone(),
        _ => vec![],
    };
    let mut parts = Vec::with_capacity(filters.len());
    for f in &filters {
        match to_predicate(f, ds.arrow_schema.fields()) {
            Some(p) => parts.push(format!("({p})")),
            None => return None,
        }
    }
    Some(match parts.is_empty() {
        true => "true".to_string(),
        false => parts.join(" AND "),
    })
}
