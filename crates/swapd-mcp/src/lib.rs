//! swapd over the Model Context Protocol (docs/mcp.md). The tools are derived from the x402
//! API's OpenAPI document ([`tools`]); a call is its route's HTTP request ([`call`]), sent by
//! a [`server::Dispatch`]: into the HTTP application on `/mcp`, or to a remote swapd from
//! `swapctl mcp`.

pub mod call;
pub mod server;
pub mod tools;

pub use call::{HttpAnswer, HttpCall, Refusal};
pub use server::{Dispatch, SwapdMcp};
pub use tools::{Access, ToolRoute, ToolTable};
