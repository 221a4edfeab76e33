// An agent host built on the official TypeScript SDK, for serve_hosts_test.go:
// it starts `mcpgate serve` (or `serve --direct`) through the SDK's
// StdioClientTransport, as Claude Code, Cursor and VS Code do, and checks
// what such a host needs, starting from a fresh session (nothing listed
// first). The upstream server is @modelcontextprotocol/server-everything,
// configured as "everything". It exits 0 when every check passed, else 1
// after printing what failed.
//
// usage: node tshost.mjs SDK_DIR MODE MCPGATE [MCPGATE_ARGS...]
//   MODE is gateway or direct.

const [sdkDir, mode, command, ...mcpgateArgs] = process.argv.slice(2);
const sdk = (p) => new URL(`file://${sdkDir}/dist/esm/${p}`).href;
const { Client } = await import(sdk('client/index.js'));
const { StdioClientTransport } = await import(sdk('client/stdio.js'));

const failures = [];
function check(ok, what, detail) {
  if (!ok) failures.push(`${what}: ${typeof detail === 'string' ? detail : JSON.stringify(detail)?.slice(0, 1500)}`);
}
const text = (res) => (res.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');

const transport = new StdioClientTransport({
  command,
  args: [...mcpgateArgs, 'serve', ...(mode === 'direct' ? ['--direct'] : [])],
  env: { ...process.env },
  stderr: 'inherit',
});
const client = new Client({ name: 'ts-sdk-host', version: '1.0.0' });
await client.connect(transport);

async function step(what, fn) {
  try {
    await fn();
  } catch (e) {
    failures.push(`${what}: ${e?.message ?? e}`);
  }
}

// Progress of a long call reaches the host's progress token, in order,
// before the result. This SDK handles a notification a turn after the
// chunk it was read in, and forgets the progress handler as the result
// arrives: the last step, which leaves the server just before the result,
// is dropped when both are read together. serve leaves a moment between
// them, which holds unless the host is too busy to read in time, so all
// but the last step are required.
async function progressOf(name, args) {
  const seen = [];
  const res = await client.callTool({ name, arguments: args }, undefined, {
    onprogress: (p) => seen.push(p),
    timeout: 20000,
  });
  return { res, seen };
}

const caps = client.getServerCapabilities() ?? {};
check(caps.tools, 'initialize advertises tools', caps);

if (mode === 'direct') {
  check(caps.prompts && caps.resources, 'initialize advertises prompts and resources', caps);
  const tool = 'mcp__everything__get-structured-content';
  await step('a call in a fresh session', async () => {
    const res = await client.callTool({ name: tool, arguments: { location: 'Chicago' } });
    check(!res.isError && res.structuredContent?.temperature === 36, 'structured content of a fresh call', res);
  });
  await step('a prompt in a fresh session', async () => {
    const res = await client.getPrompt({ name: 'everything:simple-prompt' });
    check(JSON.stringify(res.messages).includes('simple prompt without arguments'), 'simple-prompt', res);
  });
  await step('a resource in a fresh session', async () => {
    const uri = 'demo://resource/static/document/instructions.md';
    const res = await client.readResource({ uri });
    check(res.contents?.[0]?.mimeType === 'text/markdown' && res.contents[0].uri === uri, 'read keeps the MIME type', res);
  });
  await step('a resource template', async () => {
    const { resourceTemplates } = await client.listResourceTemplates();
    check(resourceTemplates.some((t) => t.uriTemplate === 'demo://resource/dynamic/text/{resourceId}'), 'templates listed', resourceTemplates);
    const res = await client.readResource({ uri: 'demo://resource/dynamic/text/7' });
    check(res.contents?.[0]?.text?.includes('Resource 7'), 'read through a template', res);
  });
  await step('list, then a call validated against the output schema', async () => {
    const { tools } = await client.listTools();
    const def = tools.find((t) => t.name === tool);
    check(def?.outputSchema, 'the output schema is listed', def);
    const res = await client.callTool({ name: tool, arguments: { location: 'Los Angeles' } });
    check(res.structuredContent?.conditions === 'Sunny / Clear', 'validated structured content', res);
  });
  await step('progress', async () => {
    const { res, seen } = await progressOf('mcp__everything__trigger-long-running-operation', { duration: 0.6, steps: 3 });
    check(!res.isError && seen.length >= 2 && seen.every((p, i) => p.progress === i + 1 && p.total === 3), 'progress notifications', { res, seen });
  });
} else {
  await step('the gateway', async () => {
    const { tools } = await client.listTools();
    check(tools.length === 1 && tools[0].name === 'mcp', 'one tool', tools);
    const call = (args) => client.callTool({ name: 'mcp', arguments: args });
    let res = await call({ action: 'search', query: 'structured content with an output schema' });
    check(text(res).includes('everything/get-structured-content'), 'search', text(res));
    res = await call({ action: 'call', server: 'everything', tool: 'get-structured-content', arguments: { location: 'New York' } });
    check(!res.isError && text(res).includes('"temperature":33'), 'call', text(res));
    res = await call({ action: 'list', server: 'everything', limit: 200 });
    for (const want of ['everything prompt simple-prompt', 'everything resource demo://resource/static/document/', 'everything template demo://resource/dynamic/text/{resourceId}']) {
      check(text(res).includes(want), `list shows ${want}`, text(res));
    }
    res = await call({ action: 'prompt', server: 'everything', prompt: 'simple-prompt' });
    check(text(res).includes('simple prompt without arguments'), 'prompt', text(res));
    res = await call({ action: 'read', server: 'everything', uri: 'demo://resource/dynamic/text/3' });
    check(text(res).includes('Resource 3'), 'read through a template', text(res));
  });
  await step('progress', async () => {
    const { res, seen } = await progressOf('mcp', { action: 'call', server: 'everything', tool: 'trigger-long-running-operation', arguments: { duration: 0.6, steps: 3 } });
    check(!res.isError && seen.length >= 2 && seen.every((p, i) => p.progress === i + 1), 'progress notifications', { res, seen });
  });
}

await client.close();
if (failures.length > 0) {
  console.error(`${failures.length} check(s) failed:\n- ${failures.join('\n- ')}`);
  process.exit(1);
}
console.log('ok');
