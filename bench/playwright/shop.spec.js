// The same actions the replayed supervisor test makes through Playwright MCP (bench/playwright_suite.py),
// each followed by an ARIA snapshot as Playwright MCP takes one after every action, so that both
// sides do the same work: open the shop, read its title, add Apple, read the basket, reload.
const { test, expect } = require('@playwright/test');

const url = process.env.BENCH_SHOP_URL;
const count = Number(process.env.BENCH_TESTS || 20);

for (let i = 1; i <= count; i++) {
  test(`shop ${i}`, async ({ page }) => {
    await page.goto(url);
    await page.locator('body').ariaSnapshot();
    // browser_snapshot: the page read, its title checked.
    await page.locator('body').ariaSnapshot();
    await expect(page).toHaveTitle('Shop');
    await page.getByRole('button', { name: 'Add Apple' }).click();
    await page.locator('body').ariaSnapshot();
    // browser_snapshot: the page read again before its basket is checked.
    await page.locator('body').ariaSnapshot();
    await expect(page.locator('#basket')).toHaveText(/Basket: 1 item/);
    await page.reload();
    await page.locator('body').ariaSnapshot();
  });
}
