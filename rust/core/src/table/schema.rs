//! The dataset schema: Lance fields (flattened depth-first, linked by parent id, typed by
//! logical-type strings) ↔ Arrow fields, keeping every field's id.
use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{DataType, Field, FieldRef, Fields, IntervalUnit, Schema, TimeUnit};

use crate::error::{corrupt, unsupported, Error, Result};
use crate::proto::file::Field as PbField;

pub const EXTENSION_NAME: &str = "ARROW:extension:name";
pub const BFLOAT16: &str = "lance.bfloat16";
pub const BLOB_META: &str = "lance-encoding:blob";
pub const PACKED_META: &str = "lance-encoding:packed";
pub const BLOB_V2: &str = "lance.blob.v2";
pub const JSON_LANCE: &str = "lance.json";

/// How deeply fields (and logical types) may nest: far beyond any real schema, and
/// shallow enough that walking one recursively cannot exhaust the stack.
const MAX_DEPTH: usize = 64;

/// Field metadata declaring the table's unenforced primary key (the reference's names).
pub const PRIMARY_KEY: &str = "lance-schema:unenforced-primary-key";
pub const PRIMARY_KEY_POSITION: &str = "lance-schema:unenforced-primary-key:position";

/// A field of the dataset schema with its id and children.
#[derive(Clone, Debug)]
pub struct LanceField {
    pub id: i32,
    pub name: String,
    pub logical_type: String,
    pub nullable: bool,
    pub metadata: HashMap<String, String>,
    pub children: Vec<LanceField>,
}

/// The dataset schema: top-level fields and schema metadata.
#[derive(Clone, Debug, Default)]
pub struct LanceSchema {
    pub fields: Vec<LanceField>,
    pub metadata: HashMap<String, String>,
}

impl LanceSchema {
    /// Rebuild the tree from the flattened field list of a manifest or file.
    pub fn from_proto(fields: &[PbField], metadata: &HashMap<String, Vec<u8>>) -> Result<Self> {
        let mut roots: Vec<LanceField> = Vec::new();
        // Path (indices from the root) of every field id seen so far.
        let mut paths: HashMap<i32, Vec<usize>> = HashMap::new();
        for f in fields {
            let mut md: HashMap<String, String> = f
                .metadata
                .iter()
                .map(|(k, v)| (k.clone(), String::from_utf8_lossy(v).into_owned()))
                .collect();
            if !f.extension_name.is_empty() {
                md.entry(EXTENSION_NAME.to_string())
                    .or_insert_with(|| f.extension_name.clone());
            }
            // A primary key the manifest marks is kept in the field's metadata, where the
            // Arrow schema shows it and `to_proto` finds it again.
            // (Only when its metadata declares none: a key declared by position alone
            // stays so, as the reference shows it.)
            let declared = md.contains_key(PRIMARY_KEY) || md.contains_key(PRIMARY_KEY_POSITION);
            if !declared && (f.unenforced_primary_key || f.unenforced_primary_key_position > 0) {
                md.insert(PRIMARY_KEY.to_string(), "true".into());
            }
            if f.unenforced_primary_key_position > 0 {
                md.entry(PRIMARY_KEY_POSITION.to_string())
                    .or_insert_with(|| f.unenforced_primary_key_position.to_string());
            }
            let node = LanceField {
                id: f.id,
                name: f.name.clone(),
                logical_type: f.logical_type.clone(),
                nullable: f.nullable,
                metadata: md,
                children: vec![],
            };
            let path = if f.parent_id < 0 {
                roots.push(node);
                vec![roots.len() - 1]
            } else {
                let parent_path = paths
                    .get(&f.parent_id)
                    .ok_or_else(|| {
                        corrupt(format!(
                            "field '{}' (id {}) names parent {} which comes later or not at all",
                            f.name, f.id, f.parent_id
                        ))
                    })?
                    .clone();
                if parent_path.len() >= MAX_DEPTH {
                    return Err(corrupt(format!(
                        "field '{}' (id {}) is nested more than {MAX_DEPTH} levels deep",
                        f.name, f.id
                    )));
                }
                let parent = get_mut(&mut roots, &parent_path);
                parent.children.push(node);
                let mut p = parent_path;
                p.push(parent.children.len() - 1);
                p
            };
            if paths.insert(f.id, path).is_some() && f.id >= 0 {
                return Err(corrupt(format!("field id {} is used twice", f.id)));
            }
        }
        let metadata = metadata
            .iter()
            .map(|(k, v)| (k.clone(), String::from_utf8_lossy(v).into_owned()))
            .collect();
        Ok(LanceSchema {
            fields: roots,
            metadata,
        })
    }

