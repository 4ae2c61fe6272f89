import { Clock, Effect, Random } from "effect"

const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
// Five characters per draw (62^5 < 2^30): 24 characters, about 143 random bits, in five draws, each appended as
// it is drawn: a chain of five steps, cheaper per id than Effect.all over five.
const perDraw = 5
const span = alphabet.length ** perDraw
const append = (id: string, draw: number) => {
  for (let i = 0; i < perDraw; i++) {
    id += alphabet[draw % alphabet.length]
    draw = Math.floor(draw / alphabet.length)
  }
  return id
}
const drawn = (start: string, draws: number, length: number): Effect.Effect<string> =>
  Random.randomWith((random) => {
    const draw = random.nextIntBetween(0, span)
    const more = (id: string, draws: number): Effect.Effect<string> =>
      draws === 0
        ? Effect.succeed(id.slice(0, length))
        : Effect.flatMap(draw, (d) => more(append(id, d), draws - 1))
    return more(start, draws)
  })
export const randomId = (prefix: string): Effect.Effect<string> => drawn(prefix, 5, prefix.length + 24)

// The same shape, sorted by when it was made: nine letters of the clock's milliseconds in base 26, `a` to `z`
// (fixed width until the year 2142; lower-case letters, which binary and case-blind collations sort alike, and no
// digits, so that an id never holds the run of 12 or more digits the card-data checks look for), then 15 random
// characters (about 89 bits, in three draws). A table indexed by such ids takes each new one at the end of its
// index, where a random one lands on a page of its own: one more page written per id and commit
// (docs/decisions/0068).
const TimeLetters = 9
const timeLetters = (millis: number) => {
  let letters = ""
  for (let i = 0; i < TimeLetters; i++) {
    letters = String.fromCharCode(97 + (millis % 26)) + letters
    millis = Math.floor(millis / 26)
  }
  return letters
}
export const timeOrderedId = (prefix: string): Effect.Effect<string> =>
  Effect.flatMap(Clock.currentTimeMillis, (millis) => drawn(prefix + timeLetters(millis), 3, prefix.length + 24))
