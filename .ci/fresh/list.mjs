// Lists the tools of every server of package.json the way an MCP client
// does (initialize, then tools/list, over stdio) and writes them to
// DIR/catalog.json as {"servers":[{"id","package","tools"}]}. The servers
// get made-up credentials and no network (offline.mjs): only what they
// say of their tools is wanted. Run by .ci/run as: node list.mjs DIR
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const dir = path.resolve(process.argv[2] ?? '.');
const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));

// The id each server is known by in testdata/fresh-needs.jsonl, and what
// it needs to start.
const servers = {
  '@browserbasehq/mcp-server-browserbase': { id: 'browserbase' },
  '@circleci/mcp-server-circleci': { id: 'circleci' },
  '@elastic/mcp-server-elasticsearch': { id: 'elasticsearch' },
  '@hubspot/mcp-server': { id: 'hubspot' },
  '@mapbox/mcp-server': { id: 'mapbox' },
  '@modelcontextprotocol/server-brave-search': { id: 'brave_search' },
  '@modelcontextprotocol/server-gitlab': { id: 'gitlab' },
  '@modelcontextprotocol/server-google-maps': { id: 'google_maps' },
  '@modelcontextprotocol/server-postgres': { id: 'postgres', args: ['postgresql://postgres@127.0.0.1:9/test'] },
  '@modelcontextprotocol/server-redis': { id: 'redis', args: ['redis://127.0.0.1:6379'] }, // connects at start: the machine's own
  '@openbnb/mcp-server-airbnb': { id: 'airbnb' },
  '@pinecone-database/mcp': { id: 'pinecone' },
  '@shopify/dev-mcp': { id: 'shopify_dev' },
  '@upstash/context7-mcp': { id: 'context7' },
  '@wonderwhy-er/desktop-commander': { id: 'desktop_commander' },
  'airtable-mcp-server': { id: 'airtable' },
  'exa-mcp-server': { id: 'exa' },
  'firecrawl-mcp': { id: 'firecrawl' },
  'mongodb-mcp-server': { id: 'mongodb' },
  'tavily-mcp': { id: 'tavily' },
};

const env = {
  PATH: process.env.PATH, HOME: fs.mkdtempSync(path.join(dir, 'home-')), NODE_NO_WARNINGS: '1',
  GITLAB_PERSONAL_ACCESS_TOKEN: 'x', GOOGLE_MAPS_API_KEY: 'x', BRAVE_API_KEY: 'x', FIRECRAWL_API_KEY: 'fc-x',
  PRIVATE_APP_ACCESS_TOKEN: 'x', HUBSPOT_ACCESS_TOKEN: 'x', CIRCLECI_TOKEN: 'x', AIRTABLE_API_KEY: 'patx.x',
  EXA_API_KEY: 'x', TAVILY_API_KEY: 'tvly-x', MAPBOX_ACCESS_TOKEN: 'pk.x', PINECONE_API_KEY: 'x',
  BROWSERBASE_API_KEY: 'x', BROWSERBASE_PROJECT_ID: 'x', ES_URL: 'http://127.0.0.1:9', ES_API_KEY: 'x',
  MDB_MCP_CONNECTION_STRING: 'mongodb://127.0.0.1:9', MDB_MCP_TELEMETRY: 'disabled', DO_NOT_TRACK: '1',
};
const offline = pathToFileURL(path.join(dir, 'offline.mjs')).href;

function list(name, spec) {
  const mod = path.join(dir, 'node_modules', name);
  const meta = JSON.parse(fs.readFileSync(path.join(mod, 'package.json'), 'utf8'));
  const bin = typeof meta.bin === 'string' ? meta.bin : Object.values(meta.bin)[0];
  const child = spawn(process.execPath, ['--import', offline, path.join(mod, bin), ...(spec.args ?? [])],
    { cwd: env.HOME, env, stdio: ['pipe', 'pipe', 'ignore'] });
  const send = (m) => child.stdin.write(JSON.stringify({ jsonrpc: '2.0', ...m }) + '\n');
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { child.kill(); reject(new Error(`${name}: no tools/list answer in 60s`)); }, 60000);
    let buf = '';
    child.stdout.on('data', (chunk) => {
      buf += chunk;
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        let m;
        try { m = JSON.parse(line); } catch { continue; }
        if (m.id === 1) {
          send({ method: 'notifications/initialized' });
          send({ id: 2, method: 'tools/list', params: {} });
        } else if (m.id === 2) {
          clearTimeout(timer);
          child.kill();
          if (!m.result?.tools?.length) reject(new Error(`${name}: tools/list gave no tools`));
          else resolve({ id: spec.id, package: `${name}@${meta.version}`, tools: m.result.tools });
        }
      }
    });
    child.on('exit', () => { clearTimeout(timer); reject(new Error(`${name}: exited before listing its tools`)); });
    send({ id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'mcpgate-ci', version: '1' } } });
  });
}

const names = Object.keys(pkg.dependencies);
for (const name of names) {
  if (!servers[name]) throw new Error(`${name} has no id in list.mjs`);
}
const listed = await Promise.all(names.map((name) => list(name, servers[name])));
fs.rmSync(env.HOME, { recursive: true, force: true });
const out = path.join(dir, 'catalog.json');
fs.writeFileSync(out + '.tmp', JSON.stringify({ servers: listed }));
fs.renameSync(out + '.tmp', out);
console.log(`listed ${listed.reduce((n, s) => n + s.tools.length, 0)} tools of ${listed.length} servers`);
process.exit(0);
