import {
  type HttpApi,
  HttpApiBuilder,
  type HttpApiEndpoint,
  type HttpApiGroup,
  type HttpApiMiddleware
} from "@effect/platform"
import { Chunk, Context, Effect, identity, Layer, type Scope } from "effect"
import { pipeArguments } from "effect/Pipeable"

// A group's handlers as the pipeline (apps/http/pipeline/Pipeline.ts) runs them: written with the same builder and the
// same types as HttpApiBuilder.group (`handlers.handle("create", ({ payload }) => ...)`), so the spec checks
// every handler's input and output, but kept as values for the pipeline instead of routes of an HttpRouter.
export interface GroupHandlers {
  readonly group: HttpApiGroup.HttpApiGroup.AnyWithProps
  readonly items: ReadonlyArray<HttpApiBuilder.Handlers.Item<unknown, unknown>>
  // The services the handlers were built with: every request of the group runs on them.
  readonly context: Context.Context<never>
}

export const groupTag = <ApiId extends string, Name extends string>(apiId: ApiId, name: Name) =>
  Context.GenericTag<HttpApiGroup.ApiGroup<ApiId, Name>, GroupHandlers>(`paysub/ApiHandlers/${apiId}/${name}`)

const HandlersProto = {
  [HttpApiBuilder.HandlersTypeId]: { _Endpoints: identity },
  pipe(...args: Array<unknown>) {
    return pipeArguments(this, args as unknown as IArguments)
  },
  handle(this: Builder, name: string, handler: any, options?: { readonly uninterruptible?: boolean | undefined }) {
    return add(this, name, handler, false, options)
  },
  handleRaw(this: Builder, name: string, handler: any, options?: { readonly uninterruptible?: boolean | undefined }) {
    return add(this, name, handler, true, options)
  }
}

interface Builder {
  readonly group: HttpApiGroup.HttpApiGroup.AnyWithProps
  readonly handlers: Chunk.Chunk<HttpApiBuilder.Handlers.Item<unknown, unknown>>
}

const make = (group: Builder["group"], handlers: Builder["handlers"]) =>
  Object.assign(Object.create(HandlersProto), { group, handlers })

const add = (
  self: Builder,
  name: string,
  handler: any,
  withFullRequest: boolean,
  options?: { readonly uninterruptible?: boolean | undefined }
) =>
  make(
    self.group,
    Chunk.append(self.handlers, {
      endpoint: self.group.endpoints[name]!,
      handler,
      withFullRequest,
      uninterruptible: options?.uninterruptible ?? false
    })
  )

export const group = <
  ApiId extends string,
  Groups extends HttpApiGroup.HttpApiGroup.Any,
  ApiError,
  ApiR,
  const Name extends HttpApiGroup.HttpApiGroup.Name<Groups>,
  Return
>(
  api: HttpApi.HttpApi<ApiId, Groups, ApiError, ApiR>,
  groupName: Name,
  build: (
    handlers: HttpApiBuilder.Handlers.FromGroup<ApiError, ApiR, HttpApiGroup.HttpApiGroup.WithName<Groups, Name>>
  ) => HttpApiBuilder.Handlers.ValidateReturn<Return>
): Layer.Layer<
  HttpApiGroup.ApiGroup<ApiId, Name>,
  HttpApiBuilder.Handlers.Error<Return>,
  Exclude<
    | HttpApiBuilder.Handlers.Context<Return>
    | HttpApiGroup.HttpApiGroup.MiddlewareWithName<Groups, Name>,
    Scope.Scope
  >
> =>
  Layer.effect(
    groupTag(api.identifier, groupName),
    Effect.gen(function*() {
      const group = (api as unknown as HttpApi.HttpApi.AnyWithProps).groups[groupName]!
      const result = build(make(group, Chunk.empty()))
      const built: Builder = Effect.isEffect(result) ? yield* (result as Effect.Effect<any, any, any>) : result
      const context = yield* Effect.context<never>()
      return { group, items: Chunk.toReadonlyArray(built.handlers), context }
    })
  ) as any

// The middleware tags an endpoint of the group needs, in the order HttpApiBuilder runs them: the endpoint's
// own first, then the group's, each list in reverse order of declaration (the last added wraps the others).
export const middlewaresOf = (
  group: HttpApiGroup.HttpApiGroup.AnyWithProps,
  endpoint: HttpApiEndpoint.HttpApiEndpoint.AnyWithProps
): ReadonlyArray<HttpApiMiddleware.TagClassAny> => {
  const byKey = new Map<string, HttpApiMiddleware.TagClassAny>()
  for (const tag of group.middlewares) byKey.set(tag.key, tag)
  for (const tag of endpoint.middlewares) byKey.set(tag.key, tag)
  return [...byKey.values()].reverse()
}
