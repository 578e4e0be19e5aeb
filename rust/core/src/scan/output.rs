//! What a scan returns from the batches it reads: the rows its filter keeps, then either
//! some of the columns read (the filter may need more than the caller asked for) or the
//! values of the caller's expressions, with system columns asked for by flag last.
use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, RecordBatchOptions, StructArray};
use arrow_schema::{DataType, SchemaRef};

use crate::error::Result;
use crate::expr::Bound;

pub struct Output {
    /// The schema of the batches returned.
    pub schema: SchemaRef,
    pub filter: Option<Bound>,
    shape: Shape,
}

enum Shape {
    /// These columns of the batch read, in this order.
    Columns(Vec<usize>),
    /// These expressions over the batch read, then these of its columns (system
    /// columns asked for by flag).
    Expressions { exprs: Vec<Bound>, tail: Vec<usize> },
}

impl Output {
    pub fn columns(schema: SchemaRef, keep: Vec<usize>) -> Self {
        Output {
            schema,
            filter: None,
            shape: Shape::Columns(keep),
        }
    }

    pub fn expressions(schema: SchemaRef, exprs: Vec<Bound>, tail: Vec<usize>) -> Self {
        Output {
            schema,
            filter: None,
            shape: Shape::Expressions { exprs, tail },
        }
    }

    pub fn with_filter(mut self, filter: Option<Bound>) -> Self {
        self.filter = filter;
        self
    }

    /// Which rows of a batch read the scan keeps (None: all): the live rows (`live`, None
    /// when no row of the batch is deleted) the filter keeps. The filter is run on the live
    /// rows only where it could fail, so that a deleted row's value never fails a scan.
    pub fn mask(
        &self,
        batch: &RecordBatch,
        live: Option<BooleanArray>,
    ) -> Result<Option<BooleanArray>> {
        match (&self.filter, live) {
            (Some(f), Some(live)) => crate::expr::evaluate_filter_where(f, batch, &live).map(Some),
            (Some(f), None) => crate::expr::evaluate_filter(f, batch).map(Some),
            (None, live) => Ok(live),
        }
    }

    /// The batch to return for a (filtered) batch read.
    pub fn finish(&self, batch: RecordBatch) -> Result<RecordBatch> {
        let columns: Vec<ArrayRef> = match &self.shape {
            Shape::Columns(keep) => {
                let all = keep.len() == batch.num_columns()
                    && keep.iter().enumerate().all(|(i, &k)| i == k);
                if all && batch.schema() == self.schema {
                    return Ok(batch);
                }
                keep.iter()
                    .zip(self.schema.fields())
                    .map(|(&i, f)| prune_to(batch.column(i), f.data_type()))
                    .collect::<Result<Vec<_>>>()?
            }
            Shape::Expressions { exprs, tail } => {
                let mut out = exprs
                    .iter()
                    .map(|e| crate::expr::evaluate(e, &batch))
                    .collect::<Result<Vec<_>>>()?;
                out.extend(tail.iter().map(|&i| batch.column(i).clone()));
                out
            }
        };
        let opts = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
        Ok(RecordBatch::try_new_with_options(
            self.schema.clone(),
            columns,
            &opts,
        )?)
    }
}

/// `array` as `target`: a struct read with more fields than asked for (a filter needed
/// them) keeps only the target's fields, and its nulls.
fn prune_to(array: &ArrayRef, target: &DataType) -> Result<ArrayRef> {
    if array.data_type() == target {
        return Ok(array.clone());
    }
    match (array.as_any().downcast_ref::<StructArray>(), target) {
        (Some(s), DataType::Struct(fields)) => {
            let columns = fields
                .iter()
                .map(|f| {
                    let child = s.column_by_name(f.name()).ok_or_else(|| {
                        crate::error::corrupt(format!("a struct read has no field '{}'", f.name()))
                    })?;
                    prune_to(child, f.data_type())
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(std::sync::Arc::new(StructArray::try_new(
                fields.clone(),
                columns,
                s.nulls().cloned(),
            )?))
        }
        _ => Ok(array.clone()),
    }
}
