// readpast dashboard: plain JavaScript, no build step, no dependencies.
//
// Everything shown comes from the JSON API (docs/http.md). Job text (payloads, errors,
// worker ids, queue names) only ever enters the page through textContent or as an
// attribute value set with setAttribute: never as HTML. The server's
// Content-Security-Policy runs no inline script either.
'use strict';

const REFRESH_MS = 2000;
// The throughput history the server keeps (ServerOptions::throughput_history, docs/http.md).
const CHART_SPAN_S = 600;
const TOKEN_KEY = 'readpast-token';

// ---- helpers ------------------------------------------------------------------------

// el('td', {class: 'num'}, 'text', otherNode): children that are strings become text.
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

// Every request carries a JSON content type: the server refuses anything that changes
// state without one (a cross-site form cannot send it).
async function api(method, path, body) {
  const headers = {'Accept': 'application/json'};
  if (method !== 'GET') headers['Content-Type'] = 'application/json';
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers['Authorization'] = 'Bearer ' + token;
  let response;
  try {
    response = await fetch(path, {
      method,
      headers,
      body: method === 'GET' ? undefined : JSON.stringify(body || {}),
      credentials: 'omit',
      cache: 'no-store',
    });
  } catch (e) {
    throw new ApiError(0, 'unavailable', 'the server does not answer');
  }
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = data.error || {};
    if (response.status === 401) askForToken();
    throw new ApiError(response.status, error.code || 'internal',
                       error.message || response.statusText);
  }
  return data;
}

function askForToken() {
  const dialog = document.getElementById('token-dialog');
  if (dialog.open) return;
  dialog.showModal();
}

function setupTokenDialog() {
  const form = document.getElementById('token-form');
  form.addEventListener('submit', () => {
    sessionStorage.setItem(TOKEN_KEY, document.getElementById('token-input').value.trim());
    location.reload();
  });
}

function setStatus(text, bad) {
  const status = document.getElementById('status');
  status.textContent = text;
  status.classList.toggle('bad', !!bad);
}

function live() {
  setStatus('live · ' + new Date().toLocaleTimeString());
}

function showError(error) {
  setStatus(error.code === 'unavailable' ? 'database or server unavailable' : error.message, true);
}

const integer = new Intl.NumberFormat('en-US');
function count(n) {
  return integer.format(n);
}

function rate(perSecond) {
  if (!perSecond) return '0';
  if (perSecond >= 100) return integer.format(Math.round(perSecond));
  return perSecond.toFixed(perSecond >= 10 ? 1 : 2);
}

// 75 → "1m15s", 0.25 → "250ms"
function duration(seconds) {
  if (!seconds || seconds <= 0) return '–';
  if (seconds < 1) return Math.round(seconds * 1000) + 'ms';
  let s = Math.floor(seconds);
  const parts = [];
  for (const [unit, size] of [['d', 86400], ['h', 3600], ['m', 60]]) {
    if (s >= size) {
      parts.push(Math.floor(s / size) + unit);
      s %= size;
    }
    if (parts.length === 2) return parts.join('');
  }
  if (s > 0 || parts.length === 0) parts.push(s + 's');
  return parts.slice(0, 2).join('');
}

function timeCell(iso) {
  if (!iso) return el('span', {class: 'muted'}, '–');
  const then = new Date(iso);
  const ago = (Date.now() - then.getTime()) / 1000;
  const text = ago >= 0 ? duration(ago) + ' ago' : 'in ' + duration(-ago);
  return el('time', {datetime: iso, title: iso}, text);
}

function stateBadge(state) {
  return el('span', {class: 'badge state-' + state, 'data-state': state}, state);
}

function queueLink(queue, state) {
  const params = new URLSearchParams({queue});
  if (state) params.set('state', state);
  return '/jobs?' + params.toString();
}

// Runs refresh() now and every REFRESH_MS while the page is open.
function every(refresh) {
  let timer = null;
  const tick = async () => {
    try {
      await refresh();
      live();
    } catch (e) {
      showError(e);
    }
    timer = setTimeout(tick, REFRESH_MS);
  };
  tick();
  return () => clearTimeout(timer);
}

// An action button: runs `action`, shows its error, then `after`.
function actionButton(label, attrs, action, after) {
  const button = el('button', attrs, label);
  button.addEventListener('click', async () => {
    if (attrs['data-confirm'] && !confirm(attrs['data-confirm'])) return;
    button.disabled = true;
    try {
      await action();
      if (after) await after();
    } catch (e) {
      showError(e);
      alertBox(e.message);
    } finally {
      button.disabled = false;
    }
  });
  return button;
}

function alertBox(message) {
  const main = document.getElementById('main');
  const existing = main.querySelector('.alert');
  if (existing) existing.remove();
  main.prepend(el('div', {class: 'alert', role: 'alert'}, message));
}

// ---- overview -----------------------------------------------------------------------

