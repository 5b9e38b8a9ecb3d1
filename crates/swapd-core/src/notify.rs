//! E-mail: the addresses status e-mails go to, and the port that sends them (what an order's
//! e-mail says is `offchain::mail`).

use async_trait::async_trait;

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

    /// An address as stored with an order: checked when it was given, by the rules of that
    /// time (older orders may hold one the mailer no longer takes: the notifier checks again).
    pub fn stored(text: String) -> Self {
        Self(text)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

impl std::fmt::Display for Email {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
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
