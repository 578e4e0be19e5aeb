//! The leaf columns a data file holds, in file column order (the same walk the reader
//! does: structs and lists are descended, everything else is one column), with the
//! encoding choices each field's `lance-encoding:` metadata asks for.
use crate::encoding::compression::Scheme;
use crate::encoding::encode::levels::Step;
use crate::encoding::encode::PageOptions;
use crate::error::{unsupported, Result};
use crate::table::schema::{LanceField, LanceSchema};

#[derive(Clone, Debug)]
pub struct LeafSpec {
    pub field_id: i32,
    /// A JSON column: its text is stored as JSONB.
    pub json: bool,
    /// A blob v1 column (format 2.1): values out of line, descriptors in the page.
    pub blob: bool,
    /// Index of the top-level column the leaf belongs to.
    pub top: usize,
    pub steps: Vec<Step>,
    pub options: PageOptions,
}

/// Encoding options of a field, from its metadata and the file version.
fn options(f: &LanceField, large_chunks: bool) -> Result<PageOptions> {
    let md = |k: &str| {
        f.metadata
            .get(&format!("lance-encoding:{k}"))
            .map(|v| v.to_ascii_lowercase())
    };
    let level = md("compression-level")
        .map(|l| l.parse::<i32>())
        .transpose()
        .map_err(|_| {
            unsupported(format!(
                "field '{}': lance-encoding:compression-level must be an integer",
                f.name
            ))
        })?;
    let compression = match md("compression").as_deref() {
        None | Some("none") | Some("fsst") => None,
        Some("zstd") => Some((Scheme::Zstd, level)),
        Some("lz4") => Some((Scheme::Lz4, None)),
        Some(other) => {
            return Err(unsupported(format!(
                "field '{}': compression '{other}'",
                f.name
            )))
        }
    };
    let structural = md("structural-encoding");
    Ok(PageOptions {
        large_chunks,
        compression,
        allow_dictionary: compression.is_none() && md("compression").as_deref() != Some("fsst"),
        allow_fsst: compression.is_none() && md("compression").as_deref() != Some("none"),
        force_full_zip: structural.as_deref() == Some("fullzip"),
        force_mini_block: structural.as_deref() == Some("miniblock"),
    })
}

fn walk(
    f: &LanceField,
    top: usize,
    steps: &mut Vec<Step>,
    large_chunks: bool,
    out: &mut Vec<LeafSpec>,
) -> Result<()> {
    match f.logical_type.as_str() {
        "struct" if f.is_packed_struct() || f.is_blob_v2() => {
            return Err(unsupported(format!(
                "writing packed struct or blob field '{}'",
                f.name
            )));
        }
        "struct" if !f.children.is_empty() => {
            for (i, c) in f.children.iter().enumerate() {
                steps.push(Step::StructChild(i));
                walk(c, top, steps, large_chunks, out)?;
                steps.pop();
            }
        }
        "list" | "list.struct" | "large_list" | "large_list.struct" | "map" => {
            steps.push(Step::ListItems);
            walk(&f.children[0], top, steps, large_chunks, out)?;
            steps.pop();
        }
        _ => {
            let blob = f.is_blob_v1();
            if blob && large_chunks {
                return Err(unsupported(format!(
                    "writing blob field '{}' in format 2.2 (blob v2; lance_core writes blobs \
                     in format 2.1)",
                    f.name
                )));
            }
            let json = f.logical_type == "json";
            if json && !steps.is_empty() {
                return Err(unsupported(format!(
                    "writing JSON field '{}' inside a struct or list",
                    f.name
                )));
            }
            out.push(LeafSpec {
                field_id: f.id,
                json,
                blob,
                top,
                steps: steps.clone(),
                options: options(f, large_chunks)?,
            })
        }
    }
    Ok(())
}

/// The leaf columns of `schema`, in file order.
pub fn leaves(schema: &LanceSchema, large_chunks: bool) -> Result<Vec<LeafSpec>> {
    let mut out = Vec::new();
    for (i, f) in schema.fields.iter().enumerate() {
        walk(f, i, &mut Vec::new(), large_chunks, &mut out)?;
    }
    Ok(out)
}
