//! Offchain orders: the user deposits to a desk's address, the desk exchanges and pays out.
//! `order` is what swapd keeps and its status machine; `actions` what a caller does to an
//! order; `desk` the port every desk (sandbox or live) answers through; `follow` how what a
//! desk reports becomes the order's statuses and events (docs/orders.md).

pub mod actions;
pub mod desk;
pub mod follow;
pub mod mail;
pub mod order;
