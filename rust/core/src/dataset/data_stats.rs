//! How many bytes each field of a table takes in its data files (pylance's
//! `ds.stats.data_stats()`): the buffers of every page of the columns holding the field,
//! in every data file. Fields stored through their children (a struct, in 2.1 and later)
//! hold none themselves.
use std::collections::HashMap;

use crate::dataset::Dataset;
use crate::error::Result;
use crate::table::data_file::is_legacy;

/// (field id, bytes on disk) of every field, depth-first in schema order.
pub async fn field_bytes(ds: &Dataset) -> Result<Vec<(i32, u64)>> {
    let per_fragment = ds
        .per_fragment(|frag| async move {
            let mut bytes: HashMap<i32, u64> = HashMap::new();
            for file in &frag.files {
                let ids: Vec<i32> = file.fields.iter().copied().filter(|&f| f >= 0).collect();
                let legacy = match is_legacy(file) {
                    true => ids
                        .iter()
                        .min()
                        .zip(ids.iter().max())
                        .map(|(a, b)| (*a, *b)),
                    false => None,
                };
                let reader = ds.open_file(file, legacy).await?;
                for (k, &fid) in file.fields.iter().enumerate() {
                    let column = match legacy {
                        Some((min, _)) if fid >= 0 => Some((fid - min) as usize),
                        _ => file
                            .column_indices
                            .get(k)
                            .and_then(|&c| usize::try_from(c).ok()),
                    };
                    let Some(info) = column.and_then(|c| reader.metadata.columns.get(c)) else {
                        continue;
                    };
                    let size: u64 = info
                        .pages
                        .iter()
                        .flat_map(|p| &p.buffers)
                        .chain(&info.buffers)
                        .map(|r| r.end - r.start)
                        .sum();
                    *bytes.entry(fid).or_default() += size;
                }
            }
            Ok(bytes)
        })
        .await?;
    let mut total: HashMap<i32, u64> = HashMap::new();
    for part in per_fragment {
        for (id, n) in part {
            *total.entry(id).or_default() += n;
        }
    }
    Ok(ds
        .schema
        .field_ids()
        .into_iter()
        .map(|id| (id, total.get(&id).copied().unwrap_or(0)))
        .collect())
}
