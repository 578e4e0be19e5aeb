//! What Spark's readers and writers need from the core: Spark's types for Arrow's (and
//! the layouts Spark's column vectors read), Spark's pushed filters as predicates,
//! Spark's rows in a table's types for writes (`table_types`), a catalog table's properties
//! as write arguments (`table_properties`), and the statements of the
//! SQL extension (`commands`) and its `VECTOR_SEARCH` table function (`vector_search`). The JVM side (`rust/jni`) and the Python data source use
//! them.
pub mod commands;
pub mod filters;
pub mod table_properties;
pub mod table_types;
pub mod types;
pub mod vector_search;
