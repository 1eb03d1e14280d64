// Client driver for rhea (Node.js): the JSON-lines command protocol of clients/PROTOCOL.md.
//
// Every call into rhea carries a comment citing rhea's own documentation or example for it (its README, the
// typings it ships, examples/), the same at the pinned releases 2.0.8 and 3.0.5. rhea hands a drain on a
// sender to the application (event `sender_draining`; README: set_drained(true) "must be called in response
// to" it): when the application has nothing (more) to send it answers, and says so in `drains`.
'use strict';
const rhea = require('rhea');
const readline = require('readline');

const version = require('rhea/package.json').version;
let conn = null, receiver = null, sender = null;
let creditWindow = 0;       // the receiver's credit_window (0: the application manages credit)
const inbox = [];
let waiter = null;          // a receive waiting for a message
const errors = [];          // errors the application was told of, not yet reported
const drains = [];          // drains rhea handed the application, not yet reported
let outbox = 0;             // messages the application still has to send
let draining = null;        // the drain handed to the application and not yet answered

function out(obj) { process.stdout.write(JSON.stringify(obj) + '\n'); }
function note(what, ctx) {
  const e = (ctx && (ctx.error || (ctx.receiver && ctx.receiver.error) || (ctx.session && ctx.session.error) ||
            (ctx.connection && ctx.connection.error))) || {};
  errors.push(`${what}: ${e.condition || ''} ${e.description || ''}`.trim());
  if (waiter) { const w = waiter; waiter = null; w.fail(errors.join('; ')); }
}

// README "sender_draining": "Raised when the remote peer requests that the sender drain its credit; sending all
// available messages within the credit limit and calling `set_drained(true)`."
function answerDrain() {
  if (draining && outbox === 0) {
    // README "set_drained(bool)": "This must be called in response to `sender_draining` event to tell peer we
    // have drained our messages or credit."
    sender.set_drained(true);
    draining.answered = 'sender.set_drained(true)';
    draining = null;
  }
}

