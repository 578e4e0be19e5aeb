//! Whether an operation still applies after the transactions other writers committed
//! since the version it was prepared against: one rule per pair of operations.
use super::operation::{op_name, touched_by, Operation};
use super::InsertedKeys;
use crate::proto::table::transaction::Operation as PbOp;

/// What a transaction committed meanwhile means for ours.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resolution {
    /// Ours applies on top of it as it is.
    Compatible,
    /// Ours was prepared from data it changed: re-running ours against the new version
    /// (re-reading what it read) can succeed.
    Retryable(String),
    /// Ours cannot be applied after it, and re-running will not help (it replaced the
    /// table ours was written for).
    Incompatible(String),
}

/// How `ours` meets `theirs`, a transaction committed since our read version (None: the
/// version recorded no transaction, so nothing can be assumed). The outcomes are pylance
/// 14's for every pair of operations lance_core writes, but one: a column made
/// non-nullable meets rows appended or rewritten meanwhile as retryable (pylance:
/// compatible), since those rows may hold nulls.
pub fn resolve(ours: &Operation, theirs: Option<&PbOp>) -> Resolution {
    use Resolution::*;
    let Some(theirs) = theirs else {
        return Incompatible("a concurrent commit left no transaction to check against".into());
    };
    let name = op_name(theirs);
    let retry = |what: &str| {
        Retryable(format!(
            "a concurrent {name} {what}; retry on the new version"
        ))
    };
    let replaced = || Incompatible(format!("a concurrent {name} replaced the table"));
    // Overwrite, Restore and a memory-WAL state change replace what every other writer
    // read, but for an overwrite, which does not read, and a restore, which wins.
    let replaces_table = matches!(
        theirs,
        PbOp::Overwrite(_) | PbOp::Restore(_) | PbOp::UpdateMemWalState(_)
    );
    // The fragments ours changes in place and theirs changed or removed overlap.
    let overlap = || touched_by(theirs).is_some_and(|t| !t.is_disjoint(&ours.touched()));
    if let Operation::Update {
        inserted_keys: Some(keys),
        ..
    } = ours
    {
        if !replaces_table {
            if let Some(why) = may_have_inserted_our_keys(keys, theirs) {
                return retry(why);
            }
        }
    }
    match ours {
        // Ids set aside stay set aside whatever happened meanwhile, unless they are for
        // an operation that could not follow it.
        Operation::ReserveFragments {
            checked_as: Some(op),
            ..
        } => resolve(op, Some(theirs)),
        Operation::ReserveFragments { .. } => Compatible,
        // A clone is a new table's first version: its commit fails if the target holds
        // a table at all, before any transaction is checked.
        Operation::Clone { .. } => replaced(),
        // New bases clash only with bases registered meanwhile under the same id, name
        // or path (then the user must choose again: not retried).
        Operation::UpdateBases { new_bases } => match theirs {
            PbOp::UpdateBases(other) if crate::table::bases::clash(new_bases, &other.new_bases) => {
                Incompatible(format!("a concurrent {name} registered the same base"))
            }
            _ => Compatible,
        },
        // Keys of the table's maps: two changes of the same key (or of a map one replaces)
        // must be ordered by their writers; a new schema drops metadata changes meant
        // for the old one.
        Operation::UpdateConfig(u) => match theirs {
            PbOp::UpdateConfig(other) => match crate::table::config::overlap(u, other) {
                Some(what) => retry(&format!("changed {what}")),
                None => Compatible,
            },
            PbOp::Overwrite(_) | PbOp::Project(_) | PbOp::Merge(_) | PbOp::Restore(_)
                if crate::table::config::changes_schema(u) =>
            {
                retry("changed the schema")
            }
            _ => Compatible,
        },
        Operation::Append { .. } => {
            if replaces_table {
                replaced()
            } else {
                Compatible
            }
        }
        Operation::Overwrite { .. } => match theirs {
            PbOp::Overwrite(_) => retry("committed first"),
            PbOp::UpdateMemWalState(_) => replaced(),
            _ => Compatible,
        },
        // A restore wins over anything but a memory-WAL state change.
        Operation::Restore { .. } => match theirs {
            PbOp::UpdateMemWalState(_) => replaced(),
            _ => Compatible,
        },
        // Deletes and updates changed the fragments they read, and compaction rewrote them
        // as they were: the same fragments changed meanwhile (or new columns computed for
        // them) mean reading them again.
        Operation::Delete { .. } | Operation::Update { .. } | Operation::Rewrite { .. } => {
            if replaces_table {
                replaced()
            } else if let (Operation::Rewrite { .. }, PbOp::CreateIndex(ci)) = (ours, theirs) {
                rewrite_meets_new_indices(ours, ci)
            } else if matches!(theirs, PbOp::Merge(_)) {
                retry("added columns")
            } else if overlap() {
                retry(match ours {
                    Operation::Rewrite { .. } => "changed fragments being compacted",
                    _ => "changed the same fragments",
                })
            } else {
                Compatible
            }
        }
        // New columns were computed for the fragments as they were at the read version.
        Operation::Merge { .. } => match theirs {
            PbOp::Overwrite(_) | PbOp::Restore(_) | PbOp::UpdateMemWalState(_) => replaced(),
            PbOp::Project(_) => Incompatible(format!("a concurrent {name} changed the schema")),
            PbOp::CreateIndex(_)
            | PbOp::ReserveFragments(_)
            | PbOp::UpdateConfig(_)
            | PbOp::Clone(_)
            | PbOp::UpdateBases(_) => Compatible,
            _ => retry("changed the fragments"),
        },
        // An index was built from the rows of the fragments it lists, at their addresses
        // then: it stays true while those rows stay where they were with the values they
        // had (deleted rows are left out when it is read; new fragments are scanned).
        Operation::CreateIndex {
            new_indices,
            removed_indices,
        } => {
            let covered: std::collections::HashSet<u64> = new_indices
                .iter()
                .filter_map(|i| {
                    roaring::RoaringBitmap::deserialize_from(&i.fragment_bitmap[..]).ok()
                })
                .flat_map(|b| b.into_iter().map(u64::from))
                .collect();
            let fields: std::collections::HashSet<i32> = new_indices
                .iter()
                .flat_map(|i| i.fields.iter().copied())
                .collect();
            let moved = || touched_by(theirs).is_some_and(|t| !t.is_disjoint(&covered));
            match theirs {
                _ if replaces_table => replaced(),
                PbOp::CreateIndex(other) => {
                    let names = |l: &[crate::proto::table::IndexMetadata]| {
                        l.iter().map(|i| i.name.clone()).collect::<Vec<_>>()
                    };
                    let ours_names: Vec<String> = names(new_indices)
                        .into_iter()
                        .chain(names(removed_indices))
                        .collect();
                    let clash = names(&other.new_indices)
                        .into_iter()
                        .chain(names(&other.removed_indices))
                        .any(|n| ours_names.contains(&n));
                    match clash {
                        true => retry("changed the same index"),
                        false => Compatible,
                    }
                }
                PbOp::Rewrite(_) if moved() => retry("rewrote fragments the index covers"),
                PbOp::DataReplacement(d)
                    if moved()
                        && d.replacements.iter().any(|r| {
                            r.new_file
                                .as_ref()
                                .is_some_and(|f| f.fields.iter().any(|id| fields.contains(id)))
                        }) =>
                {
                    retry("replaced the data of the indexed column")
                }
                PbOp::Update(u)
                    if moved()
                        && (u.update_mode
                            != crate::proto::table::transaction::UpdateMode::RewriteRows
                                as i32
                            || u.fields_modified
                                .iter()
                                .any(|f| fields.contains(&(*f as i32)))) =>
                {
                    retry("changed values of the indexed column")
                }
                PbOp::Project(p) if !fields.iter().all(|f| p.schema.iter().any(|s| s.id == *f)) => {
                    Incompatible(format!("a concurrent {name} dropped the indexed column"))
                }
                _ => Compatible,
            }
        }
        // New files for some fields of some fragments: the same fragments rewritten
        // meanwhile, or an index built meanwhile over the replaced fields, mean preparing
        // it again; deletions do not touch data files.
        Operation::DataReplacement { replacements } => {
            let fields: std::collections::HashSet<i32> = replacements
                .iter()
                .flat_map(|(_, f)| f.fields.iter().copied())
                .collect();
            match theirs {
                _ if replaces_table => replaced(),
                PbOp::Merge(_) | PbOp::Project(_) => retry("changed the schema"),
                PbOp::Rewrite(_) | PbOp::DataReplacement(_) if overlap() => {
                    retry("rewrote the same fragments")
                }
                PbOp::Update(u) if overlap() && !u.fields_modified.is_empty() => {
                    retry("rewrote columns of the same fragments")
                }
                PbOp::CreateIndex(ci)
                    if ci.new_indices.iter().any(|i| {
                        i.fields.iter().any(|f| fields.contains(f))
                            && covers_any(i, &ours.touched())
                    }) =>
                {
                    retry("indexed the replaced columns")
                }
                _ => Compatible,
            }
        }
        // The fields were derived from the read version's schema.
        Operation::Project { tightens, .. } => match theirs {
            _ if replaces_table => replaced(),
            PbOp::Merge(_) | PbOp::Project(_) => retry("changed the schema"),
            PbOp::Append(_) | PbOp::Update(_) if *tightens => {
                retry("added rows, which may hold nulls where the column is made non-nullable")
            }
            _ => Compatible,
        },
    }
}

