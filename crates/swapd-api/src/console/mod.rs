//! The operator console at `/console` (docs/operations.md, "The console"): API keys, orders,
//! webhook subscriptions and their deliveries, provider health and the x402 payments received,
//! server-rendered. It has its own login: the operator password, checked against its argon2
//! hash from the configuration; a session is a signed, HttpOnly, SameSite=Strict cookie, every
//! form carries a CSRF token bound to the session, and login attempts are limited per address.
//! Every action is one of the API's or the CLI's use cases (`crate::keys`, the webhook replay):
//! the console adds no rule of its own.

mod pages;

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use axum::extract::{Form, FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use hmac::{Hmac, Mac};
use maud::{DOCTYPE, Markup, PreEscaped, html};
use serde::Deserialize;
use sha2::Sha256;
use subtle::ConstantTimeEq;
use swapd_core::secrets::MasterKey;

use crate::AppState;

const SESSION_COOKIE: &str = "swapd_console";
const LOGIN_COOKIE: &str = "swapd_console_login";
/// How long a session lasts after its login.
const SESSION_SECS: i64 = 8 * 3600;
/// Login attempts per address and minute.
const LOGINS_PER_MINUTE: u32 = 5;

/// The console's settings and state; `None` in [`crate::AppParts::console`] when it is off.
pub struct Console {
    password_hash: String,
    session_key: [u8; 32],
    /// `Secure` on cookies when the public URL is https.
    secure: bool,
}

impl Console {
    /// Whether `password_hash` is an argon2 hash (PHC string), as the configuration is
    /// checked.
    pub fn check_hash(password_hash: &str) -> Result<(), String> {
        PasswordHash::new(password_hash).map(drop).map_err(|e| {
            format!("not an argon2 hash ({e}); make one with `swapd console hash-password`")
        })
    }

    /// The console for the operator password hashed as `password_hash` (checked with
    /// [`Console::check_hash`]: a hash that does not parse lets nobody in); `public_url` says
    /// whether cookies are `Secure`.
    pub fn new(password_hash: &str, master: &MasterKey, public_url: &str) -> Self {
        Self {
            password_hash: password_hash.to_owned(),
            session_key: master.derive("console sessions"),
            secure: public_url.starts_with("https://"),
        }
    }

    /// The argon2id hash (PHC string) of `password`, with a random salt, for
    /// `console.password_hash`.
    pub fn hash_password(password: &str) -> Result<String, String> {
        let salt =
            SaltString::encode_b64(&rand::random::<[u8; 16]>()).map_err(|e| e.to_string())?;
        argon2::Argon2::default()
            .hash_password(password.as_bytes(), &salt)
            .map(|hash| hash.to_string())
            .map_err(|e| e.to_string())
    }

    fn password_matches(&self, password: &str) -> bool {
        PasswordHash::new(&self.password_hash).is_ok_and(|hash| {
            argon2::Argon2::default()
                .verify_password(password.as_bytes(), &hash)
                .is_ok()
        })
    }

    fn mac(&self, purpose: &str, value: &str) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.session_key).expect("any key length");
        mac.update(purpose.as_bytes());
        mac.update(b"|");
        mac.update(value.as_bytes());
        hex::encode(mac.finalize().into_bytes())
    }

    /// A new session until `now + SESSION_SECS`: `{expires}.{random}.{mac}`.
    fn new_session(&self, now_secs: i64) -> String {
        let body = format!(
            "{}.{}",
            now_secs + SESSION_SECS,
            hex::encode(rand::random::<[u8; 16]>())
        );
        let mac = self.mac("session", &body);
        format!("{body}.{mac}")
    }

    fn session_valid(&self, session: &str, now_secs: i64) -> bool {
        let Some((body, mac)) = session.rsplit_once('.') else {
            return false;
        };
        let expires = body.split('.').next().and_then(|e| e.parse::<i64>().ok());
        expires.is_some_and(|expires| expires > now_secs) && same(&self.mac("session", body), mac)
    }

    fn cookie(&self, name: &str, value: &str, max_age: i64) -> HeaderValue {
        let secure = if self.secure { "; Secure" } else { "" };
        HeaderValue::from_str(&format!(
            "{name}={value}; Path=/console; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}"
        ))
        .expect("cookie values are ASCII")
    }
}

