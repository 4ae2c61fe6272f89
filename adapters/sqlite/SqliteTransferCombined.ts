import { KeptAnswer } from "../../core/payments/Idempotency.ts"
import type { CombinedOperations, TransferTx } from "../../core/payments/TransferStorage.ts"
import { sqliteInsertAudienceEvent } from "../sql/EventRows.ts"
import type { SqliteDirectShape } from "./SqliteClient.ts"
import { type Statements, write } from "./SqliteUnitOfWork.ts"

// The transfer storage's combined operations on SQLite (decision 0044): each the port's operations, as
// statements in one transaction of the group commit, run as one synchronous function, where core's own
// sequence of them costs an Effect per operation and a fiber for the transaction. The event's deliveries are
// chosen by the statement that inserts them, from the audience core gave (adapters/sql/EventRows.ts).
export const sqliteCombined = (direct: SqliteDirectShape, s: Statements<TransferTx>): CombinedOperations => {
  const writing = write(direct)
  return {
    settle: ({ answer, event, from, transfer: t }) =>
      writing((db) => {
        const changed = s.updateOutcome(db, t, from)
        if (changed && event !== undefined) sqliteInsertAudienceEvent(db, event.event, event.audience)
        if (answer !== undefined && "key" in answer) {
          s.keepAnswer(db, t.clientId, answer.key, KeptAnswer.TransferMade({ transferId: t.id }))
        } else if (answer !== undefined) {
          s.answerWaitingKeys(db, t.clientId, answer.waiting, t.id)
        }
        return changed
      }),
    insertKeyAndTransfer: (t, claim) =>
      writing((db) => {
        const keyInserted = s.insertKey(db, t.clientId, claim, t.createdAt)
        return { keyInserted, transferInserted: keyInserted && s.insertTransfer(db, t) }
      }),
    insertTransferAndEvent: (t, { audience, event }) =>
      writing((db) => {
        const inserted = s.insertTransfer(db, t)
        if (inserted) sqliteInsertAudienceEvent(db, event, audience)
        return inserted
      })
  }
}
