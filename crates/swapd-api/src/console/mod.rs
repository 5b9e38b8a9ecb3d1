//! The operator console at `/console` (docs/operations.md, "The console"): API keys, orders,
//! webhook subscriptions and their deliveries, provider health and the x402 payments received,
//! server-rendered. It has its own login: the operator password, checked against its argon2
//! hash from the configuration; a session is a signed, HttpOnly, SameSite=Strict cookie
//! (`axum-extra`'s signed jar) whose key derives from the password hash (a new password ends
//! every session), and whose
//! logout is recorded in the store, so it holds on every node. Every form carries a CSRF token
//! bound to the session and must come from the console's own origin; failed logins are limited
//! per address and across all addresses.
//! Every action is one of the API's or the CLI's use cases (`crate::keys`, the webhook replay):
//! the console adds no rule of its own.

mod pages;
mod revenue;

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use axum::extract::{Form, FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum_extra::extract::cookie::{Cookie, Key, PrivateCookieJar, SameSite, SignedCookieJar};
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
/// Failed logins per address and minute.
const FAILED_LOGINS_PER_MINUTE: u32 = 5;
/// Failed logins per minute from all addresses together (a guesser with many addresses).
const FAILED_LOGINS_PER_MINUTE_IN_ALL: u32 = 30;
/// The cookie that carries a created key's secret to the page after the redirect, once.
const CREATED_COOKIE: &str = "swapd_console_created";

/// The console's settings and state; `None` in [`crate::AppParts::console`] when it is off.
pub struct Console {
    password_hash: String,
    /// Signs the session and login cookies and encrypts what a redirect carries to the next
    /// page (a created key's secret).
    cookie_key: Key,
    /// Derives the CSRF tokens bound to a session or a login form.
    csrf_key: [u8; 32],
    /// `Secure` on cookies when the public URL is https.
    secure: bool,
}

/// A session, as its signed cookie carries it: `{expires}.{id}`.
struct Session {
    expires: i64,
    id: String,
    /// The cookie's value, which the session's CSRF token is bound to.
    value: String,
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
        // Keyed by the password hash too: a session signed under another password is not one.
        let derive = |purpose: &str| -> [u8; 32] {
            let mut key = Hmac::<Sha256>::new_from_slice(&master.derive("console sessions"))
                .expect("any key length");
            key.update(password_hash.as_bytes());
            key.update(b"|");
            key.update(purpose.as_bytes());
            key.finalize().into_bytes().into()
        };
        let cookie_key = [derive("cookie signing"), derive("cookie encryption")].concat();
        Self {
            password_hash: password_hash.to_owned(),
            cookie_key: Key::from(&cookie_key),
            csrf_key: derive("csrf"),
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
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.csrf_key).expect("any key length");
        mac.update(purpose.as_bytes());
        mac.update(b"|");
        mac.update(value.as_bytes());
        hex::encode(mac.finalize().into_bytes())
    }

    /// A new session until `now + SESSION_SECS`: `{expires}.{random id}`, sent signed.
    fn new_session(&self, now_secs: i64) -> String {
        format!(
            "{}.{}",
            now_secs + SESSION_SECS,
            hex::encode(rand::random::<[u8; 16]>())
        )
    }

    /// The session the request's cookie carries, when this console signed it and it has not
    /// expired (whether it was logged out is the store's to say).
    fn session(&self, headers: &axum::http::HeaderMap, now_secs: i64) -> Option<Session> {
        let value = self.signed(headers, SESSION_COOKIE)?;
        let (expires, id) = value.split_once('.')?;
        let expires = expires.parse::<i64>().ok()?;
        (expires > now_secs).then(|| Session {
            expires,
            id: id.to_owned(),
            value: value.clone(),
        })
    }

    /// The value of the cookie `name` when this console signed it.
    fn signed(&self, headers: &axum::http::HeaderMap, name: &str) -> Option<String> {
        let jar = SignedCookieJar::from_headers(headers, self.cookie_key.clone());
        jar.get(name).map(|cookie| cookie.value().to_owned())
    }

    /// Appends to `response` the cookie `name` (scoped to the console, HttpOnly, SameSite=Strict)
    /// holding `value` for `max_age` seconds (0 clears it): signed, or encrypted when
    /// `private`.
    fn set_cookie(
        &self,
        response: &mut Response,
        (name, value): (&'static str, String),
        max_age: i64,
        private: bool,
    ) {
        let cookie = Cookie::build((name, value))
            .path("/console")
            .http_only(true)
            .same_site(SameSite::Strict)
            .secure(self.secure)
            .max_age(time::Duration::seconds(max_age))
            .build();
        let key = self.cookie_key.clone();
        let set = if private {
            PrivateCookieJar::new(key).add(cookie).into_response()
        } else {
            SignedCookieJar::new(key).add(cookie).into_response()
        };
        for value in set.headers().get_all(header::SET_COOKIE) {
            response
                .headers_mut()
                .append(header::SET_COOKIE, value.clone());
        }
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
        .route("/console/logout-everywhere", post(logout_everywhere))
        .merge(pages::router())
        .merge(revenue::router())
}

/// What `/console` answers when the console is off.
fn off() -> Response {
    page_headers((StatusCode::NOT_FOUND, Html("Not found")).into_response())
}

/// A logged-in operator: the session cookie checked (signed, not expired, not logged out).
/// Without one, the login page. A form post must also come from the console's own origin.
pub(crate) struct Operator {
    /// The CSRF token every form of this session carries.
    pub csrf: String,
    /// The session's random id and expiry (Unix seconds), for its logout.
    session: String,
    expires: i64,
}

impl FromRequestParts<AppState> for Operator {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let console = state.console.as_deref().ok_or_else(off)?;
        if parts.method == axum::http::Method::POST && !same_origin(parts) {
            return Err(cross_origin());
        }
        let now = state.clock.now_ms() / 1000;
        let login = || page_headers(Redirect::to("/console/login").into_response());
        let Some(session) = console.session(&parts.headers, now) else {
            return Err(login());
        };
        let issued_ms = (session.expires - SESSION_SECS) * 1000;
        match state
            .store
            .console_session_ended(&session.id, issued_ms)
            .await
        {
            Ok(false) => Ok(Operator {
                csrf: console.mac("csrf", &session.value),
                session: session.id,
                expires: session.expires,
            }),
            Ok(true) => Err(login()),
            Err(error) => {
                tracing::warn!(%error, "console sessions cannot be checked");
                Err(refused(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "The session cannot be checked right now; retry shortly.",
                ))
            }
        }
    }
}

impl Operator {
    /// Whether a form's CSRF token is this session's; [`forged`] answers one that is not.
    pub fn sent(&self, token: &str) -> bool {
        same(&self.csrf, token)
    }
}

/// Whether a form post comes from the console's own pages: the browser's `Sec-Fetch-Site`
/// says `same-origin` (or `none`: typed by the user), and `Origin`, when sent and not `null`,
/// names the host the request is for. Clients that send neither are left to the CSRF token.
fn same_origin(parts: &Parts) -> bool {
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|value| value.to_str().ok())
    };
    if header("sec-fetch-site").is_some_and(|site| !matches!(site, "same-origin" | "none")) {
        return false;
    }
    match (header("origin"), header("host")) {
        // `null`: the console's pages send no referrer, so browsers hide their origin (the
        // `Sec-Fetch-Site` above spoke for them).
        (None | Some("null"), _) => true,
        (Some(origin), Some(host)) => origin
            .split_once("://")
            .is_some_and(|(_, authority)| authority.eq_ignore_ascii_case(host)),
        (Some(_), None) => false,
    }
}

