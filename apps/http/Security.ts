import { HttpApiMiddleware } from "@effect/platform"
import { Context, Effect, Redacted } from "effect"
import type { Step } from "./Endpoint.ts"
import type { IncomingRequest } from "./Pipeline.ts"

const BearerPrefixLength = "Bearer ".length

// Who each request was authenticated as (what its security middleware provides: the API client), for the access
// line; kept beside the request rather than in a FiberRef, whose every set copies the fiber's refs.
export const authenticatedAs = new WeakMap<IncomingRequest, unknown>()

// An endpoint's security middleware, as HttpApiBuilder applies it: each tag's implementation (a service of the
// group's context) is given the request's Bearer credential, and what it provides (the API client) is
// provided to the step it wraps. Only Bearer credentials and security middleware are supported: a rule that is
// not about who is asking belongs in the spec (a schema, a media type), where the pipeline derives it from.
// The wrapped step is built only once the credential is accepted: no handler runs for a refused request.
export const secured = (
  step: Step,
  tags: ReadonlyArray<HttpApiMiddleware.TagClassAny>,
  context: Context.Context<never>
): Step => {
  let run = step
  for (const tag of tags) {
    if (!(HttpApiMiddleware.SecurityTypeId in tag)) {
      throw new Error(`${tag.key}: the pipeline runs security middleware only; declare other rules in the spec`)
    }
    const service = Context.unsafeGet(context, tag as any) as Record<string, (c: unknown) => Effect.Effect<any>>
    const schemes = Object.entries((tag as HttpApiMiddleware.TagClassSecurityAny).security)
    for (const [, security] of schemes) {
      if (security._tag !== "Bearer") throw new Error(`${tag.key}: the pipeline reads Bearer credentials only`)
    }
    const authenticate = (request: IncomingRequest) => {
      const credential = Redacted.make((request.headers.authorization ?? "").slice(BearerPrefixLength))
      return schemes.slice(1).reduce(
        (effect, [key]) => Effect.catchAll(effect, () => service[key]!(credential)),
        service[schemes[0]![0]]!(credential)
      )
    }
    const inner = run
    const provides = tag.provides as Context.Tag<any, any> | undefined
    run = tag.optional
      ? (request, params, query) =>
        Effect.matchEffect(authenticate(request), {
          onFailure: () => inner(request, params, query),
          onSuccess: (value) =>
            provides === undefined
              ? inner(request, params, query)
              : Effect.provideService(inner(request, params, query), provides, value)
        })
      : provides === undefined
      ? (request, params, query) => Effect.flatMap(authenticate(request), () => inner(request, params, query))
      : (request, params, query) =>
        Effect.flatMap(authenticate(request), (value) => {
          authenticatedAs.set(request, value)
          return Effect.provideService(inner(request, params, query), provides, value)
        })
  }
  return run
}
