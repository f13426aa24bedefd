// What the browser tests share: running the real `readpast` command, starting `readpast
// serve` on a free port, calling its JSON API, and waiting for a condition.
import assert from 'node:assert/strict';
import {spawn} from 'node:child_process';

export const WAIT_MS = 15000;

// Runs `cli ARGS` with `env` to its end; resolves with its stdout, rejects on a non-zero
// exit. Without `input` its stdin is /dev/null: a pipe that the command exits without
// reading could fail the write (EPIPE). `running` holds the process while it runs, so that a
// test failing half-way can kill it.
export function runReadpast(cli, env, running, args, {input} = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cli, args,
                        {env, stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe']});
    running.add(child);
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => {
      running.delete(child);
      if (code === 0) resolve(out);
      else reject(new Error(`readpast ${args.join(' ')} exited ${code}: ${err}`));
    });
    if (input !== undefined) {
      child.stdin.on('error', reject);
      child.stdin.end(input);
    }
  });
}

// Starts `cli serve` on a free port; resolves with {child, url} once it says it listens.
export function startServe(cli, env, running) {
  return new Promise((resolve, reject) => {
    const child = spawn(cli, ['serve', '--listen', '127.0.0.1:0', '--sample-interval', '500ms'],
                        {env, stdio: ['ignore', 'ignore', 'pipe']});
    running.add(child);
    child.on('close', () => running.delete(child));
    let err = '';
    const timer = setTimeout(() => reject(new Error('serve did not start: ' + err)), WAIT_MS);
    child.stderr.on('data', (d) => {
      err += d;
      const match = err.match(/serving on (http:\/\/127\.0\.0\.1:\d+)/);
      if (match) {
        clearTimeout(timer);
        resolve({child, url: match[1]});
      }
    });
    child.on('close', (code) => reject(new Error(`serve exited ${code}: ${err}`)));
  });
}

// One JSON call to the server at `base`: {status, json}.
export async function callApi(base, method, urlPath, body) {
  const response = await fetch(base + urlPath, {
    method,
    headers: {'Content-Type': 'application/json'},
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return {status: response.status, json: await response.json()};
}

// Waits until `read()` returns a value that satisfies `check`; fails with the last value.
export async function eventually(read, check, what) {
  const deadline = Date.now() + WAIT_MS;
  let value;
  while (Date.now() < deadline) {
    value = await read();
    if (check(value)) return value;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`${what}: still ${JSON.stringify(value)} after ${WAIT_MS} ms`);
}
