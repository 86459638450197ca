import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { ApiError } from '../../kernel/errors.js';
import { readMultipartForm, registerMultipart } from '../../kernel/multipart.js';
import { closedPage, donePage, errorPage, formPage } from './html.js';
import { KycTokenParams } from './schemas.js';
import { linkState, pageModel, submitKycForm } from './service.js';

// The hosted KYC page, outside the versioned API: no authentication (the token is the
// credential), server-rendered HTML, no external assets. GET shows the form, POST
// (multipart) submits it through the same services as the API.

const HEADERS = {
  'cache-control': 'no-store',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
};

function html(reply: FastifyReply, status: number, body: string): FastifyReply {
  return reply.code(status).headers(HEADERS).type('text/html; charset=utf-8').send(body);
}

export const hostedKycPages: FastifyPluginAsync = async (app) => {
  const { store, clock, hooks } = app.deps;
  const deps = { store, clock, hooks, documentQuotaBytes: app.deps.config.documentQuotaBytes };
  await registerMultipart(app);

  app.setErrorHandler((err: Error & { statusCode?: number }, req, reply) => {
    const raw = err instanceof ApiError ? err.status : (err.statusCode ?? 500);
    const status = raw >= 400 && raw < 600 ? raw : 500;
    if (status >= 500) req.log.error({ err }, 'hosted KYC page failed');
    return html(reply, status, errorPage(status, status >= 500 ? 'Please try again later.' : err.message));
  });

  app.get<{ Params: { token: string } }>('/hosted/kyc/:token', { schema: { hide: true, params: KycTokenParams } }, async (req, reply) => {
    const state = await linkState(deps, req.params.token);
    if (state.kind !== 'open') {
      const page = closedPage(state);
      return html(reply, page.status, page.html);
    }
    return html(reply, 200, formPage(await pageModel(deps, state)));
  });

  app.post<{ Params: { token: string } }>('/hosted/kyc/:token', { schema: { hide: true, params: KycTokenParams } }, async (req, reply) => {
    // The link is checked before the upload is parsed: a dead link answers at once.
    const state = await linkState(deps, req.params.token);
    if (state.kind !== 'open') {
      const page = closedPage(state);
      return html(reply, page.status, page.html);
    }
    const outcome = await submitKycForm(deps, req.params.token, await readMultipartForm(req));
    switch (outcome.kind) {
      case 'closed': {
        const page = closedPage(outcome.state);
        return html(reply, page.status, page.html);
      }
      case 'invalid':
        return html(reply, 400, formPage(outcome.model, { errors: outcome.errors, message: outcome.message }));
      case 'incomplete':
        return html(reply, 200, formPage(outcome.model, { notice: 'Your information was saved, but the verification still needs what is listed below.' }));
      case 'done':
        return html(reply, 200, donePage(outcome.verification, outcome.customer, outcome.redirectUri));
    }
  });
};
