//! `_Dataset`: a dataset at one version, as the Python facade sees it. This file holds
//! the class, opening and what a version is (schema, config, storage); the other files
//! of `dataset/` add its methods by concern (each its own `#[pymethods]` block):
//! `scan` (reads, takes, counts), `changes` (deletes, updates, merges, new and altered
//! columns, config), `indices`, `versions` (history, tags, branches, restore, clones) and
//! `maintenance` (compaction, cleanup).

mod changes;
mod indices;
mod maintenance;
mod scan;
mod versions;

use std::collections::HashMap;
use std::sync::Arc;

use lance_core::dataset::{Dataset, VersionRef};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::arrow_export::PyArrowSchema;
use crate::errors::{guard, IntoPyResult};
use crate::runtime::block_on;
use crate::session::PySession;

#[pyclass(name = "_Dataset", module = "lance_core._lance_core", frozen)]
pub struct PyDataset {
    pub(crate) inner: Arc<Dataset>,
}

/// A version given from Python: an int is a version number, a str a tag name, a tuple
/// (branch or None, version or None) a branch's version (None: its latest).
fn version_ref(v: Option<&Bound<'_, PyAny>>) -> PyResult<Option<VersionRef>> {
    let Some(v) = v.filter(|v| !v.is_none()) else {
        return Ok(None);
    };
    if let Ok(tag) = v.extract::<String>() {
        return Ok(Some(VersionRef::Tag(tag)));
    }
    if let Ok((branch, version)) = v.extract::<(Option<String>, Option<Bound<'_, PyAny>>)>() {
        let number = match version_ref(version.as_ref())? {
            Some(VersionRef::Number(n)) => Some(n),
            None => None,
            Some(_) => {
                return Err(crate::errors::raise(
                    v.py(),
                    "InvalidInputError",
                    "a (branch, version) reference takes a version number or None".to_string(),
                ))
            }
        };
        return Ok(Some(VersionRef::Branch(branch, number)));
    }
    // Detached versions use the top bit: a u64 first.
    if let Ok(n) = v.extract::<u64>() {
        return Ok(Some(VersionRef::Number(n)));
    }
    let n: i64 = v.extract()?;
    if n < 0 {
        return Err(crate::errors::raise(
            v.py(),
            "InvalidInputError",
            format!("version must be non-negative, got {n}"),
        ));
    }
    Ok(Some(VersionRef::Number(n as u64)))
}

impl From<Dataset> for PyDataset {
    fn from(ds: Dataset) -> Self {
        PyDataset {
            inner: Arc::new(ds),
        }
    }
}

impl PyDataset {
    /// The table's root store, where tags and branches are recorded.
    fn storage(&self) -> PyResult<lance_core::storage::Storage> {
        self.inner.root_storage().py()
    }
}

