// The Playwright Test side of bench row "browser suite vs Playwright Test" (bench/playwright_suite.py):
// the system Chromium, headless, 4 workers, every test in parallel, nothing kept.
const { defineConfig } = require('@playwright/test');

module.exports = defineConfig({
  testDir: '.',
  fullyParallel: true,
  workers: 4,
  retries: 0,
  reporter: 'dot',
  outputDir: process.env.BENCH_PW_OUT || 'test-results',
  use: {
    headless: true,
    trace: 'off',
    screenshot: 'off',
    video: 'off',
    launchOptions: {
      executablePath: process.env.BENCH_CHROMIUM,
      args: process.getuid && process.getuid() === 0 ? ['--no-sandbox'] : [],
    },
  },
});
