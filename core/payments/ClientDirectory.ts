import { Context, type DateTime, type Effect } from "effect"
import type { ClientId } from "./Transfer.ts"

// The API clients as an operator manages them (the CLI): every client with its key's hash, and the hash
// replaced. The request path only ever looks a client up by hash (TransferStore.clientByKeyHash).
export interface ClientRecord {
  readonly id: ClientId
  readonly name: string
  readonly keyHash: string
  readonly createdAt: DateTime.Utc
}

export interface ClientDirectoryShape {
  readonly list: Effect.Effect<ReadonlyArray<ClientRecord>>
  // False when no client has this id.
  readonly replaceKeyHash: (id: ClientId, keyHash: string) => Effect.Effect<boolean>
}

export class ClientDirectory extends Context.Tag("ClientDirectory")<ClientDirectory, ClientDirectoryShape>() {}
