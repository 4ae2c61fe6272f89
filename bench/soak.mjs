// `npm run bench -- --soak[=S] [--deno] [--targets=deno]`: the memory budget over time. Each target (the Node app, and the Deno
// app with --deno) runs the bench's scenarios one after the other, 10 s each, round and round, for S seconds
// (600 by default), with its mail going to the SMTP sink. Its resident set is sampled every 5 s. The first round
// of the scenarios warms every path; the resident set at its end is where the load started. Budgets (the
// per-request-cost issue's decision 3): the peak at most 256 MB on Node and 320 MB on Deno, and the end at most
// 10% above where the load started.
import { mkdtempSync, rmSync } from "node:fs"
import os from "node:os"
import { join } from "node:path"
import {
  buildApp,
  killAllSync,
  prepareTarget,
  procStats,
  runScenario,
  scenarioOrder,
  sleep,
  startSmtpSink,
  startTarget
} from "./lib/harness.mjs"

const budgets = { service: 256, deno: 320 }
const SampleEveryMs = 5_000
const ScenarioS = 10
const MaxGrowth = 1.1

const mb = (kb) => kb / 1024
const fmt = (n) => n.toFixed(0)

const soakOne = async (name, sink, seconds, connections) => {
  const dataDir = mkdtempSync(join(os.tmpdir(), `paysub-soak-${name}-`))
  const target = await startTarget(name, { dataDir, smtpPort: sink.port })
  const samples = []
  const sample = () => samples.push({ at: Date.now(), rssMb: mb(procStats(target.pid).rssKb) })
  try {
    const ctx = await prepareTarget(target, scenarioOrder)
    const started = Date.now()
    sample()
    const timer = setInterval(sample, SampleEveryMs)
    let warmedAt
    let requests = 0
    let unexpected = 0
    try {
      for (let round = 0; Date.now() - started < seconds * 1000; round++) {
        for (const scenario of scenarioOrder) {
          const run = await runScenario(target, scenario, ctx, { duration: ScenarioS, connections, measure: false })
          requests += run.requestsSent
          unexpected += run.unexpectedResponses ?? 0
          if (Date.now() - started >= seconds * 1000) break
        }
        if (round === 0) {
          sample()
          warmedAt = samples.length - 1
        }
      }
    } finally {
      clearInterval(timer)
    }
    sample()
    if (warmedAt === undefined) {
      throw new Error(
        `a soak shorter than one round of the scenarios (${scenarioOrder.length * ScenarioS} s) has no start`
      )
    }
    const start = samples[warmedAt].rssMb
    // The end: the mean of the last three samples, so that one garbage collection's moment does not decide.
    const last = samples.slice(-3)
    const end = last.reduce((a, s) => a + s.rssMb, 0) / last.length
    const peak = Math.max(...samples.map((s) => s.rssMb))
    const result = {
      target: name,
      seconds: Math.round((Date.now() - started) / 1000),
      requests,
      unexpected,
      startMb: start,
      endMb: end,
      peakMb: peak,
      growth: end / start,
      budgetMb: budgets[name],
      withinBudget: peak <= budgets[name],
      flat: end / start <= MaxGrowth,
      samples
    }
    console.log(
      `  ${name.padEnd(8)} ${result.seconds} s, ${requests} requests${
        unexpected > 0 ? ` (!! ${unexpected} unexpected)` : ""
      }: ` +
        `RSS at the load's start ${fmt(start)} MB, at the end ${fmt(end)} MB (${
          ((result.growth - 1) * 100).toFixed(1)
        }%, ` +
        `at most +${fmt((MaxGrowth - 1) * 100)}%: ${result.flat ? "flat" : "!! GROWS"}), peak ${fmt(peak)} MB ` +
        `(budget ${budgets[name]} MB: ${result.withinBudget ? "within" : "!! OVER"})`
    )
    return result
  } finally {
    await target.stop()
    rmSync(dataDir, { recursive: true, force: true })
  }
}

export const soak = async ({ seconds, deno, connections, only }) => {
  const targets = ["service", ...(deno ? ["deno"] : [])].filter((t) => only === undefined || only.includes(t))
  console.log(
    `bench --soak: ${targets.join(", ")} for ${seconds} s each, the scenarios (${
      scenarioOrder.join(", ")
    }) ${ScenarioS} s at a time, ${connections} connections, RSS every ${SampleEveryMs / 1000} s`
  )
  buildApp()
  const sink = await startSmtpSink()
  const results = []
  try {
    for (const name of targets) results.push(await soakOne(name, sink, seconds, connections))
  } finally {
    await sink.stop()
    killAllSync()
  }
  await sleep(0)
  return results
}
