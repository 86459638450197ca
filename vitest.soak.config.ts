import { defineConfig } from 'vitest/config';

// The soak runs (npm run soak:crash): not part of `npm test`. SQLite, and PostgreSQL too when
// TEST_DATABASE_URL is set, as for the main suite.
const stores = ['sqlite', ...(process.env.TEST_DATABASE_URL ? ['postgres'] : [])];

export default defineConfig({
  test: {
    globalSetup: ['test/global-setup.ts'],
    projects: stores.map((store) => ({
      extends: true,
      test: { name: store, include: ['test/soak/**/*.soak.ts'], env: { TEST_STORE: store }, testTimeout: 30_000, hookTimeout: 30_000 },
    })),
  },
});
