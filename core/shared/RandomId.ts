import { Effect, Random } from "effect"

const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
// Five characters per draw (62^5 < 2^30): 24 characters, about 143 random bits, in five draws.
const perDraw = 5
export const randomId = (prefix: string) =>
  Effect.map(
    Effect.all(Array.from({ length: 5 }, () => Random.nextIntBetween(0, alphabet.length ** perDraw))),
    (draws) => {
      let id = prefix
      for (let draw of draws) {
        for (let i = 0; i < perDraw; i++) {
          id += alphabet[draw % alphabet.length]
          draw = Math.floor(draw / alphabet.length)
        }
      }
      return id.slice(0, prefix.length + 24)
    }
  )
