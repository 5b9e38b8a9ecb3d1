//! The status e-mail about an order event: the new status and what the order looks like now
//! (docs/orders.md, "Status e-mails"), sent through the [`Mailer`](crate::notify::Mailer) port.

use crate::notify::{Email, Mail};
use crate::offchain::order::OrderEvent;

/// The e-mail telling `to` about `event`: the new status and what the order looks like now.
pub fn order_mail(event: &OrderEvent, to: &Email) -> Mail {
    let data = &event.data;
    let field = |path: &[&str]| {
        path.iter()
            .try_fold(data, |value, key| value.get(key))
            .and_then(|v| v.as_str())
            .unwrap_or("-")
            .to_owned()
    };
    let status = field(&["status"]).replace('_', " ");
    let mut text = format!(
        "Order {id} is now {status}.\n\n\
         Send:     {from_amount} {from_code}\n\
         To:       {deposit}{deposit_tag}\n\
         Receive:  {to_amount} {to_code}\n\
         Payout:   {payout}\n",
        id = event.order_id,
        from_amount = field(&["from", "amount"]),
        from_code = field(&["from", "code"]),
        deposit = field(&["from", "depositAddress"]),
        deposit_tag = data["from"]["depositTag"]
            .as_str()
            .map(|t| format!(" (destination tag {t})"))
            .unwrap_or_default(),
        to_amount = field(&["to", "amount"]),
        to_code = field(&["to", "code"]),
        payout = field(&["to", "address"]),
    );
    if let Some(tx) = data["to"]["txId"].as_str() {
        text.push_str(&format!("Payout transaction: {tx}\n"));
    }
    if let Some(tx) = data["refund"]["txId"].as_str() {
        text.push_str(&format!("Refund transaction: {tx}\n"));
    }
    if let Some(reasons) = data["emergency"]["reasons"].as_array() {
        let reasons: Vec<&str> = reasons.iter().filter_map(|r| r.as_str()).collect();
        text.push_str(&format!(
            "\nYour choice is needed ({}): EXCHANGE or REFUND.\n",
            reasons.join(", ")
        ));
    }
    if let Some(page) = data["orderPageUrl"].as_str() {
        text.push_str(&format!(
            "\nFollow the order (and choose, when asked): {page}\n"
        ));
    }
    text.push_str(&format!(
        "\nEvent {} ({}).\n",
        event.id,
        event.event_type.as_str()
    ));
    Mail {
        to: to.as_str().to_owned(),
        subject: format!("Order {} is {status}", event.order_id),
        text,
    }
}
