//! The leaf columns a data file holds, in file column order (the same walk the reader
//! does: structs and lists are descended, everything else is one column), with the
//! encoding choices each field's `lance-encoding:` metadata asks for.
use crate::encoding::compression::Scheme;
use crate::encoding::encode::array20::Column20;
use crate::encoding::encode::levels::Step;
use crate::encoding::encode::PageOptions;
use crate::error::{unsupported, Error, Result};
use crate::file::FileVersion;
use crate::table::schema::{LanceField, LanceSchema};

#[derive(Clone, Debug)]
pub struct LeafSpec {
    pub field_id: i32,
    /// The field's name, for errors.
    pub name: String,
    /// A JSON column: its text is stored as JSONB.
    pub json: bool,
    /// A blob column: values out of line or beside the file, descriptors in the page.
    pub blob: Option<BlobSpec>,
    /// A packed struct (`lance-encoding:packed`): one column of whole rows.
    pub packed: bool,
    /// Index of the top-level column the leaf belongs to.
    pub top: usize,
    pub steps: Vec<Step>,
    pub options: PageOptions,
    /// Format 2.0: what the field's column holds (`steps` lead to the field itself).
    pub v20: Option<Column20>,
}

/// Where a blob column's values go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlobSpec {
    /// Format 2.1: every value out of line in the data file.
    V1,
    /// Format 2.2: values up to `inline_max` bytes in the data file, those above
    /// `dedicated_above` in a sidecar object each, the others packed into sidecars of up
    /// to `pack_bytes` (when the field sets it; else the write's setting).
    V2 {
        inline_max: u64,
        dedicated_above: u64,
        pack_bytes: Option<u64>,
    },
}

/// pylance's defaults: 64 KiB inline, 4 MiB dedicated.
const BLOB_INLINE_MAX: u64 = 64 << 10;
const BLOB_DEDICATED_ABOVE: u64 = 4 << 20;

/// The v2 thresholds `f`'s metadata sets (`lance-encoding:blob-*-size-threshold`).
fn blob_v2_spec(f: &LanceField) -> Result<BlobSpec> {
    let threshold = |key: &str, zero_ok: bool| -> Result<Option<u64>> {
        let Some(v) = f.metadata.get(&format!("lance-encoding:{key}")) else {
            return Ok(None);
        };
        match v.trim().parse::<u64>() {
            Ok(n) if n > 0 || zero_ok => Ok(Some(n)),
            _ => Err(crate::error::Error::invalid(format!(
                "field '{}': lance-encoding:{key} must be a {} integer, got '{v}'",
                f.name,
                if zero_ok { "non-negative" } else { "positive" }
            ))),
        }
    };
    Ok(BlobSpec::V2 {
        inline_max: threshold("blob-inline-size-threshold", true)?.unwrap_or(BLOB_INLINE_MAX),
        dedicated_above: threshold("blob-dedicated-size-threshold", false)?
            .unwrap_or(BLOB_DEDICATED_ABOVE),
        pack_bytes: threshold("blob-pack-file-size-threshold", false)?,
    })
}

