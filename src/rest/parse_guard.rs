//! Configuration text posted over REST is parsed on a blocking thread, never
//! on the runtime thread that also answers health checks and metrics. The
//! parse itself is bounded ([`crate::config::bounds`]); at most
//! [`PARSERS`] run at once, so a flood of posts queues instead of taking
//! more threads.

use std::sync::OnceLock;

use hyper::StatusCode;
use tokio::sync::Semaphore;

use super::response::{fail, Fail};
use crate::config::{ConfigError, QuantityGrammar};

/// Parses running at once, across every REST service of the process.
const PARSERS: usize = 2;

fn permits() -> &'static Semaphore {
    static PERMITS: OnceLock<Semaphore> = OnceLock::new();
    PERMITS.get_or_init(|| Semaphore::new(PARSERS))
}

/// Checks `text` as the configuration parse does, off the runtime thread.
/// The outer `Err` is a failure of the service, the inner one the verdict.
pub(super) async fn check_posted(
    text: &str,
    grammar: QuantityGrammar,
) -> Result<Result<(), ConfigError>, Fail> {
    let unavailable = || fail(StatusCode::SERVICE_UNAVAILABLE, "the scheduler is stopping");
    let _permit = permits().acquire().await.map_err(|_| unavailable())?;
    let text = text.to_owned();
    tokio::task::spawn_blocking(move || crate::config::parse_with(&text, grammar).map(|_| ()))
        .await
        .map_err(|_| {
            fail(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the configuration check failed unexpectedly",
            )
        })
}
