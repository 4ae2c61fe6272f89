import ipaddr from "ipaddr.js"

// Which addresses a webhook may reach: only ipaddr.js's `unicast`, that is the public internet. An IPv6 address
// that carries an IPv4 one (mapped, translated, compatible, NAT64, 6to4, Teredo) is judged by what it carries,
// since a gateway or the kernel may deliver it there; a form whose carried address cannot be found (local-use
// NAT64, whose prefix length is the operator's) is refused whole.
const v4Public = (address: ipaddr.IPv4) => address.range() === "unicast"

const v4Of = (high: number, low: number) => ipaddr.fromByteArray([high >> 8, high & 255, low >> 8, low & 255])

const v6Public = (address: ipaddr.IPv6): boolean => {
  const p = address.parts
  const carries = (v4: ipaddr.IPv4 | ipaddr.IPv6) => v4.kind() === "ipv4" && v4Public(v4 as ipaddr.IPv4)
  const compatible = p.slice(0, 6).every((part) => part === 0)
  if (compatible) return carries(v4Of(p[6]!, p[7]!))
  switch (address.range()) {
    case "unicast":
      return true
    case "rfc6145":
      return carries(v4Of(p[6]!, p[7]!))
    case "rfc6052":
      return p[2] === 0 && carries(v4Of(p[6]!, p[7]!))
    case "6to4":
      return carries(v4Of(p[1]!, p[2]!))
    case "teredo":
      return carries(v4Of(p[2]!, p[3]!)) && carries(v4Of(p[6]! ^ 0xffff, p[7]! ^ 0xffff))
    default:
      return false
  }
}

// An address as node:dns or node:net gives it (IPv6 with or without brackets); anything unparsable is not public.
export const isPublicAddress = (ip: string): boolean => {
  const bare = ip.replace(/^\[|\]$/g, "")
  if (!ipaddr.isValid(bare)) return false
  const address = ipaddr.process(bare)
  return address.kind() === "ipv4" ? v4Public(address as ipaddr.IPv4) : v6Public(address as ipaddr.IPv6)
}

// A host name as WHATWG URL leaves it (IPv4 in any spelling already dotted-quad, IPv6 compressed in brackets),
// without the root's trailing dot; names under `localhost` are the machine itself (RFC 6761) whatever DNS says.
export const hostOf = (url: URL): string => url.hostname.replace(/^\[|\]$/g, "").replace(/\.$/, "").toLowerCase()

export const isLocalName = (host: string): boolean => host === "localhost" || host.endsWith(".localhost")