/// The answer to a form posted from another site (403).
fn cross_origin() -> Response {
    refused(
        StatusCode::FORBIDDEN,
        "This form was posted from another site; the console takes forms from its own pages only.",
    )
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
    console.set_cookie(&mut response, (LOGIN_COOKIE, pre), 600, false);
    page_headers(response)
}

/// The windows failed logins count in, with their limits: only failures count, in the node's
/// shared windows (Redis or the shared database when there are several nodes), per address
/// (when known) and for all addresses together.
fn failed_login_windows(address: Option<std::net::IpAddr>) -> Vec<(String, u32)> {
    let mut windows = vec![(
        "console-login-failed".to_owned(),
        FAILED_LOGINS_PER_MINUTE_IN_ALL,
    )];
    if let Some(address) = address {
        windows.push((
            format!("console-login-failed|{address}"),
            FAILED_LOGINS_PER_MINUTE,
        ));
    }
    windows
}

/// The answer to a login while any of `windows` is full (429 with `Retry-After`), or while
/// they cannot be read (503); `None` when the login may be tried.
async fn too_many_failures(
    state: &AppState,
    console: &Console,
    windows: &[(String, u32)],
) -> Option<Response> {
    for (window, limit) in windows {
        match state.limits.peek_window(window, 60_000).await {
            Ok(counted) if counted.used < *limit => {}
            Ok(counted) => {
                let wait_secs = (counted.resets_at_ms - state.clock.now_ms()).max(0) / 1000 + 1;
                let mut response = login_form(
                    console,
                    Some("Too many failed logins; wait a minute."),
                    StatusCode::TOO_MANY_REQUESTS,
                );
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(wait_secs));
                return Some(response);
            }
            Err(error) => {
                tracing::warn!(%error, "console login attempts cannot be counted");
                return Some(refused(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Login attempts cannot be counted right now; retry shortly.",
                ));
            }
        }
    }
    None
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
    if !same_origin(&parts) {
        return cross_origin();
    }
    let address = crate::client_address::client_ip(&parts, &state.trusted_proxies);
    let windows = failed_login_windows(address);
    if let Some(refusal) = too_many_failures(&state, console, &windows).await {
        return refusal;
    }
    let pre = console
        .signed(&parts.headers, LOGIN_COOKIE)
        .unwrap_or_default();
    if pre.is_empty() || !same(&console.mac("login", &pre), &form.csrf) {
        return refused(
            StatusCode::FORBIDDEN,
            "This login form is stale or was not sent from the console; reload it.",
        );
    }
    if !console.password_matches(&form.password) {
        tracing::warn!(?address, "console login refused");
        for (window, limit) in &windows {
            if let Err(error) = state
                .limits
                .windows
                .consume_window(window, 60_000, *limit)
                .await
            {
                tracing::warn!(%error, "a failed console login cannot be counted");
            }
        }
        return login_form(console, Some("Wrong password."), StatusCode::UNAUTHORIZED);
    }
    tracing::info!(?address, "console login");
    let session = console.new_session(state.clock.now_ms() / 1000);
    let mut response = Redirect::to("/console/keys").into_response();
    console.set_cookie(
        &mut response,
        (SESSION_COOKIE, session),
        SESSION_SECS,
        false,
    );
    console.set_cookie(&mut response, (LOGIN_COOKIE, String::new()), 0, false);
    page_headers(response)
}

