// The console page: plain JavaScript, no framework, no build step. Every node is built with textContent, never
// innerHTML: campaign names, escrow titles and usernames come from other agents.
'use strict';

const $ = (id) => document.getElementById(id);
const SVG = 'http://www.w3.org/2000/svg';
const COLORS = ['#60a5fa', '#34d399', '#f472b6', '#fbbf24', '#a78bfa', '#22d3ee', '#94a3b8'];

function h(tag, attrs, ...children) {
  const node = tag.startsWith('svg:') ? document.createElementNS(SVG, tag.slice(4)) : document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') node.setAttribute('class', value);
    else if (key === 'text') node.textContent = value;
    else node.setAttribute(key, String(value));
  }
  for (const child of children.flat(Infinity))
    if (child !== null && child !== undefined) node.append(child instanceof Node ? child : String(child));
  return node;
}

/** Atomic units (6 decimals) as a USD amount with at least 2 decimals, exactly: no float on money. */
function usdOf(atomic) {
  const digits = String(atomic).padStart(7, '0');
  const whole = digits.slice(0, -6).replace(/^0+(?=\d)/, '');
  const fraction = digits.slice(-6).replace(/0+$/, '').padEnd(2, '0');
  return `${Number(whole).toLocaleString('en-US')}.${fraction}`;
}
/** A decimal USD string from the server ("3.2") with cents ("3.20"). */
function money(text) {
  const [whole, fraction = ''] = String(text).split('.');
  return `$${Number(whole).toLocaleString('en-US')}.${fraction.padEnd(2, '0')}`;
}
const short = (text) => (text && text.length > 12 ? `${text.slice(0, 4)}…${text.slice(-4)}` : text || '');
const clock = (iso) => new Date(iso).toLocaleTimeString([], { hour12: false });

async function getJson(url, init) {
  const response = await fetch(url, init);
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error((body.error && body.error.message) || `HTTP ${response.status}`);
  return body;
}

// ---- totals and the live feed -------------------------------------------------------------------------------
const totals = { calls: 0, volume: 0n };
function showTotals() {
  $('kpi-calls').textContent = totals.calls.toLocaleString('en-US');
  $('kpi-volume').textContent = `$${usdOf(totals.volume)}`;
}

function feedRow(s, fresh) {
  return h(
    'tr',
    { class: fresh ? 'new' : null, 'data-tx': s.transaction },
    h('td', { text: clock(s.settledAt), title: s.settledAt }),
    h('td', {}, h('code', { class: 'short', title: s.payer, text: short(s.payer) })),
    h('td', { title: s.payTo, text: s.seller || short(s.payTo) }),
    h('td', { text: s.route, title: s.resource || s.kind }),
    h('td', { class: 'num', text: usdOf(s.amount) }),
    h('td', {}, h('code', { class: 'tx', title: s.transaction, text: s.transaction })),
  );
}
function addSettlement(s, fresh) {
  const body = $('feed');
  body.prepend(feedRow(s, fresh));
  while (body.rows.length > 100) body.deleteRow(body.rows.length - 1);
  $('feed-empty').hidden = body.rows.length > 0;
}

function connectFeed() {
  const live = $('live');
  const events = new EventSource('/api/events');
  events.addEventListener('hello', (event) => {
    const data = JSON.parse(event.data);
    $('feed').replaceChildren();
    for (const s of data.settlements.slice().reverse()) addSettlement(s, false);
    $('feed-empty').hidden = data.settlements.length > 0;
    totals.calls = data.feed.calls;
    totals.volume = BigInt(data.feed.volume);
    showTotals();
    $('feed-note').textContent = data.feed.error ? `facilitator: ${data.feed.error}` : '';
    live.textContent = 'live';
    live.className = 'badge live on';
  });
  events.addEventListener('settlement', (event) => {
    const s = JSON.parse(event.data);
    addSettlement(s, true);
    totals.calls += 1;
    totals.volume += BigInt(s.amount);
    showTotals();
    scheduleChart();
  });
  events.onerror = () => {
    live.textContent = 'reconnecting…';
    live.className = 'badge live off';
  };
}

