//! URI parsing: which object store serves a dataset URI, and where its root is.
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::ObjectStore;
use url::Url;

use crate::error::{Error, Result};

/// Options for the store's builder, as pylance's `storage_options`
/// (e.g. `aws_region`, `aws_endpoint`, `google_service_account`, `azure_storage_account_name`).
pub type StorageOptions = HashMap<String, String>;

/// `memory://` stores live as long as the process, keyed by their host part, so that a
/// dataset written to `memory://x` can be opened again by a later call.
fn memory_store(name: &str) -> Arc<dyn ObjectStore> {
    static STORES: OnceLock<Mutex<HashMap<String, Arc<InMemory>>>> = OnceLock::new();
    let mut map = STORES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    map.entry(name.to_string())
        .or_insert_with(|| Arc::new(InMemory::new()))
        .clone()
}

/// A resolved URI.
#[derive(Debug)]
pub(super) struct Resolved {
    pub store: Arc<dyn ObjectStore>,
    /// The root path in the store.
    pub root: Path,
    /// The URI as shown in messages.
    pub shown: String,
    /// The local file system when the store is one (read directly, not through object_store).
    pub local: Option<Arc<LocalFileSystem>>,
    /// Where a cloud store's requests go, for network errors.
    pub endpoint: Option<String>,
}

/// Resolve `uri` to its store and root.
pub(super) fn resolve(uri: &str, options: &StorageOptions) -> Result<Resolved> {
    let trimmed = uri.trim_end_matches('/');
    if trimmed.is_empty() {
        return Err(Error::invalid("empty dataset URI"));
    }
    // Windows drive letters and plain paths have no usable scheme.
    let parsed = match Url::parse(trimmed) {
        Ok(u) if u.scheme().len() > 1 => Some(u),
        _ => None,
    };
    let Some(url) = parsed else {
        return local(trimmed);
    };
    let remote = |store, root, shown, endpoint| {
        Ok(Resolved {
            store,
            root,
            shown,
            local: None,
            endpoint,
        })
    };
    match url.scheme() {
        "file" => {
            let p = url
                .to_file_path()
                .map_err(|_| Error::invalid(format!("{uri}: not a valid file URI")))?;
            local(&p.to_string_lossy())
        }
        "memory" => {
            let host = url.host_str().unwrap_or("").to_string();
            let root =
                Path::parse(url.path()).map_err(|e| Error::invalid(format!("{uri}: {e}")))?;
            remote(memory_store(&host), root, trimmed.to_string(), None)
        }
        "s3" | "s3a" | "gs" | "az" | "abfs" | "abfss" | "azure" | "http" | "https" => {
            let mut url = url.clone();
            if url.scheme() == "s3a" {
                let _ = url.set_scheme("s3");
            }
            check_plain_http(uri, &url, options)?;
            let (store, root, endpoint) = super::cloud::open(uri, &url, options)?;
            remote(store, root, trimmed.to_string(), endpoint)
        }
        other => Err(Error::invalid(format!(
            "{uri}: unsupported URI scheme '{other}'"
        ))),
    }
}

/// An `http://` endpoint (MinIO, a local S3) needs `allow_http`; without it the store's
/// client fails with a bare "builder error", so say what to do instead.
fn check_plain_http(uri: &str, url: &Url, options: &StorageOptions) -> Result<()> {
    let allowed = options.iter().any(|(k, v)| {
        k.to_ascii_lowercase().ends_with("allow_http") && v.eq_ignore_ascii_case("true")
    });
    if allowed {
        return Ok(());
    }
    let endpoint = options
        .iter()
        .find(|(k, v)| {
            let k = k.to_ascii_lowercase();
            (k.ends_with("endpoint") || k.ends_with("endpoint_url"))
                && v.to_ascii_lowercase().starts_with("http://")
        })
        .map(|(_, v)| v.as_str())
        .or((url.scheme() == "http").then_some(uri));
    match endpoint {
        Some(e) => Err(Error::invalid(format!(
            "{uri}: the endpoint {e} uses plain http://; set the storage option \
             allow_http to \"true\" to allow unencrypted connections"
        ))),
        None => Ok(()),
    }
}

fn local(path: &str) -> Result<Resolved> {
    // `~` and `~/...` are the user's home, as in pylance (and the shell).
    let expanded = match path.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => {
            let home = std::env::var_os("HOME").ok_or_else(|| {
                Error::invalid(format!("{path}: cannot expand '~': HOME is not set"))
            })?;
            format!("{}{rest}", home.to_string_lossy())
        }
        _ => path.to_string(),
    };
    let p = std::path::Path::new(&expanded);
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(|e| Error::io(path, e))?
            .join(p)
    };
    let abs = normalize(&abs);
    let root =
        Path::from_absolute_path(&abs).map_err(|e| Error::invalid(format!("{path}: {e}")))?;
    let fs = Arc::new(LocalFileSystem::new());
    Ok(Resolved {
        store: fs.clone(),
        root,
        shown: abs.to_string_lossy().into_owned(),
        local: Some(fs),
        endpoint: None,
    })
}

/// Remove `.` and `..` components without touching the file system (the path may not exist yet).
fn normalize(p: &std::path::Path) -> std::path::PathBuf {
    use std::path::Component;
    let mut out = std::path::PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_paths_resolve_to_absolute_roots() {
        let r = resolve("/tmp/x/../y/ds.lance/", &StorageOptions::new()).unwrap();
        assert_eq!(r.root.as_ref(), "tmp/y/ds.lance");
        assert_eq!(r.shown, "/tmp/y/ds.lance");
        let r2 = resolve("file:///tmp/y/ds.lance", &StorageOptions::new()).unwrap();
        assert_eq!(r.root, r2.root);
    }

    #[test]
    fn tilde_is_the_home_directory() {
        let home = std::env::var("HOME").unwrap();
        let shown = resolve("~/t.lance", &StorageOptions::new()).unwrap().shown;
        assert_eq!(shown, format!("{}/t.lance", home.trim_end_matches('/')));
        let kept = resolve("/tmp/~x", &StorageOptions::new()).unwrap().shown;
        assert_eq!(kept, "/tmp/~x");
    }

    #[test]
    fn memory_stores_are_shared_by_name() {
        let a = resolve("memory://bucket/ds", &StorageOptions::new()).unwrap();
        let b = resolve("memory://bucket/other", &StorageOptions::new()).unwrap();
        assert!(Arc::ptr_eq(&a.store, &b.store));
        assert_eq!(a.root.as_ref(), "ds");
    }

    #[test]
    fn plain_http_endpoints_need_allow_http() {
        let mut opts = StorageOptions::new();
        opts.insert("aws_endpoint".into(), "http://127.0.0.1:9000".into());
        let err = resolve("s3://b/ds", &opts).unwrap_err().to_string();
        assert!(err.contains("allow_http"), "{err}");
        opts.insert("allow_http".into(), "true".into());
        assert!(resolve("s3://b/ds", &opts).is_ok());
    }

    #[test]
    fn unknown_schemes_are_refused() {
        let err = resolve("ftp://host/ds", &StorageOptions::new()).unwrap_err();
        assert!(err.to_string().contains("unsupported URI scheme"), "{err}");
    }
}
