// Client driver for rhea (Node.js): the JSON-lines command protocol of clients/PROTOCOL.md.
'use strict';
const rhea = require('rhea');
const readline = require('readline');

const version = require('rhea/package.json').version;
let conn = null, receiver = null, sender = null;
const inbox = [];
let waiter = null;          // a receive waiting for a message
const errors = [];          // errors the application was told of, not yet reported

function out(obj) { process.stdout.write(JSON.stringify(obj) + '\n'); }
function note(what, ctx) {
  const e = (ctx && (ctx.error || (ctx.receiver && ctx.receiver.error) || (ctx.session && ctx.session.error) ||
            (ctx.connection && ctx.connection.error))) || {};
  errors.push(`${what}: ${e.condition || ''} ${e.description || ''}`.trim());
  if (waiter) { const w = waiter; waiter = null; w.fail(errors.join('; ')); }
}

const ops = {
  connect(a) {
    return new Promise((resolve, reject) => {
      const u = new URL(a.url);
      const container = rhea.create_container({ id: 'amqp-conformance-client' });
      conn = container.connect({ host: u.hostname, port: Number(u.port), reconnect: false,
                                 idle_time_out: 0 });
      conn.on('connection_open', () => resolve({}));
      conn.on('connection_error', (ctx) => note('connection_error', ctx));
      conn.on('session_error', (ctx) => note('session_error', ctx));
      conn.on('session_close', (ctx) => note('session_close', ctx));
      conn.on('receiver_error', (ctx) => note('receiver_error', ctx));
      conn.on('sender_error', (ctx) => note('sender_error', ctx));
      conn.on('error', (e) => { note('error', { error: { description: String(e) } }); reject(e); });
      conn.on('disconnected', (ctx) => note('disconnected', ctx));
      conn.on('message', (ctx) => {
        inbox.push(String(ctx.message.body));
        if (waiter) { const w = waiter; waiter = null; w.got(); }
      });
    });
  },
  receiver(a) {
    return new Promise((resolve) => {
      const opts = { source: a.address, credit_window: a.credit || 0, autoaccept: true };
      receiver = conn.open_receiver(opts);
      receiver.once('receiver_open', () => resolve({ api: `open_receiver({credit_window: ${a.credit || 0}})` }));
    });
  },
  async receive(a) {
    const got = [];
    for (let i = 0; i < (a.count || 1); i++) {
      if (inbox.length === 0) {
        if (!receiver.get_option('credit_window', 1000) && receiver.credit === 0) receiver.add_credit(1);
        const ok = await new Promise((resolve, reject) => {
          const t = setTimeout(() => { waiter = null; resolve(false); }, a.timeout_ms || 1000);
          waiter = { got: () => { clearTimeout(t); resolve(true); }, fail: (e) => { clearTimeout(t); reject(new Error(e)); } };
        });
        if (!ok) {
          if (!receiver.get_option('credit_window', 1000) && receiver.credit > 0) {   // take back unused credit
            receiver.drain_credit();
            await new Promise((resolve) => {
              const t = setTimeout(resolve, a.timeout_ms || 1000);
              receiver.once('receiver_drained', () => { clearTimeout(t); resolve(); });
            });
            while (inbox.length) got.push(inbox.shift());
          }
          return { messages: got, timeout: true };
        }
      }
      got.push(inbox.shift());
    }
    return { messages: got, timeout: false };
  },
  stop() {
    receiver.close();
    return { api: 'receiver.close()' };
  },
  sender(a) {
    return new Promise((resolve) => {
      sender = conn.open_sender({ target: a.address });
      sender.once('sender_open', () => resolve({}));
    });
  },
  async send(a) {
    let sent = 0;
    const deadline = Date.now() + (a.timeout_ms || 5000) * Math.max(1, a.count || 1);
    for (let i = 0; i < (a.count || 1); i++) {
      while (!sender.sendable()) {
        if (Date.now() > deadline) return { sent, ok: false, error: 'no credit to send (timed out waiting for sendable)' };
        await new Promise((r) => setTimeout(r, 20));   // polling the library's sendable(), bounded by deadline
      }
      sender.send({ body: `m${i}` });
      sent++;
    }
    return { sent };
  },
  close() {
    return new Promise((resolve) => {
      if (!conn) return resolve({});
      conn.once('connection_close', () => resolve({}));
      conn.close();
      setTimeout(() => resolve({}), 2000);
    });
  },
};

out({ id: 0, ok: true, ready: true, library: 'rhea', version });
const rl = readline.createInterface({ input: process.stdin });
let chain = Promise.resolve();
rl.on('line', (line) => {
  if (!line.trim()) return;
  const req = JSON.parse(line);
  if (req.op === 'exit') { process.exit(0); }
  chain = chain.then(async () => {
    const t0 = Date.now();
    let answer;
    try {
      const res = await ops[req.op](req);
      answer = { id: req.id, ok: true, ...res };
    } catch (e) {
      answer = { id: req.id, ok: false, error: String(e && e.message || e).slice(0, 400) };
    }
    if (errors.length) { answer.events = errors.splice(0); }
    answer.ms = Date.now() - t0;
    out(answer);
  });
});
rl.on('close', () => process.exit(0));
