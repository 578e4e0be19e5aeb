//! The namespace a catalog's properties name: `impl` `dir` (the default; pylance's
//! `DirectoryNamespace`) or `rest` (a REST server, `RestNamespace`), with the operations a
//! catalog runs on either.
use std::collections::HashMap;

use arrow_schema::SchemaRef;

use super::directory::DirectoryNamespace;
use super::rest::RestNamespace;
use super::{Page, Properties};
use crate::dataset::Dataset;
use crate::error::{Error, NamespaceErrorKind as Kind, Result};
use crate::storage::StorageOptions;
use crate::write::{write_dataset, WriteMode, WriteOptions};

pub enum Namespace {
    Directory(DirectoryNamespace),
    Rest(RestNamespace),
}

/// Where a table is, and the options of its store.
pub struct TableLocation {
    pub location: String,
    pub storage_options: StorageOptions,
}

impl Namespace {
    /// The namespace of `properties`: `impl` is `dir` (or `directory`, or absent) or `rest`;
    /// the others are that implementation's.
    pub fn from_properties(properties: &HashMap<String, String>) -> Result<Self> {
        match properties
            .get("impl")
            .map(|s| s.trim().to_ascii_lowercase())
            .as_deref()
        {
            None | Some("") | Some("dir") | Some("directory") => {
                DirectoryNamespace::from_properties(properties).map(Namespace::Directory)
            }
            Some("rest") => RestNamespace::from_properties(properties).map(Namespace::Rest),
            Some(other) => Err(Error::invalid(format!(
                "namespace impl '{other}' is not known (dir or rest)"
            ))),
        }
    }

    /// The options of the stores the tables are in (the catalog's `storage.<key>`).
    pub fn storage_options(&self) -> &StorageOptions {
        match self {
            Namespace::Directory(ns) => ns.storage_options(),
            Namespace::Rest(ns) => ns.storage_options(),
        }
    }

    pub async fn create_namespace(
        &self,
        parts: &[String],
        properties: Option<&[(String, String)]>,
    ) -> Result<()> {
        match self {
            Namespace::Directory(ns) => ns.create_namespace(parts, properties).await,
            Namespace::Rest(ns) => ns.create_namespace(parts, properties).await,
        }
    }

    /// The properties of namespace `parts`, which must exist.
    pub async fn describe_namespace(&self, parts: &[String]) -> Result<Properties> {
        match self {
            Namespace::Directory(ns) => {
                ns.namespace_exists(parts).await?;
                Ok(ns.describe_namespace(parts).await?.unwrap_or_default())
            }
            Namespace::Rest(ns) => ns.describe_namespace(parts).await,
        }
    }

    pub async fn drop_namespace(&self, parts: &[String]) -> Result<()> {
        match self {
            Namespace::Directory(ns) => ns.drop_namespace(parts).await,
            Namespace::Rest(ns) => ns.drop_namespace(parts).await,
        }
    }

    pub async fn list_namespaces(&self, parts: &[String]) -> Result<Page> {
        match self {
            Namespace::Directory(ns) => ns.list_namespaces(parts, None, None).await,
            Namespace::Rest(ns) => ns.list_namespaces(parts).await,
        }
    }

    pub async fn list_tables(&self, parts: &[String]) -> Result<Page> {
        match self {
            Namespace::Directory(ns) => ns.list_tables(parts, None, None).await,
            Namespace::Rest(ns) => ns.list_tables(parts).await,
        }
    }

    /// Where table `parts` is. An id of one part that is a path or URI (it holds a `/`, as
    /// in lance-spark's ``lance.`/data/t.lance` ``) is the table there, outside the catalog.
    pub async fn table_location(&self, parts: &[String]) -> Result<TableLocation> {
        if let [path] = parts {
            if path.contains('/') {
                return Ok(TableLocation {
                    location: path.clone(),
                    storage_options: self.storage_options().clone(),
                });
            }
        }
        match self {
            Namespace::Directory(ns) => Ok(TableLocation {
                location: ns.table_location(parts).await?,
                storage_options: ns.storage_options().clone(),
            }),
            Namespace::Rest(ns) => {
                let t = ns.describe_table(parts).await?;
                Ok(TableLocation {
                    location: t.location,
                    storage_options: t.storage_options,
                })
            }
        }
    }

    /// Create table `parts` without rows, with `schema` and `options` (format version,
    /// stable row ids, ...). A REST server declares it, and it is written where the server
    /// put it. Returns its location.
    pub async fn create_table(
        &self,
        parts: &[String],
        schema: SchemaRef,
        options: WriteOptions,
    ) -> Result<String> {
        let nothing = futures::stream::empty();
        match self {
            Namespace::Directory(ns) => Ok(ns
                .create_table(parts, schema, nothing, options)
                .await?
                .location),
            Namespace::Rest(ns) => {
                let mut declared_here = true;
                let location = match ns.declare_table(parts).await {
                    Ok(location) => location,
                    // Declared already (a CTAS declares first): written there, unless a
                    // version is there too.
                    Err(
                        taken @ Error::Namespace {
                            kind: Kind::TableAlreadyExists,
                            ..
                        },
                    ) => {
                        let table = ns.describe_table(parts).await?;
                        let opened =
                            Dataset::open(&table.location, None, table.storage_options).await;
                        if opened.is_ok() {
                            return Err(taken);
                        }
                        declared_here = false;
                        table.location
                    }
                    Err(e) => return Err(e),
                };
                let options = WriteOptions {
                    mode: WriteMode::Create,
                    storage_options: ns.storage_options().clone(),
                    ..options
                };
                match Box::pin(write_dataset(&location, schema, nothing, options)).await {
                    Ok(_) => Ok(location),
                    Err(e) => {
                        // Nothing was written: the table this call declared goes again.
                        if declared_here {
                            let _ = ns.drop_table(parts).await;
                        }
                        Err(e)
                    }
                }
            }
        }
    }

    pub async fn declare_table(&self, parts: &[String]) -> Result<String> {
        match self {
            Namespace::Directory(ns) => ns.declare_table(parts, None).await,
            Namespace::Rest(ns) => ns.declare_table(parts).await,
        }
    }

    pub async fn drop_table(&self, parts: &[String]) -> Result<String> {
        match self {
            Namespace::Directory(ns) => ns.drop_table(parts).await,
            Namespace::Rest(ns) => ns.drop_table(parts).await,
        }
    }

    pub async fn deregister_table(&self, parts: &[String]) -> Result<String> {
        match self {
            Namespace::Directory(ns) => ns.deregister_table(parts).await,
            Namespace::Rest(ns) => ns.deregister_table(parts).await,
        }
    }
}