    /// The Arrow schema users see (`Dataset.schema`).
    pub fn to_arrow(&self) -> Result<Schema> {
        let fields = self
            .fields
            .iter()
            .map(|f| f.to_arrow())
            .collect::<Result<Vec<_>>>()?;
        Ok(Schema::new_with_metadata(fields, self.metadata.clone()))
    }

    pub fn field(&self, name: &str) -> Option<&LanceField> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// The dotted path of the field with id `id` ("a.b" for child b of struct a).
    pub fn path_of(&self, id: i32) -> Option<String> {
        fn find(fields: &[LanceField], id: i32) -> Option<Vec<&str>> {
            fields.iter().find_map(|f| match f.id == id {
                true => Some(vec![f.name.as_str()]),
                false => find(&f.children, id).map(|mut p| {
                    p.insert(0, &f.name);
                    p
                }),
            })
        }
        find(&self.fields, id).map(|p| p.join("."))
    }

    /// Every field id, depth-first.
    pub fn field_ids(&self) -> Vec<i32> {
        fn walk(f: &LanceField, out: &mut Vec<i32>) {
            out.push(f.id);
            for c in &f.children {
                walk(c, out);
            }
        }
        let mut out = vec![];
        for f in &self.fields {
            walk(f, &mut out);
        }
        out
    }
}

fn get_mut<'a>(roots: &'a mut [LanceField], path: &[usize]) -> &'a mut LanceField {
    let mut f = &mut roots[path[0]];
    for &i in &path[1..] {
        f = &mut f.children[i];
    }
    f
}

impl LanceField {
    pub fn extension(&self) -> Option<&str> {
        self.metadata.get(EXTENSION_NAME).map(|s| s.as_str())
    }

    /// A struct stored as one column (row-major), rather than one column per child.
    pub fn is_packed_struct(&self) -> bool {
        let flag = |k: &str| {
            self.metadata
                .get(k)
                .is_some_and(|v| v.eq_ignore_ascii_case("true"))
        };
        self.logical_type == "struct" && (flag(PACKED_META) || flag("packed"))
    }

    /// Blob v1: large binary stored out of line.
    pub fn is_blob_v1(&self) -> bool {
        matches!(
            self.logical_type.as_str(),
            "large_binary" | "binary" | "blob"
        ) && self.metadata.contains_key(BLOB_META) // any value, as pylance reads it
    }

    pub fn is_blob_v2(&self) -> bool {
        self.extension() == Some(BLOB_V2)
    }

    pub fn to_arrow(&self) -> Result<Field> {
        let dt = self.data_type()?;
        let mut md = self.metadata.clone();
        if self.logical_type == "json" {
            // Stored as JSONB under lance's extension name; read back as Arrow's JSON extension.
            md.insert(EXTENSION_NAME.into(), "arrow.json".into());
            md.entry("ARROW:extension:metadata".into()).or_default();
        }
        Ok(Field::new(&self.name, dt, self.nullable).with_metadata(md))
    }

    fn child_arrow(&self, i: usize) -> Result<FieldRef> {
        let c = self.children.get(i).ok_or_else(|| {
            corrupt(format!(
                "field '{}' of type {} has no child field",
                self.name, self.logical_type
            ))
        })?;
        Ok(Arc::new(c.to_arrow()?))
    }

