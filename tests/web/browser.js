// What the page tests share: Debian's chromium, headless, started by puppeteer-core (from the
// lockfile beside this file, installed by `make test-web`); a local server for build/web/;
// screenshots; and the size and start-up time each page's test prints and bounds.
'use strict';
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const puppeteer = require('puppeteer-core');

const WEB = path.resolve(process.env.WEB || 'build/web');
const SHOTS = path.resolve(WEB, '../test-web');
const MAX_BYTES = 400 * 1024;  // a page's wasm + JS
const MAX_READY_MS = 1000;     // from navigation to the first view drawn

// One browser with a profile of its own (the network is not needed, nor reached).
async function launch() {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'test-web-'));
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    userDataDir: profile,
    args: ['--disable-gpu', '--disable-background-networking', '--disable-component-update',
      '--disable-sync', '--no-first-run',
      ...(process.getuid && process.getuid() === 0 ? ['--no-sandbox'] : [])],
  });
  browser.profile = profile;
  return browser;
}

async function close(browser) {
  await browser.close();
  fs.rmSync(browser.profile, { recursive: true, force: true, maxRetries: 5 });
}

// Serves build/web/ on 127.0.0.1; returns the server and its base URL.
async function serve() {
  const types = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript' };
  const server = http.createServer((req, res) => {
    const file = path.join(WEB, decodeURIComponent(new URL(req.url, 'http://x').pathname));
    if (!file.startsWith(WEB + path.sep) || !fs.existsSync(file)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'Content-Type': types[path.extname(file)] || 'text/plain' });
    res.end(fs.readFileSync(file));
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  return { server, url: `http://127.0.0.1:${server.address().port}` };
}

const fileUrl = (page) => `file://${WEB}/${page}/index.html`;

// Opens a page at the given width, checks that its first view is drawn within MAX_READY_MS of
// the navigation and that its wasm + JS (module file, page.js) fit MAX_BYTES, and prints both.
async function open(browser, url, module, width = 1000) {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  await page.setViewport({ width, height: 800 });
  await page.goto(url);
  await page.waitForSelector('body[data-ready]', { timeout: 10000 });
  const ms = Number(await page.$eval('body', (b) => b.dataset.ready));
  const dir = path.join(WEB, path.basename(path.dirname(new URL(url).pathname)));
  const bytes = [module, 'page.js'].reduce((n, f) => n + fs.statSync(path.join(dir, f)).size, 0);
  console.log(`${url}: ${(bytes / 1024).toFixed(0)} KB of wasm + JS, interactive in ${ms} ms`);
  assert.ok(bytes <= MAX_BYTES, `${bytes} bytes > ${MAX_BYTES}`);
  assert.ok(ms <= MAX_READY_MS, `${ms} ms > ${MAX_READY_MS} ms`);
  page.errors = errors;
  return page;
}

// Nothing reaches past the right edge of the viewport, and the page does not scroll sideways.
async function assertFits(page) {
  const over = await page.evaluate(() => {
    const w = document.documentElement.clientWidth;
    const out = [...document.querySelectorAll('body *')]
      .filter((e) => e.getClientRects().length && e.getBoundingClientRect().right > w + 0.5)
      .map((e) => `${e.tagName}#${e.id}.${e.className}: ${e.getBoundingClientRect().right}`);
    const sw = document.documentElement.scrollWidth;
    if (sw > w) out.push(`the page scrolls sideways: ${sw} > ${w}`);
    return out;
  });
  assert.deepEqual(over, []);
}

async function screenshot(page, name) {
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
}

module.exports = { launch, close, serve, fileUrl, open, assertFits, screenshot };
