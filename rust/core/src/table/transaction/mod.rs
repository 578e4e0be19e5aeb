//! Transactions: what every writer ends with. A writer stages files, describes what it
//! changes as an `Operation`, and commits it (`crate::table::commit`), which checks the
//! operation against what other writers committed meanwhile (`conflict`) and records it
//! in the new version's transaction (`read` reads those back).
pub mod conflict;
pub mod key_filter;
pub mod operation;
pub mod read;
pub mod staged;

pub use conflict::{resolve, Resolution};
pub use key_filter::InsertedKeys;
pub use operation::{op_name, IndicesMoved, Operation};
pub use staged::Staged;