/// Whether `index` covers any of fragments `ids` (an index without a fragment list may
/// cover any).
fn covers_any(
    index: &crate::proto::table::IndexMetadata,
    ids: &std::collections::HashSet<u64>,
) -> bool {
    match roaring::RoaringBitmap::deserialize_from(&index.fragment_bitmap[..]) {
        Ok(b) if !index.fragment_bitmap.is_empty() => ids.iter().any(|&id| b.contains(id as u32)),
        _ => true,
    }
}

/// A compaction (which remaps no index) against indices created meanwhile, as pylance 14
/// decides: an index over a fragment it rewrote would point at rows that moved, so it
/// must be prepared again; an index whose fragments are not recorded may cover any. A
/// fragment-reuse index alone (pylance's deferred remapping) is compatible.
fn rewrite_meets_new_indices(
    ours: &Operation,
    theirs: &crate::proto::table::transaction::CreateIndex,
) -> Resolution {
    const FRAGMENT_REUSE_INDEX: &str = "__lance_frag_reuse";
    let retry = || {
        Resolution::Retryable(
            "a concurrent create index indexed fragments being compacted; retry on the new version"
                .into(),
        )
    };
    if theirs
        .new_indices
        .iter()
        .any(|i| i.name == FRAGMENT_REUSE_INDEX)
    {
        return if theirs.new_indices.len() == 1 && theirs.removed_indices.len() == 1 {
            Resolution::Compatible
        } else {
            Resolution::Incompatible(
                "a concurrent create index changed the fragment-reuse index with other indices"
                    .into(),
            )
        };
    }
    let rewritten = ours.touched();
    for index in &theirs.new_indices {
        let covered = match roaring::RoaringBitmap::deserialize_from(&index.fragment_bitmap[..]) {
            Ok(b) if !index.fragment_bitmap.is_empty() => b,
            _ => return retry(),
        };
        if rewritten.iter().any(|&id| covered.contains(id as u32)) {
            return retry();
        }
    }
    Resolution::Compatible
}

