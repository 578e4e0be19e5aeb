//! Scans: stream the rows of a dataset's fragments (or some of them) as Arrow record
//! batches through the read pipeline, with a projection, a filter evaluated row by row,
//! an offset and limit, and the row id / row address columns; and takes of rows by
//! address. Indices, vector search, blob bytes and the choice between scanning and
//! taking are the query layer's (`crate::query`), above this one.
mod fragment;
pub(crate) use fragment::WholeFiles;
pub mod json;
mod legacy;
mod lists20;
#[cfg(test)]
mod model_tests;
mod output;
pub mod plan;
pub(crate) mod rebatch;
mod stream;
pub mod system;
pub mod take;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{Field, Schema, SchemaRef};
use futures::stream::BoxStream;

use crate::dataset::Dataset;
use crate::error::Result;

pub const ROW_ID: &str = "_rowid";
pub const ROW_ADDRESS: &str = "_rowaddr";

#[derive(Clone, Debug)]
pub struct ScanOptions {
    /// Columns to read, in this order (all when None): top-level names, or dotted paths
    /// into structs ("s.x"), each returned as a column of its own (see `keep_structs`).
    pub columns: Option<Vec<String>>,
    /// Dotted `columns` come back inside their top-level struct, which holds only the
    /// fields named: `s.x` and `s.y.z` as one column `s: struct<x, y: struct<z>>` (Spark's
    /// nested column pruning; parent nulls are kept).
    pub keep_structs: bool,
    /// Rows per batch before deleted rows are dropped.
    pub batch_size: usize,
    pub limit: Option<u64>,
    pub offset: Option<u64>,
    pub with_row_id: bool,
    pub with_row_address: bool,
    /// Only these fragments, in this order (all, in manifest order, when None).
    pub fragment_ids: Option<Vec<u64>>,
    /// Bytes of pages that may be read ahead of the consumer (pylance's `io_buffer_size`).
    /// Decoded data adds a few small units per column on top.
    pub memory_budget: usize,
    /// Only rows where this is true (applied after deletions, before offset and limit).
    pub filter: Option<crate::expr::Expr>,
    /// Return these expressions, named, instead of `columns` (pylance's `columns` given
    /// as a dict of SQL expressions).
    pub projection: Option<Vec<(String, crate::expr::Expr)>>,
    /// Only physical rows `start..end` of each fragment (deleted rows in the range are
    /// still dropped): lets several tasks share one large fragment.
    pub row_range: Option<(u64, u64)>,
    /// Return deleted rows too: every physical row, as new data files for a fragment must
    /// hold.
    pub include_deleted: bool,
    /// Batches of exactly `batch_size` rows (the last excepted), across fragment ends and
    /// after the filter (otherwise a batch holds what passed of one read, as in pylance).
    pub strict_batch_size: bool,
    /// Add the rows read before the filter to the process's `rows_scanned` counter (the
    /// scans users ask for; not the reads of index files).
    pub count_rows_scanned: bool,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            columns: None,
            keep_structs: false,
            batch_size: 8192,
            limit: None,
            offset: None,
            with_row_id: false,
            with_row_address: false,
            fragment_ids: None,
            memory_budget: 64 << 20,
            filter: None,
            projection: None,
            row_range: None,
            include_deleted: false,
            strict_batch_size: false,
            count_rows_scanned: false,
        }
    }
}

/// A running scan: its schema and its batches.
pub struct Scan {
    pub schema: SchemaRef,
    pub batches: BoxStream<'static, Result<RecordBatch>>,
}

/// What a read returns and how: the columns to read (those asked for, those a
/// projection's expressions use, those the filter needs), the schema of the batches read
/// (those columns, then `_rowid` / `_rowaddr`), and the filter and output shape bound to
/// it. Shared by scans and takes.
pub(crate) struct Prepared {
    pub plan: Arc<plan::ScanPlan>,
    pub read_schema: SchemaRef,
    pub output: Arc<output::Output>,
}