#[derive(Deserialize)]
pub(crate) struct CsrfOnly {
    #[serde(default)]
    pub csrf: String,
}

/// Logs this session out on every node (`everywhere`: every session, on every node).
async fn end_sessions(state: &AppState, operator: &Operator, everywhere: bool) -> Response {
    let Some(console) = state.console.as_deref() else {
        return off();
    };
    let now_ms = state.clock.now_ms();
    let (session, until_ms) = if everywhere {
        (
            swapd_core::store::EVERY_CONSOLE_SESSION,
            now_ms + SESSION_SECS * 1000,
        )
    } else {
        (operator.session.as_str(), operator.expires * 1000)
    };
    if let Err(error) = state
        .store
        .end_console_session(session, now_ms, until_ms)
        .await
    {
        tracing::warn!(%error, "a console logout cannot be recorded");
        return refused(
            StatusCode::SERVICE_UNAVAILABLE,
            "The logout cannot be recorded right now; retry shortly.",
        );
    }
    tracing::info!(everywhere, "console logout");
    let mut response = Redirect::to("/console/login").into_response();
    console.set_cookie(&mut response, (SESSION_COOKIE, String::new()), 0, false);
    page_headers(response)
}

async fn logout(
    State(state): State<AppState>,
    operator: Operator,
    Form(form): Form<CsrfOnly>,
) -> Response {
    if !operator.sent(&form.csrf) {
        return forged();
    }
    end_sessions(&state, &operator, false).await
}

async fn logout_everywhere(
    State(state): State<AppState>,
    operator: Operator,
    Form(form): Form<CsrfOnly>,
) -> Response {
    if !operator.sent(&form.csrf) {
        return forged();
    }
    end_sessions(&state, &operator, true).await
}

/// A redirect to `to` that carries `value` to the next page in a short-lived encrypted cookie
/// bound to this session (a created key's secret, shown once: a reload of that page shows
/// nothing).
pub(crate) fn redirect_with_flash(
    state: &AppState,
    operator: &Operator,
    to: &str,
    value: &str,
) -> Response {
    let Some(console) = state.console.as_deref() else {
        return off();
    };
    let mut response = Redirect::to(to).into_response();
    let carried = format!("{}|{value}", operator.session);
    console.set_cookie(&mut response, (CREATED_COOKIE, carried), 60, true);
    page_headers(response)
}

/// The value [`redirect_with_flash`] carried to this page of the same session.
pub(crate) fn take_flash(state: &AppState, operator: &Operator, parts: &Parts) -> Option<String> {
    let console = state.console.as_deref()?;
    let jar = PrivateCookieJar::from_headers(&parts.headers, console.cookie_key.clone());
    let carried = jar.get(CREATED_COOKIE)?;
    let (session, value) = carried.value().split_once('|')?;
    (session == operator.session).then(|| value.to_owned())
}

