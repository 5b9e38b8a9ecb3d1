//! The limits of one node, in memory: nothing waits for a durable write. The nonce set is
//! written to the store in batches (and on graceful shutdown) and read back at start.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use swapd_core::api_keys::RateLimits;
use swapd_core::rate_limit::{
    self, Nonces, Quota, RateCells, RateDecision, RateState, WindowCount, Windows,
};
use swapd_core::signing::NONCE_TTL_SECS;
use swapd_core::store::{NonceOutcome, NonceRecord, WindowDecision};
use swapd_core::{Clock, Store, StoreError};

use super::NonceLimits;

/// Past this many windows, those that ended are dropped.
const MAX_WINDOWS: usize = 100_000;
/// How often expired nonces are dropped from the set (at a flush).
const NONCE_PRUNE_EVERY_MS: i64 = 10_000;

/// The nonces of the last `NONCE_TTL_SECS`, with those not yet written to the store.
pub struct MemoryNonces {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    set: Mutex<NonceSet>,
}

#[derive(Default)]
struct NonceSet {
    /// Expiry (Unix seconds) by a digest of (key id, nonce): 16 bytes a nonce, whatever its
    /// length.
    seen: HashMap<[u8; 12], u32>,
    pending: Vec<NonceRecord>,
    pruned_at_ms: i64,
    limits: NonceLimits,
}

/// The set's name for a key's nonce (96 bits: a chance collision among 20 million is below one
/// in 10^14, and would only refuse a request).
fn nonce_digest(key_id: &str, nonce: &str) -> [u8; 12] {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    hasher.update(key_id.as_bytes());
    hasher.update([0]);
    hasher.update(nonce.as_bytes());
    let digest = hasher.finalize();
    let mut name = [0; 12];
    name.copy_from_slice(&digest[..12]);
    name
}

/// Unix milliseconds as the set's whole seconds, rounded up (valid until 2106).
fn set_secs(ms: i64) -> u32 {
    u32::try_from((ms + 999).div_euclid(1000)).unwrap_or(u32::MAX)
}

impl MemoryNonces {
    /// The set, with the nonces earlier runs wrote that are still live.
    pub async fn load(store: Arc<dyn Store>, clock: Arc<dyn Clock>) -> Result<Self, StoreError> {
        let now_ms = clock.now_ms();
        let mut set = NonceSet {
            pruned_at_ms: now_ms,
            ..NonceSet::default()
        };
        for record in store.live_nonces(now_ms).await? {
            let expires = set
                .seen
                .entry(nonce_digest(&record.key_id, &record.nonce))
                .or_default();
            *expires = (*expires).max(set_secs(record.expires_at_ms));
        }
        Ok(Self {
            store,
            clock,
            set: Mutex::new(set),
        })
    }

    /// Other bounds for the set (tests).
    pub fn set_limits(&self, limits: NonceLimits) {
        self.set.lock().expect("nonce set").limits = limits;
    }

    /// Writes the nonces accepted since the last flush and forgets expired ones.
    pub async fn flush(&self) -> Result<(), StoreError> {
        let now = self.clock.now_ms();
        let batch = {
            let mut set = self.set.lock().expect("nonce set");
            if now - set.pruned_at_ms >= NONCE_PRUNE_EVERY_MS {
                let now_secs = now.div_euclid(1000);
                set.seen.retain(|_, exp| i64::from(*exp) > now_secs);
                set.pruned_at_ms = now;
            }
            std::mem::take(&mut set.pending)
        };
        if batch.is_empty() {
            return Ok(());
        }
        if let Err(error) = self.store.remember_nonces(&batch).await {
            // Keep them for the next flush; memory still refuses their replay meanwhile.
            self.set.lock().expect("nonce set").pending.extend(batch);
            return Err(error);
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl Nonces for MemoryNonces {
    async fn claim(
        &self,
        key_id: &str,
        nonce: &str,
        _signed_at_secs: i64,
    ) -> Result<NonceOutcome, StoreError> {
        let now = self.clock.now_ms();
        let expires_at_ms = now + NONCE_TTL_SECS * 1000;
        let mut set = self.set.lock().expect("nonce set");
        let name = nonce_digest(key_id, nonce);
        let now_secs = now.div_euclid(1000);
        if set
            .seen
            .get(&name)
            .is_some_and(|&exp| i64::from(exp) > now_secs)
        {
            return Ok(NonceOutcome::Reused);
        }
        if set.seen.len() >= set.limits.live {
            set.seen.retain(|_, exp| i64::from(*exp) > now_secs);
            set.pruned_at_ms = now;
        }
        if set.seen.len() >= set.limits.live || set.pending.len() >= set.limits.unflushed {
            return Err(StoreError::Unavailable(
                "the nonce set is full (too many requests, or nonces cannot be written)".into(),
            ));
        }
        set.seen.insert(name, set_secs(expires_at_ms));
        set.pending.push(NonceRecord {
            key_id: key_id.to_owned(),
            nonce: nonce.to_owned(),
            expires_at_ms,
        });
        Ok(NonceOutcome::Fresh)
    }
}

/// Every key's rate cell.
pub struct MemoryRates {
    clock: Arc<dyn Clock>,
    cells: Mutex<HashMap<String, RateState>>,
}

impl MemoryRates {
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Self {
            clock,
            cells: Mutex::new(HashMap::new()),
        }
    }
}

#[async_trait::async_trait]
impl RateCells for MemoryRates {
    async fn consume(
        &self,
        key_id: &str,
        limits: RateLimits,
        cost: u32,
    ) -> Result<RateDecision, StoreError> {
        let now = self.clock.now_ms();
        let mut cells = self.cells.lock().expect("rate state");
        let decide = |state| rate_limit::decide(state, limits, cost, now);
        // Only a key's first request allocates its entry.
        let decision = match cells.get_mut(key_id) {
            Some(state) => {
                let decision = decide(*state);
                *state = decision.state;
                decision
            }
            None => {
                let decision = decide(RateState::default());
                cells.insert(key_id.to_owned(), decision.state);
                decision
            }
        };
        Ok(decision)
    }

    async fn peek(&self, key_id: &str, limits: RateLimits) -> Result<Quota, StoreError> {
        let state = {
            let cells = self.cells.lock().expect("rate state");
            cells.get(key_id).copied().unwrap_or_default()
        };
        Ok(rate_limit::peek(state, limits, self.clock.now_ms()))
    }
}

/// Fixed windows by key, with when each ends.
pub struct MemoryWindows {
    clock: Arc<dyn Clock>,
    windows: Mutex<HashMap<String, (WindowCount, i64)>>,
}

impl MemoryWindows {
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Self {
            clock,
            windows: Mutex::new(HashMap::new()),
        }
    }
}

#[async_trait::async_trait]
impl Windows for MemoryWindows {
    async fn consume_window(
        &self,
        key: &str,
        window_ms: i64,
        limit: u32,
    ) -> Result<WindowDecision, StoreError> {
        let now = self.clock.now_ms();
        let mut windows = self.windows.lock().expect("window state");
        if windows.len() >= MAX_WINDOWS {
            // Windows that ended count nothing any more.
            windows.retain(|_, (_, ends_at_ms)| *ends_at_ms > now);
        }
        let stored = windows.get(key).map(|(count, _)| *count);
        let (decision, counted) = rate_limit::count_in_window(stored, window_ms, limit, now);
        if decision.allowed {
            windows.insert(key.to_owned(), (counted, decision.resets_at_ms));
        }
        Ok(decision)
    }
}