/// Whether `theirs` may have added a row with a key ours inserts (then ours, re-run,
/// finds it and updates it), as pylance 14 decides: by their inserted-keys filter; any
/// update without one, and any append, may have.
fn may_have_inserted_our_keys(keys: &InsertedKeys, theirs: &PbOp) -> Option<&'static str> {
    match theirs {
        PbOp::Update(u) => match &u.inserted_rows {
            Some(filter) if keys.may_share_a_key(filter) => {
                Some("inserted a key this merge inserts")
            }
            Some(_) => None,
            None => Some("changed rows without recording their keys"),
        },
        PbOp::Append(_) => Some("appended rows, which may hold a key this merge inserts"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::table::transaction as txn;
    use crate::proto::table::DataFragment;
    use crate::table::schema::LanceSchema;
    use bytes::Bytes;

    fn frag(id: u64) -> DataFragment {
        DataFragment {
            id,
            ..Default::default()
        }
    }

    /// One of each operation lance_core commits, changing fragment 1 where it changes one.
    fn ours() -> Vec<(&'static str, Operation)> {
        vec![
            ("append", Operation::Append { fragments: vec![] }),
            (
                "delete",
                Operation::Delete {
                    updated: vec![frag(1)],
                    deleted_ids: vec![],
                    predicate: "x".into(),
                },
            ),
            (
                "update",
                Operation::Update {
                    updated: vec![frag(1)],
                    removed_ids: vec![],
                    new_fragments: vec![],
                    fields_changed: vec![],
                    inserted_keys: None,
                    fields_modified: vec![],
                },
            ),
            (
                "overwrite",
                Operation::Overwrite {
                    fragments: vec![],
                    schema: LanceSchema::default(),
                    data_format: "2.1".into(),
                    stable_row_ids: false,
                    config_upsert: Default::default(),
                    initial_bases: vec![],
                },
            ),
            (
                "rewrite",
                Operation::Rewrite {
                    groups: vec![(vec![frag(1)], vec![])],
                    indices: Default::default(),
                },
            ),
            (
                "merge",
                Operation::Merge {
                    fragments: vec![],
                    schema: LanceSchema::default(),
                },
            ),
            (
                "restore",
                Operation::Restore {
                    version: 1,
                    manifest: Box::default(),
                    bytes: Bytes::new(),
                },
            ),
            (
                "project",
                Operation::Project {
                    fields: vec![],
                    tightens: false,
                },
            ),
        ]
    }

    /// An index over fragment `f`.
    fn index_over(f: u64) -> crate::proto::table::IndexMetadata {
        let mut bitmap = Vec::new();
        roaring::RoaringBitmap::from_iter([f as u32])
            .serialize_into(&mut bitmap)
            .unwrap();
        crate::proto::table::IndexMetadata {
            name: "id_idx".into(),
            fragment_bitmap: bitmap,
            ..Default::default()
        }
    }

    /// One of each committed operation, changing fragment `f` where it changes one.
    fn theirs(f: u64) -> Vec<(&'static str, PbOp)> {
        vec![
            ("append", PbOp::Append(txn::Append::default())),
            (
                "delete",
                PbOp::Delete(txn::Delete {
                    updated_fragments: vec![frag(f)],
                    ..Default::default()
                }),
            ),
            ("overwrite", PbOp::Overwrite(txn::Overwrite::default())),
            (
                "create index",
                PbOp::CreateIndex(txn::CreateIndex {
                    new_indices: vec![index_over(f)],
                    removed_indices: vec![],
                }),
            ),
            (
                "rewrite",
                PbOp::Rewrite(txn::Rewrite {
                    groups: vec![txn::rewrite::RewriteGroup {
                        old_fragments: vec![frag(f)],
                        new_fragments: vec![],
                    }],
                    ..Default::default()
                }),
            ),
            ("merge", PbOp::Merge(txn::Merge::default())),
            ("restore", PbOp::Restore(txn::Restore { version: 1 })),
            ("reserve", PbOp::ReserveFragments(Default::default())),
            (
                "update",
                PbOp::Update(txn::Update {
                    updated_fragments: vec![frag(f)],
                    ..Default::default()
                }),
            ),
            ("project", PbOp::Project(txn::Project::default())),
            ("config", PbOp::UpdateConfig(Default::default())),
        ]
    }

    /// pylance 14's outcomes (its conflict resolver), ours in rows, theirs in columns as in
    /// `theirs`: C compatible, R retryable, X incompatible; for the operations that change
    /// fragments, when theirs changed the same fragment (the rows) and another (`other`).
    const SAME: [(&str, &str); 8] = [
        ("append", "CCXCCCXCCCC"),
        ("delete", "CRXCRRXCRCC"),
        ("update", "CRXCRRXCRCC"),
        ("overwrite", "CCRCCCCCCCC"),
        ("rewrite", "CRXRRRXCRCC"),
        ("merge", "RRXCRRXCRXC"),
        ("restore", "CCCCCCCCCCC"),
        ("project", "CCXCCRXCCRC"),
    ];
    const OTHER: [(&str, &str); 3] = [
        ("delete", "CCXCCRXCCCC"),
        ("update", "CCXCCRXCCCC"),
        ("rewrite", "CCXCCRXCCCC"),
    ];

    fn letter(r: &Resolution) -> char {
        match r {
            Resolution::Compatible => 'C',
            Resolution::Retryable(_) => 'R',
            Resolution::Incompatible(_) => 'X',
        }
    }

    #[test]
    fn every_pair_resolves_as_in_pylance() {
        for (fragment, table) in [(1, &SAME[..]), (2, &OTHER[..])] {
            for (name, expected) in table {
                let op = ours().into_iter().find(|(n, _)| n == name).unwrap().1;
                let got: String = theirs(fragment)
                    .iter()
                    .map(|(_, t)| letter(&resolve(&op, Some(t))))
                    .collect();
                assert_eq!(
                    &got,
                    expected,
                    "ours {name}, theirs changed fragment {fragment}: {:?}",
                    theirs(fragment).iter().map(|(n, _)| *n).collect::<Vec<_>>()
                );
            }
        }
    }

    #[test]
    fn compaction_meets_indices_by_the_fragments_they_cover() {
        let ours = ours().into_iter().find(|(n, _)| *n == "rewrite").unwrap().1;
        let created = |new_indices, removed_indices| {
            PbOp::CreateIndex(txn::CreateIndex {
                new_indices,
                removed_indices,
            })
        };
        // An index that does not say which fragments it covers may cover ours.
        let unknown = crate::proto::table::IndexMetadata::default();
        let r = resolve(&ours, Some(&created(vec![unknown], vec![])));
        assert!(matches!(r, Resolution::Retryable(_)), "{r:?}");
        // A fragment-reuse index replacing the previous one: pylance's deferred remap.
        let mut reuse = index_over(1);
        reuse.name = "__lance_frag_reuse".into();
        let r = resolve(
            &ours,
            Some(&created(vec![reuse.clone()], vec![reuse.clone()])),
        );
        assert_eq!(r, Resolution::Compatible);
        let r = resolve(&ours, Some(&created(vec![reuse, index_over(2)], vec![])));
        assert!(matches!(r, Resolution::Incompatible(_)), "{r:?}");
    }

    #[test]
    fn an_unknown_commit_is_never_assumed_compatible() {
        for (name, op) in ours() {
            assert!(
                matches!(resolve(&op, None), Resolution::Incompatible(_)),
                "{name}"
            );
        }
    }

    #[test]
    fn making_a_column_non_nullable_retries_over_new_rows() {
        let ours = Operation::Project {
            fields: vec![],
            tightens: true,
        };
        let append = PbOp::Append(txn::Append::default());
        assert!(matches!(
            resolve(&ours, Some(&append)),
            Resolution::Retryable(_)
        ));
        let update = PbOp::Update(txn::Update::default());
        assert!(matches!(
            resolve(&ours, Some(&update)),
            Resolution::Retryable(_)
        ));
        let delete = PbOp::Delete(txn::Delete::default());
        assert_eq!(resolve(&ours, Some(&delete)), Resolution::Compatible);
    }

    #[test]
    fn merges_that_insert_meet_inserted_keys() {
        use arrow_array::{ArrayRef, Int64Array};
        use std::sync::Arc;
        let keys = |v: Vec<i64>| {
            InsertedKeys::of_rows(vec![0], &[Arc::new(Int64Array::from(v)) as ArrayRef]).unwrap()
        };
        // Ours inserts key 5 into fragment 9 (touching none of theirs).
        let ours = Operation::Update {
            updated: vec![],
            removed_ids: vec![],
            new_fragments: vec![frag(9)],
            fields_changed: vec![],
            inserted_keys: Some(keys(vec![5])),
            fields_modified: vec![],
        };
        let merge = |k: Option<InsertedKeys>| {
            PbOp::Update(txn::Update {
                inserted_rows: k.map(|k| k.to_proto()),
                ..Default::default()
            })
        };
        let is_retry = |r: Resolution| matches!(r, Resolution::Retryable(_));
        assert!(is_retry(resolve(
            &ours,
            Some(&merge(Some(keys(vec![4, 5]))))
        )));
        assert_eq!(
            resolve(&ours, Some(&merge(Some(keys(vec![6, 7]))))),
            Resolution::Compatible
        );
        // An update that recorded no keys, or an append, may hold the key: re-run.
        assert!(is_retry(resolve(&ours, Some(&merge(None)))));
        assert!(is_retry(resolve(
            &ours,
            Some(&PbOp::Append(Default::default()))
        )));
        // A table replaced meanwhile stays incompatible.
        let overwrite = PbOp::Overwrite(Default::default());
        assert!(matches!(
            resolve(&ours, Some(&overwrite)),
            Resolution::Incompatible(_)
        ));
        // A merge that inserts nothing is not checked by keys.
        let plain = Operation::Update {
            updated: vec![],
            removed_ids: vec![],
            new_fragments: vec![frag(9)],
            fields_changed: vec![],
            inserted_keys: None,
            fields_modified: vec![],
        };
        assert_eq!(
            resolve(&plain, Some(&merge(Some(keys(vec![5]))))),
            Resolution::Compatible
        );
    }
}
