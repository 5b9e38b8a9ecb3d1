//! swapd domain logic. No I/O: no sockets, no files, no database drivers. Time comes from a
//! [`Clock`], storage through the [`Store`] port.

pub mod address;
pub mod affiliates;
pub mod amount;
pub mod api_keys;
pub mod challenges;
pub mod clock;
pub mod fees;
pub mod health;
pub mod idempotency;
pub mod ids;
pub mod market;
pub mod market_intel;
pub mod notify;
pub mod offchain;
pub mod onchain;
pub mod owner;
pub mod payment_uri;
pub mod purchases;
pub mod rate_limit;
pub mod secrets;
pub use swapd_types::signing;
pub mod store;
pub mod wakeup;
pub mod webhooks;

pub use clock::{Clock, ManualClock, SystemClock};
pub use store::{Store, StoreError};

/// Whether the outside world is simulated (`sandbox`) or real (`live`). The same code paths run
/// in both; only the adapters at the edges differ.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    strum::IntoStaticStr,
    strum::EnumString,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum Mode {
    Sandbox,
    Live,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}
