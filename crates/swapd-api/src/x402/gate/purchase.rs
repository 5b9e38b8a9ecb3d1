//! A payment being spent by one request: what becomes of it when the call cannot be paid, when
//! its settlement's outcome is unknown, and when the call never reaches its end.

use crate::AppState;
use crate::idempotency;

/// A payment being spent by this request, with the request's Idempotency-Key claim.
pub(super) struct Purchase<'a> {
    pub state: &'a AppState,
    pub payer: String,
    pub nonce: String,
    pub claim: Option<idempotency::IdempotencyClaim>,
}

impl Purchase<'_> {
    /// Frees the Idempotency-Key for a retry (the call did not run).
    pub async fn release_key(&self) {
        if let Some(claim) = &self.claim {
            idempotency::release(self.state, claim).await;
        }
    }

    /// The settlement's outcome is unknown: the purchase stays for the same payment to finish.
    pub async fn release(&self) {
        self.release_key().await;
        if let Err(error) = self
            .state
            .store
            .release_purchase(&self.payer, &self.nonce)
            .await
        {
            tracing::warn!(%error, "cannot release a purchase");
        }
    }

    /// Until disarmed, releases the purchase and the key when the call never reaches its end
    /// (it panicked, or was dropped): the call stays owed to the same payment.
    pub fn release_if_dropped(&self) -> ReleaseIfDropped {
        ReleaseIfDropped {
            armed: Some((
                self.state.clone(),
                self.payer.clone(),
                self.nonce.clone(),
                self.claim.clone(),
            )),
        }
    }

    /// No money moved: the payment may be presented again.
    pub async fn forget(&self) {
        self.release_key().await;
        if let Err(error) = self
            .state
            .store
            .forget_purchase(&self.payer, &self.nonce)
            .await
        {
            tracing::warn!(%error, "cannot forget a purchase");
        }
    }
}

/// See [`Purchase::release_if_dropped`].
pub(super) struct ReleaseIfDropped {
    armed: Option<(
        AppState,
        String,
        String,
        Option<idempotency::IdempotencyClaim>,
    )>,
}

impl ReleaseIfDropped {
    pub fn disarm(mut self) {
        self.armed = None;
    }
}

impl Drop for ReleaseIfDropped {
    fn drop(&mut self) {
        let Some((state, payer, nonce, claim)) = self.armed.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            Purchase {
                state: &state,
                payer,
                nonce,
                claim,
            }
            .release()
            .await;
        });
    }
}
