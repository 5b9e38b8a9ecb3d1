//! Issuing and revoking Business API keys: one use case for `swapd keys` and the operator
//! console, so neither adds a rule of its own.

use swapd_core::StoreError;
use swapd_core::api_keys::{ApiKey, ApiKeyPolicy, IssuedKey, KEY_CACHE_TTL_MS};
use swapd_core::secrets::MasterKey;
use swapd_core::store::KeyStore;

use crate::limits::Sharing;

/// Issues a key with `policy`: its secret (in [`IssuedKey`]) is shown once and stored sealed.
pub async fn issue(
    store: &dyn KeyStore,
    master: &MasterKey,
    policy: ApiKeyPolicy,
    max_markup_bps: u32,
    now_ms: i64,
) -> Result<IssuedKey, IssueError> {
    if policy.markup_bps() > max_markup_bps {
        return Err(IssueError::MarkupAboveCap {
            bps: policy.markup_bps(),
            cap: max_markup_bps,
        });
    }
    let issued = ApiKey::issue(policy, master, now_ms);
    store.insert_api_key(&issued.key).await?;
    Ok(issued)
}

#[derive(Debug, thiserror::Error)]
pub enum IssueError {
    /// A partner's markup above the operator's cap is refused when the key is created
    /// (docs/fees.md, "Partner markups").
    #[error(
        "a markup of {bps} bps is more than this operator allows (fees.max_markup_bps = {cap})"
    )]
    MarkupAboveCap { bps: u32, cap: u32 },
    #[error(transparent)]
    Store(#[from] StoreError),
}

#[derive(Debug, thiserror::Error)]
pub enum RevokeError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Revoked, but with Redis down the other nodes were not told: they stop accepting it when
    /// their cache of it ends.
    #[error(
        "the key is revoked, but the nodes could not be told at once ({0}); they stop accepting it within {secs} s",
        secs = KEY_CACHE_TTL_MS / 1000
    )]
    NotAnnounced(StoreError),
}

/// Revokes key `id` (`None`: no such key). With Redis, every node forgets it at once instead of
/// when its cache of it ends.
pub async fn revoke(
    store: &dyn KeyStore,
    sharing: &Sharing,
    id: &str,
    now_ms: i64,
) -> Result<Option<ApiKey>, RevokeError> {
    let Some(key) = store.revoke_api_key(id, now_ms).await? else {
        return Ok(None);
    };
    if let Sharing::Redis(redis) = sharing {
        redis
            .publish_revoked(&key.id)
            .await
            .map_err(RevokeError::NotAnnounced)?;
    }
    Ok(Some(key))
}
