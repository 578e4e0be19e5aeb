//! The registry of vector index kinds, and the one lookup of an index kind by the name a
//! user gives it, scalar or vector (`kind_from_user`). A new vector kind is a file
//! implementing `VectorIndexKind` and one line in `VECTOR_KINDS`. (The scalar kinds' list
//! is `crate::index::registry`, a layer below this one.)
use super::kind::VectorKind;
use super::{flat, hnsw, pq, sq};
use crate::error::{Error, Result};
use crate::table::index_segments::IndexSegment;

/// Every vector index kind.
pub static VECTOR_KINDS: [VectorKind; 6] = [
    &flat::IvfFlat,
    &pq::IvfPq,
    &sq::IvfSq,
    &hnsw::IVF_HNSW_FLAT,
    &hnsw::IVF_HNSW_PQ,
    &hnsw::IVF_HNSW_SQ,
];

/// The vector kind named `name` ("IVF_PQ") by the manifest or an index file.
pub fn vector_kind_named(name: &str) -> Option<VectorKind> {
    VECTOR_KINDS.iter().copied().find(|k| k.name() == name)
}

/// The kind of a segment, when it is a vector kind lance_core knows.
pub fn vector_kind_of(segment: &IndexSegment) -> Option<VectorKind> {
    vector_kind_named(&segment.kind)
}

/// An index kind, scalar or vector.
#[derive(Clone, Copy, Debug)]
pub enum IndexKind {
    Scalar(crate::index::Kind),
    Vector(VectorKind),
}

impl IndexKind {
    /// The name a user gives it.
    pub fn user_name(self) -> &'static str {
        match self {
            IndexKind::Scalar(k) => k.user_names()[0],
            IndexKind::Vector(k) => k.name(),
        }
    }

    /// Whether lance_core builds indices of this kind.
    pub fn builds(self) -> bool {
        match self {
            IndexKind::Scalar(_) => true,
            IndexKind::Vector(k) => k.builds(),
        }
    }
}

/// The kind a user names (`create_index(col, "IVF_PQ")`, `create_scalar_index(col,
/// "BTREE")`), any case.
pub fn kind_from_user(name: &str) -> Option<IndexKind> {
    if let Some(k) = crate::index::kind_from_user(name) {
        return Some(IndexKind::Scalar(k));
    }
    let name = name.to_ascii_uppercase();
    vector_kind_named(&name).map(IndexKind::Vector)
}

/// The kinds lance_core builds, as users name them.
pub fn built_names() -> Vec<&'static str> {
    let scalar = crate::index::KINDS.iter().map(|&k| IndexKind::Scalar(k));
    let vector = VECTOR_KINDS.iter().map(|&k| IndexKind::Vector(k));
    scalar
        .chain(vector)
        .filter(|k| k.builds())
        .map(IndexKind::user_name)
        .collect()
}

/// The scalar kind a user names, to build an index of on the table at `uri` (named in
/// errors).
pub fn scalar_kind_to_build(uri: &str, name: &str) -> Result<crate::index::Kind> {
    match kind_from_user(name) {
        Some(IndexKind::Scalar(k)) => Ok(k),
        other => Err(not_built(uri, name, other, "scalar")),
    }
}

/// The vector kind a user names, to build an index of on the table at `uri` (named in
/// errors): one lance_core builds.
pub fn vector_kind_to_build(uri: &str, name: &str) -> Result<VectorKind> {
    match kind_from_user(name) {
        Some(IndexKind::Vector(k)) if k.builds() => Ok(k),
        other => Err(not_built(uri, name, other, "vector")),
    }
}

