//! `executionAccessToken`s: what scopes an execution plan to the principal that resolved it.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// How long an access token works: long enough to poll a slow bridge to its end.
pub const ACCESS_TOKEN_TTL_MS: i64 = 24 * 60 * 60 * 1000;
/// What the access-token key is derived for from the master key, when the operator sets no
/// `x402.access_token_secret`.
pub const ACCESS_TOKEN_KEY_PURPOSE: &str = "execution access tokens";

/// Signs and checks `executionAccessToken`s: `v1.<planId>.<expiresAtSecs>.<mac>`, the MAC an
/// HMAC-SHA256 over the plan, its principal and the expiry under the operator's secret. The
/// principal is not in the token, so a token presented by anyone else does not verify.
#[derive(Clone)]
pub struct AccessTokens {
    key: [u8; 32],
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("the execution access token is malformed")]
    Malformed,
    #[error("the execution access token was issued for another execution plan")]
    OtherPlan,
    #[error("the execution access token expired; resolve the route again for a new plan")]
    Expired,
    #[error("the execution access token is not valid for this caller")]
    Invalid,
}

impl AccessTokens {
    pub fn new(key: [u8; 32]) -> Self {
        Self { key }
    }

    /// Keyed by an operator-set secret of any length.
    pub fn from_secret(secret: &str) -> Self {
        let mut digest = Sha256::new();
        digest.update(b"swapd execution access tokens\n");
        digest.update(secret.as_bytes());
        Self::new(digest.finalize().into())
    }

    pub fn issue(&self, plan_id: &str, owner: &str, expires_at_secs: i64) -> String {
        let mac = self.mac(plan_id, owner, expires_at_secs).finalize();
        format!(
            "v1.{plan_id}.{expires_at_secs}.{}",
            URL_SAFE_NO_PAD.encode(mac.into_bytes())
        )
    }

    pub fn verify(
        &self,
        token: &str,
        plan_id: &str,
        owner: &str,
        now_secs: i64,
    ) -> Result<(), TokenError> {
        let mut parts = token.split('.');
        let (Some("v1"), Some(token_plan), Some(expiry), Some(mac), None) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return Err(TokenError::Malformed);
        };
        let expires_at_secs: i64 = expiry.parse().map_err(|_| TokenError::Malformed)?;
        let mac = URL_SAFE_NO_PAD
            .decode(mac)
            .map_err(|_| TokenError::Malformed)?;
        if token_plan != plan_id {
            return Err(TokenError::OtherPlan);
        }
        // Constant-time comparison (hmac's verify_slice).
        self.mac(plan_id, owner, expires_at_secs)
            .verify_slice(&mac)
            .map_err(|_| TokenError::Invalid)?;
        if now_secs >= expires_at_secs {
            return Err(TokenError::Expired);
        }
        Ok(())
    }

    fn mac(&self, plan_id: &str, owner: &str, expires_at_secs: i64) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("HMAC takes any key");
        mac.update(b"swapd execution access token v1\n");
        mac.update(plan_id.as_bytes());
        mac.update(b"\n");
        mac.update(owner.as_bytes());
        mac.update(b"\n");
        mac.update(expires_at_secs.to_string().as_bytes());
        mac
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_tokens_bind_plan_principal_and_expiry() {
        let tokens = AccessTokens::new([9; 32]);
        let plan = "ocx_00000000000000000000000000000001";
        let token = tokens.issue(plan, "key:a", 2_000);
        assert_eq!(tokens.verify(&token, plan, "key:a", 1_999), Ok(()));
        assert_eq!(
            tokens.verify(&token, plan, "key:a", 2_000),
            Err(TokenError::Expired)
        );
        assert_eq!(
            tokens.verify(&token, plan, "key:b", 1_000),
            Err(TokenError::Invalid)
        );
        assert_eq!(
            tokens.verify(
                &token,
                "ocx_00000000000000000000000000000002",
                "key:a",
                1_000
            ),
            Err(TokenError::OtherPlan)
        );
        // A longer expiry written into the token breaks its MAC.
        let forged = token.replace(".2000.", ".9000.");
        assert_eq!(
            tokens.verify(&forged, plan, "key:a", 1_000),
            Err(TokenError::Invalid)
        );
        assert_eq!(
            AccessTokens::new([8; 32]).verify(&token, plan, "key:a", 1_000),
            Err(TokenError::Invalid)
        );
        for malformed in ["", "v1", "v2.a.1.b", "v1.a.b.c", "v1.a.1.!!", "v1.a.1.b.c"] {
            assert_eq!(
                tokens.verify(malformed, plan, "key:a", 1_000),
                Err(TokenError::Malformed),
                "{malformed}"
            );
        }
    }
}