function overview(main) {
  const totals = el('section', {class: 'cards'});
  const canvas = el('canvas', {id: 'chart', width: 900, height: 220,
                               'aria-label': 'jobs finished per second'});
  const chart = el('section', {class: 'panel'},
      el('div', {class: 'panel-head'},
         el('h2', {}, 'Throughput'),
         el('span', {class: 'legend'},
            el('i', {class: 'swatch ok'}), 'succeeded/s',
            el('i', {class: 'swatch dead'}), 'failed (dead)/s',
            el('span', {class: 'muted'}, ' · up to the last 10 minutes'))),
      canvas);
  const body = el('tbody', {});
  const table = el('section', {class: 'panel'},
      el('div', {class: 'panel-head'}, el('h2', {}, 'Queues')),
      el('table', {class: 'queues', id: 'queues'},
         el('thead', {}, el('tr', {},
            el('th', {}, 'Queue'),
            el('th', {class: 'num'}, 'Available'),
            el('th', {class: 'num'}, 'Scheduled'),
            el('th', {class: 'num'}, 'Running'),
            el('th', {class: 'num', title: 'running, lease passed: the worker is probably gone'},
               'Expired'),
            el('th', {class: 'num'}, 'Dead'),
            el('th', {class: 'num'}, 'Rate/s'),
            el('th', {class: 'num'}, 'Oldest available'),
            el('th', {}, 'State'),
            el('th', {title: 'global limits over every worker: readpast limit QUEUE'}, 'Limits'),
            el('th', {}, ''))),
         body));
  const held = el('div', {class: 'alert held-snapshot', id: 'held-snapshot', role: 'status',
                          hidden: true});
  main.replaceChildren(held, totals, chart, table);

  const refresh = async () => {
    // The notice is an extra: a failure to read the storage leaves it out, not the page.
    const [data, history, storage] = await Promise.all([
      api('GET', '/api/queues'), api('GET', '/api/throughput'),
      api('GET', '/api/storage').catch(() => null)]);
    renderHeldSnapshot(held, storage && storage.oldest_snapshot);
    renderTotals(totals, data.queues);
    renderQueues(body, data.queues, refresh);
    drawChart(canvas, history);
  };
  every(refresh);
}

// A snapshot held this long gets a notice (as `readpast stats` and the worker's warning).
const HELD_SNAPSHOT_S = 60;

// GET /api/storage's oldest_snapshot: who holds it, in one line, while it has been held for
// HELD_SNAPSHOT_S or more (docs/metrics.md, "The oldest snapshot").
function renderHeldSnapshot(box, holder) {
  if (!holder || holder.age_s == null || holder.age_s < HELD_SNAPSHOT_S) {
    box.hidden = true;
    box.replaceChildren();
    return;
  }
  const who = [holder.kind, holder.pid != null ? String(holder.pid) : null]
      .filter(Boolean).join(' ');
  const about = [holder.client, holder.state].filter(Boolean).join(', ');
  box.replaceChildren(
      el('strong', {}, 'A snapshot has been held for ' + duration(holder.age_s) + '. '),
      `It is held by ${who}${about ? ' (' + about + ')' : ''}: while it lasts, the database ` +
          'cannot reclaim the rows that leased and finished jobs leave behind, and the queue ' +
          'slows down as they pile up. End that transaction.');
  box.hidden = false;
}

function renderTotals(section, queues) {
  const sum = (field) => queues.reduce((total, q) => total + (q[field] || 0), 0);
  const card = (label, value, cls, id) =>
      el('div', {class: 'card ' + (cls || ''), 'data-total': id},
         el('div', {class: 'label'}, label), el('div', {class: 'value'}, value));
  section.replaceChildren(
      card('Queues', count(queues.length), '', 'queues'),
      card('Available', count(sum('available')), '', 'available'),
      card('Running', count(sum('running')), 'running', 'running'),
      card('Waiting', count(sum('waiting')), '', 'waiting'),
      card('Expired', count(sum('expired')), sum('expired') > 0 ? 'expired' : '', 'expired'),
      card('Dead', count(sum('dead')), sum('dead') > 0 ? 'dead' : '', 'dead'),
      card('Finished/s', rate(sum('succeeded_per_s') + sum('dead_per_s')), '', 'rate'));
}

// A queue's global limits ("limits" of GET /api/queues): "running 5 · 100/1s", or "—".
function limitsText(limits) {
  const parts = [];
  if (limits && limits.running != null) parts.push(`running ${count(limits.running)}`);
  if (limits && limits.rate != null) parts.push(`rate ${limits.rate}`);
  return parts.length ? parts.join(' · ') : '—';
}

function renderQueues(body, queues, refresh) {
  if (queues.length === 0) {
    body.replaceChildren(el('tr', {}, el('td', {colspan: 11, class: 'empty'},
        'No queues yet. Enqueue a job: POST /api/queues/NAME/jobs, or readpast enqueue NAME.')));
    return;
  }
  body.replaceChildren(...queues.map((q) => {
    const actions = el('td', {class: 'actions'});
    const name = q.queue;
    actions.append(q.paused
        ? actionButton('Resume', {'data-action': 'resume'},
                       () => api('POST', `/api/queues/${encodeURIComponent(name)}/resume`), refresh)
        : actionButton('Pause', {'data-action': 'pause'},
                       () => api('POST', `/api/queues/${encodeURIComponent(name)}/pause`), refresh));
    if (q.dead > 0) {
      actions.append(actionButton(`Retry ${count(q.dead)} dead`,
          {'data-action': 'retry-dead',
           'data-confirm': `Retry all ${q.dead} dead jobs of ${name}?`},
          () => api('POST', `/api/queues/${encodeURIComponent(name)}/retry`, {state: 'dead'}),
          refresh));
    }
    return el('tr', {'data-queue': name},
        el('td', {}, el('a', {href: queueLink(name)}, name)),
        el('td', {class: 'num', 'data-col': 'available'}, count(q.available)),
        el('td', {class: 'num', 'data-col': 'scheduled'}, count(q.scheduled)),
        el('td', {class: 'num', 'data-col': 'running'}, count(q.running)),
        el('td', {class: 'num', 'data-col': 'expired'},
           q.expired > 0 ? el('span', {class: 'expired'}, count(q.expired)) : '0'),
        el('td', {class: 'num', 'data-col': 'dead'},
           q.dead > 0 ? el('a', {href: queueLink(name, 'dead'), class: 'dead'}, count(q.dead))
                      : '0'),
        el('td', {class: 'num', 'data-col': 'rate'}, rate(q.succeeded_per_s + q.dead_per_s)),
        el('td', {class: 'num', 'data-col': 'oldest'}, duration(q.oldest_available_age_s)),
        el('td', {'data-col': 'paused'},
           q.paused ? el('span', {class: 'badge paused'}, 'paused')
                    : el('span', {class: 'badge active'}, 'active')),
        el('td', {'data-col': 'limits'}, limitsText(q.limits)),
        actions);
  }));
}

