//! The files of one distributed job (a Spark job's tasks write data files, or index
//! segments, and one driver commits them): the staged-files guard for writers in many
//! processes. Data files are found by the token their names start with (`prefix`, the
//! writer's `file_prefix`), index segments by uuids chosen before any task runs, so that a
//! job that does not commit leaves none behind even when some tasks finish late: `abort`
//! writes a marker, then deletes every file with the token and every segment; a task
//! checks for the marker after writing (`keep`) and deletes its own files when it is
//! there. Both Spark sides use it: the Python data source and jobs (`spark/jobs.py`) and
//! the JVM writer (`rust/jni`).
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::storage::{Storage, StorageOptions};

pub struct JobFiles {
    uri: String,
    options: StorageOptions,
    storage: Storage,
    prefix: String,
}

impl JobFiles {
    /// The files of the job writing with `prefix` into the table at `uri`.
    pub fn new(uri: &str, options: &StorageOptions, prefix: &str) -> Result<Self> {
        if prefix.is_empty() || prefix.contains('/') || prefix.contains("..") {
            return Err(Error::invalid(format!(
                "{uri}: '{prefix}' is not a job's file prefix"
            )));
        }
        Ok(JobFiles {
            uri: uri.to_string(),
            options: options.clone(),
            storage: Storage::open(uri, options)?,
            prefix: prefix.to_string(),
        })
    }

    fn marker(&self) -> String {
        format!("_spark_aborted/{}", self.prefix.trim_end_matches('-'))
    }

