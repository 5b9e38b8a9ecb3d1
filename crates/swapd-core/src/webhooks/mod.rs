//! Webhooks, pure: how a delivery is signed (`signing`), where it may go (`url_policy`), what a
//! subscriber asked for (`subscription`), and how deliveries are attempted and retried
//! (`delivery`). The HTTP sending is `swapd-delivery`'s (docs/webhooks.md).

pub mod delivery;
pub mod signing;
pub mod subscription;
pub mod url_policy;