/// Clears the cookie a flash came in, so that a reload shows nothing.
pub(crate) fn clear_flash(state: &AppState, response: &mut Response) {
    if let Some(console) = state.console.as_deref() {
        console.set_cookie(response, (CREATED_COOKIE, String::new()), 0, true);
    }
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
                        a href="/console/revenue" { "Revenue" }
                        a href="/console/affiliates" { "Affiliates" }
                        form.inline method="post" action="/console/logout" {
                            input type="hidden" name="csrf" value=(operator.csrf);
                            button type="submit" { "Log out" }
                        }
                        form.inline method="post" action="/console/logout-everywhere" {
                            input type="hidden" name="csrf" value=(operator.csrf);
                            button type="submit" { "Log out everywhere" }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The request headers of a browser holding the cookies `response` sets.
    fn sent_back(response: &Response) -> axum::http::HeaderMap {
        let cookies: Vec<&str> = response
            .headers()
            .get_all(header::SET_COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok()?.split(';').next())
            .collect();
        let mut headers = axum::http::HeaderMap::new();
        headers.insert(header::COOKIE, cookies.join("; ").parse().unwrap());
        headers
    }

    #[test]
    fn a_session_is_valid_under_the_password_it_was_issued_for_only() {
        let master = MasterKey::generate();
        let first = Console::new(
            &Console::hash_password("first password!").unwrap(),
            &master,
            "",
        );
        let mut response = Response::default();
        let issued = first.new_session(1_000);
        first.set_cookie(
            &mut response,
            (SESSION_COOKIE, issued.clone()),
            SESSION_SECS,
            false,
        );
        let cookie = response.headers()[header::SET_COOKIE].to_str().unwrap();
        for attribute in [
            "Path=/console",
            "HttpOnly",
            "SameSite=Strict",
            "Max-Age=28800",
        ] {
            assert!(cookie.contains(attribute), "{cookie}");
        }
        let headers = sent_back(&response);
        let session = first.session(&headers, 1_001).unwrap();
        assert_eq!(session.expires, 1_000 + SESSION_SECS);
        assert_eq!(session.id.len(), 32);
        assert_eq!(session.value, issued);
        assert!(
            first.session(&headers, session.expires).is_none(),
            "expired"
        );
        // The operator changed the password and restarted: every session is over.
        let changed = Console::new(
            &Console::hash_password("second password").unwrap(),
            &master,
            "",
        );
        assert!(changed.session(&headers, 1_001).is_none());
        // A forged expiry breaks the signature.
        let expires = session.expires.to_string();
        let later = (session.expires + 3_600).to_string();
        let mut forged = axum::http::HeaderMap::new();
        let text = headers[header::COOKIE]
            .to_str()
            .unwrap()
            .replacen(&expires, &later, 1);
        forged.insert(header::COOKIE, text.parse().unwrap());
        assert!(first.session(&forged, 1_001).is_none());
        // An unsigned cookie is no session.
        let mut unsigned = axum::http::HeaderMap::new();
        let text = format!("{SESSION_COOKIE}={issued}");
        unsigned.insert(header::COOKIE, text.parse().unwrap());
        assert!(first.session(&unsigned, 1_001).is_none());
    }

    #[test]
    fn a_flash_is_encrypted_and_opens_for_the_session_that_sent_it_only() {
        let console = Console::new(
            &Console::hash_password("a password!").unwrap(),
            &MasterKey::generate(),
            "https://ops.example",
        );
        let mut response = Response::default();
        let carried = "s1|the secret".to_owned();
        console.set_cookie(&mut response, (CREATED_COOKIE, carried), 60, true);
        let cookie = response.headers()[header::SET_COOKIE].to_str().unwrap();
        assert!(
            !cookie.contains("secret") && cookie.contains("Secure"),
            "{cookie}"
        );
        let headers = sent_back(&response);
        let jar = PrivateCookieJar::from_headers(&headers, console.cookie_key.clone());
        assert_eq!(jar.get(CREATED_COOKIE).unwrap().value(), "s1|the secret");
    }

    fn parts(headers: &[(&str, &str)]) -> Parts {
        let mut request = axum::http::Request::post("/console/keys");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.body(()).unwrap().into_parts().0
    }

    #[test]
    fn forms_are_taken_from_the_consoles_own_origin_only() {
        assert!(same_origin(&parts(&[("host", "ops.example:8080")])));
        assert!(same_origin(&parts(&[
            ("host", "ops.example:8080"),
            ("origin", "https://ops.example:8080"),
            ("sec-fetch-site", "same-origin"),
        ])));
        // What Chromium sends from a page with `Referrer-Policy: no-referrer`.
        assert!(same_origin(&parts(&[
            ("host", "ops.example:8080"),
            ("origin", "null"),
            ("sec-fetch-site", "same-origin"),
        ])));
        for headers in [
            &[
                ("host", "ops.example:8080"),
                ("origin", "https://evil.example"),
            ][..],
            &[
                ("host", "ops.example:8080"),
                ("sec-fetch-site", "cross-site"),
            ],
            &[
                ("host", "ops.example:8080"),
                ("sec-fetch-site", "same-site"),
            ],
            &[("origin", "https://ops.example:8080")],
        ] {
            assert!(!same_origin(&parts(headers)), "{headers:?}");
        }
    }
}
