import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { errorResponses } from '../../kernel/http.js';
import {
  DiscoveryListResponse,
  DiscoveryQuery,
  UmaProviderListResponse,
  UmaProviderQuery,
  VaspListResponse,
  VaspQuery,
} from './schemas.js';
import { listDiscoveries, listUmaProviders, listVasps } from './service.js';

export const discoveriesRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/discoveries',
    {
      config: { auth: 'basic' },
      schema: {
        tags: ['Discoveries'],
        operationId: 'getDiscoveries',
        summary: 'List available receiving institution names',
        description: 'Banks and payment providers of the sandbox corridors, by country and/or currency; all of them without filters.',
        querystring: DiscoveryQuery,
        response: { 200: DiscoveryListResponse, ...errorResponses() },
      },
    },
    async (req) => listDiscoveries(req.query),
  );

  app.get(
    '/uma-providers',
    {
      config: { auth: 'basic' },
      schema: {
        tags: ['Available UMA Providers'],
        operationId: 'getAvailableUmaProviders',
        summary: 'List available Counterparty Providers',
        querystring: UmaProviderQuery,
        response: { 200: UmaProviderListResponse, ...errorResponses() },
      },
    },
    async (req) => listUmaProviders(req.query),
  );

  app.get(
    '/vasps',
    {
      config: { auth: 'basic' },
      schema: {
        tags: ['VASPs'],
        operationId: 'listVasps',
        summary: 'List VASPs',
        querystring: VaspQuery,
        response: { 200: VaspListResponse, ...errorResponses() },
      },
    },
    async (req) => listVasps(req.query),
  );
};
