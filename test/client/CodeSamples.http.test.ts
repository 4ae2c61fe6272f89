import { assert, describe, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import { copyFileSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import ts from "typescript"
import { afterAll, beforeAll } from "vitest"
import { Calls, SampleIds } from "../../apps/http/meta/CodeSamples.ts"
import { gettingStarted } from "../../apps/http/meta/GettingStarted.ts"
import { AdminKey, AppProcess, cliBundle } from "../support/AppProcess.ts"
import { accountUri, createClient, uniqueReference, unlimitedEnv } from "../support/Payments.ts"
import { SmtpTestServer } from "../support/SmtpTestServer.ts"
import { webhookEnv, WebhookReceiver } from "../support/WebhookReceiver.ts"

// The document's code samples, as the app serves them in /openapi.json, run against the app: each curl sample
// in a shell, each TypeScript sample type-checked against the generated types (test/client/paysub.d.ts) and
// run with tsx. What a reader fills in (a key, a transfer's or endpoint's id, the token from a mail) comes from
// a fresh API client and objects made for each run: the samples' example ids are swapped for those.
// The samples are written to a directory of their own, beside the generated types as a reader keeps them, with
// the project's node_modules linked in (openapi-fetch, tsx).
const root = resolve(import.meta.dirname, "../..")
const scratch = mkdtempSync(join(tmpdir(), "paysub-samples-"))

let app: AppProcess
let smtp: SmtpTestServer
let receiver: WebhookReceiver
let document: any
beforeAll(async () => {
  smtp = await SmtpTestServer.start()
  receiver = await WebhookReceiver.start()
  app = await AppProcess.start({
    env: { ...unlimitedEnv, ...webhookEnv, MAIL_TRANSPORT: "smtp", SMTP_URL: smtp.url }
  })
  document = await (await fetch(`${app.baseUrl}/openapi.json`)).json()
  symlinkSync(join(root, "node_modules"), join(scratch, "node_modules"))
  copyFileSync(join(root, "test/client/paysub.d.ts"), join(scratch, "paysub.d.ts"))
}, 60_000)
afterAll(async () => {
  await app?.stop()
  await smtp?.stop()
  await receiver?.down()
  rmSync(scratch, { recursive: true, force: true })
})

const run = (command: string, args: ReadonlyArray<string>, env: Record<string, string>) =>
  new Promise<string>((ok, fail) => {
    const child = spawn(command, args, { cwd: scratch, env: { ...process.env, ...env }, stdio: "pipe" })
    let out = ""
    let err = ""
    child.stdout.on("data", (chunk) => (out += chunk))
    child.stderr.on("data", (chunk) => (err += chunk))
    child.on("error", fail)
    child.on(
      "exit",
      (code) => (code === 0 ? ok(out) : fail(new Error(`${command} exited with ${code}:\n${out}${err}`)))
    )
  })
const shell = (source: string, env: Record<string, string>) => run("sh", ["-c", source], env)

let counter = 0
const unique = (tag: string) => `${tag}-${process.pid}-${++counter}`
const merchant = async () => (await createClient(app, unique("samples"))).api_key
const call = (key: string | undefined, method: string, path: string, body?: unknown) =>
  fetch(`${app.baseUrl}${path}`, {
    method,
    headers: { ...(key === undefined ? {} : { authorization: `Bearer ${key}` }), "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  }).then((r) => r.json() as Promise<any>)
const approvedTransfer = async (key: string) =>
  (await call(key, "POST", "/merchant/transfers/payment", {
    payment_transfer: {
      reference: uniqueReference("sample"),
      amount: "12.30",
      currency: "USD",
      sender_account_uri: accountUri("4242424242424242"),
      sender: { first_name: "Ann", email: "ann@example.com" },
      recipient: { first_name: "Bob", email: "bob@example.com", merchant_id: "merchant_1" }
    }
  })).payment_transfer.id as string
// Its deliveries fail (nothing answers there): the receiver takes only getting started's.
const endpoint = async (key: string) =>
  (await call(key, "POST", "/webhook_endpoints", { url: "https://hooks.example.com/paysub", enabled_events: ["*"] }))
    .id as string
const mailTokens = async () => {
  const email = `${unique("ann")}@example.com`
  await call(undefined, "POST", "/subscribe", { name: "Ann", email })
  const mail = await smtp.waitFor((m) => m.envelope.to.includes(email), 10_000)
  const token = (url: string) => new URL(url).searchParams.get("token")!
  return {
    confirm: token(mail.text!.match(/https?:\/\/\S+\/subscribe\/confirm\?token=[\w-]+/)![0]),
    unsubscribe: token(mail.headers["list-unsubscribe"]!.slice(1, -1))
  }
}

// What each run needs made first, as the values its sample names in their place, and the status it answers.
type Fill = Record<string, string>
const setups: Record<string, { readonly status: number; readonly fill: (key: string) => Promise<Fill> }> = {
  "transfers.create": { status: 201, fill: async () => ({}) },
  "refunds.create": { status: 201, fill: async (key) => ({ [SampleIds.transfer]: await approvedTransfer(key) }) },
  "webhooks.create": { status: 201, fill: async () => ({}) },
  "webhooks.rotate": { status: 200, fill: async (key) => ({ [SampleIds.endpoint]: await endpoint(key) }) },
  "webhooks.delete": { status: 204, fill: async (key) => ({ [SampleIds.endpoint]: await endpoint(key) }) },
  "webhooks.resend": {
    status: 202,
    fill: async (key) => {
      const id = await endpoint(key)
      await approvedTransfer(key)
      return { [SampleIds.endpoint]: id, [SampleIds.event]: (await call(key, "GET", "/events?limit=1")).data[0].id }
    }
  },
  "subscriptions.subscribe": { status: 200, fill: async () => ({ "ann@example.com": `${unique("ann")}@example.com` }) },
  "subscriptions.confirm": { status: 200, fill: async () => ({ [SampleIds.token]: (await mailTokens()).confirm }) },
  "subscriptions.unsubscribe": {
    status: 200,
    fill: async () => ({ [SampleIds.token]: (await mailTokens()).unsubscribe })
  },
  "feeds.put": { status: 201, fill: async () => ({ releases: unique("releases") }) },
  "feeds.delete": {
    status: 204,
    fill: async () => {
      const name = unique("releases")
      await call(AdminKey, "PUT", `/feeds/${name}`, { title: "Release notes" })
      return { releases: name }
    }
  }
}
const filled = (source: string, fill: Fill) =>
  Object.entries(fill).reduce((s, [example, value]) => s.replaceAll(example, value), source)

const samplesOf = (operationId: string) => {
  for (const item of Object.values<any>(document.paths)) {
    for (const operation of Object.values<any>(item)) {
      if (operation.operationId === operationId) return operation["x-codeSamples"] as Array<any>
    }
  }
  throw new Error(`no operation ${operationId}`)
}

describe("the code samples in the document", () => {
  it("are on every POST, PUT and DELETE a client sends, curl and TypeScript, and each is run here", () => {
    const writes = Object.values<any>(document.paths).flatMap((item) =>
      ["post", "put", "delete"].flatMap((m) => (item[m] === undefined ? [] : [item[m].operationId]))
    )
    assert.sameMembers(writes, Object.keys(setups))
    assert.sameMembers(Object.keys(Calls), Object.keys(setups))
    for (const id of writes) assert.deepStrictEqual(samplesOf(id).map((s) => s.label), ["curl", "TypeScript"])
  })

  it("type-check against the generated client types", () => {
    const files = Object.keys(setups).map((id) => {
      const file = join(scratch, `check-${id}.mts`)
      writeFileSync(file, samplesOf(id)[1].source)
      return file
    })
    const program = ts.createProgram(files, {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      types: ["node"],
      skipLibCheck: true
    })
    const errors = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"))
    assert.deepStrictEqual(errors, [])
  }, 60_000)

  for (const [operationId, setup] of Object.entries(setups)) {
    it(`${operationId}: curl answers ${setup.status}`, async () => {
      const key = await merchant()
      const source = filled(samplesOf(operationId)[0].source, await setup.fill(key))
      const output = await shell(source, { PAYSUB_KEY: key, PAYSUB_ADMIN_KEY: AdminKey })
      assert.match(output, new RegExp(`^HTTP/1\\.1 ${setup.status} `), output)
    }, 30_000)

    it(`${operationId}: TypeScript answers ${setup.status}`, async () => {
      const key = await merchant()
      const file = join(scratch, `${operationId}.mts`)
      writeFileSync(file, filled(samplesOf(operationId)[1].source, await setup.fill(key)))
      const output = await run(process.execPath, ["--import", "tsx", file], {
        PAYSUB_KEY: key,
        PAYSUB_ADMIN_KEY: AdminKey
      })
      assert.match(output, new RegExp(`^${setup.status} `), output)
    }, 30_000)
  }
})

// An answer as the description shows it holds when the output has its status, its header fields and each
// member it shows (up to a "..." in its value).
const assertHolds = (answer: string, output: string) => {
  const compact = output.replace(/":\s+/g, "\":").toLowerCase()
  const [head, body = head] = answer.includes("\n\n") ? answer.split("\n\n") : ["", answer]
  for (const line of head.split("\n").filter((l) => l !== "")) {
    const shown = line.toLowerCase().split("...")[0]!
    assert.include(compact, shown, `the answer's "${line}" in:\n${output}`)
  }
  for (const [, name, value] of body.matchAll(/"([\w-]+)": "([^"]*)"/g)) {
    assert.include(compact, `"${name}":"${value!.split("...")[0]}`.toLowerCase(), `"${name}" in:\n${output}`)
  }
}

describe("getting started, as the document's description walks it", () => {
  it("gets a key, makes and retries a transfer, refunds it, and verifies a webhook's delivery", async () => {
    const steps = gettingStarted(app.baseUrl)
    const env: Record<string, string> = {}
    const exchange = async (step: number, index: number, fill: Fill = {}) => {
      const { answer, sample } = steps[step]!.exchanges[index]!
      const output = await shell(filled(sample, fill), env)
      assertHolds(filled(answer, fill), output)
      return output
    }
    // `npm run cli --` builds the bundles, then runs the CLI's: here they are built already.
    const created = await shell(
      steps[0]!.exchanges[0]!.sample.replace("npm run cli --", `node ${cliBundle}`),
      { DATABASE_URL: app.databaseUrl }
    )
    assertHolds(steps[0]!.exchanges[0]!.answer, created)
    env.PAYSUB_KEY = JSON.parse(created.trim().split("\n").pop()!).api_key

    const approved = await exchange(1, 0)
    const transfer = /"id":"(tr_\w+)"/.exec(approved)![1]!
    await exchange(1, 1)
    assert.include(await exchange(2, 0), transfer)
    assert.include(await exchange(3, 0, { "tr_...": transfer }), `"transfer":"${transfer}"`)

    const registered = await exchange(4, 0, { "https://hooks.example.com/paysub": receiver.url })
    receiver.secret = /"secret":"(whsec_[^"]+)"/.exec(registered)![1]!
    const next = await approvedTransfer(env.PAYSUB_KEY)
    await receiver.waitFor((all) => all.some((w) => w.event.data.object.id === next))
    assert.deepStrictEqual(receiver.rejected, [])
  }, 60_000)
})