fn same(a: &str, b: &str) -> bool {
    bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

pub(crate) fn router() -> axum::Router<AppState> {
    axum::Router::new()
        .route("/console", get(|| async { Redirect::to("/console/keys") }))
        .route("/console/login", get(login_page).post(login))
        .route("/console/logout", post(logout))
        .merge(pages::router())
}

/// What `/console` answers when the console is off.
fn off() -> Response {
    page_headers((StatusCode::NOT_FOUND, Html("Not found")).into_response())
}

fn read_cookie<'a>(parts: &'a Parts, name: &str) -> Option<&'a str> {
    parts
        .headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
}

/// A logged-in operator: the session cookie checked. Without one, the login page.
pub(crate) struct Operator {
    /// The CSRF token every form of this session carries.
    pub csrf: String,
}

impl FromRequestParts<AppState> for Operator {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let console = state.console.as_deref().ok_or_else(off)?;
        let now = state.clock.now_ms() / 1000;
        match read_cookie(parts, SESSION_COOKIE).filter(|s| console.session_valid(s, now)) {
            Some(session) => Ok(Operator {
                csrf: console.mac("csrf", session),
            }),
            None => Err(page_headers(Redirect::to("/console/login").into_response())),
        }
    }
}

impl Operator {
    /// Whether a form's CSRF token is this session's; [`forged`] answers one that is not.
    pub fn sent(&self, token: &str) -> bool {
        same(&self.csrf, token)
    }
}

/// The answer to a form whose CSRF token is not its session's (403).
pub(crate) fn forged() -> Response {
    refused(
        StatusCode::FORBIDDEN,
        "This form was not sent from this console session (its CSRF token is missing or stale). Reload the page and try again.",
    )
}

/// An error page of the console.
pub(crate) fn refused(status: StatusCode, message: &str) -> Response {
    let body = layout(
        "Refused",
        None,
        html! { h1 { "Refused" } p.problem role="alert" { (message) } },
    );
    page_headers((status, Html(body.into_string())).into_response())
}

async fn login_page(State(state): State<AppState>) -> Response {
    match state.console.as_deref() {
        Some(console) => login_form(console, None, StatusCode::OK),
        None => off(),
    }
}

/// The login form, with a fresh pre-session cookie its CSRF token is bound to.
fn login_form(console: &Console, problem: Option<&str>, status: StatusCode) -> Response {
    let pre = hex::encode(rand::random::<[u8; 16]>());
    let csrf = console.mac("login", &pre);
    let body = layout(
        "Console login",
        None,
        html! {
            h1 { "swapd console" }
            @if let Some(problem) = problem { p.problem role="alert" { (problem) } }
            form #login method="post" action="/console/login" {
                input type="hidden" name="csrf" value=(csrf);
                label { "Operator password" input type="password" name="password" autocomplete="current-password" required autofocus; }
                button type="submit" { "Log in" }
            }
        },
    );
    let mut response = (status, Html(body.into_string())).into_response();
    response
        .headers_mut()
        .append(header::SET_COOKIE, console.cookie(LOGIN_COOKIE, &pre, 600));
    page_headers(response)
}

#[derive(Deserialize)]
struct LoginForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    password: String,
}

