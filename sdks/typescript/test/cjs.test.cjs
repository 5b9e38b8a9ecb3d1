// The CommonJS build loads and offers the same entry points as the ESM one.
const { test } = require("node:test");
const assert = require("node:assert/strict");

test("require() loads the CommonJS builds", () => {
  const sdk = require("../dist/index.cjs");
  assert.equal(typeof sdk.createBusinessApiClient, "function");
  assert.equal(typeof sdk.verifyWebhook, "function");
  assert.equal(typeof sdk.signing.sign, "function");
  const x402 = require("../dist/x402.cjs");
  assert.equal(typeof x402.createX402ApiClient, "function");
});
