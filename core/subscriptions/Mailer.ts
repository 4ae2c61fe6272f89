import { Context, type Effect } from "effect"
import type { MailDeliveryFailed } from "./Errors.ts"

export interface Mail {
  readonly to: { readonly name: string; readonly address: string }
  readonly subject: string
  readonly text: string
  readonly html: string
  readonly headers: Readonly<Record<string, string>>
  // The outbox row the mail is for, when the outbox sends it: a sender that keeps receipts notes it once the
  // server accepted the mail (MailReceipts.ts). Not part of the message.
  readonly outbox?: number
}

// What became of the mail at `index` of a batch: the server accepted it, or `failure` says why not.
export interface MailOutcome {
  readonly index: number
  readonly failure?: MailDeliveryFailed | undefined
}

// Mail goes out in batches: the outbox hands over all the mails of a pass at once, and an adapter may send them
// as concurrently as it can (its connections bound how many are on the wire). Each mail's outcome goes to
// `report` once, as soon as it is known, in any order, so that the outbox marks the accepted ones while the rest
// are still on the wire; the effect ends when every mail has its outcome. One batch is one hand-over and one
// wait, whatever its size (docs/decisions/0041).
export interface MailerShape {
  readonly sendAll: (mails: ReadonlyArray<Mail>, report: (outcome: MailOutcome) => void) => Effect.Effect<void>
}

export class Mailer extends Context.Tag("Mailer")<Mailer, MailerShape>() {}
