//! The Rust code blocks of the README and the documentation pages, compiled and run as
//! doc tests (`cargo test --doc -p replyparse-doctests`). Not published: the pages are
//! the repository's. `tests/test_docs.py` checks that every page with a Rust block is
//! included here.

#[doc = include_str!("../../../README.md")]
pub mod readme {}

#[doc = include_str!("../../../docs/rust.md")]
pub mod docs_rust {}

#[doc = include_str!("../../../docs/response-templates.md")]
pub mod docs_response_templates {}
#[doc = include_str!("../../../docs/deriving-a-dialect.md")]
pub mod docs_deriving_a_dialect {}