/// What to read, as the caller asked for it.
#[derive(Clone, Debug, Default)]
pub struct Projection {
    pub columns: Option<Vec<String>>,
    pub exprs: Option<Vec<(String, crate::expr::Expr)>>,
    pub with_row_id: bool,
    pub with_row_address: bool,
    /// See `ScanOptions::keep_structs`.
    pub keep_structs: bool,
}

impl ScanOptions {
    pub(crate) fn projection(&self) -> Projection {
        Projection {
            columns: self.columns.clone(),
            keep_structs: self.keep_structs,
            exprs: self.projection.clone(),
            with_row_id: self.with_row_id,
            with_row_address: self.with_row_address,
        }
    }
}

pub(crate) fn prepare(
    dataset: &Dataset,
    p: &Projection,
    filter: Option<&crate::expr::Expr>,
) -> Result<Prepared> {
    let named = |c: &str| system::SystemColumn::named(dataset, c);
    // System columns anything refers to; the others are the data columns to read.
    let mut system: Vec<system::SystemColumn> = Vec::new();
    let mut data_columns = |names: &mut dyn Iterator<Item = String>,
                            what: &str,
                            out: &mut Vec<String>|
     -> Result<()> {
        for c in names {
            match named(&c) {
                Some(s) if !system.contains(&s) => system.push(s),
                Some(_) => {}
                None if what.is_empty() => out.push(c),
                None => {
                    let name = resolve_column(dataset, &c, what)?;
                    if !out.contains(&name) {
                        out.push(name);
                    }
                }
            }
        }
        Ok(())
    };
    let mut read_columns = match (&p.exprs, &p.columns) {
        (Some(exprs), _) => {
            let mut cols = Vec::new();
            for (_, e) in exprs {
                data_columns(&mut e.columns().into_iter(), "expression", &mut cols)?;
            }
            Some(cols)
        }
        (None, Some(columns)) => {
            let mut cols = Vec::new();
            data_columns(&mut columns.iter().cloned(), "", &mut cols)?;
            Some(cols)
        }
        (None, None) => None,
    };
    if let Some(filter) = filter {
        // Reading every column reads the filter's too.
        let mut all = Vec::new();
        let cols = read_columns.as_mut().unwrap_or(&mut all);
        data_columns(&mut filter.columns().into_iter(), "filter", cols)?;
    }
    if p.with_row_id && !system.contains(&system::SystemColumn::RowId) {
        system.push(system::SystemColumn::RowId);
    }
    if p.with_row_address && !system.contains(&system::SystemColumn::RowAddress) {
        system.push(system::SystemColumn::RowAddress);
    }
    system.sort();
    let mut plan = plan::plan_scan(&dataset.schema, read_columns.as_deref(), p.keep_structs)?;
    plan.system = system.clone();
    let plan = Arc::new(plan);
    let data = plan.fields.len();
    let at = |c: system::SystemColumn| data + system.iter().position(|&s| s == c).unwrap();
    // The flags' columns, last, unless asked for by name already.
    let mut flagged: Vec<usize> = Vec::new();
    let metadata = plan.schema.metadata().clone();
    let read_schema = Arc::new(Schema::new_with_metadata(
        plan.schema
            .fields()
            .iter()
            .cloned()
            .chain(system.iter().map(|c| Arc::new(c.field())))
            .collect::<Vec<_>>(),
        metadata.clone(),
    ));
    let named_in = |c: system::SystemColumn| {
        p.exprs.is_none()
            && p.columns
                .as_ref()
                .is_some_and(|cols| cols.iter().any(|n| named(n) == Some(c)))
    };
    for (flag, c) in [
        (p.with_row_id, system::SystemColumn::RowId),
        (p.with_row_address, system::SystemColumn::RowAddress),
    ] {
        if flag && !named_in(c) {
            flagged.push(at(c));
        }
    }
    let filter = filter
        .map(|f| crate::expr::bind_filter(f, &read_schema))
        .transpose()?;
    let output = match &p.exprs {
        Some(exprs) => {
            let bound = exprs
                .iter()
                .map(|(name, e)| Ok((name.clone(), crate::expr::bind(e, &read_schema)?)))
                .collect::<Result<Vec<_>>>()?;
            let mut fields: Vec<Arc<Field>> = bound
                .iter()
                .map(|(name, b)| Arc::new(Field::new(name, b.data_type.clone(), b.nullable)))
                .collect();
            fields.extend(
                flagged
                    .iter()
                    .map(|&i| Arc::new(read_schema.field(i).clone())),
            );
            let schema = Arc::new(Schema::new_with_metadata(fields, metadata));
            output::Output::expressions(
                schema,
                bound.into_iter().map(|(_, b)| b).collect(),
                flagged,
            )
        }
        None => {
            let mut keep: Vec<usize> = match &p.columns {
                None => (0..data).collect(),
                Some(cols) if p.keep_structs => {
                    // A column per top-level field named (the plan's fields are in order
                    // of first mention, the filter's own after them).
                    let mut tops: Vec<&str> = Vec::new();
                    let mut keep = Vec::new();
                    for c in cols {
                        match named(c) {
                            Some(s) => keep.push(at(s)),
                            None => {
                                let top = plan::top_column(&dataset.schema, c)?;
                                if !tops.contains(&top) {
                                    tops.push(top);
                                    keep.push(tops.len() - 1);
                                }
                            }
                        }
                    }
                    keep
                }
                Some(cols) => {
                    let mut next_data = 0;
                    cols.iter()
                        .map(|c| match named(c) {
                            Some(s) => at(s),
                            None => {
                                next_data += 1;
                                next_data - 1
                            }
                        })
                        .collect()
                }
            };
            keep.extend(flagged);
            let mut fields: Vec<Arc<Field>> = keep
                .iter()
                .map(|&i| read_schema.field(i).clone().into())
                .collect();
            if let (true, Some(cols)) = (p.keep_structs && filter.is_some(), &p.columns) {
                // The filter may have needed more of a struct than was asked for: the
                // output holds what was asked for (`Output::finish` prunes to it).
                let asked: Vec<String> = cols
                    .iter()
                    .filter(|c| named(c).is_none())
                    .cloned()
                    .collect();
                let asked = plan::plan_scan(&dataset.schema, Some(&asked), true)?.schema;
                for f in fields.iter_mut() {
                    if let Ok(a) = asked.field_with_name(f.name()) {
                        *f = Arc::new(a.clone());
                    }
                }
            }
            let schema = Arc::new(Schema::new_with_metadata(fields, metadata));
            output::Output::columns(schema, keep)
        }
    };
    Ok(Prepared {
        plan,
        read_schema,
        output: Arc::new(output.with_filter(filter)),
    })
}

