// Preloaded (node --import) into the servers list.mjs starts: a
// connection to anything but loopback fails at once, so listing a
// server's tools never reaches its service, whatever it tries at start.
import net from 'node:net';

const connect = net.Socket.prototype.connect;
const loopback = new Set(['127.0.0.1', '::1', 'localhost', '::ffff:127.0.0.1']);

net.Socket.prototype.connect = function (...args) {
  let opts = args[0];
  if (Array.isArray(opts)) opts = opts[0];
  if (typeof opts === 'object' && opts !== null && !opts.path) {
    const host = opts.host ?? 'localhost';
    if (!loopback.has(host)) {
      const err = Object.assign(new Error(`offline: no connection to ${host}`), { code: 'ECONNREFUSED' });
      process.nextTick(() => this.destroy(err));
      return this;
    }
  } else if (typeof opts === 'number' || typeof opts === 'string' && /^\d+$/.test(opts)) {
    const host = typeof args[1] === 'string' ? args[1] : 'localhost';
    if (!loopback.has(host)) {
      const err = Object.assign(new Error(`offline: no connection to ${host}`), { code: 'ECONNREFUSED' });
      process.nextTick(() => this.destroy(err));
      return this;
    }
  }
  return connect.apply(this, args);
};
