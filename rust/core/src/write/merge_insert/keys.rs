//! The table's side of a merge's join: its key columns read by one scan, hashed (arrow's
//! row format, so any key types and several key columns hash alike), each key leading to
//! the addresses of the table rows that have it. Its memory is bounded by the table's
//! keys, whatever the size of its rows or of the source.
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_row::{Row, RowConverter, Rows, SortField};
use futures::TryStreamExt;
use roaring::RoaringTreemap;

use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::expr::{bind_filter, evaluate_filter, Expr};
use crate::scan::{scan, ScanOptions, ROW_ADDRESS, ROW_ID};

/// No next entry.
const END: u32 = u32::MAX;

/// A source row's match: (source row, table row address, its stable row id or 0).
pub type Pair = (u32, u64, u64);

/// The table's keys, by hash.
pub struct TableKeys {
    converter: RowConverter,
    /// Every live table row's key in row format, in scan order (null keys too).
    keys: Rows,
    addresses: Vec<u64>,
    /// Stable row ids, when the table has them.
    ids: Option<Vec<u64>>,
    /// The last entry of each key hash (null keys have none), in `PARTS` maps by some
    /// of the hash's bits ...
    last: Vec<HashMap<u64, u32, foldhash::fast::FixedState>>,
    /// ... and for each entry, the one before it with the same hash.
    previous: Vec<u32>,
    /// While the keys are read: the (hash, entry) of each non-null key, by partition.
    hashed: Vec<Vec<(u64, u32)>>,
    /// Addresses of the table rows `when_not_matched_by_source_delete` deletes when no
    /// source row matches them (all rows, or those where its predicate holds).
    pub deletable: RoaringTreemap,
}

impl TableKeys {
    /// Read the key columns `on` of `ds`'s live rows; `by_source` says whether unmatched
    /// rows may be deleted (Some), and where (its predicate, or all of them).
    pub async fn read(
        ds: &Dataset,
        on: &[String],
        by_source: Option<Option<&Expr>>,
    ) -> Result<Self> {
        let mut columns = on.to_vec();
        if let Some(Some(e)) = by_source {
            for c in e.columns() {
                let top = c.split('.').next().unwrap_or(&c).to_string();
                if !columns.contains(&top) {
                    columns.push(top);
                }
            }
        }
        let fields = on
            .iter()
            .map(|k| {
                let f = ds.arrow_schema.field_with_name(k).map_err(|_| {
                    Error::invalid(format!(
                        "{}: merge_insert key column '{k}' does not exist in the table",
                        ds.uri()
                    ))
                })?;
                Ok(SortField::new(f.data_type().clone()))
            })
            .collect::<Result<Vec<_>>>()?;
        let converter = RowConverter::new(fields)?;
        let stable = ds.has_stable_row_ids();
        // Sized for the rows the manifest lists (deleted ones too) rather than grown.
        let rows: u64 = ds.fragments().iter().map(|f| f.physical_rows).sum();
        let rows = rows.min(END as u64) as usize;
        let mut keys = TableKeys {
            keys: converter.empty_rows(rows, 0),
            converter,
            addresses: Vec::with_capacity(rows),
            ids: stable.then(|| Vec::with_capacity(rows)),
            last: vec![],
            previous: vec![],
            // A little over an even share each: partitions differ by a few percent.
            hashed: (0..PARTS)
                .map(|_| Vec::with_capacity(rows / PARTS * 17 / 16))
                .collect(),
            deletable: RoaringTreemap::new(),
        };
        let options = ScanOptions {
            columns: Some(columns),
            with_row_address: true,
            with_row_id: stable,
            batch_size: 64 * 1024,
            ..Default::default()
        };
        let mut batches = scan(Arc::new(ds.clone()), options)?.batches;
        let mut bound = None;
        while let Some(b) = batches.try_next().await? {
            let by_source = match by_source {
                None => None,
                Some(None) => Some(None),
                Some(Some(e)) => {
                    let bound = match &bound {
                        Some(b) => b,
                        None => bound.insert(bind_filter(e, &b.schema())?),
                    };
                    Some(Some(evaluate_filter(bound, &b)?))
                }
            };
            keys.add(ds, &b, on, by_source)?;
        }
        keys.index();
        Ok(keys)
    }

    /// Build each partition's map from its hashes, on the CPU pool: small maps, each
    /// filled from one run of memory, rather than one large one filled at random.
    fn index(&mut self) {
        use rayon::prelude::*;
        use std::sync::atomic::{AtomicU32, Ordering};
        let hashed = std::mem::take(&mut self.hashed);
        let previous: Vec<AtomicU32> = (0..self.addresses.len())
            .map(|_| AtomicU32::new(END))
            .collect();
        self.last = crate::threads::install(|| {
            hashed
                .into_par_iter()
                .map(|entries| {
                    let mut map = HashMap::with_capacity_and_hasher(
                        entries.len(),
                        foldhash::fast::FixedState::default(),
                    );
                    for (h, e) in entries {
                        if let Some(before) = map.insert(h, e) {
                            // Each entry is in one partition: no other writes it.
                            previous[e as usize].store(before, Ordering::Relaxed);
                        }
                    }
                    map
                })
                .collect()
        });
        self.previous = previous.into_iter().map(AtomicU32::into_inner).collect();
    }

