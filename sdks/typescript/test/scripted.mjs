// A local HTTP server that answers from a script and records what it was sent.
import { createServer } from "node:http";

export const DROP = "drop";
export const ok = (data, status = 200) => [status, { "X-Request-Id": "req_ok" }, JSON.stringify({ success: true, data })];
export const error = (status, code, retryAfter) => [
  status,
  { "X-Request-Id": `req_${code}`, ...(retryAfter === undefined ? {} : { "Retry-After": String(retryAfter) }) },
  JSON.stringify({ success: false, error: { code, message: `${code} happened` } }),
];

export async function scripted(...answers) {
  const requests = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      requests.push({ method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString() });
      const answer = answers.shift();
      if (answer === DROP) return req.socket.destroy();
      const [status, headers, body] = answer;
      res.writeHead(status, { "Content-Type": "application/json", ...headers });
      res.end(body);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${server.address().port}`, requests, close: () => new Promise((r) => server.close(r)) };
}
