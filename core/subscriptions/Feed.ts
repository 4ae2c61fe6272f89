import { Schema } from "effect"

export const FeedName = Schema.String.pipe(
  Schema.pattern(/^[a-z0-9][a-z0-9-]{0,63}$/, {
    message: () => "A feed name is 1-64 characters: lowercase letters, digits and hyphens."
  }),
  Schema.brand("FeedName")
)
export type FeedName = typeof FeedName.Type

export const DefaultFeed = FeedName.make("default")

export class Feed extends Schema.Class<Feed>("Feed")({
  name: FeedName,
  title: Schema.String,
  createdAt: Schema.DateTimeUtcFromSelf,
  updatedAt: Schema.DateTimeUtcFromSelf
}) {}
