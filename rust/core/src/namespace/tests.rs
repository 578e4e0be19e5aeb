//! The directory catalog's rules, on catalogs in `memory://` stores: namespaces (nested,
//! not dropped while they hold anything), tables declared, written, registered,
//! deregistered and dropped, catalogs without a manifest, and racing adders of one id.
use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};

use super::directory::absolute;
use super::*;
use crate::dataset::Dataset;
use crate::error::Error;
use crate::storage::Storage;
use crate::test_util::uri;

fn ids(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|p| p.to_string()).collect()
}

/// A catalog at a fresh `memory://` root, with `extra` properties.
fn catalog_at(root: &str, extra: &[(&str, &str)]) -> DirectoryNamespace {
    let mut props = HashMap::from([("root".to_string(), root.to_string())]);
    for (k, v) in extra {
        props.insert(k.to_string(), v.to_string());
    }
    DirectoryNamespace::from_properties(&props).unwrap()
}

fn catalog(extra: &[(&str, &str)]) -> DirectoryNamespace {
    catalog_at(&uri(), extra)
}

/// The kind and message of a namespace error (anything else fails the test).
fn refusal<T: std::fmt::Debug>(r: Result<T, Error>) -> (NamespaceErrorKind, String) {
    match r {
        Err(e @ Error::Namespace { kind, .. }) => (kind, e.to_string()),
        other => panic!("expected a namespace error, got {other:?}"),
    }
}

fn rows(n: i64) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
    RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from_iter_values(0..n))]).unwrap()
}

async fn create(ns: &DirectoryNamespace, parts: &[&str], n: i64) -> CreatedTable {
    let batch = rows(n);
    let stream = futures::stream::iter(vec![Ok(batch.clone())]);
    ns.create_table(&ids(parts), batch.schema(), stream, Default::default())
        .await
        .unwrap()
}

async fn listed(ns: &DirectoryNamespace, parts: &[&str]) -> Vec<String> {
    ns.list_tables(&ids(parts), None, None).await.unwrap().names
}

#[test]
fn pages_ids_and_paths() {
    let names = ids(&["c", "a", "b", "d"]);
    let first = paginate(names.clone(), None, Some(2));
    assert_eq!(first.names, ids(&["a", "b"]));
    assert_eq!(first.page_token.as_deref(), Some("b"));
    let rest = paginate(names.clone(), first.page_token.as_deref(), Some(2));
    assert_eq!((rest.names, rest.page_token), (ids(&["c", "d"]), None));
    // A negative limit is none; an empty token is no token.
    assert_eq!(paginate(names.clone(), Some(""), Some(-1)).names.len(), 4);
    assert_eq!(object_id(&ids(&["a", "b"])), "a$b");
    assert_eq!(python_list(&ids(&["a", "it's"])), "['a', \"it's\"]");
    assert_eq!(absolute("/x/./y/../z/").unwrap(), "/x/z");
    assert_eq!(
        full_uri("/data/../lake", "t.lance").unwrap(),
        "file:///lake/t.lance"
    );
    assert_eq!(full_uri("s3://b/lake/", "t").unwrap(), "s3://b/lake/t");
}

#[test]
fn properties_as_pylance_reads_them() {
    let missing = DirectoryNamespace::from_properties(&HashMap::new()).unwrap_err();
    assert!(missing
        .to_string()
        .contains("Missing required property 'root'"));
    let ns = catalog_at(
        "memory://props/lake//",
        &[
            ("storage.region", "x"),
            ("vend_input_storage_options", " TRUE "),
            ("table_version_tracking_enabled", "yes"),
        ],
    );
    assert_eq!(ns.root(), "memory://props/lake");
    assert_eq!(
        ns.vended_storage_options(),
        Some(&HashMap::from([("region".to_string(), "x".to_string())]))
    );
    // Not "true" or "false": the default.
    assert_eq!(ns.managed_versioning(), None);
}

