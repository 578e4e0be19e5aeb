//! A namespace kept in a directory (local or on an object store), as pylance's
//! `DirectoryNamespace`: nested namespaces and tables recorded in the `__manifest` table
//! at the root, table data in directories below it.
//!
//! Layout (pylance's): a table at the root lives in `<name>.lance` and is also found by
//! listing the root (tables pylance or anyone wrote there before a catalog existed); a
//! table in a child namespace lives in `<8 random hex digits>_<object id>`; a declared
//! table's directory holds an empty `.lance-reserved` file until data is written; a root
//! table deregistered without a catalog holds `.lance-deregistered`. Namespaces are
//! catalog rows only.
use std::collections::{BTreeSet, HashMap};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use futures::Stream;

use super::manifest::{parse_properties, type_is, Entry, ManifestTable, NAMESPACE, TABLE};
use super::{object_id, paginate, python_list, refused, NamespaceErrorKind as Kind, Page};
use super::{Properties, DELIMITER};
use crate::error::{Error, Result};
use crate::storage::{Storage, StorageOptions};
use crate::write::{write_dataset, WriteMode, WriteOptions};

/// The marker a declared table's directory holds until data is written.
pub const RESERVED: &str = ".lance-reserved";
/// The marker of a root table deregistered from a namespace without a catalog.
pub const DEREGISTERED: &str = ".lance-deregistered";

/// What pylance's catalog retries a lost commit by default.
const DEFAULT_COMMIT_RETRIES: u32 = 20;

/// A catalog of Lance tables below a root (a path or URI).
#[derive(Debug)]
pub struct DirectoryNamespace {
    /// The root as given, without trailing slashes.
    root: String,
    /// Options of the store, given to every table (the `storage.<key>` properties).
    storage_options: StorageOptions,
    /// The `__manifest` catalog is kept (else only root tables, found by listing).
    manifest_enabled: bool,
    /// Root tables are found by listing the root.
    dir_listing: bool,
    /// Root tables are looked up in the catalog first, then by listing.
    migration: bool,
    /// Tables' versions are managed by the namespace (reported, not done here).
    version_tracking: bool,
    /// Responses carry the namespace's storage options.
    vend_options: bool,
    manifest: ManifestTable,
}

/// A table `create_table` wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CreatedTable {
    /// Its URI, as pylance reports it (see `full_uri`).
    pub location: String,
    pub version: u64,
}

/// Where a table is, as `describe_table` tells it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableDescription {
    pub location: String,
    /// Whether the table is declared and has no version yet (when asked).
    pub is_only_declared: Option<bool>,
}

