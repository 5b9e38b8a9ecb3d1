"""The hosted order page in a real headless Chromium (Playwright for Python, Debian's chromium).

Run by crates/swapd/tests/it/browser.rs against a sandbox swapd it started, with two orders it
created through the API:

  order_page.py --completed URL --emergency URL --refund-address ADDR --artifacts DIR

- `--completed`: an order awaiting its deposit. The page is read without JavaScript, then, with
  it, the deposit is simulated from the page and the live timeline is followed to `completed`
  with the payout transaction shown.
- `--emergency`: an order whose deposit was short. REFUND is chosen on the page with a refund
  address, and the page follows it to the refund.
- A wrong token answers the 404 page.
Screenshots (desktop and phone width) go to DIR. Exits non-zero on the first failure.
"""

import argparse
import os
import sys

from playwright.sync_api import expect, sync_playwright

CHROMIUM = os.environ.get("SWAPD_TEST_CHROMIUM", "/usr/bin/chromium")
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--completed", required=True)
    parser.add_argument("--emergency", required=True)
    parser.add_argument("--refund-address", required=True)
    parser.add_argument("--artifacts", required=True)
    args = parser.parse_args()
    os.makedirs(args.artifacts, exist_ok=True)
    shot = lambda page, name: page.screenshot(
        path=os.path.join(args.artifacts, name), full_page=True
    )

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])

        # Without JavaScript the order still reads: status, address, amount.
        static = browser.new_context(java_script_enabled=False, viewport=DESKTOP)
        page = static.new_page()
        page.goto(args.completed)
        expect(page.locator("#status")).to_have_attribute("data-status", "awaiting_deposit")
        expect(page.locator("#deposit-address")).not_to_be_empty()
        expect(page.locator("#amount")).not_to_be_empty()
        static.close()

        # Phone width: everything fits, nothing scrolls sideways.
        phone = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
        page = phone.new_page()
        page.goto(args.completed)
        expect(page.locator("#qr")).to_be_visible()
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"], f"the page is {width}px wide on a {PHONE['width']}px phone"
        shot(page, "order-page-phone.png")
        phone.close()

        # Desktop: simulate the deposit, follow the live timeline to the payout.
        desktop = browser.new_context(viewport=DESKTOP)
        page = desktop.new_page()
        page.goto(args.completed)
        expect(page.locator("#countdown")).to_contain_text("left")
        shot(page, "order-page-desktop.png")
        page.click("#simulate-deposit")
        expect(page.locator("#status")).to_have_attribute("data-status", "completed", timeout=60_000)
        expect(page.locator("#payout-tx")).not_to_be_empty()
        statuses = page.locator("#timeline li").evaluate_all("items => items.map(i => i.dataset.status)")
        assert statuses[:2] == ["new", "awaiting_deposit"], statuses
        assert statuses[-1] == "completed" and "confirming" in statuses, statuses
        shot(page, "order-page-completed.png")

        # The emergency: REFUND to an address of the deposit's network.
        page.goto(args.emergency)
        expect(page.locator("form#emergency")).to_be_visible()
        page.check("input[name=choice][value=REFUND]")
        page.fill("input[name=refundAddress]", args.refund_address)
        shot(page, "order-page-emergency.png")
        page.click("form#emergency button[type=submit]")
        expect(page.locator("#status")).to_have_attribute(
            "data-status", "refunded", timeout=60_000
        )
        expect(page.locator("#refund-tx")).not_to_be_empty()

        # Someone else's guess at the link.
        wrong = args.completed.rsplit("/", 1)[0] + "/" + "0" * 32
        response = page.goto(wrong)
        assert response.status == 404, response.status
        expect(page.locator("h1")).to_have_text("Order not found")
        desktop.close()
        browser.close()
    print("order page: all browser checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
