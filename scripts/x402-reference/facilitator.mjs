// A stand-in x402 facilitator for scripts/bench-x402.sh's paid-call run: it answers
// `/supported`, `/verify` and `/settle` in the x402 v2 wire format at once, without a chain, so
// that what a paid call costs beyond the facilitator's answers is swapd's own work (swapd still
// checks every payment's signature itself). Never for anything but a benchmark.
import { randomBytes } from "node:crypto";
import express from "express";

const port = Number(process.env.PORT ?? 4030);
const network = process.env.NETWORK ?? "eip155:8453";

const app = express();
app.use(express.json({ limit: "64kb" }));
app.get("/supported", (_req, res) => {
  res.json({ kinds: [{ x402Version: 2, scheme: "exact", network }], extensions: [], signers: {} });
});
const payer = (req) => req.body?.paymentPayload?.payload?.authorization?.from;
app.post("/verify", (req, res) => {
  res.json({ isValid: true, payer: payer(req) });
});
app.post("/settle", (req, res) => {
  res.json({
    success: true,
    payer: payer(req),
    transaction: `0x${randomBytes(32).toString("hex")}`,
    network,
  });
});
app.listen(port, "127.0.0.1", () => console.log(`listening: http://127.0.0.1:${port}`));