    /// The Arrow type of this field.
    pub fn data_type(&self) -> Result<DataType> {
        let lt = self.logical_type.as_str();
        Ok(match lt {
            "struct" => DataType::Struct(
                self.children
                    .iter()
                    .map(|c| c.to_arrow())
                    .collect::<Result<Vec<_>>>()?
                    .into(),
            ),
            "list" | "list.struct" => DataType::List(self.child_arrow(0)?),
            "large_list" | "large_list.struct" => DataType::LargeList(self.child_arrow(0)?),
            "map" => {
                let entries = self.child_arrow(0)?;
                DataType::Map(entries, false)
            }
            "json" => DataType::Utf8,
            // A fixed-size list of structs keeps its struct as the child field `item`.
            lt if lt.starts_with("fixed_size_list:struct:") => {
                let dim = lt["fixed_size_list:struct:".len()..]
                    .parse::<i32>()
                    .ok()
                    .filter(|n| *n >= 0)
                    .ok_or_else(|| {
                        corrupt(format!("field '{}': bad logical type '{lt}'", self.name))
                    })?;
                DataType::FixedSizeList(self.child_arrow(0)?, dim)
            }
            _ => {
                parse_logical_type(lt).map_err(|e| e.context(&format!("field '{}'", self.name)))?
            }
        })
    }
}

fn time_unit(s: &str) -> Result<TimeUnit> {
    Ok(match s {
        "s" => TimeUnit::Second,
        "ms" => TimeUnit::Millisecond,
        "us" => TimeUnit::Microsecond,
        "ns" => TimeUnit::Nanosecond,
        _ => return Err(unsupported(format!("time unit '{s}'"))),
    })
}

/// Parse a non-nested logical type string into its Arrow type.
pub fn parse_logical_type(lt: &str) -> Result<DataType> {
    parse_nested(lt, 0)
}

