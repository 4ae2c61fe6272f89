// `pg` has no type declarations here (@types/pg is not a dependency): the Pool is typed by
// adapters/postgres/PgDriver.ts; test/support/pg.d.ts declares the Client the tests use (the two merge).
declare module "pg" {
  export class Pool {
    constructor(config?: unknown)
  }
  export const types: { getTypeParser(oid: number, format: "text"): (raw: string) => unknown }
}
declare module "pg/lib/utils.js" {
  // A parameter as pg sends it in text format (dates, arrays, buffers, objects as JSON).
  const utils: { readonly prepareValue: (value: unknown) => unknown }
  export default utils
}
