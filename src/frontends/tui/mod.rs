//! `netto top`'s terminal UI, a pure consumer of the snapshot stream: the
//! state ([`app`]), the key map ([`input`]) and the drawing ([`draw`])
//! are separate, and none of them reads the terminal or the kernel;
//! [`terminal`] owns the screen and always gives it back.

pub mod app;
pub mod draw;
#[cfg(test)]
mod fixture;
pub mod format;
pub mod frequency;
pub mod input;
pub mod table;
pub mod terminal;
pub mod tree;
