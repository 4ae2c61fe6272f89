import { Context, type Duration, type Option } from "effect"

export interface ConsoleSettingsShape {
  // A session not used for this long has ended.
  readonly idleTimeout: Duration.Duration
  // The hash (Tokens.hash) of ADMIN_API_KEY, when one is set: the list owner signs in with that key.
  readonly adminKeyHash: Option.Option<string>
}

export class ConsoleSettings extends Context.Tag("ConsoleSettings")<ConsoleSettings, ConsoleSettingsShape>() {}

export const DefaultIdleMinutes = 30
