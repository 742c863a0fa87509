// Section 1's widget page (chapters/1-self-attention/web/): every number on it is the terminal
// program's, as tests/expected/ holds them, with and without the mask; clicks and keys.
'use strict';
const assert = require('node:assert/strict');
const fs = require('node:fs');
const { after, before, test } = require('node:test');
const web = require('./browser.js');

// The screens `printf '3\nm\n' | 1-self-attention --live` prints: token 1, token 3, token 3
// masked. Each gives its grid of weights, its steps (j, k_j, q·k_j, score, weight, V_j), the
// sum of V's rows and the status line.
const screens = fs.readFileSync('tests/expected/1-self-attention-live.txt', 'utf8')
  .split(/\n(?= 1절 )/).map((s) => {
    const lines = s.split('\n');
    const top = lines.findIndex((l) => l.startsWith(' 어텐션 가중치'));
    return {
      grid: lines.slice(top + 2, top + 6).map((l) => l.trim().split(/\s+/).slice(-4)),
      steps: lines.map((l) => l.match(/^ +(\d) +(\[.*?\]) +(\S+) +(\S+) +(\S+) +(\[.*\])$/))
        .filter(Boolean).map((m) => m.slice(2)),
      sum: lines.find((l) => l.startsWith(' 출력')).trim() + ' ' +
        lines.find((l) => /^ +=/.test(l)).trim(),
      status: lines.filter((l) => l.trim()).at(-1).trim(),
    };
  });
// `1-self-attention`'s own block: the weights as torch prints them, without the mask.
const printed = fs.readFileSync('tests/expected/1-self-attention.txt', 'utf8')
  .split('출력:')[0].match(/\d\.\d{4}/g);

let browser;
before(async () => { browser = await web.launch(); });
after(() => web.close(browser));

const view = (page) => page.evaluate(() => {
  const texts = (sel) => [...document.querySelectorAll(sel)].map((e) => e.textContent);
  return {
    grid: [...document.querySelectorAll('#grid tr')].slice(1)
      .map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)),
    steps: [...document.querySelectorAll('#steps tbody tr')]
      .map((tr) => [...tr.querySelectorAll('td')].slice(1).map((td) => td.textContent)),
    hidden: texts('#steps tbody tr.hidden td:first-child'),
    sum: document.getElementById('sum').textContent,
    status: document.getElementById('status').textContent.trim(),
    query: texts('#tokens button[aria-pressed="true"]'),
    causal: document.getElementById('mask').checked,
  };
});

test('the weights, the steps and the sum are the terminal\'s, with and without the mask',
  async () => {
    const page = await web.open(browser, web.fileUrl('1-self-attention'), 'widget.js');
    let v = await view(page);
    assert.deepEqual(v.grid.flat(), printed);
    for (const [k, click] of [[0, null], [1, '#tokens button:nth-child(3)'], [2, '#mask']]) {
      if (click) await page.click(click);
      v = await view(page);
      assert.deepEqual(v.grid, screens[k].grid, `screen ${k + 1}`);
      assert.deepEqual(v.steps, screens[k].steps, `screen ${k + 1}`);
      assert.equal(v.sum, screens[k].sum);
      assert.equal(v.status, screens[k].status);
    }
    await web.screenshot(page, 'widget-1000px-token3-causal');
    assert.deepEqual(page.errors, []);
    await page.close();
  });

test('the causal mask zeroes the upper triangle and hides the later keys', async () => {
  const page = await web.open(browser, web.fileUrl('1-self-attention'), 'widget.js');
  await page.click('#mask');
  const v = await view(page);
  assert.equal(v.causal, true);
  v.grid.forEach((row, i) => row.forEach((w, j) => assert.equal(w === '0', j > i, `${i},${j}`)));
  assert.deepEqual(v.hidden, ['2', '3', '4']);  // token 1 sees only itself
  await page.click('#mask');
  assert.deepEqual((await view(page)).grid.flat(), printed);
  await page.close();
});

test('the keyboard chooses the token and toggles the mask, as in the terminal', async () => {
  const page = await web.open(browser, web.fileUrl('1-self-attention'), 'widget.js');
  const steps = [['ArrowRight', '2번'], ['4', '4번'], ['ArrowRight', '1번'], ['ArrowUp', '4번'],
    ['ArrowLeft', '3번'], ['ArrowDown', '4번'], ['1', '1번']];
  for (const [key, token] of steps) {
    await page.keyboard.press(key);
    assert.deepEqual((await view(page)).query, [token], key);
  }
  await page.keyboard.press('m');
  assert.equal((await view(page)).causal, true);
  await page.keyboard.press('m');
  assert.equal((await view(page)).causal, false);
  await page.close();
});

test('at 375 pixels wide nothing overflows; from a local server as from a file', async () => {
  const { server, url } = await web.serve();
  try {
    for (const [where, width] of [[url + '/1-self-attention/index.html', 375],
      [web.fileUrl('1-self-attention'), 375], [web.fileUrl('1-self-attention'), 1000]]) {
      const page = await web.open(browser, where, 'widget.js', width);
      assert.deepEqual((await view(page)).grid.flat(), printed);
      await page.click('#tokens button:nth-child(3)');
      await web.assertFits(page);
      if (where.startsWith('file:')) await web.screenshot(page, `widget-${width}px-token3`);
      assert.deepEqual(page.errors, []);
      await page.close();
    }
  } finally {
    server.close();
  }
});
