//! Base paths as Python passes them: `(id, name, is_dataset_root, path)` tuples, the
//! fields of `lance_core.DatasetBasePath` (id 0: not assigned yet).
use lance_core::proto::table::BasePath;

pub type BaseArg = (u32, Option<String>, bool, String);

pub fn from_args(args: Option<Vec<BaseArg>>) -> Vec<BasePath> {
    args.unwrap_or_default()
        .into_iter()
        .map(|(id, name, is_dataset_root, path)| BasePath {
            id,
            name,
            is_dataset_root,
            path,
        })
        .collect()
}

pub fn to_args(bases: &[BasePath]) -> Vec<BaseArg> {
    bases
        .iter()
        .map(|b| (b.id, b.name.clone(), b.is_dataset_root, b.path.clone()))
        .collect()
}
