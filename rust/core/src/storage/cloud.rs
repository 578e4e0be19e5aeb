//! Cloud object stores (S3, GCS, Azure) from a URI and storage options.
//!
//! Each store starts from its provider's environment variables (`AWS_*`, `GOOGLE_*`,
//! `AZURE_*`, as the providers' own tools read them); storage options override them.
//! Options object_store does not know are left to the layers that do (pylance's
//! dataset-level options pass through unharmed), except the retry settings read here:
//!
//! - `client_max_retries`: retries of a failed request (default 10);
//! - `client_retry_timeout`: seconds after the first attempt past which no retry starts
//!   (default 180);
//! - `client_backoff_initial_ms`, `client_backoff_max_ms`, `client_backoff_base`: the wait
//!   before the first retry (default 100 ms), its cap (15 000 ms), and the factor each
//!   later wait may grow by (2; each wait is drawn at random up to that, so that writers
//!   throttled together do not retry together).
//!
//! Throttling (`429`, `503 SlowDown`), server errors and dropped connections are retried
//! so, reads and writes alike; a conditional write whose answer was lost is settled by
//! reading it back (`Storage::create`), never by writing again blindly.
//! - `connect_timeout`, `timeout`: object_store's (defaults 5 s and 30 s).
//!
//! On S3, a store with no credentials asks the instance metadata service, which is not on
//! this machine but on the network; `AWS_EC2_METADATA_DISABLED=true` (as the AWS SDKs
//! read it) turns that into an error naming what to give instead.
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
use object_store::path::Path;
use object_store::{BackoffConfig, ObjectStore, ObjectStoreScheme, RetryConfig};
use url::Url;

use super::StorageOptions;
use crate::error::{Error, Result};

pub const DEFAULT_MAX_RETRIES: usize = 10;
pub const DEFAULT_RETRY_TIMEOUT_SECS: u64 = 180;

/// The store for a cloud `url` (the user wrote `uri`), the root path in it, and where its
/// requests go.
pub fn open(
    uri: &str,
    url: &Url,
    options: &StorageOptions,
) -> Result<(Arc<dyn ObjectStore>, Path, Option<String>)> {
    install_tls_provider();
    let retry = retry_config(uri, options)?;
    let built =
        |e: object_store::Error| Error::invalid(format!("{uri}: cannot open object store: {e}"));
    let (scheme, root) = ObjectStoreScheme::parse(url)
        .map_err(|e| Error::invalid(format!("{uri}: not an object store URL: {e}")))?;
    let (store, endpoint): (Arc<dyn ObjectStore>, Option<String>) = match scheme {
        ObjectStoreScheme::AmazonS3 => {
            let mut b = AmazonS3Builder::from_env().with_url(url.as_str());
            for (k, v) in known::<AmazonS3ConfigKey>(options) {
                b = b.with_config(k, v);
            }
            check_s3_credentials(uri, &b, metadata_disabled())?;
            let endpoint = b
                .get_config_value(&AmazonS3ConfigKey::Endpoint)
                .or_else(|| {
                    let region = b.get_config_value(&AmazonS3ConfigKey::Region);
                    Some(format!(
                        "https://s3.{}.amazonaws.com",
                        region.as_deref().unwrap_or("us-east-1")
                    ))
                });
            let store = b.with_retry(retry).build().map_err(built)?;
            (Arc::new(store), endpoint)
        }
        ObjectStoreScheme::GoogleCloudStorage => {
            let mut b = GoogleCloudStorageBuilder::from_env().with_url(url.as_str());
            for (k, v) in known::<GoogleConfigKey>(options) {
                b = b.with_config(k, v);
            }
            let store = b.with_retry(retry).build().map_err(built)?;
            (
                Arc::new(store),
                Some("https://storage.googleapis.com".into()),
            )
        }
        ObjectStoreScheme::MicrosoftAzure => {
            let mut b = MicrosoftAzureBuilder::from_env().with_url(url.as_str());
            for (k, v) in known::<AzureConfigKey>(options) {
                b = b.with_config(k, v);
            }
            let endpoint = b.get_config_value(&AzureConfigKey::Endpoint).or_else(|| {
                let account = b.get_config_value(&AzureConfigKey::AccountName)?;
                Some(format!("https://{account}.blob.core.windows.net"))
            });
            let store = b.with_retry(retry).build().map_err(built)?;
            (Arc::new(store), endpoint)
        }
        _ => {
            let (store, root) = object_store::parse_url_opts(url, options.iter()).map_err(built)?;
            let endpoint = Some(url[..url::Position::BeforePath].to_string());
            return Ok((Arc::from(store), root, endpoint));
        }
    };
    Ok((store, root, endpoint))
}

