//! E-mail delivery through lettre against a real SMTP conversation (a minimal SMTP server
//! started by the test on 127.0.0.1) and into `.eml` files.

use std::sync::{Arc, Mutex};

use swapd_core::notify::{Mail, Mailer};
use swapd_worker::{FileMailer, SmtpMailer};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// One received message: envelope recipients and the raw data.
#[derive(Debug, Default, Clone)]
struct Received {
    recipients: Vec<String>,
    data: String,
}

/// An SMTP server (RFC 5321's minimal command set) that keeps what it receives.
async fn smtp_sink() -> (u16, Arc<Mutex<Vec<Received>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let inbox = Arc::new(Mutex::new(Vec::new()));
    let kept = inbox.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let inbox = kept.clone();
            tokio::spawn(async move {
                let (read, mut write) = stream.into_split();
                let mut lines = BufReader::new(read).lines();
                write.write_all(b"220 sink ESMTP ready\r\n").await.unwrap();
                let mut current = Received::default();
                while let Ok(Some(line)) = lines.next_line().await {
                    let verb = line
                        .split_whitespace()
                        .next()
                        .unwrap_or("")
                        .to_ascii_uppercase();
                    let reply: &[u8] = match verb.as_str() {
                        "EHLO" => b"250-sink\r\n250 8BITMIME\r\n",
                        "HELO" | "MAIL" | "RSET" | "NOOP" => b"250 OK\r\n",
                        "RCPT" => {
                            current
                                .recipients
                                .push(line[line.find(':').unwrap() + 1..].trim().to_owned());
                            b"250 OK\r\n"
                        }
                        "DATA" => {
                            write
                                .write_all(b"354 end with <CRLF>.<CRLF>\r\n")
                                .await
                                .unwrap();
                            while let Ok(Some(data)) = lines.next_line().await {
                                if data == "." {
                                    break;
                                }
                                current.data.push_str(&data);
                                current.data.push('\n');
                            }
                            inbox.lock().unwrap().push(std::mem::take(&mut current));
                            b"250 queued\r\n"
                        }
                        "QUIT" => {
                            write.write_all(b"221 bye\r\n").await.unwrap();
                            return;
                        }
                        _ => b"502 not implemented\r\n",
                    };
                    write.write_all(reply).await.unwrap();
                }
            });
        }
    });
    (port, inbox)
}

fn mail() -> Mail {
    Mail {
        to: "ops@example.com".into(),
        subject: "Order ord_1 is completed".into(),
        text: "Order ord_1 is now completed.\n".into(),
    }
}

#[tokio::test]
async fn smtp_delivers_to_a_real_server() {
    let (port, inbox) = smtp_sink().await;
    let mailer = SmtpMailer::from_url(
        &format!("smtp://127.0.0.1:{port}"),
        "swapd <noreply@swapd.test>",
    )
    .unwrap();
    mailer.send(&mail()).await.unwrap();
    let received = inbox.lock().unwrap().clone();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].recipients, ["<ops@example.com>"]);
    let data = &received[0].data;
    assert!(data.contains("Subject: Order ord_1 is completed"), "{data}");
    assert!(data.contains("From: swapd <noreply@swapd.test>"), "{data}");
    assert!(data.contains("To: ops@example.com"), "{data}");
    assert!(data.contains("Order ord_1 is now completed."), "{data}");
}

#[tokio::test]
async fn smtp_failures_are_errors() {
    // Nothing listens on this port (bound, then dropped).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mailer =
        SmtpMailer::from_url(&format!("smtp://127.0.0.1:{port}"), "noreply@swapd.test").unwrap();
    assert!(mailer.send(&mail()).await.is_err());
    assert!(SmtpMailer::from_url("ftp://nope", "noreply@swapd.test").is_err());
    assert!(SmtpMailer::from_url("smtp://127.0.0.1", "not an address").is_err());
}

#[tokio::test]
async fn sandbox_mail_is_written_as_eml_files() {
    let dir = tempfile::tempdir().unwrap();
    let mailer = FileMailer::new(dir.path().join("mail"), "noreply@swapd.test").unwrap();
    mailer.send(&mail()).await.unwrap();
    let files: Vec<_> = std::fs::read_dir(dir.path().join("mail"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].extension().unwrap(), "eml");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert!(text.contains("Subject: Order ord_1 is completed"));
    assert!(text.contains("To: ops@example.com"));
}
