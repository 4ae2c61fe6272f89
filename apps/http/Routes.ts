// The route table of the pipeline: paths as declared in the HttpApi (`/feeds/:name`), matched by exact path
// or by segments, with the methods of each path, so that one lookup tells the route, or that the path is known
// but not with this method (405 + Allow), or unknown (404).
export interface Match<A> {
  readonly value: A
  readonly params: Readonly<Record<string, string>>
}

export interface Router<A> {
  readonly find: (method: string, pathname: string) => Match<A> | undefined
  // The methods the path answers (HEAD with GET, then OPTIONS and, when on, TRACE), or undefined for a path
  // the API does not have.
  readonly allowed: (pathname: string) => ReadonlyArray<string> | undefined
}

interface Path<A> {
  readonly segments: ReadonlyArray<string>
  readonly byMethod: Map<string, A>
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
    const entry = known ?? { segments: path.split("/"), byMethod: new Map<string, A>() }
    entry.byMethod.set(method, value)
    if (known === undefined && dynamic) patterns.push(entry)
    else if (known === undefined) exact.set(path, entry)
  }

  const lookup = (pathname: string): { path: Path<A>; params: Record<string, string> } | undefined => {
    const found = exact.get(pathname)
    if (found !== undefined) return { path: found, params: NoParams }
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
      return { path, params }
    }
    return undefined
  }

  return {
    find: (method, pathname) => {
      const found = lookup(pathname)
      if (found === undefined) return undefined
      const value = found.path.byMethod.get(method) ?? (method === "HEAD" ? found.path.byMethod.get("GET") : undefined)
      return value === undefined ? undefined : { value, params: found.params }
    },
    allowed: (pathname) => {
      const found = lookup(pathname)
      if (found === undefined) return undefined
      const methods = new Set(found.path.byMethod.keys())
      if (methods.has("GET")) methods.add("HEAD")
      return [...order.filter((m) => methods.has(m)), "OPTIONS", ...(options.trace ? ["TRACE"] : [])]
    }
  }
}