function drawChart(canvas, history) {
  const ratio = window.devicePixelRatio || 1;
  const width = canvas.clientWidth || 900;
  const height = canvas.clientHeight || 220;
  if (canvas.width !== Math.round(width * ratio)) canvas.width = Math.round(width * ratio);
  if (canvas.height !== Math.round(height * ratio)) canvas.height = Math.round(height * ratio);
  const g = canvas.getContext('2d');
  g.setTransform(ratio, 0, 0, ratio, 0, 0);
  g.clearRect(0, 0, width, height);

  const left = 48, right = 12, top = 10, bottom = 24;
  const plotW = width - left - right, plotH = height - top - bottom;
  const points = history.points || [];
  const end = points.length ? new Date(points[points.length - 1].t).getTime() : Date.now();
  // The last ten minutes; less while the server has not been up that long (at least one).
  const first = points.length ? new Date(points[0].t).getTime() : end;
  const span = Math.min(CHART_SPAN_S, Math.max(60, Math.ceil((end - first) / 1000)));
  const start = end - span * 1000;
  const shown = points.filter((p) => new Date(p.t).getTime() >= start);
  const peak = Math.max(1, ...shown.map((p) => Math.max(p.succeeded_per_s, p.dead_per_s)));
  const scale = niceCeiling(peak);
  const x = (t) => left + ((t - start) / (end - start)) * plotW;
  const y = (v) => top + plotH - (v / scale) * plotH;

  const style = getComputedStyle(document.body);
  g.font = '11px ' + style.fontFamily;
  g.strokeStyle = '#e3e7ee';
  g.fillStyle = '#6b7280';
  g.lineWidth = 1;
  for (let i = 0; i <= 4; i++) {
    const value = (scale * i) / 4;
    const yy = Math.round(y(value)) + 0.5;
    g.beginPath(); g.moveTo(left, yy); g.lineTo(left + plotW, yy); g.stroke();
    g.textAlign = 'right';
    g.fillText(rate(value), left - 6, yy + 4);
  }
  g.textAlign = 'center';
  const step = span <= 60 ? 10 : span <= 180 ? 30 : 60;
  for (let ago = Math.floor(span / step) * step; ago >= 0; ago -= step) {
    const label = ago === 0 ? 'now' : ago % 60 === 0 ? `-${ago / 60}m` : `-${ago}s`;
    g.fillText(label, x(end - ago * 1000), height - 6);
  }
  const line = (field, color) => {
    g.strokeStyle = color;
    g.lineWidth = 2;
    g.beginPath();
    shown.forEach((p, i) => {
      const px = x(new Date(p.t).getTime()), py = y(p[field]);
      if (i === 0) g.moveTo(px, py); else g.lineTo(px, py);
    });
    g.stroke();
  };
  if (shown.length === 0) {
    g.textAlign = 'center';
    g.fillText('collecting samples…', left + plotW / 2, top + plotH / 2);
  }
  line('succeeded_per_s', '#16a34a');
  line('dead_per_s', '#dc2626');
  canvas.dataset.points = String(shown.length);
}

function niceCeiling(value) {
  const power = Math.pow(10, Math.floor(Math.log10(value)));
  for (const step of [1, 2, 2.5, 5, 10]) {
    if (value <= step * power) return step * power;
  }
  return 10 * power;
}

// ---- job browser --------------------------------------------------------------------

const STATES = ['available', 'running', 'succeeded', 'dead', 'cancelled', 'waiting'];
// The tabs: a stored state, or a derived view (docs/http.md "Look at jobs").
const JOB_TABS = [
  {label: 'All'},
  {label: 'Waiting', state: 'waiting'},
  {label: 'Available', state: 'available'},
  {label: 'Scheduled', view: 'scheduled'},
  {label: 'Retrying', view: 'retrying'},
  {label: 'Running', state: 'running'},
  {label: 'Expired', view: 'expired'},
  {label: 'Succeeded', state: 'succeeded'},
  {label: 'Dead', state: 'dead'},
  {label: 'Cancelled', state: 'cancelled'},
];
// The bulk actions: the endpoint, the verb, and the states each one takes.
const BULK_ACTIONS = [
  {action: 'retry', label: 'Retry', done: 'retried', takes: 'dead or cancelled'},
  {action: 'cancel', label: 'Cancel', done: 'cancelled', takes: 'waiting, available or running'},
  {action: 'delete', label: 'Delete', done: 'deleted', takes: 'succeeded, dead or cancelled'},
];

