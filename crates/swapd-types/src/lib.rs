//! Wire types shared by the swapd server, its SDK and its CLI.
//!
//! Nothing here does I/O: these are the shapes that cross the wire (docs/errors.md), with their
//! OpenAPI schemas.

pub mod earnings;
mod envelope;
mod error_code;
pub mod ids;
pub mod market;
pub mod market_intel;
pub mod onchain;
pub mod orders;
mod permission;
pub mod readiness;
pub mod sandbox;
pub mod schema;
pub mod signing;
mod strings;
pub mod webhooks;

pub use envelope::{ErrorBody, ErrorEnvelope, FieldProblem, Success};
pub use error_code::ErrorCode;
pub use permission::{Permission, UnknownPermission};
