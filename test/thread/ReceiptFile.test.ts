import { assert, describe, it } from "@effect/vitest"
import { mkdtempSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { note, openForNotes, openReceiptFile, Slots } from "../../adapters/thread/ReceiptFile.ts"

// The receipt file of accepted mails, on a real file: what the delivery thread noted and the main thread did
// not settle is read back by the next process to open it, and nothing else is.
const freshPath = () => join(mkdtempSync(join(tmpdir(), "paysub-receipts-")), "paysub.db-mail-receipts")

describe("ReceiptFile", () => {
  it("a note not settled is read back at the next open; settled and released places are not", () => {
    const path = freshPath()
    const first = openReceiptFile(path)
    assert.deepStrictEqual(first.unsettled, [])
    const notes = openForNotes(path)
    const [a, b, c] = [first.take(101)!, first.take(102)!, first.take(103)!]
    note(notes, a, 101)
    note(notes, b, 102)
    first.settle([101])
    first.release(103)
    void c
    first.close()
    assert.strictEqual(statSync(path).size, Slots * 16)
    const second = openReceiptFile(path)
    assert.deepStrictEqual(second.unsettled, [102])
    second.settle(second.unsettled)
    second.close()
    assert.deepStrictEqual(openReceiptFile(path).unsettled, [])
  })

  it("holds at most Slots places, one per row; a place settled is given again", () => {
    const file = openReceiptFile(freshPath())
    const places = new Set(Array.from({ length: Slots }, (_, i) => file.take(i + 1)))
    assert.strictEqual(places.size, Slots)
    assert.isFalse(places.has(undefined))
    assert.isUndefined(file.take(Slots + 1), "every place is taken")
    file.settle([7])
    assert.isDefined(file.take(Slots + 1))
    assert.isUndefined(file.take(8), "row 8 has its place already")
  })

  it("a place half written, or bytes that are not a note, read as free", () => {
    const path = freshPath()
    const bytes = Buffer.alloc(Slots * 16)
    bytes.writeDoubleLE(5, 0) // the id without its check
    bytes.writeDoubleLE(6, 16)
    bytes.writeDoubleLE(-6, 24) // a whole note
    bytes.writeDoubleLE(2.5, 32)
    bytes.writeDoubleLE(-2.5, 40) // not an id
    writeFileSync(path, bytes)
    assert.deepStrictEqual(openReceiptFile(path).unsettled, [6])
  })
})
