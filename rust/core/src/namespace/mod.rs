//! Catalogs that name tables by ids (`["workspace", "events"]`) instead of URIs, as the
//! Lance namespace protocol has them: `directory` is pylance's `DirectoryNamespace` (a
//! catalog kept in a directory, in pylance's layout, so that either library reads what the
//! other wrote), `manifest` its `__manifest` table, `rest` a client of a namespace REST
//! server, and `connect` the one a catalog's properties name. The protocol's requests and responses
//! (their wire form, call counters, data carried as Arrow IPC) stay with the bindings;
//! what is here is every rule about where a table is and what the catalog holds.
mod connect;
mod directory;
mod manifest;
mod rest;
#[cfg(test)]
mod tests;

pub use crate::error::NamespaceErrorKind;
pub use connect::{Namespace, TableLocation};
pub use directory::{
    full_uri, CreatedTable, DirectoryNamespace, TableDescription, DEREGISTERED, RESERVED,
};
pub use manifest::{manifest_schema, Entry, ManifestTable, NAMESPACE, TABLE};
pub use rest::{RestNamespace, RestTable};

use crate::error::Error;

/// The separator of an id's parts in an object id (`["a", "b"]` is `a$b`), as pylance's.
pub const DELIMITER: &str = "$";

/// Properties of a namespace, in the order they were given.
pub type Properties = Vec<(String, String)>;

/// The object id of `parts`: the parts joined by `DELIMITER`.
pub fn object_id(parts: &[String]) -> String {
    parts.join(DELIMITER)
}

/// One page of a listing: names, sorted, and the token of the next page when more are
/// left.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Page {
    pub names: Vec<String>,
    pub page_token: Option<String>,
}

/// A page of `names`, sorted: those after `page_token`, at most `limit` (a negative limit
/// is none); the next page's token is the page's last name when it was cut short.
pub fn paginate(mut names: Vec<String>, page_token: Option<&str>, limit: Option<i64>) -> Page {
    names.sort();
    if let Some(token) = page_token.filter(|t| !t.is_empty()) {
        names.retain(|n| n.as_str() > token);
    }
    match limit.and_then(|l| usize::try_from(l).ok()) {
        Some(limit) if names.len() > limit => {
            names.truncate(limit);
            let page_token = names.last().cloned();
            Page { names, page_token }
        }
        _ => Page {
            names,
            page_token: None,
        },
    }
}

/// A namespace error of `kind`.
pub(crate) fn refused(kind: NamespaceErrorKind, message: impl std::fmt::Display) -> Error {
    Error::namespace(kind, message)
}

/// `parts` as Python prints a list of strings (`['a', 'b']`): pylance's messages show ids
/// so, and users match on them.
pub(crate) fn python_list(parts: &[String]) -> String {
    let items: Vec<String> = parts.iter().map(|p| python_str(p)).collect();
    format!("[{}]", items.join(", "))
}

/// A string as Python's `repr` prints it: single quotes unless it holds one and no double
/// quote; backslashes, the quote and control characters escaped.
fn python_str(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}
