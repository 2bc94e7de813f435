// Vitest runs only the files of this folder (node:test runs test/*.test.js).
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    root: fileURLToPath(new URL('.', import.meta.url)),
    include: ['*.vitest.js'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
