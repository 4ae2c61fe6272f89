// Every error code the service can emit, with its HTTP status and the text of /docs/errors. The error body
// (apps/http/pipeline/ApiError.ts), the docs page and the tests all read this one table.
export const ErrorCatalog = {
  parameter_missing: {
    type: "invalid_request_error",
    status: 400,
    summary: "A required parameter is missing.",
    fix: "Send the parameter named in `param`."
  },
  parameter_invalid: {
    type: "invalid_request_error",
    status: 400,
    summary: "A parameter has the wrong type, format or length.",
    fix: "Correct the parameter named in `param`; `message` says what is expected."
  },
  parameter_unknown: {
    type: "invalid_request_error",
    status: 400,
    summary: "The request names a parameter this endpoint does not take (in its body or its query).",
    fix: "Remove the parameter named in `param`, or check its spelling against the API reference at /docs."
  },
  email_invalid: {
    type: "invalid_request_error",
    status: 400,
    summary: "The e-mail address is not one mail can be delivered to.",
    fix: "Send an address like name@example.com (ASCII, at most 254 characters)."
  },
  body_invalid: {
    type: "invalid_request_error",
    status: 400,
    summary: "The request body could not be parsed as its Content-Type.",
    fix: "Send well-formed JSON or form data matching the Content-Type header."
  },
  host_invalid: {
    type: "invalid_request_error",
    status: 400,
    summary: "The Host header is not a valid authority (a host name or IP address, and a port from 0 to 65535).",
    fix: "Send the Host your client was given, such as api.example.com or 127.0.0.1:3000."
  },
  upgrade_not_supported: {
    type: "invalid_request_error",
    status: 400,
    summary: "The service serves no websockets or other protocols: a request with Connection: Upgrade is refused.",
    fix: "Send the request without Upgrade and Connection: Upgrade."
  },
  request_malformed: {
    type: "invalid_request_error",
    status: 400,
    summary: "The request is not well-formed HTTP/1.1; the connection is closed.",
    fix: "Send a well-formed request line and header fields."
  },
  request_timeout: {
    type: "invalid_request_error",
    status: 408,
    summary: "The header fields or the whole request did not arrive within the server's time-outs.",
    fix: "Send the request without pauses (HEADERS_TIMEOUT_MS, REQUEST_TIMEOUT_MS)."
  },
  expectation_failed: {
    type: "invalid_request_error",
    status: 417,
    summary: "The Expect header asks for something other than 100-continue.",
    fix: "Leave Expect out, or send Expect: 100-continue."
  },
  header_fields_too_large: {
    type: "invalid_request_error",
    status: 431,
    summary: "The request line and header fields are larger than the server reads (16 KiB).",
    fix: "Send fewer or shorter header fields."
  },
  method_not_allowed: {
    type: "invalid_request_error",
    status: 405,
    summary: "The path exists but does not take this method; the Allow header lists the ones it takes.",
    fix: "Use one of the methods in the Allow header."
  },
  rate_limited: {
    type: "rate_limit_error",
    status: 429,
    summary: "Too many requests in a short time from this address or API key.",
    fix: "Wait the number of seconds in the Retry-After header, then retry."
  },
  unsupported_media_type: {
    type: "invalid_request_error",
    status: 415,
    summary: "The request body has a Content-Type this endpoint does not accept.",
    fix: "Send application/x-www-form-urlencoded or application/json."
  },
  api_key_invalid: {
    type: "authentication_error",
    status: 401,
    summary: "The API key is missing, malformed or not valid.",
    fix: "Send `Authorization: Bearer <key>` with a valid key."
  },
  resource_missing: {
    type: "invalid_request_error",
    status: 404,
    summary: "The resource named in the request does not exist.",
    fix: "Check the identifier in `param`."
  },
  token_invalid: {
    type: "invalid_request_error",
    status: 404,
    summary: "The confirmation or unsubscribe link is unknown, already used or expired.",
    fix: "Subscribe again to receive a new confirmation link."
  },
  route_not_found: {
    type: "invalid_request_error",
    status: 404,
    summary: "No route matches this method and path.",
    fix: "Check the path against the API reference at /docs (or /openapi.json)."
  },
  body_too_large: {
    type: "invalid_request_error",
    status: 413,
    summary: "The request body is larger than the service accepts.",
    fix: "Send a smaller body; the limit is set by MAX_BODY_BYTES (64 KiB by default)."
  },
  card_declined: {
    type: "card_error",
    status: 402,
    summary: "The card was declined; `decline_code` says why when the network told us.",
    fix: "Ask the customer for another card, or to contact their bank."
  },
  expired_card: {
    type: "card_error",
    status: 402,
    summary: "The card has expired (a card is valid through the last day of its expiry month, UTC).",
    fix: "Check the expiry date or use a different card."
  },
  incorrect_number: {
    type: "card_error",
    status: 402,
    summary: "The card number is not a valid card number (it fails the Luhn check).",
    fix: "Check the card number."
  },
  incorrect_cvc: {
    type: "card_error",
    status: 402,
    summary: "The card's security code is incorrect.",
    fix: "Check the CVC."
  },
  insufficient_funds: {
    type: "card_error",
    status: 402,
    summary: "The card has insufficient funds.",
    fix: "Use a different card or a smaller amount."
  },
  processing_error: {
    type: "card_error",
    status: 402,
    summary: "The card network could not process the card.",
    fix: "Retry the transfer with a new reference."
  },
  authentication_required: {
    type: "card_error",
    status: 402,
    summary: "The card requires authentication (3-D Secure) and no authentication value was sent.",
    fix: "Authenticate the cardholder and send the value as authentication_value (ucaf:...)."
  },
  duplicate_reference: {
    type: "invalid_request_error",
    status: 409,
    summary: "A transfer with this reference already exists for this client; `message` names it.",
    fix: "Use a new reference for a new transfer, or fetch the existing one."
  },
  idempotency_key_in_use: {
    type: "idempotency_error",
    status: 409,
    summary: "A request with this Idempotency-Key is still being processed.",
    fix: "Retry after the first request has finished."
  },
  idempotency_key_reused: {
    type: "idempotency_error",
    status: 422,
    summary: "This Idempotency-Key was used with a different request body.",
    fix: "Use a new key for a different request."
  },
  amount_too_large: {
    type: "invalid_request_error",
    status: 400,
    summary: "The refund's amount is more than is left to refund of its transfer; `message` says how much is left.",
    fix:
      "Refund at most what is left (the transfer's amount less its amount_refunded), or leave amount out for all of it."
  },
  transfer_already_refunded: {
    type: "invalid_request_error",
    status: 400,
    summary: "The transfer has been refunded in full (pending and unknown refunds count until they fail).",
    fix: "Nothing is left to refund; list the transfer's refunds to see them."
  },
  transfer_not_refundable: {
    type: "invalid_request_error",
    status: 400,
    summary: "Only an approved transfer can be refunded; `message` gives the transfer's status.",
    fix: "Wait until a pending or unknown transfer is approved; a declined transfer moved no money."
  },
  card_network_unavailable: {
    type: "api_error",
    status: 503,
    summary: "The card network could not be reached; no transfer or refund was made.",
    fix: "Retry later with the same Idempotency-Key."
  },
  url_refused: {
    type: "invalid_request_error",
    status: 400,
    summary:
      "The webhook endpoint's URL is not one the service sends to (not https, credentials in it, or a private, loopback or link-local address).",
    fix: "Register a public https URL; `message` says which rule it broke."
  },
  service_unavailable: {
    type: "api_error",
    status: 503,
    summary:
      "The database is unreachable or cannot take writes (down, restarting, or out of disk); nothing was written.",
    fix: "Retry after the Retry-After header's seconds, with the same Idempotency-Key for a POST, so it is done once."
  },
  internal_error: {
    type: "api_error",
    status: 500,
    summary: "Something went wrong on our side; nothing was half-written.",
    fix: "Retry later; quote the request_id when reporting it."
  }
} as const

export type ErrorCode = keyof typeof ErrorCatalog
export const errorCodes = Object.keys(ErrorCatalog) as ReadonlyArray<ErrorCode>