/// Start reading `dataset` through the pipeline. Must be called within a tokio runtime.
pub fn scan(dataset: Arc<Dataset>, mut options: ScanOptions) -> Result<Scan> {
    options.batch_size = options.batch_size.max(1);
    let p = prepare(&dataset, &options.projection(), options.filter.as_ref())?;
    let schema = p.output.schema.clone();
    let exact = options.strict_batch_size.then_some(options.batch_size);
    let batches = stream::start(dataset, p.plan, options, p.read_schema, p.output);
    let batches = match exact {
        Some(size) => rebatch::rebatch(batches, schema.clone(), size),
        None => batches,
    };
    Ok(Scan { schema, batches })
}

/// The schema's name for a column a filter refers to (exact, else ignoring case; a
/// system column's name as it is).
pub(crate) fn resolve_column(ds: &Dataset, name: &str, what: &str) -> Result<String> {
    if system::SystemColumn::named(ds, name).is_some() {
        return Ok(name.to_string());
    }
    let fields = &ds.schema.fields;
    fields
        .iter()
        .find(|f| f.name == name)
        .or_else(|| fields.iter().find(|f| f.name.eq_ignore_ascii_case(name)))
        .map(|f| f.name.clone())
        .ok_or_else(|| {
            crate::Error::invalid(format!("{what} refers to '{name}', which is not a column"))
        })
}
