import { Either, type ParseResult, Predicate, Schema, SchemaAST } from "effect"

// A payload or query names only the members its schema declares (`onExcessProperty: "error"`). Effect checks that
// by decoding each member's name against the union of the declared names, a failed literal per name tried before
// the right one: the most of what decoding a transfer request allocated. Here a schema is decoded as Effect's
// default does (excess members ignored), and the input's own names are then checked against the declared ones;
// an input that fails either is decoded again the strict way, so that its error is the strict decode's own.
// A schema where the two could differ (an array of objects, an index signature, a parseOptions annotation, a
// transformation into an object) is decoded the strict way only.
// test/http/DeclaredOnly.test.ts holds the two equal, value and error, on every payload and query of the API.

type Check = (input: unknown) => boolean
// Undefined: the schema is not one this check covers.
type Compiled = Check | undefined

const leaf: Check = () => true

// Whether an object can reach a TypeLiteral's parser below this node (where the strict decode looks at names).
const holdsObjects = (ast: SchemaAST.AST): boolean => {
  switch (ast._tag) {
    case "TypeLiteral":
    case "Suspend":
      return true
    case "TupleType":
      return ast.elements.some((e) => holdsObjects(e.type)) || ast.rest.some((r) => holdsObjects(r.type))
    case "Refinement":
      return holdsObjects(ast.from)
    case "Transformation":
      return holdsObjects(ast.from) || holdsObjects(ast.to)
    case "Union":
      return ast.types.some(holdsObjects)
    case "Declaration":
      return ast.typeParameters.length > 0
    default:
      return false
  }
}

// A transformation whose decoded side takes the decoded encoded side's names only, and decodes no object below
// them: a class (its declaration decodes its instance as it is), and a struct's defaults and renames (the names
// the encoded side declares, renamed, are all declared on the decoded side).
const namesKept = (ast: SchemaAST.Transformation): boolean => {
  if (ast.to._tag === "Declaration") return SchemaAST.getSurrogateAnnotation(ast)._tag === "Some"
  if (ast.transformation._tag !== "TypeLiteralTransformation") return false
  if (ast.from._tag !== "TypeLiteral" || ast.to._tag !== "TypeLiteral" || ast.to.indexSignatures.length > 0) {
    return false
  }
  const renamed = new Map(ast.transformation.propertySignatureTransformations.map((t) => [t.from, t.to] as const))
  const declared = new Set(ast.to.propertySignatures.map((ps) => ps.name))
  return ast.from.propertySignatures.every((ps) => declared.has(renamed.get(ps.name) ?? ps.name)) &&
    ast.to.propertySignatures.every((ps) => !holdsObjects(ps.type))
}

const compile = (ast: SchemaAST.AST): Compiled => {
  if (SchemaAST.getParseOptionsAnnotation(ast)._tag === "Some") return undefined
  if (!holdsObjects(ast)) return leaf
  switch (ast._tag) {
    case "Refinement":
      return compile(ast.from)
    case "Transformation":
      // The encoded side is what the input is; the decoded side must hold no object whose names it checks.
      return holdsObjects(ast.to) && !namesKept(ast) ? undefined : compile(ast.from)
    case "TypeLiteral": {
      if (ast.indexSignatures.length > 0) return undefined
      const declared = new Set<PropertyKey>()
      const members: Array<readonly [PropertyKey, Check]> = []
      for (const ps of ast.propertySignatures) {
        const check = compile(ps.type)
        if (check === undefined) return undefined
        declared.add(ps.name)
        if (check !== leaf) members.push([ps.name, check])
      }
      // An input that is not an object fails this member's decode: nothing to check.
      return (input) => {
        if (!Predicate.isRecord(input)) return true
        const record = input
        for (const key of Reflect.ownKeys(record)) if (!declared.has(key)) return false
        for (const [name, check] of members) {
          if (Object.hasOwn(record, name) && !check(record[name])) return false
        }
        return true
      }
    }
    case "Union": {
      // The decode takes the first member that decodes: every member that could must hold only declared names.
      const checks: Array<Check> = []
      for (const member of ast.types) {
        const check = compile(member)
        if (check === undefined) return undefined
        if (check !== leaf) checks.push(check)
      }
      return (input) => checks.every((check) => check(input))
    }
    default:
      return undefined
  }
}

export type DeclaredOnlyDecode = (input: unknown) => Either.Either<unknown, ParseResult.ParseError>

// Decodes as `Schema.decodeUnknownEither(schema, { onExcessProperty: "error" })` does: the same value, the same error.
export const declaredOnlyDecoder = (schema: Schema.Schema<any, any, any>): DeclaredOnlyDecode => {
  const strict = Schema.decodeUnknownEither(schema as Schema.Schema<unknown, unknown, never>, {
    onExcessProperty: "error"
  })
  const check = compile(schema.ast)
  if (check === undefined) return strict
  const lenient = Schema.decodeUnknownEither(schema as Schema.Schema<unknown, unknown, never>)
  return (input) => {
    const result = lenient(input)
    return Either.isRight(result) && check(input) ? result : strict(input)
  }
}

// Whether a schema is decoded by the lenient decode and the check, rather than the strict way only.
export const checkedByNames = (schema: Schema.Schema.Any): boolean => compile(schema.ast) !== undefined
