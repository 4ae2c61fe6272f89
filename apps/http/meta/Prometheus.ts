import { Metric, type MetricLabel, MetricState } from "effect"

// Every Effect metric of the process in the Prometheus text exposition format (version 0.0.4): counters and
// gauges as they are, histograms as cumulative buckets with _sum and _count, frequencies as one counter per
// value. Metric names already follow Prometheus' rules; label values are escaped here.
const escape = (value: string) => value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, "\\\"")

const labelText = (labels: ReadonlyArray<MetricLabel.MetricLabel>, extra: ReadonlyArray<[string, string]> = []) => {
  const all = [...labels.map((l): [string, string] => [l.key, l.value]), ...extra]
  return all.length === 0 ? "" : `{${all.map(([k, v]) => `${k}="${escape(v)}"`).join(",")}}`
}

const number = (n: number | bigint) =>
  typeof n === "bigint" ? n.toString() : n === Infinity ? "+Inf" : n === -Infinity ? "-Inf" : String(n)

export const prometheusText = (): string => {
  const families = new Map<string, { type: string; help: string | undefined; lines: Array<string> }>()
  const family = (name: string, type: string, help: string | undefined) => {
    let found = families.get(name)
    if (found === undefined) families.set(name, found = { type, help, lines: [] })
    return found.lines
  }
  for (const { metricKey: key, metricState: state } of Metric.unsafeSnapshot()) {
    const { name, tags } = key
    const help = key.description._tag === "Some" ? key.description.value : undefined
    if (MetricState.isCounterState(state)) {
      family(name, "counter", help).push(`${name}${labelText(tags)} ${number(state.count)}`)
    } else if (MetricState.isGaugeState(state)) {
      family(name, "gauge", help).push(`${name}${labelText(tags)} ${number(state.value)}`)
    } else if (MetricState.isHistogramState(state)) {
      const lines = family(name, "histogram", help)
      for (const [bound, count] of state.buckets) {
        lines.push(`${name}_bucket${labelText(tags, [["le", number(bound)]])} ${count}`)
      }
      if (!state.buckets.some(([bound]) => bound === Infinity)) {
        lines.push(`${name}_bucket${labelText(tags, [["le", "+Inf"]])} ${state.count}`)
      }
      lines.push(`${name}_sum${labelText(tags)} ${state.sum}`, `${name}_count${labelText(tags)} ${state.count}`)
    } else if (MetricState.isFrequencyState(state)) {
      const lines = family(name, "counter", help)
      for (const [value, count] of state.occurrences) {
        lines.push(`${name}${labelText(tags, [["value", value]])} ${count}`)
      }
    }
  }
  const out: Array<string> = []
  for (const [name, { help, lines, type }] of families) {
    if (help !== undefined) out.push(`# HELP ${name} ${help.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")}`)
    out.push(`# TYPE ${name} ${type}`, ...lines)
  }
  return `${out.join("\n")}\n`
}
