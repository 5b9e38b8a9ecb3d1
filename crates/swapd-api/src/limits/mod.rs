//! The limits' state (docs/architecture.md, "Limits"): the nonces signed requests used, each
//! API key's rate cell, and fixed windows, one port of `swapd_core::rate_limit` per kind and one
//! implementation per place it is kept: memory on one node ([`memory`]), the shared database
//! ([`database`]) or Redis ([`redis`]) on several, chosen once from [`Sharing`] at wiring. The
//! surfaces reach them through `AppState`, never through one another.

use std::sync::Arc;
use std::time::Duration;

use swapd_core::rate_limit::{AddressLimits, Addresses, Nonces, RateCells, Windows};
use swapd_core::{Clock, Store, StoreError};
use swapd_redis::SharedRedis;
use tokio_util::sync::CancellationToken;

pub mod addresses;
pub mod database;
pub mod memory;
pub mod redis;

/// Requests per second per address by default (bursts of twice that).
pub const DEFAULT_REQUESTS_PER_SECOND: u32 = 200;
/// Failed authentications per minute per address by default.
pub const DEFAULT_AUTH_FAILURES_PER_MINUTE: u32 = 60;

/// Each client address's budgets under `limits`: in this process, or in Redis for every node
/// when the limits are shared there (the database does not keep them: an address's requests
/// are spread over the nodes anyway). Off when both limits are 0.
pub fn address_limits(limits: AddressLimits, sharing: &Sharing) -> Arc<dyn Addresses> {
    let off = limits.requests_per_second == 0 && limits.auth_failures_per_minute == 0;
    match sharing {
        Sharing::Redis(redis) if !off => Arc::new(redis::AddressesInRedis {
            redis: redis.clone(),
            limits,
        }),
        _ => Arc::new(addresses::MemoryAddresses::new(limits)),
    }
}

/// How often the single-node nonce set is written to the database.
pub const NONCE_FLUSH_INTERVAL: Duration = Duration::from_millis(100);

/// How many nonces the single-node set and its unflushed buffer may hold. Past either, signed
/// requests are refused (503 `auth_unavailable`, fail closed) instead of memory growing. The set
/// holds every nonce of the last `NONCE_TTL_SECS` (15 minutes) in 16 bytes each (about 600 MB
/// for 20 million, a sustained 22,000 requests/s; docs/benchmarks-history.md); the buffer only
/// grows while flushes fail.
#[derive(Debug, Clone, Copy)]
pub struct NonceLimits {
    pub live: usize,
    pub unflushed: usize,
}

impl Default for NonceLimits {
    fn default() -> Self {
        Self {
            live: 20_000_000,
            unflushed: 1_000_000,
        }
    }
}

/// Where the limits' state lives: `R` is the Redis connection once wired, `()` before (what the
/// configuration chooses, [`SharedState`]). Its name (`memory`, `database`, `redis`) is what
/// `swapd config show` and readiness show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
pub enum Sharing<R = Arc<SharedRedis>> {
    /// One node: memory, with nonces persisted in batches.
    #[strum(serialize = "memory")]
    Local,
    /// Several nodes: every decision is made in the shared database.
    Database,
    /// Several nodes: every decision is made in Redis.
    Redis(R),
}

/// What the configuration chooses, before any connection.
pub type SharedState = Sharing<()>;

impl<R> Sharing<R> {
    /// The choice, without the connection.
    pub fn state(&self) -> SharedState {
        match self {
            Self::Local => Sharing::Local,
            Self::Database => Sharing::Database,
            Self::Redis(_) => Sharing::Redis(()),
        }
    }
}

/// The limits' state, kept where [`Sharing`] says.
pub struct Limits {
    pub nonces: Arc<dyn Nonces>,
    pub rates: Arc<dyn RateCells>,
    pub windows: Arc<dyn Windows>,
    /// The single-node nonce set, which is written to the store in batches.
    local_nonces: Option<Arc<memory::MemoryNonces>>,
    sharing: Sharing,
}

impl Limits {
    /// The state for `sharing`; on one node, with the nonces earlier runs wrote.
    pub async fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        sharing: Sharing,
    ) -> Result<Self, StoreError> {
        Ok(match &sharing {
            Sharing::Local => {
                let nonces = Arc::new(memory::MemoryNonces::load(store, clock.clone()).await?);
                Self {
                    nonces: nonces.clone(),
                    rates: Arc::new(memory::MemoryRates::new(clock.clone())),
                    windows: Arc::new(memory::MemoryWindows::new(clock)),
                    local_nonces: Some(nonces),
                    sharing,
                }
            }
            Sharing::Database => {
                let shared = Arc::new(database::InStore::new(store, clock));
                Self::shared(shared, sharing)
            }
            Sharing::Redis(redis) => {
                let shared = Arc::new(redis::InRedis::new(redis.clone(), clock));
                Self::shared(shared, sharing)
            }
        })
    }

    fn shared<T: Nonces + RateCells + Windows + 'static>(state: Arc<T>, sharing: Sharing) -> Self {
        Self {
            nonces: state.clone(),
            rates: state.clone(),
            windows: state,
            local_nonces: None,
            sharing,
        }
    }

    pub fn sharing(&self) -> &Sharing {
        &self.sharing
    }

    /// How much of `key`'s window of `window_ms` is used, counting nothing: a limit of 0 is
    /// refused at once, and a refused request is never counted.
    pub async fn peek_window(
        &self,
        key: &str,
        window_ms: i64,
    ) -> Result<swapd_core::store::WindowDecision, StoreError> {
        self.windows.consume_window(key, window_ms, 0).await
    }

    /// Other bounds for the single-node nonce set (tests).
    pub fn set_nonce_limits(&self, limits: NonceLimits) {
        if let Some(nonces) = &self.local_nonces {
            nonces.set_limits(limits);
        }
    }

    /// Writes the single-node nonces accepted since the last flush (nothing when shared).
    pub async fn flush_nonces(&self) -> Result<(), StoreError> {
        match &self.local_nonces {
            Some(nonces) => nonces.flush().await,
            None => Ok(()),
        }
    }

    /// Flushes the single-node nonces every [`NONCE_FLUSH_INTERVAL`] until `shutdown`, then
    /// once more.
    pub async fn run_nonce_flusher(self: Arc<Self>, shutdown: CancellationToken) {
        let Some(nonces) = self.local_nonces.clone() else {
            return;
        };
        let mut tick = tokio::time::interval(NONCE_FLUSH_INTERVAL);
        loop {
            tokio::select! {
                () = shutdown.cancelled() => break,
                _ = tick.tick() => {
                    if let Err(error) = nonces.flush().await {
                        tracing::warn!(%error, "nonce flush failed; will retry");
                    }
                }
            }
        }
        if let Err(error) = nonces.flush().await {
            tracing::error!(%error, "final nonce flush failed");
        }
    }
}