// ---- the chart: stacked bars, hand-drawn SVG ----------------------------------------------------------------------
const chartState = { group: 'seller', metric: 'volume', window: '1h' };
let chartTimer;
function scheduleChart() {
  clearTimeout(chartTimer);
  chartTimer = setTimeout(loadChart, 400);
}

function niceMax(value) {
  if (value <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 2.5, 5, 10]) if (value <= step * power) return step * power;
  return 10 * power;
}

function drawChart(series) {
  // Drawn at the container's own width (again on resize), so text keeps its size on a phone and on a wide screen.
  const W = Math.max(300, Math.round($('chart').clientWidth || 800)),
    H = W < 500 ? 180 : 220,
    left = 48,
    right = 8,
    top = 10,
    bottom = 24;
  const n = series.starts.length;
  // Display only: atomic amounts become dollars as numbers here, for bar heights and axis labels.
  const valueOf = (line, i) => (chartState.metric === 'calls' ? line.calls[i] : Number(line.volume[i]) / 1e6);
  const stacks = series.starts.map((_, i) => series.lines.reduce((sum, line) => sum + valueOf(line, i), 0));
  const max = niceMax(Math.max(0, ...stacks));
  const plotW = W - left - right,
    plotH = H - top - bottom;
  const slot = plotW / n,
    barW = Math.max(1, slot * 0.72);
  const svg = h('svg:svg', { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: 'presentation' });
  for (let k = 0; k <= 4; k++) {
    const y = top + plotH - (plotH * k) / 4;
    const value = (max * k) / 4;
    svg.append(
      h('svg:line', { x1: left, x2: W - right, y1: y, y2: y, class: 'axis', 'stroke-dasharray': k ? '2 4' : null }),
    );
    const label =
      chartState.metric === 'calls'
        ? String(Math.round(value * 10) / 10)
        : `$${value < 1 ? value.toFixed(2) : Math.round(value * 100) / 100}`;
    svg.append(h('svg:text', { x: left - 6, y: y + 4, 'text-anchor': 'end', text: label }));
  }
  for (let i = 0; i < n; i++) {
    let y = top + plotH;
    series.lines.forEach((line, l) => {
      const value = valueOf(line, i);
      if (!value) return;
      const height = (value / max) * plotH;
      y -= height;
      const label =
        chartState.metric === 'calls' ? `${value} calls` : `$${value.toFixed(6).replace(/0+$/, '').replace(/\.$/, '')}`;
      svg.append(
        h(
          'svg:rect',
          {
            x: left + i * slot + (slot - barW) / 2,
            y,
            width: barW,
            height: Math.max(height, 0.5),
            rx: Math.min(2, barW / 3),
            fill: COLORS[l % COLORS.length],
          },
          h('svg:title', { text: `${line.key} · ${clock(series.starts[i])} · ${label}` }),
        ),
      );
    });
    // A time label about every 70 px, on a round bucket.
    const every = [1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30].find((k) => k * slot >= 70) || n;
    if (i % every === 0) {
      const at = new Date(series.starts[i]);
      svg.append(
        h('svg:text', {
          x: left + i * slot + slot / 2,
          y: H - 6,
          'text-anchor': 'middle',
          text: at.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', hour12: false }),
        }),
      );
    }
  }
  if (!series.lines.length)
    svg.append(
      h('svg:text', {
        x: left + plotW / 2,
        y: top + plotH / 2,
        'text-anchor': 'middle',
        text: 'nothing settled in this window',
      }),
    );
  $('chart').replaceChildren(svg);
  $('legend').replaceChildren(
    ...series.lines.map((line, l) =>
      h(
        'li',
        {},
        h(
          'span',
          { class: 'sw' },
          h(
            'svg:svg',
            { viewBox: '0 0 10 10', width: 10, height: 10 },
            h('svg:rect', { width: 10, height: 10, rx: 3, fill: COLORS[l % COLORS.length] }),
          ),
        ),
        h('span', { class: 'key', text: line.key.includes('/') ? line.key : short(line.key), title: line.key }),
        h('span', {
          class: 'val',
          text: chartState.metric === 'calls' ? `${line.totalCalls} calls` : `$${usdOf(line.totalVolume)}`,
        }),
      ),
    ),
  );
}