    /// Add the rows of the scanned batch `b`.
    fn add(
        &mut self,
        ds: &Dataset,
        b: &RecordBatch,
        on: &[String],
        by_source: Option<Option<arrow_array::BooleanArray>>,
    ) -> Result<()> {
        let first = self.addresses.len();
        if first + b.num_rows() >= END as usize {
            return Err(Error::unsupported(
                ds.uri(),
                format!("merge_insert into a table of more than {} rows", END - 1),
            ));
        }
        let columns = key_columns(b, on);
        self.converter
            .append(&mut self.keys, &normalized(&columns))?;
        let addresses = b
            .column_by_name(ROW_ADDRESS)
            .expect("scanned")
            .as_primitive::<UInt64Type>();
        self.addresses.extend(addresses.values().iter());
        if let Some(ids) = &mut self.ids {
            let scanned = b.column_by_name(ROW_ID).expect("scanned");
            ids.extend(scanned.as_primitive::<UInt64Type>().values().iter());
        }
        let null = any_null(&columns, b.num_rows());
        // Hashed on the CPU pool.
        let keys = &self.keys;
        let hashes: Vec<u64> = crate::threads::install(|| {
            use rayon::prelude::*;
            (first..first + b.num_rows())
                .into_par_iter()
                .with_min_len(4096)
                .map(|e| hash_key(keys.row(e)))
                .collect()
        });
        for (i, (h, n)) in hashes.into_iter().zip(null).enumerate() {
            if !n {
                self.hashed[part(h)].push((h, (first + i) as u32));
            }
        }
        match by_source {
            None => {}
            Some(None) => self.deletable.extend(addresses.values().iter().copied()),
            Some(Some(holds)) => {
                for (i, &a) in addresses.values().iter().enumerate() {
                    if holds.is_valid(i) && holds.value(i) {
                        self.deletable.insert(a);
                    }
                }
            }
        }
        Ok(())
    }

    /// The matches of the rows of `source` (conformed source rows): each source row with
    /// every table row of its key, and the source rows matching none (null keys included).
    pub fn matches(&self, source: &RecordBatch, on: &[String]) -> Result<(Vec<Pair>, Vec<u32>)> {
        let columns = key_columns(source, on);
        let rows = self.converter.convert_columns(&normalized(&columns))?;
        let null = any_null(&columns, source.num_rows());
        // Each row's last entry of its key, looked up on the CPU pool.
        let found: Vec<u32> = crate::threads::install(|| {
            use rayon::prelude::*;
            null.par_iter()
                .enumerate()
                .with_min_len(4096)
                .map(|(i, &n)| if n { END } else { self.first(rows.row(i)) })
                .collect()
        });
        let mut pairs = Vec::with_capacity(source.num_rows());
        let mut unmatched = vec![];
        for (i, mut entry) in found.into_iter().enumerate() {
            if entry == END {
                unmatched.push(i as u32);
            }
            while entry != END {
                let e = entry as usize;
                let id = self.ids.as_ref().map_or(0, |ids| ids[e]);
                pairs.push((i as u32, self.addresses[e], id));
                entry = self.walk(rows.row(i), self.previous[e]);
            }
        }
        Ok((pairs, unmatched))
    }

    /// The last entry whose key is `row` (END: none).
    fn first(&self, row: Row<'_>) -> u32 {
        let h = hash_key(row);
        match self.last[part(h)].get(&h) {
            Some(&e) => self.walk(row, e),
            None => END,
        }
    }

    /// The first entry from `entry` backwards (itself included) whose key is `row`.
    fn walk(&self, row: Row<'_>, mut entry: u32) -> u32 {
        while entry != END && self.keys.row(entry as usize) != row {
            entry = self.previous[entry as usize];
        }
        entry
    }
}

/// How many maps the keys are split over.
const PARTS: usize = 256;

/// The map of hash `h`: bits the maps' own hashing (of `h` again) does not depend on.
fn part(h: u64) -> usize {
    (h >> 40) as usize % PARTS
}

/// The key columns `on` of `b` (which has them).
fn key_columns(b: &RecordBatch, on: &[String]) -> Vec<ArrayRef> {
    on.iter()
        .map(|k| b.column_by_name(k).cloned().expect("checked"))
        .collect()
}

/// Key columns where equal keys have equal bytes in row format: -0.0 made 0.0 and NaNs
/// one NaN, since those are equal keys (as in every comparison).
fn normalized(columns: &[ArrayRef]) -> Vec<ArrayRef> {
    columns.iter().map(crate::expr::normalize_floats).collect()
}

/// The hash of a key in row format (equal keys have equal bytes).
fn hash_key(row: Row<'_>) -> u64 {
    foldhash::fast::FixedState::with_seed(0x5eed).hash_one(row.as_ref())
}

/// Whether any of `columns` is null, per row.
fn any_null(columns: &[ArrayRef], rows: usize) -> Vec<bool> {
    let mut out = vec![false; rows];
    for c in columns {
        if let Some(n) = c.logical_nulls() {
            for (o, valid) in out.iter_mut().zip(n.iter()) {
                *o |= !valid;
            }
        }
    }
    out
}