// The list's filters as they are in the address bar (and links to other pages of it).
function jobListUrl(filters, cursor) {
  const p = new URLSearchParams();
  for (const name of ['queue', 'state', 'view', 'q']) if (filters[name]) p.set(name, filters[name]);
  if (filters.order === 'oldest') p.set('order', 'oldest');
  for (const [name, value] of Object.entries(cursor || {})) p.set(name, value);
  const query = p.toString();
  return '/jobs' + (query ? '?' + query : '');
}

// Asks to confirm a bulk action in a modal dialog; resolves true when confirmed.
function confirmBulk(title, text, confirmLabel) {
  return new Promise((resolve) => {
    const dialog = el('dialog', {id: 'bulk-dialog'},
        el('h2', {}, title), el('p', {}, text),
        el('div', {class: 'buttons'},
           el('button', {type: 'button', 'data-answer': 'no'}, 'Keep them'),
           ' ',
           el('button', {type: 'button', class: 'primary', 'data-answer': 'yes'}, confirmLabel)));
    const finish = (answer) => {
      dialog.close();
      dialog.remove();
      resolve(answer);
    };
    dialog.addEventListener('cancel', () => finish(false));
    for (const button of dialog.querySelectorAll('button')) {
      button.addEventListener('click', () => finish(button.dataset.answer === 'yes'));
    }
    document.body.append(dialog);
    dialog.showModal();
  });
}

