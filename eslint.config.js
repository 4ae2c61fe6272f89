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
  // Adapters only store and send: every decision is core's (docs/decisions/0035). The boundary is an allowlist:
  // from core, an adapter imports types (any), and values named in PascalCase only: ports, schemas, errors and
  // their constants. A function of core (camelCase: decideStart, transition, storesOver, layer ...) decides, or
  // wires core's stores, and stays out (test/lint/Boundary.test.ts shows the rule refusing one).
  {
    files: ["adapters/**/*.ts"],
    rules: {
      "no-restricted-imports": ["error", {
        patterns: [{
          group: ["**/core/**"],
          allowImportNamePattern: "^[A-Z]",
          allowTypeImports: true,
          message:
            "adapters import from core only ports, types, schemas, errors and constants (PascalCase); core's functions decide (docs/decisions/0035)"
        }]
      }]
    }
  }
)
