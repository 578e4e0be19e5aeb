//! A client of a Lance namespace REST server (pylance's `RestNamespace`; its server,
//! `RestAdapter`, serves any namespace this way): the catalog operations a Spark catalog
//! needs. An id travels in the path, its parts joined by the delimiter and
//! percent-encoded, the root being the delimiter itself; requests and answers are JSON; a
//! refusal is `{"error": message, "code": the protocol's error code}`. A table is created
//! by declaring it (the server picks its location) and writing it there, so that the write
//! options (format version, stable row ids, ...) are the caller's.
use std::collections::HashMap;

use serde_json::{json, Map, Value};

use super::{Page, Properties, DELIMITER};
use crate::error::{Error, NamespaceErrorKind as Kind, Result};
use crate::storage::StorageOptions;

pub struct RestNamespace {
    endpoint: String,
    delimiter: String,
    headers: Vec<(String, String)>,
    /// Options of the stores the tables are in (`storage.<key>`), under those the server
    /// vends with a table.
    storage_options: StorageOptions,
    client: reqwest::Client,
}

/// A table as the server describes it: where it is, and the store options it vends.
pub struct RestTable {
    pub location: String,
    pub storage_options: StorageOptions,
}

impl RestNamespace {
    /// A client from pylance's properties: `uri` (the server, required), `delimiter`
    /// (`$`), `header.<Name>` / `headers.<Name>` (sent with every request), and
    /// `storage.<key>` (options of the tables' stores).
    pub fn from_properties(properties: &HashMap<String, String>) -> Result<Self> {
        let endpoint = properties
            .get("uri")
            .filter(|u| !u.trim().is_empty())
            .ok_or_else(|| {
                Error::invalid(
                    "Failed to create RestNamespace: Invalid input: \
                     Missing required property 'uri' for REST namespace",
                )
            })?
            .trim()
            .trim_end_matches('/')
            .to_string();
        let mut headers: Vec<(String, String)> = properties
            .iter()
            .filter_map(|(k, v)| {
                let name = k
                    .strip_prefix("header.")
                    .or_else(|| k.strip_prefix("headers."))?;
                Some((name.to_string(), v.clone()))
            })
            .collect();
        headers.sort();
        crate::storage::cloud::install_tls_provider();
        let client = reqwest::Client::builder().build().map_err(|e| {
            Error::invalid(format!(
                "Failed to create RestNamespace for {endpoint}: {e}"
            ))
        })?;
        Ok(RestNamespace {
            delimiter: properties
                .get("delimiter")
                .filter(|d| !d.is_empty())
                .cloned()
                .unwrap_or_else(|| DELIMITER.to_string()),
            storage_options: properties
                .iter()
                .filter_map(|(k, v)| Some((k.strip_prefix("storage.")?.to_string(), v.clone())))
                .collect(),
            endpoint,
            headers,
            client,
        })
    }

    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    pub fn storage_options(&self) -> &StorageOptions {
        &self.storage_options
    }

    /// `/v1/<object>/<id>/<action>` for id `parts`.
    fn url(&self, object: &str, parts: &[String], action: &str) -> String {
        let joined = match parts.is_empty() {
            true => self.delimiter.clone(),
            false => parts.join(&self.delimiter),
        };
        let id: String = url::form_urlencoded::byte_serialize(joined.as_bytes())
            .collect::<String>()
            .replace('+', "%20");
        format!("{}/v1/{object}/{id}/{action}", self.endpoint)
    }

    /// Send a request; the answer's JSON (null when empty), or the server's refusal as
    /// the namespace error it names.
    async fn send(&self, request: reqwest::RequestBuilder, what: &str) -> Result<Value> {
        let mut request = request;
        for (name, value) in &self.headers {
            request = request.header(name, value);
        }
        let response = request.send().await.map_err(|e| {
            Error::invalid(format!(
                "REST namespace {}: {what} failed: {e}",
                self.endpoint
            ))
        })?;
        let status = response.status();
        let body = response.bytes().await.map_err(|e| {
            Error::invalid(format!(
                "REST namespace {}: {what}: the answer was cut off: {e}",
                self.endpoint
            ))
        })?;
        let json: Value = match body.is_empty() {
            true => Value::Null,
            false => serde_json::from_slice(&body).unwrap_or_else(|_| {
                Value::String(String::from_utf8_lossy(&body).chars().take(500).collect())
            }),
        };
        if status.is_success() {
            return Ok(json);
        }
        let message = json
            .get("error")
            .and_then(Value::as_str)
            .map(String::from)
            .unwrap_or_else(|| json.to_string());
        match json
            .get("code")
            .and_then(Value::as_u64)
            .and_then(Kind::of_code)
        {
            Some(kind) => Err(Error::Namespace { kind, message }),
            None => Err(Error::invalid(format!(
                "REST namespace {}: {what} answered HTTP {status}: {message}",
                self.endpoint
            ))),
        }
    }

    async fn post(
        &self,
        object: &str,
        parts: &[String],
        action: &str,
        body: Value,
    ) -> Result<Value> {
        let url = self.url(object, parts, action);
        let request = self
            .client
            .post(&url)
            .header("Content-Type", "application/json")
            .body(body.to_string());
        self.send(request, &format!("{object} {action} ({url})"))
            .await
    }

