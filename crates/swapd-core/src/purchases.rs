//! What a pay-per-call payment bought (docs/x402.md, "Paying"): an x402 payment, identified by
//! its payer and EIP-3009 nonce, buys one call. Its purchase record follows the payment from
//! settlement to the answer, so that the same `PAYMENT-SIGNATURE` sent again after a failure
//! finishes the purchase without a second settlement. The decision is pure; stores apply it
//! atomically.

/// How long an attempt holds a purchase before another may take over (it died, or its
/// settlement outlived it).
pub const PURCHASE_LEASE_MS: i64 = 60_000;

/// Where a purchase stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PurchaseState {
    /// Sent (or about to be sent) to the facilitator for settlement; the outcome is not known.
    Settling,
    /// Paid: the call it buys is owed.
    Settled { transaction: String },
    /// Paid and answered.
    Served,
}

/// A stored purchase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Purchase {
    /// The request URL the payment pays for.
    pub resource: String,
    /// The Idempotency-Key of the request it was first sent with (mutations).
    pub idempotency_key: Option<String>,
    pub state: PurchaseState,
    /// Until when an attempt holds it (0: nobody).
    pub lease_until_ms: i64,
}

/// The request presenting a payment.
#[derive(Debug, Clone, Copy)]
pub struct Presented<'a> {
    pub resource: &'a str,
    pub idempotency_key: Option<&'a str>,
}

/// What the attempt presenting a payment does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PurchaseStep {
    /// A new payment: verify and settle it.
    Settle,
    /// A settlement was sent earlier and its outcome never came back: settle again (a payment
    /// settles once on chain, so this cannot charge twice).
    Resettle,
    /// Paid already: run the call without settling.
    Serve { transaction: String },
    /// Another attempt holds the purchase: retry after this many seconds.
    InProgress { retry_after_secs: u64 },
    /// The payment bought another call, or this one was answered: refuse.
    Used,
}

/// How a store must change the purchase for an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PurchasePlan {
    /// Write `purchase` (insert, or take over the stored one), then take `step`.
    Take(Purchase, PurchaseStep),
    /// Leave it and answer.
    Answer(PurchaseStep),
}

pub fn plan(existing: Option<&Purchase>, presented: Presented<'_>, now_ms: i64) -> PurchasePlan {
    let lease_until_ms = now_ms + PURCHASE_LEASE_MS;
    let Some(purchase) = existing else {
        return PurchasePlan::Take(
            Purchase {
                resource: presented.resource.to_owned(),
                idempotency_key: presented.idempotency_key.map(str::to_owned),
                state: PurchaseState::Settling,
                lease_until_ms,
            },
            PurchaseStep::Settle,
        );
    };
    let same_call = purchase.resource == presented.resource
        && purchase.idempotency_key.as_deref() == presented.idempotency_key;
    if !same_call || purchase.state == PurchaseState::Served {
        return PurchasePlan::Answer(PurchaseStep::Used);
    }
    if purchase.lease_until_ms > now_ms {
        let left_ms = purchase.lease_until_ms - now_ms;
        return PurchasePlan::Answer(PurchaseStep::InProgress {
            retry_after_secs: u64::try_from((left_ms.min(5_000) + 999) / 1000).unwrap_or(1),
        });
    }
    let step = match &purchase.state {
        PurchaseState::Settling => PurchaseStep::Resettle,
        PurchaseState::Settled { transaction } => PurchaseStep::Serve {
            transaction: transaction.clone(),
        },
        PurchaseState::Served => unreachable!("answered above"),
    };
    PurchasePlan::Take(
        Purchase {
            lease_until_ms,
            ..purchase.clone()
        },
        step,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_700_000_000_000;

    fn presented(key: Option<&str>) -> Presented<'_> {
        Presented {
            resource: "https://swapd.example/api/x402/orders",
            idempotency_key: key,
        }
    }

    fn stored(state: PurchaseState, lease_until_ms: i64) -> Purchase {
        Purchase {
            resource: "https://swapd.example/api/x402/orders".into(),
            idempotency_key: Some("idem-1".into()),
            state,
            lease_until_ms,
        }
    }

    #[test]
    fn a_new_payment_is_settled_under_a_lease() {
        let PurchasePlan::Take(purchase, PurchaseStep::Settle) =
            plan(None, presented(Some("idem-1")), NOW)
        else {
            panic!("a new payment settles");
        };
        assert_eq!(purchase.state, PurchaseState::Settling);
        assert_eq!(purchase.lease_until_ms, NOW + PURCHASE_LEASE_MS);
    }

    #[test]
    fn an_unfinished_purchase_is_finished_once_its_lease_is_free() {
        let settling = stored(PurchaseState::Settling, NOW - 1);
        assert!(matches!(
            plan(Some(&settling), presented(Some("idem-1")), NOW),
            PurchasePlan::Take(_, PurchaseStep::Resettle)
        ));
        let settled = stored(
            PurchaseState::Settled {
                transaction: "0xabc".into(),
            },
            0,
        );
        assert_eq!(
            plan(Some(&settled), presented(Some("idem-1")), NOW),
            PurchasePlan::Take(
                Purchase {
                    lease_until_ms: NOW + PURCHASE_LEASE_MS,
                    ..settled.clone()
                },
                PurchaseStep::Serve {
                    transaction: "0xabc".into()
                }
            )
        );
        let held = stored(PurchaseState::Settling, NOW + 2_500);
        assert_eq!(
            plan(Some(&held), presented(Some("idem-1")), NOW),
            PurchasePlan::Answer(PurchaseStep::InProgress {
                retry_after_secs: 3
            })
        );
    }

    #[test]
    fn a_payment_buys_one_call() {
        let served = stored(PurchaseState::Served, 0);
        assert_eq!(
            plan(Some(&served), presented(Some("idem-1")), NOW),
            PurchasePlan::Answer(PurchaseStep::Used)
        );
        let settled = stored(
            PurchaseState::Settled {
                transaction: "0xabc".into(),
            },
            0,
        );
        // Another Idempotency-Key, or another request: the payment bought a different call.
        for other in [presented(Some("idem-2")), presented(None)] {
            assert_eq!(
                plan(Some(&settled), other, NOW),
                PurchasePlan::Answer(PurchaseStep::Used)
            );
        }
        let elsewhere = Presented {
            resource: "https://swapd.example/api/x402/quotes",
            idempotency_key: Some("idem-1"),
        };
        assert_eq!(
            plan(Some(&settled), elsewhere, NOW),
            PurchasePlan::Answer(PurchaseStep::Used)
        );
    }
}
