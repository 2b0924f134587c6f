//! Status codes with the contract's numeric values.

use std::fmt;

raw_enum! {
    /// The outcome of a call, with exactly the numeric values of the C contract.
    #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
    pub enum Status: u32 {
        /// Success.
        Ok = 0,
        /// An argument is malformed or inconsistent.
        InvalidArgument = 1,
        /// A handle is unknown, stale or of the wrong kind.
        InvalidHandle = 2,
        /// Something looked up by name does not exist.
        NotFound = 3,
        /// An INSERT met a prim that already exists (the contract's name).
        PrimNotFound = 4,
        /// A mutation at or below a write floor, or a read of unsealed data.
        WriteFloorViolation = 5,
        /// The operation or input is not supported by this implementation.
        NotSupported = 6,
        /// Back-pressure: the submit queue is full.
        QueueFull = 7,
        /// An iterating fetch has no more groups.
        EndOfIteration = 8,
        /// An allocation failed.
        OutOfMemory = 9,
        /// The layout changed during a map session.
        LayoutChanged = 10,
        /// A wait or fetch did not complete within its timeout.
        Timeout = 11,
        /// An enqueued op failed; its message is kept per op id.
        OpFailed = 12,
        /// The values needed are no longer retained.
        OutOfRange = 13,
        /// A bug in ovstage.
        Internal = 99,
    }
}

impl Status {
    /// The raw contract value.
    pub const fn as_raw(self) -> u32 {
        self as u32
    }

    /// The contract's constant name, e.g. `OVSTAGE_ERROR_TIMEOUT`.
    pub const fn name(self) -> &'static str {
        match self {
            Status::Ok => "OVSTAGE_OK",
            Status::InvalidArgument => "OVSTAGE_ERROR_INVALID_ARGUMENT",
            Status::InvalidHandle => "OVSTAGE_ERROR_INVALID_HANDLE",
            Status::NotFound => "OVSTAGE_ERROR_NOT_FOUND",
            Status::PrimNotFound => "OVSTAGE_ERROR_PRIM_NOT_FOUND",
            Status::WriteFloorViolation => "OVSTAGE_ERROR_WRITE_FLOOR_VIOLATION",
            Status::NotSupported => "OVSTAGE_ERROR_NOT_SUPPORTED",
            Status::QueueFull => "OVSTAGE_ERROR_QUEUE_FULL",
            Status::EndOfIteration => "OVSTAGE_ERROR_END_OF_ITERATION",
            Status::OutOfMemory => "OVSTAGE_ERROR_OUT_OF_MEMORY",
            Status::LayoutChanged => "OVSTAGE_ERROR_LAYOUT_CHANGED",
            Status::Timeout => "OVSTAGE_ERROR_TIMEOUT",
            Status::OpFailed => "OVSTAGE_ERROR_OP_FAILED",
            Status::OutOfRange => "OVSTAGE_ERROR_OUT_OF_RANGE",
            Status::Internal => "OVSTAGE_ERROR_INTERNAL",
        }
    }

    /// A short human description, for `get_error_string`.
    pub const fn description(self) -> &'static str {
        match self {
            Status::Ok => "success",
            Status::InvalidArgument => "invalid argument",
            Status::InvalidHandle => "invalid or stale handle",
            Status::NotFound => "not found",
            Status::PrimNotFound => "prim already exists (INSERT) or prim not found",
            Status::WriteFloorViolation => "write floor violation",
            Status::NotSupported => "not supported",
            Status::QueueFull => "submit queue full",
            Status::EndOfIteration => "end of iteration",
            Status::OutOfMemory => "out of memory",
            Status::LayoutChanged => "layout changed",
            Status::Timeout => "timed out",
            Status::OpFailed => "operation failed",
            Status::OutOfRange => "requested ordinals are no longer retained",
            Status::Internal => "internal error",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_values_are_the_contract() {
        let expected: [(Status, u32); 15] = [
            (Status::Ok, 0),
            (Status::InvalidArgument, 1),
            (Status::InvalidHandle, 2),
            (Status::NotFound, 3),
            (Status::PrimNotFound, 4),
            (Status::WriteFloorViolation, 5),
            (Status::NotSupported, 6),
            (Status::QueueFull, 7),
            (Status::EndOfIteration, 8),
            (Status::OutOfMemory, 9),
            (Status::LayoutChanged, 10),
            (Status::Timeout, 11),
            (Status::OpFailed, 12),
            (Status::OutOfRange, 13),
            (Status::Internal, 99),
        ];
        for (status, raw) in expected {
            assert_eq!(status.as_raw(), raw, "{status}");
            assert_eq!(Status::from_raw(raw), Some(status));
        }
        assert_eq!(Status::from_raw(14), None);
        assert_eq!(Status::from_raw(98), None);
    }
}
