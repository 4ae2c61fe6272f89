import { NodeRuntime } from "@effect/platform-node"
import { Console, Effect, Layer, Redacted } from "effect"
import { layer as CryptoTokens } from "../../adapters/crypto/CryptoTokens.ts"
import { openBetterSqlite3 } from "../../adapters/sqlite/BetterSqlite3.ts"
import { Clients } from "../../core/Clients.ts"
import { AppConfig, storageLayer } from "../AppLayer.ts"

// npm run cli -- client create --name NAME: prints {"id", "api_key"} once; only the key's hash is kept.
const usage = "usage: npm run cli -- client create --name NAME"

const program = Effect.gen(function*() {
  const [group, command, flag, name] = process.argv.slice(2)
  if (group !== "client" || command !== "create" || flag !== "--name" || !name?.trim()) {
    yield* Console.error(usage)
    return yield* Effect.sync(() => void (process.exitCode = 2))
  }
  const created = yield* Effect.flatMap(Clients, (clients) => clients.create(name.trim()))
  yield* Console.log(JSON.stringify({ id: created.id, api_key: Redacted.value(created.apiKey) }))
})

const StorageLive = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) =>
    Clients.Default.pipe(
      Layer.provide(CryptoTokens),
      Layer.provide(storageLayer(config.databaseUrl, openBetterSqlite3))
    ))
)

NodeRuntime.runMain(program.pipe(Effect.provide(StorageLive)))
