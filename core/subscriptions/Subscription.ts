import { Data, Duration, Schema } from "effect"
import { holdsCardData } from "../payments/Card.ts"
import { Email } from "../shared/Email.ts"
import { FeedName } from "./Feed.ts"

export const MaxNameLength = 100

export const SubscriberName = Schema.String.annotations({
  jsonSchema: {
    type: "string",
    minLength: 1,
    maxLength: MaxNameLength,
    pattern: "^[^\\p{Cc}]*\\S[^\\p{Cc}]*$",
    description: "Trimmed; no control characters, and no card data (a card number or a pan:/ucaf: value)."
  }
}).pipe(
  Schema.compose(Schema.Trim),
  Schema.nonEmptyString({ message: () => "Enter a name." }),
  Schema.maxLength(MaxNameLength, { message: () => `A name has at most ${MaxNameLength} characters.` }),
  // Names go into mail headers and pages: control characters (CR/LF above all) have no place there.
  Schema.pattern(/^[^\p{Cc}]*$/u, { message: () => "A name cannot contain control characters." }),
  Schema.filter((s) => !holdsCardData(s), { message: () => "A name cannot hold card data." }),
  Schema.brand("SubscriberName")
)
export type SubscriberName = typeof SubscriberName.Type

export const SubscriptionId = Schema.Int.pipe(Schema.positive(), Schema.brand("SubscriptionId"))
export type SubscriptionId = typeof SubscriptionId.Type

export const SubscriptionStatus = Schema.Literal("pending", "active", "unsubscribed")
export type SubscriptionStatus = typeof SubscriptionStatus.Type
// A confirmation mail gets its links (tokens) only while its subscription is in this state.
export const AwaitsConfirmation: SubscriptionStatus = "pending"

export class Subscription extends Schema.Class<Subscription>("Subscription")({
  id: SubscriptionId,
  name: SubscriberName,
  email: Email,
  feed: FeedName,
  status: SubscriptionStatus,
  createdAt: Schema.DateTimeUtcFromSelf,
  updatedAt: Schema.DateTimeUtcFromSelf
}) {}

export type Event = Data.TaggedEnum<{
  Subscribe: {}
  Confirm: {}
  Unsubscribe: {}
}>
export const Event = Data.taggedEnum<Event>()

// The whole life cycle in one table. A confirmation never revives an unsubscribed address (only a new
// subscribe, with a new double opt-in, does), and subscribing again never downgrades an active one.
export const transition = (status: SubscriptionStatus, event: Event): SubscriptionStatus | undefined =>
  Event.$match(event, {
    Subscribe: (): SubscriptionStatus => (status === "active" ? "active" : "pending"),
    Confirm: (): SubscriptionStatus | undefined => (status === "unsubscribed" ? undefined : "active"),
    Unsubscribe: (): SubscriptionStatus => "unsubscribed"
  })

// Confirmation mails per subscription: a burst of requests, or a bot replaying the form, must not turn the
// service into a mail cannon aimed at someone else's inbox.
export const MailThrottle = { maxMails: 3, window: Duration.hours(24) } as const

export interface SubscribeDecision {
  readonly status: SubscriptionStatus
  readonly updateName: boolean
  readonly queueConfirmation: boolean
  // Counted as a signup of its day on the list owner's chart (docs/decisions/0060-signups-counted-per-day.md).
  readonly signup: boolean
}

// What a subscribe request does to an existing subscription (or to none), given how many confirmation mails
// went to it within the throttle window. A signup is an address that starts to await its confirmation: a new
// one, or one that had left and asks again. Asking again while pending (the form sent twice, a lost mail) or
// while active changes no subscriber's state, and is not counted again.
export const decideSubscribe = (
  existing: SubscriptionStatus | undefined,
  mailsInWindow: number
): SubscribeDecision => {
  const status = existing === undefined ? "pending" : transition(existing, Event.Subscribe())!
  return {
    status,
    updateName: status === "pending",
    queueConfirmation: status === "pending" && mailsInWindow < MailThrottle.maxMails,
    signup: status === "pending" && existing !== "pending"
  }
}
