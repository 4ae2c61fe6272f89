// Bodies are decoded by functions that recurse (JSON.parse, the schemas, their formatters): a body nested
// thousands of levels deep overflowed the stack and answered 500. The depth is bounded on the text first,
// in one pass that does not recurse. No request of the API nests deeper than 3 levels.
export const MaxJsonDepth = 32

export const jsonDepthWithin = (text: string, max: number): boolean => {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c) i++ // a backslash escapes the next character
      else if (c === 0x22) inString = false
    } else if (c === 0x22) inString = true
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return false
    } else if (c === 0x5d || c === 0x7d) depth--
  }
  return true
}
