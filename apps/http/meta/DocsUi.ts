import { type HttpApi, HttpApiScalar, HttpLayerRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Layer } from "effect"
import { readFileSync } from "node:fs"

// In the bundles, Scalar's script is not part of the code: scripts/build.mjs writes it beside the bundle
// (scalar.js) and leaves this mark where HttpApiScalar puts the script (the same text is in the build script).
// Run from the sources, the page holds the script itself and there is no mark.
const ScalarMark = "/* paysub: the script in scalar.js */"

// The schemas are shown where the operations use them; a list of them beside the operations would double the
// entries a reader scrolls past (docs/decisions/0046).
const ScalarConfig = { hideModels: true }

// The docs UI (Scalar, with its script inline: no CDN) exactly as HttpApiScalar makes it from the HttpApi,
// taken from a router of its own and served by the pipeline's /docs endpoint: the page holds the same OpenAPI
// document as /openapi.json. Made on the first request for it (`Effect.cached` by the caller), so that a
// process nobody asks for its docs never holds the 3.3 MB page.
export const scalarPage = (api: HttpApi.HttpApi.Any) =>
  Effect.gen(function*() {
    const router = yield* HttpLayerRouter.make
    yield* Layer.build(
      HttpApiScalar.layerHttpLayerRouter({ api, path: "/docs", scalar: ScalarConfig }).pipe(
        Layer.provide(Layer.succeed(HttpLayerRouter.HttpRouter, router))
      )
    )
    const page = yield* router.asHttpEffect().pipe(
      Effect.provideService(
        HttpServerRequest.HttpServerRequest,
        HttpServerRequest.fromWeb(new Request("http://localhost/docs"))
      )
    )
    if (page.body._tag !== "Uint8Array") return page
    const html = new TextDecoder().decode(page.body.body)
    if (!html.includes(ScalarMark)) return page
    const script = readFileSync(new URL("./scalar.js", import.meta.url), "utf8")
    return HttpServerResponse.text(html.replace(ScalarMark, () => script), {
      status: page.status,
      headers: page.headers,
      contentType: page.body.contentType
    })
  }).pipe(Effect.scoped, Effect.orDie)
