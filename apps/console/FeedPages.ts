import { escapeHtml as escape } from "../../core/subscriptions/ConfirmationMail.ts"
import type { Feed } from "../../core/subscriptions/Feed.ts"
import { type Subscription, SubscriptionStatus } from "../../core/subscriptions/Subscription.ts"
import type { StatusCounts } from "../../core/subscriptions/SubscriptionStorage.ts"
import { consolePage, csrfField, type SignedIn, time } from "./ConsolePage.ts"

// The list owner's feeds: the list with a form to create one, and a page per feed with its counts by status, a
// search by address, its subscribers a page at a time, the CSV export, and the forms to rename and delete it.
export const feedHref = (name: string) => `/console/newsletter/feeds/${encodeURIComponent(name)}`
export const subscriberHref = (s: Pick<Subscription, "id">) => `/console/newsletter/subscribers/${s.id}`

// A refused form, shown again with what was typed and why.
export interface FeedForm {
  readonly name?: string | undefined
  readonly title?: string | undefined
  readonly error?: string | undefined
  readonly status?: number | undefined
}

const problem = (id: string, form: FeedForm) =>
  form.error === undefined ? "" : `<p id="${id}" class="error" role="alert">${escape(form.error)}</p>`
const invalid = (id: string, form: FeedForm) =>
  form.error === undefined ? "" : ` aria-invalid="true" aria-describedby="${id}"`

const createForm = (signedIn: SignedIn, form: FeedForm) =>
  `<h2>Create a feed</h2>
<form method="post" action="/console/newsletter/feeds">
${csrfField(signedIn.csrfToken)}
${problem("create-error", form)}
<label for="name">Name</label>
<input id="name" name="name" required maxlength="64" value="${escape(form.name ?? "")}"
 aria-describedby="name-hint${form.error === undefined ? "" : " create-error"}"${
    form.error === undefined ? "" : " aria-invalid=\"true\""
  }>
<p id="name-hint">1-64 characters: lowercase letters, digits and hyphens. It is the feed's address; it cannot change.</p>
<label for="title">Title</label>
<input id="title" name="title" required maxlength="200" value="${escape(form.title ?? "")}">
<p><button type="submit">Create feed</button></p>
</form>`

export const feedsPage = (signedIn: SignedIn, feeds: ReadonlyArray<Feed>, form: FeedForm = {}) =>
  consolePage(
    "Feeds",
    `${
      feeds.length === 0
        ? "<p>No feeds.</p>"
        : `<table><caption>Feeds by name</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Title</th><th scope="col">Created</th><th scope="col">Changed</th></tr></thead>
<tbody>
${
          feeds.map((f) =>
            `<tr><td><a href="${feedHref(f.name)}">${escape(f.name)}</a></td><td>${escape(f.title)}</td><td>${
              time(f.createdAt)
            }</td><td>${time(f.updatedAt)}</td></tr>`
          ).join("\n")
        }
</tbody></table>`
    }
${createForm(signedIn, form)}`,
    { signedIn, status: form.status ?? 200 }
  )

export interface FeedView {
  readonly feed: Feed
  readonly counts: StatusCounts
  readonly status: SubscriptionStatus | undefined
  readonly subscribers: ReadonlyArray<Subscription>
  readonly paged: boolean
  readonly nextAfter: number | undefined
  // The address searched for, and what was found (undefined: no search).
  readonly search?: { readonly email: string; readonly found: Subscription | undefined } | undefined
  readonly rename?: FeedForm | undefined
}

const listHref = (feed: string, status: SubscriptionStatus | undefined, after?: number) => {
  const query = new URLSearchParams()
  if (status !== undefined) query.set("status", status)
  if (after !== undefined) query.set("after", String(after))
  const text = query.toString()
  return text === "" ? feedHref(feed) : `${feedHref(feed)}?${text}`
}

