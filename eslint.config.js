// Lint and format in one pass: typescript-eslint for correctness, the Effect plugin's dprint rule (the
// formatter the Effect codebases use) for layout. `npm run format` fixes what the rule reports.
import effect from "@effect/eslint-plugin"
import tseslint from "typescript-eslint"

export default tseslint.config(
  // test/client/paysub.d.ts is generated (scripts/openapi.ts) and checked against the document, not formatted.
  { ignores: ["node_modules/", "data/", "dist/", ".cache/", "bench/results/", "coverage/", "test/client/paysub.d.ts"] },
  ...tseslint.configs.recommended,
  ...effect.configs.dprint,
  {
    rules: {
      "@effect/dprint": [
        "error",
        {
          config: {
            indentWidth: 2,
            lineWidth: 120,
            semiColons: "asi",
            quoteStyle: "alwaysDouble",
            trailingCommas: "never",
            operatorPosition: "maintain",
            "arrowFunction.useParentheses": "force"
          }
        }
      ],
      "@typescript-eslint/no-explicit-any": "off",
      "@typescript-eslint/no-empty-object-type": "off",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }]
    }
  },
  // The hexagon's boundary, checked by the linter: the core imports only `effect` and other core modules.
  {
    files: ["core/**/*.ts"],
    rules: {
      "no-restricted-imports": ["error", {
        patterns: [
          {
            regex: "^(?!effect($|/)|\\./|\\.\\./(?!\\.\\./))",
            message: "core/ imports only effect and other core modules"
          }
        ]
      }]
    }
  },
  // Adapters only store and send: every decision is core's (docs/decisions/0035). They import the core's schemas,
  // types and ports, never one of its rules or the stores made over the storage ports.
  {
    files: ["adapters/**/*.ts"],
    rules: {
      "no-restricted-imports": ["error", {
        patterns: [{
          group: ["**/core/**"],
          importNames: [
            "decideStart",
            "keyExpired",
            "requestHash",
            "IdempotencyLease",
            "decideSubscribe",
            "transition",
            "MailThrottle",
            "isUsable",
            "normalizeEmail",
            "transferEventType",
            "awaitsAnswer",
            "answersWaitingKeys",
            "unsettledStatuses",
            "settled",
            "outcomeUnknown",
            "reconciled",
            "emit",
            "wants",
            "newEvent",
            "storesOver",
            "make",
            "layer"
          ],
          message: "adapters only store and send: this is a core rule (docs/decisions/0035)"
        }]
      }]
    }
  }
)
