// Spellings of addresses a webhook must not reach, as a URL's host (`P` is replaced by a port), and public ones
// it may. Each private form is refused at registration and before any connection (test/faults/Ssrf*.test.ts).
export const privateHosts: ReadonlyArray<string> = [
  // IPv4 loopback in every spelling WHATWG URL accepts
  "127.0.0.1",
  "127.0.0.2",
  "127.1",
  "2130706433",
  "0x7f.1",
  "0x7f000001",
  "0177.0.0.1",
  "017700000001",
  "0",
  "0.0.0.0",
  // names of the machine itself
  "localhost",
  "localhost.",
  "LOCALHOST",
  "api.localhost",
  // IPv4 private, link-local, shared, multicast, broadcast, reserved and documentation ranges
  "10.0.0.1",
  "0x0a.0.0.1",
  "012.0.0.1",
  "172.16.0.1",
  "192.168.1.1",
  "169.254.169.254",
  "100.64.0.1",
  "224.0.0.1",
  "255.255.255.255",
  "240.0.0.1",
  "192.0.2.1",
  "198.18.0.1",
  // IPv6 loopback, unspecified, unique-local, link-local, site-local, multicast, documentation, discard
  "[::1]",
  "[0:0:0:0:0:0:0:1]",
  "[::]",
  "[fc00::1]",
  "[fd12:3456::1]",
  "[fe80::1]",
  "[fec0::1]",
  "[ff02::1]",
  "[2001:db8::1]",
  "[100::1]",
  // IPv6 forms that carry a private IPv4 address: mapped, translated, compatible, NAT64, 6to4, Teredo
  "[::ffff:127.0.0.1]",
  "[::ffff:7f00:1]",
  "[0:0:0:0:0:ffff:127.0.0.1]",
  "[::ffff:10.0.0.1]",
  "[::ffff:169.254.169.254]",
  "[::ffff:a9fe:a9fe]",
  "[::ffff:192.168.0.1]",
  "[::127.0.0.1]",
  "[::ffff:0:127.0.0.1]",
  "[64:ff9b::127.0.0.1]",
  "[64:ff9b::a9fe:a9fe]",
  "[64:ff9b:1::7f00:1]",
  "[2002:7f00:1::1]",
  "[2002:a00:1::1]",
  "[2001:0:4136:e378:8000:63bf:80ff:fffe]",
  "[2001:0:a00:1:8000:63bf:3fff:fdd2]"
]

export const publicHosts: ReadonlyArray<string> = [
  "8.8.8.8",
  "134744072",
  "[2606:4700:4700::1111]",
  "[::ffff:8.8.8.8]",
  "[64:ff9b::808:808]",
  "[2002:808:808::1]"
]
