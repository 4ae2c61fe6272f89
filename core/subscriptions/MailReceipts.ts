import { Context, Effect } from "effect"

// Receipts of accepted mails: a sender that keeps them notes a mail's outbox row (Mail.outbox) the moment the
// server accepted the mail, where a crash of the process does not lose the note, and before it answers. The
// outbox worker marks the row sent (a commit on the main thread, which under load comes tens to hundreds of
// milliseconds later) and then settles the receipt. A receipt noted and never settled is a mail the server took
// and the database does not know of: the worker marks its row sent at start, before it sends anything, instead
// of sending the mail again (docs/decisions/0037).
//
// Only facts are noted (this row's mail was accepted); what they mean for the row is decided here, in core. A
// sender that keeps no receipts (the default) only costs the duplicates a crash leaves.
export interface MailReceiptsShape {
  // The rows noted and not settled when the process last stopped: read once, at start.
  readonly unsettled: Effect.Effect<ReadonlyArray<number>>
  // The rows' marks are done with (committed, or failed: the row is then tried again anyway): their notes go.
  readonly settle: (ids: ReadonlyArray<number>) => Effect.Effect<void>
}

export const noReceipts: MailReceiptsShape = { unsettled: Effect.succeed([]), settle: () => Effect.void }

export class MailReceipts extends Context.Reference<MailReceipts>()("MailReceipts", {
  defaultValue: (): MailReceiptsShape => noReceipts
}) {}
