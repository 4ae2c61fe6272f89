import { DateTime, Duration } from "effect"

// Work a worker claimed and has not finished, kept in its memory while it runs. A pass that fails (the database
// went away) leaves its claims here instead of to their lease: the worker is alive and still holds them, so its
// next pass that the database answers takes them up again first. A claim is taken up again while at least half
// of its lease is left (a lease outlasts one attempt several times over); one with less is dropped and comes back
// when its lease ends, as a dead process's claims do. Work whose outcome was delivered but whose mark did not
// commit is `accepted`: taken up again, it is marked, not sent again.
export interface HeldClaim<A> {
  readonly item: A
  readonly accepted: boolean
}

export interface HeldClaims<A, K> {
  // A pass's new claims, now its own.
  readonly hold: (items: ReadonlyArray<A>, leaseUntil: DateTime.Utc) => void
  // Marked in the database (sent, delivered, failed, settled): no longer held.
  readonly done: (keys: ReadonlyArray<K>) => void
  // Delivered, but not yet marked.
  readonly accepted: (keys: ReadonlyArray<K>) => void
  // What a failed pass held and did not finish, free for the next pass.
  readonly release: (keys: ReadonlyArray<K>) => void
  // Up to `limit` free claims whose lease leaves time for another attempt, now the caller's; drops the others.
  readonly take: (now: DateTime.Utc, limit: number) => ReadonlyArray<HeldClaim<A>>
  // Drops the free claims whose lease no longer leaves time for another attempt.
  readonly expire: (now: DateTime.Utc) => void
  readonly free: () => number
  readonly size: () => number
}

export const makeHeldClaims = <A, K>(key: (item: A) => K, lease: Duration.Duration): HeldClaims<A, K> => {
  const half = Duration.toMillis(lease) / 2
  const held = new Map<K, { item: A; leaseUntil: number; accepted: boolean; busy: boolean }>()
  return {
    hold: (items, leaseUntil) => {
      const until = DateTime.toEpochMillis(leaseUntil)
      for (const item of items) held.set(key(item), { item, leaseUntil: until, accepted: false, busy: true })
    },
    done: (keys) => keys.forEach((k) => held.delete(k)),
    accepted: (keys) =>
      keys.forEach((k) => {
        const claim = held.get(k)
        if (claim !== undefined) claim.accepted = true
      }),
    release: (keys) =>
      keys.forEach((k) => {
        const claim = held.get(k)
        if (claim !== undefined) claim.busy = false
      }),
    take: (now, limit) => {
      const at = DateTime.toEpochMillis(now)
      const taken: Array<HeldClaim<A>> = []
      for (const [k, claim] of held) {
        if (claim.busy) continue
        if (claim.leaseUntil - at < half) held.delete(k)
        else if (taken.length < limit) {
          claim.busy = true
          taken.push({ item: claim.item, accepted: claim.accepted })
        }
      }
      return taken
    },
    expire: (now) => {
      const at = DateTime.toEpochMillis(now)
      for (const [k, claim] of held) if (!claim.busy && claim.leaseUntil - at < half) held.delete(k)
    },
    size: () => held.size,
    free: () => {
      let n = 0
      for (const claim of held.values()) if (!claim.busy) n++
      return n
    }
  }
}