/// `parse_logical_type` for a type `depth` levels inside another.
fn parse_nested(lt: &str, depth: usize) -> Result<DataType> {
    if depth > MAX_DEPTH {
        return Err(unsupported(format!(
            "logical type nested more than {MAX_DEPTH} levels deep"
        )));
    }
    let simple = match lt {
        "null" => Some(DataType::Null),
        "bool" => Some(DataType::Boolean),
        "int8" => Some(DataType::Int8),
        "uint8" => Some(DataType::UInt8),
        "int16" => Some(DataType::Int16),
        "uint16" => Some(DataType::UInt16),
        "int32" => Some(DataType::Int32),
        "uint32" => Some(DataType::UInt32),
        "int64" => Some(DataType::Int64),
        "uint64" => Some(DataType::UInt64),
        "halffloat" => Some(DataType::Float16),
        "float" => Some(DataType::Float32),
        "double" => Some(DataType::Float64),
        "string" => Some(DataType::Utf8),
        "binary" => Some(DataType::Binary),
        "large_string" => Some(DataType::LargeUtf8),
        "large_binary" | "blob" => Some(DataType::LargeBinary),
        "date32:day" => Some(DataType::Date32),
        "date64:ms" => Some(DataType::Date64),
        "time32:s" => Some(DataType::Time32(TimeUnit::Second)),
        "time32:ms" => Some(DataType::Time32(TimeUnit::Millisecond)),
        "time64:us" => Some(DataType::Time64(TimeUnit::Microsecond)),
        "time64:ns" => Some(DataType::Time64(TimeUnit::Nanosecond)),
        "interval:year_month" => Some(DataType::Interval(IntervalUnit::YearMonth)),
        "interval:day_time" => Some(DataType::Interval(IntervalUnit::DayTime)),
        "interval:month_day_nano" => Some(DataType::Interval(IntervalUnit::MonthDayNano)),
        _ => None,
    };
    if let Some(dt) = simple {
        return Ok(dt);
    }
    let bad = || unsupported(format!("unknown logical type '{lt}'"));
    // Widths and dimensions: never negative.
    let num = |s: &str| s.parse::<i32>().ok().filter(|n| *n >= 0).ok_or_else(bad);
    if let Some(rest) = lt.strip_prefix("decimal:") {
        let parts: Vec<&str> = rest.split(':').collect();
        let [bits, p, s] = parts[..] else {
            return Err(bad());
        };
        let (p, s) = (
            p.parse::<u8>().map_err(|_| bad())?,
            s.parse::<i8>().map_err(|_| bad())?,
        );
        return match bits {
            "128" => Ok(DataType::Decimal128(p, s)),
            "256" => Ok(DataType::Decimal256(p, s)),
            "32" => Ok(DataType::Decimal32(p, s)),
            "64" => Ok(DataType::Decimal64(p, s)),
            _ => Err(bad()),
        };
    }
    if let Some(rest) = lt.strip_prefix("timestamp:") {
        let (unit, tz) = rest.split_once(':').ok_or_else(bad)?;
        let tz = if tz == "-" { None } else { Some(tz.into()) };
        return Ok(DataType::Timestamp(time_unit(unit)?, tz));
    }
    if let Some(unit) = lt.strip_prefix("duration:") {
        return Ok(DataType::Duration(time_unit(unit)?));
    }
    if let Some(n) = lt.strip_prefix("fixed_size_binary:") {
        return Ok(DataType::FixedSizeBinary(num(n)?));
    }
    if let Some(rest) = lt.strip_prefix("fixed_size_list:") {
        // The item type is everything up to the last ':' (it may contain ':' itself).
        let (item, n) = rest.rsplit_once(':').ok_or_else(bad)?;
        let item_field = if item == BFLOAT16 {
            Field::new("item", DataType::FixedSizeBinary(2), true).with_metadata(HashMap::from([(
                EXTENSION_NAME.to_string(),
                BFLOAT16.to_string(),
            )]))
        } else {
            Field::new("item", parse_nested(item, depth + 1)?, true)
        };
        return Ok(DataType::FixedSizeList(Arc::new(item_field), num(n)?));
    }
    if let Some(rest) = lt.strip_prefix("dict:") {
        // dict:<value>:<key>:<ordered>; the value type may itself contain ':'.
        let (rest, _ordered) = rest.rsplit_once(':').ok_or_else(bad)?;
        let (value, key) = rest.rsplit_once(':').ok_or_else(bad)?;
        return Ok(DataType::Dictionary(
            Box::new(parse_nested(key, depth + 1)?),
            Box::new(parse_nested(value, depth + 1)?),
        ));
    }
    Err(bad())
}

