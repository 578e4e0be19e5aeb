//! `_DirectoryNamespace`: the core's directory catalog (`lance_core::namespace`) for
//! `lance_core.namespace.DirectoryNamespace`, which keeps the protocol's requests and
//! responses and the data operations. Ids come as lists of strings; a catalog's refusals
//! are raised as `lance_namespace.errors` classes (see `errors.rs`).
use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::RecordBatchReader;
use lance_core::namespace::{paginate, DirectoryNamespace, Page};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::{guard, IntoPyResult};
use crate::runtime::block_on;

/// A page of names and the next page's token.
type PyPage = (Vec<String>, Option<String>);

fn page(p: Page) -> PyPage {
    (p.names, p.page_token)
}

#[pyclass(name = "_DirectoryNamespace", frozen)]
pub struct PyDirectoryNamespace {
    inner: Arc<DirectoryNamespace>,
}

#[pymethods]
impl PyDirectoryNamespace {
    /// A catalog from pylance's properties (strings).
    #[new]
    fn new(properties: HashMap<String, String>) -> PyResult<Self> {
        guard(|| {
            let inner = DirectoryNamespace::from_properties(&properties).py()?;
            Ok(PyDirectoryNamespace {
                inner: Arc::new(inner),
            })
        })
    }

    #[getter]
    fn root(&self) -> String {
        self.inner.root().to_string()
    }

    /// The store's options (None when there are none).
    #[getter]
    fn storage_options(&self) -> Option<HashMap<String, String>> {
        let options = self.inner.storage_options();
        (!options.is_empty()).then(|| options.clone())
    }

    #[getter]
    fn vended_storage_options(&self) -> Option<HashMap<String, String>> {
        self.inner.vended_storage_options().cloned()
    }

    #[getter]
    fn managed_versioning(&self) -> Option<bool> {
        self.inner.managed_versioning()
    }

    fn check_table_id(&self, id: Vec<String>) -> PyResult<()> {
        guard(|| self.inner.check_table_id(&id).py())
    }

    #[pyo3(signature = (id, properties=None))]
    fn create_namespace(
        &self,
        py: Python<'_>,
        id: Vec<String>,
        properties: Option<Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        guard(|| {
            // Kept in the order given (the catalog stores them as a JSON object).
            let properties = match properties {
                Some(d) => Some(
                    d.iter()
                        .map(|(k, v)| Ok((k.extract::<String>()?, v.extract::<String>()?)))
                        .collect::<PyResult<Vec<(String, String)>>>()?,
                ),
                None => None,
            };
            let ns = self.inner.clone();
            block_on(py, async move {
                ns.create_namespace(&id, properties.as_deref()).await
            })
            .py()
        })
    }

