import { Schema } from "effect"

// A page's size, as every list takes it (10 when left out): the document shows the integer the query spells.
export const Limit = Schema.NumberFromString.pipe(
  Schema.int(),
  Schema.between(1, 100),
  Schema.annotations({
    message: () => "limit is an integer from 1 to 100.",
    jsonSchema: { type: "integer", minimum: 1, maximum: 100 }
  })
)
