import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

// A real local webhook receiver for the tests of delivery order (lanes, lane runs): it answers
// `status` (200 unless told) at once, except the requests `held` says to keep until `release()`.
// TEST webhooks are answered 200 and not recorded. (test/webhook-receiver.ts is the general one.)

/** A domain event as received: its id, type and timestamp, its resource (`data.id`) and `data.v` (-1 if none). */
export interface Got {
  id: string;
  type: string;
  timestamp: string;
  resource: string;
  v: number;
}

export class HoldingReceiver {
  readonly got: Got[] = [];
  /** Requests answered so far (held ones count once released). */
  answered = 0;
  /** Whether to hold the n-th request received (1-based), `g`. */
  held: (g: Got, n: number) => boolean = () => false;
  status: (g: Got, n: number) => number = () => 200;
  private waiting: Array<() => void> = [];
  private server: Server | undefined;
  url = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string; type: string; timestamp: string; data: { id?: string; v?: number } };
        if (body.type === 'TEST') return void res.writeHead(200).end();
        const g: Got = { id: body.id, type: body.type, timestamp: body.timestamp, resource: body.data.id ?? '', v: body.data.v ?? -1 };
        this.got.push(g);
        const n = this.got.length;
        const answer = (r: ServerResponse) => {
          this.answered += 1;
          r.writeHead(this.status(g, n)).end('ok');
        };
        if (this.held(g, n)) this.waiting.push(() => answer(res));
        else answer(res);
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}/hooks`;
    return this;
  }

  /** How many requests are held right now. */
  get holding(): number {
    return this.waiting.length;
  }

  release(): void {
    this.held = () => false;
    const w = this.waiting;
    this.waiting = [];
    for (const f of w) f();
  }

  async stop(): Promise<void> {
    this.release();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}
