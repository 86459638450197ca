import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { authOf, errorResponses, nowOf } from '../../kernel/http.js';
import {
  BeneficialOwner,
  BeneficialOwnerCreateRequest,
  BeneficialOwnerIdParams,
  BeneficialOwnerListQuery,
  BeneficialOwnerListResponse,
  BeneficialOwnerUpdateRequest,
} from './schemas.js';
import { createOwner, getOwner, listOwners, updateOwnerById } from './service.js';

const tags = ['KYC/KYB Verifications'];

export const beneficialOwnersRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { store, clock, sealer } = app.deps;
  const deps = { store, sealer };

  app.post(
    '/beneficial-owners',
    {
      // The answer carries the full identification number: a stored replay is kept sealed.
      config: { sealStoredAnswer: true },
      schema: {
        tags,
        operationId: 'createBeneficialOwner',
        summary: 'Create a beneficial owner',
        description: 'Add a beneficial owner, director or officer to a business customer. It starts UNVERIFIED and resolves when its business does.',
        body: BeneficialOwnerCreateRequest,
        response: { 201: BeneficialOwner, ...errorResponses(404) },
      },
    },
    async (req, reply) => reply.code(201).send(await createOwner(deps, authOf(req).platform, nowOf(req, clock).at, req.body)),
  );

  app.get(
    '/beneficial-owners',
    {
      schema: {
        tags,
        operationId: 'listBeneficialOwners',
        summary: 'List beneficial owners',
        querystring: BeneficialOwnerListQuery,
        response: { 200: BeneficialOwnerListResponse, ...errorResponses() },
      },
    },
    async (req) => listOwners(store.db, authOf(req).platform.id, { customerId: req.query.customerId }, { limit: req.query.limit, cursor: req.query.cursor }),
  );

  app.get(
    '/beneficial-owners/:beneficialOwnerId',
    {
      schema: {
        tags,
        operationId: 'getBeneficialOwner',
        summary: 'Get a beneficial owner',
        params: BeneficialOwnerIdParams,
        response: { 200: BeneficialOwner, ...errorResponses(404) },
      },
    },
    async (req) => getOwner(store.db, authOf(req).platform.id, req.params.beneficialOwnerId),
  );

  app.patch(
    '/beneficial-owners/:beneficialOwnerId',
    {
      schema: {
        tags,
        operationId: 'updateBeneficialOwner',
        summary: 'Update a beneficial owner',
        description: 'Only the fields sent change; personalInfo is merged field by field.',
        params: BeneficialOwnerIdParams,
        body: BeneficialOwnerUpdateRequest,
        response: { 200: BeneficialOwner, ...errorResponses(404) },
      },
    },
    async (req) => updateOwnerById(deps, authOf(req).platform, nowOf(req, clock).at, req.params.beneficialOwnerId, req.body),
  );
};
