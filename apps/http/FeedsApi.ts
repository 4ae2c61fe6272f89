import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import { FeedName } from "../../core/Feed.ts"
import { AdminAuth } from "./AdminAuth.ts"
import { BadRequest, NotFound, Unauthorized, UnsupportedMediaType } from "./ApiError.ts"
import { ConditionalHeaders } from "./Caching.ts"

export const FeedView = Schema.Struct({
  name: Schema.String,
  title: Schema.String,
  created: Schema.String,
  updated: Schema.String
})
export const FeedEnvelope = Schema.Struct({ feed: FeedView })
export const FeedList = Schema.Struct({ feeds: Schema.Array(FeedView) })

const FeedInput = Schema.Struct({
  title: Schema.Trim.pipe(
    Schema.nonEmptyString({ message: () => "Enter a title." }),
    Schema.maxLength(200, { message: () => "A title has at most 200 characters." })
  )
})
const FeedPath = Schema.Struct({ name: FeedName })

// Reading feeds is public and cacheable; changing them takes the admin key.
export class FeedsApi extends HttpApiGroup.make("feeds")
  .add(HttpApiEndpoint.get("list", "/feeds").setHeaders(ConditionalHeaders).addSuccess(FeedList))
  .add(
    HttpApiEndpoint.get("get", "/feeds/:name")
      .setPath(FeedPath)
      .setHeaders(ConditionalHeaders)
      .addSuccess(FeedEnvelope)
      .addError(NotFound)
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
  )
  .add(
    HttpApiEndpoint.del("delete", "/feeds/:name")
      .setPath(FeedPath)
      .addSuccess(HttpApiSchema.NoContent)
      .addError(NotFound)
      .addError(Unauthorized)
      .middleware(AdminAuth)
  )
{}
