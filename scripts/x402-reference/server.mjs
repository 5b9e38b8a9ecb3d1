// The reference x402 resource server (`@x402/express` 2.27.0) with one `$0.05` route on
// eip155:8453, for scripts/bench-x402.sh: the same challenge swapd answers, measured with the
// same load generator on the same machine. A local stand-in answers the facilitator's
// `/supported` (the only call a challenge needs); nothing leaves the machine.
import express from "express";
import { paymentMiddleware, x402ResourceServer } from "@x402/express";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import { HTTPFacilitatorClient } from "@x402/core/server";

const port = Number(process.env.PORT ?? 4021);
const facilitatorPort = port + 1;

const facilitator = express();
facilitator.get("/supported", (_req, res) => {
  res.json({
    kinds: [{ x402Version: 2, scheme: "exact", network: "eip155:8453" }],
    extensions: [],
    signers: {},
  });
});
await new Promise((resolve) => facilitator.listen(facilitatorPort, "127.0.0.1", resolve));

const server = new x402ResourceServer(
  new HTTPFacilitatorClient({ url: `http://127.0.0.1:${facilitatorPort}` }),
).register("eip155:8453", new ExactEvmScheme());

const app = express();
app.use(
  paymentMiddleware(
    {
      "GET /paid": {
        accepts: {
          scheme: "exact",
          price: "$0.05",
          network: "eip155:8453",
          payTo: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
        },
        description: "One paid call",
      },
    },
    server,
  ),
);
app.get("/paid", (_req, res) => res.json({ ok: true }));
app.listen(port, "127.0.0.1", () => console.log(`listening: http://127.0.0.1:${port}`));
