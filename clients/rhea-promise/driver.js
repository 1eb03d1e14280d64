// Client driver for rhea-promise (the promise layer over rhea that @azure/core-amqp and the Azure JS SDKs use):
// the JSON-lines command protocol of clients/PROTOCOL.md. Each call cites rhea-promise's README / lib/*.ts at the
// pinned release, or the Azure SDK code (azure-sdk-for-js sdk/servicebus/service-bus/src/core/*.ts,
// sdk/eventhub/event-hubs/src/*.ts) that uses it the same way.
'use strict';
const rp = require('rhea-promise');
const readline = require('readline');

const version = require('rhea-promise/package.json').version;
const rheaVersion = require('rhea/package.json').version;
let conn = null, receiver = null, sender = null, senderPromise = null, pull = false;
let ended = false;          // the current connection was lost (disconnected) or ended by rhea after an error
const inbox = [];
let waiter = null;          // a receive waiting for a message
const events = [];          // what the library told the application, not yet reported
let toSend = 0;             // messages the application still has to send (0: a drain is answered at once)
const drains = [];          // drains the library handed the application, and how the driver answered each

function out(obj) { process.stdout.write(JSON.stringify(obj) + '\n'); }
function note(what, ctx, from) {
  if (from && from !== conn) return;        // an earlier case's connection going away
  const e = (ctx && (ctx.error || (ctx.receiver && ctx.receiver.error) || (ctx.session && ctx.session.error) ||
            (ctx.connection && ctx.connection.error))) || {};
  events.push(`${what}: ${e.condition || ''} ${e.description || e.message || ''}`.trim());
  if (waiter) { const w = waiter; waiter = null; w.fail(events.join('; ')); }
}

