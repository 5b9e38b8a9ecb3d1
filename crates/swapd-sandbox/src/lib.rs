//! swapd's sandbox world behind the same ports as live mode: a deterministic price feed, two
//! offchain desks that run their exchanges on a simulated chain kept in the database, onchain
//! routers whose executions advance block by block, and switchable faults for tests and
//! benchmarks. Everything above the provider ports runs unchanged in sandbox and live.

mod addresses;
pub mod behaviour;
pub mod chain;
pub mod desk;
mod engine;
pub mod faults;
pub mod offchain;
pub mod onchain;
pub mod plans;
pub mod price_feed;
mod providers;
mod quoting;

pub use behaviour::{Behaviour, Behaviours};
pub use chain::{BURN_ADDRESSES, SandboxChain};
pub use desk::{SandboxDesk, SandboxWorld};
pub use engine::DEFAULT_TOLERANCE_BPS;
pub use faults::{Fault, Faults};
pub use onchain::DEFAULT_BLOCK_MS;
pub use providers::{PROVIDER_IDS, providers};
