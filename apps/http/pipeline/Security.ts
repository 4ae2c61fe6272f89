import { HttpApiMiddleware } from "@effect/platform"
import { Context, Effect, FiberRef, Redacted } from "effect"
import type { Step } from "./Endpoint.ts"
import type { IncomingRequest } from "./Pipeline.ts"

const BearerPrefixLength = "Bearer ".length

// Who each request was authenticated as (what its security middleware provides: the API client), for the access
// line; kept beside the request rather than in a FiberRef, whose every set copies the fiber's refs.
export const authenticatedAs = new WeakMap<IncomingRequest, unknown>()

// The context a request runs on once its credential is accepted: the group's, with what the middleware provides.
// Made once per provided value (an API client: its id and name) and set on the request's fiber for the rest of
// it, instead of Effect.provideService, which copies the group's few dozen services and sets the fiber's refs
// twice on every request. At most MaxContexts are kept; past that the table starts again.
const MaxContexts = 1024
const contextsFor = (context: Context.Context<never>, provides: Context.Tag<any, any>) => {
  const made = new Map<string, Context.Context<never>>()
  return (value: unknown) => {
    const key = JSON.stringify(value)
    let found = made.get(key)
    if (found === undefined) {
      if (made.size >= MaxContexts) made.clear()
      found = Context.add(context, provides, value)
      made.set(key, found)
    }
    return found
  }
}

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
    const [first, ...others] = schemes.map(([key]) => service[key]!)
    const authenticate = (request: IncomingRequest) => {
      const credential = Redacted.make((request.headers.authorization ?? "").slice(BearerPrefixLength))
      return others.reduce((effect, next) => Effect.catchAll(effect, () => next(credential)), first!(credential))
    }
    const inner = run
    const provides = tag.provides as Context.Tag<any, any> | undefined
    const contextOf = provides === undefined ? undefined : contextsFor(context, provides)
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
          return Effect.zipRight(
            FiberRef.update(
              FiberRef.currentContext,
              // A span (with a tracer on) is in the context too: kept, by adding to the fiber's own.
              (current) => current === context ? contextOf!(value) : Context.add(current, provides, value)
            ),
            inner(request, params, query)
          )
        })
  }
  return run
}
