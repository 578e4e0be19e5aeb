//! Changing the table's config and metadata maps (pylance's `update_config`,
//! `update_metadata`, `update_schema_metadata`, `update_field_metadata`): one version
//! per call, an `UpdateConfig` transaction, retried after a concurrent change of other keys.
use super::commit::{commit_schema_change, with_conflict_retries};
use crate::dataset::Dataset;
use crate::error::Result;
use crate::proto::table::transaction::UpdateConfig;
use crate::table::config::update_map;
use crate::table::transaction::Operation;

/// Keys of one map set (Some) or removed (None), after clearing it when `replace`.
#[derive(Clone, Debug, Default)]
pub struct MapChange {
    pub values: Vec<(String, Option<String>)>,
    pub replace: bool,
}

/// What one call changes: each map, fields by dotted path.
#[derive(Clone, Debug, Default)]
pub struct ConfigChange {
    pub config: Option<MapChange>,
    pub table_metadata: Option<MapChange>,
    pub schema_metadata: Option<MapChange>,
    pub fields: Vec<(String, MapChange)>,
}

/// Commit `change` to `ds`; the new version.
pub async fn update_config(ds: &Dataset, change: &ConfigChange, retries: u32) -> Result<Dataset> {
    let map = |c: &MapChange| update_map(c.values.clone(), c.replace);
    let mut u = UpdateConfig {
        config_updates: change.config.as_ref().map(map),
        table_metadata_updates: change.table_metadata.as_ref().map(map),
        schema_metadata_updates: change.schema_metadata.as_ref().map(map),
        ..Default::default()
    };
    for (path, c) in &change.fields {
        let id = super::project::field_id(&ds.manifest.fields, ds, path)?;
        u.field_metadata_updates.insert(id, map(c));
    }
    let op = Operation::UpdateConfig(u);
    with_conflict_retries(ds, retries, |ds| {
        let op = op.clone();
        async move { commit_schema_change(&ds, op).await }
    })
    .await
}
