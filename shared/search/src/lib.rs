//! SQLite FTS5 as the engine of `workspace_core::search`, chosen by measurement
//! (docs/search.md, "The engine"): BM25 ranking (`bm25()`), the Porter stemmer over Unicode
//! words, a `trigram` tokenizer that narrows substring searches, and about 1 MB added to a
//! binary.
//!
//! One database per workspace, so a workspace's index is one file that can live beside
//! the embedded store or, on AWS, under the workspace's own prefix.

mod index;
mod indexes;
mod shared;

pub use index::SqliteIndex;
pub use indexes::LocalIndexes;
pub use shared::{SharedIndexes, MAX_CACHED_INDEXES};
