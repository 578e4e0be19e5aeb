//! `_Dataset`'s versions: the history, tags and branches, restore and clones.

use std::collections::HashMap;

use lance_core::dataset::VersionRef;
use pyo3::prelude::*;

use super::{dataset_of, version_ref, PyDataset};
use crate::errors::{guard, IntoPyResult};
use crate::runtime::block_on;

/// (version, commit time in ns since the epoch, summary)
type VersionRow = (u64, i64, HashMap<String, String>);

#[pymethods]
impl PyDataset {
    /// [(version, timestamp in ns since the epoch, summary metadata)]
    fn versions(&self, py: Python<'_>) -> PyResult<Vec<VersionRow>> {
        guard(|| {
            let v = block_on(py, self.inner.versions()).py()?;
            Ok(v.into_iter()
                .map(|v| {
                    (
                        v.version,
                        v.timestamp_nanos,
                        v.metadata.into_iter().collect(),
                    )
                })
                .collect())
        })
    }

    /// The versions of this line, from a listing alone (no manifest is read).
    fn version_numbers(&self, py: Python<'_>) -> PyResult<Vec<u64>> {
        guard(|| block_on(py, self.inner.version_numbers()).py())
    }

    /// This version as one row of `versions()`, from the manifest already loaded.
    fn current_version(&self) -> VersionRow {
        let v = self.inner.version_info();
        (
            v.version,
            v.timestamp_nanos,
            v.metadata.into_iter().collect(),
        )
    }

    /// Delete the rows matching `predicate`; returns the dataset at the new version.
    /// Commit this version as the newest (pylance's `restore`); returns the new version.
    fn restore(&self, py: Python<'_>) -> PyResult<Self> {
        guard(|| {
            Ok(PyDataset::from(
                block_on(py, lance_core::write::restore(&self.inner)).py()?,
            ))
        })
    }

    /// A new table at `target` made from this version: shallow (referring to this
    /// table's files) or deep (with copies of them). Returns the clone.
    #[pyo3(signature = (target, shallow, storage_options=None, transaction_properties=None))]
    fn clone_to(
        &self,
        py: Python<'_>,
        target: String,
        shallow: bool,
        storage_options: Option<HashMap<String, String>>,
        transaction_properties: Option<HashMap<String, String>>,
    ) -> PyResult<Self> {
        guard(|| {
            let options = storage_options.unwrap_or_else(|| self.inner.storage_options().clone());
            let clone = lance_core::write::clone::clone_dataset(
                &self.inner,
                &target,
                shallow,
                options,
                transaction_properties.unwrap_or_default(),
            );
            Ok(PyDataset::from(block_on(py, clone).py()?))
        })
    }

    /// Create branch `name` from `reference` (see `version_ref`; None: this version) and
    /// open it.
    #[pyo3(signature = (name, reference=None, transaction_properties=None))]
    fn create_branch(
        &self,
        py: Python<'_>,
        name: String,
        reference: Option<Bound<'_, PyAny>>,
        transaction_properties: Option<HashMap<String, String>>,
    ) -> PyResult<Self> {
        guard(|| {
            let from = version_ref(reference.as_ref())?.unwrap_or_else(|| {
                let branch = self.inner.branch().map(str::to_string);
                VersionRef::Branch(branch, Some(self.inner.version()))
            });
            let ds = self.inner.clone();
            let props = transaction_properties.unwrap_or_default();
            dataset_of(py, async move {
                lance_core::write::clone::create_branch(&ds, &name, from, props).await
            })
        })
    }

    /// The branch this version is on (None: main).
    #[getter]
    fn branch(&self) -> Option<String> {
        self.inner.branch().map(str::to_string)
    }

    /// Branches: (name, parent branch, lineage, parent version, created (unix s),
    /// manifest size, metadata).
    #[allow(clippy::type_complexity)]
    fn branch_list(
        &self,
        py: Python<'_>,
    ) -> PyResult<
        Vec<(
            String,
            Option<String>,
            Vec<(u64, String)>,
            u64,
            u64,
            u64,
            Vec<(String, String)>,
        )>,
    > {
        guard(|| {
            let root = self.storage()?;
            let all = block_on(py, lance_core::table::branches::list_branches(&root)).py()?;
            Ok(all
                .into_iter()
                .map(|(name, c)| {
                    (
                        name,
                        c.parent_branch,
                        c.identifier.version_mapping,
                        c.parent_version,
                        c.create_at,
                        c.manifest_size,
                        c.metadata.into_iter().collect(),
                    )
                })
                .collect())
        })
    }

    /// Delete branch `name` (refused while branches made from it exist).
    fn branch_delete(&self, py: Python<'_>, name: String) -> PyResult<()> {
        guard(|| {
            let root = self.storage()?;
            block_on(py, async move {
                lance_core::table::branches::delete_branch(&root, &name).await
            })
            .py()
        })
    }

    /// Tags: name → (branch, version, created at, updated at, manifest size).
    #[allow(clippy::type_complexity)]
    fn tag_list(
        &self,
        py: Python<'_>,
    ) -> PyResult<
        Vec<(
            String,
            Option<String>,
            u64,
            Option<String>,
            Option<String>,
            Option<u64>,
            Vec<(String, String)>,
        )>,
    > {
        guard(|| {
            let storage = self.storage()?;
            let tags = block_on(py, lance_core::table::tags::list_tags(&storage)).py()?;
            Ok(tags
                .into_iter()
                .map(|(n, t)| {
                    (
                        n,
                        t.branch,
                        t.version,
                        t.created_at,
                        t.updated_at,
                        t.manifest_size,
                        t.metadata.into_iter().collect(),
                    )
                })
                .collect())
        })
    }

    /// Create (`update=false`) or move (`update=true`) tag `name` to `branch`'s (None:
    /// main's) `version`.
    #[pyo3(signature = (name, branch, version, update))]
    fn tag_set(
        &self,
        py: Python<'_>,
        name: String,
        branch: Option<String>,
        version: u64,
        update: bool,
    ) -> PyResult<()> {
        use lance_core::table::tags::{create_tag, update_tag};
        guard(|| {
            let storage = self.storage()?;
            block_on(py, async move {
                let branch = branch.as_deref();
                match update {
                    true => update_tag(&storage, &name, branch, version).await,
                    false => create_tag(&storage, &name, branch, version).await,
                }
            })
            .py()
        })
    }

    fn tag_delete(&self, py: Python<'_>, name: String) -> PyResult<()> {
        guard(|| {
            let storage = self.storage()?;
            block_on(py, async move {
                lance_core::table::tags::delete_tag(&storage, &name).await
            })
            .py()
        })
    }
}
