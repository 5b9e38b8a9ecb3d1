// The retry rules of docs/sdk.md, against a local server answering from a script.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { createBusinessApiClient, SwapdApiError, SwapdTransportError, SwapdUnexpectedResponse } from "../dist/index.js";
import { DROP, error, ok, scripted } from "./scripted.mjs";

const FAST = { maxRetries: 3, baseDelayMs: 10, maxDelayMs: 20, maxRetryAfterMs: 2000 };
const client = (server, retry = FAST) => createBusinessApiClient({ baseUrl: server.url, apiKey: "key_test", apiSecret: "sec_test", retry, timeoutMs: 5000 });

test("a 429 waits for its Retry-After, then succeeds", async () => {
  const server = await scripted(error(429, "rate_limit_exceeded", 0), ok({ count: 1 }));
  assert.deepEqual(await client(server).currencies(), { count: 1 });
  assert.equal(server.requests.length, 2);
  await server.close();
});

test("a 429 asking too long a wait is thrown with its fields", async () => {
  const server = await scripted(error(429, "rate_limit_exceeded", 3600));
  await assert.rejects(client(server).currencies(), (e) => {
    assert.ok(e instanceof SwapdApiError);
    assert.deepEqual([e.status, e.code, e.retryAfter, e.requestId], [429, "rate_limit_exceeded", 3600, "req_rate_limit_exceeded"]);
    return true;
  });
  await server.close();
});

test("a mutation is retried after a 503, a drop and a key in use, with one key and fresh nonces", async () => {
  const server = await scripted(error(503, "service_unavailable"), DROP, error(409, "idempotency_key_in_use", 0), ok({ orderId: "ord_1" }, 201));
  const created = await client(server).createOrder({ fromCcy: "BTC", toCcy: "ETH", amount: "0.1", toAddress: "x" });
  assert.deepEqual(created, { orderId: "ord_1" });
  const sent = server.requests;
  assert.equal(sent.length, 4);
  assert.equal(new Set(sent.map((r) => r["headers"]["idempotency-key"])).size, 1, "one key across retries");
  assert.equal(new Set(sent.map((r) => r.headers["x-api-nonce"])).size, 4, "each attempt signed afresh");
  assert.equal(new Set(sent.map((r) => r.body)).size, 1);
  await server.close();
});

test("client errors are final, retries run out, and one option turns them off", async () => {
  let server = await scripted(error(400, "validation_failed"), ok({}));
  await assert.rejects(client(server).currencies(), (e) => e.code === "validation_failed");
  assert.equal(server.requests.length, 1);
  await server.close();
  server = await scripted(...Array(4).fill(error(503, "service_unavailable")));
  await assert.rejects(client(server).currencies(), SwapdApiError);
  assert.equal(server.requests.length, 4);
  await server.close();
  server = await scripted(error(503, "service_unavailable"), ok({}));
  await assert.rejects(client(server, false).currencies(), SwapdApiError);
  assert.equal(server.requests.length, 1);
  await server.close();
});

test("an answer that is not the envelope is unexpected", async () => {
  const server = await scripted([502, { "Content-Type": "text/html" }, "<html>bad gateway</html>"]);
  await assert.rejects(client(server, false).currencies(), (e) => e instanceof SwapdUnexpectedResponse && e.status === 502);
  await server.close();
});

test("a refused connection is a transport error that never reached the server", async () => {
  const probe = createServer();
  await new Promise((r) => probe.listen(0, "127.0.0.1", r));
  const port = probe.address().port;
  await new Promise((r) => probe.close(r));
  const api = createBusinessApiClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: "key_t", apiSecret: "sec_t", retry: FAST });
  await assert.rejects(api.currencies(), (e) => e instanceof SwapdTransportError && e.sent === false);
});
