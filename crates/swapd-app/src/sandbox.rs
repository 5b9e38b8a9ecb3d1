//! The sandbox chain's control (docs/orders.md, "The sandbox chain"): a simulated transfer to
//! an order's deposit address. Sandbox mode only.

use swapd_core::Mode;
use swapd_core::owner::Owner;
use swapd_core::store::SandboxDeposit;
use swapd_types::sandbox::{DepositInput, DepositRecorded};

use crate::input::positive_amount;
use crate::orders::owned;
use crate::{Answer, Context, Error, IdempotencyKey};

/// The most confirmations a simulated deposit may start with.
const MAX_CONFIRMATIONS: u32 = 1_000;

/// Whether this deployment has a sandbox chain at all (live mode: the control does not exist).
pub fn available(app: Context<'_>) -> bool {
    app.mode == Mode::Sandbox
}

/// Records a transfer to `owner`'s order `id` on the sandbox chain (202), and makes the engine
/// look at the order now.
pub async fn deposit(
    app: Context<'_>,
    owner: &Owner,
    id: &str,
    input: DepositInput,
    key: Option<&dyn IdempotencyKey>,
) -> Result<Answer, Error> {
    let order = owned(app, owner, id).await?;
    let amount = positive_amount(&input.amount, order.from)?;
    let confirmations = input.confirmations.unwrap_or(0);
    if confirmations > MAX_CONFIRMATIONS {
        return Err(Error::invalid(
            "confirmations",
            format!("at most {MAX_CONFIRMATIONS}"),
        ));
    }
    let recorded = SandboxDeposit {
        tx_id: swapd_core::ids::new_tx_id(),
        address: order.deposit_address,
        tag: order.deposit_tag,
        amount: amount.to_string(),
        confirmations,
        seen_at_ms: app.clock.now_ms(),
    };
    let answer = Answer::json(
        202,
        &DepositRecorded {
            tx_id: recorded.tx_id.clone(),
            address: recorded.address.clone(),
            tag: recorded.tag.clone(),
            amount: recorded.amount.clone(),
            confirmations,
        },
    )?;
    app.store
        .sandbox_record_deposit(&recorded, answer.finish(key))
        .await?;
    wake(app, owner, id, recorded.seen_at_ms).await?;
    Ok(answer.written(key))
}

/// Makes the engine look at the order now (a finished order too: a deposit after the first is
/// sent back). Retried when the engine writes the order meanwhile, which wakes it anyway.
async fn wake(app: Context<'_>, owner: &Owner, id: &str, now_ms: i64) -> Result<(), Error> {
    for _ in 0..3 {
        let order = owned(app, owner, id).await?;
        let Some(due) = swapd_core::offchain::actions::wake(&order, now_ms) else {
            return Ok(());
        };
        if app.store.update_order(&due, &[], None).await? {
            return Ok(());
        }
    }
    Ok(())
}