/// The logical type string of an Arrow type (the inverse of `parse_logical_type`, for
/// non-nested types and fixed-size lists).
pub fn logical_type_of(dt: &DataType) -> Result<String> {
    let unit = |u: &TimeUnit| match u {
        TimeUnit::Second => "s",
        TimeUnit::Millisecond => "ms",
        TimeUnit::Microsecond => "us",
        TimeUnit::Nanosecond => "ns",
    };
    Ok(match dt {
        DataType::Null => "null".into(),
        DataType::Boolean => "bool".into(),
        DataType::Int8 => "int8".into(),
        DataType::UInt8 => "uint8".into(),
        DataType::Int16 => "int16".into(),
        DataType::UInt16 => "uint16".into(),
        DataType::Int32 => "int32".into(),
        DataType::UInt32 => "uint32".into(),
        DataType::Int64 => "int64".into(),
        DataType::UInt64 => "uint64".into(),
        DataType::Float16 => "halffloat".into(),
        DataType::Float32 => "float".into(),
        DataType::Float64 => "double".into(),
        DataType::Utf8 | DataType::Utf8View => "string".into(),
        DataType::Binary | DataType::BinaryView => "binary".into(),
        DataType::LargeUtf8 => "large_string".into(),
        DataType::LargeBinary => "large_binary".into(),
        DataType::Decimal128(p, s) => format!("decimal:128:{p}:{s}"),
        DataType::Decimal256(p, s) => format!("decimal:256:{p}:{s}"),
        DataType::Date32 => "date32:day".into(),
        DataType::Date64 => "date64:ms".into(),
        DataType::Time32(u) => format!("time32:{}", unit(u)),
        DataType::Time64(u) => format!("time64:{}", unit(u)),
        DataType::Duration(u) => format!("duration:{}", unit(u)),
        DataType::Timestamp(u, tz) => {
            format!("timestamp:{}:{}", unit(u), tz.as_deref().unwrap_or("-"))
        }
        // A bfloat16 column is `fixed_size_binary:2` (its extension name in the field's
        // metadata), bfloat16 list items `lance.bfloat16`, as pylance writes them.
        DataType::FixedSizeBinary(n) => format!("fixed_size_binary:{n}"),
        DataType::FixedSizeList(item, n) => {
            let ext = item.metadata().get(EXTENSION_NAME).map(|s| s.as_str());
            let item = match (item.data_type(), ext) {
                (DataType::FixedSizeBinary(2), Some(BFLOAT16)) => BFLOAT16.to_string(),
                (dt, _) => logical_type_of(dt)?,
            };
            format!("fixed_size_list:{item}:{n}")
        }
        DataType::Dictionary(k, v) => {
            format!("dict:{}:{}:false", logical_type_of(v)?, logical_type_of(k)?)
        }
        DataType::Struct(_) => "struct".into(),
        DataType::List(item) if matches!(item.data_type(), DataType::Struct(_)) => {
            "list.struct".into()
        }
        DataType::List(_) => "list".into(),
        DataType::LargeList(item) if matches!(item.data_type(), DataType::Struct(_)) => {
            "large_list.struct".into()
        }
        DataType::LargeList(_) => "large_list".into(),
        DataType::Map(_, _) => "map".into(),
        other => {
            return Err(unsupported(format!(
                "Arrow type {other} has no Lance logical type"
            )))
        }
    })
}

/// Convenience: Arrow fields of a struct type.
pub fn struct_fields(dt: &DataType) -> Option<&Fields> {
    match dt {
        DataType::Struct(f) => Some(f),
        _ => None,
    }
}

/// Building schemas from Arrow, for writing.
impl LanceSchema {
    /// The Lance schema of an Arrow schema, field ids assigned depth-first from `first_id`.
    pub fn from_arrow(schema: &Schema, first_id: i32) -> Result<Self> {
        let mut next = first_id;
        let fields = schema
            .fields()
            .iter()
            .map(|f| LanceField::from_arrow(f, &mut next))
            .collect::<Result<Vec<LanceField>>>()?;
        let metadata = schema
            .metadata()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let schema = LanceSchema { fields, metadata };
        check_primary_key(&schema)?;
        Ok(schema)
    }