async fn login(
    State(state): State<AppState>,
    parts: Parts,
    Form(form): Form<LoginForm>,
) -> Response {
    let Some(console) = state.console.as_deref() else {
        return off();
    };
    let address = crate::client_address::client_ip(&parts, &state.trusted_proxies);
    if let Some(address) = address {
        // Counted where the node counts its other windows: in Redis or the shared database
        // when there are several nodes, so the limit is the deployment's, not each node's.
        let window = state
            .guards
            .consume_window(
                &format!("console-login|{address}"),
                60_000,
                LOGINS_PER_MINUTE,
            )
            .await;
        match window {
            Ok(window) if window.allowed => {}
            Ok(_) => {
                return login_form(
                    console,
                    Some("Too many login attempts from this address; wait a minute."),
                    StatusCode::TOO_MANY_REQUESTS,
                );
            }
            Err(error) => {
                tracing::warn!(%error, "console login attempts cannot be counted");
                return refused(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Login attempts cannot be counted right now; retry shortly.",
                );
            }
        }
    }
    let pre = read_cookie(&parts, LOGIN_COOKIE).unwrap_or_default();
    if pre.is_empty() || !same(&console.mac("login", pre), &form.csrf) {
        return refused(
            StatusCode::FORBIDDEN,
            "This login form is stale or was not sent from the console; reload it.",
        );
    }
    if !console.password_matches(&form.password) {
        tracing::warn!(?address, "console login refused");
        return login_form(console, Some("Wrong password."), StatusCode::UNAUTHORIZED);
    }
    tracing::info!(?address, "console login");
    let session = console.new_session(state.clock.now_ms() / 1000);
    let mut response = Redirect::to("/console/keys").into_response();
    let headers = response.headers_mut();
    headers.append(
        header::SET_COOKIE,
        console.cookie(SESSION_COOKIE, &session, SESSION_SECS),
    );
    headers.append(header::SET_COOKIE, console.cookie(LOGIN_COOKIE, "", 0));
    page_headers(response)
}

#[derive(Deserialize)]
pub(crate) struct CsrfOnly {
    #[serde(default)]
    pub csrf: String,
}

async fn logout(
    State(state): State<AppState>,
    operator: Operator,
    Form(form): Form<CsrfOnly>,
) -> Response {
    if !operator.sent(&form.csrf) {
        return forged();
    }
    let Some(console) = state.console.as_deref() else {
        return off();
    };
    let mut response = Redirect::to("/console/login").into_response();
    response
        .headers_mut()
        .append(header::SET_COOKIE, console.cookie(SESSION_COOKIE, "", 0));
    page_headers(response)
}

/// A console page: its navigation (with the logout form) when `operator` is logged in.
pub(crate) fn layout(title: &str, operator: Option<&Operator>, main: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · swapd console" }
                style { (PreEscaped(STYLE)) }
            }
            body {
                @if let Some(operator) = operator {
                    nav {
                        strong { "swapd console" }
                        a href="/console/keys" { "API keys" }
                        a href="/console/orders" { "Orders" }
                        a href="/console/webhooks" { "Webhooks" }
                        a href="/console/providers" { "Providers" }
                        a href="/console/payments" { "x402 payments" }
                        form.inline method="post" action="/console/logout" {
                            input type="hidden" name="csrf" value=(operator.csrf);
                            button type="submit" { "Log out" }
                        }
                    }
                }
                main { (main) }
            }
        }
    }
}

/// Console answers are never cached, framed or referred, and run no script.
pub(crate) fn page_headers(response: Response) -> Response {
    crate::html::secured(
        response,
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; \
         base-uri 'none'; frame-ancestors 'none'",
    )
}

const STYLE: &str = "
body{font-family:system-ui,sans-serif;margin:0;color:#1c2330;background:#f6f7f9}
nav{display:flex;gap:1rem;align-items:center;flex-wrap:wrap;padding:.6rem 1rem;background:#1c2330;color:#fff}
nav a{color:#cfe0ff}form.inline{display:inline;margin-left:auto}
main{max-width:72rem;margin:0 auto;padding:1rem}
table{border-collapse:collapse;width:100%;background:#fff;margin:.6rem 0}
th,td{text-align:left;padding:.35rem .5rem;border-bottom:1px solid #e3e6ea;vertical-align:top;overflow-wrap:anywhere}
code{background:#eef1f5;padding:.05rem .3rem;border-radius:.3rem}
section{background:#fff;border-radius:.5rem;padding:.6rem 1rem;margin:.8rem 0;box-shadow:0 1px 2px #0001}
label{display:block;margin:.4rem 0}input,select{font:inherit;padding:.3rem}
fieldset{border:1px solid #d5d9de;border-radius:.4rem}fieldset label{display:inline-block;margin-right:1rem}
button{font:inherit;padding:.35rem .8rem;border-radius:.35rem;border:1px solid #1f5eff;background:#1f5eff;color:#fff;cursor:pointer}
.problem{background:#fde8e8;padding:.6rem;border-radius:.4rem}.secret{background:#fff6d6;padding:.6rem;border-radius:.4rem}
.muted{color:#667}
";
