// Browser tests of the dashboard's schedules and workers pages, the expired counts and the
// job page's payload: Debian's headless Chromium driven by playwright-core, against a real
// `readpast serve` over a SQLite file, with schedules added and worked by the real `readpast`
// command. Where a state is hard to hold still on a live server (an expired lease, which the
// server itself rescues within seconds, or workers with a stale heartbeat), the page is fed a
// fixed answer of the documented API with page.route(). Screenshots (schedules.png,
// job-json.png, workers.png, workers-stale.png, held-snapshot.png) are written to $READPAST_SCREENSHOTS
// (default: ./screenshots).
//
//   READPAST_CLI=/path/to/readpast node --test pages.test.mjs
import {after, before, test} from 'node:test';
import assert from 'node:assert/strict';
import {spawn} from 'node:child_process';
import {mkdtempSync, mkdirSync, rmSync, writeFileSync} from 'node:fs';
import {tmpdir} from 'node:os';
import path from 'node:path';
import {chromium} from 'playwright-core';

import {WAIT_MS, callApi, eventually, runReadpast, startServe} from './harness.mjs';

const CLI = process.env.READPAST_CLI;
const CHROMIUM = process.env.READPAST_CHROMIUM || '/usr/bin/chromium';
const SHOTS = process.env.READPAST_SCREENSHOTS || path.resolve('screenshots');

let dir;
let env;
let server;
let base;
let browser;
let page;
const running = new Set();  // readpast processes to kill if a test fails half-way

// The shared harness (harness.mjs), bound to this file's environment.
function readpast(args, options = {}) {
  return runReadpast(CLI, env, running, args, options);
}
function startServer(extraEnv = {}) {
  return startServe(CLI, {...env, ...extraEnv}, running);
}
function api(method, urlPath, body) {
  return callApi(base, method, urlPath, body);
}

// Answers the page's requests for `urlPath` with `body` (JSON) instead of the server;
// returns the function that stops it.
async function answer(tab, urlPath, body) {
  const matches = (url) => url.pathname === urlPath;
  await tab.route(matches, (route) => route.fulfill({status: 200, contentType: 'application/json',
                                                     body: JSON.stringify(body)}));
  return () => tab.unroute(matches);
}