#[tokio::test]
async fn namespaces_nest_and_drop_only_when_empty() {
    let ns = catalog(&[]);
    let props = vec![
        ("owner".to_string(), "u".to_string()),
        ("a".to_string(), "é\"".to_string()),
    ];
    ns.create_namespace(&ids(&["ws"]), Some(props.as_slice()))
        .await
        .unwrap();
    assert_eq!(
        refusal(ns.create_namespace(&ids(&["ws"]), None).await),
        (
            NamespaceErrorKind::NamespaceAlreadyExists,
            "Namespace already exists: ws".to_string()
        )
    );
    let (kind, message) = refusal(ns.create_namespace(&ids(&["nope", "x"]), None).await);
    assert_eq!(kind, NamespaceErrorKind::NamespaceNotFound);
    assert!(message.ends_with("parent namespace 'nope'"), "{message}");
    assert_eq!(
        refusal(ns.create_namespace(&[], None).await).0,
        NamespaceErrorKind::NamespaceAlreadyExists
    );
    // Properties come back in their order; none recorded is None, the root's are empty.
    assert_eq!(
        ns.describe_namespace(&ids(&["ws"])).await.unwrap(),
        Some(props)
    );
    ns.create_namespace(&ids(&["ws", "inner"]), None)
        .await
        .unwrap();
    assert_eq!(
        ns.describe_namespace(&ids(&["ws", "inner"])).await.unwrap(),
        None
    );
    assert_eq!(ns.describe_namespace(&[]).await.unwrap(), Some(vec![]));
    let children = ns.list_namespaces(&ids(&["ws"]), None, None).await.unwrap();
    assert_eq!(children.names, ids(&["inner"]));
    let top = ns.list_namespaces(&[], None, None).await.unwrap();
    assert_eq!(top.names, ids(&["ws"]));

    let (kind, message) = refusal(ns.drop_namespace(&ids(&["ws"])).await);
    assert_eq!(kind, NamespaceErrorKind::NamespaceNotEmpty);
    assert!(
        message.contains("'ws' (contains 1 child objects)"),
        "{message}"
    );
    assert_eq!(
        refusal(ns.drop_namespace(&[]).await).0,
        NamespaceErrorKind::InvalidInput
    );
    ns.drop_namespace(&ids(&["ws", "inner"])).await.unwrap();
    ns.drop_namespace(&ids(&["ws"])).await.unwrap();
    assert_eq!(
        refusal(ns.namespace_exists(&ids(&["ws"])).await),
        (
            NamespaceErrorKind::NamespaceNotFound,
            "Namespace not found: ws".to_string()
        )
    );
    ns.namespace_exists(&[]).await.unwrap();
    assert!(ns.manifest().rows(None).await.unwrap().is_empty());
}