    /// The flattened field list of manifests and data files (depth-first, parents first).
    pub fn to_proto(&self) -> Vec<PbField> {
        fn walk(f: &LanceField, parent: i32, out: &mut Vec<PbField>) {
            use crate::proto::file::field::Type;
            use crate::proto::file::Encoding;
            let (ty, encoding) = match f.logical_type.as_str() {
                "struct" => (Type::Parent, None),
                "list" | "list.struct" | "large_list" | "large_list.struct" | "map" => {
                    (Type::Repeated, None)
                }
                "string" | "binary" | "large_string" | "large_binary" | "json" => {
                    (Type::Leaf, Some(Encoding::VarBinary))
                }
                lt if lt.starts_with("dict:") => (Type::Leaf, Some(Encoding::Dictionary)),
                _ => (Type::Leaf, Some(Encoding::Plain)),
            };
            out.push(PbField {
                r#type: ty as i32,
                name: f.name.clone(),
                id: f.id,
                parent_id: parent,
                logical_type: f.logical_type.clone(),
                nullable: f.nullable,
                encoding: encoding.map_or(0, |e| e as i32),
                dictionary: f.logical_type.starts_with("dict:").then(Default::default),
                extension_name: f
                    .extension()
                    .filter(|e| *e != BLOB_V2)
                    .unwrap_or_default()
                    .to_string(),
                metadata: f
                    .metadata
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone().into_bytes()))
                    .collect(),
                unenforced_primary_key: f.primary_key_position().is_some(),
                unenforced_primary_key_position: f.primary_key_position().unwrap_or(0),
            });
            for c in &f.children {
                walk(c, f.id, out);
            }
        }
        let mut out = Vec::new();
        for f in &self.fields {
            walk(f, -1, &mut out);
        }
        out
    }

    pub fn metadata_proto(&self) -> HashMap<String, Vec<u8>> {
        self.metadata
            .iter()
            .map(|(k, v)| (k.clone(), v.clone().into_bytes()))
            .collect()
    }

    /// The largest field id in use (-1 when there is none).
    pub fn max_field_id(&self) -> i32 {
        self.field_ids().into_iter().max().unwrap_or(-1)
    }
}

impl LanceField {
    /// Whether the field is part of the table's (unenforced) primary key, declared in its
    /// metadata as the reference reads it: Some(position), 1-based, or Some(0) when no
    /// position is given; None when it is not.
    pub fn primary_key_position(&self) -> Option<u32> {
        if let Some(p) = self.metadata.get(PRIMARY_KEY_POSITION) {
            if let Ok(p) = p.trim().parse::<u32>() {
                return Some(p);
            }
        }
        let flag = self.metadata.get(PRIMARY_KEY)?.trim().to_ascii_lowercase();
        matches!(flag.as_str(), "true" | "1" | "yes").then_some(0)
    }

    fn from_arrow(f: &Field, next: &mut i32) -> Result<Self> {
        let id = *next;
        *next += 1;
        let ext = f.metadata().get(EXTENSION_NAME).map(|s| s.as_str());
        let mut metadata: HashMap<String, String> = f
            .metadata()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let (logical_type, children) = match (f.data_type(), ext) {
            (DataType::Utf8 | DataType::LargeUtf8, Some("arrow.json")) => {
                metadata.insert(EXTENSION_NAME.into(), JSON_LANCE.into());
                ("json".to_string(), vec![])
            }
            (DataType::Struct(children), _) => (
                "struct".to_string(),
                children
                    .iter()
                    .map(|c| LanceField::from_arrow(c, next))
                    .collect::<Result<_>>()?,
            ),
            (dt @ (DataType::List(item) | DataType::LargeList(item)), _) => (
                logical_type_of(dt)?,
                vec![LanceField::from_arrow(item, next)?],
            ),
            (DataType::Map(entries, sorted), _) => {
                if *sorted {
                    return Err(unsupported(format!(
                        "field '{}': maps with sorted keys",
                        f.name()
                    )));
                }
                (
                    "map".to_string(),
                    vec![LanceField::from_arrow(entries, next)?],
                )
            }
            (DataType::FixedSizeList(item, _), _)
                if matches!(item.data_type(), DataType::Struct(_) | DataType::List(_)) =>
            {
                return Err(unsupported(format!(
                    "field '{}': fixed-size lists of {}",
                    f.name(),
                    item.data_type()
                )));
            }
            (dt, _) => (logical_type_of(dt)?, vec![]),
        };
        Ok(LanceField {
            id,
            name: f.name().clone(),
            logical_type,
            nullable: f.is_nullable(),
            metadata,
            children,
        })
    }
}

