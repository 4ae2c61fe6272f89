import { Effect, Random } from "effect"

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
export const randomId = (prefix: string): Effect.Effect<string> =>
  Random.randomWith((random) => {
    const draw = random.nextIntBetween(0, span)
    const more = (id: string, draws: number): Effect.Effect<string> =>
      draws === 0
        ? Effect.succeed(id.slice(0, prefix.length + 24))
        : Effect.flatMap(draw, (d) => more(append(id, d), draws - 1))
    return more(prefix, 5)
  })
