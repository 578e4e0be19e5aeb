//! What a reader handing batches straight to Spark needs from the core: Spark's types for
//! Arrow's (and the layouts Spark's column vectors read), and Spark's pushed filters as
//! predicates. The JVM reader (`rust/jni`) uses both.
pub mod filters;
pub mod types;
