export declare const nodeStartCommand: () => { readonly flags: Array<string>; readonly entry: string }
export declare const denoStartCommand: () => Array<string>
