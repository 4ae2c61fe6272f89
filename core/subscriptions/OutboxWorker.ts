import { Context, DateTime, Duration, Effect, Fiber, Option, Queue, Random, Ref } from "effect"
import { RetryPolicy } from "../shared/Backoff.ts"
import { afterFailure, attemptsAllowed } from "../shared/DestinationBackoff.ts"
import { makeHeldClaims } from "../shared/HeldClaims.ts"
import { SiteSettings } from "../shared/SiteSettings.ts"
import { makeStorageBackoff } from "../shared/StorageBackoff.ts"
import { Tokens } from "../shared/Tokens.ts"
import { confirmationMail } from "./ConfirmationMail.ts"
import { type Mail, Mailer, type MailOutcome } from "./Mailer.ts"
import { MailReceipts } from "./MailReceipts.ts"
import { type OutboxEntry, SubscriptionStore } from "./SubscriptionStore.ts"
import { ConfirmTokenTtl } from "./Token.ts"

// A claimed row is leased: if this process dies while sending, the row is due again once the lease ends,
// and another worker (or this one after restart) sends it. Every claimed row starts sending at once, and the
// SMTP adapter bounds each send at 25 s, its wait for one of the pool's connections included, so the lease
// only has to outlast one send.
export const Lease = Duration.seconds(60)
// Connections to the SMTP server (MAIL_CONCURRENCY: the SMTP adapter's pool is as large), and the mails the
// loops take at a time when there is no backlog. With a backlog their batches grow (nextBatch below), and the
// extra mails queue for the pool's connections (docs/decisions/0032).
export const DefaultMailConcurrency = 32
export class MailConcurrency extends Context.Reference<MailConcurrency>()("MailConcurrency", {
  defaultValue: (): number => DefaultMailConcurrency
}) {}
const PollInterval = Duration.seconds(1)
// Loops sharing the concurrency, so that one batch's sends overlap the others' claiming and marking.
const Loops = 8

// A loop's batch while a backlog lasts: a pass that took all it asked for leaves more waiting, so the next asks
// for twice as many, up to MaxBatchGrowth times the loop's share of the concurrency; a pass that took fewer
// starts again from that share. Under load every batch waits its turn on the main thread three times (claim,
// tokens, marks: each a commit), whatever its size, so a fixed batch sent a fixed number of mails per turn and
// fell behind the signups (docs/decisions/0032). The extra mails of a larger batch wait in the SMTP adapter's
// pool for a connection, within the send's own time-out. The mail takes a larger share of the machine, and
// the signups a smaller one, until the mail keeps up.
export const MaxBatchGrowth = 16
export const nextBatch = (base: number, size: number, taken: number): number =>
  taken < size ? base : Math.min(size * 2, base * MaxBatchGrowth)

type Outcome = "sent" | { readonly reason: string; readonly permanent: boolean }

