import { defineConfig } from 'vitest/config';

// Every test file runs on SQLite; when TEST_DATABASE_URL is set (CI sets it to a
// PostgreSQL database) the whole suite runs a second time on PostgreSQL.
const stores = ['sqlite', ...(process.env.TEST_DATABASE_URL ? ['postgres'] : [])];

export default defineConfig({
  test: {
    globalSetup: ['test/global-setup.ts'],
    projects: stores.map((store) => ({
      extends: true,
      test: {
        name: store,
        include: ['test/**/*.test.ts'],
        env: { TEST_STORE: store },
        testTimeout: 30_000,
        hookTimeout: 30_000,
      },
    })),
  },
});