impl DirectoryNamespace {
    /// A namespace from pylance's properties (strings): `root` (required),
    /// `manifest_enabled` (default true), `dir_listing_enabled` (default true),
    /// `dir_listing_to_manifest_migration_enabled`, `commit_retries` (20),
    /// `table_version_tracking_enabled`, `vend_input_storage_options` and
    /// `storage.<key>` (options of the store). Others are ignored.
    pub fn from_properties(properties: &HashMap<String, String>) -> Result<Self> {
        let root = properties
            .get("root")
            .filter(|r| !r.is_empty())
            .ok_or_else(|| {
                Error::invalid(
                    "Failed to create DirectoryNamespace: Invalid input: \
                     Missing required property 'root' for directory namespace",
                )
            })?;
        // "/" stays "/": only a root with more than slashes loses them.
        let root = match root.trim_end_matches('/') {
            "" => root.clone(),
            trimmed => trimmed.to_string(),
        };
        let storage_options: StorageOptions = properties
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix("storage.")?.to_string(), v.clone())))
            .collect();
        let flag = |key: &str, default: bool| is_true(properties.get(key), default);
        // A count that is not a number is the default, a negative one none (as pylance).
        let retries = match properties.get("commit_retries") {
            None => DEFAULT_COMMIT_RETRIES,
            Some(text) => match text.trim().parse::<i64>() {
                Ok(n) => u32::try_from(n.max(0)).unwrap_or(u32::MAX),
                Err(_) => DEFAULT_COMMIT_RETRIES,
            },
        };
        let manifest = ManifestTable::new(
            format!("{root}/__manifest"),
            storage_options.clone(),
            retries,
        );
        Ok(DirectoryNamespace {
            manifest_enabled: flag("manifest_enabled", true),
            dir_listing: flag("dir_listing_enabled", true),
            migration: flag("dir_listing_to_manifest_migration_enabled", false),
            version_tracking: flag("table_version_tracking_enabled", false),
            vend_options: flag("vend_input_storage_options", false),
            root,
            storage_options,
            manifest,
        })
    }

    pub fn root(&self) -> &str {
        &self.root
    }

    pub fn storage_options(&self) -> &StorageOptions {
        &self.storage_options
    }

    /// The storage options responses carry: the namespace's, when it vends them.
    pub fn vended_storage_options(&self) -> Option<&StorageOptions> {
        (self.vend_options && !self.storage_options.is_empty()).then_some(&self.storage_options)
    }

    /// What responses say of `managed_versioning`: true when the namespace tracks
    /// versions, else nothing.
    pub fn managed_versioning(&self) -> Option<bool> {
        self.version_tracking.then_some(true)
    }

    pub fn manifest(&self) -> &ManifestTable {
        &self.manifest
    }

    // -- namespaces ----------------------------------------------------------------------

    /// Add namespace `parts` with `properties`; its parents must exist.
    pub async fn create_namespace(
        &self,
        parts: &[String],
        properties: Option<&[(String, String)]>,
    ) -> Result<()> {
        if parts.is_empty() {
            return Err(refused(Kind::NamespaceAlreadyExists, "root namespace"));
        }
        self.need_manifest("Child namespaces are only supported when manifest mode is enabled")?;
        self.check_parents(parts).await?;
        let oid = object_id(parts);
        let taken = || refused(Kind::NamespaceAlreadyExists, &oid);
        self.manifest
            .insert(&oid, NAMESPACE, None, properties, taken)
            .await
    }

    /// The properties of namespace `parts` (none recorded: None; the root has none).
    pub async fn describe_namespace(&self, parts: &[String]) -> Result<Option<Properties>> {
        if parts.is_empty() {
            return Ok(Some(vec![]));
        }
        let row = self.namespace_row(parts).await?;
        match row.metadata.as_deref() {
            None | Some("") => Ok(None),
            Some(text) => parse_properties(text, self.manifest.uri()).map(Some),
        }
    }

    /// Whether the catalog has a row of id `parts` (the root always exists).
    pub async fn namespace_exists(&self, parts: &[String]) -> Result<()> {
        if parts.is_empty() {
            return Ok(());
        }
        let oid = object_id(parts);
        if !self.manifest_enabled || self.manifest.get(&oid).await?.is_none() {
            return Err(refused(Kind::NamespaceNotFound, oid));
        }
        Ok(())
    }

    /// Remove namespace `parts`, which must hold nothing.
    pub async fn drop_namespace(&self, parts: &[String]) -> Result<()> {
        if parts.is_empty() {
            return Err(refused(
                Kind::InvalidInput,
                "Root namespace cannot be dropped",
            ));
        }
        self.namespace_row(parts).await?;
        let oid = object_id(parts);
        let prefix = format!("{oid}{DELIMITER}");
        let children = self
            .manifest
            .rows(None)
            .await?
            .iter()
            .filter(|r| r.object_id.starts_with(&prefix))
            .count();
        if children > 0 {
            return Err(refused(
                Kind::NamespaceNotEmpty,
                format!("'{oid}' (contains {children} child objects)"),
            ));
        }
        self.manifest.delete(&oid).await
    }

    /// A page of the names of the namespaces directly in `parts`.
    pub async fn list_namespaces(
        &self,
        parts: &[String],
        page_token: Option<&str>,
        limit: Option<i64>,
    ) -> Result<Page> {
        let names = match self.manifest_enabled {
            true => self.children(parts, NAMESPACE).await?,
            false => vec![],
        };
        Ok(paginate(names, page_token, limit))
    }

    // -- tables --------------------------------------------------------------------------

    /// Refuse a table id this namespace cannot hold: an empty one, or one below the root
    /// without a catalog.
    pub fn check_table_id(&self, parts: &[String]) -> Result<()> {
        if parts.is_empty() {
            return Err(refused(Kind::InvalidInput, "Table ID cannot be empty"));
        }
        if parts.len() > 1 && !self.manifest_enabled {
            return Err(refused(
                Kind::Unsupported,
                format!(
                    "Multi-level table IDs are only supported when manifest mode is enabled, \
                     but got: {}",
                    python_list(parts)
                ),
            ));
        }
        Ok(())
    }

    /// A page of the names of the tables directly in `parts`: at the root, those the
    /// listing of the root finds and (without listing, or while migrating) the catalog's.
    pub async fn list_tables(
        &self,
        parts: &[String],
        page_token: Option<&str>,
        limit: Option<i64>,
    ) -> Result<Page> {
        let names = if !parts.is_empty() {
            self.need_manifest("Directory namespace only supports root namespace operations")?;
            self.children(parts, TABLE).await?
        } else {
            let mut names = BTreeSet::new();
            if self.manifest_enabled && (!self.dir_listing || self.migration) {
                names.extend(self.children(&[], TABLE).await?);
            }
            if self.dir_listing {
                names.extend(self.listed_root_tables().await?);
            }
            names.into_iter().collect()
        };
        Ok(paginate(names, page_token, limit))
    }

    /// Write table `parts` from `batches` (of `schema`): in its declared directory when it
    /// was declared and has no version yet, else in a new one, then recorded. `options`
    /// say how (format version, stable row ids, ...); the mode and the store are the
    /// namespace's.
    pub async fn create_table<S>(
        &self,
        parts: &[String],
        schema: SchemaRef,
        batches: S,
        options: WriteOptions,
    ) -> Result<CreatedTable>
    where
        S: Stream<Item = Result<RecordBatch>> + Unpin + Send,
    {
        self.check_table_id(parts)?;
        let name = last(parts);
        let oid = object_id(parts);
        let row = match self.manifest_enabled {
            true => self.manifest.get(&oid).await?,
            false => None,
        };
        let relative = match &row {
            None => self.new_table_dir(parts),
            // A declared table (no version yet) is written where it was declared.
            Some(Entry {
                location: Some(location),
                ..
            }) => {
                if !self.only_declared(&self.uri(location)).await {
                    return Err(refused(Kind::TableAlreadyExists, name));
                }
                location.clone()
            }
            // A row without a directory (a namespace's) holds the id as well.
            Some(_) => return Err(refused(Kind::TableAlreadyExists, name)),
        };
        let options = WriteOptions {
            mode: WriteMode::Create,
            storage_options: self.storage_options.clone(),
            ..options
        };
        // Boxed, as the catalog's own writes (see `manifest.rs`): the writer's future is large.
        let ds = Box::pin(write_dataset(
            &self.uri(&relative),
            schema,
            batches,
            options,
        ))
        .await?;
        if self.manifest_enabled && row.is_none() {
            let taken = || refused(Kind::TableAlreadyExists, name);
            self.manifest
                .insert(&oid, TABLE, Some(&relative), None, taken)
                .await?;
        }
        Ok(CreatedTable {
            location: full_uri(&self.root, &relative)?,
            version: ds.version(),
        })
    }

    /// Reserve table `parts` without data: its directory (where `location`, when given,
    /// must be) gets the reserved marker, and the catalog its row. Returns its location.
    pub async fn declare_table(&self, parts: &[String], location: Option<&str>) -> Result<String> {
        self.check_table_id(parts)?;
        let name = last(parts);
        let oid = object_id(parts);
        let relative = self.new_table_dir(parts);
        let full = full_uri(&self.root, &relative)?;
        if let Some(asked) = location.filter(|l| !l.is_empty()) {
            if asked.trim_end_matches('/') != full {
                return Err(refused(
                    Kind::InvalidInput,
                    format!(
                        "Cannot declare table {name} at location {asked}, must be at location {full}"
                    ),
                ));
            }
        }
        let exists = match self.manifest_enabled {
            true => self.manifest.get(&oid).await?.is_some(),
            false => !self.listing(&relative).await?.1.is_empty(),
        };
        if exists {
            return Err(refused(Kind::TableAlreadyExists, name));
        }
        self.put_marker(&relative, RESERVED).await?;
        if self.manifest_enabled {
            let taken = || refused(Kind::TableAlreadyExists, name);
            self.manifest
                .insert(&oid, TABLE, Some(&relative), None, taken)
                .await?;
        }
        Ok(full)
    }

    /// Where table `parts` is, and (with `check_declared`) whether it is only declared.
    pub async fn describe_table(
        &self,
        parts: &[String],
        check_declared: bool,
    ) -> Result<TableDescription> {
        let location = self.table_location(parts).await?;
        let is_only_declared = match check_declared {
            true => Some(self.only_declared(&location).await),
            false => None,
        };
        Ok(TableDescription {
            location,
            is_only_declared,
        })
    }

    /// The URI of table `parts` (found, not opened): a root table by listing the root
    /// (unless the catalog is asked first), any other by its catalog row.
    pub async fn table_location(&self, parts: &[String]) -> Result<String> {
        self.check_table_id(parts)?;
        if self.root_by_listing(parts) {
            return self.listed_root_table(&parts[0]).await;
        }
        let oid = object_id(parts);
        match self.manifest.get(&oid).await? {
            Some(row) if row.is_table() => full_uri(&self.root, self.location_of(&row)?),
            _ if parts.len() == 1 && self.dir_listing && self.migration => {
                self.listed_root_table(&parts[0]).await
            }
            _ => Err(refused(Kind::TableNotFound, format!("table id '{oid}'"))),
        }
    }

    /// Whether table `parts` exists (by listing, or as any catalog row of its id).
    pub async fn table_exists(&self, parts: &[String]) -> Result<()> {
        self.check_table_id(parts)?;
        if self.root_by_listing(parts) {
            return self.listed_root_table(&parts[0]).await.map(|_| ());
        }
        let oid = object_id(parts);
        match self.manifest.get(&oid).await? {
            Some(_) => Ok(()),
            None => Err(refused(Kind::TableNotFound, format!("table id '{oid}'"))),
        }
    }

    /// Remove table `parts` from the catalog and delete its directory; returns its
    /// location.
    pub async fn drop_table(&self, parts: &[String]) -> Result<String> {
        self.check_table_id(parts)?;
        let name = last(parts);
        let relative = if self.manifest_enabled {
            let oid = object_id(parts);
            let row = match self.manifest.get(&oid).await? {
                Some(row) if row.is_table() => row,
                _ => return Err(refused(Kind::TableNotFound, name)),
            };
            let relative = self.location_of(&row)?.to_string();
            self.manifest.delete(&oid).await?;
            relative
        } else {
            self.listed_root_table(name).await?;
            format!("{name}.lance")
        };
        let table = Storage::open(&self.uri(&relative), &self.storage_options)?;
        table.delete_tree("").await?;
        full_uri(&self.root, &relative)
    }

    /// Record table `parts` at `location`, a path relative to the root (never a URI, an
    /// absolute path or one climbing out of the root). Returns the location.
    pub async fn register_table(&self, parts: &[String], location: &str) -> Result<String> {
        self.check_table_id(parts)?;
        let rule = "Location must be a relative path within the root directory";
        let invalid =
            |what: &str| refused(Kind::InvalidInput, format!("{what}. {rule}: {location}"));
        if location.contains("://") {
            return Err(invalid("Absolute URIs are not allowed for register_table"));
        }
        if location.starts_with('/') {
            return Err(invalid("Absolute paths are not allowed for register_table"));
        }
        if location.contains("..") {
            return Err(invalid("Path traversal is not allowed"));
        }
        if !self.manifest_enabled {
            return Err(refused(
                Kind::Unsupported,
                "register_table is only supported when manifest mode is enabled",
            ));
        }
        self.check_parents(parts).await?;
        let oid = object_id(parts);
        let taken = || refused(Kind::TableAlreadyExists, &oid);
        self.manifest
            .insert(&oid, TABLE, Some(location), None, taken)
            .await?;
        Ok(location.to_string())
    }

    /// Forget table `parts`, keeping its data: its catalog row is removed (without a
    /// catalog, a root table's directory gets the deregistered marker). Returns its
    /// location.
    pub async fn deregister_table(&self, parts: &[String]) -> Result<String> {
        self.check_table_id(parts)?;
        if self.manifest_enabled {
            let oid = object_id(parts);
            let row = match self.manifest.get(&oid).await? {
                Some(row) if row.is_table() => row,
                _ => return Err(refused(Kind::TableNotFound, oid)),
            };
            self.manifest.delete(&oid).await?;
            return full_uri(&self.root, self.location_of(&row)?);
        }
        let name = last(parts);
        let relative = format!("{name}.lance");
        self.listed_root_table(name).await?;
        self.put_marker(&relative, DEREGISTERED).await?;
        full_uri(&self.root, &relative)
    }

    // -- helpers -------------------------------------------------------------------------

    /// The URI of `relative` below the root, as given.
    fn uri(&self, relative: &str) -> String {
        format!("{}/{relative}", self.root)
    }

    fn need_manifest(&self, what: &str) -> Result<()> {
        match self.manifest_enabled {
            true => Ok(()),
            false => Err(refused(Kind::Unsupported, what)),
        }
    }

    /// A table row's directory (always recorded; a row without one is damage).
    fn location_of<'a>(&self, row: &'a Entry) -> Result<&'a str> {
        row.location.as_deref().ok_or_else(|| {
            Error::corrupt(
                self.manifest.uri(),
                format!("the table '{}' has no location", row.object_id),
            )
        })
    }

    async fn namespace_row(&self, parts: &[String]) -> Result<Entry> {
        let oid = object_id(parts);
        let row = match self.manifest_enabled {
            true => self.manifest.get(&oid).await?,
            false => None,
        };
        match row {
            Some(row) if row.is_namespace() => Ok(row),
            _ => Err(refused(Kind::NamespaceNotFound, oid)),
        }
    }

    /// Every namespace above `parts` must exist.
    async fn check_parents(&self, parts: &[String]) -> Result<()> {
        for depth in 1..parts.len() {
            let parent = object_id(&parts[..depth]);
            match self.manifest.get(&parent).await? {
                Some(row) if row.is_namespace() => {}
                _ => {
                    return Err(refused(
                        Kind::NamespaceNotFound,
                        format!("parent namespace '{parent}'"),
                    ))
                }
            }
        }
        Ok(())
    }

    /// The names of the direct children of namespace `parts` of type `kind`.
    async fn children(&self, parts: &[String], kind: &str) -> Result<Vec<String>> {
        let prefix = match parts.is_empty() {
            true => String::new(),
            false => format!("{}{DELIMITER}", object_id(parts)),
        };
        let rows = self.manifest.rows(Some(type_is(kind))).await?;
        Ok(rows
            .into_iter()
            .filter_map(|r| {
                let rest = r.object_id.strip_prefix(&prefix)?;
                (!rest.contains(DELIMITER)).then(|| rest.to_string())
            })
            .collect())
    }

    /// Where a new table `parts` goes: a root table (while root tables are listed, or
    /// without a catalog) in `<name>.lance`, any other in `<8 random hex>_<object id>`.
    fn new_table_dir(&self, parts: &[String]) -> String {
        if parts.len() == 1 && (self.dir_listing || !self.manifest_enabled) {
            return format!("{}.lance", parts[0]);
        }
        // A v4 UUID's first 32 bits are random.
        let bits = (uuid::Uuid::new_v4().as_u128() >> 96) as u32;
        format!("{bits:08x}_{}", object_id(parts))
    }

    /// Whether root table `parts` is looked up by listing the root (pylance's default).
    fn root_by_listing(&self, parts: &[String]) -> bool {
        parts.len() == 1 && (!self.manifest_enabled || (self.dir_listing && !self.migration))
    }

    /// The directories and the names of the files directly in `relative`.
    async fn listing(&self, relative: &str) -> Result<(Vec<String>, Vec<String>)> {
        let root = Storage::open(&self.root, &self.storage_options)?;
        let (dirs, files) = root.list_level(relative).await?;
        Ok((
            dirs,
            files.iter().map(|f| last_part(f).to_string()).collect(),
        ))
    }

    /// The location of root table `name`, found in its directory.
    async fn listed_root_table(&self, name: &str) -> Result<String> {
        let (dirs, files) = self.listing(&format!("{name}.lance")).await?;
        if dirs.is_empty() && files.is_empty() {
            return Err(refused(Kind::TableNotFound, format!("table id '{name}'")));
        }
        if files.iter().any(|f| f == DEREGISTERED) {
            return Err(refused(
                Kind::InvalidTableState,
                format!("Table is deregistered: table id '{name}'"),
            ));
        }
        Ok(self.uri(&format!("{name}.lance")))
    }

    /// The names of the root's `<name>.lance` directories.
    async fn listed_root_tables(&self) -> Result<Vec<String>> {
        let (dirs, _) = self.listing("").await?;
        Ok(dirs
            .iter()
            .filter_map(|d| last_part(d).strip_suffix(".lance"))
            .filter(|name| !name.is_empty())
            .map(str::to_string)
            .collect())
    }

    /// Whether the table at `uri` has no version yet (a declared table's directory).
    async fn only_declared(&self, uri: &str) -> bool {
        let listed = match Storage::open(uri, &self.storage_options) {
            Ok(table) => table.list_level("_versions").await,
            Err(e) => Err(e),
        };
        match listed {
            Ok((_, files)) => files.is_empty(),
            // A listing that fails finds no versions, as one of a missing directory does.
            Err(_) => true,
        }
    }

    /// An empty `marker` file in table directory `relative`.
    async fn put_marker(&self, relative: &str, marker: &str) -> Result<()> {
        let table = Storage::open(&self.uri(relative), &self.storage_options)?;
        table.put(&table.path(marker), bytes::Bytes::new()).await
    }
}

