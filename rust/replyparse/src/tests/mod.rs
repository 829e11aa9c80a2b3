//! Tests of the grammar families through whole parsers, one file per family, and of
//! the declarations as the registry reads them.
//!
//! A grammar's own tests (its reader, its helpers) sit beside it and drive it alone;
//! what needs a whole [`crate::ResponseParser`] (chunking invariance, tool policy,
//! recorded rejections, the buffer limit) lives here, above the response layer, with
//! the harness of [`crate::response::testutil`].

mod dialect;
mod dsml;
mod gemma;
mod header;
mod pythonic;
mod xml;
