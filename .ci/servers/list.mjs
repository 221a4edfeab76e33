// Lists what every server of a set (DIR/package.json, installed in
// DIR/node_modules) offers, the way an MCP client does (initialize, then
// each list it offers, page by page, over stdio), and writes it to
// DIR/catalog.json as
// {"servers":[{"id","package","serverInfo","instructions","tools",
// "prompts","resources","resourceTemplates"}]}: what the server said of
// itself in initialize (its name and title, and its instructions where
// it gave any), and the prompts, resources and templates it offers, are
// indexed and searched by the gateway too. DIR/servers.json names each
// server's id and what it needs to start: made-up credentials in env (of
// the right shape where a server checks it; "env" at the top is every
// server's) and its arguments, with a note where a choice needs one
// (list.mjs reads no note). Nothing reaches a service: offline.mjs,
// preloaded, fails every connection off loopback, and a URL points at an
// unused loopback port. Only what the servers say of themselves and of
// what they offer is wanted. Run by .ci/run as: node list.mjs DIR
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const dir = path.resolve(process.argv[2] ?? '.');
const read = (file) => JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8'));
const pkg = read('package.json');
const table = read('servers.json');

const names = Object.keys(pkg.dependencies);
for (const name of names) {
  if (!table.servers[name]) throw new Error(`${name} has no id in servers.json`);
}

const home = fs.mkdtempSync(path.join(dir, 'home-'));
const base = { PATH: process.env.PATH, HOME: home, NODE_NO_WARNINGS: '1', DO_NOT_TRACK: '1', ...table.env };
const offline = pathToFileURL(path.join(dir, 'offline.mjs')).href;

// What a client lists, by the key of its result; a server that paginates
// is followed to maxPages pages of each.
const methods = { tools: 'tools/list', prompts: 'prompts/list', resources: 'resources/list', resourceTemplates: 'resources/templates/list' };
const maxPages = 20;

function list(name, spec) {
  const mod = path.join(dir, 'node_modules', name);
  const meta = JSON.parse(fs.readFileSync(path.join(mod, 'package.json'), 'utf8'));
  const bin = typeof meta.bin === 'string' ? meta.bin : Object.values(meta.bin)[0];
  const child = spawn(process.execPath, ['--import', offline, path.join(mod, bin), ...(spec.args ?? [])],
    { cwd: home, env: { ...base, ...spec.env }, stdio: ['pipe', 'pipe', 'pipe'] });
  let err = '';
  child.stderr.on('data', (chunk) => { err = (err + chunk).slice(-2000); });
  const why = () => (err.trim() ? `\n${err.trim().split('\n').slice(-5).join('\n')}` : '');
  const send = (m) => child.stdin.write(JSON.stringify({ jsonrpc: '2.0', ...m }) + '\n');
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { child.kill(); reject(new Error(`${name}: its lists not answered in 60s${why()}`)); }, 60000);
    let buf = '';
    let about = {};
    // Each list the server offers, followed page by page as a client does
    // (at most maxPages), by the id of the request in flight.
    const lists = {};
    const inFlight = new Map();
    let nextID = 2;
    const ask = (key, cursor) => {
      inFlight.set(nextID, key);
      send({ id: nextID++, method: methods[key], params: cursor ? { cursor } : {} });
    };
    child.stdout.on('data', (chunk) => {
      buf += chunk;
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        let m;
        try { m = JSON.parse(line); } catch { continue; }
        if (m.id === 1) {
          const { name: n, title } = m.result?.serverInfo ?? {};
          about = { serverInfo: { name: n, title }, instructions: m.result?.instructions };
          const caps = m.result?.capabilities ?? {};
          send({ method: 'notifications/initialized' });
          for (const key of ['tools', ...(caps.prompts ? ['prompts'] : []), ...(caps.resources ? ['resources', 'resourceTemplates'] : [])]) {
            lists[key] = { items: [], pages: 0 };
            ask(key);
          }
        } else if (inFlight.has(m.id)) {
          const key = inFlight.get(m.id);
          inFlight.delete(m.id);
          const l = lists[key];
          if (Array.isArray(m.result?.[key])) l.items.push(...m.result[key]);
          if (m.result?.nextCursor && ++l.pages < maxPages) ask(key, m.result.nextCursor);
          if (inFlight.size > 0) continue;
          clearTimeout(timer);
          child.kill();
          if (!lists.tools.items.length) {
            reject(new Error(`${name}: tools/list gave no tools`));
            return;
          }
          const more = {};
          for (const key of ['prompts', 'resources', 'resourceTemplates']) {
            if (lists[key]?.items.length) more[key] = lists[key].items;
          }
          resolve({ id: spec.id, package: `${name}@${meta.version}`, ...about, tools: lists.tools.items, ...more });
        }
      }
    });
    child.stdin.on('error', () => {}); // a server that died is reported by 'exit'
    child.on('exit', () => { clearTimeout(timer); reject(new Error(`${name}: exited before answering its lists${why()}`)); });
    send({ id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'mcpgate-ci', version: '1' } } });
  });
}

const started = Date.now();
let listed;
try {
  // A server that fails to list is tried once more before the whole set
  // fails: twenty servers starting at once on two cores is when a slow
  // one misses its minute.
  listed = await Promise.all(names.map((name) => list(name, table.servers[name]).catch((err) => {
    console.error(`${err.message}\n${name}: trying once more`);
    return list(name, table.servers[name]);
  })));
} finally {
  fs.rmSync(home, { recursive: true, force: true });
}
const out = path.join(dir, 'catalog.json');
fs.writeFileSync(out + '.tmp', JSON.stringify({ servers: listed }));
fs.renameSync(out + '.tmp', out);
console.log(`${path.basename(dir)}: listed ${listed.reduce((n, s) => n + s.tools.length, 0)} tools of ${listed.length} servers in ${((Date.now() - started) / 1000).toFixed(1)}s`);
process.exit(0);
