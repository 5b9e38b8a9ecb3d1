//! Wire shapes of offchain orders (docs/orders.md). Amounts are decimal strings in display units;
//! times are Unix seconds.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::market::{Direction, RateType};

/// `POST /orders`: a createToken from `POST /routes/resolve`, or a full order input.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(example = json!({
    "fromCcy": "BTC", "toCcy": "ETH", "amount": "0.05", "type": "fixed",
    "toAddress": "0x52908400098527886E0F7030069857D2E4169EE7"
}))]
pub struct OrderInput {
    /// Locks the terms of a resolved route; then `fromCcy`, `toCcy`, `amount`, `direction` and
    /// `type` must be left out.
    #[serde(default)]
    pub create_token: Option<String>,
    #[serde(default)]
    pub from_ccy: Option<String>,
    #[serde(default)]
    pub to_ccy: Option<String>,
    #[serde(default)]
    #[schema(schema_with = crate::schema::optional_amount)]
    pub amount: Option<String>,
    #[serde(default)]
    pub direction: Option<Direction>,
    #[serde(default, rename = "type")]
    pub rate_type: Option<RateType>,
    /// Where the output is paid, checked for `toCcy`'s network.
    pub to_address: String,
    /// Destination tag or memo of `toAddress`; required on networks that need one.
    #[serde(default)]
    pub tag: Option<String>,
    /// Where a refund goes, checked for `fromCcy`'s network.
    #[serde(default)]
    pub refund_address: Option<String>,
    #[serde(default)]
    pub refund_tag: Option<String>,
    /// An affiliate's code (docs/fees.md); an order made from a createToken takes its routes'.
    #[serde(default)]
    #[schema(pattern = "^[A-Za-z0-9_-]{1,64}$")]
    pub affiliate_code: Option<String>,
    /// Status e-mails go here from creation on.
    #[serde(default)]
    #[schema(schema_with = crate::schema::optional_email)]
    pub email: Option<String>,
}

/// A deposit seen on the chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Received {
    pub tx_id: String,
    pub amount: String,
    pub confirmations: u32,
    pub required_confirmations: u32,
    pub seen_at: i64,
    /// A deposit after the first is not exchanged: it is sent back, in this transaction.
    pub refund_tx_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OrderFrom {
    pub code: String,
    /// What to send.
    pub amount: String,
    pub deposit_address: String,
    /// The destination tag or memo the deposit must carry, when the network uses one.
    pub deposit_tag: Option<String>,
    pub received: Vec<Received>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OrderTo {
    pub code: String,
    /// Expected output; the amount paid once the payout is made.
    pub amount: String,
    pub address: String,
    pub tag: Option<String>,
    pub tx_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OrderRefund {
    pub address: Option<String>,
    pub tag: Option<String>,
    pub amount: Option<String>,
    pub tx_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OrderEmergency {
    /// `EXPIRED`, `LESS`, `MORE`, `LIMIT`.
    pub reasons: Vec<String>,
    /// `EXCHANGE`, `REFUND`.
    pub allowed_choices: Vec<String>,
    pub choice: Option<String>,
    /// After this, an order with a refund address is refunded.
    pub deadline: i64,
}

/// An order as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OrderView {
    /// `ord_…`.
    pub order_id: String,
    /// `new`, `awaiting_deposit`, `confirming`, `exchanging`, `withdrawing`, `completed`,
    /// `expired`, `emergency`, `refunding`, `refunded`, `failed`.
    pub status: String,
    #[serde(rename = "type")]
    pub rate_type: RateType,
    pub direction: Direction,
    pub from_ccy: String,
    pub to_ccy: String,
    pub rate: String,
    pub provider: String,
    pub created_at: i64,
    pub updated_at: i64,
    /// A deposit must arrive before this.
    pub expires_at: i64,
    pub from: OrderFrom,
    pub to: OrderTo,
    pub refund: OrderRefund,
    pub emergency: Option<OrderEmergency>,
    pub affiliate_code: Option<String>,
    /// The fees of the order's quote, locked with its terms (docs/fees.md).
    pub fees: Vec<crate::market::Fee>,
    pub email_attached: bool,
    /// Why the order failed (`status: failed`).
    pub failure_reason: Option<String>,
    /// The hosted page of the order for the end customer: where and how much to send, a QR
    /// code, the live status, and the emergency choice. Its link carries an unguessable token
    /// of this order alone; hand it to your customer, not your API key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_page_url: Option<String>,
}

/// A choice in an emergency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum EmergencyChoice {
    /// Continue at the current market rate for the amount received.
    Exchange,
    /// Send the deposit back.
    Refund,
}

/// `POST /orders/{orderId}/emergency`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EmergencyInput {
    pub choice: EmergencyChoice,
    /// For REFUND when none was given at creation (replaces it otherwise).
    #[serde(default)]
    pub refund_address: Option<String>,
    #[serde(default)]
    pub refund_tag: Option<String>,
}