function iso(secondsAgo) {
  return new Date(Date.now() - secondsAgo * 1000).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

before(async () => {
  assert.ok(CLI, 'set READPAST_CLI to the readpast binary');
  dir = mkdtempSync(path.join(tmpdir(), 'readpast-pages-'));
  mkdirSync(SHOTS, {recursive: true});
  env = {...process.env, READPAST_DB: 'sqlite:' + path.join(dir, 'jobs.db')};
  delete env.READPAST_TOKEN;
  await readpast(['init']);
  const started = await startServer();
  server = started.child;
  base = started.url;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  page = await browser.newPage({viewport: {width: 1366, height: 820}});
  page.on('dialog', (dialog) => dialog.accept());
});

after(async () => {
  if (server) {
    running.delete(server);
    server.kill('SIGTERM');
  }
  for (const child of running) child.kill('SIGKILL');
  if (browser) await browser.close();
  if (dir) rmSync(dir, {recursive: true, force: true});
});

test('the schedules page shows ticks and the last tick\'s job, and runs a schedule now',
     async () => {
  await page.goto(base + '/schedules');
  await page.getByText('No schedules.').waitFor();

  await readpast(['schedule', 'add', 'nightly-report', 'reports', '--cron', '0 3 * * *',
                  '{"kind":"daily"}']);
  await readpast(['schedule', 'add', 'standup', 'team', '--cron', '0 9 * * mon-fri',
                  '--tz', 'Europe/Berlin', 'standup reminder']);
  await readpast(['schedule', 'add', 'heartbeat', 'pings', '--every', '1s', 'ping']);
  // A worker runs the schedules until the heartbeat's tick has made a job and run it.
  const worker = spawn(CLI, ['work', 'pings', '--exec', 'cat >/dev/null', '--no-progress'],
                       {env, stdio: 'ignore'});
  running.add(worker);
  const heartbeat = async () =>
      (await api('GET', '/api/schedules')).json.schedules.find((s) => s.name === 'heartbeat');
  await eventually(heartbeat, (s) => s && s.last_job && s.last_job.state === 'succeeded',
                   'the heartbeat ticked');
  const stopped = new Promise((resolve) => worker.on('close', resolve));
  worker.kill('SIGTERM');
  await stopped;
  running.delete(worker);
  const ticked = await heartbeat();

  const row = (name) => page.locator(`tr[data-schedule="${name}"]`);
  const col = (name, column) => row(name).locator(`td[data-col="${column}"]`);
  await row('nightly-report').waitFor();
  assert.equal(await col('nightly-report', 'queue').innerText(), 'reports');
  assert.equal(await col('nightly-report', 'spec').innerText(), '0 3 * * *');
  assert.equal(await col('nightly-report', 'zone').innerText(), 'UTC');
  assert.match(await col('nightly-report', 'next').locator('time').getAttribute('datetime'),
               /T03:00:00\.000000Z$/);
  assert.match(await col('nightly-report', 'next').innerText(), /^in /);
  assert.equal(await col('nightly-report', 'last').innerText(), '–');
  assert.equal(await col('nightly-report', 'last-job').innerText(), '–');
  assert.equal(await col('standup', 'spec').innerText(), '0 9 * * mon-fri');
  assert.equal(await col('standup', 'zone').innerText(), 'Europe/Berlin');
  // The heartbeat's last tick and the job it made, linked, with its state.
  await eventually(() => col('heartbeat', 'last-job').innerText(),
                   (t) => t === `${ticked.last_job.id} ${ticked.last_job.state}`,
                   'the last tick\'s job');
  const jobLink = col('heartbeat', 'last-job').locator('a');
  assert.equal(await jobLink.getAttribute('href'), '/jobs/' + ticked.last_job.id);
  assert.equal(await col('heartbeat', 'last-job').locator('[data-state]').getAttribute('data-state'),
               ticked.last_job.state);
  assert.match(await col('heartbeat', 'last').innerText(), /ago$/);

  // Run now: one job of the schedule, at once; the ticks stay.
  const before = (await api('GET', '/api/schedules')).json.schedules
                     .find((s) => s.name === 'nightly-report');
  await row('nightly-report').locator('button[data-action="run"]').click();
  const link = page.locator('#run-notice a[data-job-link]');
  await link.waitFor();
  const id = Number(await link.getAttribute('data-job-link'));
  const job = (await api('GET', '/api/jobs/' + id)).json;
  assert.equal(job.queue, 'reports');
  assert.equal(job.state, 'available');
  assert.equal(job.payload, '{"kind":"daily"}');
  assert.equal(job.unique_key, null);
  const afterRun = (await api('GET', '/api/schedules')).json.schedules
                       .find((s) => s.name === 'nightly-report');
  assert.equal(afterRun.last_tick, before.last_tick);
  assert.equal(afterRun.next_tick, before.next_tick);
  assert.equal(afterRun.last_job, null);
  assert.match(await page.locator('#run-notice').innerText(),
               new RegExp(`^Enqueued job ${id} from schedule nightly-report`));
  await page.screenshot({path: path.join(SHOTS, 'schedules.png'), fullPage: true});

  // The link leads to the job's page.
  await link.click();
  await page.waitForURL(new RegExp(`/jobs/${id}$`));
  await page.locator('h2 [data-state="available"]').waitFor();
});

test('running a schedule that was removed meanwhile says so and changes nothing', async () => {
  await readpast(['schedule', 'add', 'doomed', 'gone', '--every', '1h']);
  await page.goto(base + '/schedules');
  await page.locator('tr[data-schedule="doomed"]').waitFor();
  // The page still shows the row when the click comes: the server answers 404.
  const schedulesPath = (url) => url.pathname === '/api/schedules';
  await page.route(schedulesPath, async (route) => {
    const response = await route.fetch();
    const data = await response.json();
    data.schedules.push({name: 'doomed', queue: 'gone', spec: 'every 1h', time_zone: 'UTC',
                         payload: '', payload_encoding: 'utf8', priority: 100, max_attempts: 25,
                         created_at: iso(60), last_tick: null, next_tick: iso(-3600),
                         last_job: null});
    data.schedules = data.schedules.filter((s, i, all) =>
        all.findIndex((t) => t.name === s.name) === i);
    await route.fulfill({response, json: data});
  });
  await readpast(['schedule', 'remove', 'doomed']);
  await page.locator('tr[data-schedule="doomed"] button[data-action="run"]').click();
  await eventually(() => page.locator('.alert').count(), (n) => n === 1, 'the error');
  assert.match(await page.locator('.alert').innerText(), /no schedule named 'doomed'/);
  await page.unroute(schedulesPath);
  const stats = (await api('GET', '/api/queues')).json.queues.map((q) => q.queue);
  assert.ok(!stats.includes('gone'), 'a job was enqueued into the removed schedule\'s queue');
});

test('a JSON payload is indented on the job page, as text; other payloads are as stored',
     async () => {
  const payload = JSON.stringify({to: 'a@example.com',
                                  html: '<img src=x onerror="window.__pwned = true">',
                                  items: [1, 2, {nested: true}]});
  const id = Number((await readpast(['enqueue', 'mail', payload])).trim());
  await page.goto(`${base}/jobs/${id}`);
  const shown = page.locator('#payload');
  await eventually(() => shown.getAttribute('data-format'), (f) => f === 'json', 'the format');
  assert.equal(await shown.textContent(), JSON.stringify(JSON.parse(payload), null, 2));
  assert.match(await shown.textContent(), /\n  "items": \[\n    1,/);
  assert.equal(await shown.locator('*').count(), 0, 'the payload made elements');
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.match(await page.locator('#payload').locator('xpath=..').innerText(), /JSON, indented/);
  await page.screenshot({path: path.join(SHOTS, 'job-json.png'), fullPage: true});

  for (const raw of ['{"almost": json', 'plain text <b>bold</b>\n  indented', '[1, 2']) {
    const rawId = Number((await readpast(['enqueue', 'mail', raw])).trim());
    await page.goto(`${base}/jobs/${rawId}`);
    await eventually(() => shown.getAttribute('data-format'), (f) => f === 'raw', 'raw format');
    assert.equal(await shown.textContent(), raw);
    assert.equal(await shown.locator('*').count(), 0);
  }
});

test('the job page shows the progress and every failed attempt, as text', async () => {
  const id = Number((await readpast(['enqueue', 'work', 'x', '--max-attempts', '2'])).trim());
  const progress = {done: 3, of: 10, note: '<img src=x onerror="window.__pwned = true">'};
  for (const attempt of [1, 2]) {
    const leased = await api('POST', '/api/queues/work/lease', {worker_id: `browser-${attempt}`});
    const job = leased.json.jobs[0];
    assert.equal(job.id, id);
    const recorded = await api('POST', `/api/jobs/${id}/progress`,
                               {lease_token: job.lease_token, progress: {...progress, attempt}});
    assert.equal(recorded.status, 200);
    await api('POST', `/api/jobs/${id}/fail`, {lease_token: job.lease_token,
                                               error: `<b>failed</b> ${attempt}`,
                                               retry_after: '0s'});
  }
  await page.goto(`${base}/jobs/${id}`);
  const shown = page.locator('#progress');
  await eventually(() => shown.textContent(), (t) => t.includes('"attempt": 2'), 'the progress');
  // Indented JSON (the HTTP API keeps the value, not the order of its keys).
  assert.deepEqual(JSON.parse(await shown.textContent()), {...progress, attempt: 2});
  assert.match(await shown.textContent(), /^\{\n  "/);
  assert.equal(await shown.locator('*').count(), 0, 'the progress made elements');
  const rows = page.locator('#errors-panel tbody tr');
  await eventually(() => rows.count(), (n) => n === 2, 'two rows of error history');
  for (const attempt of [1, 2]) {
    const row = page.locator(`#errors-panel tr[data-attempt="${attempt}"]`);
    assert.match(await row.innerText(), new RegExp(`browser-${attempt}`));
    assert.equal(await row.locator('pre').textContent(), `<b>failed</b> ${attempt}`);
    assert.equal(await row.locator('pre b').count(), 0, 'the error made elements');
  }
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  await page.screenshot({path: path.join(SHOTS, 'job-progress-errors.png'), fullPage: true});

  // A job without either hides both panels.
  const plain = Number((await readpast(['enqueue', 'work', 'y'])).trim());
  await page.goto(`${base}/jobs/${plain}`);
  await eventually(() => page.locator('[data-fact="state"]').count(), (n) => n === 1, 'facts');
  assert.equal(await page.locator('#progress-panel').isHidden(), true);
  assert.equal(await page.locator('#errors-panel').isHidden(), true);
});

test('expired leases show in the summary cards and the queue table', async () => {
  const tab = await browser.newPage({viewport: {width: 1366, height: 820}});
  try {
    const queue = (name, counts) => ({queue: name, available: 0, scheduled: 0, running: 0,
                                      expired: 0, succeeded: 0, dead: 0, cancelled: 0,
                                      oldest_available_age_s: 0, paused: false,
                                      succeeded_per_s: 0, dead_per_s: 0, ...counts});
    await answer(tab, '/api/queues', {queues: [
      queue('emails', {available: 12, running: 9, expired: 4}),
      queue('reports', {running: 2, expired: 3}),
      queue('thumbnails', {available: 5}),
    ]});
    await tab.goto(base + '/');
    const card = tab.locator('[data-total="expired"]');
    await card.waitFor();
    assert.equal(await card.locator('.value').innerText(), '7');
    assert.match(await card.getAttribute('class'), /\bexpired\b/);
    const expired = (q) => tab.locator(`tr[data-queue="${q}"] td[data-col="expired"]`);
    assert.equal(await expired('emails').innerText(), '4');
    assert.equal(await expired('reports').innerText(), '3');
    assert.equal(await expired('thumbnails').innerText(), '0');
    assert.equal(await expired('emails').locator('span.expired').count(), 1);
    assert.equal(await expired('thumbnails').locator('span.expired').count(), 0);
    assert.equal(await tab.locator('table#queues thead th').count(), 11);
  } finally {
    await tab.close();
  }
  // And from the real server: the field the page reads is there.
  const real = (await api('GET', '/api/queues')).json.queues;
  assert.ok(real.length > 0 && real.every((q) => typeof q.expired === 'number'));
});

test('a snapshot held for a minute shows a notice naming its holder, and none before', async () => {
  // The real server (SQLite) has no holder to show: its readers do not say who they are.
  const real = (await api('GET', '/api/storage')).json;
  assert.equal(real.oldest_snapshot, null);
  assert.ok(real.sizes.database > 0 && typeof real.sizes.wal === 'number');
  await page.goto(base + '/');
  await page.locator('[data-total="queues"]').waitFor();
  assert.equal(await page.locator('#held-snapshot').isHidden(), true);

  // PostgreSQL's answer for a session in a transaction: nothing before a minute, then a notice.
  const tab = await browser.newPage({viewport: {width: 1366, height: 820}});
  try {
    const holder = (age) => ({sizes: {live: 8192}, oldest_snapshot: {
      kind: 'session', pid: 4242, client: 'nightly-report <b>x</b>', state: 'idle in transaction',
      age_s: age, transactions: 120034}});
    let stop = await answer(tab, '/api/storage', holder(59));
    await tab.goto(base + '/');
    await tab.locator('[data-total="queues"]').waitFor();
    assert.equal(await tab.locator('#held-snapshot').isHidden(), true);
    await stop();
    stop = await answer(tab, '/api/storage', holder(372.5));
    const notice = tab.locator('#held-snapshot');
    await notice.waitFor({state: 'visible', timeout: WAIT_MS});
    const text = await notice.innerText();
    assert.match(text, /A snapshot has been held for 6m12s\./);
    assert.match(text, /session 4242 \(nightly-report <b>x<\/b>, idle in transaction\)/);
    assert.equal(await notice.locator('b').count(), 0, 'a client name became markup');
    await tab.screenshot({path: path.join(SHOTS, 'held-snapshot.png')});
    await stop();
  } finally {
    await tab.close();
  }
});

test('the workers page lists processes, their heartbeats and the jobs they run', async () => {
  const tab = await browser.newPage({viewport: {width: 1366, height: 820}});
  try {
    // The documented answer of GET /api/workers (docs/http.md).
    const stop = await answer(tab, '/api/workers', {workers: [
      {name: 'web-1/4242', host: 'web-1', pid: 4242, queues: ['emails', 'reports'], threads: 4,
       started_at: iso(3 * 3600), heartbeat_at: iso(1.2), heartbeat_age_s: 1.2,
       jobs: [{id: 7, queue: 'emails', started_at: iso(3.1), running_for_s: 3.1},
              {id: 9, queue: 'reports', started_at: iso(95), running_for_s: 95}]},
      {name: 'web-2/917', host: 'web-2', pid: 17,
       queues: ['emails'], threads: 2, started_at: iso(86400), heartbeat_at: iso(47),
       heartbeat_age_s: 47, jobs: [{id: 11, queue: 'emails', started_at: iso(60),
                                   running_for_s: 60}]},
      {name: 'batch/99', host: 'batch', pid: 99, queues: ['thumbnails'], threads: 8,
       started_at: iso(600), heartbeat_at: iso(0.4), heartbeat_age_s: 0.4, jobs: []},
    ]});
    await tab.goto(base + '/workers');
    const row = (name) => tab.locator(`tr[data-worker="${name}"]`);
    const col = (name, c) => row(name).locator(`td[data-col="${c}"]`);
    await row('web-1/4242').waitFor();
    assert.equal(await tab.locator('tr[data-worker]').count(), 3);
    assert.equal(await col('web-1/4242', 'queues').innerText(), 'emails, reports');
    assert.equal(await col('web-1/4242', 'queues').locator('a').first().getAttribute('href'),
                 '/jobs?queue=emails');
    assert.equal(await col('web-1/4242', 'threads').innerText(), '4');
    assert.equal(await col('web-1/4242', 'busy').innerText(), '2');
    assert.match(await col('web-1/4242', 'started').innerText(), /^3h(\d+s)? ago$/);
    assert.equal(await col('web-1/4242', 'heartbeat').innerText(), '1s ago');
    assert.equal(await col('batch/99', 'heartbeat').innerText(), '<1s ago');
    assert.equal(await col('batch/99', 'jobs').innerText(), 'idle');
    // Per worker, the jobs it runs, linked to their pages.
    const jobs = col('web-1/4242', 'jobs').locator('li[data-job]');
    assert.equal(await jobs.count(), 2);
    assert.equal(await jobs.nth(0).locator('a').getAttribute('href'), '/jobs/7');
    assert.equal(await jobs.nth(1).innerText(), '9 reports · running for 1m35s');
    // A heartbeat older than 30 s: the row and the age are marked stale; fresh ones are not.
    const stale = 'web-2/917';
    assert.match(await row(stale).getAttribute('class'), /\bstale\b/);
    assert.equal(await col(stale, 'heartbeat').locator('.stale-beat').count(), 1);
    assert.equal(await row('web-1/4242').getAttribute('class'), null);
    assert.equal(await col('web-1/4242', 'heartbeat').locator('.stale-beat').count(), 0);
    assert.equal(await tab.locator('#workers-summary').innerText(), '3 processes · 3 of 14 threads busy');
    assert.equal(await tab.locator('nav a.current').innerText(), 'Workers');
    await tab.screenshot({path: path.join(SHOTS, 'workers-stale.png'), fullPage: true});

    await stop();
    // Worker names and queues are text, never markup.
    const hostile = 'evil/<img src=x onerror=window.__pwned=1>';
    const stopHostile = await answer(tab, '/api/workers', {workers: [
      {name: hostile, host: 'evil', pid: 1, queues: ['<b>q</b>'], threads: 1,
       started_at: iso(5), heartbeat_at: iso(1), heartbeat_age_s: 1, jobs: []}]});
    await tab.reload();
    await row(hostile).waitFor();
    assert.equal(await col(hostile, 'name').textContent(), hostile);
    assert.equal(await col(hostile, 'name').locator('*').count(), 0);
    assert.equal(await col(hostile, 'queues').innerText(), '<b>q</b>');
    assert.equal(await tab.evaluate(() => window.__pwned), undefined);
    await stopHostile();

    await answer(tab, '/api/workers', {workers: []});
    await tab.reload();
    await tab.getByText('No workers are running.').waitFor();
  } finally {
    await tab.close();
  }
});

test('the workers page shows a real worker process and the jobs it runs', async () => {
  // Two jobs that run until the test lets them finish.
  const gate = path.join(dir, 'go');
  await readpast(['enqueue', 'crunch', 'a']);
  await readpast(['enqueue', 'crunch', 'b']);
  const worker = spawn(CLI, ['work', 'crunch', '--concurrency', '3', '--no-progress', '--exec',
                             `while [ ! -e '${gate}' ]; do sleep 0.05; done`],
                       {env, stdio: 'ignore'});
  running.add(worker);
  const stopped = new Promise((resolve) => worker.on('close', resolve));
  try {
    const reported = await eventually(
        async () => (await api('GET', '/api/workers')).json.workers
                        .find((w) => w.queues.includes('crunch')),
        (w) => w && w.jobs.length === 2, 'the worker reports two running jobs');
    assert.equal(reported.pid, worker.pid);

    await page.goto(base + '/workers');
    const row = page.locator(`tr[data-worker="${reported.name}"]`);
    const col = (c) => row.locator(`td[data-col="${c}"]`);
    await row.waitFor();
    assert.equal(await col('name').innerText(), reported.name);
    assert.match(await page.locator('#workers-summary').innerText(), /^1 process · 2 of 3 threads busy$/);
    assert.equal(await col('queues').innerText(), 'crunch');
    assert.equal(await col('threads').innerText(), '3');
    assert.equal(await col('busy').innerText(), '2');
    assert.match(await col('heartbeat').innerText(), /ago$/);
    assert.equal(await row.getAttribute('class'), null, 'a live worker drawn as stale');
    const ids = reported.jobs.map((j) => String(j.id)).sort();
    const links = col('jobs').locator('li[data-job] a');
    assert.equal(await links.count(), 2);
    const shown = (await links.allInnerTexts()).sort();
    assert.deepEqual(shown, ids);
    assert.match(await col('jobs').locator('li').first().innerText(), /crunch · running for \d+s$/);
    await page.screenshot({path: path.join(SHOTS, 'workers.png'), fullPage: true});

    // A job's link leads to its page, which names the same worker.
    await links.first().click();
    await page.waitForURL(/\/jobs\/\d+$/);
    await eventually(() => page.locator('[data-fact="worker"]').innerText(),
                     (t) => t === reported.name, 'the job\'s worker');
  } finally {
    writeFileSync(gate, '');
    worker.kill('SIGTERM');
    await stopped;
    running.delete(worker);
  }
});

test('waiting jobs have a tab and a card, and a job page shows its dependencies both ways',
     async () => {
  const first = Number((await readpast(['enqueue', 'flow-a', '{"step": 1}'])).trim());
  const second = Number((await readpast(['enqueue', 'flow-b', '{"step": 2}', '--after',
                                         String(first)])).trim());
  await page.goto(base + '/');
  await eventually(() => page.locator('[data-total="waiting"] .value').innerText(),
                   (v) => v === '1', 'the waiting card');
  await page.goto(`${base}/jobs/${second}`);
  const waitsFor = page.locator(`#waits-for [data-edge="${first}"]`);
  await eventually(() => waitsFor.innerText(), (t) => /available/.test(t), 'what it waits for');
  assert.match(await page.locator('h2').first().innerText(), /waiting/);
  await page.screenshot({path: path.join(SHOTS, 'job-dependencies.png'), fullPage: true});
  await page.goto(`${base}/jobs/${first}`);
  await eventually(() => page.locator(`#waited-for-by [data-edge="${second}"]`).innerText(),
                   (t) => /waiting/.test(t), 'what waits for it');
  await page.goto(`${base}/jobs?state=waiting`);
  await eventually(() => page.locator(`[data-job="${second}"]`).count(), (n) => n === 1,
                   'the waiting tab');
  // A group's totals on a member's page.
  const member = Number((await readpast(['enqueue', 'flow-c', 'm', '--group', 'batch-7'])).trim());
  await readpast(['enqueue', 'flow-c', 'cb', '--after-group', 'batch-7']);
  await page.goto(`${base}/jobs/${member}`);
  await eventually(() => page.locator('#group-totals').innerText(),
                   (t) => /batch-7/.test(t) && /1 available/.test(t) && /1 waiting for it/.test(t),
                   'the group totals');
  // The first job runs: the second is told and becomes available, its edge met.
  await readpast(['work', 'flow-a', '--exec', 'true', '--drain']);
  await page.goto(`${base}/jobs/${second}`);
  await eventually(() => waitsFor.innerText(), (t) => /succeeded/.test(t) && /met/.test(t),
                   'the edge met');
  await eventually(() => page.locator('h2').first().innerText(), (t) => /available/.test(t),
                   'the job available');
});

test('the queue table shows each queue\'s global limits, set by the CLI and cleared by the API',
     async () => {
  await readpast(['limit', 'throttled', '--running', '3', '--rate', '100/1s']);
  await readpast(['enqueue', 'unlimited', 'x']);
  const tab = await browser.newPage({viewport: {width: 1366, height: 820}});
  try {
    await tab.goto(base + '/');
    const limits = (q) => tab.locator(`tr[data-queue="${q}"] td[data-col="limits"]`);
    // A limited queue without jobs is listed, with its limits.
    await limits('throttled').waitFor();
    assert.equal(await limits('throttled').innerText(), 'running 3 · rate 100/1s');
    assert.equal(await limits('unlimited').innerText(), '—');
    await tab.screenshot({path: path.join(SHOTS, 'limits.png'), fullPage: true});
    const cleared = await api('DELETE', '/api/queues/throttled/limits', {});
    assert.equal(cleared.status, 200);
    assert.equal(cleared.json.running, null);
    await readpast(['enqueue', 'throttled', 'y']);  // still listed once it has a job
    await eventually(() => limits('throttled').innerText(), (t) => t === '—',
                     'the cleared limits disappear from the table');
  } finally {
    await tab.close();
  }
});
