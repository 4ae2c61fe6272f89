import { DateTime, Effect, identity } from "effect"
import type { Transfer } from "../../core/payments/Transfer.ts"
import type { CombinedOperations, EventWrite } from "../../core/payments/TransferStorage.ts"
import { balanceParams, KeyColumns, outcomeRow, TransferColumns, transferRow } from "../sql/TransferRows.ts"
import { errnoOf, type MariaDbDirectShape, rollBack } from "./MariaDbDirect.ts"

// The transfer storage's statements on MariaDB that its combined operations share with the port's operations, and
// the combined operations: each one script (MariaDbDirect.ts), its statements and START TRANSACTION and COMMIT
// in one round trip, where the operations one by one would take a round trip each. MariaDB has no data-modifying
// CTEs: a statement's effect reaches the next through ROW_COUNT(), and a unique key a statement lost through
// the error that stops the script.

export const fields = TransferColumns.replace(/CAST\((\w+) AS TEXT\) AS \1/g, "$1").split(",").map((c) => c.trim())
export const insertTransfer = `INSERT INTO transfers (${fields.join(", ")})
  VALUES (${fields.map(() => "?").join(", ")})`
export const transferValues = (t: Transfer) => {
  const row: Record<string, unknown> = transferRow(t, identity)
  return fields.map((f) => row[f])
}
export const keyWhere = "client_id = ? AND idempotency_key = ?"
export const keyRecord = `SELECT ${KeyColumns} FROM idempotency_keys WHERE ${keyWhere}`
export const insertKey =
  `INSERT INTO idempotency_keys (client_id, idempotency_key, request_hash, request_id, started_at)
  VALUES (?, ?, ?, ?, ?)`
export const keepAnswer = `UPDATE idempotency_keys SET answer = ?, transfer_id = ?, refund_id = ?
  WHERE ${keyWhere} AND answer IS NULL`
export const answerWaiting = `UPDATE idempotency_keys SET answer = 'transfer_made', transfer_id = ?
  WHERE client_id = ? AND request_hash = ? AND answer IS NULL`
// The outcome onto the transfer if its status is one of `from` (as many parameters as it has statuses).
export const updateOutcome = (from: number) =>
  `UPDATE transfers SET status = ?, failure_code = ?, decline_code = ?, authorization_code = ?, reconciled_at = ?,
  reconcile_at = NULL WHERE id = ? AND status IN (${Array.from({ length: from }, () => "?").join(", ")})`
export const addToBalance = `INSERT INTO balances (client_id, merchant_id, currency, amount) VALUES (?, ?, ?, ?)
  ON DUPLICATE KEY UPDATE amount = amount + VALUES(amount)`

// The event and its deliveries where `when` (SQL) holds: one delivery, due at once, for each live endpoint of the
// audience's owner that enabled any of its `types` (each a JSON string), as core's `recipients` chooses them.
const eventWhere = (when: string, types: number) =>
  `INSERT INTO events (id, type, owner, created_at, body, subject) SELECT ?, ?, ?, ?, ?, ? FROM DUAL WHERE ${when};
  INSERT INTO webhook_deliveries (event_id, endpoint_id, created_at, next_attempt_at)
  SELECT ?, id, ?, ? FROM webhook_endpoints WHERE owner = ? AND disabled_at IS NULL
  AND (${Array.from({ length: types }, () => "JSON_CONTAINS(enabled_events, ?)").join(" OR ")}) AND ${when}`
const eventValues = ({ audience, event: e }: EventWrite) => {
  const at = DateTime.toEpochMillis(e.createdAt)
  const row = [e.id, e.type, e.owner, at, e.body, e.subject ?? null]
  return [...row, e.id, at, at, audience.owner, ...audience.anyOf.map((type) => JSON.stringify(type))]
}

// A script's text, made once per shape (its arguments).
const once = <A extends ReadonlyArray<string | number | boolean | undefined>>(make: (...shape: A) => string) => {
  const made = new Map<string, string>()
  return (...shape: A) => {
    const key = shape.join(" ")
    let text = made.get(key)
    if (text === undefined) made.set(key, text = make(...shape))
    return text
  }
}

// A settle: the outcome's matched rows (mysql2 connects with FOUND_ROWS, and ROW_COUNT() counts them too) decide
// the event and the balance change, and the answer (the UPDATE's own result, the first of the script's).
const settleScript = once((from: number, event: number, balance: boolean, answer: "key" | "waiting" | undefined) =>
  [
    updateOutcome(from),
    "SET @changed = ROW_COUNT()",
    ...(event > 0 ? [eventWhere("@changed > 0", event)] : []),
    ...(balance
      ? [`INSERT INTO balances (client_id, merchant_id, currency, amount) SELECT ?, ?, ?, ? FROM DUAL
        WHERE @changed > 0 ON DUPLICATE KEY UPDATE amount = amount + VALUES(amount)`]
      : []),
    ...(answer === "key" ? [keepAnswer] : answer === "waiting" ? [answerWaiting] : [])
  ].join(";\n")
)
const matchedFirst = (results: ReadonlyArray<unknown>) => (results[0] as { affectedRows?: number }).affectedRows ?? 0

const keyAndTransferScript = `SET @key = 0; ${insertKey}; SET @key = 1; ${insertTransfer}`
const transferAndEventScript = once((types: number) => `${insertTransfer}; ${eventWhere("TRUE", types)}`)

export const mariaDbCombined = (direct: MariaDbDirectShape): CombinedOperations => ({
  // insertKey, then insertTransfer; a lost key stops at the first statement (nothing written: COMMIT ends it as
  // ROLLBACK would), a taken reference at the second (the key kept, as the operations one by one keep it).
  insertKeyAndTransfer: (t, claim) =>
    direct.script(
      keyAndTransferScript,
      [
        t.clientId,
        claim.key,
        claim.requestHash,
        claim.requestId,
        DateTime.toEpochMillis(t.createdAt),
        ...transferValues(t)
      ],
      () => ({ keyInserted: true, transferInserted: true }),
      (error, send) =>
        errnoOf(error) === 1062
          ? Effect.map(send("COMMIT; SELECT @key AS k"), (results) => {
            const keyInserted = Number((results as Array<Array<{ k: unknown }>>)[1]?.[0]?.k) === 1
            return { keyInserted, transferInserted: false }
          })
          : rollBack(error, send)
    ).pipe(Effect.orDie),
  // insertTransfer, then the event if it inserted.
  insertTransferAndEvent: (t, event) =>
    direct.script(
      transferAndEventScript(event.audience.anyOf.length),
      [...transferValues(t), ...eventValues(event)],
      () => true,
      (error, send) => errnoOf(error) === 1062 ? Effect.as(send("ROLLBACK"), false) : rollBack(error, send)
    ).pipe(Effect.orDie),
  settle: ({ answer, balance, event, from, transfer: t }) => {
    const answered = answer === undefined ? undefined : "key" in answer ? "key" as const : "waiting" as const
    return direct.script(
      settleScript(from.length, event?.audience.anyOf.length ?? 0, balance !== undefined, answered),
      [
        ...outcomeRow(t, identity),
        t.id,
        ...from,
        ...(event === undefined ? [] : eventValues(event)),
        ...(balance === undefined ? [] : balanceParams(balance)),
        ...(answer === undefined
          ? []
          : "key" in answer
          ? ["transfer_made", t.id, null, t.clientId, answer.key]
          : [t.id, t.clientId, answer.waiting])
      ],
      (results) => matchedFirst(results) > 0,
      rollBack
    ).pipe(Effect.orDie)
  }
})
