//! One module per subcommand: each wires kernel -> collector -> sink and
//! owns nothing else.

pub mod check;
pub mod stat;