async function browser(main) {
  const params = new URLSearchParams(location.search);
  const filters = {
    queue: params.get('queue') || '',
    state: params.get('state') || '',
    view: params.get('view') || '',
    q: params.get('q') || '',
    order: params.get('order') === 'oldest' ? 'oldest' : 'newest',
  };
  const cursor = {};
  for (const name of ['before', 'after']) if (params.get(name)) cursor[name] = params.get(name);

  const queueSelect = el('select', {name: 'queue', id: 'filter-queue'},
                         el('option', {value: ''}, 'every queue'));
  const search = el('input', {type: 'search', name: 'q', id: 'filter-search', value: filters.q,
                              placeholder: 'payload, worker, key, error', maxlength: 1024});
  const orderSelect = el('select', {name: 'order', id: 'filter-order'},
                         el('option', {value: 'newest'}, 'newest first'),
                         el('option', {value: 'oldest', selected: filters.order === 'oldest'},
                            'oldest first'));
  const form = el('form', {class: 'filters', method: 'get', action: '/jobs'},
      el('label', {}, 'Queue ', queueSelect),
      el('label', {}, 'Search ', search),
      el('label', {}, 'Order ', orderSelect),
      filters.state ? el('input', {type: 'hidden', name: 'state', value: filters.state}) : null,
      filters.view ? el('input', {type: 'hidden', name: 'view', value: filters.view}) : null,
      el('button', {type: 'submit', class: 'primary'}, 'Show'));
  // Empty fields stay out of the address.
  form.addEventListener('formdata', (event) => {
    for (const [name, value] of [...event.formData.entries()]) {
      if (value === '' || (name === 'order' && value === 'newest')) event.formData.delete(name);
    }
  });
  const tabs = el('nav', {class: 'tabs', 'aria-label': 'job states'},
      JOB_TABS.map((tab) => {
        const current = (tab.state || '') === filters.state && (tab.view || '') === filters.view;
        const href = jobListUrl({...filters, state: tab.state || '', view: tab.view || ''});
        return el('a', {href, class: current ? 'tab current' : 'tab',
                        'data-tab': tab.view || tab.state || 'all'}, tab.label);
      }));

  const selectAll = el('input', {type: 'checkbox', id: 'select-all',
                                 'aria-label': 'select every job on this page'});
  const selectedCount = el('span', {class: 'muted', id: 'selected-count'});
  const bulkButtons = BULK_ACTIONS.map((b) => el('button', {
    type: 'button', 'data-bulk': b.action, disabled: true,
    class: b.action === 'delete' ? 'danger' : undefined}, b.label + ' selected'));
  const bulkBar = el('div', {class: 'toolbar bulk'}, bulkButtons, selectedCount);
  const toolbar = el('div', {class: 'toolbar'});
  const notice = el('div', {class: 'notice', id: 'bulk-result', role: 'status'});
  const body = el('tbody', {});
  const pager = el('div', {class: 'pager'});
  main.replaceChildren(
      el('section', {class: 'panel'},
         el('div', {class: 'panel-head'}, el('h2', {}, 'Jobs'), form),
         tabs, toolbar, bulkBar, notice,
         el('table', {class: 'jobs', id: 'jobs'},
            el('thead', {}, el('tr', {},
               el('th', {class: 'check'}, selectAll),
               el('th', {class: 'num'}, 'ID'), el('th', {}, 'Queue'), el('th', {}, 'State'),
               el('th', {class: 'num'}, 'Attempts'), el('th', {}, 'Enqueued'),
               el('th', {}, 'Worker'), el('th', {}, 'Payload'), el('th', {}, 'Last error'))),
            body),
         pager));

  const boxes = () => [...body.querySelectorAll('input[data-select]')];
  const selected = () => boxes().filter((b) => b.checked).map((b) => Number(b.dataset.select));
  const updateSelection = () => {
    const n = selected().length;
    const all = boxes();
    selectAll.checked = all.length > 0 && n === all.length;
    selectAll.indeterminate = n > 0 && n < all.length;
    selectedCount.textContent = n ? `${n} selected` : '';
    for (const button of bulkButtons) button.disabled = n === 0;
  };
  selectAll.addEventListener('change', () => {
    for (const box of boxes()) box.checked = selectAll.checked;
    updateSelection();
  });

  try {
    const queues = await api('GET', '/api/queues');
    const names = queues.queues.map((q) => q.queue);
    if (filters.queue && !names.includes(filters.queue)) names.push(filters.queue);
    queueSelect.append(...names.map((n) => el('option', {value: n, selected: n === filters.queue},
                                              n)));
    if (filters.queue && filters.state === 'dead') {
      toolbar.append(actionButton('Retry every dead job of ' + filters.queue,
          {'data-action': 'retry-dead',
           'data-confirm': `Retry all dead jobs of ${filters.queue}?`},
          () => api('POST', `/api/queues/${encodeURIComponent(filters.queue)}/retry`,
                    {state: 'dead'}),
          () => location.reload()));
    }
  } catch (e) {
    showError(e);
  }

  const load = async () => {
    const query = new URLSearchParams({limit: '50', payload_max: '160', order: filters.order});
    for (const name of ['queue', 'state', 'view', 'q']) {
      if (filters[name]) query.set(name, filters[name]);
    }
    for (const [name, value] of Object.entries(cursor)) query.set(name, value);
    const page = await api('GET', '/api/jobs?' + query.toString());
    // These read a window of ids per request (docs/http.md "What a page costs").
    const searching = filters.q || filters.view || (filters.state && !filters.queue);
    if (page.jobs.length === 0) {
      const why = page.next && searching ? 'No matches among these ids yet.'
                                        : Object.keys(cursor).length ? 'No more jobs.'
                                                                     : 'No jobs match.';
      body.replaceChildren(el('tr', {}, el('td', {colspan: 9, class: 'empty'}, why)));
    } else {
      body.replaceChildren(...page.jobs.map((job) => el('tr', {'data-job': job.id},
          el('td', {class: 'check'},
             el('input', {type: 'checkbox', 'data-select': job.id,
                          'aria-label': 'select job ' + job.id, onchange: updateSelection})),
          el('td', {class: 'num'}, el('a', {href: '/jobs/' + job.id}, String(job.id))),
          el('td', {}, job.queue),
          el('td', {}, stateBadge(job.state)),
          el('td', {class: 'num'}, `${job.attempts}/${job.max_attempts}`),
          el('td', {}, timeCell(job.enqueued_at)),
          el('td', {'data-col': 'worker'}, workerCell(job)),
          el('td', {class: 'preview'}, payloadPreview(job)),
          el('td', {class: 'preview error-text'}, job.last_error || ''))));
    }
    updateSelection();
    // Newest first, "next" goes to older jobs; oldest first, to newer ones.
    const newest = filters.order === 'newest';
    const short = searching && page.next && page.jobs.length < 50;
    const link = (label, to, dir) => el('a', {href: jobListUrl(filters, to), class: 'button',
                                              'data-page': dir}, label);
    let where = 'the newest jobs';
    if (!newest) where = 'the oldest jobs';
    if (cursor.before) where = `ids below ${cursor.before}`;
    if (cursor.after) where = `ids above ${cursor.after}`;
    if (short) {
      const stop = page.next.before || page.next.after;
      where += ` · searched to id ${stop}`;
    }
    pager.replaceChildren(
        el('span', {},
           Object.keys(cursor).length ? link(newest ? '« Newest' : '« Oldest', {}, 'first') : null,
           ' ',
           page.prev ? link(newest ? '‹ Newer' : '‹ Older', page.prev, 'prev') : null),
        el('span', {class: 'muted', id: 'page-where'}, where),
        page.next ? link(short ? 'Search further ›' : (newest ? 'Older ›' : 'Newer ›'), page.next,
                         'next')
                  : el('span', {}));
    live();
  };

  for (const button of bulkButtons) {
    const b = BULK_ACTIONS.find((a) => a.action === button.dataset.bulk);
    button.addEventListener('click', async () => {
      const ids = selected();
      if (!ids.length) return;
      const jobs = ids.length === 1 ? 'job ' + ids[0] : `${ids.length} jobs`;
      const ok = await confirmBulk(`${b.label} ${jobs}?`,
          `Only ${b.takes} jobs are ${b.done}; the others are left as they are.` +
          (b.action === 'delete' ? ' Deleted jobs are gone for good.' : ''),
          `${b.label} ${jobs}`);
      if (!ok) return;
      for (const other of bulkButtons) other.disabled = true;
      try {
        const result = await api('POST', '/api/jobs/' + b.action, {ids});
        const changed = result[b.done] || [];
        const unchanged = result.unchanged || [];
        let text = `${changed.length} of ${ids.length} ${b.done}.`;
        if (unchanged.length) {
          text += ` Unchanged (not ${b.takes}, or gone): ${unchanged.join(', ')}.`;
        }
        notice.textContent = text;
        await load();
      } catch (e) {
        showError(e);
        alertBox(e.message);
        updateSelection();
      }
    });
  }

  try {
    await load();
  } catch (e) {
    showError(e);
    alertBox(e.message);
  }
}