/// The last part of a table id (callers have checked that it has one).
fn last(parts: &[String]) -> &str {
    parts.last().map_or("", String::as_str)
}

/// The last part of a slash-separated path.
fn last_part(path: &str) -> &str {
    let trimmed = path.trim_end_matches('/');
    trimmed.rsplit('/').next().unwrap_or(trimmed)
}

/// A boolean property ("true"/"false" in any case; anything else is the default).
fn is_true(value: Option<&String>, default: bool) -> bool {
    match value.map(|v| v.trim().to_lowercase()).as_deref() {
        Some("true") => true,
        Some("false") => false,
        _ => default,
    }
}

/// The URI of `relative` below `root`, as pylance reports table locations: a local root
/// as a `file://` URL of its absolute path.
pub fn full_uri(root: &str, relative: &str) -> Result<String> {
    let root = match root.contains("://") {
        true => root.to_string(),
        false => format!("file://{}", absolute(root)?),
    };
    Ok(format!("{}/{relative}", root.trim_end_matches('/')))
}

/// A local path made absolute as Python's `os.path.abspath` makes it: joined to the
/// working directory, `.` and `..` resolved by name (links are not followed).
pub(super) fn absolute(path: &str) -> Result<String> {
    let joined = match path.starts_with('/') {
        true => path.to_string(),
        false => {
            let cwd = std::env::current_dir().map_err(|e| Error::io(path, e))?;
            format!("{}/{path}", cwd.to_string_lossy())
        }
    };
    let mut parts: Vec<&str> = vec![];
    for part in joined.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    // POSIX leaves a path's leading `//` (exactly two slashes) as it is; so does Python.
    let lead = match joined.starts_with("//") && !joined.starts_with("///") {
        true => "//",
        false => "/",
    };
    Ok(format!("{lead}{}", parts.join("/")))
}