/// rustls, under every cloud client, needs a process-wide cryptography provider when more
/// than one could be compiled in; ours is ring. A provider the host process installed
/// first (another library in the same Python or JVM) is kept.
pub(crate) fn install_tls_provider() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The options a builder knows, by its config key (case does not matter).
fn known<K: FromStr>(options: &StorageOptions) -> Vec<(K, String)> {
    options
        .iter()
        .filter_map(|(k, v)| Some((k.to_ascii_lowercase().parse().ok()?, v.clone())))
        .collect()
}

fn retry_config(uri: &str, options: &StorageOptions) -> Result<RetryConfig> {
    let number = |key: &str| -> Result<Option<u64>> {
        let Some((_, v)) = options.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)) else {
            return Ok(None);
        };
        v.trim().parse().map(Some).map_err(|_| {
            Error::invalid(format!(
                "{uri}: storage option {key} must be a whole number, got {v:?}"
            ))
        })
    };
    let defaults = BackoffConfig::default();
    let millis = |key: &str, default: Duration| -> Result<Duration> {
        Ok(number(key)?.map_or(default, Duration::from_millis))
    };
    let base = match options
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("client_backoff_base"))
    {
        None => defaults.base,
        Some((_, v)) => match v.trim().parse::<f64>() {
            Ok(b) if b >= 1.0 && b.is_finite() => b,
            _ => {
                return Err(Error::invalid(format!(
                    "{uri}: storage option client_backoff_base must be a number of at least \
                     1, got {v:?}"
                )))
            }
        },
    };
    Ok(RetryConfig {
        max_retries: number("client_max_retries")?.map_or(DEFAULT_MAX_RETRIES, |n| n as usize),
        retry_timeout: Duration::from_secs(
            number("client_retry_timeout")?.unwrap_or(DEFAULT_RETRY_TIMEOUT_SECS),
        ),
        backoff: BackoffConfig {
            init_backoff: millis("client_backoff_initial_ms", defaults.init_backoff)?,
            max_backoff: millis("client_backoff_max_ms", defaults.max_backoff)?,
            base,
        },
    })
}