// A running job: who holds it and for how long it has run (its latest attempt).
function workerCell(job) {
  if (job.state !== 'running') return el('span', {class: 'muted'}, '–');
  const since = job.started_at ? (Date.now() - new Date(job.started_at).getTime()) / 1000 : 0;
  return el('span', {title: job.started_at || ''}, job.leased_by || '?',
            el('span', {class: 'muted'}, ' · running for ' + duration(Math.max(since, 1))));
}

function payloadPreview(job) {
  let text = job.payload_encoding === 'base64' ? '(binary) ' + job.payload : job.payload;
  if (job.payload_truncated) text += '…';
  return text;
}

// ---- one job ------------------------------------------------------------------------

function jobPage(main, id) {
  const title = el('h2', {}, 'Job ' + id);
  const head = el('div', {class: 'panel-head'}, title);
  const actions = el('div', {class: 'toolbar'});
  const facts = el('dl', {class: 'facts'});
  const error = el('pre', {class: 'text error-text', id: 'last-error'});
  const payload = el('pre', {class: 'text', id: 'payload'});
  const payloadNote = el('span', {class: 'muted'});
  const waitsFor = el('ul', {class: 'edges', id: 'waits-for'});
  const groupTotals = el('span', {id: 'group-totals'}, '–');
  const waitedForBy = el('ul', {class: 'edges', id: 'waited-for-by'});
  const dependencyPanel = el('section', {class: 'panel', id: 'dependencies-panel'},
      el('div', {class: 'panel-head'}, el('h2', {}, 'Dependencies')),
      el('dl', {class: 'facts'}, el('dt', {}, 'group'), el('dd', {}, groupTotals),
         el('dt', {}, 'waits for'), el('dd', {}, waitsFor),
         el('dt', {}, 'waited for by'), el('dd', {}, waitedForBy)));
  const progress = el('pre', {class: 'text', id: 'progress'});
  const errors = el('tbody', {});
  main.replaceChildren(
      el('section', {class: 'panel'}, head, actions, facts),
      dependencyPanel,
      el('section', {class: 'panel', id: 'progress-panel'},
         el('div', {class: 'panel-head'}, el('h2', {}, 'Progress')), progress),
      el('section', {class: 'panel', id: 'error-panel'},
         el('div', {class: 'panel-head'}, el('h2', {}, 'Last error')), error),
      el('section', {class: 'panel', id: 'errors-panel'},
         el('div', {class: 'panel-head'}, el('h2', {}, 'Error history')),
         el('table', {class: 'jobs'},
            el('thead', {}, el('tr', {}, el('th', {}, 'attempt'), el('th', {}, 'at'),
                                el('th', {}, 'worker'), el('th', {}, 'error'))),
            errors)),
      el('section', {class: 'panel'},
         el('div', {class: 'panel-head'}, el('h2', {}, 'Payload'), payloadNote), payload));

  let lastShown = '';
  const refresh = async () => {
    const job = await api('GET', '/api/jobs/' + encodeURIComponent(id));
    const fingerprint = JSON.stringify(job);
    if (fingerprint === lastShown) return;
    lastShown = fingerprint;
    title.replaceChildren('Job ' + job.id + ' ', stateBadge(job.state));
    renderActions(actions, job, refresh);
    const fact = (label, value) => [el('dt', {}, label), el('dd', {'data-fact': label}, value)];
    facts.replaceChildren(
        ...fact('queue', el('a', {href: queueLink(job.queue)}, job.queue)),
        ...fact('state', job.state),
        ...fact('attempts', `${job.attempts} of ${job.max_attempts}`),
        ...fact('priority', String(job.priority)),
        ...fact('run at', timeCell(job.run_at)),
        ...fact('enqueued', timeCell(job.enqueued_at)),
        ...fact('started', timeCell(job.started_at)),
        ...fact('finished', timeCell(job.finished_at)),
        ...fact('worker', job.leased_by || '–'),
        ...fact('lease expires', timeCell(job.lease_expires_at)),
        ...fact('unique key', job.unique_key || '–'));
    renderEdges(waitsFor, job.after || [], 0);
    renderEdges(waitedForBy, job.dependents || [], job.dependent_count || 0);
    if (job.group) {
      const g = await api('GET', '/api/groups/' + encodeURIComponent(job.group));
      groupTotals.replaceChildren(el('strong', {}, g.group), ' ',
          ...['waiting', 'available', 'running', 'succeeded', 'dead', 'cancelled']
              .filter((state) => g[state] > 0)
              .map((state) => el('span', {class: 'muted', 'data-group-count': state},
                                 ` · ${count(g[state])} ${state}`)),
          g.waiters > 0 ? el('span', {class: 'muted'}, ` · ${count(g.waiters)} waiting for it`)
                        : '');
    } else {
      groupTotals.replaceChildren('–');
    }
    dependencyPanel.hidden = !(job.after || []).length && !job.dependent_count && !job.group;
    error.textContent = job.last_error || '';
    document.getElementById('error-panel').hidden = !job.last_error;
    // The progress the job's worker recorded (any JSON value), indented; text only.
    const hasProgress = job.progress !== null && job.progress !== undefined;
    progress.textContent = hasProgress ? JSON.stringify(job.progress, null, 2) : '';
    document.getElementById('progress-panel').hidden = !hasProgress;
    const history = job.errors || [];
    errors.replaceChildren(...history.map(
        (e) => el('tr', {'data-attempt': String(e.attempt)},
                  el('td', {}, String(e.attempt)), el('td', {}, timeCell(e.at)),
                  el('td', {}, e.worker || '–'),
                  el('td', {}, el('pre', {class: 'text error-text'}, e.error)))));
    document.getElementById('errors-panel').hidden = history.length === 0;
    const shown = formatPayload(job);
    payload.textContent = shown.text;
    const bytes = `${new Blob([job.payload]).size} bytes`;
    payload.dataset.format = shown.format;
    payloadNote.textContent = job.payload_encoding === 'base64'
        ? 'not UTF-8 text: shown as base64'
        : shown.format === 'json' ? bytes + ' · JSON, indented' : bytes + ' · as stored';
  };
  every(refresh);
}