/// `POST /orders/{orderId}/refund`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RefundInput {
    #[serde(default)]
    pub refund_address: Option<String>,
    #[serde(default)]
    pub refund_tag: Option<String>,
}

/// One deposit QR code.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct QrImage {
    /// `Address` or `With amount`.
    pub title: String,
    /// `address` (the address, and tag, only) or `amount` (with the amount to send).
    pub kind: String,
    /// The wallet URI encoded: BIP-21, EIP-681, Solana Pay, `tron:` or `xrpl:`.
    pub payload: String,
    /// `data:image/png;base64,…`.
    pub image: String,
    /// `data:image/svg+xml;base64,…`.
    pub svg: String,
    /// The one to show first.
    pub checked: bool,
}

/// `GET /orders/{orderId}/qr`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct DepositQr {
    pub qr: Vec<QrImage>,
}

/// `POST /orders/{orderId}/notifications/email`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EmailInput {
    #[schema(schema_with = crate::schema::email)]
    pub email: String,
}

/// An e-mail address as swapd takes it, exactly as [`crate::schema::EMAIL_PATTERN`] says: at
/// most 254 characters; a local part of 1 to 64 characters, dot-separated runs of the
/// characters an unquoted address may use (letters, digits and ``!#$%&'*+/=?^_`{|}~-``); a
/// domain of two or more dot-separated labels of 1 to 63 letters, digits and inner hyphens.
/// Whether it exists is learned by sending to it.
pub fn is_email_address(text: &str) -> bool {
    let atext = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+/=?^_`{|}~-".contains(&b);
    let label = |label: &str| {
        let bytes = label.as_bytes();
        (1..=63).contains(&bytes.len())
            && bytes
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || *b == b'-')
            && bytes[0] != b'-'
            && bytes[bytes.len() - 1] != b'-'
    };
    text.len() <= 254
        && text.split_once('@').is_some_and(|(local, domain)| {
            (1..=64).contains(&local.len())
                && local
                    .split('.')
                    .all(|run| !run.is_empty() && run.bytes().all(atext))
                && domain.contains('.')
                && domain.split('.').all(label)
        })
}

#[cfg(test)]
mod email_tests {
    use super::is_email_address;

    #[test]
    fn e_mail_addresses_are_what_the_documented_pattern_says() {
        for good in [
            "a@b.co",
            "first.last+tag@mail-1.example.com",
            "!#$%&'*/=?^_`{|}~-@x.y",
        ] {
            assert!(is_email_address(good), "{good}");
        }
        let long_local = format!("{}@b.co", "a".repeat(65));
        for bad in [
            "",
            "a@b",
            "@b.co",
            "a@@b.co",
            "a b@c.de",
            "é@b.co",
            "a@b..co",
            "a@b_c.de",
            "a@.b.co",
            long_local.as_str(),
            // What the mailer's parser refuses too.
            "<script>alert(1)</script>@evil.com",
            ".a@b.co",
            "a.@b.co",
            "a..b@b.co",
            "a@-b.co",
            "a@b-.co",
            format!("a@{}.co", "b".repeat(64)).as_str(),
        ] {
            assert!(!is_email_address(bad), "{bad}");
        }
    }
}
