import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ApiError, invalidInput, type FieldError } from '../../kernel/errors.js';
import { authOf, errorResponses, nowOf } from '../../kernel/http.js';
import { PlatformConfig, PlatformConfigUpdateRequest } from './schemas.js';
import { endpointFieldErrors, getConfig, readOnlyFieldErrors, updatePlatformConfig } from './service.js';

const tags = ['Platform Configuration'];

export const configRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { store, clock } = app.deps;

  app.get(
    '/config',
    {
      config: { auth: 'basic' },
      schema: { tags, operationId: 'getPlatformConfig', summary: 'Get platform configuration', response: { 200: PlatformConfig, ...errorResponses() } },
    },
    async (req) => getConfig(store.db, authOf(req).platform),
  );

  app.patch(
    '/config',
    {
      config: { auth: 'basic', permission: 'MANAGE' },
      // Schema errors reach the handler so a read-only field is reported with them in one 400.
      attachValidation: true,
      schema: {
        tags,
                operationId: 'updatePlatformConfig',
        summary: 'Update platform configuration',
        body: PlatformConfigUpdateRequest,
        response: { 200: PlatformConfig, ...errorResponses(501) },
      },
    },
    async (req) => {
      if (req.validationError) {
        const err = req.validationError as unknown;
        if (!(err instanceof ApiError)) throw err;
        const schemaErrors = (err.details?.errors ?? []) as FieldError[];
        throw invalidInput([...readOnlyFieldErrors(req.body), ...(await endpointFieldErrors(req.body, app.deps.webhooks.targets)), ...schemaErrors]);
      }
      return updatePlatformConfig(app.deps, authOf(req).platform, nowOf(req, clock).at, req.body);
    },
  );
};