// Links to the jobs at the other end of a job's dependencies, each with its state (and
// "met" once it succeeded while the job waited); `total` says how many there are in all.
function renderEdges(list, edges, total) {
  const items = edges.map((edge) => edge.group
      ? el('li', {'data-edge-group': edge.group}, 'group ' + edge.group,
           el('span', {class: 'muted'}, edge.met ? ' finished' : ' running'))
      : el('li', {'data-edge': edge.id},
           el('a', {href: '/jobs/' + edge.id}, String(edge.id)), ' ',
           edge.state ? stateBadge(edge.state) : el('span', {class: 'muted'}, 'purged'),
           edge.met ? el('span', {class: 'muted'}, ' met') : ''));
  if (items.length === 0) items.push(el('li', {class: 'muted'}, '–'));
  if (total > edges.length) {
    items.push(el('li', {class: 'muted'}, `and ${count(total - edges.length)} more`));
  }
  list.replaceChildren(...items);
}

function renderActions(actions, job, refresh) {
  const path = '/api/jobs/' + job.id;
  actions.replaceChildren();
  if (job.state === 'dead' || job.state === 'cancelled') {
    actions.append(actionButton('Retry', {'data-action': 'retry', class: 'primary'},
                                () => api('POST', path + '/retry'), refresh));
  }
  if (job.state === 'available' || job.state === 'running' || job.state === 'waiting') {
    actions.append(actionButton('Cancel', {'data-action': 'cancel', class: 'danger',
                                           'data-confirm': `Cancel job ${job.id}?`},
                                () => api('POST', path + '/cancel'), refresh));
  }
}

// JSON payloads are indented for reading; anything else is shown exactly as stored. Either
// way the result only ever becomes the textContent of a <pre>, never HTML.
function formatPayload(job) {
  if (job.payload_encoding !== 'utf8') return {text: job.payload, format: 'base64'};
  const trimmed = job.payload.trim();
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    try {
      return {text: JSON.stringify(JSON.parse(trimmed), null, 2), format: 'json'};
    } catch (e) {
      // not JSON after all
    }
  }
  return {text: job.payload, format: 'raw'};
}

// ---- schedules ----------------------------------------------------------------------

// The cron or interval part of a spec ("CRON_TZ=Europe/Berlin 0 9 * * *" → "0 9 * * *");
// the zone has a column of its own.
function specExpression(spec) {
  const match = spec.match(/^CRON_TZ=\S+\s+(.*)$/);
  return match ? match[1] : spec;
}

function schedulesPage(main) {
  const notice = el('div', {class: 'notice', id: 'run-notice', role: 'status', hidden: true});
  const body = el('tbody', {});
  main.replaceChildren(
      notice,
      el('section', {class: 'panel'},
         el('div', {class: 'panel-head'}, el('h2', {}, 'Schedules'),
            el('span', {class: 'muted'}, 'times shown in UTC on hover')),
         el('table', {class: 'schedules', id: 'schedules'},
            el('thead', {}, el('tr', {},
               el('th', {}, 'Name'), el('th', {}, 'Queue'), el('th', {}, 'Schedule'),
               el('th', {}, 'Zone'), el('th', {}, 'Next tick'), el('th', {}, 'Last tick'),
               el('th', {}, 'Last tick\u2019s job'), el('th', {}, ''))),
            body)));

  const ran = (name, result) => {
    notice.hidden = false;
    notice.replaceChildren(`Enqueued job `,
        el('a', {href: '/jobs/' + result.id, 'data-job-link': result.id}, String(result.id)),
        ` from schedule ${name} into its queue now; its ticks are unchanged.`);
  };
  const refresh = async () => {
    const data = await api('GET', '/api/schedules');
    if (data.schedules.length === 0) {
      body.replaceChildren(el('tr', {}, el('td', {colspan: 8, class: 'empty'},
          'No schedules. Add one: readpast schedule add NAME QUEUE --cron EXPR (docs/schedules.md).')));
      return;
    }
    body.replaceChildren(...data.schedules.map((s) => {
      const name = s.name;
      const run = actionButton('Run now',
          {'data-action': 'run', 'data-confirm': `Enqueue one job of ${name} into ${s.queue} now?`},
          async () => ran(name, await api('POST', `/api/schedules/${encodeURIComponent(name)}/run`)),
          refresh);
      return el('tr', {'data-schedule': name},
          el('td', {'data-col': 'name'}, name),
          el('td', {'data-col': 'queue'}, el('a', {href: queueLink(s.queue)}, s.queue)),
          el('td', {'data-col': 'spec'}, el('code', {}, specExpression(s.spec))),
          el('td', {'data-col': 'zone'}, s.time_zone),
          el('td', {'data-col': 'next'}, timeCell(s.next_tick)),
          el('td', {'data-col': 'last'}, timeCell(s.last_tick)),
          el('td', {'data-col': 'last-job'}, lastTickJob(s)),
          el('td', {class: 'actions'}, run));
    }));
  };
  every(refresh);
}

