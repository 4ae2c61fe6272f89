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

export interface MailerShape {
  readonly send: (mail: Mail) => Effect.Effect<void, MailDeliveryFailed>
}

export class Mailer extends Context.Tag("Mailer")<Mailer, MailerShape>() {}
