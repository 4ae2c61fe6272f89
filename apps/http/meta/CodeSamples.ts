import { ExampleTransferRequest } from "../transfers/ExampleTransfer.ts"

// The code samples beside every write a client sends (x-codeSamples): curl, and TypeScript with openapi-fetch
// over the types openapi-typescript generates from /openapi.json. test/client/CodeSamples.http.test.ts runs
// each one, as served, against the app; the ids below are the schemas' examples, which it swaps for real ones.
export const SampleIds = {
  transfer: "tr_8mZkq3Vb9xYt2LwQ4nRs6PaC",
  endpoint: "we_4fJ8kQ2mN7xR1tY6vB3cL9pD",
  event: "evt_2hG7jK9lM3nP5qR8sT1uV4wX",
  token: "TOKEN_FROM_THE_MAIL"
} as const

export interface CodeSample {
  readonly lang: "Shell" | "TypeScript"
  readonly label: "curl" | "TypeScript"
  readonly source: string
}

type Key = "PAYSUB_KEY" | "PAYSUB_ADMIN_KEY"
interface Call {
  readonly method: "POST" | "PUT" | "DELETE"
  // The path as the document names it, and its parameters.
  readonly path: string
  readonly params?: Readonly<Record<string, string>>
  readonly query?: Readonly<Record<string, string>>
  readonly key?: Key
  readonly idempotencyKey?: string
  readonly body?: Record<string, unknown>
}

const transfer = ExampleTransferRequest
const { endpoint, event, token } = SampleIds

export const Calls: Readonly<Record<string, Call>> = {
  "transfers.create": {
    method: "POST",
    path: "/merchant/transfers/payment",
    key: "PAYSUB_KEY",
    idempotencyKey: "order-1001",
    body: transfer
  },
  "refunds.create": {
    method: "POST",
    path: "/merchant/transfers/payment/{id}/refunds",
    params: { id: SampleIds.transfer },
    key: "PAYSUB_KEY",
    idempotencyKey: "refund-1",
    body: { amount: "5.00", reason: "requested_by_customer" }
  },
  "webhooks.create": {
    method: "POST",
    path: "/webhook_endpoints",
    key: "PAYSUB_KEY",
    body: { url: "https://hooks.example.com/paysub", enabled_events: ["transfer.approved", "transfer.declined"] }
  },
  "webhooks.rotate": {
    method: "POST",
    path: "/webhook_endpoints/{id}/rotate_secret",
    params: { id: endpoint },
    key: "PAYSUB_KEY"
  },
  "webhooks.delete": { method: "DELETE", path: "/webhook_endpoints/{id}", params: { id: endpoint }, key: "PAYSUB_KEY" },
  "webhooks.resend": {
    method: "POST",
    path: "/events/{id}/resend",
    params: { id: event },
    key: "PAYSUB_KEY",
    body: { webhook_endpoint: endpoint }
  },
  "subscriptions.subscribe": {
    method: "POST",
    path: "/subscribe",
    body: { name: "Ann Example", email: "ann@example.com", feed: "default" }
  },
  "subscriptions.confirm": { method: "POST", path: "/subscribe/confirm", query: { token } },
  "subscriptions.unsubscribe": {
    method: "POST",
    path: "/unsubscribe",
    query: { token },
    body: { "List-Unsubscribe": "One-Click" }
  },
  "feeds.put": {
    method: "PUT",
    path: "/feeds/{name}",
    params: { name: "releases" },
    key: "PAYSUB_ADMIN_KEY",
    body: { title: "Release notes" }
  },
  "feeds.delete": { method: "DELETE", path: "/feeds/{name}", params: { name: "releases" }, key: "PAYSUB_ADMIN_KEY" }
}

const url = (baseUrl: string, call: Call) => {
  const path = Object.entries(call.params ?? {}).reduce((p, [name, value]) => p.replace(`{${name}}`, value), call.path)
  return `${baseUrl}${path}${call.query === undefined ? "" : `?${new URLSearchParams(call.query)}`}`
}

const curl = (baseUrl: string, call: Call) =>
  [
    `curl -i${call.method === "POST" && call.body !== undefined ? "" : ` -X ${call.method}`} '${url(baseUrl, call)}'`,
    ...(call.key === undefined ? [] : [`-H "Authorization: Bearer $${call.key}"`]),
    ...(call.idempotencyKey === undefined ? [] : [`-H 'Idempotency-Key: ${call.idempotencyKey}'`]),
    ...(call.body === undefined
      ? []
      : ["-H 'Content-Type: application/json'", `-d '${JSON.stringify(call.body, null, 2).replace(/\n/g, "\n  ")}'`])
  ].join(" \\\n  ")

// openapi-fetch's options: the parameters by where they go, and the body.
const fetchOptions = (call: Call) => {
  const params = {
    ...(call.params === undefined ? {} : { path: call.params }),
    ...(call.query === undefined ? {} : { query: call.query }),
    ...(call.idempotencyKey === undefined ? {} : { header: { "idempotency-key": call.idempotencyKey } })
  }
  const options = {
    ...(Object.keys(params).length === 0 ? {} : { params }),
    ...(call.body === undefined ? {} : { body: call.body })
  }
  return Object.keys(options).length === 0 ? "" : `, ${literal(options)}`
}

// A JavaScript object literal as one writes it: unquoted keys where they are identifiers.
const literal = (value: unknown): string =>
  JSON.stringify(value, null, 2).replace(/"([A-Za-z_][A-Za-z0-9_]*)":/g, "$1:")

const typescript = (baseUrl: string, call: Call) => {
  const headers = call.key === undefined
    ? ""
    : `,\n  headers: { Authorization: \`Bearer \${process.env.${call.key}}\` }`
  return `import createClient from "openapi-fetch"
import type { paths } from "./paysub" // npx openapi-typescript ${baseUrl}/openapi.json -o paysub.d.ts

const paysub = createClient<paths>({
  baseUrl: "${baseUrl}"${headers}
})
const { data, error, response } = await paysub.${call.method}("${call.path}"${fetchOptions(call)})
console.log(response.status, data ?? error)
`
}

export const codeSamples = (baseUrl: string, operationId: string): ReadonlyArray<CodeSample> | undefined => {
  const call = Calls[operationId]
  return call === undefined ? undefined : [
    { lang: "Shell", label: "curl", source: curl(baseUrl, call) },
    { lang: "TypeScript", label: "TypeScript", source: typescript(baseUrl, call) }
  ]
}
