import { FetchHttpClient, HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { Effect, Layer, Redacted } from "effect"
import { Api } from "./Api.ts"

// A typed client of the service for Node and Deno, derived from the same HttpApi the server's pipeline is:
// every operation, payload, success and documented error comes from the spec. The Bearer key, when given,
// goes on every request (the merchant API takes a client's `sk_...`, the admin endpoints ADMIN_API_KEY).
//
//   const client = yield* makeClient("http://localhost:3000", Redacted.make("sk_..."))
//   const { payment_transfer } = yield* client.transfers.get({ path: { id }, headers: {} })
export const makeClient = (baseUrl: string, apiKey?: Redacted.Redacted<string>) =>
  HttpApiClient.make(Api, {
    baseUrl,
    ...(apiKey === undefined
      ? {}
      : { transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(Redacted.value(apiKey))) })
  })

// The HTTP client the typed client sends with: the platform's fetch, on Node and on Deno alike.
export const layer: Layer.Layer<HttpClient.HttpClient> = FetchHttpClient.layer

export type Client = Effect.Effect.Success<ReturnType<typeof makeClient>>
