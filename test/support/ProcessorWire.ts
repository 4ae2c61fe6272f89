// The JSON TestProcessor reads and answers (docs/card-processor.md): request bodies checked as a strict
// processor would, described without card data, and the answers it decides by the sandbox's tables.
import type http from "node:http"
import {
  sandboxAuthorizationPrefix,
  sandboxDecision,
  type SandboxRefundBehaviour
} from "../../adapters/cardnetwork/SandboxCardNetwork.ts"

export interface Answer {
  readonly status: number
  readonly body: string
}

export interface ValidAuthorization {
  readonly transferId: string
  readonly pan: string
  readonly authenticated: boolean
  // What a repeated key must agree on (no card data beyond the last four digits).
  readonly fingerprint: string
}

export interface ValidRefund {
  readonly refundId: string
  readonly authorizationCode: string
  readonly fingerprint: string
}

export const header = (request: http.IncomingMessage, name: string): string | undefined => {
  const value = request.headers[name]
  return Array.isArray(value) ? value[0] : value
}

export const readBody = (request: http.IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    let size = 0
    request.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size > 64 * 1024) request.destroy(new Error("body too large"))
      else chunks.push(chunk)
    })
    request.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    request.on("error", reject)
  })

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

const minorUnits = (u: unknown) => typeof u === "string" && /^(0|[1-9][0-9]*)$/.test(u)
const currency = (u: unknown) => typeof u === "string" && /^[A-Z]{3}$/.test(u)
const nonEmpty = (u: unknown): u is string => typeof u === "string" && u !== ""

export const validateAuthorization = (body: unknown): ValidAuthorization | undefined => {
  if (!isRecord(body) || !isRecord(body.card)) return undefined
  const card = body.card
  const ok = nonEmpty(body.transfer_id) &&
    typeof card.number === "string" && /^[0-9]{12,19}$/.test(card.number) &&
    Number.isInteger(card.exp_month) && (card.exp_month as number) >= 1 && (card.exp_month as number) <= 12 &&
    Number.isInteger(card.exp_year) &&
    typeof card.cvc === "string" && /^[0-9]{3,4}$/.test(card.cvc) &&
    (body.authentication_value === undefined || nonEmpty(body.authentication_value)) &&
    minorUnits(body.amount) && currency(body.currency) && nonEmpty(body.merchant_id)
  if (!ok) return undefined
  const pan = card.number as string
  return {
    transferId: body.transfer_id as string,
    pan,
    authenticated: body.authentication_value !== undefined,
    fingerprint: JSON.stringify([body.transfer_id, pan.slice(-4), body.amount, body.currency, body.merchant_id])
  }
}

// Exactly these fields: a refund that carries anything else (card data above all) is refused.
const refundFields = ["amount", "authorization_code", "currency", "id", "transfer"].join()

export const validateRefund = (body: unknown): ValidRefund | undefined => {
  if (!isRecord(body) || Object.keys(body).sort().join() !== refundFields) return undefined
  const ok = nonEmpty(body.id) && nonEmpty(body.transfer) && nonEmpty(body.authorization_code) &&
    minorUnits(body.amount) && body.amount !== "0" && currency(body.currency)
  if (!ok) return undefined
  return {
    refundId: body.id as string,
    authorizationCode: body.authorization_code as string,
    fingerprint: JSON.stringify([body.id, body.transfer, body.authorization_code, body.amount, body.currency])
  }
}

// Only what may be kept: never the number, the CVC or the authentication value.
export const describeBody = (body: unknown) => {
  const b = isRecord(body) ? body : {}
  const card = isRecord(b.card) ? b.card : {}
  const text = (u: unknown) => typeof u === "string" ? u : undefined
  return {
    transferId: text(b.transfer_id) ?? text(b.transfer),
    refundId: text(b.id),
    authorizationCode: text(b.authorization_code),
    last4: typeof card.number === "string" ? card.number.slice(-4) : undefined,
    expMonth: card.exp_month,
    expYear: card.exp_year,
    cvcLength: typeof card.cvc === "string" ? card.cvc.length : undefined,
    hasAuthenticationValue: b.authentication_value !== undefined,
    amount: b.amount,
    currency: b.currency,
    merchantId: b.merchant_id,
    fields: Object.keys(b).sort()
  }
}

export const error = (status: number, code: string): Answer => ({ status, body: JSON.stringify({ error: code }) })

export const pending: Answer = { status: 200, body: JSON.stringify({ status: "pending" }) }

// The sandbox's decision for a card; an approval's code is "TP" and a count, or for a refund card its
// prefix and the count, so that its refunds behave as in the sandbox.
export const authorizationAnswer = (valid: ValidAuthorization, count: number): Answer => {
  const outcome = sandboxDecision(valid.pan, valid.authenticated)
  const prefix = sandboxAuthorizationPrefix(valid.pan)
  const code = prefix === "SBX"
    ? `TP${String(count % 10_000).padStart(4, "0")}`
    : `${prefix}${String(count % 1000).padStart(3, "0")}`
  return {
    status: 200,
    body: JSON.stringify(
      outcome._tag === "Approved"
        ? { status: "approved", authorization_code: code }
        : {
          status: "declined",
          code: outcome.code,
          ...(outcome.declineCode === undefined ? {} : { decline_code: outcome.declineCode })
        }
    )
  }
}

export const refundAnswer = ({ outcome }: SandboxRefundBehaviour): Answer => ({
  status: 200,
  body: JSON.stringify(
    outcome._tag === "Succeeded" ? { status: "succeeded" } : { status: "failed", failure_reason: outcome.reason }
  )
})
