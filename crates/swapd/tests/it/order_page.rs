//! The hosted order page over HTTP (the browser test in `crates/swapd/tests/it/browser.rs`
//! drives it in Chromium): its link, what it shows and to whom, the sandbox deposit and the
//! emergency choice through the API's own use cases.

use serde_json::{Value, json};
use swapd_types::Permission::{OrdersCreate, OrdersRead, OrdersUpdate, PricesRead};

use crate::lifecycle::{BTC_ADDRESS, TRON_ADDRESS, create, held, order, step};
use crate::support::TestServer;

/// A client that shows redirects instead of following them.
fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

async fn get(url: &str) -> (u16, reqwest::header::HeaderMap, String) {
    let response = browser().get(url).send().await.unwrap();
    let (status, headers) = (response.status().as_u16(), response.headers().clone());
    (status, headers, response.text().await.unwrap())
}

async fn post_form(url: &str, form: &str) -> (u16, Option<String>, String) {
    let response = browser()
        .post(url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form.to_owned())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let location = response
        .headers()
        .get("location")
        .map(|v| v.to_str().unwrap().to_owned());
    (status, location, response.text().await.unwrap())
}

fn page_url(order: &Value) -> String {
    order["orderPageUrl"]
        .as_str()
        .expect("every order has its page")
        .to_owned()
}

