// The few parts of node-postgres the tests use. `pg` comes with @effect/sql-pg, without type declarations
// (@types/pg is not a dependency), so these stand in for them.
declare module "pg" {
  export interface ClientConfig {
    readonly connectionString?: string
    readonly connectionTimeoutMillis?: number
    readonly application_name?: string
  }
  export interface QueryResult<R> {
    readonly rows: Array<R>
    readonly rowCount: number | null
  }
  export class Client {
    constructor(config?: ClientConfig)
    connect(): Promise<void>
    query<R = Record<string, unknown>>(text: string, values?: ReadonlyArray<unknown>): Promise<QueryResult<R>>
    end(): Promise<void>
    on(event: "error", listener: (error: Error) => void): this
  }
  const pg: {
    readonly Client: typeof Client
    readonly escapeIdentifier: (identifier: string) => string
    readonly escapeLiteral: (value: string) => string
  }
  export default pg
}
