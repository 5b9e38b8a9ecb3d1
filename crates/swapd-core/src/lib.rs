//! swapd domain logic. No I/O: no sockets, no files, no database drivers. Time comes from a
//! [`Clock`], storage through the [`Store`] port.

pub mod api_keys;
pub mod clock;
pub mod ids;
pub mod secrets;
pub mod store;

pub use clock::{Clock, ManualClock, SystemClock};
pub use store::{Store, StoreError};
