import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { authOf, errorResponses, nowOf } from '../../kernel/http.js';
import { Verification, VerificationIdParams, VerificationListQuery, VerificationListResponse, VerificationRequest } from './schemas.js';
import { getVerification, listVerifications, submitVerification } from './service.js';

const tags = ['KYC/KYB Verifications'];

export const verificationsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { store, clock } = app.deps;
  const deps = { store };

  app.post(
    '/verifications',
    {
      schema: {
        tags,
        operationId: 'createVerification',
        summary: 'Submit a customer for verification',
        description:
          'Submits an individual (KYC) or business (KYB) customer. When something is missing the answer is RESOLVE_ERRORS with one entry per problem; ' +
          'fix them and call again (the same verification record is updated). A settled result (APPROVED or REJECTED) cannot be resubmitted (400).',
        body: VerificationRequest,
        response: { 200: Verification, ...errorResponses(404, 409) },
      },
    },
    async (req) => submitVerification(deps, authOf(req).platform, nowOf(req, clock).at, req.body.customerId),
  );

  app.get(
    '/verifications',
    {
      schema: {
        tags,
        operationId: 'listVerifications',
        summary: 'List verifications',
        querystring: VerificationListQuery,
        response: { 200: VerificationListResponse, ...errorResponses() },
      },
    },
    async (req) => {
      const q = req.query;
      return listVerifications(store.db, authOf(req).platform.id, { customerId: q.customerId, verificationStatus: q.verificationStatus }, { limit: q.limit, cursor: q.cursor });
    },
  );

  app.get(
    '/verifications/:verificationId',
    {
      schema: {
        tags,
        operationId: 'getVerification',
        summary: 'Get a verification',
        params: VerificationIdParams,
        response: { 200: Verification, ...errorResponses(404) },
      },
    },
    async (req) => getVerification(store.db, authOf(req).platform.id, req.params.verificationId),
  );
};