const ops = {
  async connect(a) {
    const u = new URL(a.url);
    // new Connection(ConnectionOptions) + await connection.open() (README "Receiving a message" / "Sending a
    // message"; lib/connection.ts constructor and open()); core-amqp's ConnectionContextBase.create passes
    // `reconnect: false` and its own idle timeout (sdk/core/core-amqp/src/ConnectionContextBase.ts).
    events.length = 0; drains.length = 0; inbox.length = 0; ended = false;
    const c = new rp.Connection({ host: u.hostname, port: Number(u.port), transport: 'tcp', reconnect: false,
                                  container_id: 'amqp-conformance-client', idle_time_out: 0 });
    conn = c;
    // Connection-level events (lib/connection.ts `ConnectionEvents`): what the application is told.
    c.on(rp.ConnectionEvents.connectionError, (ctx) => note('connection_error', ctx, c));
    // rhea (lib/connection.js Connection.prototype.input) dispatches protocol_error / error for a frame it cannot
    // take and ends its socket: that connection cannot be closed any more (`ended`).
    c.on(rp.ConnectionEvents.protocolError, (ctx) => { if (c === conn) ended = true; note('protocol_error', ctx, c); });
    c.on(rp.ConnectionEvents.error, (ctx) => { if (c === conn) ended = true; note('error', ctx, c); });
    c.on(rp.ConnectionEvents.disconnected, (ctx) => { if (c === conn) ended = true; note('disconnected', ctx, c); });
    await c.open({ timeoutInSeconds: Math.max(1, Math.ceil((a.timeout_ms || 5000) / 1000)) });
    return {};
  },
  async receiver(a) {
    const credit = a.credit || 0;
    pull = credit === 0;
    // connection.createReceiver(ReceiverOptions) (README "Receiving a message"; lib/connection.ts createReceiver):
    // `credit_window` is rhea's prefetch window (0: the application adds credit itself, as Service Bus's
    // receiveMessages does: sdk/servicebus/service-bus/src/core/batchingReceiver.ts `credit_window: 0`, then
    // `receiver.addCredit(n)`); the scripted broker's transfers are pre-settled, so `autoaccept` (rhea's own
    // settlement) has nothing to accept.
    receiver = await conn.createReceiver({
      source: { address: a.address },
      credit_window: credit,
      autoaccept: true,
      onMessage: (ctx) => {                                   // ReceiverEvents.message (README)
        inbox.push(String(ctx.message.body));
        if (waiter) { const w = waiter; waiter = null; w.got(); }
      },
      onError: (ctx) => note('receiver_error', ctx),          // ReceiverEvents.receiverError (README)
      onSessionError: (ctx) => note('session_error', ctx),
      onClose: (ctx) => note('receiver_close', ctx),
      onSessionClose: (ctx) => note('session_close', ctx),
    });
    return { api: pull ? 'createReceiver({credit_window: 0}); addCredit(1) per receive; at its timeout drainCredit() '
                         + 'and the receiver_drained event (as Service Bus receiveMessages)'
                       : `createReceiver({credit_window: ${credit}})` };
  },
  async receive(a) {
    const got = [];
    const wait = a.timeout_ms || 1000;
    for (let i = 0; i < (a.count || 1); i++) {
      if (inbox.length === 0) {
        // receiver.addCredit(n) (lib/receiver.ts addCredit -> rhea add_credit), as batchingReceiver.ts does
        // for each receiveMessages call.
        if (pull && receiver.credit === 0) receiver.addCredit(1);
        const ok = await new Promise((resolve, reject) => {
          const t = setTimeout(() => { waiter = null; resolve(false); }, wait);
          waiter = { got: () => { clearTimeout(t); resolve(true); }, fail: (e) => { clearTimeout(t); reject(new Error(e)); } };
        });
        if (!ok) {
          if (pull && receiver.credit > 0) {
            // "Draining leftover credits": receiver.drainCredit() and `receiver.once(ReceiverEvents.receiverDrained,
            // ...)`, then `receiver.drain = false` (service-bus src/core/receiverHelper.ts drain(),
            // batchingReceiver.ts); drainCredit() exists since rhea-promise 2.1.0 (its changelog).
            await new Promise((resolve) => {
              const t = setTimeout(resolve, wait);
              receiver.once(rp.ReceiverEvents.receiverDrained, () => { receiver.drain = false; clearTimeout(t); resolve(); });
              receiver.drainCredit();
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
  async stop() {
    // await receiver.close() (lib/link.ts close(): detaches the link and, for a receiver created on its own
    // session by connection.createReceiver, ends that session; it resolves once both were answered). The
    // answer comes when it resolved or after 1 s, saying which: the stop itself (the detach) is on the wire.
    let done = false;
    const closing = receiver.close().then(() => { done = true; }, (e) => { done = true; note('receiver_close', { error: { description: String(e && e.message || e) } }); });
    await Promise.race([closing, new Promise((r) => setTimeout(r, 1000))]);
    return { api: 'await receiver.close()' + (done ? '' : ' (not resolved after 1 s: it waits for the end of its session)') };
  },
  sender(a) {
    // connection.createAwaitableSender(options) (README "Sending a message"; lib/connection.ts): what core-amqp's
    // and Service Bus's senders use (service-bus src/core/messageSender.ts createAwaitableSender). Its promise
    // resolves only at the link's first `sendable` event, i.e. once the broker granted credit (lib/session.ts
    // _createSender: `rheaSender.once(SenderEvents.sendable, onSendable)`), so the application has its sender
    // object from the first credit on: the command answers once the creation is under way, and `send` awaits it.
    senderPromise = conn.createAwaitableSender({
      target: { address: a.address },
      onError: (ctx) => note('sender_error', ctx),
      onSessionError: (ctx) => note('session_error', ctx),
    }).then((s) => {
      sender = s;
      // The drain is the application's: rhea emits `sender_draining` (rhea README: "sender_draining ... the
      // application should call set_drained(true) when it has no more messages"), forwarded by rhea-promise as
      // SenderEvents.senderDraining; BaseSender.setDrained(true) (lib/sender.ts) answers it.
      s.on(rp.SenderEvents.senderDraining, () => {
        let answered = null;
        if (toSend === 0) { s.setDrained(true); answered = 'sender.setDrained(true)'; }
        drains.push({ handed: 'SenderEvents.senderDraining (rhea sender_draining)', answered });
      });
      return s;
    });
    senderPromise.catch((e) => note('sender_create', { error: { description: String(e && e.message || e) } }));
    return { api: 'createAwaitableSender() (resolves at the first credit), send(msg, {timeoutInSeconds}) once '
                  + 'sendable(); senderDraining -> setDrained(true)' };
  },
  async send(a) {
    let sent = 0;
    const count = a.count || 1;
    toSend = count;
    const bound = (a.timeout_ms || 5000) * count;
    const s = await Promise.race([senderPromise, new Promise((r) => setTimeout(() => r(null), bound))]);
    if (!s) return { sent, ok: false, error: `the sender did not open within ${bound} ms (no credit yet)` };
    try {
      for (let i = 0; i < count; i++) {
        // AwaitableSender.send rejects at once without credit (lib/awaitableSender.ts: "Please send the message
        // after some time"); the application waits for `sendable()` as Service Bus's sender does
        // (service-bus src/core/messageSender.ts: `if (!this.link.sendable()) ... waitForSendable`), here on
        // rhea's `sendable` event (SenderEvents.sendable), bounded by the command's timeout.
        if (!sender.sendable()) {
          const ok = await new Promise((resolve) => {
            const t = setTimeout(() => resolve(false), a.timeout_ms || 5000);
            sender.once(rp.SenderEvents.sendable, () => { clearTimeout(t); resolve(true); });
          });
          if (!ok && !sender.sendable()) {
            return { sent, ok: false, error: `no credit to send m${i} within ${a.timeout_ms || 5000} ms (sendable() false)` };
          }
        }
        // await sender.send(message, {timeoutInSeconds}) (lib/awaitableSender.ts): resolves on the disposition.
        await sender.send({ body: `m${i}` }, { timeoutInSeconds: Math.max(1, Math.ceil((a.timeout_ms || 5000) / 1000)) });
        sent++;
        toSend--;
      }
    } finally {
      toSend = 0;
    }
    return { sent };
  },
  poll() {
    return {};              // what happened since the last answer: `events`, `drains` (clients/PROTOCOL.md)
  },
  async close() {
    if (!conn) return {};
    // await connection.close() (README; lib/connection.ts close()).
    const c = conn;
    conn = null;
    if (ended) return {};   // the connection is gone or rhea ended it: no close can be answered, nothing to wait for
    await Promise.race([c.close(), new Promise((r) => setTimeout(r, 2000))]);
    return {};
  },
};

out({ id: 0, ok: true, ready: true, library: 'rhea-promise', version, rhea: rheaVersion });
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
      if (!ops[req.op]) throw new Error(`unknown op ${req.op}`);
      answer = { id: req.id, ok: true, ...res };
    } catch (e) {
      answer = { id: req.id, ok: false, error: String(e && (e.message || e.description) || e).slice(0, 400) };
    }
    if (events.length) { answer.events = events.splice(0); }
    if (drains.length) { answer.drains = drains.splice(0); }
    answer.ms = Date.now() - t0;
    out(answer);
  });
});
rl.on('close', () => process.exit(0));
process.on('unhandledRejection', (e) => { events.push(`unhandled rejection: ${String(e && e.message || e)}`); });