/// Check that packed struct `f` can be written: fields of fixed width (formats 2.1, 2.2),
/// or strings, binary and fixed-size lists (2.2).
fn check_packable(f: &LanceField, large_chunks: bool) -> Result<()> {
    use crate::encoding::encode::packed::packable;
    if f.children.is_empty() {
        return Err(unsupported(format!(
            "writing packed struct field '{}' with no fields",
            f.name
        )));
    }
    for c in &f.children {
        let dt = c.data_type()?;
        match packable(&dt) {
            None => {
                return Err(unsupported(format!(
                    "writing packed struct field '{}': its field '{}' is {dt}, which cannot \
                     be packed (fixed-width values, strings, binary and fixed-size lists can)",
                    f.name, c.name
                )))
            }
            Some(true) if !large_chunks => {
                return Err(unsupported(format!(
                    "writing packed struct field '{}' in format 2.1: its field '{}' ({dt}) \
                     is variable-width, which packed structs take from format 2.2",
                    f.name, c.name
                )))
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// The value of `f`'s metadata `lance-encoding:{key}`, lower-cased.
fn setting(f: &LanceField, key: &str) -> Option<String> {
    f.metadata
        .get(&format!("lance-encoding:{key}"))
        .map(|v| v.trim().to_ascii_lowercase())
}

fn invalid_setting(f: &LanceField, key: &str, value: &str, expected: &str) -> Error {
    Error::invalid(format!(
        "field '{}': lance-encoding:{key} is '{value}', expected {expected}",
        f.name
    ))
}

/// Check the `lance-encoding:` settings that do not decide encoding options themselves:
/// `packed` takes true or false; `blob` only true, on binary fields (pylance reads a field
/// with the key as a blob whatever its value, so `false` would not be what it says).
fn check_flags(f: &LanceField) -> Result<()> {
    if let Some(v) = setting(f, "packed") {
        if v != "true" && v != "false" {
            return Err(invalid_setting(f, "packed", &v, "true or false"));
        }
    }
    if let Some(v) = setting(f, "blob") {
        if v != "true" {
            return Err(invalid_setting(
                f,
                "blob",
                &v,
                "true (pylance takes any value as true: remove the key for a plain column)",
            ));
        }
    }
    if setting(f, "blob").is_some()
        && !matches!(f.logical_type.as_str(), "binary" | "large_binary" | "blob")
    {
        return Err(Error::invalid(format!(
            "field '{}': lance-encoding:blob is set on a {} field (blob columns are binary)",
            f.name, f.logical_type
        )));
    }
    Ok(())
}

/// Encoding options of a field, from its metadata and the file version; a value that is
/// not one of those known is an error naming the field.
fn options(f: &LanceField, large_chunks: bool) -> Result<PageOptions> {
    let compression = setting(f, "compression");
    let level = match setting(f, "compression-level") {
        None => None,
        Some(l) => {
            let n = l
                .parse::<i32>()
                .map_err(|_| invalid_setting(f, "compression-level", &l, "an integer"))?;
            let range = zstd::compression_level_range();
            if compression.as_deref() == Some("zstd") && !range.contains(&n) {
                return Err(invalid_setting(
                    f,
                    "compression-level",
                    &l,
                    &format!("a zstd level from {} to {}", range.start(), range.end()),
                ));
            }
            Some(n)
        }
    };
    let general = match compression.as_deref() {
        None | Some("none") | Some("fsst") => None,
        Some("zstd") => Some((Scheme::Zstd, level)),
        Some("lz4") => Some((Scheme::Lz4, None)),
        Some(other) => {
            return Err(invalid_setting(
                f,
                "compression",
                other,
                "none, fsst, zstd or lz4",
            ))
        }
    };
    let structural = setting(f, "structural-encoding");
    if let Some(s) = structural.as_deref() {
        if s != "fullzip" && s != "miniblock" {
            return Err(invalid_setting(
                f,
                "structural-encoding",
                s,
                "miniblock or fullzip",
            ));
        }
    }
    Ok(PageOptions {
        large_chunks,
        compression: general,
        allow_dictionary: general.is_none() && compression.as_deref() != Some("fsst"),
        allow_fsst: general.is_none() && compression.as_deref() != Some("none"),
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
    check_flags(f)?;
    match f.logical_type.as_str() {
        "struct" if f.is_blob_v2() => {
            if !large_chunks {
                return Err(unsupported(format!(
                    "writing blob v2 field '{}' in format 2.1 (blob v2 needs 2.2; format 2.1 \
                     takes a large_binary field with lance-encoding:blob)",
                    f.name
                )));
            }
            if !steps.is_empty() {
                return Err(unsupported(format!(
                    "writing blob field '{}' inside a struct or list",
                    f.name
                )));
            }
            out.push(LeafSpec {
                field_id: f.id,
                name: f.name.clone(),
                json: false,
                blob: Some(blob_v2_spec(f)?),
                packed: false,
                top,
                steps: steps.clone(),
                options: options(f, large_chunks)?,
                v20: None,
            })
        }
        "struct" if f.is_packed_struct() => {
            check_packable(f, large_chunks)?;
            out.push(LeafSpec {
                field_id: f.id,
                name: f.name.clone(),
                json: false,
                blob: None,
                packed: true,
                top,
                steps: steps.clone(),
                options: options(f, large_chunks)?,
                v20: None,
            })
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
            let blob = f.is_blob_v1().then_some(BlobSpec::V1);
            if blob.is_some() && large_chunks {
                return Err(unsupported(format!(
                    "writing blob field '{}' with lance-encoding:blob in format 2.2 (2.2 \
                     writes blobs as v2: give the column lance_core.blob.blob_field's type)",
                    f.name
                )));
            }
            if blob.is_some() && !steps.is_empty() {
                return Err(unsupported(format!(
                    "writing blob field '{}' inside a struct or list",
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
                name: f.name.clone(),
                json,
                blob,
                packed: false,
                top,
                steps: steps.clone(),
                options: options(f, large_chunks)?,
                v20: None,
            })
        }
    }
    Ok(())
}

/// The columns a data file of format `version` holds for `schema`, in file order: its
/// leaves (2.1 and later), or one per field (2.0).
pub fn for_version(schema: &LanceSchema, version: FileVersion) -> Result<Vec<LeafSpec>> {
    match version.minor {
        0 => columns20(schema),
        minor => leaves(schema, minor >= 2),
    }
}

/// The leaf columns of `schema`, in file order.
pub fn leaves(schema: &LanceSchema, large_chunks: bool) -> Result<Vec<LeafSpec>> {
    let mut out = Vec::new();
    for (i, f) in schema.fields.iter().enumerate() {
        walk(f, i, &mut Vec::new(), large_chunks, &mut out)?;
    }
    Ok(out)
}

/// The columns of a format 2.0 file, in file order: one per field, structs and lists
/// included (their fields and items follow them).
pub fn columns20(schema: &LanceSchema) -> Result<Vec<LeafSpec>> {
    fn walk(
        f: &LanceField,
        top: usize,
        steps: &mut Vec<Step>,
        out: &mut Vec<LeafSpec>,
    ) -> Result<()> {
        check_flags(f)?;
        let refuse = |what: &str| {
            Err(unsupported(format!(
                "writing {what} field '{}' in file format 2.0 (use 2.1 or later)",
                f.name
            )))
        };
        if f.is_blob_v1() || f.is_blob_v2() {
            return refuse("blob");
        }
        if f.is_packed_struct() {
            return refuse("packed struct");
        }
        if f.logical_type == "json" {
            return refuse("JSON");
        }
        let kind = match f.logical_type.as_str() {
            "struct" => Column20::StructHeader,
            "list" | "list.struct" | "large_list" | "large_list.struct" => Column20::ListOffsets,
            "map" => return refuse("map"),
            _ => Column20::Values,
        };
        out.push(LeafSpec {
            field_id: f.id,
            name: f.name.clone(),
            json: false,
            blob: None,
            packed: false,
            top,
            steps: steps.clone(),
            options: PageOptions::default(),
            v20: Some(kind),
        });
        if kind == Column20::Values && !f.children.is_empty() {
            return refuse(&f.logical_type);
        }
        let step = |i| match kind {
            Column20::ListOffsets => Step::ListItems,
            _ => Step::StructChild(i),
        };
        for (i, c) in f.children.iter().enumerate() {
            steps.push(step(i));
            walk(c, top, steps, out)?;
            steps.pop();
        }
        Ok(())
    }
    let mut out = Vec::new();
    for (i, f) in schema.fields.iter().enumerate() {
        walk(f, i, &mut Vec::new(), &mut out)?;
    }
    Ok(out)
}
