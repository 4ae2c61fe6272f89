export interface Allocated {
  readonly bytes: number
  readonly collections: number
}
export declare const allocationMeter: () => { readonly stop: () => Allocated }
export declare const askProbe: (socket: string, command: "start" | "stop" | "loop") => Promise<Partial<Allocated>>
