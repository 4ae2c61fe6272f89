// What every SessionStore must do (core/console/SessionStore.ts), and the rules core/console/Sessions.ts keeps
// over it: a session found by the hash of its id, never the key; idle sessions end; a rolled or revoked key
// ends its sessions. Run on each storage as the app composes it (apps/compose/Storage.ts), one database per
// storage, so every test uses clients and sessions of its own.
import { assert, describe, layer } from "@effect/vitest"
import { DateTime, Duration, Effect, Layer, Option, Redacted, TestClock } from "effect"
import { layer as CryptoTokens } from "../../adapters/crypto/CryptoTokens.ts"
import type { Storage } from "../../apps/compose/Storage.ts"
import { ConsoleSettings } from "../../core/console/ConsoleSettings.ts"
import { Session, type SessionIdHash } from "../../core/console/Session.ts"
import { Sessions } from "../../core/console/Sessions.ts"
import { SessionStore } from "../../core/console/SessionStore.ts"
import { ClientKeys } from "../../core/payments/ClientKeys.ts"
import { Clients } from "../../core/payments/Clients.ts"
import { Tokens } from "../../core/shared/Tokens.ts"

const AdminKey = "admin-key-for-the-session-contract"
const at = (ms: number) => DateTime.unsafeMake(Date.UTC(2026, 0, 1) + ms)
const hash = (label: string) => `hash-${label}-${Math.random().toString(36).slice(2)}` as SessionIdHash
const session = (label: string, fields: Partial<Session> = {}) =>
  new Session({
    idHash: hash(label),
    role: "admin",
    csrfToken: `csrf-${label}`,
    createdAt: at(0),
    lastSeenAt: at(0),
    ...fields
  })

