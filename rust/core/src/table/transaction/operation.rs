//! The operation model: what a commit changes, and its record in a transaction.
use std::collections::{HashMap, HashSet};

use bytes::Bytes;

use crate::proto::table::transaction::{self as txn, Operation as PbOp};
use crate::proto::table::{BasePath, DataFragment, IndexMetadata, Manifest};
use crate::table::schema::LanceSchema;

use super::InsertedKeys;

/// What a commit changes.
#[derive(Clone, Debug)]
pub enum Operation {
    /// New fragments (ids are assigned at commit).
    Append { fragments: Vec<DataFragment> },
    /// Replace every fragment, and the schema.
    Overwrite {
        fragments: Vec<DataFragment>,
        schema: LanceSchema,
        data_format: String,
        stable_row_ids: bool,
        /// Set in the table's config (pylance's `config_upsert_values`: a create's
        /// `auto_cleanup_options`).
        config_upsert: HashMap<String, String>,
        /// Base paths a new table registers (ids assigned); an overwrite of an existing
        /// table keeps its bases and registers none.
        initial_bases: Vec<BasePath>,
    },
    /// Base paths registered on an existing table (ids as given, 0 to be assigned).
    UpdateBases { new_bases: Vec<BasePath> },
    /// A new table made from another table's version `ref_version` (at `ref_path`, of
    /// branch or tag `ref_name`): that version's manifest (and its file's bytes, which
    /// hold its index section) becomes the new table's, at the same version number. A
    /// shallow clone refers to the source's files through a new base path; a deep clone
    /// has its own copies.
    Clone {
        shallow: bool,
        ref_name: Option<String>,
        ref_version: u64,
        ref_path: String,
        /// The branch the clone is (None: a table of its own).
        branch_name: Option<String>,
        manifest: Box<Manifest>,
        bytes: Bytes,
    },
    /// Fragments with new deletion files, and fragments deleted entirely.
    Delete {
        updated: Vec<DataFragment>,
        deleted_ids: Vec<u64>,
        predicate: String,
    },
    /// Every fragment, some with new data files, and the schema with the new columns.
    Merge {
        fragments: Vec<DataFragment>,
        schema: LanceSchema,
    },
    /// Make an earlier version the newest: its manifest (and its file's bytes, which hold
    /// its index section) again, with fragment and row ids still counting on from the
    /// latest version so that none is reused.
    Restore {
        version: u64,
        manifest: Box<Manifest>,
        bytes: Bytes,
    },
    /// A new schema over the same data (columns dropped, renamed, made nullable): the
    /// manifest's field list as is, so that everything else a field carries stays. Data
    /// files left with no field of the schema leave their fragments. `tightens`: a column
    /// became non-nullable, which rows appended meanwhile could break.
    Project {
        fields: Vec<crate::proto::file::Field>,
        tightens: bool,
    },
    /// Compaction: each group's old fragments replaced, where the first of them stood, by
    /// new fragments holding the same rows (ids assigned at commit unless reserved; their
    /// row-id sequences are given, so stable row ids move with their rows).
    Rewrite {
        groups: Vec<(Vec<DataFragment>, Vec<DataFragment>)>,
        indices: IndicesMoved,
    },
    /// Fragment ids set aside for a later commit (a compaction that must know its new
    /// fragments' ids to rewrite index addresses before it commits).
    /// `checked_as`: the operation the ids are for, which the reservation is checked as
    /// (a compaction that could not follow what was committed meanwhile reserves nothing).
    ReserveFragments {
        count: u32,
        checked_as: Option<Box<Operation>>,
    },
    /// Rows changed in place (update, merge_insert): the old copies deleted from their
    /// fragments (new deletion files; a fragment left empty is removed), the new rows in
    /// new fragments (ids assigned at commit). A new fragment whose row-id sequence is
    /// given holds moved rows, which keep their stable row ids; one without gets fresh ids.
    Update {
        updated: Vec<DataFragment>,
        removed_ids: Vec<u64>,
        new_fragments: Vec<DataFragment>,
        /// The columns whose values changed (pylance's `fields_for_preserving_frag_bitmap`).
        fields_changed: Vec<u32>,
        /// A merge_insert's inserted keys, for concurrent merges to check against.
        inserted_keys: Option<InsertedKeys>,
        /// Fields whose values `updated` fragments hold in new data files (columns
        /// rewritten in place, pylance's `rewrite_columns` update): indices over them no
        /// longer cover those fragments.
        fields_modified: Vec<u32>,
    },
    /// Data files replaced by files holding the same fields, fragment by fragment
    /// (pylance's `DataReplacement`); a file for fields none of the fragment's files holds
    /// (a column of nulls until now) is added to it.
    DataReplacement {
        replacements: Vec<(u64, crate::proto::table::DataFile)>,
    },
    /// The table's config and metadata, the schema's metadata or fields' metadata
    /// changed (keys set or removed; a map replaced when asked): nothing else.
    UpdateConfig(txn::UpdateConfig),
    /// Index segments added and removed (an index built, replaced, updated or dropped):
    /// only the manifest's index section changes.
    CreateIndex {
        new_indices: Vec<IndexMetadata>,
        removed_indices: Vec<IndexMetadata>,
    },
}

