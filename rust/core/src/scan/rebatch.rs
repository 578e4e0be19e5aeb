//! Batches of the size asked for (pylance's `strict_batch_size`): a filter leaves the
//! batches it reads short, and a fragment's last batch is short; with the option every
//! batch but the last has exactly `batch_size` rows. Short batches are joined (a copy of
//! those rows), long ones sliced (no copy), and a batch of the right size passes as it is.
use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use futures::stream::BoxStream;
use futures::StreamExt;

use crate::error::Result;

struct State {
    input: BoxStream<'static, Result<RecordBatch>>,
    schema: SchemaRef,
    size: usize,
    /// Rows received and not handed on yet, in order.
    pending: Vec<RecordBatch>,
    rows: usize,
    done: bool,
}

impl State {
    /// The first `n` pending rows (all of them when fewer), as one batch.
    fn split_off(&mut self, n: usize) -> Result<RecordBatch> {
        let joined = match self.pending.len() {
            1 => self
                .pending
                .pop()
                .unwrap_or_else(|| RecordBatch::new_empty(self.schema.clone())),
            _ => {
                let all = arrow_select::concat::concat_batches(&self.schema, &self.pending)?;
                self.pending.clear();
                all
            }
        };
        let n = n.min(joined.num_rows());
        if n < joined.num_rows() {
            self.pending.push(joined.slice(n, joined.num_rows() - n));
        }
        self.rows -= n;
        Ok(joined.slice(0, n))
    }
}

/// `input` in batches of exactly `size` rows (the last may be shorter).
pub(crate) fn rebatch(
    input: BoxStream<'static, Result<RecordBatch>>,
    schema: SchemaRef,
    size: usize,
) -> BoxStream<'static, Result<RecordBatch>> {
    let state = State {
        input,
        schema,
        size: size.max(1),
        pending: Vec::new(),
        rows: 0,
        done: false,
    };
    futures::stream::unfold(state, |mut s| async move {
        loop {
            if s.rows >= s.size || (s.done && s.rows > 0) {
                let out = s.split_off(s.size);
                return Some((out, s));
            }
            if s.done {
                return None;
            }
            match s.input.next().await {
                Some(Ok(b)) if b.num_rows() == s.size && s.pending.is_empty() => {
                    return Some((Ok(b), s))
                }
                Some(Ok(b)) if b.num_rows() > 0 => {
                    s.rows += b.num_rows();
                    s.pending.push(b);
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => {
                    s.done = true;
                    s.pending.clear();
                    s.rows = 0;
                    return Some((Err(e), s));
                }
                None => s.done = true,
            }
        }
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Array, Int64Array};
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::Arc;

    fn batch(schema: &SchemaRef, values: std::ops::Range<i64>) -> RecordBatch {
        RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(Int64Array::from_iter_values(values))],
        )
        .unwrap()
    }

    #[tokio::test]
    async fn joins_short_batches_and_slices_long_ones() {
        let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, false)]));
        let input = vec![
            batch(&schema, 0..3),
            batch(&schema, 3..3),
            batch(&schema, 3..15),
            batch(&schema, 15..20),
            batch(&schema, 20..22),
        ];
        let out: Vec<RecordBatch> = rebatch(
            futures::stream::iter(input.into_iter().map(Ok)).boxed(),
            schema.clone(),
            5,
        )
        .map(|b| b.unwrap())
        .collect()
        .await;
        let sizes: Vec<usize> = out.iter().map(|b| b.num_rows()).collect();
        assert_eq!(sizes, vec![5, 5, 5, 5, 2]);
        let values: Vec<i64> = out
            .iter()
            .flat_map(|b| {
                let a = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
                (0..a.len()).map(|i| a.value(i)).collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(values, (0..22).collect::<Vec<_>>());
    }
}