// The SMTP server is one destination: a temporary failure backs it off as a whole (core/shared/DestinationBackoff.ts),
// so while it is down one mail at a time probes it, and the first success resumes the whole backlog at full
// concurrency. Each instance keeps its own view of the server; a row's own attempts only count towards
// giving it up.
export class OutboxWorker extends Effect.Service<OutboxWorker>()("OutboxWorker", {
  effect: Effect.gen(function*() {
    const store = yield* SubscriptionStore
    const mailer = yield* Mailer
    const receipts = yield* MailReceipts
    const tokens = yield* Tokens
    const site = yield* SiteSettings
    const concurrency = yield* MailConcurrency
    const loops = Math.min(Loops, concurrency)
    const wakeUps = yield* Queue.sliding<void>(1)
    const destination = yield* Ref.make<{ readonly failingSince?: DateTime.Utc; readonly retryAt?: DateTime.Utc }>({})
    // The rows this worker claimed and has not marked, shared by its loops (core/shared/HeldClaims.ts).
    const held = makeHeldClaims((entry: OutboxEntry) => entry.id, Lease)

    // The rows whose mails the server accepted before the process last stopped, and whose marks never
    // committed (a crash): marked sent now, while the service starts, instead of sent again. Before any request
    // is served, so that no row made since can carry a noted id (a database restored from a backup reuses ids).
    const recovered = yield* receipts.unsettled
    if (recovered.length > 0) {
      yield* store.markSentAll(recovered, yield* DateTime.now)
      yield* receipts.settle(recovered)
      yield* Effect.logInfo("outbox rows marked sent from their mails' receipts", { rows: recovered.length })
    }

    const markSent = (ids: ReadonlyArray<number>) => Effect.flatMap(DateTime.now, (at) => store.markSentAll(ids, at))

    // A claimed batch's tokens, issued and stored in one transaction (tokens at delivery: docs/decisions/0002),
    // then its mails handed to the mailer as one batch. A row whose subscription no longer awaits a mail counts as
    // sent.
    const sendAll = (due: ReadonlyArray<OutboxEntry>): Effect.Effect<ReadonlyArray<Outcome>> =>
      Effect.gen(function*() {
        if (due.length === 0) return []
        const now = yield* DateTime.now
        const secrets = yield* tokens.issueMany(due.length * 2)
        const issued = due.map((_, i) => {
          const confirm = secrets[2 * i]!
          const unsubscribe = secrets[2 * i + 1]!
          return {
            confirm,
            unsubscribe,
            hashes: {
              confirm: { hash: tokens.hash(confirm), expiresAt: DateTime.addDuration(now, ConfirmTokenTtl) },
              unsubscribe: { hash: tokens.hash(unsubscribe) }
            }
          }
        })
        const prepared = yield* store.prepareConfirmations(
          due.map((entry, i) => ({ entry, tokens: issued[i]!.hashes })),
          now
        )
        const feeds = new Map<string, string>()
        for (const subscription of prepared) {
          if (Option.isNone(subscription) || feeds.has(subscription.value.feed)) continue
          const feed = yield* store.findFeed(subscription.value.feed)
          feeds.set(
            subscription.value.feed,
            Option.match(feed, { onNone: () => subscription.value.feed, onSome: (f) => f.title })
          )
        }
        const outcomes = new Array<Outcome>(due.length)
        const mails: Array<Mail> = []
        // The row of each mail, by the mail's index.
        const rows: Array<number> = []
        const unsent: Array<number> = []
        prepared.forEach((subscription, i) => {
          if (Option.isNone(subscription)) {
            outcomes[i] = "sent"
            unsent.push(due[i]!.id)
            return
          }
          rows.push(i)
          mails.push({
            ...confirmationMail({
              baseUrl: site.baseUrl,
              subscription: subscription.value,
              feedTitle: feeds.get(subscription.value.feed)!,
              confirmToken: issued[i]!.confirm,
              unsubscribeToken: issued[i]!.unsubscribe
            }),
            outbox: due[i]!.id
          })
        })
        if (unsent.length > 0) {
          yield* markSent(unsent)
          held.done(unsent)
        }
        if (mails.length === 0) return outcomes
        // The rows are marked sent as their mails are accepted, those that came together in one transaction, so
        // that a crash re-sends only the mails in flight, not the batch's sent ones. While one mark commits, the
        // next outcomes gather for the next. The mails' receipts (MailReceipts.ts) cover the time until the
        // mark's commit; they are settled once the mark is done with.
        const came = yield* Queue.unbounded<MailOutcome>()
        const sending = yield* Effect.fork(mailer.sendAll(mails, (outcome) => Queue.unsafeOffer(came, outcome)))
        // A mark that fails stops the batch's sends not yet made: the pass's rows are taken up again.
        yield* Effect.onError(
          outcomesMarked(mails.length, came, rows, due, outcomes),
          () => Fiber.interruptFork(sending)
        )
        return outcomes
      })

    // Each outcome in `outcomes` as it comes, the accepted ones marked sent together.
    const outcomesMarked = (
      count: number,
      came: Queue.Queue<MailOutcome>,
      rows: ReadonlyArray<number>,
      due: ReadonlyArray<OutboxEntry>,
      outcomes: Array<Outcome>
    ) =>
      Effect.gen(function*() {
        for (let left = count; left > 0;) {
          const chunk = yield* Queue.takeBetween(came, 1, left)
          left -= chunk.length
          const accepted: Array<number> = []
          for (const { failure, index } of chunk) {
            const i = rows[index]!
            if (failure === undefined) {
              outcomes[i] = "sent"
              accepted.push(due[i]!.id)
            } else {
              outcomes[i] = { reason: failure.reason, permanent: failure.permanent }
            }
          }
          if (accepted.length > 0) {
            held.accepted(accepted)
            yield* Effect.ensuring(markSent(accepted), receipts.settle(accepted))
            held.done(accepted)
          }
        }
      })
    // One pass over what is due, `size` mails at most; answers how many rows it took. `probes`: whether this
    // pass may probe a failing server (only one of the loops running at once does).
    const pass = (size: number, probes: boolean) =>
      Effect.gen(function*() {
        const now = yield* DateTime.now
        const state = yield* Ref.get(destination)
        if (state.retryAt !== undefined && DateTime.lessThan(now, state.retryAt)) return 0
        if (state.failingSince !== undefined && !probes) return 0
        const limit = attemptsAllowed(state.failingSince !== undefined, size)
        // What a failed pass left is taken up first: mails accepted already are only marked.
        const resumed = held.take(now, limit)
        const marked = resumed.filter((c) => c.accepted).map((c) => c.item.id)
        const due = resumed.length > 0
          ? resumed.filter((c) => !c.accepted).map((c) => c.item)
          : yield* store.claimDue(now, DateTime.addDuration(now, Lease), limit)
        if (resumed.length === 0) held.hold(due, DateTime.addDuration(now, Lease))
        return yield* Effect.onError(
          finish(marked, due, state),
          () => Effect.sync(() => held.release([...marked, ...due.map((e) => e.id)]))
        )
      })

    const finish = (
      marked: ReadonlyArray<number>,
      due: ReadonlyArray<OutboxEntry>,
      state: { readonly failingSince?: DateTime.Utc }
    ) =>
      Effect.gen(function*() {
        if (marked.length > 0) {
          yield* Effect.ensuring(markSent(marked), receipts.settle(marked))
          held.done(marked)
        }
        const outcomes = yield* sendAll(due)
        const done = yield* DateTime.now
        const temporary = outcomes.some((o) => o !== "sent" && !o.permanent)
        const failure = temporary && !outcomes.includes("sent")
          ? afterFailure(state.failingSince, done, yield* Random.next)
          : undefined
        yield* Ref.set(destination, failure ?? {})
        // Each failed row in its own transaction (rare: the server is mostly up or down); the sent ones are marked.
        const failed = due.flatMap((entry, i) => {
          const outcome = outcomes[i]!
          return outcome === "sent" ? [] : [{ entry, outcome }]
        })
        yield* Effect.forEach(failed, ({ entry, outcome }) => {
          const attempts = entry.attempts + 1
          const giveUp = outcome.permanent || attempts >= RetryPolicy.maxAttempts
          // A row that failed while the server worked is retried with the next pass; otherwise with the server.
          const next = giveUp ? undefined : failure?.retryAt ?? done
          return store.markFailed(entry.id, next, outcome.reason).pipe(
            Effect.tap(() => held.done([entry.id])),
            Effect.zipRight(
              Effect.logWarning("confirmation mail not delivered", {
                outbox: entry.id,
                attempts,
                reason: outcome.reason,
                giveUp
              })
            )
          )
        }, { discard: true })
        return marked.length + due.length
      })

    const deliverDue = pass(concurrency, true)

    const waitForWork = Effect.raceFirst(Queue.take(wakeUps), Effect.sleep(PollInterval))

    // Straight on while there is work and the server answers; else wait for a signup, the poll, or the backoff.
    // Loops of a share of the concurrency each, so that one batch's sends overlap the others' claiming and
    // marking (three commits a batch, each waiting for a group commit under load). Only the first probes a
    // failing server; the others resume with the next poll once it answers.
    const base = Math.floor(concurrency / loops)
    // A pass that fails (the database does) waits with the database's backoff (core/shared/StorageBackoff.ts).
    const loop = (probes: boolean) => {
      const backoff = makeStorageBackoff("outbox")
      return Effect.iterate(base, {
        while: () => true,
        body: (size) =>
          backoff.guard(
            pass(size, probes).pipe(
              Effect.flatMap((taken) =>
                Effect.flatMap(Ref.get(destination), (state) =>
                  taken > 0 && state.failingSince === undefined
                    ? Effect.succeed(nextBatch(base, size, taken))
                    : Effect.as(waitForWork, base))
              )
            ),
            base
          )
      }).pipe(Effect.asVoid)
    }
    const run = Effect.asVoid(
      Effect.all(Array.from({ length: loops }, (_, i) => loop(i === 0)), { concurrency: "unbounded" })
    )

    return { deliverDue, run, wake: Queue.offer(wakeUps, undefined).pipe(Effect.asVoid) } as const
  })
}) {}
