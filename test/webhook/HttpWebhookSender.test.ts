import { assert, describe, it } from "@effect/vitest"
import { guardedLookup, isPrivateAddress } from "../../adapters/webhook/HttpWebhookSender.ts"

const resolve = (host: string, all: boolean) =>
  new Promise<{ error: NodeJS.ErrnoException | null; address: unknown }>((done) =>
    guardedLookup(host, { all }, (error, address) => done({ error, address }))
  )

describe("HttpWebhookSender's address rules", () => {
  it("calls private, loopback, link-local, unique-local, multicast and unspecified addresses private", () => {
    for (
      const ip of ["10.0.0.1", "127.0.0.1", "169.254.169.254", "172.16.0.1", "192.168.1.1", "100.64.0.1", "0.0.0.0"]
    ) {
      assert.isTrue(isPrivateAddress(ip), ip)
    }
    for (const ip of ["::1", "::", "fc00::1", "fe80::1", "ff02::1", "::ffff:10.0.0.1"]) {
      assert.isTrue(isPrivateAddress(ip), ip)
    }
    for (const ip of ["93.184.216.34", "8.8.8.8", "2606:2800:220:1::1", "::ffff:8.8.8.8"]) {
      assert.isFalse(isPrivateAddress(ip), ip)
    }
  })

  // The connection resolves the name again: a name that now points inside the network (DNS rebinding after the
  // check) is refused there, in both forms node asks for.
  it("refuses, at the connection, a name that resolves to a private address", async () => {
    for (const all of [false, true]) {
      const refused = await resolve("localhost", all)
      assert.strictEqual(refused.error?.code, "EPRIVATEADDRESS")
      const passed = await resolve("93.184.216.34", all)
      assert.isNull(passed.error)
      assert.deepStrictEqual(passed.address, all ? [{ address: "93.184.216.34", family: 4 }] : "93.184.216.34")
    }
  })
})