/// What a compaction does to the indices over the fragments it rewrites (each of its groups
/// lies wholly inside or wholly outside an index's fragments). Any other index just stops
/// covering the old fragments.
#[derive(Clone, Debug, Default)]
pub struct IndicesMoved {
    /// Segments rewritten with the rows' new addresses: they cover the new fragments.
    pub rewritten: Vec<crate::proto::table::transaction::rewrite::RewrittenIndex>,
    /// Uuids of segments whose entries hold stable row ids, which moved rows keep: they
    /// cover the new fragments as they are.
    pub following_rows: Vec<Vec<u8>>,
    /// The new fragments carry ids reserved for them (`ReserveFragments`).
    pub ids_reserved: bool,
}

impl Operation {
    /// The operation as a transaction records it.
    pub fn to_proto(&self) -> PbOp {
        match self {
            Operation::Append { fragments } => PbOp::Append(txn::Append {
                fragments: fragments.clone(),
            }),
            Operation::Overwrite {
                fragments,
                schema,
                config_upsert,
                initial_bases,
                ..
            } => PbOp::Overwrite(txn::Overwrite {
                fragments: fragments.clone(),
                schema: schema.to_proto(),
                schema_metadata: schema.metadata_proto(),
                config_upsert_values: config_upsert.clone(),
                initial_bases: initial_bases.clone(),
            }),
            Operation::UpdateBases { new_bases } => PbOp::UpdateBases(txn::UpdateBases {
                new_bases: new_bases.clone(),
            }),
            Operation::Clone {
                shallow,
                ref_name,
                ref_version,
                ref_path,
                branch_name,
                ..
            } => PbOp::Clone(txn::Clone {
                is_shallow: *shallow,
                ref_name: ref_name.clone(),
                ref_version: *ref_version,
                ref_path: ref_path.clone(),
                branch_name: branch_name.clone(),
            }),
            Operation::Delete {
                updated,
                deleted_ids,
                predicate,
            } => PbOp::Delete(txn::Delete {
                updated_fragments: updated.clone(),
                deleted_fragment_ids: deleted_ids.clone(),
                predicate: predicate.clone(),
            }),
            Operation::Merge { fragments, schema } => PbOp::Merge(txn::Merge {
                fragments: fragments.clone(),
                schema: schema.to_proto(),
                schema_metadata: schema.metadata_proto(),
            }),
            Operation::Restore { version, .. } => PbOp::Restore(txn::Restore { version: *version }),
            Operation::UpdateConfig(u) => PbOp::UpdateConfig(u.clone()),
            Operation::Project { fields, .. } => PbOp::Project(txn::Project {
                schema: fields.clone(),
            }),
            Operation::Rewrite { groups, indices } => PbOp::Rewrite(txn::Rewrite {
                groups: groups
                    .iter()
                    .map(|(old, new)| txn::rewrite::RewriteGroup {
                        old_fragments: old.clone(),
                        new_fragments: new.clone(),
                    })
                    .collect(),
                rewritten_indices: indices.rewritten.clone(),
                ..Default::default()
            }),
            Operation::ReserveFragments { count, .. } => {
                PbOp::ReserveFragments(txn::ReserveFragments {
                    num_fragments: *count,
                })
            }
            Operation::Update {
                updated,
                removed_ids,
                new_fragments,
                fields_changed,
                inserted_keys,
                fields_modified,
            } => PbOp::Update(txn::Update {
                removed_fragment_ids: removed_ids.clone(),
                updated_fragments: updated.clone(),
                new_fragments: new_fragments.clone(),
                fields_modified: fields_modified.clone(),
                fields_for_preserving_frag_bitmap: fields_changed.clone(),
                update_mode: match fields_modified.is_empty() {
                    true => txn::UpdateMode::RewriteRows,
                    false => txn::UpdateMode::RewriteColumns,
                } as i32,
                inserted_rows: inserted_keys.as_ref().map(InsertedKeys::to_proto),
            }),
            Operation::DataReplacement { replacements } => {
                PbOp::DataReplacement(txn::DataReplacement {
                    replacements: replacements
                        .iter()
                        .map(|(id, file)| txn::DataReplacementGroup {
                            fragment_id: *id,
                            new_file: Some(file.clone()),
                        })
                        .collect(),
                })
            }
            Operation::CreateIndex {
                new_indices,
                removed_indices,
            } => PbOp::CreateIndex(txn::CreateIndex {
                new_indices: new_indices.clone(),
                removed_indices: removed_indices.clone(),
            }),
        }
    }

