import { randomFillSync } from "node:crypto"

// Bytes from the operating system's CSPRNG, drawn 4 KiB at a time and handed out once each, as Node does for
// crypto.randomUUID. One draw is a system call of about 5 µs on the benchmark's virtual machine, whatever its
// size, and the outbox made two per mail for its tokens (about 30 µs of the main thread per mail, with the
// event ids). A slice handed out is copied and then zeroed in the pool.
const PoolSize = 4096
const pool = Buffer.alloc(PoolSize)
let offset = PoolSize

export const randomBytes = (size: number): Buffer => {
  if (size > PoolSize) return randomFillSync(Buffer.alloc(size))
  if (offset + size > PoolSize) {
    randomFillSync(pool)
    offset = 0
  }
  const bytes = Buffer.from(pool.subarray(offset, offset + size))
  pool.fill(0, offset, offset + size)
  offset += size
  return bytes
}
