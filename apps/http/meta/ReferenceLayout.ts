// The reference in the order a reader works (docs/decisions/0046): payments, events and webhooks,
// subscriptions and feeds, operations, then the HTTP semantics every path shares. HEAD, OPTIONS and TRACE stay
// on every path of the document, for the linters, Prism and the contract checks; the docs UI (Scalar) shows
// them on one path only, in that last section, and skips the rest by x-scalar-ignore, which only Scalar reads.
export const HttpSemantics = {
  tag: "http",
  displayName: "HTTP semantics",
  path: "/merchant/transfers/payment/{id}",
  description: [
    "What every path answers, shown here on one of them (the document states it on every path):",
    "- **HEAD**, wherever GET is served: the GET's status and header fields, Content-Length included, without the body.",
    "- **OPTIONS**: 204 with `Allow`, the methods the path takes. From an origin in SUBSCRIBE_ALLOWED_ORIGINS, POST /subscribe's preflight also answers CORS.",
    "- **TRACE**: the request as the server received it, as `message/http`, for debugging proxies; 405 where the operator turned it off (HTTP_TRACE=off).",
    "- **405**: a method the path does not take answers `405 method_not_allowed` with `Allow`, in the one error body; a path that is not one answers `404 route_not_found`.",
    "- **304**: a GET that sends an `ETag` (transfers, refunds, feeds, subscriptions, webhook endpoints, events) answers `304 Not Modified` when `If-None-Match` matches it; the feeds also send `Last-Modified` and honour `If-Modified-Since`. HEAD revalidates the same way."
  ].join("\n")
} as const

const Groups: ReadonlyArray<{ readonly name: string; readonly tags: ReadonlyArray<readonly [string, string]> }> = [
  { name: "Payments", tags: [["transfers", "Transfers"], ["refunds", "Refunds"]] },
  { name: "Events and webhooks", tags: [["webhooks", "Webhook endpoints and events"]] },
  { name: "Subscriptions and feeds", tags: [["subscriptions", "Subscriptions"], ["feeds", "Feeds"]] },
  { name: "Operations", tags: [["meta", "Health, metrics and documents"]] },
  { name: HttpSemantics.displayName, tags: [[HttpSemantics.tag, HttpSemantics.displayName]] }
]

const plumbing = ["head", "options", "trace"]
const shownSummaries: Readonly<Record<string, string>> = {
  head: "HEAD: the header fields of a GET",
  options: "OPTIONS: the methods of a path",
  trace: "TRACE: the request echoed"
}

export const readerLayout = (spec: Record<string, any>): Record<string, any> => {
  for (const [path, item] of Object.entries<any>(spec.paths)) {
    for (const method of plumbing) {
      const operation = item[method]
      if (operation === undefined) continue
      if (path !== HttpSemantics.path) {
        operation["x-scalar-ignore"] = true
        continue
      }
      operation.tags = [HttpSemantics.tag]
      operation.summary = shownSummaries[method]
    }
  }
  const declared = new Map<string, any>((spec.tags ?? []).map((tag: any) => [tag.name, tag]))
  declared.set(HttpSemantics.tag, { name: HttpSemantics.tag, description: HttpSemantics.description })
  spec.tags = Groups.flatMap((group) =>
    group.tags.map(([name, displayName]) => ({ ...declared.get(name), name, "x-displayName": displayName }))
  )
  spec["x-tagGroups"] = Groups.map((group) => ({ name: group.name, tags: group.tags.map(([name]) => name) }))
  return spec
}