#[tokio::test]
async fn tables_declared_written_registered_and_dropped() {
    let root = uri();
    let ns = catalog_at(&root, &[]);
    ns.create_namespace(&ids(&["ws"]), None).await.unwrap();

    // Declared: a directory with the reserved marker, a catalog row, no version yet.
    let declared = ns.declare_table(&ids(&["ws", "d"]), None).await.unwrap();
    let dir = declared.rsplit('/').next().unwrap().to_string();
    assert!(
        dir.ends_with("_ws$d") && dir.len() == 8 + "_ws$d".len(),
        "{dir}"
    );
    let table = Storage::open(&format!("{root}/{dir}"), &Default::default()).unwrap();
    assert!(table.exists(&table.path(RESERVED)).await.unwrap());
    let described = ns.describe_table(&ids(&["ws", "d"]), true).await.unwrap();
    assert_eq!(described.location, declared);
    assert_eq!(described.is_only_declared, Some(true));
    assert_eq!(
        refusal(ns.declare_table(&ids(&["ws", "d"]), None).await).0,
        NamespaceErrorKind::TableAlreadyExists
    );
    let (kind, message) = refusal(
        ns.declare_table(&ids(&["ws", "e"]), Some("memory://elsewhere/t"))
            .await,
    );
    assert_eq!(kind, NamespaceErrorKind::InvalidInput);
    assert!(message
        .starts_with("Invalid input: Cannot declare table e at location memory://elsewhere/t"));

    // Creating a declared table writes where it was declared, under the same row.
    let created = create(&ns, &["ws", "d"], 3).await;
    assert_eq!(
        (created.location.as_str(), created.version),
        (declared.as_str(), 1)
    );
    let described = ns.describe_table(&ids(&["ws", "d"]), true).await.unwrap();
    assert_eq!(described.is_only_declared, Some(false));
    let ds = Dataset::open(&declared, None, Default::default())
        .await
        .unwrap();
    assert_eq!(crate::test_util::read(&ds).await.num_rows(), 3);
    let batch = rows(1);
    let again = ns
        .create_table(
            &ids(&["ws", "d"]),
            batch.schema(),
            futures::stream::iter(vec![Ok(batch.clone())]),
            Default::default(),
        )
        .await;
    assert_eq!(
        refusal(again),
        (
            NamespaceErrorKind::TableAlreadyExists,
            "Table already exists: d".to_string()
        )
    );
    // A namespace's id is not a table to write into.
    assert_eq!(
        refusal(
            ns.create_table(
                &ids(&["ws"]),
                batch.schema(),
                futures::stream::iter(vec![Ok(batch.clone())]),
                Default::default(),
            )
            .await
        )
        .0,
        NamespaceErrorKind::TableAlreadyExists
    );

    // Registered under a second name by a relative path; only such paths are taken.
    for (location, what) in [
        ("s3://b/t.lance", "Absolute URIs"),
        ("/t.lance", "Absolute paths"),
        ("a/../t.lance", "Path traversal"),
    ] {
        let (kind, message) = refusal(ns.register_table(&ids(&["ws", "r"]), location).await);
        assert_eq!(kind, NamespaceErrorKind::InvalidInput);
        assert!(
            message.starts_with(&format!("Invalid input: {what}")),
            "{message}"
        );
    }
    assert_eq!(
        refusal(ns.register_table(&ids(&["nope", "r"]), &dir).await).0,
        NamespaceErrorKind::NamespaceNotFound
    );
    assert_eq!(
        ns.register_table(&ids(&["ws", "alias"]), &dir)
            .await
            .unwrap(),
        dir
    );
    assert_eq!(listed(&ns, &["ws"]).await, ids(&["alias", "d"]));
    assert_eq!(
        refusal(ns.register_table(&ids(&["ws", "alias"]), &dir).await),
        (
            NamespaceErrorKind::TableAlreadyExists,
            "Table already exists: ws$alias".to_string()
        )
    );
    // Deregistered: the row goes, the data stays.
    assert_eq!(
        ns.deregister_table(&ids(&["ws", "alias"])).await.unwrap(),
        declared
    );
    assert_eq!(
        refusal(ns.table_exists(&ids(&["ws", "alias"])).await).1,
        "Table not found: table id 'ws$alias'"
    );
    assert_eq!(
        refusal(ns.deregister_table(&ids(&["ws", "alias"])).await).0,
        NamespaceErrorKind::TableNotFound
    );
    Dataset::open(&declared, None, Default::default())
        .await
        .unwrap();

    // Dropped: the row and the data go; the namespace is empty again.
    assert_eq!(
        refusal(ns.drop_namespace(&ids(&["ws"])).await).0,
        NamespaceErrorKind::NamespaceNotEmpty
    );
    assert_eq!(ns.drop_table(&ids(&["ws", "d"])).await.unwrap(), declared);
    assert!(matches!(
        Dataset::open(&declared, None, Default::default()).await,
        Err(Error::NotFound { .. })
    ));
    assert_eq!(
        refusal(ns.drop_table(&ids(&["ws", "d"])).await),
        (
            NamespaceErrorKind::TableNotFound,
            "Table not found: d".to_string()
        )
    );
    ns.drop_namespace(&ids(&["ws"])).await.unwrap();
}