    /// Fragments this operation changes in place.
    pub fn touched(&self) -> HashSet<u64> {
        match self {
            Operation::Rewrite { groups, .. } => groups
                .iter()
                .flat_map(|g| g.0.iter().map(|f| f.id))
                .collect(),
            Operation::Delete {
                updated,
                deleted_ids: removed,
                ..
            }
            | Operation::Update {
                updated,
                removed_ids: removed,
                ..
            } => updated
                .iter()
                .map(|f| f.id)
                .chain(removed.iter().copied())
                .collect(),
            Operation::DataReplacement { replacements } => {
                replacements.iter().map(|(id, _)| *id).collect()
            }
            _ => HashSet::new(),
        }
    }
}

/// A readable name of a committed operation.
pub fn op_name(op: &PbOp) -> &'static str {
    match op {
        PbOp::Append(_) => "append",
        PbOp::Delete(_) => "delete",
        PbOp::Overwrite(_) => "overwrite",
        PbOp::CreateIndex(_) => "create index",
        PbOp::Rewrite(_) => "rewrite (compaction)",
        PbOp::Merge(_) => "merge (add columns)",
        PbOp::Restore(_) => "restore",
        PbOp::ReserveFragments(_) => "reserve fragments",
        PbOp::Update(_) => "update",
        PbOp::Project(_) => "project (drop columns)",
        PbOp::UpdateConfig(_) => "update config",
        PbOp::DataReplacement(_) => "data replacement",
        PbOp::UpdateMemWalState(_) => "update mem wal state",
        PbOp::Clone(_) => "clone",
        PbOp::UpdateBases(_) => "update bases",
    }
}

/// Fragments another committed operation changed in place or removed.
pub fn touched_by(op: &PbOp) -> Option<HashSet<u64>> {
    Some(match op {
        PbOp::Delete(d) => d
            .updated_fragments
            .iter()
            .map(|f| f.id)
            .chain(d.deleted_fragment_ids.iter().copied())
            .collect(),
        PbOp::Update(u) => u
            .updated_fragments
            .iter()
            .map(|f| f.id)
            .chain(u.removed_fragment_ids.iter().copied())
            .collect(),
        PbOp::Rewrite(r) => r
            .old_fragments
            .iter()
            .chain(r.groups.iter().flat_map(|g| g.old_fragments.iter()))
            .map(|f| f.id)
            .collect(),
        PbOp::DataReplacement(d) => d.replacements.iter().map(|r| r.fragment_id).collect(),
        _ => return None,
    })
}
