//! The table format: manifests and their versions, schemas with field ids, fragments and
//! their data files, deletion files, stable row ids and feature flags.
pub mod auto_cleanup;
pub mod bases;
pub mod branches;
pub mod cleanup;
pub mod commit;
pub mod config;
pub mod data_file;
pub mod deletion;
pub mod features;
pub mod fragment_json;
pub mod index_segments;
pub mod manifest;
pub mod primary_key;
pub mod row_index;
pub mod row_versions;
pub mod rowids;
pub mod schema;
pub mod schema_json;
pub mod tags;
pub mod tracked_files;
pub mod transaction;
pub mod validate;
pub mod versions;