/// Where a key column may be, as the reference requires: a leaf (no children), not inside
/// a list, and neither it nor any of its ancestors nullable (a key has a value in every row).
pub fn check_primary_key(schema: &LanceSchema) -> Result<()> {
    fn walk(fields: &[LanceField], ancestors: &[&LanceField]) -> Result<()> {
        for f in fields {
            let mut chain = ancestors.to_vec();
            chain.push(f);
            if f.primary_key_position().is_some() {
                let path = chain
                    .iter()
                    .map(|a| a.name.as_str())
                    .collect::<Vec<_>>()
                    .join(".");
                if !f.children.is_empty() {
                    return Err(Error::invalid(format!(
                        "primary key column '{path}' must be a leaf, not a {}",
                        f.logical_type
                    )));
                }
                if ancestors
                    .iter()
                    .any(|a| a.logical_type.contains("list") || a.logical_type == "map")
                {
                    return Err(Error::invalid(format!(
                        "primary key column '{path}' must not be inside a list"
                    )));
                }
                if chain.iter().any(|a| a.nullable) {
                    return Err(Error::invalid(format!(
                        "primary key column '{path}' and all its ancestors must not be nullable"
                    )));
                }
            }
            walk(&f.children, &chain)?;
        }
        Ok(())
    }
    walk(&schema.fields, &[])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logical_types_round_trip() {
        for lt in [
            "int8",
            "uint64",
            "halffloat",
            "double",
            "large_string",
            "decimal:128:10:2",
            "decimal:256:40:-3",
            "date32:day",
            "time64:ns",
            "duration:ms",
            "timestamp:us:-",
            "timestamp:ns:America/New_York",
            "timestamp:s:+05:30",
            "fixed_size_binary:16",
            "fixed_size_list:float:128",
            "fixed_size_list:lance.bfloat16:8",
            "fixed_size_list:fixed_size_list:int32:2:3",
            "dict:string:int16:false",
        ] {
            let dt = parse_logical_type(lt).unwrap();
            assert_eq!(logical_type_of(&dt).unwrap(), lt, "{dt}");
        }
        for negative in ["fixed_size_binary:-1", "fixed_size_list:int8:-3"] {
            assert!(parse_logical_type(negative).is_err(), "{negative}");
        }
        assert!(parse_logical_type("int128")
            .unwrap_err()
            .to_string()
            .contains("unknown logical type"));
    }

    #[test]
    fn tree_is_rebuilt_from_parent_ids() {
        let f = |id, parent, name: &str, lt: &str| PbField {
            id,
            parent_id: parent,
            name: name.into(),
            logical_type: lt.into(),
            nullable: true,
            ..Default::default()
        };
        let fields = vec![
            f(0, -1, "a", "int64"),
            f(1, -1, "s", "struct"),
            f(2, 1, "x", "string"),
            f(3, -1, "l", "list"),
            f(4, 3, "item", "int32"),
        ];
        let s = LanceSchema::from_proto(&fields, &HashMap::new()).unwrap();
        assert_eq!(s.field_ids(), vec![0, 1, 2, 3, 4]);
        let arrow = s.to_arrow().unwrap();
        assert_eq!(
            arrow.field(1).data_type(),
            &DataType::Struct(vec![Field::new("x", DataType::Utf8, true)].into())
        );
        assert_eq!(
            arrow.field(2).data_type(),
            &DataType::List(Arc::new(Field::new("item", DataType::Int32, true)))
        );
        // A chain of fields each inside the previous one: refused past MAX_DEPTH, so
        // converting it cannot recurse without bound.
        let chain: Vec<PbField> = (0..1000)
            .map(|i| f(i, i - 1, "s", if i == 999 { "int32" } else { "struct" }))
            .collect();
        let err = LanceSchema::from_proto(&chain, &HashMap::new()).unwrap_err();
        assert!(err.to_string().contains("nested more than"), "{err}");
        let deep = "fixed_size_list:".repeat(100) + "int8" + &":2".repeat(100);
        assert!(parse_logical_type(&deep).is_err());
        let bad = vec![f(2, 7, "x", "int32")];
        assert!(LanceSchema::from_proto(&bad, &HashMap::new())
            .unwrap_err()
            .to_string()
            .contains("parent 7"));
    }
}
