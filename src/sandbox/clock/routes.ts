import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { authOf, errorResponses } from '../../kernel/http.js';
import { AdvanceRequest, SandboxClock } from './schemas.js';
import { advanceClock, readClock } from './service.js';

const tags = ['Sandbox'];

export const sandboxClockRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/sandbox/clock',
    {
      config: { auth: 'basic', extension: true },
      schema: {
        tags,
        operationId: 'getSandboxClock',
        summary: 'Read the sandbox clock',
        description: 'Now on this platform\'s sandbox clock (every sandbox delay and webhook retry is measured on it). Permission VIEW.',
        response: { 200: SandboxClock, ...errorResponses() },
      },
    },
    async (req) => readClock(app.deps, authOf(req).platform.id),
  );

  app.post(
    '/sandbox/clock/advance',
    {
      config: { auth: 'basic', permission: 'MANAGE', extension: true },
      schema: {
        tags,
        operationId: 'advanceSandboxClock',
        summary: 'Advance the sandbox clock',
        description:
          'Moves this platform\'s clock forward by `seconds` (an integer > 0; time never goes back), runs every job of the platform that became due ' +
          '(each at its own due time) before answering, and answers the new clock; the webhooks those jobs emit, and retries due in the window, are sent after the answer. Other platforms\' clocks do not move. Permission MANAGE.',
        body: AdvanceRequest,
        response: { 200: SandboxClock, ...errorResponses(403) },
      },
    },
    async (req) => advanceClock(app.deps, authOf(req).platform.id, req.body.seconds),
  );
};