const countsTable = (v: FeedView) =>
  `<table><caption>Subscribers by status</caption>
<thead><tr><th scope="col">Status</th><th scope="col">Subscribers</th><th scope="col">Export</th></tr></thead>
<tbody>
${
    SubscriptionStatus.literals.map((s) =>
      `<tr><th scope="row"><a href="${escape(listHref(v.feed.name, s))}">${s}</a></th><td class="amount">${
        v.counts[s]
      }</td><td><a href="${feedHref(v.feed.name)}/subscribers.csv?status=${s}" download>CSV of the ${s}</a></td></tr>`
    ).join("\n")
  }
</tbody></table>`

const searchForm = (v: FeedView) =>
  `<form class="filters" method="get" action="${feedHref(v.feed.name)}" role="search">
<div><label for="email">E-mail address</label>
<input id="email" name="email" type="email" size="40" value="${escape(v.search?.email ?? "")}"></div>
<div><button type="submit">Find</button></div>
</form>
${
    v.search === undefined
      ? ""
      : v.search.found === undefined
      ? `<p role="status">No subscriber of this feed has the address ${escape(v.search.email)}.</p>`
      : `<p role="status">Found: <a href="${subscriberHref(v.search.found)}">${escape(v.search.found.name)} &lt;${
        escape(v.search.found.email)
      }&gt;</a>, ${v.search.found.status}.</p>`
  }`

const subscribersTable = (v: FeedView) =>
  `${
    v.subscribers.length === 0
      ? `<p>No ${v.status ?? ""} subscribers here.</p>`
      : `<table><caption>${
        v.status === undefined ? "Subscribers" : `The ${v.status} subscribers`
      }, oldest first</caption>
<thead><tr><th scope="col">Name</th><th scope="col">E-mail</th><th scope="col">Status</th><th scope="col">Signed up</th></tr></thead>
<tbody>
${
        v.subscribers.map((s) =>
          `<tr><td><a href="${subscriberHref(s)}">${escape(s.name)}</a></td><td>${
            escape(s.email)
          }</td><td>${s.status}</td><td>${time(s.createdAt)}</td></tr>`
        ).join("\n")
      }
</tbody></table>`
  }
<nav aria-label="Pages">${v.paged ? `<a href="${escape(listHref(v.feed.name, v.status))}">First page</a> ` : ""}${
    v.nextAfter === undefined
      ? ""
      : `<a href="${escape(listHref(v.feed.name, v.status, v.nextAfter))}" rel="next">Next page</a>`
  }${v.status === undefined ? "" : ` <a href="${feedHref(v.feed.name)}">Every status</a>`}</nav>`

const changeForms = (signedIn: SignedIn, v: FeedView) => {
  const form = v.rename ?? {}
  return `<h2>Rename</h2>
<form method="post" action="${feedHref(v.feed.name)}">
${csrfField(signedIn.csrfToken)}
${problem("rename-error", form)}
<label for="title">Title</label>
<input id="title" name="title" required maxlength="200" value="${escape(form.title ?? v.feed.title)}"${
    invalid("rename-error", form)
  }>
<p><button type="submit">Rename</button></p>
</form>
<h2>Delete</h2>
<form method="post" action="${feedHref(v.feed.name)}/delete">
${csrfField(signedIn.csrfToken)}
<p id="delete-hint">Its subscriptions end (they become unsubscribed) and its signup page is gone.</p>
<p><button type="submit" aria-describedby="delete-hint">Delete feed</button></p>
</form>`
}

export const feedPage = (signedIn: SignedIn, v: FeedView) =>
  consolePage(
    `Feed ${v.feed.title}`,
    `<dl>
<dt>Name</dt><dd><code>${escape(v.feed.name)}</code></dd>
<dt>Title</dt><dd>${escape(v.feed.title)}</dd>
<dt>Created</dt><dd>${time(v.feed.createdAt)}</dd>
<dt>Changed</dt><dd>${time(v.feed.updatedAt)}</dd>
</dl>
${countsTable(v)}
<h2>Subscribers</h2>
${searchForm(v)}
${subscribersTable(v)}
${changeForms(signedIn, v)}
<p><a href="/console/newsletter">All feeds</a></p>`,
    { signedIn, status: v.rename?.status ?? 200 }
  )
