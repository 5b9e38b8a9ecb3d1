// The committed types and operation tables are what the OpenAPI documents make, and every
// operation is a method named by its operationId.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createBusinessApiClient } from "../dist/index.js";
import { createX402ApiClient } from "../dist/x402.js";
import { privateKeyToAccount, generatePrivateKey } from "viem/accounts";

const SKIPPED = new Set(["business_openapi", "x402_openapi", "healthz", "readyz", "metrics"]);
const camel = (id) => id.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());
const operationIds = (name) => {
  const spec = JSON.parse(readFileSync(new URL(`../../../openapi/${name}.json`, import.meta.url), "utf8"));
  return Object.values(spec.paths).flatMap((item) => Object.values(item)).map((op) => op.operationId).filter((id) => id && !SKIPPED.has(id));
};

test("the generated files are not stale", () => {
  execFileSync(process.execPath, [new URL("../scripts/generate.mjs", import.meta.url).pathname, "--check"], { stdio: "pipe" });
});

test("every operation is a method named by its operationId in camelCase", () => {
  const business = createBusinessApiClient({ baseUrl: "http://127.0.0.1:1", apiKey: "key_x", apiSecret: "sec_x" });
  for (const id of operationIds("v3")) assert.equal(typeof business[camel(id)], "function", id);
  const agent = createX402ApiClient({ baseUrl: "http://127.0.0.1:1", signer: privateKeyToAccount(generatePrivateKey()) });
  for (const id of operationIds("x402")) assert.equal(typeof agent[camel(id)], "function", id);
});
