// The confirmation mail as one RFC 5322 message (multipart/alternative: text, then HTML), built as a string and
// handed to nodemailer's pool as it is (SmtpMailer.ts). nodemailer's own composer builds a tree of MIME nodes and
// streams per mail, which cost more CPU than the signup that caused the mail (docs/decisions/0032, 0041); this
// builds the same structure with nodemailer's own encoders for the parts that need encoding.
import { encodeWords } from "nodemailer/lib/mime-funcs"
import { encode as quotedPrintable, wrap } from "nodemailer/lib/qp"
import type { Mail } from "../../core/subscriptions/Mailer.ts"

export interface Sender {
  readonly name: string
  readonly address: string
}

// "Name <address>" or a bare address; the name may be quoted. Checked once, when the mailer is made.
export const parseSender = (from: string): Sender => {
  const match = /^\s*(?:"?([^"<]*?)"?\s*)?<([^<>\s]+@[^<>\s]+)>\s*$/.exec(from) ??
    /^\s*()([^<>\s"]+@[^<>\s"]+)\s*$/.exec(from)
  if (match === null) throw new Error(`MAIL_FROM is not an address ("Name <name@example.com>" or name@example.com)`)
  return { name: (match[1] ?? "").trim(), address: match[2]! }
}

// A display name as RFC 5322 allows it: a phrase of atoms, a quoted string, or encoded words (RFC 2047) when it
// holds anything outside printable ASCII.
const phrase = (raw: string): string => {
  const name = raw.replace(/[\r\n]+/g, " ")
  if (name === "") return ""
  if (/[^\x20-\x7e]/.test(name)) return encodeWords(name, "Q", 52, true)
  if (/^[A-Za-z0-9!#$%&'*+/=?^_`{|}~ -]+$/.test(name)) return name
  return `"${name.replace(/[\\"]/g, "\\$&")}"`
}
const mailbox = (m: Sender) => (m.name === "" ? `<${m.address}>` : `${phrase(m.name)} <${m.address}>`)

// Unstructured header values (the subject): encoded words when not printable ASCII, folded at 78.
const unstructured = (value: string): string =>
  /[^\x20-\x7e]/.test(value) ? encodeWords(value, "Q", 52, true) : value.replace(/[\r\n]+/g, " ")

const fold = (line: string): string => {
  if (line.length <= 78) return line
  const out: Array<string> = []
  let rest = line
  while (rest.length > 78) {
    const at = rest.lastIndexOf(" ", 78)
    if (at <= 0) break
    out.push(rest.slice(0, at))
    rest = rest.slice(at)
  }
  out.push(rest)
  return out.join("\r\n")
}

const body = (text: string) => wrap(quotedPrintable(Buffer.from(text.replace(/\r?\n/g, "\r\n"), "utf8")), 76)

export const compose = (
  from: Sender,
  mail: Mail,
  date: Date,
  messageId: string,
  boundary: string
): { readonly raw: string; readonly messageId: string } => {
  const id = `<${messageId}@${from.address.slice(from.address.lastIndexOf("@") + 1)}>`
  const headers = [
    `From: ${mailbox(from)}`,
    `To: ${mailbox({ name: mail.to.name, address: mail.to.address })}`,
    `Subject: ${unstructured(mail.subject)}`,
    `Date: ${date.toUTCString().replace("GMT", "+0000")}`,
    `Message-ID: ${id}`,
    ...Object.entries(mail.headers).map(([name, value]) => `${name}: ${unstructured(value)}`),
    "MIME-Version: 1.0",
    `Content-Type: multipart/alternative; boundary="${boundary}"`
  ].map(fold)
  const part = (type: string, content: string) =>
    [
      `--${boundary}`,
      `Content-Type: ${type}; charset=utf-8`,
      "Content-Transfer-Encoding: quoted-printable",
      "",
      body(content)
    ].join("\r\n")
  return {
    raw: `${headers.join("\r\n")}\r\n\r\n${part("text/plain", mail.text)}\r\n${
      part("text/html", mail.html)
    }\r\n--${boundary}--\r\n`,
    messageId: id
  }
}
