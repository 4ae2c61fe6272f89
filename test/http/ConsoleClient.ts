// A browser's side of the console without a browser: fetch over the app's own socket (console pages are not
// in the OpenAPI document, so they do not pass the contract-checking proxy), cookies kept as a browser keeps
// them, redirects not followed so that every answer can be read.
export interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  readonly setCookies: ReadonlyArray<string>
}

const hiddenToken = /name="csrf_token" value="([^"]+)"/

export class ConsoleClient {
  readonly cookies = new Map<string, string>()
  constructor(readonly appUrl: string, readonly headers: Record<string, string> = {}) {}

  private async send(method: string, path: string, body?: Record<string, string>): Promise<Answer> {
    const response = await fetch(`${this.appUrl}${path}`, {
      method,
      redirect: "manual",
      headers: {
        ...this.headers,
        ...(this.cookies.size === 0 ? {} : { cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ") }),
        ...(body === undefined ? {} : { "content-type": "application/x-www-form-urlencoded" })
      },
      ...(body === undefined ? {} : { body: new URLSearchParams(body).toString() })
    })
    const setCookies = response.headers.getSetCookie()
    for (const line of setCookies) {
      const [pair, ...attributes] = line.split(";")
      const [name, value] = pair!.split("=") as [string, string]
      const expired = attributes.some((a) => /^\s*(max-age=0|expires=thu, 01 jan 1970)/i.test(a))
      if (expired || value === "") this.cookies.delete(name)
      else this.cookies.set(name, value)
    }
    return { status: response.status, headers: response.headers, text: await response.text(), setCookies }
  }

  get(path: string): Promise<Answer> {
    return this.send("GET", path)
  }
  post(path: string, fields: Record<string, string>): Promise<Answer> {
    return this.send("POST", path, fields)
  }

  // The CSRF token of the (first) form on a page.
  static token(page: Answer): string {
    const match = hiddenToken.exec(page.text)
    if (match === null) throw new Error(`no csrf_token on the page:\n${page.text}`)
    return match[1]!
  }

  // Opens the sign-in page and posts the key with the form's token.
  async signIn(key: string): Promise<Answer> {
    const form = await this.get("/console")
    return this.post("/console/sign-in", { api_key: key, csrf_token: ConsoleClient.token(form) })
  }
}
