import "../node/SupportedNode.ts"
import { Args, Command, Options, ValidationError } from "@effect/cli"
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Console, DateTime, Effect, Layer, Redacted, Schema } from "effect"
import { layer as CryptoTokens } from "../../adapters/crypto/CryptoTokens.ts"
import { openBetterSqlite3 } from "../../adapters/sqlite/BetterSqlite3.ts"
import { ClientKeys, type ClientNotFound } from "../../core/payments/ClientKeys.ts"
import { Clients } from "../../core/payments/Clients.ts"
import { ClientId } from "../../core/payments/Transfer.ts"
import { FeedName } from "../../core/subscriptions/Feed.ts"
import { SubscriberDirectory } from "../../core/subscriptions/SubscriberDirectory.ts"
import { SubscriptionStore } from "../../core/subscriptions/SubscriptionStore.ts"
import { databaseUrlConfig, storageLayer, storageOf } from "../compose/Storage.ts"
import { subscribersExport } from "./SubscribersExport.ts"

// `npm run cli -- --help`. Every command works on the database at DATABASE_URL (the service's) and prints one
// JSON value on stdout for scripts; a failure is a message on stderr and exit code 1. Keys are printed once,
// when made; listings never show a key or its hash.
// A storage in another process's memory (`memory:`) is out of reach: refused, not opened empty.
const StorageLive = Layer.unwrapEffect(
  Effect.flatMap(databaseUrlConfig, (databaseUrl) =>
    storageOf(databaseUrl)?.durable === false
      ? Effect.fail(
        new Error(`DATABASE_URL=${databaseUrl} lives in the service's own process: the CLI cannot reach it.`)
      )
      : Effect.succeed(
        Layer.mergeAll(Clients.Default, ClientKeys.Default, SubscriberDirectory.Default).pipe(
          Layer.provide(CryptoTokens),
          Layer.provideMerge(storageLayer(databaseUrl, { openSqlite: openBetterSqlite3 }))
        )
      ))
)
// Storage is opened for a command's handler only, not for --help or a usage error.
const stored = <Name extends string, R, E, A>(command: Command.Command<Name, R, E, A>) =>
  Command.provide(command, StorageLive)

const json = (value: unknown) => Console.log(JSON.stringify(value))
const iso = (time: DateTime.DateTime) => DateTime.formatIso(time)

const clientId = Args.text({ name: "id" }).pipe(Args.withSchema(ClientId), Args.withDescription("cl_..."))
const feedName = Args.text({ name: "name" }).pipe(Args.withSchema(FeedName), Args.withDescription("the feed's name"))

const clientCreate = Command.make(
  "create",
  { name: Options.text("name").pipe(Options.withDescription("the client's name, e.g. a merchant")) },
  ({ name }) =>
    Effect.flatMap(Clients, (clients) => clients.create(name.trim())).pipe(
      Effect.flatMap((created) => json({ id: created.id, api_key: Redacted.value(created.apiKey) }))
    )
).pipe(Command.withDescription("Make a client and print its secret key, once"), stored)

const clientList = Command.make("list", {}, () =>
  Effect.flatMap(ClientKeys, (keys) => keys.list).pipe(
    Effect.flatMap((clients) =>
      json({ clients: clients.map((c) => ({ id: c.id, name: c.name, created: iso(c.createdAt), revoked: c.revoked })) })
    )
  )).pipe(Command.withDescription("List the clients (never their keys)"), stored)

const noClient = ({ client }: ClientNotFound) => Effect.fail(new Error(`No client has the id ${client}.`))

const clientRevoke = Command.make(
  "revoke",
  { id: clientId },
  ({ id }) =>
    Effect.flatMap(ClientKeys, (keys) => keys.revoke(id)).pipe(
      Effect.catchTag("ClientNotFound", noClient),
      Effect.zipRight(json({ id, revoked: true }))
    )
).pipe(Command.withDescription("Stop the client's key from working (rotate-key gives it a new one)"), stored)

