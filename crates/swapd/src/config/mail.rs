//! `[mail]`: where status e-mails go out.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::value::{self, through_text};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MailConfig {
    /// SMTP server for status e-mails: `smtps://user:pass@host:465` or
    /// `smtp://user:pass@host:587?tls=required`. Sandbox: unset writes `.eml` files under
    /// `<data_dir>/mail`. Live: required.
    #[serde(default, with = "value::optional")]
    pub smtp_url: Option<SmtpUrl>,
    /// Sender of status e-mails.
    pub from: Sender,
}

value::credential_url!(
    /// An `smtp://` or `smtps://` URL, shown with its password starred.
    SmtpUrl,
    ["smtp://", "smtps://"],
    "must be an smtp:// or smtps:// URL"
);

/// The sender of status e-mails: an address, optionally with a name.
#[derive(Debug, Clone)]
pub struct Sender(lettre::message::Mailbox);

impl Sender {
    pub fn mailbox(&self) -> &lettre::message::Mailbox {
        &self.0
    }
}

impl FromStr for Sender {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        text.parse().map(Self).map_err(|_| {
            "must be an e-mail address, optionally with a name: `swapd <noreply@example.com>`"
                .to_owned()
        })
    }
}

impl fmt::Display for Sender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

through_text!(Sender);

impl Default for MailConfig {
    fn default() -> Self {
        Self {
            smtp_url: None,
            from: "swapd <noreply@localhost>".parse().expect("a mailbox"),
        }
    }
}
