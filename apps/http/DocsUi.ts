import { type HttpApi, HttpApiScalar, HttpLayerRouter, HttpServerRequest } from "@effect/platform"
import { Effect, Layer } from "effect"

// The docs UI (Scalar, with its script inline: no CDN) exactly as HttpApiScalar makes it from the HttpApi, taken
// once at start from a router of its own and served by the pipeline's /docs endpoint: the page holds the same
// OpenAPI document as /openapi.json.
export const scalarPage = (api: HttpApi.HttpApi.Any) =>
  Effect.gen(function*() {
    const router = yield* HttpLayerRouter.make
    yield* Layer.build(
      HttpApiScalar.layerHttpLayerRouter({ api, path: "/docs" }).pipe(
        Layer.provide(Layer.succeed(HttpLayerRouter.HttpRouter, router))
      )
    )
    return yield* router.asHttpEffect().pipe(
      Effect.provideService(
        HttpServerRequest.HttpServerRequest,
        HttpServerRequest.fromWeb(new Request("http://localhost/docs"))
      )
    )
  }).pipe(Effect.scoped, Effect.orDie)
