// The deck's page (chapters/flashcards/web/): reveal, rate and progress as the terminal program
// has them; the progress kept in localStorage in the progress file's format, across a reload;
// a corrupt one named and kept; reset; the keys; a phone's width.
'use strict';
const assert = require('node:assert/strict');
const { after, before, test } = require('node:test');
const web = require('./browser.js');

const STORAGE = 'transformer-cards progress';
// What `flashcards --progress FILE` writes after rating card 1 쉬움 in the first session.
const AFTER_EASY = '# transformer-cards progress v1\n' +
  '# Leitner boxes: 어려움 -> box 1, 보통 -> box 2, 쉬움 -> one box up (3 to 5).\n' +
  '# A card in box b is due 2^(b-1) sessions after the session it was rated in.\n' +
  'session\t1\ncard\tbox\trating\tsession\treviews\n1\t3\t쉬움\t1\t1\n';

let browser;
before(async () => { browser = await web.launch(); });
after(() => web.close(browser));

const view = (page) => page.evaluate((key) => {
  const text = (id) => document.getElementById(id).textContent;
  const shown = (id) => document.getElementById(id).checkVisibility();
  return {
    today: text('today'), counts: text('counts'), label: text('label'), status: text('status'),
    bar: document.getElementById('bar').value, answer: shown('answer'),
    error: shown('error') ? text('error') : null, stored: localStorage.getItem(key),
  };
}, STORAGE);

// A page on an empty storage (every test shares the file:// origin).
async function fresh(width) {
  const page = await web.open(browser, web.fileUrl('flashcards'), 'cards.js', width);
  await page.evaluate(() => localStorage.clear());
  await page.reload();
  await page.waitForSelector('body[data-ready]');
  return page;
}

test('reveal, rate and progress; a reload keeps it, in the progress file\'s format', async () => {
  const page = await fresh(1000);
  let v = await view(page);
  assert.equal(v.today, '세션 1  오늘 0/20');
  assert.equal(v.label, '1/20  1번 카드  새 카드');
  assert.equal(v.answer, false);
  assert.equal(v.stored, null);
  await web.screenshot(page, 'cards-1000px-before');
  await page.click('button[data-key="1"]');  // not before the answer shows
  assert.equal((await view(page)).status, '먼저 답을 확인하세요 (Space, Enter 또는 카드 클릭)');
  await page.click('#card');
  v = await view(page);
  assert.equal(v.answer, true);
  assert.equal(v.label, '1/20  1번 카드  새 카드  (답)');
  await web.screenshot(page, 'cards-1000px-answer');
  await page.click('button[data-key="1"]');
  v = await view(page);
  assert.equal(v.status, '1번 카드: 쉬움, 상자 3 (4세션 뒤에 다시)');
  assert.equal(v.counts, '본 카드 1/20  쉬움 1  보통 0  어려움 0');
  assert.equal(v.bar, 1);
  assert.equal(v.today, '세션 1  오늘 1/20');
  assert.equal(v.label, '2/20  2번 카드  새 카드');
  assert.equal(v.stored, AFTER_EASY);
  await web.screenshot(page, 'cards-1000px-after');
  await page.reload();
  await page.waitForSelector('body[data-ready]');
  v = await view(page);
  assert.equal(v.today, '세션 2  오늘 0/19');  // card 1 is due in session 5
  assert.equal(v.counts, '본 카드 1/20  쉬움 1  보통 0  어려움 0');
  assert.equal(v.stored, AFTER_EASY);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a corrupt progress is named and kept, not wiped; reset starts over', async () => {
  const page = await fresh(1000);
  await page.evaluate((key) => localStorage.setItem(key, 'session\t1\n'), STORAGE);
  await page.reload();
  await page.waitForSelector('body[data-ready]');
  let v = await view(page);
  assert.match(v.error, /^localStorage\['transformer-cards progress'\]:1: not a transformer-/);
  assert.equal(v.stored, 'session\t1\n');
  await page.keyboard.press('Space');  // no session runs: nothing changes
  assert.equal((await view(page)).stored, 'session\t1\n');
  await page.click('#reset');
  v = await view(page);
  assert.equal(v.error, null);
  assert.equal(v.today, '세션 1  오늘 0/20');
  assert.match(v.stored, /^# transformer-cards progress v1\n[^]*session\t0\ncard\tbox/);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('the keyboard flips, rates and browses, as in the terminal', async () => {
  const page = await fresh(1000);
  await page.keyboard.press('Space');
  assert.equal((await view(page)).answer, true);
  await page.keyboard.press('Enter');
  assert.equal((await view(page)).answer, false);
  await page.keyboard.press('ArrowRight');
  assert.equal((await view(page)).label, '2/20  2번 카드  새 카드');
  await page.keyboard.press('ArrowLeft');
  await page.keyboard.press('Space');
  await page.keyboard.press('3');
  const v = await view(page);
  assert.equal(v.status, '1번 카드: 어려움, 상자 1 (다음 세션에 다시)');
  assert.equal(v.counts, '본 카드 1/20  쉬움 0  보통 0  어려움 1');
  await page.close();
});

test('at 375 pixels wide nothing overflows; from a local server as from a file', async () => {
  const { server, url } = await web.serve();
  try {
    const page = await web.open(browser, url + '/flashcards/index.html', 'cards.js', 375);
    await page.click('#card');
    await web.assertFits(page);
    await page.close();
    const phone = await fresh(375);
    await web.assertFits(phone);
    await web.screenshot(phone, 'cards-375px-before');
    await phone.click('#card');
    await phone.click('button[data-key="2"]');
    await web.assertFits(phone);
    await web.screenshot(phone, 'cards-375px-after');
    assert.deepEqual(phone.errors, []);
    await phone.close();
  } finally {
    server.close();
  }
});
