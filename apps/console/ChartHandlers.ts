import { Effect } from "effect"
import { Charts } from "../../core/console/Charts.ts"
import { group } from "../http/pipeline/ApiHandlers.ts"
import { merchantChartsPage, newsletterChartsPage } from "./ChartPages.ts"
import { ServedApi } from "./ConsoleApi.ts"
import { consoleSession } from "./ConsoleSession.ts"

export const ChartsLive = group(ServedApi, "charts", (handlers) =>
  Effect.gen(function*() {
    const { page } = yield* consoleSession
    const charts = yield* Charts
    return handlers
      .handle("merchant", ({ headers }) =>
        page(headers, "merchant", (session, shown) =>
          Effect.map(charts.merchant(session.clientId!), (figures) =>
            merchantChartsPage(shown, figures))))
      .handle("newsletter", ({ headers }) =>
        page(headers, "admin", (_session, shown) =>
          Effect.map(charts.newsletter, (figures) =>
            newsletterChartsPage(shown, figures))))
  }))