#[tokio::test]
async fn the_order_page_shows_the_order_to_whoever_has_its_link_and_nobody_else() {
    let server = TestServer::start().await;
    let key = server
        .key(&[PricesRead, OrdersCreate, OrdersRead, OrdersUpdate])
        .await;
    let created = create(
        &server,
        &key,
        json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05", "toAddress": TRON_ADDRESS}),
    )
    .await;
    let id = created["orderId"].as_str().unwrap();
    let link = page_url(&created);
    let token = link.rsplit('/').next().unwrap();
    assert_eq!(link, format!("{}/o/{id}/{token}", server.base));
    assert_eq!(token.len(), 32, "128 random bits");
    assert!(!link.contains(&key.id), "the link carries no API key");

    let (status, headers, html) = get(&link).await;
    assert_eq!(status, 200, "{html}");
    assert!(
        headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    assert_eq!(headers["cache-control"], "no-store");
    assert_eq!(headers["referrer-policy"], "no-referrer");
    assert!(headers.contains_key("content-security-policy"));
    let deposit_address = created["from"]["depositAddress"].as_str().unwrap();
    assert!(html.contains(deposit_address));
    assert!(html.contains(r#"<span id="amount">0.05</span>"#), "{html}");
    assert!(html.contains("fixed: locked"), "the rate type is shown");
    // The QR code carries the same payload as the API's "with amount" QR.
    let qr = server
        .call(&key, "GET", &format!("/api/v3/orders/{id}/qr"), "", b"")
        .await;
    let with_amount = qr.body["data"]["qr"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["kind"] == "amount")
        .unwrap()["payload"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        html.contains(&format!(
            r#"data-payload="{}""#,
            with_amount.replace('&', "&amp;")
        )),
        "{html}"
    );
    assert!(!html.contains(&key.id), "nothing of the partner's key");
    assert!(
        html.contains("Simulate a deposit"),
        "sandbox mode offers it"
    );

    // A wrong token, another order's token, an unknown order: the same 404.
    let other = create(
        &server,
        &key,
        json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.06", "toAddress": TRON_ADDRESS}),
    )
    .await;
    let other_token = page_url(&other).rsplit('/').next().unwrap().to_owned();
    for url in [
        format!("{}/o/{id}/{}", server.base, "0".repeat(32)),
        format!("{}/o/{id}/{other_token}", server.base),
        format!("{}/o/ord_missing/{token}", server.base),
        format!("{}/o/{id}/{token}x", server.base),
    ] {
        let (status, _, html) = get(&url).await;
        assert_eq!(status, 404, "{url}");
        assert!(html.contains("Order not found"), "{html}");
        assert!(!html.contains(deposit_address));
    }

    // The link rides along in the webhook payloads (the events' order) and the API's reads.
    let events = server
        .state
        .store
        .order_events(&crate::support::parsed(id))
        .await
        .unwrap();
    assert!(
        events
            .iter()
            .all(|e| e.data["orderPageUrl"] == link.as_str())
    );
    assert_eq!(
        order(&server, &key, id).await["orderPageUrl"],
        link.as_str()
    );

    // "Simulate a deposit": the sandbox deposit's use case, then back to the page.
    let (status, location, _) = post_form(&format!("{link}/deposit"), "").await;
    assert_eq!(status, 303);
    assert_eq!(location.unwrap(), format!("/o/{id}/{token}"));
    let deposits = server
        .state
        .store
        .sandbox_deposits(deposit_address, None)
        .await
        .unwrap();
    assert_eq!(deposits.len(), 1);
    assert_eq!(deposits[0].amount, "0.05");
    step(&server, 0).await;
    step(&server, 2).await;
    let (_, _, html) = get(&link).await;
    assert!(html.contains(r#"data-status="completed""#), "{html}");
    let done = order(&server, &key, id).await;
    assert!(
        html.contains(done["to"]["txId"].as_str().unwrap()),
        "the payout id is shown"
    );
    assert!(
        !html.contains("Simulate a deposit"),
        "only while a deposit is awaited"
    );
    let (status, _, _) = post_form(&format!("{}/o/{id}/wrong/deposit", server.base), "").await;
    assert_eq!(status, 404);
    // A deposit posted to the page after the order completed is refused, nothing recorded.
    let (status, _, html) = post_form(&format!("{link}/deposit"), "").await;
    assert_eq!(status, 409, "{html}");
    assert!(html.contains("not awaiting a deposit"), "{html}");
    assert_eq!(
        server
            .state
            .store
            .sandbox_deposits(deposit_address, None)
            .await
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn the_pages_run_only_their_own_script_and_every_answer_carries_their_headers() {
    let server = TestServer::start().await;
    let key = server.key(&[PricesRead, OrdersCreate, OrdersRead]).await;
    let created = create(
        &server,
        &key,
        json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05", "toAddress": TRON_ADDRESS}),
    )
    .await;
    let link = page_url(&created);
    let (status, headers, html) = get(&link).await;
    assert_eq!(status, 200);
    let csp = headers["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(!csp.contains("'unsafe-inline'; connect"), "{csp}");
    let script_src = csp
        .split(';')
        .map(str::trim)
        .find(|d| d.starts_with("script-src"))
        .unwrap();
    assert!(!script_src.contains("unsafe-inline"), "{csp}");
    // The one script of the page is the one its hash allows.
    let script = html
        .split("<script>")
        .nth(1)
        .and_then(|rest| rest.split("</script>").next())
        .unwrap();
    use base64::Engine;
    use sha2::Digest;
    let hash = base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(script));
    assert_eq!(script_src, format!("script-src 'sha256-{hash}'"));

    // A refusal by the framework (a form that is not one) is JSON, with the pages' headers.
    let response = browser()
        .post(format!("{link}/emergency"))
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert!(response.status().is_client_error());
    for header in [
        "content-security-policy",
        "cache-control",
        "referrer-policy",
        "x-frame-options",
    ] {
        assert!(
            response.headers().contains_key(header),
            "{header}: {:?}",
            response.headers()
        );
    }
}

#[tokio::test]
async fn an_emergency_is_answered_from_the_page_once_through_the_api_use_case() {
    let server = TestServer::start().await;
    let key = server
        .key(&[PricesRead, OrdersCreate, OrdersRead, OrdersUpdate])
        .await;
    let id = held(&server, &key, "0.04", None).await;
    let link = page_url(&order(&server, &key, &id).await);
    let (_, _, html) = get(&link).await;
    assert!(
        html.contains("Less than the agreed amount arrived."),
        "{html}"
    );
    assert!(html.contains(r#"value="EXCHANGE""#) && html.contains(r#"value="REFUND""#));

    // A choice that is not one: 400, as the API answers it, nothing changes.
    let (status, _, html) = post_form(&format!("{link}/emergency"), "choice=MAYBE").await;
    assert_eq!(status, 400, "{html}");
    assert_eq!(order(&server, &key, &id).await["status"], "emergency");

    // A refund address of the wrong network: refused as the API refuses it, nothing changes.
    let (status, _, html) = post_form(
        &format!("{link}/emergency"),
        &format!("choice=REFUND&refundAddress={TRON_ADDRESS}"),
    )
    .await;
    assert_eq!(status, 400);
    assert!(html.contains("refundAddress"), "{html}");
    assert_eq!(order(&server, &key, &id).await["status"], "emergency");
    // Without its token nothing is taken.
    let (status, _, _) = post_form(
        &format!("{}/o/{id}/{}/emergency", server.base, "0".repeat(32)),
        &format!("choice=REFUND&refundAddress={BTC_ADDRESS}"),
    )
    .await;
    assert_eq!(status, 404);
    assert_eq!(order(&server, &key, &id).await["status"], "emergency");

    let (status, location, _) = post_form(
        &format!("{link}/emergency"),
        &format!("choice=REFUND&refundAddress={BTC_ADDRESS}"),
    )
    .await;
    assert_eq!(status, 303);
    assert_eq!(location.unwrap(), &link[server.base.len()..]);
    let chosen = order(&server, &key, &id).await;
    assert_eq!(chosen["status"], "refunding");
    assert_eq!(chosen["emergency"]["choice"], "REFUND");
    assert_eq!(chosen["refund"]["address"], BTC_ADDRESS);
    let events = server
        .state
        .store
        .order_events(&crate::support::parsed(&id))
        .await
        .unwrap()
        .len();
    // The same choice again: nothing changes, no second event.
    let (status, _, _) = post_form(
        &format!("{link}/emergency"),
        &format!("choice=REFUND&refundAddress={BTC_ADDRESS}"),
    )
    .await;
    assert_eq!(status, 303);
    assert_eq!(
        server
            .state
            .store
            .order_events(&crate::support::parsed(&id))
            .await
            .unwrap()
            .len(),
        events
    );
    server.engine.run_due().await;
    let (_, _, html) = get(&link).await;
    assert!(
        html.contains("refund-tx"),
        "the refund transaction is shown: {html}"
    );
}
