//! The sandbox providers, as venues of the market: two offchain desks, an EVM DEX, a Solana DEX
//! and a bridge.

use std::sync::Arc;

use swapd_core::market::venue::Venue;

use crate::desk::{SandboxDesk, SandboxWorld};
use crate::faults::Faults;
use crate::offchain::OffchainDesk;
use crate::onchain::{Bridge, Dex};
use crate::price_feed::PriceFeed;

/// The sandbox providers: two offchain desks running their exchanges in `world`, an EVM DEX,
/// a Solana DEX and a bridge whose executions advance one stage per `world.block_ms`, each
/// behaving as `world.behaviours` says and behind `faults`.
pub fn providers(feed: PriceFeed, faults: &Faults, world: &SandboxWorld) -> Vec<Venue> {
    let (block_ms, behaviours) = (world.block_ms, &world.behaviours);
    let desk = |quoter: OffchainDesk| Venue::Desk(Arc::new(SandboxDesk::new(quoter, world)));
    let dex = |dex: Dex| {
        Venue::Router(Arc::new(
            dex.with_block_ms(block_ms).with_behaviour(behaviours),
        ))
    };
    [
        desk(OffchainDesk::atlas(feed.clone())),
        desk(OffchainDesk::borealis(feed.clone())),
        dex(Dex::meridian(feed.clone())),
        dex(Dex::sunfish(feed.clone())),
        Venue::Router(Arc::new(
            Bridge::arcbridge(feed)
                .with_block_ms(block_ms)
                .with_behaviour(behaviours),
        )),
    ]
    .into_iter()
    .map(|venue| faults.wrap(venue))
    .collect()
}

/// The identifiers of [`providers`], for configuration checks.
pub const PROVIDER_IDS: [&str; 5] = ["atlas", "borealis", "meridian", "sunfish", "arcbridge"];
