// `pg` has no type declarations here (@types/pg is not a dependency): the Pool is typed by
// adapters/postgres/PgDriver.ts; test/support/pg.d.ts declares the Client the tests use (the two merge).
declare module "pg" {
  export class Pool {
    constructor(config?: unknown)
  }
}
