//! A real SMTP server on 127.0.0.1 for the tests that send mail through the host's relay
//! (`TESSERA_SMTP_URL`): the mail engine's external mail and the sign-in mails. It speaks just
//! enough of the protocol and keeps every message it accepts.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// One mail the sink accepted: the envelope and the message as sent after `DATA`.
#[derive(Debug, Clone, Default)]
pub struct SmtpMail {
    pub sender: String,
    pub recipients: Vec<String>,
    pub data: String,
}

impl SmtpMail {
    /// The value of header `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        let (headers, _) = self.data.split_once("\r\n\r\n")?;
        headers.split("\r\n").find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.eq_ignore_ascii_case(name).then(|| value.trim())
        })
    }

    /// The value of header `name` with its folded lines joined (`Content-Type` with its
    /// `boundary` on the next line).
    pub fn unfolded_header(&self, name: &str) -> Option<String> {
        let (headers, _) = self.data.split_once("\r\n\r\n")?;
        let unfolded = headers.replace("\r\n ", " ").replace("\r\n\t", " ");
        unfolded.split("\r\n").find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.eq_ignore_ascii_case(name)
                .then(|| value.trim().to_owned())
        })
    }

    pub fn body(&self) -> &str {
        self.data
            .split_once("\r\n\r\n")
            .map_or("", |(_, body)| body.trim_end_matches("\r\n"))
    }

    /// The body of the part of type `media_type` (`text/plain`, `text/html`) of a multipart
    /// message, decoded (7-bit or quoted-printable, what the host's relay sends for text).
    pub fn part(&self, media_type: &str) -> Option<String> {
        let content_type = self.unfolded_header("Content-Type")?;
        let boundary = content_type
            .split_once("boundary=")?
            .1
            .trim_matches('"')
            .to_owned();
        self.body()
            .split(&format!("--{boundary}"))
            .filter_map(|part| part.trim_start_matches("\r\n").split_once("\r\n\r\n"))
            .find(|(headers, _)| {
                headers.lines().any(|line| {
                    line.to_ascii_lowercase()
                        .starts_with(&format!("content-type: {media_type}"))
                })
            })
            .map(|(headers, body)| {
                let body = body.trim_end_matches("\r\n");
                let headers = headers.to_ascii_lowercase();
                let text = if headers.contains("content-transfer-encoding: quoted-printable") {
                    quoted_printable(body)
                } else {
                    assert!(
                        headers.contains("content-transfer-encoding: 7bit"),
                        "{headers}"
                    );
                    body.to_owned()
                };
                text.replace("\r\n", "\n")
            })
    }
}

/// Decodes a quoted-printable body (RFC 2045): soft line breaks (`=` at a line's end) joined,
/// `=XX` turned back into its byte.
fn quoted_printable(body: &str) -> String {
    let joined = body.replace("=\r\n", "");
    let bytes = joined.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'=' && index + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[index + 1..index + 3]).unwrap();
            decoded.push(u8::from_str_radix(hex, 16).expect("a quoted-printable escape"));
            index += 3;
        } else {
            decoded.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(decoded).expect("UTF-8 text")
}

/// An SMTP server on 127.0.0.1 speaking just enough of the protocol: greeting, `EHLO`/`HELO`,
/// `MAIL FROM`, `RCPT TO` (answered 550 when refusing), `DATA` up to the lone dot, `QUIT`, and
/// 250 for anything else (`RSET`, `NOOP`).
pub struct SmtpSink {
    port: u16,
    mails: Arc<Mutex<Vec<SmtpMail>>>,
    refused: Arc<AtomicUsize>,
}

impl SmtpSink {
    pub async fn start(refuse_recipients: bool) -> Self {
        Self::start_with(refuse_recipients, Duration::ZERO).await
    }

    /// A sink that takes `delay` to answer each message's `DATA` (a slow relay).
    pub async fn start_with(refuse_recipients: bool, delay: Duration) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let mails: Arc<Mutex<Vec<SmtpMail>>> = Arc::default();
        let refused: Arc<AtomicUsize> = Arc::default();
        let (session_mails, session_refused) = (mails.clone(), refused.clone());
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (mails, refused) = (session_mails.clone(), session_refused.clone());
                tokio::spawn(async move {
                    let _ = smtp_session(stream, refuse_recipients, delay, mails, refused).await;
                });
            }
        });
        Self {
            port,
            mails,
            refused,
        }
    }

    pub fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.port)
    }

    pub fn mails(&self) -> Vec<SmtpMail> {
        self.mails.lock().unwrap().clone()
    }

    /// `RCPT TO` commands answered 550.
    pub fn refused(&self) -> usize {
        self.refused.load(Ordering::SeqCst)
    }
}

/// The address between `<` and `>` of a `MAIL FROM:`/`RCPT TO:` argument.
fn path_address(argument: &str) -> String {
    argument
        .split_once('<')
        .and_then(|(_, rest)| rest.split_once('>'))
        .map_or_else(
            || argument.trim().to_owned(),
            |(address, _)| address.to_owned(),
        )
}

async fn smtp_session(
    stream: tokio::net::TcpStream,
    refuse_recipients: bool,
    delay: Duration,
    mails: Arc<Mutex<Vec<SmtpMail>>>,
    refused: Arc<AtomicUsize>,
) -> std::io::Result<()> {
    let (reader, mut writer) = stream.into_split();
    let mut reader = BufReader::new(reader);
    writer.write_all(b"220 sink.test ESMTP\r\n").await?;
    let mut current = SmtpMail::default();
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).await? == 0 {
            return Ok(());
        }
        let command = line.trim_end().to_owned();
        let upper = command.to_ascii_uppercase();
        let reply = if upper.starts_with("EHLO") || upper.starts_with("HELO") {
            "250 sink.test"
        } else if upper.starts_with("MAIL FROM:") {
            current = SmtpMail {
                sender: path_address(&command["MAIL FROM:".len()..]),
                ..SmtpMail::default()
            };
            "250 2.1.0 OK"
        } else if upper.starts_with("RCPT TO:") {
            if refuse_recipients {
                refused.fetch_add(1, Ordering::SeqCst);
                "550 5.1.1 mailbox unavailable"
            } else {
                current
                    .recipients
                    .push(path_address(&command["RCPT TO:".len()..]));
                "250 2.1.5 OK"
            }
        } else if upper == "DATA" {
            writer.write_all(b"354 end with <CRLF>.<CRLF>\r\n").await?;
            let mut data = String::new();
            loop {
                line.clear();
                if reader.read_line(&mut line).await? == 0 {
                    return Ok(());
                }
                if line == ".\r\n" {
                    break;
                }
                // Undo dot-stuffing.
                data.push_str(line.strip_prefix('.').unwrap_or(&line));
            }
            current.data = data;
            tokio::time::sleep(delay).await;
            mails.lock().unwrap().push(std::mem::take(&mut current));
            "250 2.0.0 queued"
        } else if upper == "QUIT" {
            writer.write_all(b"221 2.0.0 bye\r\n").await?;
            return Ok(());
        } else {
            "250 2.0.0 OK"
        };
        writer.write_all(format!("{reply}\r\n").as_bytes()).await?;
    }
}
