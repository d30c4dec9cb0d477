// Lint rules: the recommended sets, plus the architectural habits we hold ourselves to.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/**", "node_modules/**", "docs/**", "deploy/**", ".cotal/**", "plugin/**", "test-artifacts/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ["**/*.ts"],
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/consistent-type-imports": "error",
      "no-restricted-syntax": ["error", { selector: "TSEnumDeclaration", message: "Use zod enums or `as const` objects for wire values, never TS enum." }],
      "no-console": ["error", { allow: ["error"] }],
    },
  },
  {
    files: ["cli/**/*.ts", "test/**/*.ts", "bench/**/*.ts", "scripts/**"],
    rules: { "no-console": "off" },
  },
  {
    files: ["scripts/**/*.mjs", "eslint.config.js"],
    languageOptions: { globals: { process: "readonly", console: "readonly", URL: "readonly" } },
  },
);
