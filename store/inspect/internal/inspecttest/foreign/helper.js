// The Node.js side of store/inspect's tests with real clients: one process
// per test package runs scenarios one at a time. Each stdin line is JSON:
// {"run": name, "args": {...}} starts a scenario, {"signal": name} lets a
// waiting one go on. Each stdout line is {"event": name, "data": {...}};
// every scenario ends with "done" (or "error"). stdin's end stops it.
'use strict';
const readline = require('readline');

const signals = [];
let waiter = null;
function emit(event, data) { process.stdout.write(JSON.stringify({ event, data: data || {} }) + '\n'); }
function next(name) {
  return new Promise((resolve, reject) => {
    const take = () => {
      const s = signals.shift();
      if (s === name) resolve(); else reject(new Error(`signal ${s}, want ${name}`));
    };
    if (signals.length) take(); else waiter = take;
  });
}
function redisOptions(addr) {
  const [host, port] = addr.split(':');
  return { host, port: Number(port), maxRetriesPerRequest: null };
}
function client(addr) {
  const Redis = require('ioredis');
  return new Redis(redisOptions(addr));
}

const scenarios = {
  // bottleneck: a reservoir of one refilled every minute; the second job
  // waits for capacity.
  async bottleneck({ addr, id }) {
    const Bottleneck = require('bottleneck');
    const limiter = new Bottleneck({ id, datastore: 'ioredis', clearDatastore: true, clientOptions: redisOptions(addr),
      reservoir: 1, reservoirRefreshInterval: 60000, reservoirRefreshAmount: 1 });
    await limiter.ready();
    for (const n of [1, 2]) limiter.schedule(async () => emit('ran', { n }));
    await next('stop');
    await limiter.disconnect(false);
  },

  // express-rate-limit with rate-limit-redis: an app on loopback, limit
  // `limit` per minute, keyed by `key`.
  async express({ addr, key, limit }) {
    const express = require('express');
    const { rateLimit } = require('express-rate-limit');
    const { RedisStore } = require('rate-limit-redis');
    const redis = client(addr);
    const app = express();
    app.use(rateLimit({ windowMs: 60000, limit, keyGenerator: () => key,
      store: new RedisStore({ sendCommand: (cmd, ...args) => redis.call(cmd, ...args) }) }));
    app.get('/', (req, res) => res.send('ok'));
    const server = await new Promise((resolve) => { const s = app.listen(0, '127.0.0.1', () => resolve(s)); });
    emit('listening', { port: server.address().port });
    await next('stop');
    await new Promise((resolve) => server.close(resolve));
    redis.disconnect();
  },

  // BullMQ: a worker takes a job and hangs; once told, a second worker
  // takes the job over when a stalled-job check (every 300 ms, throttled
  // queue-wide) finds it without a lock.
  async bullmq({ addr, prefix, queue }) {
    const { Queue, Worker } = require('bullmq');
    const connection = redisOptions(addr);
    const q = new Queue(queue, { connection, prefix });
    await q.add('nightly-report', { n: 1 });
    const hung = new Worker(queue, async (job, token) => {
      emit('active', { id: job.id, token });
      await new Promise(() => {});
    }, { connection, prefix, lockDuration: 60000, stalledInterval: 300, maxStalledCount: 5 });
    await next('rescue');
    const rescuer = new Worker(queue, async (job) => { emit('reprocessed', { id: job.id }); },
      { connection, prefix, stalledInterval: 300, maxStalledCount: 5 });
    await next('stop');
    await rescuer.close();
    await hung.close(true);
    await q.close();
  },

  // redlock (v4) over ioredis: take a lock, then try it again when told.
  async redlock({ addr, resource }) {
    const Redlock = require('redlock');
    const redis = client(addr);
    const redlock = new Redlock([redis], { retryCount: 0 });
    redlock.on('clientError', () => {});
    const lock = await redlock.lock(resource, 60000);
    emit('locked', { value: lock.value });
    await next('retry');
    try {
      const again = await redlock.lock(resource, 60000);
      emit('relocked', { value: again.value });
      await again.unlock();
    } catch (e) {
      emit('refused', { error: String(e) });
    }
    await next('stop');
    redis.disconnect();
  },

  // ioredis on its own: an access counter, INCR and PEXPIRE in a MULTI.
  async ioredis({ addr, key, hits }) {
    const redis = client(addr);
    for (let i = 0; i < hits; i++) await redis.multi().incr(key).pexpire(key, 60000).exec();
    emit('counted', { hits });
    await next('stop');
    redis.disconnect();
  },

  // redis-semaphore: a Mutex (a token string) and a Semaphore (a sorted
  // set of holders, which is no Symfony lock).
  async semaphore({ addr, mutex, semaphore }) {
    const { Mutex, Semaphore } = require('redis-semaphore');
    const redis = client(addr);
    const opts = { lockTimeout: 60000, acquireTimeout: 2000, retryInterval: 20, refreshInterval: 0 };
    const m = new Mutex(redis, mutex, opts);
    const s = new Semaphore(redis, semaphore, 3, opts);
    await m.acquire();
    await s.acquire();
    emit('held', { mutex: m.identifier, semaphore: s.identifier });
    await next('retry');
    const other = new Mutex(redis, mutex, { ...opts, acquireTimeout: 500 });
    emit('retried', { acquired: await other.tryAcquire() });
    await next('stop');
    await s.release();
    redis.disconnect();
  },

  // rate-limiter-flexible's RateLimiterRedis: `points` a minute.
  async flexible({ addr, keyPrefix, key, consume }) {
    const { RateLimiterRedis } = require('rate-limiter-flexible');
    const redis = client(addr);
    const limiter = new RateLimiterRedis({ storeClient: redis, keyPrefix, points: 5, duration: 60 });
    for (let i = 0; i < consume; i++) await limiter.consume(key);
    emit('consumed', { key: limiter.getKey(key) });
    await next('stop');
    redis.disconnect();
  },
};

const rl = readline.createInterface({ input: process.stdin });
rl.on('line', (line) => {
  const msg = JSON.parse(line);
  if (msg.signal) {
    signals.push(msg.signal);
    if (waiter) { const w = waiter; waiter = null; w(); }
    return;
  }
  const run = scenarios[msg.run];
  if (!run) { emit('error', { error: `no scenario ${msg.run}` }); return; }
  signals.length = 0;
  run(msg.args || {}).then(() => emit('done'), (e) => emit('error', { error: String(e && e.stack || e) }));
});
rl.on('close', () => process.exit(0));
emit('ready');
