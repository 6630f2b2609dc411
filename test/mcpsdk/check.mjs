// Drives `agentctl mcp --yes` through the official MCP TypeScript SDK, the
// client models use, for test/mcp_sdk_test.go. Usage:
//
//   node check.mjs MODE
//
// with AGENTCTL (the binary), SESSION (a running sh session) and the
// XDG_* variables of the test's home in the environment. MODE is one of
// cancel, progress, schemas, computer. It prints one line per check and
// exits 1 on the first failure. Nothing here reaches a network.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import Ajv from 'ajv';
import { execFileSync } from 'node:child_process';
import { readFileSync, existsSync } from 'node:fs';

const mode = process.argv[2];
const agentctl = process.env.AGENTCTL;
const session = process.env.SESSION;

function fail(msg) {
  console.error('FAIL: ' + msg);
  process.exit(1);
}

function ok(msg) {
  console.log('ok: ' + msg);
}

// awaitCond polls cond until it holds or the deadline passes.
async function awaitCond(what, ms, cond) {
  const end = Date.now() + ms;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > end) fail('timed out waiting for ' + (typeof what === 'function' ? what() : what));
    await new Promise((r) => setTimeout(r, 50));
  }
}

function text(res) {
  return (res.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('');
}

const transport = new StdioClientTransport({
  command: agentctl,
  args: ['mcp', '--yes'],
  env: process.env,
  stderr: 'inherit',
});
const client = new Client({ name: 'agentd-sdk-test', version: '1' });
await client.connect(transport);
const { tools } = await client.listTools(); // the client now checks structuredContent against each outputSchema

async function call(name, args, opts) {
  return client.callTool({ name, arguments: args }, undefined, opts);
}

async function logsText() {
  const r = await call('logs', { name: session, limit: 10000 });
  return JSON.stringify(r.structuredContent);
}

// okCall calls a tool that must succeed.
async function okCall(name, args) {
  const r = await call(name, args);
  if (r.isError || !r.structuredContent || r.structuredContent.ok !== true) fail(`${name} ${JSON.stringify(args)}: ${JSON.stringify(r).slice(0, 800)}`);
  return r;
}

async function cancel() {
  const ac = new AbortController();
  const pending = call('ask', { name: session, text: 'import time; time.sleep(30)' }, { signal: ac.signal, timeout: 120000 });
  await awaitCond('the ask to reach the session', 20000, async () => (await logsText()).includes('time.sleep(30)'));
  ac.abort('the test cancels');
  try {
    await pending;
    fail('the cancelled ask resolved');
  } catch (e) {
    ok('the cancelled ask rejected: ' + String(e).slice(0, 80));
  }
  await awaitCond('canceled in the session log', 20000, async () => (await logsText()).includes('"canceled"'));
  ok('the session log records canceled');
  // The program itself goes on (a cancel leaves it alone): interrupt it,
  // then the next ask must not wait for the cancelled ask's lock, which
  // would hold 30 s and answer lock_timeout.
  await okCall('send', { name: session, keys: ['ctrl+c'] });
  // Only once Python took the interrupt: an ask typed before it is thrown away with it.
  await awaitCond('KeyboardInterrupt in the session log', 20000, async () => (await logsText()).includes('KeyboardInterrupt'));
  const r = await okCall('ask', { name: session, text: "print('after', 6*7)", until: 'after 42', lock_timeout_ms: 10000, timeout_ms: 20000 });
  if (!text(r).includes('after 42')) fail('the next ask answered ' + text(r));
  ok('the next ask answered at once: ' + text(r).trim().slice(0, 40));
}

async function progress() {
  const seen = [];
  const r = await call('ask', { name: session, text: 'sleep 5; echo slept-5', until: 'slept-5', timeout_ms: 60000 },
    { onprogress: (p) => seen.push(p), timeout: 120000 });
  if (r.isError || !text(r).includes('slept-5')) fail('the 5 s ask: ' + JSON.stringify(r).slice(0, 500));
  if (seen.length < 2) fail(`progress notifications during a 5 s ask: ${seen.length}, want at least 2: ${JSON.stringify(seen)}`);
  for (let i = 1; i < seen.length; i++) {
    if (!(seen[i].progress > seen[i - 1].progress)) fail('progress does not increase: ' + JSON.stringify(seen));
  }
  if (!seen.some((p) => (p.message || '').includes('its screen ends'))) fail('no progress message says what the session shows: ' + JSON.stringify(seen));
  ok(`${seen.length} progress notifications, the last: ${seen[seen.length - 1].message}`);
  const w = [];
  // The text waited for is not in the command line (its echo would end
  // the wait at once).
  await okCall('send', { name: session, text: 'sleep 2; echo woke-$((1+1))\n' });
  const wr = await call('wait', { name: session, text: 'woke-2', timeout_ms: 30000 }, { onprogress: (p) => w.push(p), timeout: 60000 });
  if (wr.isError) fail('wait: ' + JSON.stringify(wr).slice(0, 400));
  if (w.length < 1) fail('no progress notification during a wait');
  ok(`wait ended (${wr.structuredContent.reason}) after ${w.length} progress notifications`);
}

async function schemas() {
  const ajv = new Ajv({ strict: false, allErrors: true });
  const validators = {};
  for (const t of tools) {
    if (!t.outputSchema) fail(`${t.name} has no outputSchema`);
    validators[t.name] = ajv.compile(t.outputSchema);
    const a = t.annotations || {};
    for (const k of ['readOnlyHint', 'destructiveHint', 'openWorldHint']) {
      if (typeof a[k] !== 'boolean' && !(k === 'readOnlyHint' && a[k] === undefined)) fail(`${t.name}: ${k} is ${a[k]}, want a boolean`);
    }
  }
  const want = { spawn: [false, false], ask: [false, true], act: [false, true], rm: [false, true], restart: [false, true], list: [true, false], wait: [true, false],
    desktops: [true, false], desktop_new: [false, false], desktop_rm: [false, true] };
  for (const [name, [ro, destr]] of Object.entries(want)) {
    const a = tools.find((t) => t.name === name).annotations;
    if (!!a.readOnlyHint !== ro || a.destructiveHint !== destr) fail(`${name} annotations ${JSON.stringify(a)}`);
  }
  ok('every tool has an outputSchema and its hints');
  const calls = [
    ['list', {}], ['status', { name: session }], ['snapshot', { name: session }], ['logs', { name: session, limit: 3 }],
    ['wait', { name: session, idle_ms: 50, timeout_ms: 10000 }], ['screen', {}], ['screenshot', {}],
    ['zoom', { x: 0, y: 0, width: 100, height: 50 }], ['cursor_position', {}], ['channels', {}],
    ['send', { name: session, text: 'echo hi\n' }], ['ask', { name: session, text: 'echo asked', until: 'asked', timeout_ms: 20000 }],
    ['resize', { name: session, cols: 90, rows: 30 }], ['spawn', { name: 'extra', argv: ['sh'] }],
    ['restart', { name: 'extra', force: true }], ['stop', { name: 'extra' }], ['rm', { name: 'extra' }],
    ['act', { actions: [{ kind: 'move', x: 5, y: 5 }] }],
    ['act', { actions: [{ kind: 'hold_key', key: 'shift', duration: 0.2 }, { kind: 'click', x: 5, y: 5, modifiers: ['shift'] }], observe: false }],
    // Refusals are tool errors whose structured content fits too.
    ['status', { name: 'nobody' }], ['logs', { name: session, limit: 0 }], ['spawn', { name: 'x', argv: ['sh'], cols: 0 }],
    ['push', { session: 'nobody', message: 'hi' }], ['act', { actions: [{ kind: 'move', x: 1, y: 1, modifiers: ['ctrl'] }] }],
    ['act', { actions: [{ kind: 'hold_key', key: 'hyperdrive', duration: 1 }] }], ['act', { actions: [{ kind: 'hold_key', key: 'a', duration: 31 }] }],
    ['act', { actions: [{ kind: 'left_click_drag', x: 1, y: 1, to_x: 99999, to_y: 1 }] }],
    // Desktops (the daemon runs with desktops = true): made, used, removed,
    // and then a desktop that does not exist.
    ['desktop_new', { name: 'sd1', size: '640x480', wm: 'none' }], ['desktops', {}], ['screen', { desktop: 'sd1' }],
    ['screenshot', { desktop: 'sd1' }], ['act', { desktop: 'sd1', actions: [{ kind: 'move', x: 5, y: 5 }] }],
    ['zoom', { desktop: 'sd1', x: 0, y: 0, width: 64, height: 48 }], ['cursor_position', { desktop: 'sd1' }],
    ['desktop_new', { name: 'sd1' }], ['desktop_rm', { name: 'sd1' }], ['screenshot', { desktop: 'sd1' }],
    ['act', { desktop: 'sd1', actions: [{ kind: 'key', key: 'a' }] }], ['desktop_rm', { name: 'sd1' }],
  ];
  const called = new Set();
  for (const [name, args] of calls) {
    const r = await call(name, args); // the SDK itself rejects content that does not fit
    if (!validators[name](r.structuredContent)) fail(`${name} ${JSON.stringify(args)}: structuredContent does not fit its outputSchema: ${ajv.errorsText(validators[name].errors)}\n${JSON.stringify(r.structuredContent).slice(0, 600)}`);
    if (!!r.isError !== (r.structuredContent.ok === false)) fail(`${name}: isError ${r.isError} with ok ${r.structuredContent.ok}`);
    // restart's success, not only its refusal, must fit its outputSchema.
    if (name === 'restart' && r.isError) fail(`restart ${JSON.stringify(args)}: ${text(r)}`);
    called.add(name);
  }
  for (const t of tools) if (!called.has(t.name)) fail(`${t.name} was not called`);
  ok(`${calls.length} calls of ${tools.length} tools fit their outputSchema (ajv)`);
}

// xdo runs xdotool on the test's display.
function xdo(...args) {
  return execFileSync('xdotool', args, { encoding: 'utf8' }).trim();
}

function mouse() {
  const m = /x:(\d+) y:(\d+)/.exec(xdo('getmouselocation'));
  return [Number(m[1]), Number(m[2])];
}

async function computer() {
  // The screen is 1024x768: the image is the screen, scale 1.
  const shot = await okCall('screenshot', {});
  if (shot.structuredContent.scale !== 1) fail('scale ' + shot.structuredContent.scale);
  // cursor_position in the image's pixels, against xdotool.
  await okCall('act', { actions: [{ kind: 'move', x: 300, y: 200 }], observe: false });
  const [mx, my] = mouse();
  const cp = await okCall('cursor_position', {});
  if (mx !== 300 || my !== 200 || cp.structuredContent.image.x !== 300 || cp.structuredContent.image.y !== 200) {
    fail(`after move 300,200: xdotool ${mx},${my}, cursor_position ${JSON.stringify(cp.structuredContent)}`);
  }
  ok('move and cursor_position agree with xdotool getmouselocation');

  // triple_click on the xterm that records mouse events: three presses of
  // button 1 at one cell.
  const events = process.env.MOUSE_LOG;
  const [tx, ty] = process.env.MOUSE_AT.split(',').map(Number);
  await okCall('act', { actions: [{ kind: 'triple_click', x: tx, y: ty }], observe: false });
  const pressCount = () => readFileSync(events, 'utf8').split('\n').filter((l) => l.startsWith('press 0')).length;
  await awaitCond(() => `three presses in the mouse log (it has ${JSON.stringify(readFileSync(events, 'utf8'))}; clicked ${tx},${ty}; the window: ${xdo('search', '--name', '^mouselog$', 'getwindowgeometry')}; pointer ${mouse()})`, 10000, async () => pressCount() >= 3);
  const presses = readFileSync(events, 'utf8').split('\n').filter((l) => l.startsWith('press'));
  if (presses.length !== 3 || new Set(presses).size !== 1) fail('triple_click: the xterm saw ' + JSON.stringify(presses));
  ok('triple_click: three presses at one cell: ' + presses[0]);

  // type into the xterm running cat: the text arrives.
  const typed = process.env.TYPED_FILE;
  const [kx, ky] = process.env.TYPE_AT.split(',').map(Number);
  // Focus follows the click once the window manager has seen it: wait for
  // it, as a person looks before typing.
  await okCall('act', { actions: [{ kind: 'click', x: kx, y: ky }], observe: false });
  await awaitCond('the xterm to take focus', 10000, async () => xdo('getwindowfocus') === process.env.TYPE_WINDOW);
  await okCall('act', { actions: [{ kind: 'type', text: 'typed by act\n' }], observe: false });
  await awaitCond('the typed line in the file', 10000, async () => existsSync(typed) && readFileSync(typed, 'utf8').includes('typed by act'));
  ok('type: the text is in the xterm');

  // left_click_drag inside the mouse-reporting xterm: pressed at one
  // cell, released at another, 10 columns right and 3 rows down (xterm's
  // cells here are 6x13 pixels: fixed font).
  const before = readFileSync(events, 'utf8').length;
  await okCall('act', { actions: [{ kind: 'left_click_drag', x: tx - 30, y: ty - 20, to_x: tx + 30, to_y: ty + 19 }], observe: false });
  const dragLog = () => readFileSync(events, 'utf8').slice(before).split('\n').filter((l) => l);
  await awaitCond(() => 'a press and a release in the mouse log, got ' + JSON.stringify(dragLog()), 10000, async () => dragLog().some((l) => l.startsWith('release')));
  const [p0, r0] = [dragLog().find((l) => l.startsWith('press')), dragLog().find((l) => l.startsWith('release'))];
  const cell = (l) => l.split(' ').slice(2).map(Number);
  const [pc, pr] = cell(p0);
  const [rc, rr] = cell(r0);
  if (rc - pc !== 10 || rr - pr !== 3) fail(`left_click_drag in the xterm: ${p0} then ${r0}, want the release 10 columns right and 3 rows down`);
  ok(`left_click_drag: ${p0}, ${r0}`);

  // left_click_drag on the window's title bar moves the window. openbox
  // (3.6) misses a title-bar drag now and then, xdotool's as well as ours
  // (measured: 3 of 16 xdotool drags after a click elsewhere), so a drag
  // that moved nothing is tried again, twice at most; one that moved must
  // have moved by exactly the drag.
  const win = process.env.DRAG_WINDOW;
  const geo = () => {
    const g = xdo('getwindowgeometry', win);
    const m = /Position: (\d+),(\d+)/.exec(g);
    return [Number(m[1]), Number(m[2])];
  };
  const [wx, wy] = geo();
  const [gx, gy] = process.env.DRAG_FROM.split(',').map(Number);
  for (let attempt = 1; ; attempt++) {
    await okCall('act', { actions: [{ kind: 'left_click_drag', x: gx, y: gy, to_x: gx + 150, to_y: gy + 100 }], observe: false });
    // The move is done when the act answers (the release was sent), but
    // the window manager applies it after: poll a moment for it.
    let moved = false;
    const end = Date.now() + 3000;
    while (Date.now() < end && !moved) {
      const [nx, ny] = geo();
      moved = nx !== wx || ny !== wy;
      if (!moved) await new Promise((r) => setTimeout(r, 50));
    }
    if (moved) break;
    if (attempt === 3) fail(`three left_click_drags on the title bar moved nothing (the window is at ${geo()})`);
  }
  await awaitCond(() => `the window to move from ${wx},${wy} by 150,100 (it is at ${geo()})`, 10000, async () => {
    const [nx, ny] = geo();
    return nx === wx + 150 && ny === wy + 100;
  });
  ok(`left_click_drag moved the window from ${wx},${wy} to ${geo()}`);

  // zoom: a part of the image at the screen's resolution, act's space kept.
  const z = await okCall('zoom', { x: 100, y: 100, width: 200, height: 100, format: 'png' });
  const zi = z.content.find((c) => c.type === 'image');
  if (!zi || z.structuredContent.width !== 200 || z.structuredContent.height !== 100) fail('zoom: ' + JSON.stringify(z.structuredContent));
  await okCall('act', { actions: [{ kind: 'move', x: 1000, y: 700 }], observe: false });
  const [ax, ay] = mouse();
  if (ax !== 1000 || ay !== 700) fail(`after zoom, act's move 1000,700 went to ${ax},${ay}: zoom changed act's space`);
  ok('zoom returned 200x100 and kept act\'s space');

  // Bad input: answered, the server up.
  const bad = await call('act', { actions: [{ kind: 'left_click_drag', x: 10, y: 10, to_x: 5000, to_y: 10 }] });
  if (!bad.isError || !text(bad).includes('outside the last screenshot')) fail('a drag out of the image: ' + text(bad));
  const unknown = await call('act', { actions: [{ kind: 'hold_key', key: 'hyperdrive', duration: 1 }] });
  if (!unknown.isError || !text(unknown).includes('action 1 (hold_key): unknown key "hyperdrive"')) fail('hold_key with an unknown key: ' + text(unknown));
  const long = await call('act', { actions: [{ kind: 'hold_key', key: 'a', duration: 31 }] });
  if (!long.isError || !text(long).includes('time budget of 30 s')) fail('hold_key over the budget: ' + text(long));
  await okCall('screen', {});
  ok('a drag out of the image, hold_key with an unknown key or over the budget are tool errors; the server answers');
}

const modes = { cancel, progress, schemas, computer };
if (!modes[mode]) fail('unknown mode ' + mode);
await modes[mode]();
await client.close();
console.log('done: ' + mode);
