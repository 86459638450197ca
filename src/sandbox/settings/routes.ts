import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { authOf, errorResponses } from '../../kernel/http.js';
import { SandboxSettings, SandboxSettingsUpdateRequest } from './schemas.js';
import { getSandboxSettings, updateSandboxSettings } from './service.js';

const tags = ['Sandbox'];

export const sandboxSettingsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { store, clock } = app.deps;

  app.get(
    '/sandbox/settings',
    {
      config: { auth: 'basic', extension: true },
      schema: {
        tags,
        operationId: 'getSandboxSettings',
        summary: 'Read the platform\'s sandbox options',
        description: 'The sandbox options of the caller\'s platform: "Skip verification paperwork" and whether invitations are set up (the dashboard\'s Settings page). Permission VIEW.',
        response: { 200: SandboxSettings, ...errorResponses() },
      },
    },
    async (req) => getSandboxSettings(store.db, authOf(req).platform.id),
  );

  app.patch(
    '/sandbox/settings',
    {
      config: { auth: 'basic', permission: 'MANAGE', extension: true },
      schema: {
        tags,
        operationId: 'updateSandboxSettings',
        summary: 'Change the platform\'s sandbox options',
        description:
          'Sets the options given and leaves the others; answers every option. The same change as the operator\'s PATCH /admin/platforms/{id}. ' +
          'A field the request does not define, or a value that is not a boolean, is 400 INVALID_INPUT naming it. Permission MANAGE.',
        body: SandboxSettingsUpdateRequest,
        response: { 200: SandboxSettings, ...errorResponses(403) },
      },
    },
    async (req) => updateSandboxSettings(store.db, clock, authOf(req).platform.id, req.body),
  );
};