    /// Delete data files `paths` (names in `data/`) and index segments `index_uuids`
    /// (their directories `_indices/<uuid>/`); missing ones are fine.
    pub async fn delete(&self, paths: &[String], index_uuids: &[String]) -> Result<()> {
        for p in paths {
            if p.contains("..") || p.starts_with('/') {
                return Err(Error::invalid(format!(
                    "{}: '{p}' is not a data file name",
                    self.uri
                )));
            }
            self.storage
                .delete(&self.storage.path(&format!("data/{p}")))
                .await?;
        }
        for u in index_uuids {
            if u.is_empty() || !u.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
                return Err(Error::invalid(format!(
                    "{}: '{u}' is not an index segment's uuid",
                    self.uri
                )));
            }
            self.storage.delete_tree(&format!("_indices/{u}")).await?;
        }
        Ok(())
    }

    /// In a task, after writing `paths` and `index_uuids`: false (and the files deleted)
    /// when the job was aborted meanwhile.
    pub async fn keep(&self, paths: &[String], index_uuids: &[String]) -> Result<bool> {
        if self
            .storage
            .exists(&self.storage.path(&self.marker()))
            .await?
        {
            self.delete(paths, index_uuids).await?;
            return Ok(false);
        }
        Ok(true)
    }

    /// Remove the job's files (`known` ones and any with the token) and its index
    /// segments, unless the table's latest version refers to one of them or cannot be
    /// read: a commit whose answer was lost may have happened, and its version must keep
    /// its files (orphans at worst, which a cleanup of old versions removes).
    pub async fn abort(&self, known: &[String], index_uuids: &[String]) -> Result<()> {
        if self.maybe_committed(known, index_uuids).await {
            return Ok(());
        }
        self.storage
            .put(
                &self.storage.path(&self.marker()),
                bytes::Bytes::from_static(b"aborted"),
            )
            .await?;
        let mut paths: Vec<String> = known.to_vec();
        for found in self.storage.list_dir("data").await? {
            if let Some(name) = found.location.filename() {
                if name.starts_with(&self.prefix) {
                    paths.push(name.to_string());
                }
            }
        }
        paths.sort();
        paths.dedup();
        self.delete(&paths, index_uuids).await
    }

    async fn maybe_committed(&self, known: &[String], index_uuids: &[String]) -> bool {
        let ds = match Dataset::open(&self.uri, None, self.options.clone()).await {
            Ok(ds) => ds,
            Err(Error::NotFound { .. }) => return false,
            Err(_) => return true,
        };
        let ours = |path: &str| {
            let name = path.rsplit('/').next().unwrap_or(path);
            name.starts_with(&self.prefix) || known.iter().any(|k| k == path)
        };
        if ds
            .fragments()
            .iter()
            .any(|f| f.files.iter().any(|d| ours(&d.path)))
        {
            return true;
        }
        if index_uuids.is_empty() {
            return false;
        }
        match ds.index_segments() {
            Ok(segments) => segments.iter().any(|s| index_uuids.contains(&s.uuid)),
            Err(_) => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int64Array, RecordBatch};
    use arrow_schema::{DataType, Field, Schema};

    use super::*;
    use crate::test_util::{uri, write};
    use crate::write::commit::{commit_external, External};
    use crate::write::{write_uncommitted, WriteMode, WriteOptions};

    fn rows(n: i64) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
        RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from_iter_values(0..n))]).unwrap()
    }

    /// Data files a task of job `prefix` writes into the table at `uri`.
    async fn task(uri: &str, prefix: &str) -> Vec<crate::proto::table::DataFragment> {
        let batch = rows(10);
        let opts = WriteOptions {
            mode: WriteMode::Append,
            file_prefix: prefix.into(),
            ..Default::default()
        };
        let stream = futures::stream::iter(vec![Ok(batch.clone())]);
        write_uncommitted(uri, batch.schema(), stream, opts)
            .await
            .unwrap()
            .0
    }

    async fn data_files(uri: &str) -> Vec<String> {
        let storage = Storage::open(uri, &Default::default()).unwrap();
        let mut names: Vec<String> = storage
            .list_dir("data")
            .await
            .unwrap()
            .iter()
            .filter_map(|m| m.location.filename().map(String::from))
            .collect();
        names.sort();
        names
    }

    #[tokio::test]
    async fn an_aborted_job_leaves_nothing_and_a_late_task_cleans_up_after_itself() {
        let uri = uri();
        write(&uri, rows(5), WriteMode::Create, 100).await;
        let before = data_files(&uri).await;
        let job = JobFiles::new(&uri, &Default::default(), "spark-0123456789abcdef-").unwrap();
        let early = task(&uri, "spark-0123456789abcdef-").await;
        assert_eq!(data_files(&uri).await.len(), before.len() + 1);
        let early_paths: Vec<String> = early[0].files.iter().map(|d| d.path.clone()).collect();
        assert!(job.keep(&early_paths, &[]).await.unwrap());
        job.abort(&[], &[]).await.unwrap(); // found by the token alone
        assert_eq!(data_files(&uri).await, before);
        // A task that finishes after the abort removes its own files.
        let late = task(&uri, "spark-0123456789abcdef-").await;
        let late_paths: Vec<String> = late[0].files.iter().map(|d| d.path.clone()).collect();
        assert!(!job.keep(&late_paths, &[]).await.unwrap());
        assert_eq!(data_files(&uri).await, before);
    }

    #[tokio::test]
    async fn files_a_version_refers_to_are_kept() {
        let uri = uri();
        write(&uri, rows(5), WriteMode::Create, 100).await;
        let job = JobFiles::new(&uri, &Default::default(), "spark-fedcba9876543210-").unwrap();
        let fragments = task(&uri, "spark-fedcba9876543210-").await;
        // The commit happened, but its answer was lost: the job is aborted all the same.
        commit_external(
            &uri,
            &Default::default(),
            Some(1),
            External::Append { fragments },
            Default::default(),
            false,
        )
        .await
        .unwrap();
        let committed = data_files(&uri).await;
        job.abort(&[], &[]).await.unwrap();
        assert_eq!(data_files(&uri).await, committed);
        assert!(JobFiles::new(&uri, &Default::default(), "../x").is_err());
    }
}
