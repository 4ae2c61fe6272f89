import { ParseResult } from "effect"
import { type ApiError, apiError } from "./ApiError.ts"

// A decoding failure as the documented error body. The message never repeats the input nor shows a schema:
// Effect's own messages ("Expected ..., actual <value>", "is unexpected, expected: ...") are replaced by a
// fixed text for the failing parameter; the messages our schemas declare (fixed texts, in core/) are kept.
const expected: Readonly<Record<string, string>> = {
  payment_transfer: "must be an object of the transfer's parameters.",
  sender: "must be an object with first_name and email.",
  recipient: "must be an object with first_name, email and merchant_id.",
  reference: "must be a string of 1-64 printable ASCII characters without spaces.",
  amount: "must be a decimal string such as \"12.34\".",
  currency: "must be an ISO 4217 code in upper case, such as USD.",
  sender_account_uri: "must be a string: pan:<card number>;exp=<YYYY-MM>;cvc=<CVC>.",
  authentication_value: "must be a string: ucaf: followed by base64.",
  first_name: "must be a non-empty string of at most 100 characters.",
  middle_name: "must be a string of at most 100 characters.",
  name: "must be a non-empty string of at most 100 characters.",
  email: "must be an e-mail address, like name@example.com.",
  merchant_id: "must be 1-64 letters, digits, '_', '.', ':' or '-'.",
  feed: "must be a feed name: 1-64 lowercase letters, digits and hyphens.",
  website: "must be a string.",
  token: "must be a string.",
  title: "must be a string.",
  "idempotency-key": "must be 1-255 printable ASCII characters.",
  limit: "must be an integer from 1 to 100.",
  starting_after: "must be a transfer id (tr_...)."
}

const effectsOwn = /^Expected |\bactual\b|^is (?:missing|unexpected|forbidden)/

export interface DecodeIssue {
  readonly _tag: string
  readonly path: ReadonlyArray<PropertyKey>
  readonly message: string
}

// An unknown member is named as Stripe names it, when its name is one a parameter could have: a name is input
// too, and one that is not (a JSON text posted as a form's field name) would repeat the request.
const memberName = /^[A-Za-z][\w-]{0,63}$/
export const unknownParameter = (path: ReadonlyArray<PropertyKey>): ApiError => {
  const names = path.map(String)
  if (names.every((name) => memberName.test(name) || /^\d{1,4}$/.test(name))) {
    const param = names.join(".")
    return apiError("parameter_unknown", `Received unknown parameter: ${param}.`, { param })
  }
  return apiError("parameter_unknown", "Received a parameter whose name is not one this endpoint takes.")
}

const fromIssue = (issue: DecodeIssue | undefined): ApiError => {
  const path = issue?.path ?? []
  if (issue === undefined || path.length === 0) {
    return apiError("body_invalid", "The request body must be an object of parameters.")
  }
  const param = path.map(String).join(".")
  if (issue._tag === "Missing") return apiError("parameter_missing", `Missing required parameter: ${param}.`, { param })
  if (issue._tag === "Unexpected") return unknownParameter(path)
  const field = String(path[path.length - 1])
  const text = Object.hasOwn(expected, field) ? `${param} ${expected[field]}` : `${param} has the wrong type or format.`
  const message = effectsOwn.test(issue.message) ? text : issue.message
  return apiError(field === "email" ? "email_invalid" : "parameter_invalid", message, { param })
}

export const fromParseError = (error: ParseResult.ParseError): ApiError =>
  fromIssue(ParseResult.ArrayFormatter.formatIssueSync(error.issue)[0])
