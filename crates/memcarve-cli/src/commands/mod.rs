//! One module per subcommand.

pub mod info;
pub mod replay;
pub mod report;
