// Preloaded (node --import) into the servers list.mjs starts: a
// connection to anything but loopback fails at once, so listing a
// server's tools never reaches its service, whatever it tries at start.
import net from 'node:net';

const connect = net.Socket.prototype.connect;
const loopback = new Set(['127.0.0.1', '::1', 'localhost', '::ffff:127.0.0.1']);

// host is where connect's arguments point: a host of options or after a
// port, localhost by default; null for a local socket's path.
function host(args) {
  let first = Array.isArray(args[0]) ? args[0][0] : args[0];
  if (typeof first === 'object' && first !== null) return first.path ? null : (first.host ?? 'localhost');
  if (typeof first === 'string' && !/^\d+$/.test(first)) return null;
  return typeof args[1] === 'string' ? args[1] : 'localhost';
}

net.Socket.prototype.connect = function (...args) {
  const to = host(args);
  if (to !== null && !loopback.has(to)) {
    const err = Object.assign(new Error(`offline: no connection to ${to}`), { code: 'ECONNREFUSED' });
    process.nextTick(() => this.destroy(err));
    return this;
  }
  return connect.apply(this, args);
};