/// Whether `AWS_EC2_METADATA_DISABLED` forbids the instance metadata service.
fn metadata_disabled() -> bool {
    std::env::var("AWS_EC2_METADATA_DISABLED").is_ok_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// Refuse a store that would fall back to the instance metadata service for its
/// credentials when that service is disabled.
fn check_s3_credentials(uri: &str, b: &AmazonS3Builder, metadata_disabled: bool) -> Result<()> {
    let given = |k: AmazonS3ConfigKey| b.get_config_value(&k).is_some_and(|v| !v.is_empty());
    let has_credentials = given(AmazonS3ConfigKey::AccessKeyId)
        || given(AmazonS3ConfigKey::WebIdentityTokenFile)
        || given(AmazonS3ConfigKey::ContainerCredentialsRelativeUri)
        || given(AmazonS3ConfigKey::ContainerCredentialsFullUri)
        || b.get_config_value(&AmazonS3ConfigKey::SkipSignature)
            .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    if metadata_disabled && !has_credentials {
        return Err(Error::invalid(format!(
            "{uri}: no S3 credentials: give the storage options aws_access_key_id and \
             aws_secret_access_key (or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY); \
             AWS_EC2_METADATA_DISABLED=true forbids asking the instance metadata service"
        )));
    }
    Ok(())
}

/// What went wrong on the network, in words a user can act on, when `e` is a request
/// that never got an answer: connection refused, a name that does not resolve, a
/// timeout, a connection cut, a server certificate refused; with the endpoint and the
/// retries made. None for other errors (an answer the store gave is reported as it is).
pub fn network_failure(e: &object_store::Error, endpoint: Option<&str>) -> Option<String> {
    // object_store wraps the HTTP client's error, which wraps the socket's: look at every
    // level, the innermost cause is the most precise.
    let mut texts = Vec::new();
    let mut kind = None;
    let mut level: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = level {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            kind = kind.or(Some(io.kind()));
        }
        texts.push(err.to_string());
        level = err.source();
    }
    let all = texts.join(": ").to_ascii_lowercase();
    // rustls's refusal of the server's certificate ("invalid peer certificate: UnknownIssuer").
    if let Some(refusal) = texts
        .iter()
        .rev()
        .find(|t| t.contains("invalid peer certificate"))
    {
        return Some(format!(
            "the server's TLS certificate was refused ({refusal}){}; the storage option \
             allow_invalid_certificates=true accepts it, for a server you trust",
            failed_endpoint(&texts, endpoint)
        ));
    }
    let what = match kind {
        Some(std::io::ErrorKind::ConnectionRefused) => "connection refused",
        Some(std::io::ErrorKind::TimedOut) => "timed out",
        Some(std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted) => {
            "connection closed by the server"
        }
        _ if all.contains("connection refused") => "connection refused",
        _ if all.contains("dns error") || all.contains("failed to lookup address") => {
            "cannot resolve the host name (DNS lookup failed)"
        }
        // Not "timeout" alone: every retry error names its `retry_timeout` setting.
        _ if all.contains("timed out") => "timed out",
        _ if all.contains("error sending request") || all.contains("connection") => {
            "could not reach the server"
        }
        _ => return None,
    };
    let endpoint = failed_endpoint(&texts, endpoint);
    let retries = all
        .split("after ")
        .nth(1)
        .and_then(|t| t.split(" retries").next())
        .and_then(|n| n.trim().parse::<u64>().ok())
        .map(|n| format!(" (after {n} retries; storage options client_max_retries and client_retry_timeout set how long to keep trying)"))
        .unwrap_or_default();
    Some(format!("{what}{endpoint}{retries}"))
}

