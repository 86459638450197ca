import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { authOf, errorResponses, NoContent, nowOf } from '../../kernel/http.js';
import { timeRangeOf } from '../../kernel/pagination.js';
import { ApiToken, ApiTokenCreateRequest, TokenIdParams, TokenListQuery, TokenListResponse } from './schemas.js';
import { deleteToken, issueToken, getToken, listTokens } from './service.js';

const tags = ['API Tokens'];


export const tokensRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { store, clock } = app.deps;

  app.post(
    '/tokens',
    {
      config: { auth: 'basic', permission: 'MANAGE', secretFields: ['clientSecret'] },
      schema: { tags, operationId: 'createToken', summary: 'Create an API token', body: ApiTokenCreateRequest, response: { 201: ApiToken, ...errorResponses() } },
    },
    async (req, reply) => {
      const { at } = nowOf(req, clock);
      const token = await issueToken(store.db, authOf(req).platform.id, at, req.body);
      return reply.code(201).send(token);
    },
  );

  app.get(
    '/tokens',
    {
      config: { auth: 'basic' },
      schema: { tags, operationId: 'listTokens', summary: 'List API tokens', querystring: TokenListQuery, response: { 200: TokenListResponse, ...errorResponses() } },
    },
    async (req) => {
      const q = req.query;
      return listTokens(
        store.db,
        authOf(req).platform.id,
        { name: q.name, ...timeRangeOf(q) },
        { limit: q.limit, cursor: q.cursor },
      );
    },
  );

  app.get(
    '/tokens/:tokenId',
    {
      config: { auth: 'basic' },
      schema: { tags, operationId: 'getTokenById', summary: 'Get an API token', params: TokenIdParams, response: { 200: ApiToken, ...errorResponses(404) } },
    },
    async (req) => getToken(store.db, authOf(req).platform.id, req.params.tokenId),
  );

  app.delete(
    '/tokens/:tokenId',
    {
      config: { auth: 'basic', permission: 'MANAGE' },
      schema: { tags, operationId: 'deleteTokenById', summary: 'Delete an API token', params: TokenIdParams, response: { 204: NoContent, ...errorResponses(404) } },
    },
    async (req, reply) => {
      await deleteToken(store.db, authOf(req).platform.id, req.params.tokenId, nowOf(req, clock).at);
      return reply.code(204).send(null);
    },
  );
};
