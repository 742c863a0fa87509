// Draws what widget.cpp returns, and forwards clicks and keys to it as the line mode's keys of
// `1-self-attention --live` ("3", "right", "m"). It computes nothing itself.
'use strict';
Widget().then((mod) => {
  const $ = (id) => document.getElementById(id);
  const el = (tag, text, props = {}) => Object.assign(document.createElement(tag), props,
    { textContent: text });
  const send = (key) => draw(JSON.parse(mod.ccall('widget', 'string', ['string'], [key])));

  function draw(v) {
    const i = v.query + 1;
    $('tokens').replaceChildren(...v.tokens.map((t, j) => {
      const b = el('button', t, { onclick: () => send(String(j + 1)) });
      b.setAttribute('aria-pressed', j === v.query);
      return b;
    }));
    $('mask').checked = v.causal;
    $('query').textContent = `${v.tokens[v.query]} 토큰의 쿼리 q_${i} = x_${i} W_Q = ${v.q}` +
      `    √d_k = √${v.d_k} = ${v.sqrt_d_k}`;
    $('steps').tBodies[0].replaceChildren(...v.steps.map((s, j) => {
      const tr = el('tr', '', { className: s.hidden ? 'hidden' : '' });
      tr.append(el('td', j + 1), el('td', s.k, { className: 'vec' }), el('td', s.dot),
        el('td', s.score), el('td', s.w), el('td', s.v, { className: 'vec' }));
      return tr;
    }));
    $('sum').textContent = `출력 o_${i} = ` +
      v.steps.map((s, j) => `${s.w} × V_${j + 1}`).join(' + ') + ` = ${v.out}`;
    const head = el('tr', '');
    head.append(el('th', ''), ...v.tokens.map((t) => el('th', t)));
    $('grid').replaceChildren(head, ...v.grid.map((row, r) => {
      const tr = el('tr', '', { onclick: () => send(String(r + 1)) });
      tr.append(el('th', (r === v.query ? '> ' : '') + v.tokens[r],
        { className: r === v.query ? 'chosen' : '' }));
      for (const c of row) {
        const td = el('td', c.w, { className: c.white ? 'white' : '' });
        td.style.background = c.bg;
        tr.append(td);
      }
      return tr;
    }));
    $('status').textContent = v.status;
  }

  // The keys of the terminal widget; m by its place on the keyboard (ㅡ with a Korean layout).
  const KEYS = { ArrowLeft: 'left', ArrowUp: 'up', ArrowRight: 'right', ArrowDown: 'down' };
  document.addEventListener('keydown', (e) => {
    if (e.ctrlKey || e.altKey || e.metaKey) return;
    const key = KEYS[e.key] || (e.code === 'KeyM' ? 'm' : /^[1-9]$/.test(e.key) ? e.key : '');
    if (!key) return;
    e.preventDefault();
    send(key);
  });
  $('mask').onchange = () => send('m');
  send('');
  document.body.dataset.ready = performance.now().toFixed(0);  // for tests/web
});
