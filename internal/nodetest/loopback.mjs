// Preloaded (node --import) into Node programs the tests start, so every
// server they open listens on 127.0.0.1 only, on a port the kernel picks,
// whatever the program asks for. The address is written, once, to the file
// named by MCPGATE_LISTEN_FILE as "127.0.0.1:PORT".
import net from 'node:net';
import fs from 'node:fs';

const listen = net.Server.prototype.listen;
let reported = false;

net.Server.prototype.listen = function (...args) {
  const cb = args.find((a) => typeof a === 'function');
  const server = this;
  server.once('listening', () => {
    const file = process.env.MCPGATE_LISTEN_FILE;
    const addr = server.address();
    if (file && !reported && addr && typeof addr === 'object') {
      reported = true;
      fs.writeFileSync(file + '.tmp', `127.0.0.1:${addr.port}`);
      fs.renameSync(file + '.tmp', file);
    }
  });
  return cb ? listen.call(server, 0, '127.0.0.1', cb) : listen.call(server, 0, '127.0.0.1');
};
