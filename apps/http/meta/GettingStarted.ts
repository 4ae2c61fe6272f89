// The walk from a key to a refund and a verified webhook, in the document's description: each step one short
// sample and the answer it gets. test/client/CodeSamples.http.test.ts runs the samples in order and checks each
// answer's status and the members it shows.
export interface Exchange {
  readonly sample: string
  readonly answer: string
}
export interface Step {
  readonly title: string
  readonly text: string
  readonly exchanges: ReadonlyArray<Exchange>
  readonly after?: string
}

const transfer = (baseUrl: string, reference: string, pan: string, key?: string) =>
  `curl -i ${baseUrl}/merchant/transfers/payment \\
  -H "Authorization: Bearer $PAYSUB_KEY" -H 'Content-Type: application/json' \\${
    key === undefined ? "" : `\n  -H 'Idempotency-Key: ${key}' \\`
  }
  -d '{"payment_transfer": {"reference": "${reference}", "amount": "12.30", "currency": "USD",
       "sender_account_uri": "pan:${pan};exp=2030-12;cvc=737",
       "sender": {"first_name": "Ann", "email": "ann@example.com"},
       "recipient": {"first_name": "Bob", "email": "bob@example.com", "merchant_id": "merchant_1"}}}'`

export const gettingStarted = (baseUrl: string): ReadonlyArray<Step> => [
  {
    title: "Get a key",
    text:
      "The first start on an empty database prints a secret key once. More clients, each with its own key, come from the CLI on the service's database:",
    exchanges: [{
      sample: `npm run cli -- client create --name "Acme"`,
      answer: `{"id": "cl_...", "api_key": "sk_..."}`
    }],
    after: "Every merchant call carries it: `export PAYSUB_KEY=sk_...` for the samples here."
  },
  {
    title: "Make a transfer",
    text:
      "Charge a card. The sandbox approves 4242424242424242 and declines 4000000000000002 (more test cards in docs/api.md); a declined transfer is recorded too, and the 402 names it.",
    exchanges: [
      {
        sample: transfer(baseUrl, "order-1001", "4242424242424242", "order-1001"),
        answer:
          `HTTP/1.1 201 Created\nlocation: ${baseUrl}/merchant/transfers/payment/tr_...\n\n{"payment_transfer": {"id": "tr_...", "reference": "order-1001", "amount": "12.30", "currency": "USD", "status": "approved", ...}}`
      },
      {
        sample: transfer(baseUrl, "order-1002", "4000000000000002"),
        answer:
          `HTTP/1.1 402 Payment Required\n\n{"error": {"type": "card_error", "code": "card_declined", "decline_code": "generic_decline", "transfer": "tr_...", ...}}`
      }
    ]
  },
  {
    title: "Retry with the same Idempotency-Key",
    text:
      "A request that timed out or got no answer is sent again as it was, with the same Idempotency-Key: the card is not charged twice, and the first answer comes back byte for byte.",
    exchanges: [{
      sample: transfer(baseUrl, "order-1001", "4242424242424242", "order-1001"),
      answer:
        `HTTP/1.1 201 Created\nidempotent-replayed: true\n\n{"payment_transfer": {"id": "tr_...", "reference": "order-1001", "status": "approved", ...}}`
    }]
  },
  {
    title: "Refund it",
    text: "All of it, or part of it with an `amount`; the transfer's id is in the first answer.",
    exchanges: [{
      sample: `curl -i -X POST ${baseUrl}/merchant/transfers/payment/tr_.../refunds \\
  -H "Authorization: Bearer $PAYSUB_KEY" -H 'Idempotency-Key: refund-order-1001'`,
      answer:
        `HTTP/1.1 201 Created\n\n{"refund": {"id": "re_...", "transfer": "tr_...", "amount": "12.30", "currency": "USD", "status": "succeeded", ...}}`
    }]
  },
  {
    title: "Register a webhook endpoint and verify a delivery",
    text:
      "Events (transfer.approved, refund.created, ...) are POSTed to the endpoint, signed as Standard Webhooks with the secret this answer shows once.",
    exchanges: [{
      sample: `curl -i ${baseUrl}/webhook_endpoints -H "Authorization: Bearer $PAYSUB_KEY" \\
  -H 'Content-Type: application/json' \\
  -d '{"url": "https://hooks.example.com/paysub", "enabled_events": ["*"]}'`,
      answer:
        `HTTP/1.1 201 Created\n\n{"id": "we_...", "url": "https://hooks.example.com/paysub", "enabled_events": ["*"], "status": "enabled", "secret": "whsec_...", ...}`
    }],
    after:
      `The receiver checks each delivery against the raw body, before parsing it (the npm package standardwebhooks):

\`\`\`ts
import { Webhook } from "standardwebhooks"
// Throws unless the body was signed with the secret less than 5 minutes ago.
const event = new Webhook(process.env.WEBHOOK_SECRET!).verify(rawBody, request.headers)
// {"id": "evt_...", "type": "transfer.approved", "data": {"object": {"id": "tr_...", ...}}, ...}
\`\`\`

Answer 2xx once it is handled; anything else is retried with backoff. The same event may come twice (same webhook-id): drop one you have handled.`
  }
]

const fence = (lang: string, text: string) => `\`\`\`${lang}\n${text}\n\`\`\``

export const gettingStartedMarkdown = (baseUrl: string) =>
  [
    "## Getting started",
    ...gettingStarted(baseUrl).map((step, i) =>
      [
        `**${i + 1}. ${step.title}.** ${step.text}`,
        ...step.exchanges.flatMap((e) => [fence("sh", e.sample), fence("http", e.answer)]),
        ...(step.after === undefined ? [] : [step.after])
      ].join("\n\n")
    )
  ].join("\n\n")
