//! One module per subcommand: each wires a snapshot source to a front end
//! and owns nothing else.

pub mod check;
pub mod docs;
pub mod record;
pub mod report;
pub mod serve;
mod signals;
pub mod sketch;
pub mod startup;
pub mod stat;
mod stdout;
pub mod top;
mod write;
