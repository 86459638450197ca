import type { FastifyPluginAsync } from 'fastify';
import { apiError } from '../../kernel/errors.js';
import { isEndUserTermsVersion } from './service.js';

// The sandbox's published end-user terms, at the URL GET /customers/end-user-terms gives.

export const legalPages: FastifyPluginAsync = async (app) => {
  app.get<{ Params: { version: string } }>('/legal/end-user-terms/:version', { schema: { hide: true } }, async (req, reply) => {
    const { version } = req.params;
    if (!isEndUserTermsVersion(version)) {
      throw apiError(404, 'REFERENCE_NOT_FOUND', `End-user terms version ${version} does not exist`);
    }
    return reply
      .type('text/html; charset=utf-8')
      .send(
        `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>End-user terms ${version} (sandbox)</title></head>` +
          `<body><h1>End-user terms, version ${version}</h1><p>These are the sandbox's end-user terms. A platform records a customer's ` +
          `acceptance with <code>endUserTermsConsent</code> (acceptedAt, ipAddress, termsVersion "${version}", acceptanceMethod) when it creates ` +
          `or updates the customer. No real agreement is formed in the sandbox.</p></body></html>`,
      );
  });
};
