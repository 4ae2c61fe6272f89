import { DateTime, Effect, Layer, Option } from "effect"
import { Session } from "../../core/console/Session.ts"
import { SessionStore } from "../../core/console/SessionStore.ts"

// The console's sessions in this process's memory, for `DATABASE_URL=memory:` (one process, so one map).
export const layer = Layer.sync(SessionStore, () => {
  const sessions = new Map<string, Session>()
  const removeWhere = (drop: (s: Session) => boolean) =>
    Effect.sync(() => {
      let removed = 0
      for (const [id, s] of sessions) {
        if (drop(s)) {
          sessions.delete(id)
          removed++
        }
      }
      return removed
    })
  return SessionStore.of({
    insert: (session) => Effect.sync(() => void sessions.set(session.idHash, session)),
    find: (idHash) => Effect.sync(() => Option.fromNullable(sessions.get(idHash))),
    touch: (idHash, at) =>
      Effect.sync(() => {
        const found = sessions.get(idHash)
        if (found !== undefined) sessions.set(idHash, new Session({ ...found, lastSeenAt: at }))
      }),
    remove: (idHash) => Effect.sync(() => void sessions.delete(idHash)),
    removeForClient: (clientId) => removeWhere((s) => s.clientId === clientId),
    removeSeenBefore: (cutoff) => removeWhere((s) => DateTime.lessThan(s.lastSeenAt, cutoff))
  })
})
