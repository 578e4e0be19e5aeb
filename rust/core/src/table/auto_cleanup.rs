//! Automatic cleanup after a commit, as the table's config asks (the keys pylance writes
//! for `auto_cleanup_options` and `optimize.enable_auto_cleanup`): every
//! `lance.auto_cleanup.interval`-th version, versions older than
//! `lance.auto_cleanup.older_than` (a duration such as "14d", "1h 30m", "500ms") go.
//! The version the commit was made on and the new one always stay (as in pylance, which
//! cleans up from the dataset it committed on), and so do the newest
//! `lance.auto_cleanup.retain_versions`.
use std::collections::HashMap;

use crate::error::{Error, Result};
use crate::storage::Storage;
use crate::table::cleanup::{cleanup_old_versions, CleanupOptions, CleanupStats};

pub const INTERVAL: &str = "lance.auto_cleanup.interval";
pub const OLDER_THAN: &str = "lance.auto_cleanup.older_than";
pub const RETAIN_VERSIONS: &str = "lance.auto_cleanup.retain_versions";

/// What cleanup, if any, the commit of `version` under `config` asks for.
pub fn policy(
    config: &HashMap<String, String>,
    version: u64,
    now_nanos: i64,
) -> Result<Option<CleanupOptions>> {
    let Some(interval) = config.get(INTERVAL) else {
        return Ok(None);
    };
    let interval: u64 = interval
        .trim()
        .parse()
        .map_err(|_| Error::invalid(format!("{INTERVAL} is not a whole number: '{interval}'")))?;
    if interval != 0 && !version.is_multiple_of(interval) {
        return Ok(None);
    }
    let before_nanos = match config.get(OLDER_THAN) {
        Some(text) => Some(now_nanos.saturating_sub(duration_nanos(text)?)),
        None => None,
    };
    let retain = match config.get(RETAIN_VERSIONS) {
        Some(n) => n.trim().parse::<u64>().map_err(|_| {
            Error::invalid(format!("{RETAIN_VERSIONS} is not a whole number: '{n}'"))
        })?,
        None => 0,
    };
    Ok(Some(CleanupOptions {
        before_nanos,
        retain_versions: Some(retain.max(2)),
        delete_unverified: false,
        error_if_tagged_old_versions: false,
        versions: None,
        delete_rate_limit: None,
    }))
}

/// Run the cleanup the config asks for after committing `version`. A bad config value is
/// an error here; the caller, whose commit has succeeded, does not fail because of it.
pub async fn after_commit(
    storage: &Storage,
    config: &HashMap<String, String>,
    version: u64,
) -> Result<Option<CleanupStats>> {
    let now = chrono::Utc::now().timestamp_nanos_opt().unwrap_or(i64::MAX);
    match policy(config, version, now)? {
        Some(opts) => Ok(Some(cleanup_old_versions(storage, &opts).await?)),
        None => Ok(None),
    }
}

/// A duration as humans write it: numbers each followed by a unit (ns, us, ms, s, m,
/// h, d, w, and their long names), summed ("1h 30m").
pub fn duration_nanos(text: &str) -> Result<i64> {
    let bad = || {
        Error::invalid(format!(
            "{OLDER_THAN}: cannot read '{text}' as a duration (e.g. 14d, 1h 30m, 500ms)"
        ))
    };
    let mut total: i128 = 0;
    let mut rest = text.trim();
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits == 0 {
            return Err(bad());
        }
        let number: i128 = rest[..digits].parse().map_err(|_| bad())?;
        rest = rest[digits..].trim_start();
        let unit_len = rest
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(rest.len());
        let unit = match &rest[..unit_len] {
            "ns" | "nsec" | "nanos" => 1,
            "us" | "usec" | "micros" => 1_000,
            "ms" | "msec" | "millis" => 1_000_000,
            "s" | "sec" | "secs" | "second" | "seconds" => 1_000_000_000,
            "m" | "min" | "mins" | "minute" | "minutes" => 60 * 1_000_000_000,
            "h" | "hr" | "hrs" | "hour" | "hours" => 3_600 * 1_000_000_000,
            "d" | "day" | "days" => 86_400 * 1_000_000_000,
            "w" | "week" | "weeks" => 7 * 86_400 * 1_000_000_000,
            _ => return Err(bad()),
        };
        total += number * unit;
        rest = rest[unit_len..].trim_start();
    }
    i64::try_from(total).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn durations() {
        assert_eq!(duration_nanos("1ms").unwrap(), 1_000_000);
        assert_eq!(duration_nanos("1h 30m").unwrap(), 5_400 * 1_000_000_000);
        assert_eq!(duration_nanos("14d").unwrap(), 14 * 86_400 * 1_000_000_000);
        assert_eq!(duration_nanos("1m").unwrap(), 60 * 1_000_000_000);
        for bad in ["", "d", "5", "5 parsecs", "-1s"] {
            assert!(duration_nanos(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn every_interval_th_version() {
        let c = config(&[(INTERVAL, "3"), (OLDER_THAN, "1s")]);
        assert!(policy(&c, 4, 10_000_000_000).unwrap().is_none());
        let p = policy(&c, 6, 10_000_000_000).unwrap().unwrap();
        assert_eq!(p.before_nanos, Some(9_000_000_000));
        assert_eq!(p.retain_versions, Some(2));
        assert!(policy(&config(&[]), 6, 0).unwrap().is_none());
        assert!(policy(&config(&[(INTERVAL, "x")]), 6, 0).is_err());
        let keep5 = config(&[(INTERVAL, "1"), (RETAIN_VERSIONS, "5")]);
        assert_eq!(
            policy(&keep5, 7, 0).unwrap().unwrap().retain_versions,
            Some(5)
        );
    }
}