let lastSeries;
let resizeTimer;
window.addEventListener('resize', () => {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(() => lastSeries && drawChart(lastSeries), 150);
});
async function loadChart() {
  try {
    lastSeries = await getJson(`/api/series?group=${chartState.group}&window=${chartState.window}`);
    drawChart(lastSeries);
  } catch (error) {
    $('chart').replaceChildren(h('p', { class: 'empty', text: `chart unavailable: ${error.message}` }));
  }
}

for (const seg of document.querySelectorAll('.seg')) {
  seg.addEventListener('click', (event) => {
    const button = event.target.closest('button');
    if (!button) return;
    for (const b of seg.querySelectorAll('button')) b.classList.toggle('on', b === button);
    chartState[seg.dataset.name] = button.dataset.value;
    loadChart();
  });
}

// ---- services -------------------------------------------------------------------------------------------------
/** ", from $0.001": the lowest price above zero among a service's routes (a free tier is not a price). */
function cheapest(prices) {
  const values = prices
    .flatMap((p) => p.usd.split('–'))
    .filter((v) => Number(v) > 0)
    .sort((a, b) => Number(a) - Number(b));
  return values.length ? `, from $${values[0]}` : '';
}

async function loadServices() {
  try {
    const overview = await getJson('/api/overview');
    const chain = overview.chain;
    $('chain').textContent = chain.local ? `local ledger · ${chain.network.split(':')[0]}` : chain.network;
    $('chain').title = chain.rpcUrl;
    const up = overview.services.filter((s) => s.health.ok).length;
    $('kpi-up').textContent = `${up}/${overview.services.length}`;
    $('services').replaceChildren(
      ...overview.services.map((s) =>
        h(
          'tr',
          { 'data-service': s.id },
          h('td', {}, h('strong', { text: s.id }), h('div', { class: 'muted', text: s.title })),
          h('td', {}, h('span', { class: `dot ${s.health.ok ? 'ok' : 'bad'}` }), s.health.detail),
          h('td', {}, h('a', { href: s.url, text: s.url.replace(/^https?:\/\//, '') })),
          h(
            'td',
            { class: 'prices' },
            s.prices.length === 0
              ? h('span', { class: 'muted', text: 'free' })
              : h(
                  'details',
                  {},
                  h('summary', {
                    text: `${s.prices.length} paid route${s.prices.length > 1 ? 's' : ''}${cheapest(s.prices)}`,
                  }),
                  h(
                    'ul',
                    {},
                    s.prices.map((p) =>
                      h('li', { title: p.summary }, h('code', { text: `${p.method} ${p.path}` }), ` $${p.usd}`),
                    ),
                  ),
                ),
          ),
          h('td', {}, h('a', { href: s.docs, text: 'docs' })),
        ),
      ),
    );
    $('services-note').textContent = `${overview.services.length} services`;
  } catch (error) {
    $('services-note').textContent = `unavailable: ${error.message}`;
  }
}

// ---- escrows, wagers, sessions, campaigns -------------------------------------------------------------------------
const row = (left, right, title) => h('div', { class: 'row', title }, h('span', {}, left), h('span', {}, right));
const pill = (state) => h('span', { class: `pill ${state}`, text: state });
function sectionInto(id, noteId, data, render) {
  if (!data.available) {
    $(id).replaceChildren(h('p', { class: 'empty', text: data.reason }));
    $(noteId).textContent = '';
    return;
  }
  $(id).replaceChildren(h('div', { class: 'mini' }, render(data)));
}

async function loadActivity() {
  let data;
  try {
    data = await getJson('/api/activity');
  } catch (error) {
    return;
  }
  sectionInto('escrows', 'escrow-note', data.escrows, (e) => {
    $('escrow-note').textContent = `${money(e.lockedUsd)} locked`;
    const states = Object.entries(e.byState)
      .filter(([, n]) => n > 0)
      .map(([s, n]) => `${n} ${s}`)
      .join(' · ');
    return [
      h('div', { class: 'stat', text: `${e.total} escrows${states ? ` · ${states}` : ''}` }),
      e.open.length
        ? e.open.map((x) => row([pill(x.state), ' ', x.title], money(x.usd), `${x.id}: ${x.buyer} → ${x.seller}`))
        : h('p', { class: 'empty', text: 'No open escrow.' }),
    ];
  });
  sectionInto('wagers', 'wager-note', data.wagers, (w) => {
    $('wager-note').textContent = `${w.active.length} active · ${w.challenges.length} pending`;
    const items = [
      ...w.active.map((x) => row([pill('active'), ` ${x.challenger} vs ${x.opponent}`], money(x.usd), x.id)),
      ...w.challenges.map((x) =>
        row([pill('challenge'), ` ${x.challenger} → ${x.opponent}`], money(x.usd), `${x.id}, expires ${x.expiresAt}`),
      ),
    ];
    return items.length ? items : h('p', { class: 'empty', text: 'No active wager or pending challenge.' });
  });
  sectionInto('sessions', 'session-note', data.sessions, (s) => {
    $('session-note').textContent = `${s.open.length} open`;
    return s.open.length
      ? s.open.map((x) =>
          row(
            [pill(x.state), ' ', short(x.buyer), ' → ', x.seller.length > 20 ? short(x.seller) : x.seller],
            `${money(x.acceptedUsd)} / ${money(x.depositUsd)}`,
            `${x.channelId}: ${x.vouchers} vouchers`,
          ),
        )
      : h('p', { class: 'empty', text: 'No open payment session.' });
  });
  sectionInto('campaigns', 'campaign-note', data.campaigns, (c) => {
    $('campaign-note').textContent =
      `${c.campaigns.length} campaign${c.campaigns.length === 1 ? '' : 's'} · ${money(c.spentUsd)} spent`;
    return c.campaigns.length
      ? c.campaigns.map((x) => {
          const share = Number(x.budgetUsd) > 0 ? Math.min(100, (100 * Number(x.spentUsd)) / Number(x.budgetUsd)) : 0;
          return h(
            'div',
            {
              class: 'row',
              title: `${x.id} by ${x.advertiser}: ${x.settlements} sponsored settlements, ${x.conversions} conversions`,
            },
            h(
              'span',
              {},
              pill(x.status),
              ' ',
              x.name,
              h('div', { class: 'bar' }, h('i', { class: 'fill', 'data-share': share.toFixed(1) })),
            ),
            h('span', { text: `${money(x.spentUsd)} / ${money(x.budgetUsd)}` }),
          );
        })
      : h('p', { class: 'empty', text: 'No campaign yet.' });
  });
  // Bar widths through the CSSOM: the page's policy forbids inline style attributes.
  for (const fill of document.querySelectorAll('#campaigns .fill')) fill.style.width = `${fill.dataset.share}%`;
}

// ---- the demo wallet and its faucet ------------------------------------------------------------------------------
function showWallet(w) {
  $('wallet-address').textContent = short(w.address);
  $('wallet-address').title = w.address;
  $('wallet-usd').textContent = usdOf(w.usdAtomic);
  $('wallet-sol').textContent = w.sol;
}
async function loadWallet() {
  try {
    const w = await getJson('/api/wallet');
    showWallet(w);
    $('faucet').hidden = !w.faucet;
  } catch (error) {
    $('faucet-note').textContent = error.message;
  }
}
$('faucet').addEventListener('click', async () => {
  const button = $('faucet');
  button.disabled = true;
  $('faucet-note').textContent = '';
  try {
    const result = await getJson('/api/faucet', { method: 'POST' });
    showWallet({ address: $('wallet-address').title, ...result });
    $('faucet-note').textContent = `+${result.grantedUsd} USD minted`;
  } catch (error) {
    $('faucet-note').textContent = error.message;
  } finally {
    button.disabled = false;
  }
});

connectFeed();
loadServices();
loadChart();
loadActivity();
loadWallet();
setInterval(loadServices, 15000);
setInterval(loadActivity, 5000);
setInterval(loadWallet, 5000);
setInterval(loadChart, 15000);
