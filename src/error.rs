//! The error type shared by the Rust API and the C ABI.

use std::fmt;

/// Why a call failed. The C ABI maps each variant to one `sicore_status` code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// A null pointer, bad UTF-8, or a missing required field.
    InvalidArgument,
    /// The bytes are not a valid encoding of the expected message.
    DecodeError,
    /// Understood and refused: bad configuration, unknown rmID, ...
    Rejected,
    /// The scheduler is shutting down or shut down.
    Stopped,
    /// A synchronous call made from inside a callback of the same scheduler.
    WouldDeadlock,
    /// A bug: a panic was caught at the boundary.
    Internal,
}

/// An error with its status and a message that names what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// The class of failure.
    pub status: Status,
    /// What was wrong and where, for humans.
    pub message: String,
}

impl Error {
    /// Builds an error of the given status.
    pub fn new(status: Status, message: impl Into<String>) -> Self {
        Error {
            status,
            message: message.into(),
        }
    }

    /// A null pointer, bad UTF-8 or missing field.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(Status::InvalidArgument, message)
    }

    /// Understood and refused.
    pub fn rejected(message: impl Into<String>) -> Self {
        Self::new(Status::Rejected, message)
    }

    /// `what` (an argument, named with its message type) is not a valid
    /// encoding of that message.
    pub fn decode(what: &str, detail: impl fmt::Display) -> Self {
        Self::new(
            Status::DecodeError,
            format!("{what}: not a valid encoding of the message: {detail}"),
        )
    }

    /// The scheduler has stopped.
    pub fn stopped() -> Self {
        Self::new(Status::Stopped, "the scheduler has been stopped")
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.status, self.message)
    }
}

impl std::error::Error for Error {}
