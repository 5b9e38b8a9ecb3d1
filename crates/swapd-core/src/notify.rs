//! Status e-mails: the message about an order event, and the port that sends it.

use async_trait::async_trait;

use crate::offchain::order::OrderEvent;

/// One plain-text e-mail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mail {
    pub to: String,
    pub subject: String,
    pub text: String,
}

#[derive(Debug, Clone, thiserror::Error)]
#[error("cannot send e-mail: {0}")]
pub struct MailError(pub String);

/// How many times a status e-mail is tried (one attempt per notifier lease, about a minute
/// apart) before it is marked failed: an SMTP server down for half an hour loses nothing, an
/// address nobody can deliver to is not retried forever.
pub const MAX_MAIL_ATTEMPTS: u32 = 30;

/// An address status e-mails can go to: the API's pattern (`swapd_types::orders::EMAIL_PATTERN`),
/// which the mailer's own parser takes. Made only by [`Email::parse`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Email(String);

impl Email {
    pub fn parse(text: &str) -> Option<Self> {
        (swapd_types::orders::is_email_address(text) && can_send_to(text))
            .then(|| Self(text.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

/// Whether a mailer can send to `address`: parsed by the mailer's own parser (lettre's
/// `Address`), so an address the API takes is one the notifier can send to.
pub fn can_send_to(address: &str) -> bool {
    address.parse::<lettre::Address>().is_ok()
}

/// Sends e-mails: SMTP in live mode, `.eml` files in sandbox mode.
#[async_trait]
pub trait Mailer: Send + Sync + 'static {
    async fn send(&self, mail: &Mail) -> Result<(), MailError>;
}

/// The e-mail telling `to` about `event`: the new status and what the order looks like now.
pub fn order_mail(event: &OrderEvent, to: &str) -> Mail {
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
        to: to.to_owned(),
        subject: format!("Order {} is {status}", event.order_id),
        text,
    }
}

#[cfg(test)]
mod address_tests {
    use super::can_send_to;

    #[test]
    fn only_addresses_the_mailer_can_send_to_are_taken() {
        for good in ["ops@example.com", "first.last+tag@sub.example.org"] {
            assert!(can_send_to(good), "{good}");
        }
        for bad in [
            "<script>alert(1)</script>@evil.com",
            "a b@example.com",
            "(comment)x@example.com",
            "nobody",
            "x@",
        ] {
            assert!(!can_send_to(bad), "{bad}");
        }
    }

    #[test]
    fn every_address_the_schema_describes_is_taken_by_the_api_and_the_mailer() {
        use proptest::prelude::*;
        // The pattern without its anchors and its lookahead for the local part's length
        // (which the generator cannot take: that length is assumed below instead), its
        // unbounded repetitions bounded so that most drawn addresses fit.
        let pattern = swapd_types::schema::EMAIL_PATTERN;
        let mut body = pattern[1..pattern.len() - 1].to_owned();
        for (unbounded, bounded) in [
            ("(?=[^@]{1,64}@)", ""),
            ("~-]+(", "~-]{1,20}("),
            ("~-]+)*@", "~-]{1,20}){0,2}@"),
            ("])?)+", "])?){1,3}"),
        ] {
            assert!(body.contains(unbounded), "{unbounded} in {body}");
            body = body.replacen(unbounded, bounded, 1);
        }
        let addresses = proptest::string::string_regex(&body).unwrap();
        proptest!(|(address in addresses)| {
            let local = address.split('@').next().unwrap_or_default();
            prop_assume!(address.len() <= 254 && local.len() <= 64);
            prop_assert!(swapd_types::orders::is_email_address(&address), "{}", address);
            prop_assert!(can_send_to(&address), "{}", address);
        });
    }
}
