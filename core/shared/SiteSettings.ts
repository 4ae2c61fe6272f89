import { Context } from "effect"

export interface SiteSettingsShape {
  // Absolute base for every link the service hands out; never derived from a request's Host header.
  readonly baseUrl: string
}

export class SiteSettings extends Context.Tag("SiteSettings")<SiteSettings, SiteSettingsShape>() {}
