//! The one error type of ovstage: a status plus a message naming what was
//! involved.

use std::fmt;

use crate::{Ordinal, Status};

/// What an error is about: the attribute, prim path and ordinal involved,
/// where they are known. Rendered after the message and kept structured so
/// callers can match on it without parsing text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ErrorContext {
    /// Attribute name.
    pub attribute: Option<String>,
    /// Prim path.
    pub prim: Option<String>,
    /// Ordinal of the operation (or the bound it violated).
    pub ordinal: Option<Ordinal>,
}

impl ErrorContext {
    fn is_empty(&self) -> bool {
        self.attribute.is_none() && self.prim.is_none() && self.ordinal.is_none()
    }
}

/// What kind of failure an error is, where callers need to tell failures
/// with the same [`Status`] apart without reading the message.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// No finer kind than the status.
    #[default]
    Other,
    /// An ordinal admission conflict: the ordinal is below (or, under
    /// `STRICTLY_INCREASING`, not above) a change already accepted for the
    /// cell. Reported with `WRITE_FLOOR_VIOLATION`; the published Python
    /// package reports it as `OP_FAILED`.
    OrdinalConflict,
}

/// An ovstage error: a non-OK [`Status`] and a message.
///
/// `Display` renders `message (attribute 'a', prim '/p', ordinal n)`, with
/// only the context that is known.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct Error {
    status: Status,
    kind: ErrorKind,
    message: String,
    context: ErrorContext,
}

/// `Result` with ovstage's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An error with `status` and `message`. `status` should not be `Ok`;
    /// an `Ok` status is recorded as `Internal` so an error never reads as
    /// success.
    pub fn new(status: Status, message: impl Into<String>) -> Error {
        let status = if status == Status::Ok { Status::Internal } else { status };
        Error { status, kind: ErrorKind::Other, message: message.into(), context: ErrorContext::default() }
    }

    /// `INVALID_ARGUMENT` with `message`.
    pub fn invalid_argument(message: impl Into<String>) -> Error {
        Error::new(Status::InvalidArgument, message)
    }

    /// `INVALID_HANDLE` with `message`.
    pub fn invalid_handle(message: impl Into<String>) -> Error {
        Error::new(Status::InvalidHandle, message)
    }

    /// `NOT_SUPPORTED` with `message`.
    pub fn not_supported(message: impl Into<String>) -> Error {
        Error::new(Status::NotSupported, message)
    }

    /// `INTERNAL` with `message`.
    pub fn internal(message: impl Into<String>) -> Error {
        Error::new(Status::Internal, message)
    }

    /// Marks the error as being of `kind`.
    pub fn with_kind(mut self, kind: ErrorKind) -> Error {
        self.kind = kind;
        self
    }

    /// Names the attribute involved.
    pub fn with_attribute(mut self, attribute: impl Into<String>) -> Error {
        self.context.attribute = Some(attribute.into());
        self
    }

    /// Names the prim path involved.
    pub fn with_prim(mut self, prim: impl Into<String>) -> Error {
        self.context.prim = Some(prim.into());
        self
    }

    /// Names the ordinal involved.
    pub fn with_ordinal(mut self, ordinal: impl Into<Ordinal>) -> Error {
        self.context.ordinal = Some(ordinal.into());
        self
    }

    /// The same error with another status (e.g. when a failed producer is
    /// reported through a consumer as `OP_FAILED`).
    pub fn with_status(mut self, status: Status) -> Error {
        self.status = if status == Status::Ok { Status::Internal } else { status };
        self
    }

    /// Prefixes the message, e.g. with the operation that failed.
    pub fn prefixed(mut self, prefix: &str) -> Error {
        self.message = format!("{prefix}: {}", self.message);
        self
    }

    /// The status.
    pub fn status(&self) -> Status {
        self.status
    }

    /// The kind of failure ([`ErrorKind::Other`] unless marked).
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message without its context.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The attribute, prim and ordinal involved.
    pub fn context(&self) -> &ErrorContext {
        &self.context
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        let ctx = &self.context;
        if ctx.is_empty() {
            return Ok(());
        }
        f.write_str(" (")?;
        let mut sep = "";
        if let Some(a) = &ctx.attribute {
            write!(f, "attribute '{a}'")?;
            sep = ", ";
        }
        if let Some(p) = &ctx.prim {
            write!(f, "{sep}prim '{p}'")?;
            sep = ", ";
        }
        if let Some(o) = ctx.ordinal {
            write!(f, "{sep}ordinal {o}")?;
        }
        f.write_str(")")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_the_context() {
        let e = Error::new(Status::WriteFloorViolation, "write_attribute: ordinal at or below the write floor 6")
            .with_attribute("pos")
            .with_prim("/World/A")
            .with_ordinal(3u64);
        assert_eq!(
            e.to_string(),
            "write_attribute: ordinal at or below the write floor 6 (attribute 'pos', prim '/World/A', ordinal 3)"
        );
        assert_eq!(e.status(), Status::WriteFloorViolation);
        assert_eq!(e.context().prim.as_deref(), Some("/World/A"));
        let plain = Error::invalid_argument("bad");
        assert_eq!(plain.to_string(), "bad");
        assert_eq!(Error::new(Status::Ok, "x").status(), Status::Internal);
        assert_eq!(Error::invalid_argument("x").with_ordinal(1u64).to_string(), "x (ordinal 1)");
    }
}
