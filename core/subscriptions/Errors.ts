import { Schema } from "effect"
import { FeedName } from "./Feed.ts"

export class FeedNotFound extends Schema.TaggedError<FeedNotFound>()("FeedNotFound", { feed: FeedName }) {}

export class SubscriptionNotFound extends Schema.TaggedError<SubscriptionNotFound>()("SubscriptionNotFound", {
  id: Schema.Number
}) {}

// One error for unknown, used and expired tokens: telling them apart would help whoever guesses tokens.
export class InvalidToken extends Schema.TaggedError<InvalidToken>()("InvalidToken", {}) {}

export class MailDeliveryFailed extends Schema.TaggedError<MailDeliveryFailed>()("MailDeliveryFailed", {
  reason: Schema.String,
  permanent: Schema.Boolean
}) {}
