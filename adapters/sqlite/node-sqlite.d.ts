// The part of `node:sqlite` this project uses. @types/node follows the Node 20 line the Node app runs on,
// which predates the module; Deno provides it at run time.
declare module "node:sqlite" {
  export interface StatementSync {
    columns(): Array<unknown>
    all(...params: Array<unknown>): Array<unknown>
    get(...params: Array<unknown>): unknown
    run(...params: Array<unknown>): { changes: number | bigint; lastInsertRowid: number | bigint }
  }
  export class DatabaseSync {
    constructor(filename: string)
    prepare(sql: string): StatementSync
    exec(sql: string): void
    close(): void
  }
}
