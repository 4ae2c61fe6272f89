// The references' confirmation mail, as a hand-written service would send it: a loop claims the due outbox
// rows (leased, so a crash sends them again), issues each its confirm and unsubscribe tokens (only their
// SHA-256 stored, as the service does), sends the mails through nodemailer's SMTP pool and marks the sent
// rows; a failed one is tried again later. One transaction to claim a batch, one to mark it.
import { createHash, randomBytes } from "node:crypto"
import nodemailer from "nodemailer"

const Batch = 100
// The pool as the service configures its own (MAIL_CONCURRENCY by default, messages per connection).
const Connections = 32
const LeaseMs = 60_000
const PollMs = 1_000
const RetryMs = 30_000
const MaxAttempts = 10
const ConfirmTtlMs = 48 * 3600 * 1000
const From = "Newsletter <no-reply@localhost>"

const token = () => randomBytes(32).toString("base64url")
const sha256hex = (s) => createHash("sha256").update(s).digest("hex")
const escapeHtml = (s) =>
  s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" })[c])

// The service's confirmation mail (core/subscriptions/ConfirmationMail.ts).
const confirmationMail = (baseUrl, row) => {
  const confirm = `${baseUrl}/subscribe/confirm?token=${row.confirm}`
  const unsubscribe = `${baseUrl}/unsubscribe?token=${row.unsubscribe}`
  const validity =
    "The link is valid for 48 hours. If you did not ask for this, ignore this mail: nothing will be sent."
  return {
    from: From,
    to: { name: row.name, address: row.email },
    subject: `Confirm your subscription to ${row.title}`,
    text: `Hello ${row.name},\n\nplease confirm that you want to receive "${row.title}" at ${row.email} by ` +
      `opening this link:\n\n${confirm}\n\n${validity}\n\nUnsubscribe: ${unsubscribe}\n`,
    html: `<!doctype html>\n<html><body>\n<p>Hello ${escapeHtml(row.name)},</p>\n<p>please confirm that you want ` +
      `to receive &ldquo;${escapeHtml(row.title)}&rdquo; at ${escapeHtml(row.email)}:</p>\n<p><a href="${
        escapeHtml(confirm)
      }">Confirm my subscription</a></p>\n<p>${validity}</p>\n<p><a href="${
        escapeHtml(unsubscribe)
      }">Unsubscribe</a></p>\n</body></html>`,
    headers: { "List-Unsubscribe": `<${unsubscribe}>`, "List-Unsubscribe-Post": "List-Unsubscribe=One-Click" }
  }
}

// The statements, by driver: per row inside the transaction on SQLite (no round trips), one per batch on
// PostgreSQL (arrays) and MariaDB (lists, expanded by mysql2's query()). MariaDB locks the rows of every table a
// locking read joins (no FOR UPDATE OF), and a subscription's insert holds its feed's row shared: the claim locks
// the outbox rows alone, then reads their subscriptions.
export const outboxStatements = {
  sqlite: {
    claimMail: `SELECT o.id, o.attempts, s.id AS subscription_id, s.name, s.email, s.status, f.title FROM mail_outbox o
      JOIN subscriptions s ON s.id = o.subscription_id JOIN feeds f ON f.name = s.feed
      WHERE o.sent_at IS NULL AND o.next_attempt_at <= ?
      ORDER BY o.next_attempt_at LIMIT ?`,
    leaseMail: "UPDATE mail_outbox SET next_attempt_at = ? WHERE id = ?",
    insertToken: `INSERT INTO subscription_tokens (hash, subscription_id, purpose, created_at, expires_at)
      VALUES (?, ?, ?, ?, ?)`,
    markSent: "UPDATE mail_outbox SET sent_at = ? WHERE id = ?"
  },
  pg: {
    claimMail: `SELECT o.id, o.attempts, s.id AS subscription_id, s.name, s.email, s.status, f.title FROM mail_outbox o
      JOIN subscriptions s ON s.id = o.subscription_id JOIN feeds f ON f.name = s.feed
      WHERE o.sent_at IS NULL AND o.next_attempt_at <= ?
      ORDER BY o.next_attempt_at LIMIT ? FOR UPDATE OF o SKIP LOCKED`,
    leaseMail: "UPDATE mail_outbox SET next_attempt_at = ? WHERE id = ANY(?::bigint[])",
    insertToken: `INSERT INTO subscription_tokens (hash, subscription_id, purpose, created_at, expires_at)
      SELECT * FROM unnest(?::text[], ?::bigint[], ?::text[], ?::timestamptz[], ?::timestamptz[])`,
    markSent: "UPDATE mail_outbox SET sent_at = ? WHERE id = ANY(?::bigint[])"
  },
  mysql: {
    claimMail: `SELECT id, attempts, subscription_id FROM mail_outbox FORCE INDEX (mail_outbox_due)
      WHERE sent_at IS NULL AND next_attempt_at <= ? ORDER BY next_attempt_at LIMIT ? FOR UPDATE SKIP LOCKED`,
    mailRecipients: `SELECT s.id AS subscription_id, s.name, s.email, s.status, f.title FROM subscriptions s
      JOIN feeds f ON f.name = s.feed WHERE s.id IN (?)`,
    leaseMail: "UPDATE mail_outbox SET next_attempt_at = ? WHERE id IN (?)",
    insertToken: "INSERT INTO subscription_tokens (hash, subscription_id, purpose, created_at, expires_at) VALUES ?",
    markSent: "UPDATE mail_outbox SET sent_at = ? WHERE id IN (?)"
  },
  both: {
    markFailed: `UPDATE mail_outbox SET attempts = attempts + 1, next_attempt_at = ?, last_error = ?
      WHERE id = ?`
  }
}