/// Why an index named `name` (of kind `found`, if any) is not built as a `family` index.
fn not_built(uri: &str, name: &str, found: Option<IndexKind>, family: &str) -> Error {
    let built = built_names().join(", ");
    match found {
        Some(k) if !k.builds() => Error::unsupported(
            uri,
            format!(
                "building a {} index (lance_core builds {built})",
                k.user_name()
            ),
        ),
        _ => Error::invalid(format!(
            "{uri}: index type '{name}' is not built by lance_core as a {family} index (it \
             builds {built})"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vector::kind::IvfParams;
    use crate::vector::Metric;

    #[test]
    fn every_user_name_resolves_to_its_kind_through_one_lookup() {
        for kind in crate::index::KINDS {
            for user in kind.user_names() {
                for name in [user.to_string(), user.to_ascii_lowercase()] {
                    match kind_from_user(&name) {
                        Some(IndexKind::Scalar(k)) => assert_eq!(k.name(), kind.name()),
                        other => panic!("{name}: {other:?}"),
                    }
                }
            }
        }
        for kind in VECTOR_KINDS {
            assert_eq!(
                vector_kind_named(kind.name()).map(|k| k.name()),
                Some(kind.name())
            );
            for name in [kind.name().to_string(), kind.name().to_ascii_lowercase()] {
                match kind_from_user(&name) {
                    Some(IndexKind::Vector(k)) => assert_eq!(k.name(), kind.name()),
                    other => panic!("{name}: {other:?}"),
                }
            }
        }
        assert!(kind_from_user("IVF_RQ").is_none());
        assert!(kind_from_user("INVERTED").is_none());
    }

    #[test]
    fn names_are_unique_across_scalar_and_vector_kinds() {
        let mut names: Vec<&str> = crate::index::KINDS
            .iter()
            .flat_map(|k| k.user_names().iter().copied())
            .chain(VECTOR_KINDS.iter().map(|k| k.name()))
            .collect();
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n);
    }

    #[test]
    fn a_build_asks_for_a_kind_of_its_family_that_lance_core_builds() {
        let uri = "memory://t";
        let k = vector_kind_to_build(uri, "ivf_pq").unwrap();
        assert_eq!(k.name(), "IVF_PQ");
        assert_eq!(scalar_kind_to_build(uri, "btree").unwrap().name(), "BTree");
        let e = scalar_kind_to_build(uri, "IVF_PQ").unwrap_err().to_string();
        assert!(
            e.contains("not built by lance_core as a scalar index"),
            "{e}"
        );
        let e = vector_kind_to_build(uri, "BTREE").unwrap_err().to_string();
        assert!(e.contains("as a vector index"), "{e}");
        let e = vector_kind_to_build(uri, "IVF_HNSW_SQ")
            .unwrap_err()
            .to_string();
        assert!(e.contains("building a IVF_HNSW_SQ index"), "{e}");
        assert!(vector_kind_to_build(uri, "nope").is_err());
        // What every built kind lists.
        let built = built_names();
        for name in ["BTREE", "IVF_FLAT", "IVF_PQ", "IVF_SQ"] {
            assert!(built.contains(&name), "{built:?}");
        }
        assert!(!built.contains(&"IVF_HNSW_PQ"));
    }

    #[test]
    fn the_graph_kinds_store_rows_as_their_ivf_kinds() {
        for (graph, rows) in [
            ("IVF_HNSW_FLAT", "IVF_FLAT"),
            ("IVF_HNSW_PQ", "IVF_PQ"),
            ("IVF_HNSW_SQ", "IVF_SQ"),
        ] {
            let (g, r) = (
                vector_kind_named(graph).unwrap(),
                vector_kind_named(rows).unwrap(),
            );
            assert_eq!(g.stored_column(), r.stored_column());
            assert!(!g.builds() && r.builds());
        }
    }

    #[test]
    fn parameters_round_trip_through_the_kind_named() {
        for kind in VECTOR_KINDS.iter().filter(|k| k.builds()) {
            let mut p = IvfParams::new(*kind, Metric::Cosine);
            p.num_sub_vectors = Some(4);
            p.num_partitions = Some(3);
            let back = match kind_from_user(&p.kind.name().to_ascii_lowercase()) {
                Some(IndexKind::Vector(k)) => IvfParams {
                    kind: k,
                    ..p.clone()
                },
                other => panic!("{other:?}"),
            };
            assert_eq!(back, p);
            assert!(kind.check(&p, 16).is_ok(), "{}", kind.name());
            assert!(kind.target_partition_size() > 0);
        }
    }
}
