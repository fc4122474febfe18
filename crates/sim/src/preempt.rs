//! placeholder
use crate::Args;
pub fn run(_args: &Args) -> Result<(), String> {
    Err("not yet".into())
}
