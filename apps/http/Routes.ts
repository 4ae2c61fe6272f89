import type { HttpApi } from "@effect/platform"

// The method table of an HttpApi, so that the edge can answer OPTIONS, 405 + Allow and TRACE for every
// path the API knows, which the router alone cannot (it only knows "no route for this method and path").
export interface RouteTable {
  readonly allowed: (pathname: string) => ReadonlyArray<string> | undefined
}

const pattern = (path: string) =>
  new RegExp(
    `^${
      path.split("/").map((s) => (s.startsWith(":") ? "[^/]+" : s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))).join("/")
    }$`
  )

export const routeTable = (api: HttpApi.HttpApi.Any, options: { readonly trace: boolean }): RouteTable => {
  const entries = new Map<string, { regex: RegExp; methods: Set<string> }>()
  for (const group of Object.values((api as unknown as HttpApi.HttpApi.AnyWithProps).groups)) {
    for (const endpoint of Object.values(group.endpoints)) {
      const entry = entries.get(endpoint.path) ?? { regex: pattern(endpoint.path), methods: new Set<string>() }
      entry.methods.add(endpoint.method)
      if (endpoint.method === "GET") entry.methods.add("HEAD")
      entries.set(endpoint.path, entry)
    }
  }
  const order = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]
  return {
    allowed: (pathname) => {
      const methods = new Set<string>()
      for (const entry of entries.values()) {
        if (entry.regex.test(pathname)) entry.methods.forEach((m) => methods.add(m))
      }
      if (methods.size === 0) return undefined
      return [...order.filter((m) => methods.has(m)), "OPTIONS", ...(options.trace ? ["TRACE"] : [])]
    }
  }
}
