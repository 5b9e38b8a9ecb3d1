"""The operator console in a real headless Chromium (Playwright for Python, Debian's chromium).

Run by crates/swapd/tests/it/browser.rs against a `swapd serve` with a console password, one
webhook subscription with deliveries, and an order:

  console.py --base URL --password PASSWORD --artifacts DIR

Logs in (after a wrong password), creates an API key (its secret shown once), revokes it,
replays a webhook delivery, reads an order, the providers and the payments, shows that a form
posted without its CSRF token is refused and that login attempts are limited. Prints the created
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
        key = page.locator("#new-key").inner_text()
        secret = page.locator("#new-secret").inner_text()
        assert secret.startswith("sec_"), secret
        page.screenshot(path=os.path.join(args.artifacts, "console-keys.png"), full_page=True)
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

        # Logged out: the console is closed again.
        page.click("nav button", timeout=5_000)
        page.goto(base + "/console/keys")
        expect(page).to_have_url(base + "/console/login")

        # Login attempts are limited per address (5 a minute).
        statuses = []
        for _ in range(6):
            login = context.new_page()
            login.goto(base + "/console/login")
            login.fill("input[name=password]", "guess")
            with login.expect_response(lambda r: r.url.endswith("/console/login") and r.request.method == "POST") as answer:
                login.click("form#login button[type=submit]")
            statuses.append(answer.value.status)
            login.close()
        assert statuses[-1] == 429, statuses
        browser.close()
    print("console: all browser checks passed")
    print(json.dumps({"apiKey": key, "apiSecret": secret}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
