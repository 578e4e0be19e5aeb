//! The registry of scalar index kinds: every kind lance_core reads and builds, and how a
//! segment, a manifest entry or a user's name finds its kind. A new kind is a file
//! implementing `ScalarIndexKind` and one line in `KINDS`. A user's name for any kind,
//! scalar or vector, is looked up by `crate::vector::registry::kind_from_user` (vector
//! kinds are a layer above).
use super::kind::ScalarIndexKind;
use super::{bitmap, bloom, btree, label_list, ngram, zonemap};
use crate::proto::table::IndexMetadata;
use crate::table::index_segments::{kind_of as kind_of_details, IndexSegment};

/// A kind of scalar index.
pub type Kind = &'static dyn ScalarIndexKind;

/// Every scalar index kind.
pub static KINDS: [Kind; 6] = [
    &btree::BTreeKind,
    &bitmap::BitmapKind,
    &label_list::LabelListKind,
    &zonemap::ZoneMapKind,
    &bloom::BloomFilterKind,
    &ngram::NGramKind,
];

/// The kind of a segment, when lance_core knows it.
pub fn kind_of(segment: &IndexSegment) -> Option<Kind> {
    kind_named(&segment.kind)
}

/// The kind of a manifest's index entry, when lance_core knows it.
pub fn kind_of_metadata(m: &IndexMetadata) -> Option<Kind> {
    kind_named(&kind_of_details(m.index_details.as_ref()?))
}

/// The kind the manifest names `name` ("BTree").
pub fn kind_named(name: &str) -> Option<Kind> {
    KINDS.iter().copied().find(|k| k.name() == name)
}

/// The kind a user names (`create_scalar_index(col, "BTREE")`), any case.
pub fn kind_from_user(name: &str) -> Option<Kind> {
    let name = name.to_ascii_uppercase();
    KINDS
        .iter()
        .copied()
        .find(|k| k.user_names().contains(&name.as_str()))
}

/// Whether lance_core reads `segment`: a kind it knows, in a version of that kind's
/// format it reads.
pub fn readable(segment: &IndexSegment) -> bool {
    kind_of(segment).is_some_and(|k| k.reads(segment.index_version))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_found_by_each_of_its_names() {
        for kind in KINDS {
            assert_eq!(kind_named(kind.name()).map(|k| k.name()), Some(kind.name()));
            for user in kind.user_names() {
                assert_eq!(kind_from_user(user).map(|k| k.name()), Some(kind.name()));
                let lower = user.to_ascii_lowercase();
                assert_eq!(kind_from_user(&lower).map(|k| k.name()), Some(kind.name()));
            }
            // The manifest's kind name is the details message's name.
            let message = kind.type_url().rsplit('.').next().unwrap();
            assert_eq!(message, format!("{}IndexDetails", kind.name()));
        }
        assert!(kind_from_user("INVERTED").is_none());
    }

    #[test]
    fn names_are_unique() {
        let mut names: Vec<&str> = KINDS
            .iter()
            .flat_map(|k| k.user_names().iter().copied())
            .collect();
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n);
    }
}