function* claimSteps(q, kind, time, now) {
  const rows = yield q("claimMail", [time(now), Batch])
  if (rows.length === 0) return rows
  if (kind === "mysql") {
    const recipients = new Map(
      (yield q("mailRecipients", [[...new Set(rows.map((r) => r.subscription_id))]])).map((r) => [r.subscription_id, r])
    )
    for (const row of rows) Object.assign(row, recipients.get(row.subscription_id))
  }
  // A subscription confirmed or gone since its signup gets no mail; its row counts as sent.
  const mails = rows.filter((r) => r.status === "pending")
  for (const row of mails) [row.confirm, row.unsubscribe] = [token(), token()]
  const tokens = mails.flatMap((r) => [
    [sha256hex(r.confirm), r.subscription_id, "confirm", time(now), time(now + ConfirmTtlMs)],
    [sha256hex(r.unsubscribe), r.subscription_id, "unsubscribe", time(now), null]
  ])
  if (kind !== "sqlite") {
    yield q("leaseMail", [time(now + LeaseMs), rows.map((r) => r.id)])
    // Column arrays for PostgreSQL's unnest, rows for MariaDB's VALUES ?.
    if (tokens.length > 0) {
      yield q("insertToken", kind === "pg" ? tokens[0].map((_, i) => tokens.map((t) => t[i])) : [tokens])
    }
  } else {
    for (const row of rows) yield q("leaseMail", [time(now + LeaseMs), row.id])
    for (const t of tokens) yield q("insertToken", t)
  }
  return rows
}

function* markSteps(q, kind, time, now, sent, failed) {
  if (kind !== "sqlite") {
    if (sent.length > 0) yield q("markSent", [time(now), sent.map((r) => r.id)])
  } else {
    for (const row of sent) yield q("markSent", [time(now), row.id])
  }
  for (const { row, error } of failed) {
    const next = row.attempts + 1 >= MaxAttempts ? null : time(now + RetryMs * (row.attempts + 1))
    yield q("markFailed", [next, String(error?.message ?? error).slice(0, 500), row.id])
  }
}

// Starts the loop on a reference's driver; wake() after a signup, stop() to end it.
export const startOutbox = ({ db, smtpUrl, baseUrl }) => {
  const transport = nodemailer.createTransport({
    url: smtpUrl,
    pool: true,
    maxConnections: Connections,
    maxMessages: 1000
  })
  let stopped = false
  let wakeUp
  const pass = async () => {
    const rows = await db.tx(claimSteps, db.kind, db.time, Date.now())
    if (rows.length === 0) return 0
    const outcomes = await Promise.allSettled(
      rows.map((r) => r.status === "pending" ? transport.sendMail(confirmationMail(baseUrl, r)) : undefined)
    )
    const sent = rows.filter((_, i) => outcomes[i].status === "fulfilled")
    const failed = rows.flatMap((row, i) =>
      outcomes[i].status === "rejected" ? [{ row, error: outcomes[i].reason }] : []
    )
    await db.tx(markSteps, db.kind, db.time, Date.now(), sent, failed)
    return rows.length
  }
  const done = (async () => {
    while (!stopped) {
      const taken = await pass().catch((e) => (console.error("outbox pass failed:", e), 0))
      if (taken === 0 && !stopped) {
        await new Promise((resolve) => {
          wakeUp = resolve
          setTimeout(resolve, PollMs)
        })
      }
    }
  })()
  return {
    wake: () => wakeUp?.(),
    stop: async () => {
      stopped = true
      wakeUp?.()
      await done
      transport.close()
    }
  }
}
