export declare const nodeStartCommand: (checkout?: string) => {
  readonly env: Readonly<Record<string, string>>
  readonly flags: Array<string>
  readonly entry: string
}
export declare const denoStartCommand: () => Array<string>
export declare const denoStartEnv: () => Readonly<Record<string, string>>