export const sessionStoreContract = (name: string, storage: () => Layer.Layer<Storage, unknown>) =>
  describe(`SessionStore contract: ${name}`, () => {
    const services = Layer.merge(Sessions.Default, ClientKeys.Default).pipe(
      Layer.provideMerge(Clients.Default),
      Layer.provide(Layer.succeed(ConsoleSettings, {
        idleTimeout: Duration.minutes(30),
        adminKeyHash: Option.some(Effect.runSync(
          Effect.map(Tokens, (t) => t.hash(AdminKey)).pipe(
            Effect.provide(CryptoTokens)
          )
        ))
      })),
      Layer.provideMerge(CryptoTokens),
      Layer.provideMerge(storage())
    )

    layer(services, { timeout: 60_000 })((it) => {
      const merchant = Effect.flatMap(Clients, (clients) => clients.create("merchant"))

      it.effect("a session is kept whole, found by its hash, touched and removed", () =>
        Effect.gen(function*() {
          const store = yield* SessionStore
          const { id } = yield* merchant
          const kept = session("kept", { role: "merchant", clientId: id, createdAt: at(1), lastSeenAt: at(2) })
          yield* store.insert(kept)
          const found = yield* store.find(kept.idHash)
          assert.deepStrictEqual(Option.map(found, (s) => ({ ...s })), Option.some({ ...kept }))
          assert.isTrue(Option.isNone(yield* store.find(hash("unknown"))))
          yield* store.touch(kept.idHash, at(60_000))
          const touched = Option.getOrThrow(yield* store.find(kept.idHash))
          assert.strictEqual(DateTime.toEpochMillis(touched.lastSeenAt), DateTime.toEpochMillis(at(60_000)))
          assert.strictEqual(DateTime.toEpochMillis(touched.createdAt), DateTime.toEpochMillis(at(1)))
          yield* store.remove(kept.idHash)
          assert.isTrue(Option.isNone(yield* store.find(kept.idHash)))
        }))

      it.effect("a client's sessions are removed together; others stay", () =>
        Effect.gen(function*() {
          const store = yield* SessionStore
          const one = (yield* merchant).id
          const other = (yield* merchant).id
          const mine = [
            session("a", { role: "merchant", clientId: one }),
            session("b", { role: "merchant", clientId: one })
          ]
          const theirs = session("c", { role: "merchant", clientId: other })
          const admin = session("admin")
          yield* Effect.forEach([...mine, theirs, admin], store.insert)
          assert.strictEqual(yield* store.removeForClient(one), 2)
          for (const s of mine) assert.isTrue(Option.isNone(yield* store.find(s.idHash)))
          assert.isTrue(Option.isSome(yield* store.find(theirs.idHash)))
          assert.isTrue(Option.isSome(yield* store.find(admin.idHash)))
        }))

      it.effect("sessions last seen before a time are removed; the rest stay", () =>
        Effect.gen(function*() {
          const store = yield* SessionStore
          yield* store.removeSeenBefore(at(Duration.toMillis(Duration.days(3650))))
          const old = session("old", { lastSeenAt: at(1_000) })
          const edge = session("edge", { lastSeenAt: at(2_000) })
          const fresh = session("fresh", { lastSeenAt: at(3_000) })
          yield* Effect.forEach([old, edge, fresh], store.insert)
          assert.strictEqual(yield* store.removeSeenBefore(at(2_000)), 1)
          assert.isTrue(Option.isNone(yield* store.find(old.idHash)))
          assert.isTrue(Option.isSome(yield* store.find(edge.idHash)))
          assert.isTrue(Option.isSome(yield* store.find(fresh.idHash)))
        }))

      it.effect("signing in keeps who signed in, not the key; the cookie's id is not what is stored", () =>
        Effect.gen(function*() {
          const sessions = yield* Sessions
          const store = yield* SessionStore
          const created = yield* merchant
          const { id, session: made } = yield* sessions.signIn(created.apiKey)
          assert.strictEqual(made.role, "merchant")
          assert.strictEqual(made.clientId, created.id)
          assert.notStrictEqual(made.idHash as string, Redacted.value(id))
          const stored = Option.getOrThrow(yield* store.find(made.idHash))
          assert.notInclude(JSON.stringify(stored), Redacted.value(created.apiKey))
          assert.notInclude(JSON.stringify(stored), Redacted.value(id))
          const current = yield* sessions.current(Redacted.value(id))
          assert.strictEqual(Option.getOrThrow(current).clientId, created.id)
          const admin = yield* sessions.signIn(Redacted.make(AdminKey))
          assert.strictEqual(admin.session.role, "admin")
          assert.isUndefined(admin.session.clientId)
        }))

      it.effect("a wrong key, or a merchant key's near miss, is refused with one error", () =>
        Effect.gen(function*() {
          const sessions = yield* Sessions
          const created = yield* merchant
          for (const key of ["", "sk_nothing", `${Redacted.value(created.apiKey)}x`, `${AdminKey} `]) {
            const refused = yield* Effect.flip(sessions.signIn(Redacted.make(key)))
            assert.strictEqual(refused._tag, "SignInRefused")
          }
        }))

      it.effect("a session idle for the timeout has ended; using it keeps it alive", () =>
        Effect.gen(function*() {
          const sessions = yield* Sessions
          const { id } = yield* sessions.signIn((yield* merchant).apiKey)
          const cookie = Redacted.value(id)
          yield* TestClock.adjust(Duration.minutes(29))
          assert.isTrue(Option.isSome(yield* sessions.current(cookie)))
          yield* TestClock.adjust(Duration.minutes(29))
          assert.isTrue(Option.isSome(yield* sessions.current(cookie)), "29 minutes after it was last used")
          yield* TestClock.adjust(Duration.minutes(30))
          assert.isTrue(Option.isNone(yield* sessions.current(cookie)), "30 minutes idle")
          assert.isTrue(Option.isNone(yield* sessions.current(cookie)))
        }))

      it.effect("signing out ends the session", () =>
        Effect.gen(function*() {
          const sessions = yield* Sessions
          const { id } = yield* sessions.signIn((yield* merchant).apiKey)
          yield* sessions.signOut(Redacted.value(id))
          assert.isTrue(Option.isNone(yield* sessions.current(Redacted.value(id))))
        }))

      it.effect("a changed admin key ends the list owner's sessions of the old one", () =>
        Effect.gen(function*() {
          const sessions = yield* Sessions
          const { id } = yield* sessions.signIn(Redacted.make(AdminKey))
          const withKey = (key: Option.Option<string>) =>
            Effect.provide(
              Sessions,
              Sessions.Default.pipe(Layer.provide(Layer.succeed(ConsoleSettings, {
                idleTimeout: Duration.minutes(30),
                adminKeyHash: Option.map(
                  key,
                  (k) => Effect.runSync(Effect.map(Tokens, (t) => t.hash(k)).pipe(Effect.provide(CryptoTokens)))
                )
              })))
            )
          const same = yield* withKey(Option.some(AdminKey))
          assert.isTrue(Option.isSome(yield* same.current(Redacted.value(id))), "the same key, after a restart")
          const changed = yield* withKey(Option.some(`${AdminKey}-rolled`))
          assert.isTrue(Option.isNone(yield* changed.current(Redacted.value(id))), "a new key")
          assert.isTrue(Option.isNone(yield* same.current(Redacted.value(id))), "ended, not only refused")
          const { id: other } = yield* sessions.signIn(Redacted.make(AdminKey))
          assert.isTrue(Option.isNone(yield* (yield* withKey(Option.none())).current(Redacted.value(other))), "no key")
        }))

      it.effect("a rotated or revoked key ends its client's sessions, and only those", () =>
        Effect.gen(function*() {
          const sessions = yield* Sessions
          const keys = yield* ClientKeys
          const rotated = yield* merchant
          const revoked = yield* merchant
          const bystander = yield* merchant
          const [a, b, c] = yield* Effect.forEach([rotated, revoked, bystander], (m) => sessions.signIn(m.apiKey))
          yield* keys.rotateKey(rotated.id)
          yield* keys.revoke(revoked.id)
          assert.isTrue(Option.isNone(yield* sessions.current(Redacted.value(a!.id))))
          assert.isTrue(Option.isNone(yield* sessions.current(Redacted.value(b!.id))))
          assert.isTrue(Option.isSome(yield* sessions.current(Redacted.value(c!.id))))
        }))
    })
  })