    /// Every name a listing (`action` of namespace `parts`) answers under `key`, page
    /// after page.
    async fn list(&self, parts: &[String], action: &str, key: &str) -> Result<Page> {
        let mut names = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut url = self.url("namespace", parts, action);
            if let Some(t) = &token {
                url.push_str("?page_token=");
                url.extend(url::form_urlencoded::byte_serialize(t.as_bytes()));
            }
            let answer = self
                .send(
                    self.client.get(&url),
                    &format!("namespace {action} ({url})"),
                )
                .await?;
            let page = page(&answer, key);
            names.extend(page.names);
            match page.page_token {
                Some(next) if !next.is_empty() && token.as_ref() != Some(&next) => {
                    token = Some(next)
                }
                _ => break,
            }
        }
        Ok(Page {
            names,
            page_token: None,
        })
    }

    fn id(parts: &[String]) -> Value {
        json!(parts)
    }

    /// A request whose body is only the object's id (most of the protocol's).
    async fn post_id(&self, object: &str, parts: &[String], action: &str) -> Result<Value> {
        self.post(object, parts, action, json!({ "id": Self::id(parts) }))
            .await
    }

    pub async fn create_namespace(
        &self,
        parts: &[String],
        properties: Option<&[(String, String)]>,
    ) -> Result<()> {
        let mut body = json!({ "id": Self::id(parts) });
        if let Some(props) = properties.filter(|p| !p.is_empty()) {
            let map: Map<String, Value> = props
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect();
            body["properties"] = Value::Object(map);
        }
        self.post("namespace", parts, "create", body)
            .await
            .map(|_| ())
    }

    pub async fn describe_namespace(&self, parts: &[String]) -> Result<Properties> {
        let answer = self.post_id("namespace", parts, "describe").await?;
        let mut props: Properties = match answer.get("properties") {
            Some(Value::Object(m)) => m
                .iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.as_str().map_or_else(|| v.to_string(), String::from),
                    )
                })
                .collect(),
            _ => vec![],
        };
        props.sort();
        Ok(props)
    }

    pub async fn namespace_exists(&self, parts: &[String]) -> Result<()> {
        self.post_id("namespace", parts, "exists").await.map(|_| ())
    }

    pub async fn drop_namespace(&self, parts: &[String]) -> Result<()> {
        self.post_id("namespace", parts, "drop").await.map(|_| ())
    }

    pub async fn list_namespaces(&self, parts: &[String]) -> Result<Page> {
        self.list(parts, "list", "namespaces").await
    }

    pub async fn list_tables(&self, parts: &[String]) -> Result<Page> {
        self.list(parts, "table/list", "tables").await
    }

    /// Where table `parts` is, and the options the server vends for its store (over the
    /// client's own).
    pub async fn describe_table(&self, parts: &[String]) -> Result<RestTable> {
        let answer = self.post_id("table", parts, "describe").await?;
        let location = answer
            .get("location")
            .or_else(|| answer.get("table_uri"))
            .and_then(Value::as_str)
            .ok_or_else(|| {
                Error::invalid(format!(
                    "REST namespace {}: the description of table {} has no location",
                    self.endpoint,
                    parts.join(".")
                ))
            })?;
        let mut storage_options = self.storage_options.clone();
        if let Some(Value::Object(vended)) = answer.get("storage_options") {
            for (k, v) in vended {
                if let Some(v) = v.as_str() {
                    storage_options.insert(k.clone(), v.to_string());
                }
            }
        }
        Ok(RestTable {
            location: location.to_string(),
            storage_options,
        })
    }

    /// Reserve table `parts`: the server records it and answers where it goes.
    pub async fn declare_table(&self, parts: &[String]) -> Result<String> {
        let answer = self.post_id("table", parts, "declare").await?;
        location_of(&answer, &self.endpoint, parts)
    }

    pub async fn drop_table(&self, parts: &[String]) -> Result<String> {
        let answer = self.post("table", parts, "drop", Value::Null).await?;
        location_of(&answer, &self.endpoint, parts)
    }

    pub async fn deregister_table(&self, parts: &[String]) -> Result<String> {
        let answer = self.post_id("table", parts, "deregister").await?;
        location_of(&answer, &self.endpoint, parts)
    }
}

fn page(answer: &Value, key: &str) -> Page {
    let names = match answer.get(key) {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect(),
        _ => vec![],
    };
    Page {
        names,
        page_token: answer
            .get("page_token")
            .and_then(Value::as_str)
            .map(String::from),
    }
}

fn location_of(answer: &Value, endpoint: &str, parts: &[String]) -> Result<String> {
    answer
        .get("location")
        .and_then(Value::as_str)
        .map(String::from)
        .ok_or_else(|| {
            Error::invalid(format!(
                "REST namespace {endpoint}: the answer for table {} has no location",
                parts.join(".")
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(props: &[(&str, &str)]) -> RestNamespace {
        let props = props
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        RestNamespace::from_properties(&props).unwrap()
    }

    #[test]
    fn ids_travel_in_the_path_joined_and_encoded() {
        let ns = client(&[
            ("uri", "http://127.0.0.1:9/"),
            ("header.Authorization", "Bearer x"),
        ]);
        let id = |p: &[&str]| p.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            ns.url("namespace", &[], "list"),
            "http://127.0.0.1:9/v1/namespace/%24/list"
        );
        assert_eq!(
            ns.url("table", &id(&["db", "my t"]), "describe"),
            "http://127.0.0.1:9/v1/table/db%24my%20t/describe"
        );
        assert_eq!(
            ns.headers,
            vec![("Authorization".to_string(), "Bearer x".to_string())]
        );
        let dotted = client(&[("uri", "http://h"), ("delimiter", ".")]);
        assert_eq!(
            dotted.url("namespace", &id(&["a", "b"]), "drop"),
            "http://h/v1/namespace/a.b/drop"
        );
        let missing = RestNamespace::from_properties(&HashMap::new())
            .err()
            .unwrap();
        assert!(missing
            .to_string()
            .contains("Missing required property 'uri'"));
        assert_eq!(Kind::of_code(4), Some(Kind::TableNotFound));
        assert_eq!(Kind::of_code(99), None);
    }
}