    /// The namespace's properties as a dict (None when it has none recorded).
    fn describe_namespace<'py>(
        &self,
        py: Python<'py>,
        id: Vec<String>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        guard(|| {
            let ns = self.inner.clone();
            let found = block_on(py, async move { ns.describe_namespace(&id).await }).py()?;
            let Some(properties) = found else {
                return Ok(None);
            };
            let out = PyDict::new(py);
            for (k, v) in properties {
                out.set_item(k, v)?;
            }
            Ok(Some(out))
        })
    }

    fn namespace_exists(&self, py: Python<'_>, id: Vec<String>) -> PyResult<()> {
        guard(|| {
            let ns = self.inner.clone();
            block_on(py, async move { ns.namespace_exists(&id).await }).py()
        })
    }

    fn drop_namespace(&self, py: Python<'_>, id: Vec<String>) -> PyResult<()> {
        guard(|| {
            let ns = self.inner.clone();
            block_on(py, async move { ns.drop_namespace(&id).await }).py()
        })
    }

    #[pyo3(signature = (id, page_token=None, limit=None))]
    fn list_namespaces(
        &self,
        py: Python<'_>,
        id: Vec<String>,
        page_token: Option<String>,
        limit: Option<i64>,
    ) -> PyResult<PyPage> {
        guard(|| {
            let ns = self.inner.clone();
            let listed = block_on(py, async move {
                ns.list_namespaces(&id, page_token.as_deref(), limit).await
            });
            listed.map(page).py()
        })
    }

    #[pyo3(signature = (id, page_token=None, limit=None))]
    fn list_tables(
        &self,
        py: Python<'_>,
        id: Vec<String>,
        page_token: Option<String>,
        limit: Option<i64>,
    ) -> PyResult<PyPage> {
        guard(|| {
            let ns = self.inner.clone();
            let listed = block_on(py, async move {
                ns.list_tables(&id, page_token.as_deref(), limit).await
            });
            listed.map(page).py()
        })
    }

    /// Write table `id` from `data` (an object with `__arrow_c_stream__`, read batch by
    /// batch with the GIL released): its location and version.
    fn create_table(
        &self,
        py: Python<'_>,
        id: Vec<String>,
        data: Bound<'_, PyAny>,
    ) -> PyResult<(String, u64)> {
        guard(|| {
            let reader = crate::arrow_import::import_stream(&data)?;
            let schema = reader.schema();
            let batches = crate::arrow_import::batch_stream(reader);
            let ns = self.inner.clone();
            let created = block_on(py, async move {
                ns.create_table(&id, schema, batches, Default::default())
                    .await
            })
            .py()?;
            Ok((created.location, created.version))
        })
    }

    #[pyo3(signature = (id, location=None))]
    fn declare_table(
        &self,
        py: Python<'_>,
        id: Vec<String>,
        location: Option<String>,
    ) -> PyResult<String> {
        guard(|| {
            let ns = self.inner.clone();
            block_on(py, async move {
                ns.declare_table(&id, location.as_deref()).await
            })
            .py()
        })
    }

    /// The table's location and, when `check_declared`, whether it is only declared.
    #[pyo3(signature = (id, check_declared=false))]
    fn describe_table(
        &self,
        py: Python<'_>,
        id: Vec<String>,
        check_declared: bool,
    ) -> PyResult<(String, Option<bool>)> {
        guard(|| {
            let ns = self.inner.clone();
            let d = block_on(
                py,
                async move { ns.describe_table(&id, check_declared).await },
            )
            .py()?;
            Ok((d.location, d.is_only_declared))
        })
    }

    fn table_location(&self, py: Python<'_>, id: Vec<String>) -> PyResult<String> {
        guard(|| {
            let ns = self.inner.clone();
            block_on(py, async move { ns.table_location(&id).await }).py()
        })
    }

    fn table_exists(&self, py: Python<'_>, id: Vec<String>) -> PyResult<()> {
        guard(|| {
            let ns = self.inner.clone();
            block_on(py, async move { ns.table_exists(&id).await }).py()
        })
    }

    fn drop_table(&self, py: Python<'_>, id: Vec<String>) -> PyResult<String> {
        guard(|| {
            let ns = self.inner.clone();
            block_on(py, async move { ns.drop_table(&id).await }).py()
        })
    }

    fn register_table(
        &self,
        py: Python<'_>,
        id: Vec<String>,
        location: String,
    ) -> PyResult<String> {
        guard(|| {
            let ns = self.inner.clone();
            block_on(py, async move { ns.register_table(&id, &location).await }).py()
        })
    }

    fn deregister_table(&self, py: Python<'_>, id: Vec<String>) -> PyResult<String> {
        guard(|| {
            let ns = self.inner.clone();
            block_on(py, async move { ns.deregister_table(&id).await }).py()
        })
    }
}

/// A page of `names`, sorted, as a namespace lists them (the catalog's rule, for the
/// listings Python makes itself).
#[pyfunction]
#[pyo3(signature = (names, page_token=None, limit=None))]
pub fn _namespace_page(
    names: Vec<String>,
    page_token: Option<String>,
    limit: Option<i64>,
) -> PyPage {
    page(paginate(names, page_token.as_deref(), limit))
}
