import { DateTime } from "effect"
import { type Day, startOfDay } from "../../core/console/DailyFigures.ts"
import { escapeHtml as escape } from "../../core/subscriptions/ConfirmationMail.ts"

// Bar charts as inline SVG, drawn on the server: one bar per day and series, a `<title>` on each bar, and the
// figures again as a table (the chart's text equivalent). No script and no style attribute: the console's CSP
// allows neither, so colours and sizes are SVG presentation attributes.

export interface Series {
  readonly name: string
  readonly values: ReadonlyArray<number>
  // Each value as the bar's title says it.
  readonly shown: ReadonlyArray<string>
  readonly color: string
}

export interface Chart {
  readonly id: string
  readonly title: string
  // One sentence for screen readers: what the chart shows over the days.
  readonly summary: string
  readonly days: ReadonlyArray<Day>
  readonly series: ReadonlyArray<Series>
  // The top of the scale, when it is fixed (a rate: 100); else the largest value.
  readonly max?: number
  readonly axis: (value: number) => string
  // The table's columns after the day; the series' shown values when not given.
  readonly columns?: ReadonlyArray<{ readonly name: string; readonly cells: ReadonlyArray<string> }>
}

export const dateOf = (day: Day) => DateTime.formatIso(startOfDay(day)).slice(0, 10)

const Width = 720
const Height = 200
const Left = 64
const Bottom = 24
const Top = 8

const bars = (chart: Chart, max: number) => {
  const slot = (Width - Left) / chart.days.length
  const bar = (slot * 0.8) / chart.series.length
  const plot = Height - Bottom - Top
  return chart.series.flatMap((s, k) =>
    chart.days.map((day, i) => {
      const height = max === 0 ? 0 : (Math.max(0, s.values[i]!) / max) * plot
      const x = Left + i * slot + slot * 0.1 + k * bar
      return `<rect x="${x.toFixed(1)}" y="${(Top + plot - height).toFixed(1)}" width="${bar.toFixed(1)}" height="${
        height.toFixed(1)
      }" fill="${s.color}"><title>${escape(`${dateOf(day)}, ${s.name}: ${s.shown[i]}`)}</title></rect>`
    })
  ).join("")
}

const label = (x: number, y: number, text: string, anchor = "start") =>
  `<text x="${x}" y="${y}" font-size="11" fill="#333" text-anchor="${anchor}">${escape(text)}</text>`

const svg = (chart: Chart) => {
  const max = chart.max ?? Math.max(0, ...chart.series.flatMap((s) => s.values))
  const base = Height - Bottom
  const first = chart.days[0]!
  const last = chart.days[chart.days.length - 1]!
  return `<svg role="img" aria-labelledby="${chart.id}-title ${chart.id}-desc" viewBox="0 0 ${Width} ${Height}" width="100%" preserveAspectRatio="xMidYMid meet" xmlns="http://www.w3.org/2000/svg">
<title id="${chart.id}-title">${escape(chart.title)}</title><desc id="${chart.id}-desc">${escape(chart.summary)}</desc>
<line x1="${Left}" y1="${base}" x2="${Width}" y2="${base}" stroke="#555" stroke-width="1"/>
<line x1="${Left}" y1="${Top}" x2="${Left}" y2="${base}" stroke="#555" stroke-width="1"/>
${label(Left - 4, Top + 10, chart.axis(max), "end")}${label(Left - 4, base, chart.axis(0), "end")}
${label(Left, Height - 6, dateOf(first))}${label(Width, Height - 6, dateOf(last), "end")}
${bars(chart, max)}
</svg>`
}

const table = (chart: Chart) => {
  const columns = chart.columns ?? chart.series.map((s) => ({ name: s.name, cells: s.shown }))
  return `<table><caption>${escape(chart.title)}, per day</caption>
<thead><tr><th scope="col">Day (UTC)</th>${
    columns.map((c) => `<th scope="col">${escape(c.name)}</th>`).join("")
  }</tr></thead>
<tbody>
${
    chart.days.map((day, i) =>
      `<tr><th scope="row">${dateOf(day)}</th>${
        columns.map((c) => `<td class="amount">${escape(c.cells[i]!)}</td>`).join("")
      }</tr>`
    ).join("\n")
  }
</tbody></table>`
}

const legend = (chart: Chart) =>
  chart.series.length < 2 ?
    "" :
    `<p>${
      chart.series.map((s) =>
        `<svg aria-hidden="true" width="12" height="12"><rect width="12" height="12" fill="${s.color}"/></svg> ${
          escape(s.name)
        }`
      ).join(" ")
    }</p>`

// A chart with its heading, legend and table.
export const figure = (chart: Chart) =>
  `<section aria-labelledby="${chart.id}-heading"><h2 id="${chart.id}-heading">${escape(chart.title)}</h2>
${legend(chart)}${svg(chart)}
${table(chart)}</section>`
