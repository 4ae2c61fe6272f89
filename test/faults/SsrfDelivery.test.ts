import { assert, describe, it } from "@effect/vitest"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { makeDelivery } from "../../adapters/webhook/HttpWebhookSender.ts"
import { isPublicAddress } from "../../adapters/webhook/PublicAddress.ts"
import { EventId } from "../../core/webhooks/Webhooks.ts"
import { privateHosts, publicHosts } from "./SsrfTable.ts"

// Delivery-time half of the SSRF table: the sender refuses every private form before it connects, so a listener
// bound to 127.0.0.1 sees no connection at all.
describe("webhook delivery to private addresses", () => {
  it("classifies the table's forms once WHATWG URL has normalised them", () => {
    const hostOf = (host: string) => new URL(`http://${host}/`).hostname
    for (const host of privateHosts) assert.isFalse(isPublicAddress(hostOf(host)), host)
    for (const host of publicHosts) assert.isTrue(isPublicAddress(hostOf(host)), host)
  })

  it("refuses each private form before connecting, with WEBHOOK_ALLOW_PRIVATE off", async () => {
    let connections = 0
    const listener = createServer((_, res) => res.writeHead(204).end())
    listener.on("connection", () => connections++)
    await new Promise<void>((ok) => listener.listen(0, "127.0.0.1", ok))
    const port = (listener.address() as AddressInfo).port
    const delivery = makeDelivery({ allowHttp: true, allowPrivate: false, timeoutMs: 2_000 })
    try {
      for (const host of privateHosts) {
        const url = `http://${host}:${port}/hook`
        assert.isDefined(await delivery.refusal(url), url)
        const [outcome] = await delivery.send([{
          url,
          id: EventId.make("evt_000000000000000000000001"),
          timestamp: 1,
          body: "{}",
          secret: "whsec_AAAA"
        }])
        assert.match(String(outcome), /^refused: /, url)
      }
      for (const host of publicHosts) assert.isUndefined(await delivery.refusal(`http://${host}/hook`), host)
      assert.strictEqual(connections, 0)
      // The same listener is reached when private addresses are allowed, so the zero above means something.
      const open = makeDelivery({ allowHttp: true, allowPrivate: true, timeoutMs: 2_000 })
      const [reached] = await open.send([{
        url: `http://[::ffff:127.0.0.1]:${port}/hook`,
        id: EventId.make("evt_000000000000000000000001"),
        timestamp: 1,
        body: "{}",
        secret: "whsec_AAAA"
      }])
      assert.strictEqual(reached, 204)
      assert.strictEqual(connections, 1)
    } finally {
      listener.closeAllConnections()
      await new Promise((ok) => listener.close(ok))
    }
  })
})