#[tokio::test]
async fn root_tables_are_found_by_listing_the_root() {
    let root = uri();
    let ns = catalog_at(&root, &[]);
    let created = create(&ns, &["r"], 2).await;
    assert_eq!(created.location, format!("{root}/r.lance"));
    // A table written at the root without the catalog is listed too.
    crate::test_util::write(
        &format!("{root}/plain.lance"),
        rows(1),
        crate::write::WriteMode::Create,
        10,
    )
    .await;
    assert_eq!(listed(&ns, &[]).await, ids(&["plain", "r"]));
    let page = ns.list_tables(&[], None, Some(1)).await.unwrap();
    assert_eq!(
        (page.names, page.page_token),
        (ids(&["plain"]), Some("plain".to_string()))
    );
    assert_eq!(
        ns.table_location(&ids(&["plain"])).await.unwrap(),
        format!("{root}/plain.lance")
    );
    assert_eq!(
        refusal(ns.table_location(&ids(&["missing"])).await).1,
        "Table not found: table id 'missing'"
    );
    assert_eq!(
        refusal(ns.check_table_id(&[])).1,
        "Invalid input: Table ID cannot be empty"
    );
}

#[tokio::test]
async fn without_a_manifest_only_root_tables() {
    let root = uri();
    let ns = catalog_at(&root, &[("manifest_enabled", "false")]);
    assert_eq!(
        refusal(ns.create_namespace(&ids(&["ws"]), None).await).0,
        NamespaceErrorKind::Unsupported
    );
    assert_eq!(
        refusal(ns.check_table_id(&ids(&["ws", "t"]))).1,
        "Unsupported: Multi-level table IDs are only supported when manifest mode is enabled, \
         but got: ['ws', 't']"
    );
    assert_eq!(
        refusal(ns.register_table(&ids(&["t"]), "t.lance").await).0,
        NamespaceErrorKind::Unsupported
    );
    let declared = ns.declare_table(&ids(&["t"]), None).await.unwrap();
    assert_eq!(declared, format!("{root}/t.lance"));
    // The reserved marker makes the directory a table's: declared twice is refused.
    assert_eq!(
        refusal(ns.declare_table(&ids(&["t"]), None).await).0,
        NamespaceErrorKind::TableAlreadyExists
    );
    create(&ns, &["u"], 1).await;
    assert_eq!(listed(&ns, &[]).await, ids(&["t", "u"]));
    assert!(ns.manifest().rows(None).await.unwrap().is_empty());
    // Deregistered: a marker in its directory, which then refuses lookups.
    assert_eq!(
        ns.deregister_table(&ids(&["u"])).await.unwrap(),
        format!("{root}/u.lance")
    );
    assert_eq!(
        refusal(ns.table_exists(&ids(&["u"])).await),
        (
            NamespaceErrorKind::InvalidTableState,
            "Invalid table state: Table is deregistered: table id 'u'".to_string()
        )
    );
    ns.drop_table(&ids(&["t"])).await.unwrap();
    assert_eq!(
        refusal(ns.table_exists(&ids(&["t"])).await).0,
        NamespaceErrorKind::TableNotFound
    );
}

/// Catalogs of one root add the same id at once, again and again: one adds it, the others
/// are told it exists, and the catalog never holds the id twice (a check, then an append,
/// would let several append).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_adders_of_one_id_leave_one_row() {
    let root = uri();
    catalog_at(&root, &[])
        .create_namespace(&ids(&["base"]), None)
        .await
        .unwrap();
    for round in 0..4 {
        let name = format!("n{round}");
        let racers: Vec<_> = (0..4)
            .map(|_| {
                let ns = catalog_at(&root, &[]);
                let id = ids(&["base", &name]);
                tokio::spawn(async move { ns.create_namespace(&id, None).await })
            })
            .collect();
        let mut created = 0;
        for racer in racers {
            match racer.await.unwrap() {
                Ok(()) => created += 1,
                Err(Error::Namespace {
                    kind: NamespaceErrorKind::NamespaceAlreadyExists,
                    ..
                }) => {}
                Err(e) => panic!("round {round}: {e}"),
            }
        }
        assert_eq!(created, 1, "round {round}");
    }
    let mut found: Vec<String> = catalog_at(&root, &[])
        .manifest()
        .rows(None)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.object_id)
        .collect();
    found.sort();
    assert_eq!(
        found,
        ids(&["base", "base$n0", "base$n1", "base$n2", "base$n3"])
    );
}
