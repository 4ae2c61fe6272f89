import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { FeedName } from "../../../core/subscriptions/Feed.ts"
import { documented } from "../meta/OpenApiDocument.ts"
import { AdminAuth } from "../pipeline/AdminAuth.ts"
import { BadRequest, NotFound, Unauthorized, UnsupportedMediaType } from "../pipeline/ApiError.ts"
import { ConditionalHeaders } from "../pipeline/Caching.ts"

export const FeedView = Schema.Struct({
  name: Schema.String,
  title: Schema.String,
  created: Schema.String,
  updated: Schema.String
})
const feedExample = {
  name: "releases",
  title: "Release notes",
  created: "2026-01-05T10:00:00.000Z",
  updated: "2026-01-05T10:00:00.000Z"
}
export const FeedEnvelope = Schema.Struct({ feed: FeedView }).annotations({ examples: [{ feed: feedExample }] })
export const FeedList = Schema.Struct({ feeds: Schema.Array(FeedView) }).annotations({
  examples: [{ feeds: [feedExample] }]
})

export const FeedInput = Schema.Struct({
  title: Schema.String.annotations({ jsonSchema: { type: "string", minLength: 1, maxLength: 200 } }).pipe(
    Schema.compose(Schema.Trim),
    Schema.nonEmptyString({ message: () => "Enter a title." }),
    Schema.maxLength(200, { message: () => "A title has at most 200 characters." })
  )
}).annotations({ examples: [{ title: "Release notes" }] as any })
const FeedPath = Schema.Struct({ name: FeedName })

// Reading feeds is public and cacheable; changing them takes the admin key.
export class FeedsApi extends HttpApiGroup.make("feeds")
  .add(
    HttpApiEndpoint.get("list", "/feeds").setHeaders(ConditionalHeaders).addSuccess(FeedList).annotateContext(
      documented("List feeds", "Every feed. Public and cacheable for 60 s; conditional with If-None-Match.")
    )
  )
  .add(
    HttpApiEndpoint.get("get", "/feeds/:name")
      .setPath(FeedPath)
      .setHeaders(ConditionalHeaders)
      .addSuccess(FeedEnvelope)
      .addError(NotFound)
      .annotateContext(
        documented("Get a feed", "One feed by name. Public and cacheable; conditional with If-None-Match.")
      )
  )
  .add(
    HttpApiEndpoint.put("put", "/feeds/:name")
      .setPath(FeedPath)
      .setPayload(Schema.Union(HttpApiSchema.withEncoding(FeedInput, { kind: "UrlParams" }), FeedInput))
      .addSuccess(FeedEnvelope)
      .addSuccess(FeedEnvelope.annotations(HttpApiSchema.annotations({ status: 201 })))
      .addError(BadRequest)
      .addError(UnsupportedMediaType)
      .addError(Unauthorized)
      .middleware(AdminAuth)
      .annotateContext(documented(
        "Create or rename a feed",
        "Creates the feed (201) or changes its title (200). Admin key; a form or JSON body."
      ))
  )
  .add(
    HttpApiEndpoint.del("delete", "/feeds/:name")
      .setPath(FeedPath)
      .addSuccess(HttpApiSchema.NoContent)
      .addError(NotFound)
      .addError(Unauthorized)
      .middleware(AdminAuth)
      .annotateContext(documented("Delete a feed", "Deletes the feed and its subscriptions (admin key)."))
  )
  .annotateContext(OpenApi.annotations({
    description: "The newsletters people subscribe to: public to read, changed with the admin key."
  }))
{}
