import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

// A real HTTP webhook receiver on a local port, for the tests of deliveries: it records
// every request and answers as `behave` says (a status, a hang, a redirect, a body).
// TEST webhooks (sent to every newly configured endpoint) are kept apart: recorded in
// `tests` and answered by `behaveTest`, so `got` and `behave` see the domain events only.

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  json: { id: string; type: string; timestamp: string; data: unknown };
}

export type Behaviour = (r: Received) => number | 'hang' | { status: number; location?: string; body?: string; contentType?: string };

export class Receiver {
  readonly got: Received[] = [];
  behave: Behaviour = () => 200;
  /** The TEST webhooks received, in order. */
  readonly tests: Received[] = [];
  behaveTest: Behaviour = () => 200;
  private server: Server | undefined;
  private hanging: Array<() => void> = [];
  url = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const r: Received = { headers: req.headers, body, json: JSON.parse(body) as Received['json'] };
        const isTest = r.json.type === 'TEST';
        (isTest ? this.tests : this.got).push(r);
        const b = isTest ? this.behaveTest(r) : this.behave(r);
        if (b === 'hang') {
          this.hanging.push(() => res.destroy());
          return;
        }
        const spec = typeof b === 'number' ? { status: b } : b;
        const headers: Record<string, string> = {};
        if (spec.location) headers.location = spec.location;
        if (spec.contentType) headers['content-type'] = spec.contentType;
        res.writeHead(spec.status, headers);
        res.end(spec.body ?? `answer ${spec.status}`);
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}/hooks`;
    return this;
  }

  async stop(): Promise<void> {
    for (const h of this.hanging) h();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}
