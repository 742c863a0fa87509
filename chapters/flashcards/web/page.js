// Draws what cards.cpp returns, forwards clicks and keys to it as the line mode's keys of
// `flashcards` ("space", "1", "right"), and keeps the progress text it returns in localStorage.
// It computes nothing itself.
'use strict';
Cards().then((mod) => {
  const STORAGE = 'transformer-cards progress';  // cards.cpp names it so in its messages
  const $ = (id) => document.getElementById(id);
  const call = (name, types, args) => JSON.parse(mod.ccall(name, 'string', types, args));
  let open = false;  // a session runs (not stopped by a corrupt progress text)

  function draw(v) {
    open = !v.error;
    $('error').hidden = open;
    $('session').hidden = !open;
    $('error').textContent = v.error || '';
    if (!open) return;
    if (v.progress !== undefined) localStorage.setItem(STORAGE, v.progress);
    $('title').textContent = v.title;
    $('today').textContent = v.today;
    Object.assign($('bar'), { max: v.cards, value: v.seen });
    $('counts').textContent = v.counts;
    $('label').textContent = v.label;
    $('question').textContent = v.question;
    $('answer').hidden = !v.flipped;
    $('answer-text').textContent = v.answer;
    $('demo').textContent = v.demo;
    $('status').textContent = v.status;
  }
  const start = (reset) =>
    draw(call('cards_open', ['string', 'number'], [localStorage.getItem(STORAGE), reset]));
  const send = (key) => open && draw(call('cards_key', ['string'], [key]));

  $('card').onclick = () => send('click');
  for (const b of document.querySelectorAll('button[data-key]')) {
    b.onclick = () => send(b.dataset.key);
  }
  $('reset').onclick = () => start(1);
  $('export').onclick = () => {  // the stored text as a file `flashcards --progress` reads
    const a = document.createElement('a');
    a.href = URL.createObjectURL(new Blob([localStorage.getItem(STORAGE) || '']));
    a.download = 'progress.tsv';
    a.click();
  };
  // Space and Enter on a button press that button; elsewhere they flip the card.
  const KEYS = { ' ': 'space', Enter: 'enter', ArrowLeft: 'left', ArrowRight: 'right',
    1: '1', 2: '2', 3: '3' };
  document.addEventListener('keydown', (e) => {
    const key = KEYS[e.key];
    if (!key || e.ctrlKey || e.altKey || e.metaKey) return;
    if ((key === 'space' || key === 'enter') && e.target.closest('button')) return;
    e.preventDefault();
    send(key);
  });
  start(0);
  document.body.dataset.ready = performance.now().toFixed(0);  // for tests/web
});
