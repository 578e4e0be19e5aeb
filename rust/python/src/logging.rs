//! The core's log records, shown as pylance's environment variables ask: `LANCE_LOG` (a
//! filter: `debug`, `info`, `lance_core=debug,warn`; warnings only when unset),
//! `LANCE_LOG_FILE` (append to that file, its directories made; stderr if it cannot be
//! opened, saying why) and `LANCE_LOG_TS_PRECISION` (`s`, `ms`, `us` or `ns`).
use std::io::Write;

pub fn init() {
    let mut builder = env_logger::Builder::new();
    builder.parse_filters(&std::env::var("LANCE_LOG").unwrap_or_else(|_| "warn".into()));
    match std::env::var("LANCE_LOG_TS_PRECISION").as_deref() {
        Ok("s") => builder.format_timestamp_secs(),
        Ok("ms") => builder.format_timestamp_millis(),
        Ok("us") => builder.format_timestamp_micros(),
        _ => builder.format_timestamp_nanos(),
    };
    if let Ok(path) = std::env::var("LANCE_LOG_FILE") {
        match open(&path) {
            Ok(file) => {
                builder.target(env_logger::Target::Pipe(Box::new(file)));
            }
            Err(e) => {
                let _ = writeln!(
                    std::io::stderr(),
                    "lance_core: cannot log to LANCE_LOG_FILE={path}: {e}; logging to stderr"
                );
            }
        }
    }
    // A logger set by someone else (another extension) stays.
    let _ = builder.try_init();
}

fn open(path: &str) -> std::io::Result<std::fs::File> {
    if let Some(dir) = std::path::Path::new(path).parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
}
