import { DateTime } from "effect"

// A UTC day as the stores count by it: whole days since 1970-01-01.
export type Day = number
const DayMillis = 86_400_000

export const dayOf = (t: DateTime.Utc): Day => Math.floor(DateTime.toEpochMillis(t) / DayMillis)
export const startOfDay = (day: Day): DateTime.Utc => DateTime.unsafeMake(day * DayMillis)
