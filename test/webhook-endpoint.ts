import { expect } from 'vitest';
import { makeApp, type TestApp } from './helpers.js';

// The set-up the webhook delivery tests share (lanes, lane runs, the send seam): a test app
// whose platform's webhook endpoint is a started local receiver, the endpoint's TEST webhook
// already delivered. No worker runs (makeApp's default): the tests drive the deliverer with
// runDue().

export interface AppWithEndpoint<R> {
  t: TestApp;
  rx: R;
  platformId: string;
}

/** Start a test app and `rx`, and make `rx` the default platform's webhook endpoint. */
export async function appWithEndpoint<R extends { url: string; start(): Promise<unknown> }>(rx: R): Promise<AppWithEndpoint<R>> {
  const t = await makeApp();
  await rx.start();
  const platformId = t.running.bootstrap.platform.id;
  expect((await t.call('PATCH', '/config', { webhookEndpoint: rx.url })).statusCode).toBe(200);
  await t.running.webhooks.runDue(); // the new endpoint's TEST webhook
  return { t, rx, platformId };
}

/** The platform's sandbox time, in ms (the test clock plus its clock offset). */
export async function platformNowMs(t: TestApp, platformId: string): Promise<number> {
  const row = await t.store.db.selectFrom('platforms').select('clock_offset_ms').where('id', '=', platformId).executeTakeFirstOrThrow();
  return t.clock.nowMs() + Number(row.clock_offset_ms);
}
