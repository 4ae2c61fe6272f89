import { closeSync, fstatSync, fsyncSync, ftruncateSync, openSync, readSync, writeSync } from "node:fs"

// The receipts of accepted mails (core/subscriptions/MailReceipts.ts) in a file of fixed size: Slots places of
// 16 bytes, each free (zeros) or holding one outbox row's id, twice (the id, then its negation, so that a place
// half written reads as free). The main thread hands a place to each mail it sends (take) and frees it once the
// row's mark is done with (settle: the place is zeroed) or the send failed (release); the delivery thread writes
// the id into the mail's place once the server accepted the mail, before it answers (note). A crash of the
// process loses no write that returned (the page cache keeps it); a power cut may lose notes, which costs only
// duplicates. Nothing is fsynced after the file is made. docs/decisions/0037.
//
// Bounded by design: 4,096 places (64 KiB) against at most a few hundred mails in flight (MAIL_CONCURRENCY times
// the outbox's batch growth). A mail sent while every place is taken goes without a receipt.
export const Slots = 4096
const SlotBytes = 16

const encode = (id: number): Buffer => {
  const bytes = Buffer.alloc(SlotBytes)
  bytes.writeDoubleLE(id, 0)
  bytes.writeDoubleLE(-id, 8)
  return bytes
}
const Free = Buffer.alloc(SlotBytes)

const decode = (bytes: Buffer, slot: number): number | undefined => {
  const id = bytes.readDoubleLE(slot * SlotBytes)
  const check = bytes.readDoubleLE(slot * SlotBytes + 8)
  return Number.isSafeInteger(id) && id > 0 && check === -id ? id : undefined
}

// The delivery thread's side: the server accepted the mail of `id`, whose place is `slot`.
export const note = (fd: number, slot: number, id: number): void => {
  writeSync(fd, encode(id), 0, SlotBytes, slot * SlotBytes)
}
export const openForNotes = (path: string): number => openSync(path, "r+")

export interface ReceiptFile {
  // The rows noted and not settled when the file was opened.
  readonly unsettled: ReadonlyArray<number>
  // A place for the mail of row `id`; none when every place is taken.
  readonly take: (id: number) => number | undefined
  // The send failed: nothing was noted, the place is free again.
  readonly release: (id: number) => void
  // The rows' marks are done with: their places are zeroed and free again.
  readonly settle: (ids: ReadonlyArray<number>) => void
  readonly close: () => void
}

// The main thread's side, opened before the delivery thread starts. Made (zeros, fsynced once) when missing.
export const openReceiptFile = (path: string): ReceiptFile => {
  const fd = openSync(path, "a+")
  closeSync(fd)
  const file = openSync(path, "r+")
  const size = Slots * SlotBytes
  if (fstatSync(file).size !== size) {
    ftruncateSync(file, size)
    fsyncSync(file)
  }
  const bytes = Buffer.alloc(size)
  readSync(file, bytes, 0, size, 0)
  const held = new Map<number, number>()
  const free: Array<number> = []
  for (let slot = Slots - 1; slot >= 0; slot--) {
    const id = decode(bytes, slot)
    if (id !== undefined && !held.has(id)) held.set(id, slot)
    else free.push(slot)
  }
  const unsettled = [...held.keys()]
  const release = (id: number) => {
    const slot = held.get(id)
    if (slot === undefined) return
    held.delete(id)
    free.push(slot)
  }
  return {
    unsettled,
    take: (id) => {
      if (held.has(id)) return undefined
      const slot = free.pop()
      if (slot !== undefined) held.set(id, slot)
      return slot
    },
    release,
    settle: (ids) => {
      for (const id of ids) {
        const slot = held.get(id)
        if (slot === undefined) continue
        writeSync(file, Free, 0, SlotBytes, slot * SlotBytes)
        release(id)
      }
    },
    close: () => closeSync(file)
  }
}