// The job the last tick enqueued, linked, with its state; "–" before the first tick.
// (A job that retention or purge deleted is said to be gone.)
function lastTickJob(schedule) {
  const job = schedule.last_job;
  if (!job) return el('span', {class: 'muted'}, '–');
  if (!job.state) return el('span', {class: 'muted', title: 'deleted by retention or purge'},
                            `${job.id} (gone)`);
  return el('span', {}, el('a', {href: '/jobs/' + job.id}, String(job.id)), ' ',
            stateBadge(job.state));
}

// ---- workers ------------------------------------------------------------------------

// A worker whose last heartbeat is older than this is drawn as stale (its process is
// probably gone; its jobs' leases will expire and be rescued).
const STALE_HEARTBEAT_S = 30;

function workersPage(main) {
  const body = el('tbody', {});
  const summary = el('span', {class: 'muted', id: 'workers-summary'});
  main.replaceChildren(
      el('section', {class: 'panel'},
         el('div', {class: 'panel-head'}, el('h2', {}, 'Workers'), summary),
         el('table', {class: 'workers', id: 'workers'},
            el('thead', {}, el('tr', {},
               el('th', {}, 'Worker'), el('th', {}, 'Queues'),
               el('th', {class: 'num'}, 'Threads'), el('th', {class: 'num'}, 'Busy'),
               el('th', {}, 'Started'), el('th', {class: 'num'}, 'Heartbeat'),
               el('th', {}, 'Running jobs'))),
            body)));

  const refresh = async () => {
    const data = await api('GET', '/api/workers');
    const workers = data.workers || [];
    const busy = workers.reduce((n, w) => n + (w.jobs || []).length, 0);
    const threads = workers.reduce((n, w) => n + (w.threads || 0), 0);
    summary.textContent = `${count(workers.length)} process${workers.length === 1 ? '' : 'es'} · ` +
                          `${count(busy)} of ${count(threads)} threads busy`;
    if (workers.length === 0) {
      body.replaceChildren(el('tr', {}, el('td', {colspan: 7, class: 'empty'},
          'No workers are running. Start one: readpast work QUEUE --exec COMMAND.')));
      return;
    }
    body.replaceChildren(...workers.map((w) => {
      const stale = w.heartbeat_age_s > STALE_HEARTBEAT_S;
      const jobs = w.jobs || [];
      return el('tr', {'data-worker': w.name, class: stale ? 'stale' : null},
          el('td', {'data-col': 'name'}, w.name),
          el('td', {'data-col': 'queues'},
             ...(w.queues || []).flatMap((q, i) =>
                 [i > 0 ? ', ' : null, el('a', {href: queueLink(q)}, q)])),
          el('td', {class: 'num', 'data-col': 'threads'}, count(w.threads || 0)),
          el('td', {class: 'num', 'data-col': 'busy'}, count(jobs.length)),
          el('td', {'data-col': 'started'}, timeCell(w.started_at)),
          el('td', {class: 'num', 'data-col': 'heartbeat'},
             el('span', {class: stale ? 'stale-beat' : null,
                         title: stale ? `no heartbeat for over ${STALE_HEARTBEAT_S}s: ` +
                                        'the process is probably gone' : w.heartbeat_at || ''},
                (w.heartbeat_age_s < 1 ? '<1s' : duration(w.heartbeat_age_s)) + ' ago')),
          el('td', {'data-col': 'jobs'},
             jobs.length === 0 ? el('span', {class: 'muted'}, 'idle')
                 : el('ul', {class: 'running-jobs'}, ...jobs.map((j) => el('li', {'data-job': j.id},
                       el('a', {href: '/jobs/' + j.id}, String(j.id)), ' ',
                       el('span', {class: 'muted'},
                          `${j.queue} · running for ${duration(Math.max(j.running_for_s, 1))}`))))));
    }));
  };
  every(refresh);
}

// ---- start --------------------------------------------------------------------------

function start() {
  setupTokenDialog();
  const main = document.getElementById('main');
  const path = location.pathname;
  const jobMatch = path.match(/^\/jobs\/(\d+)$/);
  let section = 'overview';
  if (jobMatch) {
    section = 'jobs';
    document.title = 'Job ' + jobMatch[1] + ' · readpast';
    jobPage(main, jobMatch[1]);
  } else if (path === '/jobs') {
    section = 'jobs';
    document.title = 'Jobs · readpast';
    browser(main);
  } else if (path === '/schedules') {
    section = 'schedules';
    document.title = 'Schedules · readpast';
    schedulesPage(main);
  } else if (path === '/workers') {
    section = 'workers';
    document.title = 'Workers · readpast';
    workersPage(main);
  } else {
    document.title = 'Overview · readpast';
    overview(main);
  }
  for (const link of document.querySelectorAll('[data-nav]')) {
    link.classList.toggle('current', link.dataset.nav === section);
  }
}

document.addEventListener('DOMContentLoaded', start);
