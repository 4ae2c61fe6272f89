// The large-data mode's seeding (large-data.mjs), for the test that checks its rows.
export interface Size {
  readonly transfers: number
  readonly subscribers: number
  readonly now?: number
}
export declare const seedSqlite: (file: string, size: Size) => void
export declare const seedPostgres: (url: string, size: Size) => Promise<void>
export declare const seededTransferId: (i: number) => string
