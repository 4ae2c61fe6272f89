// The route table of the pipeline: paths as declared in the HttpApi (`/feeds/:name`), matched by exact path
// or by segments, with the methods of each path, so that one lookup tells the route, or that the path is known
// but not with this method (405 + Allow), or unknown (404).
// A path the API has: its methods (HEAD with GET, then OPTIONS and, when on, TRACE) and the route of a method.
export interface Resource<A> {
  readonly allowed: ReadonlyArray<string>
  readonly route: (method: string) => A | undefined
  readonly params: Readonly<Record<string, string>>
}

export interface Router<A> {
  // The path's resource, or undefined for a path the API does not have.
  readonly lookup: (pathname: string) => Resource<A> | undefined
  // The methods some path takes: what the service as a whole answers.
  readonly methods: ReadonlyArray<string>
}

interface Path<A> {
  readonly segments: ReadonlyArray<string>
  readonly byMethod: Map<string, A>
  allowed: ReadonlyArray<string>
}

const order = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]
const NoParams: Readonly<Record<string, string>> = Object.freeze({})

const decodeSegment = (s: string) => {
  try {
    return decodeURIComponent(s)
  } catch {
    return undefined
  }
}

export const makeRouter = <A>(
  routes: Iterable<{ readonly method: string; readonly path: string; readonly value: A }>,
  options: { readonly trace: boolean }
): Router<A> => {
  const exact = new Map<string, Path<A>>()
  const patterns: Array<Path<A>> = []
  for (const { method, path, value } of routes) {
    const dynamic = path.includes("/:")
    const known = dynamic ? patterns.find((p) => p.segments.join("/") === path) : exact.get(path)
    const entry = known ?? { segments: path.split("/"), byMethod: new Map<string, A>(), allowed: [] }
    entry.byMethod.set(method, value)
    if (known === undefined && dynamic) patterns.push(entry)
    else if (known === undefined) exact.set(path, entry)
  }

  for (const path of [...exact.values(), ...patterns]) {
    const methods = new Set(path.byMethod.keys())
    if (methods.has("GET")) methods.add("HEAD")
    path.allowed = [...order.filter((m) => methods.has(m)), "OPTIONS", ...(options.trace ? ["TRACE"] : [])]
  }
  const resource = (path: Path<A>, params: Readonly<Record<string, string>>): Resource<A> => ({
    allowed: path.allowed,
    route: (method) => path.byMethod.get(method) ?? (method === "HEAD" ? path.byMethod.get("GET") : undefined),
    params
  })
  // Exact paths answer with one resource made once.
  const exactResources = new Map([...exact].map(([pathname, path]) => [pathname, resource(path, NoParams)]))

  const lookup = (pathname: string): Resource<A> | undefined => {
    const found = exactResources.get(pathname)
    if (found !== undefined) return found
    const parts = pathname.split("/")
    next: for (const path of patterns) {
      if (path.segments.length !== parts.length) continue
      const params: Record<string, string> = {}
      for (let i = 0; i < parts.length; i++) {
        const segment = path.segments[i]!
        if (segment.startsWith(":")) {
          const value = parts[i] === "" ? undefined : decodeSegment(parts[i]!)
          if (value === undefined) continue next
          params[segment.slice(1)] = value
        } else if (segment !== parts[i]) continue next
      }
      return resource(path, params)
    }
    return undefined
  }

  const everyMethod = new Set([...exact.values(), ...patterns].flatMap((path) => path.allowed))
  return { lookup, methods: [...order, "OPTIONS", "TRACE"].filter((m) => everyMethod.has(m)) }
}