const ops = {
  connect(a) {
    // a new connection: nothing of the last one stays (its messages, errors, drains)
    inbox.length = 0; errors.length = 0; drains.length = 0; waiter = null; outbox = 0; draining = null;
    receiver = null; sender = null; creditWindow = 0;
    return new Promise((resolve, reject) => {
      const u = new URL(a.url);
      // README "create_container()": a new container instance
      const container = rhea.create_container({ id: 'amqp-conformance-client' });
      // README "connect(options)": host, port; "reconnect ... if false, automatic reconnect will be disabled"
      conn = container.connect({ host: u.hostname, port: Number(u.port), reconnect: false });
      // README events "connection_open", "connection_error", "session_error", "session_close",
      // "receiver_error", "sender_error", "error", "disconnected"
      const mine = conn;
      const current = (f) => (...args) => { if (mine === conn) f(...args); };   // not an earlier connection's
      conn.on('connection_open', () => resolve({}));
      conn.on('connection_error', current((ctx) => note('connection_error', ctx)));
      conn.on('session_error', current((ctx) => note('session_error', ctx)));
      conn.on('session_close', current((ctx) => note('session_close', ctx)));
      conn.on('receiver_error', current((ctx) => note('receiver_error', ctx)));
      conn.on('sender_error', current((ctx) => note('sender_error', ctx)));
      conn.on('error', (e) => { if (mine === conn) note('error', { error: { description: String(e) } }); reject(e); });
      conn.on('disconnected', current((ctx) => note('disconnected', ctx)));
      // README "message event": "Raised when a message is received" (autoaccept settles it: see receiver())
      conn.on('message', (ctx) => {
        if (mine !== conn) return;                  // a message of an earlier connection
        inbox.push(String(ctx.message.body));
        if (waiter) { const w = waiter; waiter = null; w.got(); }
      });
      // README "sender_draining" (above)
      conn.on('sender_draining', () => {
        if (mine !== conn) return;
        draining = { handed: 'sender_draining', answered: null };
        drains.push(draining);
        answerDrain();
      });
    });
  },
  receiver(a) {
    return new Promise((resolve) => {
      // README "open_receiver(address|options)": source; "credit_window - ... A value of 0 can be used to turn
      // of automatic flow control and manage it directly"; "autoaccept - Whether received messages should be
      // automatically accepted. Defaults to true."
      creditWindow = a.credit || 0;
      const opts = { source: a.address, credit_window: creditWindow, autoaccept: true };
      receiver = conn.open_receiver(opts);
      // README "receiver_open": "Raised when the remote peer indicates the link is open"
      receiver.once('receiver_open', () => resolve({ api: `open_receiver({credit_window: ${a.credit || 0}})` }));
    });
  },
  async receive(a) {
    const got = [];
    const manual = creditWindow === 0;
    for (let i = 0; i < (a.count || 1); i++) {
      if (inbox.length === 0) {
        // README "add_credit(n)": "if desired the application can set the prefecth to zero and manage credit
        // itself"; typings/link.d.ts link: has_credit(): boolean
        if (manual && !receiver.has_credit()) receiver.add_credit(1);
        const ok = await new Promise((resolve, reject) => {
          const t = setTimeout(() => { waiter = null; resolve(false); }, a.timeout_ms || 1000);
          waiter = { got: () => { clearTimeout(t); resolve(true); }, fail: (e) => { clearTimeout(t); reject(new Error(e)); } };
        });
        if (!ok) {
          if (manual && receiver.has_credit()) {   // take back unused credit
            // typings/link.d.ts Receiver: drain_credit(): void; examples/drain.js drains a receiver and waits
            // for "receiver_drained" (README: "Raised when the remote peer indicates that it has drained all
            // credit")
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
    // README Receiver "close()": "Closes a receiving link (i.e. cancels the subscription)."
    receiver.close();
    return { api: 'receiver.close()' };
  },
  sender(a) {
    return new Promise((resolve) => {
      // README "open_sender(address|options)": target
      sender = conn.open_sender({ target: a.address });
      // README "sender_open": "Raised when the remote peer indicates the link is open"
      sender.once('sender_open', () => resolve({}));
    });
  },
  send(a) {
    const count = a.count || 1;
    outbox = count;
    let sent = 0;
    return new Promise((resolve) => {
      const deadline = setTimeout(() => finish({ sent, ok: false, error: 'no credit to send (timed out waiting for the sendable event)' }),
                                  (a.timeout_ms || 5000) * Math.max(1, count));
      function finish(answer) {
        clearTimeout(deadline);
        sender.removeListener('sendable', pump);   // typings/link.d.ts: link extends EventEmitter
        outbox = 0;
        answerDrain();                        // nothing more to send: a drain handed meanwhile is answered
        resolve(answer);
      }
      // README Sender "send(msg)": "it is recommended `send` is called only while the sender is `sendable()`.
      // When sender is no longer sendable, continue sending in the `sendable` event."; examples/simple_send.js:
      // while (context.sender.sendable() && sent < total) { context.sender.send(...) }
      function pump() {
        while (sent < count && sender.sendable()) {
          sender.send({ body: `m${sent}` });
          sent++;
          outbox = count - sent;
        }
        if (sent >= count) finish({ sent });
      }
      sender.on('sendable', pump);
      pump();
    });
  },
  poll() {
    return {};
  },
  close() {
    return new Promise((resolve) => {
      if (!conn) return resolve({});
      // README "connection_close": "Raised when the remote peer indicates the connection is closed."
      conn.once('connection_close', () => resolve({}));
      // README Connection "close()": "Closes a connection"
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
      if (!ops[req.op]) throw new Error(`unknown op ${req.op}`);
      const res = await ops[req.op](req);
      answer = { id: req.id, ok: true, ...res };
    } catch (e) {
      answer = { id: req.id, ok: false, error: String(e && e.message || e).slice(0, 400) };
    }
    if (errors.length) { answer.events = errors.splice(0); }
    if (drains.length) { answer.drains = drains.splice(0); }
    answer.ms = Date.now() - t0;
    out(answer);
  });
});
rl.on('close', () => process.exit(0));