const clientRotateKey = Command.make(
  "rotate-key",
  { id: clientId },
  ({ id }) =>
    Effect.flatMap(ClientKeys, (keys) => keys.rotateKey(id)).pipe(
      Effect.catchTag("ClientNotFound", noClient),
      Effect.flatMap((rotated) => json({ id: rotated.id, api_key: Redacted.value(rotated.apiKey) }))
    )
).pipe(Command.withDescription("Give the client a new key, printed once; the old key stops working"), stored)

const client = Command.make("client").pipe(
  Command.withDescription("API clients of the merchant API"),
  Command.withSubcommands([clientCreate, clientList, clientRevoke, clientRotateKey])
)

const feedView = (feed: { name: string; title: string; createdAt: DateTime.Utc; updatedAt: DateTime.Utc }) => ({
  name: feed.name,
  title: feed.title,
  created: iso(feed.createdAt),
  updated: iso(feed.updatedAt)
})

const feedList = Command.make("list", {}, () =>
  Effect.flatMap(SubscriptionStore, (store) => store.listFeeds).pipe(
    Effect.flatMap(({ feeds }) => json({ feeds: feeds.map(feedView) }))
  )).pipe(Command.withDescription("List the feeds"), stored)

const title = Options.text("title").pipe(
  Options.withSchema(Schema.Trim.pipe(Schema.nonEmptyString(), Schema.maxLength(200))),
  Options.withDescription("the feed's title (1-200 characters)")
)
const feedPut = Command.make("put", { name: feedName, title }, ({ name, title }) =>
  Effect.gen(function*() {
    const store = yield* SubscriptionStore
    const { created, feed } = yield* store.putFeed(name, title, yield* DateTime.now)
    yield* json({ feed: feedView(feed), created })
  })).pipe(Command.withDescription("Make a feed or change its title"), stored)

const feedDelete = Command.make("delete", { name: feedName }, ({ name }) =>
  Effect.gen(function*() {
    const store = yield* SubscriptionStore
    const deleted = yield* store.deleteFeed(name, yield* DateTime.now)
    if (!deleted) return yield* Effect.fail(new Error(`No feed is named ${name}.`))
    yield* json({ name, deleted: true })
  })).pipe(Command.withDescription("Delete a feed (its subscriptions end with it)"), stored)

const feed = Command.make("feed").pipe(
  Command.withDescription("Newsletter feeds"),
  Command.withSubcommands([feedList, feedPut, feedDelete])
)

const exportFeed = Options.text("feed").pipe(Options.withDescription("the feed whose active subscribers to export"))
const subscribersExportCommand = Command.make(
  "export",
  { feed: exportFeed },
  ({ feed }) =>
    subscribersExport(feed).pipe(
      Effect.catchTag("FeedNotFound", () => Effect.fail(new Error(`No feed is named ${feed}.`)))
    )
)
  .pipe(
    Command.withDescription(
      "A feed's active subscribers as CSV on stdout, streamed (the same CSV as GET /subscriptions with Accept: text/csv)"
    ),
    stored
  )

const subscribers = Command.make("subscribers").pipe(
  Command.withDescription("Newsletter subscribers"),
  Command.withSubcommands([subscribersExportCommand])
)

const paysub = Command.make("paysub").pipe(
  Command.withDescription("Manage paysub's database at DATABASE_URL (default sqlite:data/paysub.db)"),
  Command.withSubcommands([client, feed, subscribers])
)

const cli = Command.run(paysub, { name: "paysub", version: "0.1.0" })

// Usage errors are printed by @effect/cli itself; others as their message. Either way the exit code is 1.
cli(process.argv).pipe(
  Effect.tapError((e) =>
    ValidationError.isValidationError(e) ? Effect.void : Console.error(e instanceof Error ? e.message : String(e))
  ),
  Effect.provide(NodeContext.layer),
  NodeRuntime.runMain({ disableErrorReporting: true, disablePrettyLogger: true })
)