/// Run `fut` (an operation that opens or commits a dataset) with the GIL released, and
/// hand Python the dataset it returns.
fn dataset_of<F>(py: Python<'_>, fut: F) -> PyResult<PyDataset>
where
    F: std::future::Future<Output = lance_core::error::Result<Dataset>> + Send,
{
    Ok(PyDataset::from(block_on(py, fut).py()?))
}

#[pymethods]
impl PyDataset {
    #[staticmethod]
    #[pyo3(signature = (uri, version=None, storage_options=None, session=None))]
    fn open(
        py: Python<'_>,
        uri: String,
        version: Option<Bound<'_, PyAny>>,
        storage_options: Option<HashMap<String, String>>,
        session: Option<PyRef<'_, PySession>>,
    ) -> PyResult<Self> {
        guard(|| {
            let version = version_ref(version.as_ref())?;
            let ds = block_on(
                py,
                Dataset::open(&uri, version, storage_options.unwrap_or_default()),
            )
            .py()?;
            let ds = match session {
                Some(s) => ds.with_session(s.inner.clone()),
                None => ds,
            };
            Ok(PyDataset {
                inner: Arc::new(ds),
            })
        })
    }

    /// This version, using `session`'s caches.
    fn with_session(&self, session: PyRef<'_, PySession>) -> Self {
        let ds = (*self.inner).clone().with_session(session.inner.clone());
        PyDataset {
            inner: Arc::new(ds),
        }
    }

    /// The requests made through this dataset's store (shared with the versions reached
    /// from it): (read iops, read bytes, write iops, write bytes); `reset` starts the
    /// counts again from zero.
    fn io_stats(&self, reset: bool) -> (u64, u64, u64, u64) {
        let stats = self.inner.storage().io_stats();
        let c = if reset {
            stats.take()
        } else {
            stats.snapshot()
        };
        (c.read_iops, c.read_bytes, c.write_iops, c.write_bytes)
    }

    /// The session whose caches this dataset uses.
    fn session(&self) -> PySession {
        PySession {
            inner: self.inner.session().clone(),
        }
    }

    /// The Lance file `name` in directory `dir` as a table of one fragment (index files,
    /// standalone files).
    #[staticmethod]
    #[pyo3(signature = (dir, name, storage_options=None))]
    fn open_file(
        py: Python<'_>,
        dir: String,
        name: String,
        storage_options: Option<HashMap<String, String>>,
    ) -> PyResult<Self> {
        guard(|| {
            let options = storage_options.unwrap_or_default();
            dataset_of(py, lance_core::file_table::open(&dir, &name, &options))
        })
    }

    #[getter]
    fn uri(&self) -> String {
        self.inner.uri().to_string()
    }

    #[getter]
    fn version(&self) -> u64 {
        self.inner.version()
    }

    /// Whether rows have stable ids (kept when rows move, as by update or compaction).
    #[getter]
    fn has_stable_row_ids(&self) -> bool {
        self.inner.has_stable_row_ids()
    }

    #[getter]
    fn data_storage_version(&self) -> String {
        self.inner.data_storage_version()
    }

    #[getter]
    fn schema(&self) -> PyArrowSchema {
        PyArrowSchema(self.inner.arrow_schema.clone())
    }

    /// This version's schema with its field ids (`lance_core.schema.LanceSchema`'s bytes).
    fn lance_schema(&self) -> Vec<u8> {
        crate::schema::encode(&self.inner.schema)
    }

    /// This version's schema with the fields of `schema` it lacks added, numbered as a
    /// Merge commit numbers them (what `merge_columns` hands back to commit).
    fn merged_schema(&self, schema: Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
        guard(|| {
            let schema = crate::arrow_import::import_schema(&schema)?;
            let merged = lance_core::write::columns::merged_schema(&self.inner, &schema).py()?;
            Ok(crate::schema::encode(&merged))
        })
    }

    /// The unenforced primary key's columns by dotted path, in key order (empty: none).
    fn primary_key(&self) -> Vec<String> {
        lance_core::table::primary_key::key_paths(&self.inner.schema)
    }

    /// Field ids by dotted field path ("a", "s.x", "l.item").
    fn field_ids(&self) -> Vec<(String, i32)> {
        fn walk(
            f: &lance_core::table::schema::LanceField,
            prefix: &str,
            out: &mut Vec<(String, i32)>,
        ) {
            let name = if prefix.is_empty() {
                f.name.clone()
            } else {
                format!("{prefix}.{}", f.name)
            };
            out.push((name.clone(), f.id));
            for c in &f.children {
                walk(c, &name, out);
            }
        }
        let mut out = vec![];
        for f in &self.inner.schema.fields {
            walk(f, "", &mut out);
        }
        out
    }

    fn latest_version(&self, py: Python<'_>) -> PyResult<u64> {
        guard(|| block_on(py, self.inner.latest_version()).py())
    }

    /// Check the version's fragments, files and indices hold together (`Dataset::validate`),
    /// or only fragment `fragment_id`'s files.
    #[pyo3(signature = (fragment_id=None))]
    fn validate(&self, py: Python<'_>, fragment_id: Option<u64>) -> PyResult<()> {
        guard(|| {
            let Some(id) = fragment_id else {
                return block_on(py, self.inner.validate()).py();
            };
            let ds = &self.inner;
            block_on(py, async move {
                ds.validate_fragment(ds.fragment_or_err(id)?).await
            })
            .py()
        })
    }

    /// Another version (a number or a tag), opened with this one's storage options.
    fn checkout(&self, py: Python<'_>, version: Bound<'_, PyAny>) -> PyResult<Self> {
        guard(|| {
            let Some(version) = version_ref(Some(&version))? else {
                return Ok(PyDataset {
                    inner: self.inner.clone(),
                });
            };
            Ok(PyDataset {
                inner: Arc::new(block_on(py, self.inner.checkout(version)).py()?),
            })
        })
    }

    /// The table's config (the manifest's `config` map).
    fn config(&self) -> HashMap<String, String> {
        self.inner.manifest.config.clone()
    }

    /// The table's metadata (the manifest's `table_metadata` map).
    fn table_metadata(&self) -> HashMap<String, String> {
        self.inner.manifest.table_metadata.clone()
    }

    /// pylance's `DataFile.create`: the data file entry for a Lance file written with
    /// some of the dataset's columns: (path, fields, column indices, major, minor, size,
    /// base id, the file's rows).
    #[allow(clippy::type_complexity)]
    #[pyo3(signature = (path, base_id=None))]
    fn describe_data_file(
        &self,
        py: Python<'_>,
        path: String,
        base_id: Option<u32>,
    ) -> PyResult<(String, Vec<i32>, Vec<i32>, u32, u32, u64, Option<u32>, u64)> {
        guard(|| {
            let ds = self.inner.clone();
            let (f, rows) = block_on(py, async move {
                lance_core::file_table::describe_data_file(&ds, &path, base_id).await
            })
            .py()?;
            Ok((
                f.path,
                f.fields,
                f.column_indices,
                f.file_major_version,
                f.file_minor_version,
                f.file_size_bytes,
                f.base_id,
                rows,
            ))
        })
    }

    fn storage_options(&self) -> HashMap<String, String> {
        self.inner.storage_options().clone()
    }

    /// (top-level field id, bytes its columns take in the data files), in schema order.
    fn field_bytes_on_disk(&self, py: Python<'_>) -> PyResult<Vec<(i32, u64)>> {
        guard(|| {
            block_on(
                py,
                lance_core::dataset::data_stats::field_bytes(&self.inner),
            )
            .py()
        })
    }

    /// The table's base paths by id, as `lance_core.DatasetBasePath` objects (pylance's
    /// `_ds.base_paths()`).
    fn base_paths<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let class = py.import("lance_core.bases")?.getattr("DatasetBasePath")?;
        let out = PyDict::new(py);
        for arg in crate::bases::to_args(&self.inner.manifest.base_paths) {
            out.set_item(arg.0, class.call_method1("_from_arg", (arg,))?)?;
        }
        Ok(out)
    }
}
