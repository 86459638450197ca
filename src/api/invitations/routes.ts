import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { authOf, errorResponses, nowOf } from '../../kernel/http.js';
import { InvitationCodeParams, UmaInvitation, UmaInvitationClaimRequest, UmaInvitationCreateRequest } from './schemas.js';
import { cancelInvitation, claimInvitation, createInvitation, getInvitation, registerInvitationJobs } from './service.js';

const tags = ['Invitations'];

export const invitationsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { store, clock, jobs } = app.deps;
  const deps = { store, clock, jobs };
  registerInvitationJobs(jobs);

  app.post(
    '/invitations',
    {
      config: { auth: 'basic' },
      schema: {
        tags,
        operationId: 'createInvitation',
        summary: 'Create an UMA invitation',
        description: 'An invitation from one of the platform’s customers (inviterUma), with an optional amount (display only, in the inviter’s first currency) and expiry.',
        body: UmaInvitationCreateRequest,
        response: { 201: UmaInvitation, ...errorResponses() },
      },
    },
    async (req, reply) => reply.code(201).send(await createInvitation(deps, authOf(req).platform, nowOf(req, clock), `${req.protocol}://${req.host}`, req.body)),
  );

  app.get(
    '/invitations/:invitationCode',
    {
      config: { auth: 'basic' },
      schema: { tags, operationId: 'getInvitation', summary: 'Get an UMA invitation by code', params: InvitationCodeParams, response: { 200: UmaInvitation, ...errorResponses(404) } },
    },
    async (req) => getInvitation(deps, req.params.invitationCode),
  );

  app.post(
    '/invitations/:invitationCode/claim',
    {
      config: { auth: 'basic' },
      schema: {
        tags,
        operationId: 'claimInvitation',
        summary: 'Claim an UMA invitation',
        description: 'Any platform holding the code claims it for the invitee’s UMA address; the inviter’s platform gets INVITATION.CLAIMED.',
        params: InvitationCodeParams,
        body: UmaInvitationClaimRequest,
        response: { 200: UmaInvitation, ...errorResponses(404) },
      },
    },
    async (req) => claimInvitation(deps, authOf(req).platform, req.params.invitationCode, req.body.inviteeUma),
  );

  app.post(
    '/invitations/:invitationCode/cancel',
    {
      config: { auth: 'basic' },
      schema: { tags, operationId: 'cancelInvitation', summary: 'Cancel an UMA invitation', params: InvitationCodeParams, response: { 200: UmaInvitation, ...errorResponses(403, 404) } },
    },
    async (req) => cancelInvitation(deps, authOf(req).platform, req.params.invitationCode),
  );
};
