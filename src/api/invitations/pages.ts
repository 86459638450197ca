import type { FastifyPluginAsync } from 'fastify';
import { getInvitation } from './service.js';

// The page an invitation's url points at: what the invitee sees when following the link
// (who invites, the amount, and whether it can still be claimed). No credentials.

const escape = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export const invitationPages: FastifyPluginAsync = async (app) => {
  const { store, clock, jobs } = app.deps;
  app.get<{ Params: { code: string } }>('/i/:code', { schema: { hide: true } }, async (req, reply) => {
    const inv = await getInvitation({ store, clock, jobs }, req.params.code);
    const amount = inv.amountToSend ? ` and sends you ${(inv.amountToSend.amount / 10 ** inv.amountToSend.currency.decimals).toFixed(inv.amountToSend.currency.decimals)} ${escape(inv.amountToSend.currency.code)}` : '';
    const state =
      inv.status === 'PENDING' ? 'This invitation is waiting to be claimed: sign up with an UMA provider to claim it.' : `This invitation is ${inv.status.toLowerCase()}.`;
    return reply
      .type('text/html; charset=utf-8')
      .send(
        `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>UMA invitation ${escape(inv.code)}</title></head>` +
          `<body><h1>${escape(inv.firstName ?? inv.inviterUma)} invites you to UMA${amount}</h1><p>${escape(state)}</p>` +
          `<p>Invitation <code>${escape(inv.code)}</code> from <code>${escape(inv.inviterUma)}</code>${inv.expiresAt ? `, valid until ${escape(inv.expiresAt)}` : ''}.</p></body></html>`,
      );
  });
};
