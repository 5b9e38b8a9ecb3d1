//! The client's address, the one answer used by the per-address limits, a key's IP allow-list
//! and the x402 per-client limits.

use std::net::{IpAddr, SocketAddr};

use axum::extract::ConnectInfo;
use axum::http::HeaderName;
use axum::http::request::Parts;
use ipnet::IpNet;

/// The client address: the TCP peer, or, when the peer is a trusted proxy, the first address in
/// `X-Forwarded-For` (read right to left) that is not a trusted proxy. IPv4-mapped IPv6
/// addresses count as IPv4.
pub fn client_ip(parts: &Parts, trusted_proxies: &[IpNet]) -> Option<IpAddr> {
    let peer = parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()?
        .0
        .ip()
        .to_canonical();
    let trusted = |ip: &IpAddr| trusted_proxies.iter().any(|net| net.contains(ip));
    if !trusted(&peer) {
        return Some(peer);
    }
    let forwarded: Vec<IpAddr> = parts
        .headers
        .get_all(HeaderName::from_static("x-forwarded-for"))
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|hop| hop.trim().parse::<IpAddr>().map(|ip| ip.to_canonical()))
        .collect::<Result<_, _>>()
        .unwrap_or_default();
    Some(
        forwarded
            .into_iter()
            .rev()
            .find(|ip| !trusted(ip))
            .unwrap_or(peer),
    )
}
