"""The operator console in a real headless Chromium (Playwright for Python, Debian's chromium).

Run by crates/swapd/tests/it/browser.rs against a `swapd serve` with a console password, one
webhook subscription with deliveries, and an order:

  console.py --base URL --password PASSWORD --artifacts DIR

Logs in (after a wrong password), creates an API key (its secret shown once, and a reload of
that page creates no second key), revokes it, creates a key with a partner markup (one above
the cap refused), registers and disables an affiliate, reads the revenue page (the order's
expected service fee, reconciled) and downloads its CSV, replays a webhook delivery, reads an
order, the providers and the payments, shows that a form posted without its CSRF token or from another
site is refused, that a logged-out session's cookie no longer works, and that failed logins
are limited (429 with Retry-After). Prints the created
key as JSON on its last line (`{apiKey, apiSecret}`, as `swapd keys create --json`), for the test to check against the API. Exits non-zero on the first
failure.
"""

import argparse
import json
import os
import sys

from playwright.sync_api import expect, sync_playwright

CHROMIUM = os.environ.get("SWAPD_TEST_CHROMIUM", "/usr/bin/chromium")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True)
    parser.add_argument("--password", required=True)
    parser.add_argument("--artifacts", required=True)
    args = parser.parse_args()
    os.makedirs(args.artifacts, exist_ok=True)
    base = args.base.rstrip("/")

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()

        # Not logged in: the login page. A wrong password is refused.
        page.goto(base + "/console")
        expect(page).to_have_url(base + "/console/login")
        page.fill("input[name=password]", "not the password")
        page.click("form#login button[type=submit]")
        expect(page.locator(".problem")).to_have_text("Wrong password.")
        page.fill("input[name=password]", args.password)
        page.click("form#login button[type=submit]")
        expect(page).to_have_url(base + "/console/keys")

        # A key: created, its secret shown once, then revoked.
        page.fill("form#create-key input[name=name]", "browser key")
        page.check("form#create-key input[name=permission][value='prices:read']")
        page.click("form#create-key button[type=submit]")
        expect(page.locator("#new-secret")).to_be_visible()
        expect(page).to_have_url(base + "/console/keys")
        key = page.locator("#new-key").inner_text()
        secret = page.locator("#new-secret").inner_text()
        assert secret.startswith("sec_"), secret
        page.screenshot(path=os.path.join(args.artifacts, "console-keys.png"), full_page=True)
        # The form answered with a redirect: a reload shows the list, creates nothing.
        page.reload()
        assert secret not in page.content(), "the secret is shown only once"
        assert page.locator("#keys tr", has_text="browser key").count() == 1
        page.goto(base + "/console/keys")
        assert secret not in page.content(), "the secret is shown only once"
        row = page.locator(f"tr[data-key='{key}']")
        expect(row.locator("td.status")).to_have_text("active")
        row.locator("button", has_text="Revoke").click()
        expect(page.locator(f"tr[data-key='{key}'] td.status")).to_have_text("revoked")

        # A form posted without its CSRF token (the session cookie alone) is refused.
        refused = context.request.post(
            base + "/console/keys",
            form={"name": "forged", "permission": "prices:read"},
            max_redirects=0,
        )
        assert refused.status == 403, refused.status
        forged_revoke = context.request.post(
            base + f"/console/keys/{key}/revoke", form={"csrf": "0" * 64}, max_redirects=0
        )
        assert forged_revoke.status == 403, forged_revoke.status
        # A form with its CSRF token but posted from another site is refused too.
        csrf = page.locator("form#create-key input[name=csrf]").get_attribute("value")
        cross_site = context.request.post(
            base + "/console/keys",
            form={"csrf": csrf, "name": "cross-site", "permission": "prices:read"},
            headers={"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"},
            max_redirects=0,
        )
        assert cross_site.status == 403, cross_site.status

        # A partner's markup: shown on its key; above the operator's cap, refused.
        page.fill("form#create-key input[name=name]", "greedy partner")
        page.check("form#create-key input[name=permission][value='prices:read']")
        page.fill("form#create-key input[name=markupBps]", "301")
        page.click("form#create-key button[type=submit]")
        expect(page.locator(".problem")).to_contain_text("fees.max_markup_bps = 300")
        page.fill("form#create-key input[name=name]", "partner with markup")
        page.check("form#create-key input[name=permission][value='prices:read']")
        page.fill("form#create-key input[name=markupBps]", "25")
        page.fill("form#create-key input[name=markupRecipient]", "0x90F79bf6EB2c4f870365E785982E1f101E93b906")
        page.click("form#create-key button[type=submit]")
        marked = page.locator("#new-key").inner_text()
        expect(page.locator(f"tr[data-key='{marked}'] td.markup")).to_have_text(
            "25 to 0x90F79bf6EB2c4f870365E785982E1f101E93b906"
        )

        # Affiliates: registered (a taken code refused), listed, disabled.
        page.goto(base + "/console/affiliates")
        for _ in range(2):
            page.fill("form#create-affiliate input[name=code]", "wallet-app")
            page.fill("form#create-affiliate input[name=name]", "Wallet App")
            page.fill("form#create-affiliate input[name=share]", "25%")
            page.fill("form#create-affiliate input[name=payout]", "0x52908400098527886E0F7030069857D2E4169EE7")
            page.click("form#create-affiliate button[type=submit]")
        expect(page.locator(".problem")).to_contain_text("already has the code `wallet-app`")
        row = page.locator("tr[data-code='wallet-app']")
        expect(row.locator("td.status")).to_have_text("active")
        expect(row).to_contain_text("2500")
        row.locator("button", has_text="Disable").click()
        expect(page.locator("tr[data-code='wallet-app'] td.status")).to_have_text("disabled")
        page.screenshot(path=os.path.join(args.artifacts, "console-affiliates.png"), full_page=True)

        # Revenue: the service fee of the order made before the browser came, expected (it
        # has not completed), reconciled, and the rows as CSV.
        page.goto(base + "/console/revenue")
        service = page.locator("#totals tr[data-party='service']").first
        expect(service).to_be_visible()
        expected = service.locator("td.expected").inner_text()
        assert float(expected) > 0, expected
        expect(service.locator("td.realized")).to_have_text("0")
        expect(page.locator("#reconciled")).to_be_visible()
        page.screenshot(path=os.path.join(args.artifacts, "console-revenue.png"), full_page=True)
        with page.expect_download() as download:
            page.click("a#csv")
        lines = open(download.value.path()).read().splitlines()
        assert lines[0] == "order_id,owner,party,affiliate_code,stage,bps,amount,currency,at", lines
        cells = lines[1].split(",")
        assert cells[2:5] == ["service", "", "expected"] and cells[6] == expected, lines
        bad_window = context.request.get(base + "/console/revenue?since=2026-02-30")
        assert bad_window.status == 400, bad_window.status

        # Webhooks: the subscription's deliveries, one replayed.
        page.goto(base + "/console/webhooks")
        page.locator("#subscriptions a").first.click()
        expect(page.locator("#deliveries tr").nth(1)).to_be_visible()
        page.locator("#deliveries button", has_text="Replay").first.click()
        expect(page.locator("#notice")).to_contain_text("queued")
        page.screenshot(path=os.path.join(args.artifacts, "console-webhooks.png"), full_page=True)

        # Orders: searched, one opened with its events and deliveries.
        page.goto(base + "/console/orders?status=awaiting_deposit")
        page.locator("#orders a").first.click()
        expect(page.locator("#events tr").nth(1)).to_be_visible()
        expect(page.locator("#deliveries tr").nth(1)).to_be_visible()
        page.screenshot(path=os.path.join(args.artifacts, "console-order.png"), full_page=True)

        page.goto(base + "/console/providers")
        expect(page.locator("#providers tr").nth(1)).to_be_visible()
        page.goto(base + "/console/payments")
        expect(page.locator("h1")).to_have_text("x402 payments received")

        # Logged out: the console is closed again, also to a copy of the old cookie.
        page.goto(base + "/console/keys")
        csrf = page.locator("form#create-key input[name=csrf]").get_attribute("value")
        old_cookies = context.cookies()
        page.get_by_role("button", name="Log out", exact=True).click(timeout=5_000)
        page.goto(base + "/console/keys")
        expect(page).to_have_url(base + "/console/login")
        stolen = browser.new_context()
        stolen.add_cookies(old_cookies)
        replayed = stolen.new_page()
        replayed.goto(base + "/console/keys")
        expect(replayed).to_have_url(base + "/console/login")
        after_logout = stolen.request.post(
            base + "/console/keys",
            form={"csrf": csrf, "name": "after logout", "permission": "prices:read"},
            max_redirects=0,
        )
        assert after_logout.status == 303, after_logout.status
        assert after_logout.headers["location"] == "/console/login", after_logout.headers
        stolen.close()

        # Failed logins are limited per address (5 in a minute's window); a successful one
        # counts nothing. Eleven guesses in a row put six in one window, whatever the clock.
        statuses = []
        retry_after = None
        for _ in range(11):
            login = context.new_page()
            login.goto(base + "/console/login")
            login.fill("input[name=password]", "guess")
            with login.expect_response(lambda r: r.url.endswith("/console/login") and r.request.method == "POST") as answer:
                login.click("form#login button[type=submit]")
            statuses.append(answer.value.status)
            retry_after = answer.value.headers.get("retry-after")
            login.close()
            if statuses[-1] == 429:
                break
        assert statuses[-1] == 429 and set(statuses[:-1]) == {401}, statuses
        assert retry_after is not None and 1 <= int(retry_after) <= 61, retry_after
        browser.close()
    print("console: all browser checks passed")
    print(json.dumps({"apiKey": key, "apiSecret": secret}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
