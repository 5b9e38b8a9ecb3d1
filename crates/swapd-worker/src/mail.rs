//! E-mail delivery with lettre: SMTP (TLS by URL: `smtps://` or `smtp://…?tls=required`) in
//! live mode, `.eml` files in a directory in sandbox mode. The notifier sends the pending status
//! e-mails of the outbox and marks them sent.

use std::path::PathBuf;
use std::sync::Arc;
use tracing::Instrument;

use async_trait::async_trait;
use lettre::message::Mailbox;
use lettre::message::header::ContentType;
use lettre::{AsyncFileTransport, AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use swapd_core::notify::{Mail, MailError, Mailer};
use swapd_core::offchain::mail::order_mail;
use swapd_core::{Clock, Store};

/// Sends through an SMTP server.
pub struct SmtpMailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
}

impl SmtpMailer {
    /// `url` as lettre reads it: `smtp://[user:pass@]host[:port][?tls=required]` or
    /// `smtps://…`.
    pub fn from_url(url: &str, from: &str) -> Result<Self, MailError> {
        let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
            .map_err(|e| MailError(format!("SMTP URL: {e}")))?
            .build();
        Ok(Self {
            transport,
            from: parse_mailbox(from)?,
        })
    }
}

#[async_trait]
impl Mailer for SmtpMailer {
    async fn send(&self, mail: &Mail) -> Result<(), MailError> {
        let message = message(&self.from, mail)?;
        self.transport
            .send(message)
            .instrument(tracing::info_span!("smtp.send", otel.kind = "client"))
            .await
            .map(drop)
            .map_err(|e| MailError(e.to_string()))
    }
}

/// Writes each e-mail as an `.eml` file into a directory.
pub struct FileMailer {
    transport: AsyncFileTransport<Tokio1Executor>,
    from: Mailbox,
}

impl FileMailer {
    pub fn new(dir: PathBuf, from: &str) -> Result<Self, MailError> {
        std::fs::create_dir_all(&dir)
            .map_err(|e| MailError(format!("cannot create {}: {e}", dir.display())))?;
        Ok(Self {
            transport: AsyncFileTransport::new(dir),
            from: parse_mailbox(from)?,
        })
    }
}

#[async_trait]
impl Mailer for FileMailer {
    async fn send(&self, mail: &Mail) -> Result<(), MailError> {
        let message = message(&self.from, mail)?;
        self.transport
            .send(message)
            .await
            .map(drop)
            .map_err(|e| MailError(e.to_string()))
    }
}

fn parse_mailbox(text: &str) -> Result<Mailbox, MailError> {
    text.parse()
        .map_err(|e| MailError(format!("`{text}` is not an e-mail address: {e}")))
}

fn message(from: &Mailbox, mail: &Mail) -> Result<Message, MailError> {
    Message::builder()
        .from(from.clone())
        .to(parse_mailbox(&mail.to)?)
        .subject(&mail.subject)
        .header(ContentType::TEXT_PLAIN)
        .body(mail.text.clone())
        .map_err(|e| MailError(e.to_string()))
}

/// Sends the status e-mails waiting in the outbox.
pub struct Notifier {
    store: Arc<dyn Store>,
    mailer: Arc<dyn Mailer>,
    clock: Arc<dyn Clock>,
}

impl Notifier {
    pub fn new(store: Arc<dyn Store>, mailer: Arc<dyn Mailer>, clock: Arc<dyn Clock>) -> Self {
        Self {
            store,
            mailer,
            clock,
        }
    }

    /// Sends every pending e-mail (up to a batch, leased to this notifier so other nodes send
    /// others) and marks each sent one. A failed send is tried again once its lease ends; an
    /// e-mail sent but not marked (crash) is sent again: at least once. Returns how many were
    /// sent.
    pub async fn run_pending(&self) -> usize {
        let now_ms = self.clock.now_ms();
        let pending = match self
            .store
            .claim_notifications(now_ms, now_ms + crate::LEASE_MS, 100)
            .await
        {
            Ok(pending) => pending,
            Err(error) => {
                tracing::warn!(%error, "cannot list pending e-mails");
                return 0;
            }
        };
        let mut sent = 0;
        for event in pending {
            let Some(to) = &event.notify_email else {
                continue;
            };
            if !swapd_core::notify::can_send_to(to.as_str()) {
                // Taken before the API checked addresses this way: it will never go out.
                tracing::warn!(event = %event.id, "status e-mail to an address no mailer takes; marked failed");
                if let Err(error) = self
                    .store
                    .mark_notification_failed(&event.id, self.clock.now_ms())
                    .await
                {
                    tracing::warn!(event = %event.id, %error, "cannot mark the e-mail failed");
                }
                continue;
            }
            if let Err(error) = self.mailer.send(&order_mail(&event, to)).await {
                tracing::warn!(event = %event.id, %error, "status e-mail not sent; retrying later (a bounded number of times)");
                continue;
            }
            sent += 1;
            if let Err(error) = self
                .store
                .mark_notified(&event.id, self.clock.now_ms())
                .await
            {
                tracing::warn!(event = %event.id, %error, "status e-mail sent but not marked");
            }
        }
        sent
    }
}
