// The signing rules, checked against the worked examples of docs/authentication.md.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { signing } from "../dist/index.js";

const doc = readFileSync(new URL("../../../docs/authentication.md", import.meta.url), "utf8");
const SECRET = "sec_9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
const TIMESTAMP = 1767225600;
const text = (bytes) => new TextDecoder().decode(bytes);

test("the documented GET with a query signs as the document says", () => {
  const query = signing.canonicalQuery([["toCcy", "ETH"], ["fromCcy", "BTC"], ["amount", "0.1"]]);
  assert.equal(query, "amount=0.1&fromCcy=BTC&toCcy=ETH");
  const message = signing.stringToSign("GET", "/api/v3/routes", query, TIMESTAMP, "7f3c9a2e-4b1d-4e8a-9c2f-1a2b3c4d5e6f", new Uint8Array());
  assert.ok(text(message).endsWith("\n"), "an empty body leaves the separator before it");
  const signature = signing.sign(SECRET, message);
  assert.equal(signature, "a3b20c3962deca6026c5d6a5b209c1cb42301e6d893806a112b77d023fdc50b7");
  assert.ok(doc.includes(signature));
});

test("the documented POST signs the compact sorted body it sends", () => {
  const body = { type: "fixed", toCcy: "ETH", toAddress: "0x52908400098527886E0F7030069857D2E4169EE7", fromCcy: "BTC", amount: "0.1" };
  const sent = signing.canonicalJson(body);
  assert.ok(doc.includes(text(sent)), "the document's body, byte for byte");
  const message = signing.stringToSign("POST", "/api/v3/orders", "", TIMESTAMP, "c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e5f", sent);
  const signature = signing.sign(SECRET, message);
  assert.equal(signature, "41de6a2e1cc9fdd9a5c9f95b96e4df01eafe51a6576a91f56c704bebb72ce43a");
  assert.ok(doc.includes(signature));
});

test("canonical JSON sorts nested keys and keeps unicode as UTF-8, as the Python SDK", () => {
  const body = { b: { z: 1, a: ["é", { y: "€", x: "\u0007" }] }, a: "日本" };
  assert.equal(text(signing.canonicalJson(body)), '{"a":"日本","b":{"a":["é",{"x":"\\u0007","y":"€"}],"z":1}}');
});

test("queries are encoded byte by byte and sorted by name then value", () => {
  const pairs = signing.queryPairs({ q: "a b+ü!", chain: ["eth", "base"], skip: undefined, on: true });
  assert.equal(signing.canonicalQuery(pairs), "chain=base&chain=eth&on=true&q=a%20b%2B%C3%BC%21");
});
