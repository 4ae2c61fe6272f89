import { assert, describe, it } from "@effect/vitest"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { AppProcess } from "../support/AppProcess.ts"
import { firstApiKey, MerchantApi, transferBody, unlimitedEnv } from "../support/Payments.ts"
import { privateHosts, publicHosts } from "./SsrfTable.ts"

// Registration-time half of the SSRF table, through the HTTP API of a service started with
// WEBHOOK_ALLOW_PRIVATE=off (http allowed, so that the address is the only reason to refuse).
describe("webhook registration with WEBHOOK_ALLOW_PRIVATE=off", () => {
  it("answers 400 url_refused for every private form, 201 for public ones, and nothing reaches 127.0.0.1", async () => {
    let connections = 0
    const listener = createServer((_, res) => res.writeHead(204).end())
    listener.on("connection", () => connections++)
    await new Promise<void>((ok) => listener.listen(0, "127.0.0.1", ok))
    const port = (listener.address() as AddressInfo).port
    const app = await AppProcess.start({
      env: { ...unlimitedEnv, WEBHOOK_ALLOW_HTTP: "on", WEBHOOK_ALLOW_PRIVATE: "off" }
    })
    try {
      const api = new MerchantApi(app.baseUrl, firstApiKey(app.output))
      const register = (url: string) =>
        api.request("POST", "/webhook_endpoints", {
          body: JSON.stringify({ url, enabled_events: ["*"] }),
          headers: { "content-type": "application/json" }
        })
      const accepted: Array<string> = []
      for (const host of privateHosts) {
        const answer = await register(`http://${host}:${port}/hook`)
        if (answer.status !== 400 || answer.json.error.code !== "url_refused") accepted.push(host)
      }
      assert.deepStrictEqual(accepted, [])
      for (const host of publicHosts) assert.strictEqual((await register(`http://${host}/hook`)).status, 201, host)
      // Events that would go to every endpoint registered above: none may reach the listener.
      await api.create(transferBody())
      await new Promise((ok) => setTimeout(ok, 1_000))
      assert.strictEqual(connections, 0)
    } finally {
      await app.stop()
      listener.closeAllConnections()
      await new Promise((ok) => listener.close(ok))
    }
  })
})