/// " at <scheme://host:port>" of the request that failed (from the client's error), else
/// of the store's `endpoint`; empty when neither is known.
fn failed_endpoint(texts: &[String], endpoint: Option<&str>) -> String {
    texts
        .iter()
        .find_map(|t| Some(t.split("for url (").nth(1)?.split(')').next()?.to_string()))
        .and_then(|u| Url::parse(&u).ok())
        .map(|u| u[..url::Position::BeforePath].to_string())
        .or(endpoint.map(str::to_string))
        .map(|e| format!(" at {e}"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s3(options: &[(&str, &str)]) -> AmazonS3Builder {
        let mut b = AmazonS3Builder::new().with_url("s3://bucket/t");
        let opts: StorageOptions = options
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        for (k, v) in known::<AmazonS3ConfigKey>(&opts) {
            b = b.with_config(k, v);
        }
        b
    }

    #[test]
    fn without_credentials_the_metadata_service_must_be_allowed() {
        let err = check_s3_credentials("s3://bucket/t", &s3(&[]), true).unwrap_err();
        assert!(
            err.to_string().contains("AWS_EC2_METADATA_DISABLED"),
            "{err}"
        );
        assert!(check_s3_credentials("s3://bucket/t", &s3(&[]), false).is_ok());
        let keys = s3(&[("AWS_ACCESS_KEY_ID", "k"), ("aws_secret_access_key", "s")]);
        assert!(check_s3_credentials("s3://bucket/t", &keys, true).is_ok());
        let anonymous = s3(&[("aws_skip_signature", "true")]);
        assert!(check_s3_credentials("s3://bucket/t", &anonymous, true).is_ok());
    }

    #[test]
    fn retry_settings_are_storage_options() {
        let opts: StorageOptions = [("client_max_retries", "2"), ("CLIENT_RETRY_TIMEOUT", "7")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let r = retry_config("s3://b/t", &opts).unwrap();
        assert_eq!(
            (r.max_retries, r.retry_timeout),
            (2, Duration::from_secs(7))
        );
        let r = retry_config("s3://b/t", &StorageOptions::new()).unwrap();
        assert_eq!(r.max_retries, DEFAULT_MAX_RETRIES);
        assert_eq!(r.backoff.init_backoff, Duration::from_millis(100));
        let opts: StorageOptions = [
            ("client_backoff_initial_ms", "20"),
            ("client_backoff_max_ms", "500"),
            ("client_backoff_base", "3"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let b = retry_config("s3://b/t", &opts).unwrap().backoff;
        assert_eq!(
            (b.init_backoff, b.max_backoff, b.base),
            (Duration::from_millis(20), Duration::from_millis(500), 3.0)
        );
        let slow: StorageOptions = [("client_backoff_base".to_string(), "0.5".to_string())].into();
        let err = retry_config("s3://b/t", &slow).unwrap_err().to_string();
        assert!(err.contains("client_backoff_base"), "{err}");
        let bad: StorageOptions = [("client_max_retries".to_string(), "many".to_string())].into();
        let err = retry_config("s3://b/t", &bad).unwrap_err().to_string();
        assert!(err.contains("client_max_retries"), "{err}");
    }

    /// A failed name lookup (which a test cannot cause without a DNS server off this
    /// machine) is named as such, with the endpoint and the retries from the client's
    /// error chain.
    #[test]
    fn a_failed_name_lookup_is_named() {
        let lookup = std::io::Error::other(
            "dns error: failed to lookup address information: Name or service not known",
        );
        let e = object_store::Error::Generic {
            store: "S3",
            source: format!(
                "Error after 3 retries in 1.2s, max_retries:3, retry_timeout:180s, source:error \
                 sending request for url (http://store.example:9000/bucket/t): {lookup}"
            )
            .into(),
        };
        let text = network_failure(&e, None).unwrap();
        assert!(text.starts_with("cannot resolve the host name"), "{text}");
        assert!(text.contains("at http://store.example:9000"), "{text}");
        assert!(text.contains("after 3 retries"), "{text}");
        let other = object_store::Error::NotFound {
            path: "t".into(),
            source: "no such key".into(),
        };
        assert_eq!(network_failure(&other, None), None);
    }

    #[test]
    fn a_refused_certificate_is_named_with_the_option_that_accepts_it() {
        let tls = std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "invalid peer certificate: UnknownIssuer",
        );
        let e = object_store::Error::Generic {
            store: "S3",
            source: format!(
                "Error after 0 retries in 3ms, max_retries:0, retry_timeout:180s, source:error \
                 sending request for url (https://127.0.0.1:9443/bucket/t): client error \
                 (Connect): {tls}"
            )
            .into(),
        };
        let text = network_failure(&e, None).unwrap();
        assert!(
            text.starts_with("the server's TLS certificate was refused"),
            "{text}"
        );
        assert!(
            text.contains("UnknownIssuer") && text.contains("at https://127.0.0.1:9443"),
            "{text}"
        );
        assert!(text.contains("allow_invalid_certificates=true"), "{text}");
    }
}
