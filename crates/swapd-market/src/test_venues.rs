//! The sandbox providers for the market's tests, their desks' books in a temporary database.

use swapd_core::market::venue::Venue;
use swapd_sandbox::price_feed::PriceFeed;
use swapd_sandbox::{DEFAULT_BLOCK_MS, DEFAULT_TOLERANCE_BPS, Faults, SandboxWorld};

/// The sandbox venues and what their desks' database needs while they live.
pub struct SandboxVenues {
    pub venues: Vec<Venue>,
    _dir: tempfile::TempDir,
    /// The database was opened on its own runtime, so that a test's runtime may start with
    /// its clock paused (timers then fire on exact milliseconds).
    runtime: Option<tokio::runtime::Runtime>,
}

impl Drop for SandboxVenues {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// The sandbox venues quoting from the price feed of `seed`, behind `faults`.
pub fn sandbox_venues(faults: &Faults, seed: u64) -> SandboxVenues {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("market.db").display());
    let (runtime, store) = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let store = runtime
            .block_on(swapd_store::open(
                &url,
                &swapd_store::StoreOptions::default(),
            ))
            .unwrap();
        (runtime, store)
    })
    .join()
    .unwrap();
    let world = SandboxWorld {
        store,
        block_ms: DEFAULT_BLOCK_MS,
        tolerance_bps: DEFAULT_TOLERANCE_BPS,
        pause_after_payout: false,
        behaviours: swapd_sandbox::Behaviours::punctual(),
    };
    SandboxVenues {
        venues: swapd_sandbox::providers(PriceFeed::new(seed), faults, &world),
        _dir: dir,
        runtime: Some(runtime),
    }
}
